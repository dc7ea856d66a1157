"""The command adapter: any executable (a model CLI, an agent harness) drives each run.

docs/harness.md is the contract with the harness, key by key; in short:

Options (in the protocol's ``adapter.options``, or given with ``--option KEY=VALUE``, which wins):

- ``harness`` (required): the program. A relative path the protocol gives is looked up in the
  protocol file's folder (one ``--option`` gives, in the working directory; on a replay, only
  in ``--sources``: :func:`repro.adapters._base.protocol_path`). It is pinned by sha256 in the
  source ledger. A ``.py`` file runs with the study's own Python; anything else must be
  executable.
- ``release`` (optional): a directory (or file) holding the release or model under test, found
  as the harness is, pinned by the digest of its tree, so a candidate can be measured before it
  is installed. The harness gets its absolute path in the run spec.
- ``outcome_schema`` (optional, protocol only; required of a scored protocol): a JSON Schema
  (draft 2020-12) every outcome must satisfy, whose ``required`` must name every outcome key the
  protocol's rules read (:func:`repro._protocol.scoring_rules.outcome_schema_problems`).

Each run starts the harness afresh, writes the run spec to its stdin as one canonical JSON
object on one line (slot, condition, factors, participant, seed, scenario, release,
release_sha256) and reads one JSON object, the outcome, from its stdout. A run fails on a
non-zero exit (cause ``harness-exit:N``, or ``harness-killed:SIGNAL``) or on the protocol's
``retry.timeout_seconds`` (``timeout``; the harness and its process group are killed); it is
invalid when stdout is not one JSON object (``outcome-not-json``, ``outcome-not-object``,
``outcome-too-large``) or the object breaks the outcome schema (``outcome-schema``). The
harness's stderr never enters the bundle: only its length and sha256 do; a failure carries it
for ``repro replay --traceback`` to show on the terminal.

Participants are ``kind: "agent"`` with free ``params``, passed to the harness as they are.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from repro import __version__
from repro._json import canonical
from repro._json.canonical import json_path
from repro._protocol.scoring_rules import outcome_schema_problems
from repro.adapters._base import (
    Evidence,
    Frozen,
    file_source,
    protocol_folder,
    protocol_path,
    reexecuting,
    refuse_unbounded_outcome_runs,
)
from repro.adapters._lifetime import die_with_parent, stopped_with_run
from repro.adapters._reaper import Reaper, reaper
from repro.errors import BadInput, RunFailed, RunInvalid
from repro.models import (
    AdapterFacts,
    Condition,
    HarnessFacts,
    Participant,
    PlanEntry,
    Protocol,
    Source,
)

__all__ = ["CommandAdapter", "tree_source"]

_OPTIONS = {"harness", "release", "outcome_schema"}
#: Bytes of stdout a harness may print at most: an outcome is a small object (as canonical
#: JSON, a record keeps at most repro.models.MAX_OUTCOME_BYTES of it).
MAX_STDOUT_BYTES = 16 << 20


def tree_source(role: str, path: Path, name: str | None = None) -> Source:
    """A directory pinned by the sha256 of its tree: every regular file's path relative to it
    (sorted, ``/``-separated), its size and its sha256, one line each. A symlink or special file
    is refused: what it points to is not part of the tree. A plain file is pinned as a file.
    ``name`` is what the ledger calls it (by default the last component of ``path``)."""
    pin_name = path.name if name is None else name
    if path.is_file():
        return file_source(role, pin_name, path.read_bytes())
    lines, total = [], 0
    for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
        dirnames.sort()
        for name in [*dirnames, *filenames]:
            if (Path(dirpath) / name).is_symlink():
                raise BadInput(f"--option {role}: {name!r} is a symbolic link; pin real files")
        for name in sorted(filenames):
            file = Path(dirpath) / name
            if not file.is_file():
                raise BadInput(f"--option {role}: {name!r} is not a regular file")
            data = file.read_bytes()
            relative = file.relative_to(path).as_posix()
            lines.append(f"{hashlib.sha256(data).hexdigest()} {len(data)} {relative}\n")
            total += len(data)
    lines.sort(key=lambda line: line.split(" ", 2)[2])
    digest = hashlib.sha256("".join(lines).encode()).hexdigest()
    return Source(kind="directory", role=role, name=pin_name, sha256=digest, size=total)


def _options(protocol: Protocol, options: Mapping[str, str]) -> dict[str, Any]:
    merged: dict[str, Any] = dict(protocol.adapter.options)
    for key in protocol.adapter.options:
        if key not in _OPTIONS:
            raise BadInput.at(
                json_path("$.adapter.options", key),
                f"the command adapter takes no option {key!r} (harness, release, outcome_schema)",
                "unknown-field",
            )
    for key, value in options.items():
        if key not in _OPTIONS - {"outcome_schema"}:
            raise BadInput(f"--option {key}: the command adapter takes harness and release")
        merged[key] = value
    for key in ("harness", "release"):
        if key in merged and not (isinstance(merged[key], str) and merged[key]):
            raise BadInput.at(
                json_path("$.adapter.options", key),
                f"{key} must be a non-empty path",
                "not-allowed",
            )
    if "harness" not in merged:
        raise BadInput.at(
            "$.adapter.options",
            "the command adapter needs a harness (adapter.options.harness or "
            "--option harness=PATH)",
            "missing-field",
        )
    return merged


def _not_found(key: str, value: str, options: Mapping[str, str], what: str) -> BadInput:
    """The refusal of a harness or release that is not there (or not runnable), naming where it
    was looked up and who named it: ``--option KEY``, or the protocol at its JSON path."""
    if key in options:
        return BadInput(
            f"--option {key}: {value!r} {what} (looked up in the working directory {Path.cwd()})"
        )
    return BadInput.at(
        json_path("$.adapter.options", key),
        f"{key} {value!r} {what} (looked up in {protocol_folder()})",
        "not-found",
    )


def _pin_name(role: str, options: Mapping[str, str], path: Path) -> str:
    """What the ledger names the pinned ``role``: its file or directory name when the protocol
    gives the path, the role itself when ``--option`` does (the name is then the user's)."""
    return role if role in options else path.name


def _validator(schema: Any) -> Any:
    # Lazy: jsonschema is read only for a protocol whose harness declares an outcome schema.
    import jsonschema

    if not isinstance(schema, dict):
        raise BadInput.at("$.adapter.options", "outcome_schema must be a JSON object", "wrong-type")
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise BadInput.at(
            "$.adapter.options.outcome_schema",
            f"outcome_schema is not a valid JSON Schema ({exc.message})",
            "not-allowed",
        ) from None
    return jsonschema.Draft202012Validator(schema)


def _check_participants_and_schema(protocol: Protocol, merged: Mapping[str, Any]) -> None:
    """Every participant is an ``agent``; the outcome schema, when there is one, is a JSON
    Schema that holds what the protocol's measures and scoring rules read of an outcome."""
    for i, participant in enumerate(protocol.participants):
        if participant.kind != "agent":
            raise BadInput.at(
                f"$.participants[{i}].kind",
                f"unknown participant kind {participant.kind!r} for command (agent)",
                "not-allowed",
            )
    if "outcome_schema" in merged:
        _validator(merged["outcome_schema"])
    if not reexecuting():
        problems = outcome_schema_problems(
            protocol, merged.get("outcome_schema"), "$.adapter.options.outcome_schema"
        )
        if problems:
            raise BadInput.of("protocol", problems)


class CommandAdapter:
    """Runs each slot as one call of an external harness program."""

    name = "command"
    #: It runs a program (the harness), no simulator package.
    simulator_modules: tuple[str, ...] = ()
    #: A run only waits on its harness process (which the run kills with its group on a
    #: timeout, or when the study ends it early), draws from no process-global generator, and
    #: shares nothing between sessions: its sessions run on threads of the study process.
    thread_sessions = True

    def __init__(self) -> None:
        self._options: dict[str, Any] = {}
        #: The harness's and the release's absolute paths, resolved once at freeze: a session
        #: opens for each condition on each thread, and resolving a path is a system call a
        #: component.
        self._paths: dict[str, Path] = {}

    def freeze(self, protocol: Protocol, options: Mapping[str, str]) -> Frozen:
        """Check options and participants; pin the harness file and the release tree. The
        sessions this adapter opens use the options it was frozen with."""
        merged = _options(protocol, options)
        refuse_unbounded_outcome_runs(
            protocol, "command", "a command run's measure is a value of its outcome"
        )
        _check_participants_and_schema(protocol, merged)
        # A path given with --option is the user's, found from the working directory as any
        # command-line path; one the protocol gives is the protocol's, found from its folder,
        # and on a replay only where the user says (repro.adapters._base.protocol_path).
        paths = {
            key: Path(merged[key])
            if key in options
            else protocol_path(merged[key], json_path("$.adapter.options", key))
            for key in ("harness", "release")
            if key in merged
        }
        harness = paths["harness"]
        if not harness.is_file():
            raise _not_found("harness", merged["harness"], options, "is not a file")
        if harness.suffix != ".py" and not os.access(harness, os.X_OK):
            raise _not_found("harness", merged["harness"], options, "is not executable")
        # A path given on the command line names a place on this machine, which the bundle
        # must not tell: its pin is named by its role; one the protocol gives, by its file name.
        sources = [
            file_source("harness", _pin_name("harness", options, harness), harness.read_bytes()),
            Source(
                kind="package",
                role="schema-validator",
                name="jsonschema",
                version=importlib.metadata.version("jsonschema"),
            ),
        ]
        if "release" in paths:
            release = paths["release"]
            if not release.exists():
                raise _not_found("release", merged["release"], options, "does not exist")
            sources.append(tree_source("release", release, _pin_name("release", options, release)))
        facts = AdapterFacts(
            name=self.name,
            version=_version(),
            observation_scope="none",
            observation_note=(
                "the harness is a black box: repro sees the run spec it sends, the outcome object "
                "and exit code the harness returns, and the length and digest of its stderr"
            ),
            measure_inputs="reported",
        )
        self._options = merged
        self._paths = {key: path.resolve() for key, path in paths.items()}
        return Frozen(facts=facts, sources=tuple(sources))

    def open(self, protocol: Protocol, condition: Condition, frozen: Frozen) -> _CommandSession:
        """Prepare the condition's harness call."""
        participant = next(p for p in protocol.participants if p.id == condition.participant)
        return _CommandSession(protocol, condition, participant, self._options, self._paths, frozen)


def _version() -> str:
    return __version__


class _CommandSession:
    def __init__(
        self,
        protocol: Protocol,
        condition: Condition,
        participant: Participant,
        options: Mapping[str, Any],
        paths: Mapping[str, Path],
        frozen: Frozen,
    ) -> None:
        self._protocol = protocol
        self._condition = condition
        self._participant = participant
        pinned = {s.role: s for s in frozen.sources}
        self._harness = paths["harness"]
        self._release = str(paths["release"]) if "release" in paths else None
        self._release_sha256 = pinned["release"].sha256 if "release" in pinned else None
        schema = options.get("outcome_schema")
        self._validator = _validator(schema) if schema is not None else None
        self._timeout = protocol.retry.timeout_seconds
        scoring = protocol.scoring
        factor = scoring.scenario_factor if scoring is not None else "scenario"
        scenario_id = condition.factors.get(factor)
        self._scenario = next((s for s in protocol.scenarios if s.id == scenario_id), None)
        self.contract: dict[str, Any] = {
            "harness_sha256": pinned["harness"].sha256,
            "release_sha256": self._release_sha256,
            "participant": participant.id,
            "scenario": self._scenario.id if self._scenario is not None else None,
            "scenario_version": self._scenario.version if self._scenario is not None else None,
        }

    def _spec(self, entry: PlanEntry) -> dict[str, Any]:
        scenario = self._scenario
        return {
            "slot": entry.slot,
            "condition": self._condition.id,
            "factors": self._condition.factors,
            "participant": {"id": self._participant.id, "params": self._participant.params},
            "seed": entry.seed,
            "scenario": None
            if scenario is None
            else {"id": scenario.id, "version": scenario.version, "input": scenario.input},
            "release": self._release,
            "release_sha256": self._release_sha256,
        }

    def _command(self) -> list[str]:
        if self._harness.suffix == ".py":
            return [sys.executable, str(self._harness)]
        return [str(self._harness)]

    def run(self, entry: PlanEntry) -> Evidence:
        spec = canonical.dumps(self._spec(entry))
        # The harness dies with this process (the study's, or its worker's), however that ends:
        # this process's reaper kills its group (repro.adapters._reaper); where no reaper can
        # start, the kernel's parent-death signal kills the harness.
        guard = reaper()
        process, inode, rest = _start(self._command(), spec, guard)
        try:
            if guard is not None and inode is not None:
                guard.watch(process.pid, inode)
            # On a thread session, the study ends a run it stops by killing the group.
            with stopped_with_run(functools.partial(_signal_group, process)):
                stdout, stderr = process.communicate(rest, timeout=self._timeout)
        except subprocess.TimeoutExpired:
            _, stderr = _kill_group(process)
            raise RunFailed("timeout", stderr) from None
        finally:
            if process.poll() is None:
                _kill_group(process)
            if guard is not None:
                guard.unwatch(process.pid)
        return self._evidence(process.returncode, stdout, stderr)

    def _evidence(self, code: int, stdout: bytes, stderr: bytes) -> Evidence:
        """The run's evidence from the harness's exit code and output; raise
        :class:`RunFailed` when it did not exit 0, :class:`RunInvalid` when its outcome is not
        a JSON object (within the schema, if the protocol gives one)."""
        harness = HarnessFacts(
            exit_code=code,
            stderr_bytes=len(stderr),
            stderr_sha256=hashlib.sha256(stderr).hexdigest(),
        )
        # The harness's stderr goes with a failure for ``repro replay --traceback`` to show on
        # the terminal (repro._execute.worker._show); no record keeps it.
        if code != 0:
            raise RunFailed(
                f"harness-exit:{code}" if code > 0 else f"harness-killed:{_signal_name(-code)}",
                stderr,
            )
        if len(stdout) > MAX_STDOUT_BYTES:
            raise RunInvalid("outcome-too-large", stderr)
        try:
            outcome = canonical.loads(stdout, what="outcome", max_bytes=MAX_STDOUT_BYTES)
        except BadInput:
            raise RunInvalid("outcome-not-json", stderr) from None
        if not isinstance(outcome, dict):
            raise RunInvalid("outcome-not-object", stderr)
        if self._validator is not None and not self._validator.is_valid(outcome):
            raise RunInvalid("outcome-schema", stderr)
        # The measure is repro's to take from the outcome (repro._derive.validity.outcome_value), in
        # the study and again in verify: the adapter reports none of its own.
        return Evidence(
            step_rewards=None,
            reported_measure=None,
            steps=None,
            trace_sha256=None,
            outcome=outcome,
            harness=harness,
        )

    def close(self) -> None:
        """Nothing stays open between runs."""


def _start(
    command: list[str], spec: bytes, guard: Reaper | None
) -> tuple[subprocess.Popen[bytes], int | None, bytes | None]:
    """Start the harness ``command`` in its own process group, reading ``spec`` on its
    standard input: the process, the inode of that input as the reaper ``guard`` knows it
    (None without one), and what is left of the spec for ``communicate`` to write."""
    launcher = () if guard is not None else _death_launcher()
    stdin, feed, rest = _filled_pipe(spec)
    inode = None
    try:
        # The reaper is told of the harness's standard input before the harness starts, so
        # that it finds the harness even if this process is killed before it tells the
        # reaper its group.
        if guard is not None:
            inode = guard.starting(stdin)
        process = subprocess.Popen(
            [*launcher, *command],
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group, killed whole on a timeout
            preexec_fn=None
            if guard is not None or launcher
            else functools.partial(die_with_parent, os.getpid()),
        )
    except BaseException:
        if guard is not None and inode is not None:
            guard.not_started(inode)
        if feed is not None:
            os.close(feed)
        raise
    finally:
        os.close(stdin)
    if feed is not None:
        # What is left of the spec, written by communicate as the harness reads, as it
        # writes to the pipe it makes for ``stdin=subprocess.PIPE``.
        process.stdin = open(feed, "wb")  # noqa: SIM115 (communicate closes it)
    return process, inode, rest


def _filled_pipe(spec: bytes) -> tuple[int, int | None, bytes | None]:
    """The harness's stdin, a pipe of this process's own (always: the reaper knows the harness
    by it), as its read end's descriptor; its write end; and what is left to write to it once
    the harness runs. A pipe that holds the whole ``spec`` and its end (write end closed: None,
    and None left), so that the harness reads it as soon as it starts, with nothing more for
    this process to do; for a spec the pipe cannot hold at once, the pipe holds what it could
    take, and the rest is written through its write end (blocking) by
    :meth:`subprocess.Popen.communicate` as the harness reads."""
    read_end, write_end = os.pipe()
    try:
        os.set_blocking(write_end, False)
        written = os.write(write_end, spec) if spec else 0
    except BlockingIOError:
        written = 0
    except BaseException:
        os.close(read_end)
        os.close(write_end)
        raise
    if written == len(spec):
        os.close(write_end)
        return read_end, None, None
    os.set_blocking(write_end, True)
    return read_end, write_end, spec[written:]


_launcher_lock = threading.Lock()


def _death_launcher() -> tuple[str, ...]:
    """:func:`_find_death_launcher`, found once (by one thread of many)."""
    with _launcher_lock:
        return _find_death_launcher()


@functools.cache
def _find_death_launcher() -> tuple[str, ...]:
    """Where no reaper can start (:mod:`repro.adapters._reaper`): what starts the harness so that
    the kernel kills it when the thread that started it ends (the study's, or its worker's): on
    Linux, util-linux's ``setpriv --pdeathsig KILL`` when it is there, which lets
    :mod:`subprocess` start the child with ``vfork`` (a few ms); else nothing, and
    :func:`~repro.adapters._lifetime.die_with_parent` runs in the forked child (``preexec_fn``,
    which forces a full ``fork`` of the study process: tens of ms with many threads)."""
    if not sys.platform.startswith("linux"):
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return ()
    launcher = (setpriv, "--pdeathsig", "KILL", "--")
    try:
        works = subprocess.run(
            [*launcher, setpriv, "--version"], capture_output=True, check=False, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return ()
    return launcher if works.returncode == 0 else ()


def _kill_group(process: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """Kill the harness's group; what it wrote to stdout and stderr until then."""
    _signal_group(process)
    stdout, stderr = process.communicate()
    return stdout or b"", stderr or b""


def _signal_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the harness's process group, unless the harness was reaped already (its ID may
    then be another's); safe from another thread than the one that waits on it."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal-{number}"
