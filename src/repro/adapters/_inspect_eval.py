"""The inspect adapter: tasks of inspect_ai (UK AISI's evaluation framework) under a protocol.

One run is one sample of one task, evaluated once (one epoch) by one model with one solver.
Factors (levels are strings unless said):

- ``task`` (required): ``"module:function"``, an ``@task`` function called with no arguments;
  its module is looked up first in the protocol file's directory and pinned by sha256;
- ``model`` (required): an inspect model name (``provider/model``, always with a ``/``), or a
  ``"module:function"`` returning an inspect ``Model`` (a mock model with ``custom_outputs``,
  a model with arguments), pinned as the task is;
- ``solver`` (optional): ``"module:function"`` returning a solver (or a list of solvers), which
  replaces the task's own, or ``default``, the task's own solver;
- the samples: the factor the scoring names as ``scenario_factor`` (``scenario`` by default),
  or ``sample`` in a protocol without scoring; its levels are sample IDs of every task.

Inspect's epochs are repro's replicates: replicate ``r`` of a condition is one more epoch of
its sample, with its own seed, attempt, retries and record (see docs/adapter-api.md, "The
inspect adapter", for why). Participants are ``kind: "agent"``; ``params.config`` (optional)
holds inspect ``GenerateConfig`` fields (``temperature``, ``max_tokens``, ...), but not
``seed``, which is the run's. The protocol must give ``retry.timeout_seconds`` (the worker
enforces it) and measure with ``outcome_value``. Option ``log_dir`` (``--option`` only, as it
names a place on this machine) keeps inspect's own eval logs there; by default each run's log
is written to a temporary directory and removed.

Each run's outcome holds the sample's scores (every scorer's value, answer and explanation, and
``score``, the first scorer's value as inspect's ``value_to_float`` reads it), the model's
output text (or, when longer than :data:`MAX_TEXT`, its length and sha256), the message count,
the token usage and ``eval_sample_sha256``, the digest of what the eval log says of the sample
(:func:`sample_digest`), which is also the run's trace digest. A sample that inspect records as
failed fails the run with cause ``harness-error:<exception type>``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import random
import re
import shutil
import tempfile
from collections.abc import Mapping
from typing import Annotated, Any

from attrs import field, frozen

from repro._derive.facts import DEFAULT_SOLVER, inspect_role, sample_factor
from repro._json import canonical
from repro._json.canonical import json_path
from repro.adapters._base import (
    Evidence,
    Frozen,
    TraceDigest,
    import_target,
    module_file_source,
    package_source,
    refuse_unbounded_outcome_runs,
)
from repro.adapters._params import Expect, structure_at
from repro.errors import BadInput, RunFailed, RunInvalid, install_hint
from repro.models import AdapterFacts, Condition, Participant, PlanEntry, Protocol, Source

__all__ = ["MAX_TEXT", "InspectAdapter", "sample_digest", "scan_distributions_once"]

#: Characters of the model's output (or of a score's answer and explanation) a record keeps;
#: a longer text is kept as its length and sha256.
MAX_TEXT = 16_384
_FACTORS = {"task", "model", "solver"}
_OPTIONS = {"log_dir"}
#: An agent's ``params.config``: GenerateConfig's fields by name.
Config = Annotated[
    dict[str, Any], Expect(lambda v: isinstance(v, dict), "config must be an object")
]
#: The type name at the start of inspect's error message, as in ``RuntimeError('...')``.
_ERROR_TYPE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?=[(:])")


def _version() -> str:
    return importlib.metadata.version("inspect_ai")


def _is_model_name(level: object) -> bool:
    return isinstance(level, str) and "/" in level


def _is_target(factor: str, level: object) -> bool:
    """Whether a level names a ``module:function`` target: every task, a model that is not an
    inspect model name, a solver other than the task's own."""
    if factor == "model":
        return not _is_model_name(level)
    if factor == "solver":
        return level != DEFAULT_SOLVER
    return factor == "task"


def _target(level: object, where: str) -> tuple[Any, Source]:
    """The object a ``module:function`` level names and its module's source file, pinned."""
    if not isinstance(level, str):
        raise BadInput.at(where, "level must be a 'module:function' string", "wrong-type")
    function = import_target(level, where)
    if not callable(function):
        raise BadInput.at(where, f"{level!r} is not callable", "not-allowed")
    try:
        source = module_file_source(inspect_role(level), level.partition(":")[0])
    except BadInput as exc:
        raise BadInput.at(where, str(exc), "not-found") from None
    return function, source


def _call(function: Any, what: str, where: str) -> Any:
    try:
        return function()
    except Exception as exc:  # the task's or model's own code, which may raise anything
        raise BadInput.at(
            where, f"{what} raised {type(exc).__name__} when built: {exc}", "not-found"
        ) from None


def _sample_ids(task: Any) -> set[str | int]:
    return {sample.id for sample in task.dataset}


@frozen
class AgentParams:
    """An ``agent`` participant's params: the keyword arguments of inspect's
    ``GenerateConfig`` its model generates with (not ``seed``: the run's own)."""

    config: Config = field(factory=dict)


def _check_config(participant: Participant, where: str) -> None:
    # Lazy: the inspect extra may be absent, and inspect_ai costs seconds to import.
    from inspect_ai.model import GenerateConfig

    config = structure_at(participant.params, AgentParams, f"{where}.params").config
    for key in config:
        if key == "seed" or key not in GenerateConfig.model_fields:
            why = "is the run's own" if key == "seed" else "is no GenerateConfig field"
            code = "not-allowed" if key == "seed" else "unknown-field"
            raise BadInput.at(json_path(f"{where}.params.config", key), f"{key!r} {why}", code)
    try:
        GenerateConfig.model_validate(config)
    except ValueError as exc:
        raise BadInput.at(
            f"{where}.params.config",
            f"config is not a valid GenerateConfig ({type(exc).__name__})",
            "not-allowed",
        ) from None


def _check_options(protocol: Protocol, options: Mapping[str, str]) -> None:
    """No option in the protocol; ``log_dir`` only with ``--option``."""
    for key in protocol.adapter.options:
        raise BadInput.at(
            json_path("$.adapter.options", key),
            f"the inspect adapter takes no option {key!r} in the protocol "
            "(log_dir is given with --option)",
            "unknown-field",
        )
    for key in options:
        if key not in _OPTIONS:
            raise BadInput(f"--option {key}: the inspect adapter takes log_dir")


def _check_factors(protocol: Protocol) -> None:
    """The factors are ``task``, ``model`` and the samples' factor, and perhaps ``solver``."""
    samples = sample_factor(protocol)
    names = [f.name for f in protocol.matrix]
    for i, name in enumerate(names):
        if name not in _FACTORS | {samples}:
            raise BadInput.at(
                f"$.matrix[{i}].name",
                f"unknown factor {name!r} for inspect (task, model, solver, {samples})",
                "not-allowed",
            )
    for name in ("task", "model", samples):
        if name not in names:
            raise BadInput.at(
                "$.matrix", f"the inspect adapter needs a {name!r} factor", "missing-field"
            )


class InspectAdapter:
    """Runs each slot as one sample of an inspect_ai task, evaluated once."""

    name = "inspect"
    simulator_modules = ("inspect_ai",)
    #: Its tasks differ by ``task``: an estimand across them mixes tasks
    #: (:mod:`repro._protocol.estimand`).
    environment_factors = ("task",)
    simulator_install = install_hint("inspect")

    def __init__(self) -> None:
        self._log_dir: str | None = None

    def freeze(self, protocol: Protocol, options: Mapping[str, str]) -> Frozen:
        """Check factors, participants and options; build every task to check its samples; pin
        inspect_ai's version and the source file of every task, model and solver module."""
        if importlib.util.find_spec("inspect_ai") is None:
            raise BadInput.at(
                "$.adapter.name",
                "the inspect adapter needs inspect_ai, which is not installed: "
                f"{self.simulator_install}",
                "not-found",
            )
        _check_options(protocol, options)
        refuse_unbounded_outcome_runs(
            protocol,
            "inspect",
            "an inspect run's measure is a value of its outcome (score, output_tokens, ...)",
        )
        for i, participant in enumerate(protocol.participants):
            where = f"$.participants[{i}]"
            if participant.kind != "agent":
                raise BadInput.at(
                    f"{where}.kind",
                    f"unknown participant kind {participant.kind!r} for inspect (agent)",
                    "not-allowed",
                )
            _check_config(participant, where)
        _check_factors(protocol)
        sources: list[Source] = [package_source("evaluator", "inspect_ai")]
        for i, factor in enumerate(protocol.matrix):
            for j, level in enumerate(factor.levels):
                where = f"$.matrix[{i}].levels[{j}]"
                if not _is_target(factor.name, level):
                    continue
                function, source = _target(level, where)
                sources.append(source)
                if factor.name == "task":
                    task = _call(function, "the task", where)
                    self._check_samples(protocol, task, str(level), where)
        facts = AdapterFacts(
            name=self.name,
            version=_version(),
            observation_scope="partial",
            observation_note=(
                "each run's trace digests what inspect's eval log says of the sample: its input, "
                "every message's role, text and tool calls, the model's output, the scores and "
                "the token usage; tool internals, sandboxes and the log's events are not digested"
            ),
            measure_inputs="reported",
        )
        self._log_dir = options.get("log_dir")
        unique = {s.role: s for s in sources}
        return Frozen(facts=facts, sources=tuple(unique.values()))

    def _check_samples(self, protocol: Protocol, task: Any, level: str, where: str) -> None:
        """Every sample level names a sample of the task and, in a protocol with scenarios,
        the sample says its version in its metadata (``scenario_version``), as a harness says
        which version it ran."""
        try:
            ids = _sample_ids(task)
        except Exception as exc:  # a dataset is read by the task's own code
            raise BadInput.at(
                where,
                f"the dataset of {level!r} cannot be read ({type(exc).__name__})",
                "unreadable",
            ) from None
        name = sample_factor(protocol)
        i = next(k for k, f in enumerate(protocol.matrix) if f.name == name)
        for j, sample_id in enumerate(protocol.matrix[i].levels):
            if sample_id not in ids:
                raise BadInput.at(
                    f"$.matrix[{i}].levels[{j}]",
                    f"task {level!r} has no sample {sample_id!r}",
                    "unknown-name",
                )
        if protocol.scenarios:
            for sample in task.dataset:
                version = (sample.metadata or {}).get("scenario_version")
                if sample.id in protocol.matrix[i].levels and type(version) is not int:
                    raise BadInput.at(
                        where,
                        f"sample {sample.id!r} of {level!r} gives no whole-number "
                        "scenario_version in its metadata, which a protocol with scenarios needs",
                        "inconsistent",
                    )

    def open(self, protocol: Protocol, condition: Condition, frozen: Frozen) -> _InspectSession:
        """Build the condition's task, model and solver."""
        participant = next(p for p in protocol.participants if p.id == condition.participant)
        return _InspectSession(protocol, condition, participant, frozen, self._log_dir)


def scan_distributions_once() -> None:
    """Make inspect_ai scan the installed distributions once per process, not once per run.

    At each ``eval()`` inspect looks for the installed distribution that ships the task, to
    name it in the log. For a task in a local file (every example here) it finds none by name,
    and then scans the metadata of every installed distribution
    (``importlib.metadata.packages_distributions``) to find none again: about half a second an
    ``eval()`` here, most of what a run cost. A study runs one ``eval()`` a run, in an
    environment that does not change under it, so inspect's name for that scan is replaced by
    a cached one; what it finds, and so every log and record, is the same. Where inspect no
    longer has that module or name, nothing is changed (runs are then as slow as before)."""
    try:
        # Lazy: the inspect extra may be absent, and inspect_ai costs seconds to import.
        from inspect_ai._util import package
    except ImportError:  # a later inspect_ai without the module: nothing to cut
        return
    scan = getattr(package, "packages_distributions", None)
    if callable(scan) and not hasattr(scan, "cache_info"):
        package.packages_distributions = functools.cache(scan)


def _pins(frozen: Frozen) -> dict[str, str | None]:
    return {s.role: s.sha256 for s in frozen.sources}


class _InspectSession:
    def __init__(
        self,
        protocol: Protocol,
        condition: Condition,
        participant: Participant,
        frozen: Frozen,
        log_dir: str | None,
    ) -> None:
        # Lazy: the inspect extra may be absent, and inspect_ai costs seconds to import.
        from inspect_ai.model import get_model

        scan_distributions_once()
        factors = condition.factors
        self._task = import_target(str(factors["task"]), "$")()
        model = factors["model"]
        self._model = (
            get_model(str(model)) if _is_model_name(model) else import_target(str(model), "$")()
        )
        solver = factors.get("solver", DEFAULT_SOLVER)
        self._solver = None if solver == DEFAULT_SOLVER else import_target(str(solver), "$")()
        self._sample = factors[sample_factor(protocol)]
        self._config: dict[str, Any] = dict(participant.params.get("config", {}))
        self._stream = protocol.seeding.mode == "stream"
        self._log_dir = log_dir
        pins = _pins(frozen)
        self.contract: dict[str, Any] = {
            "task": factors["task"],
            "task_sha256": pins[inspect_role(str(factors["task"]))],
            "model": model,
            "model_sha256": None if _is_model_name(model) else pins[inspect_role(str(model))],
            "solver": solver,
            "solver_sha256": None if solver == DEFAULT_SOLVER else pins[inspect_role(str(solver))],
            "sample": self._sample,
            "participant": participant.id,
            "config": self._config,
            "inspect_ai": _version(),
        }

    def run(self, entry: PlanEntry) -> Evidence:
        seed = random.getrandbits(63) if self._stream else entry.seed
        directory = self._log_dir or tempfile.mkdtemp(prefix="repro-inspect-")
        try:
            # The log's samples are read from its file: before the directory goes.
            return _evidence(self._evaluate(directory, seed))
        finally:
            if self._log_dir is None:
                shutil.rmtree(directory, ignore_errors=True)

    def _evaluate(self, directory: str, seed: int | None) -> Any:
        # Lazy: the inspect extra may be absent, and inspect_ai costs seconds to import.
        from inspect_ai import eval as inspect_eval

        try:
            return inspect_eval(
                self._task,
                model=self._model,
                solver=self._solver,
                sample_id=self._sample,
                epochs=1,
                log_dir=directory,
                # The log display, silenced: display="none" still renders inspect's tables of
                # progress and results (to a quiet console), about 0.1 s a run here; "log"
                # renders none, and log_level="critical" keeps its lines (an error's traceback,
                # with host paths) off the worker's stderr, as "none" does.
                display="log",
                log_level="critical",
                # Retries are the protocol's: every attempt is repro's to keep.
                retry_on_error=0,
                fail_on_error=True,
                seed=seed,
                **self._config,
            )[0]
        except Exception as exc:
            raise RunFailed(f"harness-error:{type(exc).__name__}") from exc

    def close(self) -> None:
        """Nothing stays open between runs."""


def _evidence(log: Any) -> Evidence:
    """A run's evidence from its eval log: failed when inspect recorded an error (the cause
    names its exception type, never its message) or did not evaluate exactly one sample."""
    samples = log.samples or []
    error = next((s.error for s in samples if s.error is not None), log.error)
    if error is not None:
        found = _ERROR_TYPE.match(error.message)
        raise RunFailed(f"harness-error:{found.group(0) if found else 'error'}")
    if log.status != "success" or len(samples) != 1:
        raise RunFailed(f"harness-status:{log.status}")
    try:
        digest = sample_digest(samples[0])
        kept = outcome(samples[0], digest)
    except (TypeError, ValueError):  # a score or usage that JSON cannot hold (NaN, ...)
        raise RunInvalid("outcome-not-json") from None
    return Evidence(
        step_rewards=None,
        reported_measure=None,
        steps=None,
        trace_sha256=digest,
        outcome=kept,
    )


def _text(value: str | None) -> dict[str, Any]:
    """A text as a record keeps it: whole up to :data:`MAX_TEXT` characters, else as its length
    and sha256 (the text is then null)."""
    if value is None:
        return {"text": None, "chars": 0, "sha256": None}
    data = value.encode("utf-8", "surrogatepass")
    kept = value if len(value) <= MAX_TEXT else None
    return {"text": kept, "chars": len(value), "sha256": hashlib.sha256(data).hexdigest()}


def _as_float(value: Any) -> float | None:
    # Lazy: the inspect extra may be absent, and inspect_ai costs seconds to import.
    from inspect_ai.scorer import value_to_float

    if isinstance(value, list | dict):
        return None
    return float(value_to_float()(value))


def _scores(sample: Any) -> dict[str, Any]:
    out = {}
    for name, score in (sample.scores or {}).items():
        out[name] = {
            "value": score.value,
            "float": _as_float(score.value),
            "answer": _text(score.answer),
            "explanation": _text(score.explanation),
        }
    return out


def _usage(sample: Any) -> dict[str, Any]:
    return {
        model: usage.model_dump(exclude_none=True)
        for model, usage in sorted((sample.model_usage or {}).items())
    }


def outcome(sample: Any, digest: str) -> dict[str, Any]:
    """What a record keeps of one evaluated sample: its scores, the model's output text, the
    message count, the token usage (summed over models, and per model), the limit it hit if
    any, its scenario version when its metadata gives one, and the digest of the whole."""
    scores = _scores(sample)
    first = next(iter(scores.values()), None)
    usage = _usage(sample)
    completion = _text(sample.output.completion if sample.output is not None else None)
    result: dict[str, Any] = {
        "sample": sample.id,
        "score": None if first is None else first["float"],
        "scores": scores,
        "completion": completion["text"],
        "completion_chars": completion["chars"],
        "completion_sha256": completion["sha256"],
        "messages": len(sample.messages),
        "usage": usage,
        "limit": None if sample.limit is None else sample.limit.type,
        "eval_sample_sha256": digest,
    }
    for key in ("input_tokens", "output_tokens", "total_tokens"):
        result[key] = sum(int(u.get(key) or 0) for u in usage.values())
    version = (sample.metadata or {}).get("scenario_version")
    if type(version) is int:
        result["scenario_version"] = version
    return result


def _message(message: Any) -> dict[str, Any]:
    calls = [
        {"function": call.function, "arguments": call.arguments}
        for call in getattr(message, "tool_calls", None) or []
    ]
    return {"role": message.role, "text": message.text, "tool_calls": calls}


def sample_digest(sample: Any) -> str:
    """The digest of what an eval log says of one sample, without what differs from one
    evaluation to the next (message and event IDs, clock times): its ID and input, every
    message (role, text, tool calls), the model's output text, every score and the token usage.
    The eval log file itself holds random IDs and times, so its own bytes differ every run; this
    digest does not, and a reviewer who kept the log (``--option log_dir``) can recompute it."""
    trace = TraceDigest()
    given = sample.input if isinstance(sample.input, str) else [_message(m) for m in sample.input]
    trace.add(b"I", canonical.dumps({"id": sample.id, "input": given}))
    for message in sample.messages:
        trace.add(b"M", canonical.dumps(_message(message)))
    completion = sample.output.completion if sample.output is not None else None
    trace.add(b"O", canonical.dumps(completion))
    for name, score in sorted((sample.scores or {}).items()):
        item = {
            "scorer": name,
            "value": score.value,
            "answer": score.answer,
            "explanation": score.explanation,
        }
        trace.add(b"S", canonical.dumps(item))
    trace.add(b"U", canonical.dumps(_usage(sample)))
    return trace.hexdigest()
