"""source-ledger.json's facts against the protocol: what the adapter says of itself, the roles of
the sources it pins and each condition's contract, wherever the protocol determines them.

The ledger's adapter facts, sources and contracts are gathered at run time, not derived; but a
protocol fixes much of what they must say: the adapter's name; for a built-in adapter, what it
observes and what a measure is made of, which roles its sources pin (one per environment, per
``callable`` policy, per inspect module ...) and, in each condition's contract, the factors,
participant, policy kind, scenario version and the digests the sources pin. One function per
part, used by both sides: ``repro study`` refuses an adapter whose facts contradict the protocol
(:func:`facts_problems`, at freeze) and fails a session whose contract does
(:func:`contract_problems`, ``session-open-failed:contract-inconsistent``); ``repro verify``
applies both to the bundle's protocol and ledger (:func:`ledger_fact_problems`).

A contract's key that is absent is not a problem (a fact an adapter does not state misleads
nobody); a value that contradicts the protocol is. An adapter that is not built in (a third
party's) is held to its name only. Pure: it imports no adapter and no simulator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from attrs import frozen

from repro._derive.scenarios import scenario_of
from repro._json.canonical import json_path
from repro._protocol.pins import (
    SCENARIO_ROLE,
    TREE_ROLE,
    agent_role,
    named_files,
    policy_role,
    records_owner,
    records_role,
)
from repro.models import AdapterFacts, Condition, Ledger, Protocol, Source

__all__ = [
    "DEFAULT_SOLVER",
    "FactProblem",
    "contract_problems",
    "facts_problems",
    "inspect_role",
    "ledger_fact_problems",
    "recorded_note",
    "recorded_reading",
    "sample_factor",
]

#: The inspect adapter's solver level that keeps the task's own solver.
DEFAULT_SOLVER = "default"


def recorded_note(files: Sequence[tuple[str, str]], recorded_by: str) -> str:
    """What a study of runs made elsewhere says of them (the recorded adapter's
    ``recorded_from``, the reason execution control is weakened): not executed under this seal,
    who recorded them, and the files they were read from, each by its name and sha256."""
    read = " and ".join(f"{name}, pinned by sha256 {sha256}" for name, sha256 in files)
    return f"runs were not executed under this seal: recorded by {recorded_by}; read from {read}"


def recorded_reading(recorded_from: str) -> str:
    """What a report, a page or ``repro show`` says above its figures of a study of runs made
    elsewhere (``recorded_from``, :func:`recorded_note`): that it recomputes them, and no more."""
    return (
        f"{recorded_from[:1].upper() + recorded_from[1:]}. Every figure below is a recomputation "
        "of the recorded runs; nothing here says how they were made."
    )


def inspect_role(level: str) -> str:
    """The ledger role of an inspect target's module: one pin per file, however many targets
    it holds."""
    return f"inspect module {level.partition(':')[0]}"


def sample_factor(protocol: Protocol) -> str:
    """The inspect adapter's factor whose levels are sample IDs: the scoring's scenario factor,
    else ``sample``."""
    return protocol.scoring.scenario_factor if protocol.scoring is not None else "sample"


@frozen
class FactProblem:
    """A fact of the ledger the protocol contradicts: where in source-ledger.json (a JSON path),
    what, what the protocol makes of it, what the ledger says."""

    path: str
    what: str
    expected: str
    found: str


def _shown(value: object) -> str:
    return repr(value)[:120]


class _Sources:
    """The pinned sources by role."""

    def __init__(self, sources: Sequence[Source]) -> None:
        self.sources = sources
        self.by_role: dict[str, list[Source]] = {}
        for source in sources:
            self.by_role.setdefault(source.role, []).append(source)

    def one(self, role: str) -> Source | None:
        """The one source of ``role``, None when there is none or more than one."""
        found = self.by_role.get(role, [])
        return found[0] if len(found) == 1 else None

    def digest(self, role: str) -> str | None:
        source = self.one(role)
        return None if source is None else source.sha256


def _roles(
    index: _Sources,
    required: Mapping[str, tuple[str, ...]],
    allowed: Callable[[str], bool] = lambda role: False,
) -> list[FactProblem]:
    """Each role of ``required`` (role -> the kinds it may be) pinned exactly once by a source of
    one of those kinds, and every other source's role one that ``allowed`` admits."""
    out = []
    for role, kinds in required.items():
        found = index.by_role.get(role, [])
        if len(found) != 1 or found[0].kind not in kinds:
            out.append(
                FactProblem(
                    "$.sources",
                    f"the source of role {role!r} the protocol makes the adapter pin",
                    f"one {' or '.join(kinds)}",
                    ", ".join(s.kind for s in found) or "none",
                )
            )
    for i, source in enumerate(index.sources):
        if source.role not in required and not allowed(source.role):
            out.append(
                FactProblem(
                    f"$.sources[{i}].role",
                    "a source of a role the protocol gives the adapter no reason to pin",
                    "a role of the protocol's",
                    _shown(source.role),
                )
            )
    return out


def _fixed(adapter: AdapterFacts, scope: str, measure_inputs: str) -> list[FactProblem]:
    """What a built-in adapter always says of what it observes and what a measure is made of."""
    out = []
    for key, expected, found in (
        ("observation_scope", scope, adapter.observation_scope),
        ("measure_inputs", measure_inputs, adapter.measure_inputs),
    ):
        if found != expected:
            out.append(
                FactProblem(
                    f"$.adapter.{key}",
                    f"the {adapter.name} adapter's {key}",
                    _shown(expected),
                    _shown(found),
                )
            )
    return out


def _version(adapter: AdapterFacts, expected: str | None, of: str) -> list[FactProblem]:
    """The adapter's version against the version of the package it names (``of``)."""
    if expected is None or adapter.version == expected:
        return []
    return [
        FactProblem("$.adapter.version", f"the adapter's version: {of}", expected, adapter.version)
    ]


def _package_version(index: _Sources, role: str) -> str | None:
    source = index.one(role)
    return None if source is None or source.kind != "package" else source.version


def _gymnasium_facts(
    protocol: Protocol, adapter: AdapterFacts, index: _Sources
) -> list[FactProblem]:
    envs: Sequence[Any] = next((f.levels for f in protocol.matrix if f.name == "env_id"), [])
    required = {"simulator": ("package",), "rng": ("package",)}
    required |= {f"environment {env}": ("file",) for env in envs}
    required |= {
        policy_role(p.id): ("file",) for p in protocol.participants if p.kind == "callable"
    }
    return [
        *_fixed(adapter, "full", "step-rewards"),
        *_version(adapter, _package_version(index, "simulator"), "the simulator package's"),
        *_roles(index, required),
    ]


def _cyborg_facts(protocol: Protocol, adapter: AdapterFacts, index: _Sources) -> list[FactProblem]:
    simulator = index.one("simulator")
    expected = None
    if simulator is not None and simulator.kind == "package":
        expected = f"{simulator.name} {simulator.version}"
    required: dict[str, tuple[str, ...]] = {"simulator": ("package",)}
    required |= {
        agent_role(p.id): ("file",) for p in protocol.participants if p.kind == "agent_class"
    }
    if any(p.kind == "shipped" for p in protocol.participants):
        required["simulator blue agents"] = ("file",)

    def allowed(role: str) -> bool:
        # The scenario files, the simulator's tree and its pinned modules (by their names).
        return role in (SCENARIO_ROLE, TREE_ROLE) or (
            role.startswith("simulator ") and role != "simulator blue agents"
        )

    return [
        *_fixed(adapter, "partial", "step-rewards"),
        *_version(adapter, expected, "the simulator distribution and its version"),
        *_roles(index, required, allowed),
    ]


def _command_facts(protocol: Protocol, adapter: AdapterFacts, index: _Sources) -> list[FactProblem]:
    required = {"harness": ("file",), "schema-validator": ("package",)}
    return [
        *_fixed(adapter, "none", "reported"),
        # A release is pinned when the protocol or the command line names one.
        *_roles(index, required, lambda role: role == "release"),
    ]


def _inspect_targets(protocol: Protocol) -> set[str]:
    """The ``module:function`` levels of an inspect protocol (every task, a model that is not an
    inspect model name, a solver other than the task's own)."""
    out = set()
    for factor in protocol.matrix:
        for level in factor.levels:
            if not isinstance(level, str):
                continue
            if (
                factor.name == "task"
                or (factor.name == "model" and "/" not in level)
                or (factor.name == "solver" and level != DEFAULT_SOLVER)
            ):
                out.add(level)
    return out


def _inspect_facts(protocol: Protocol, adapter: AdapterFacts, index: _Sources) -> list[FactProblem]:
    required = {"evaluator": ("package",)}
    required |= {inspect_role(level): ("file",) for level in _inspect_targets(protocol)}
    return [
        *_fixed(adapter, "partial", "reported"),
        *_version(adapter, _package_version(index, "evaluator"), "the evaluator package's"),
        *_roles(index, required),
    ]


def _recorded_facts(
    protocol: Protocol, adapter: AdapterFacts, index: _Sources
) -> list[FactProblem]:
    roles = [records_role(participant) for participant, _, _ in named_files(protocol)]
    out = [*_fixed(adapter, "none", "reported"), *_roles(index, dict.fromkeys(roles, ("file",)))]
    found = [index.one(role) for role in roles]
    recorded_by = protocol.adapter.options.get("recorded_by")
    files = [(s.name, s.sha256) for s in found if s is not None and s.sha256 is not None]
    if len(files) == len(roles) and isinstance(recorded_by, str):
        expected = recorded_note(files, recorded_by)
        if adapter.recorded_from != expected:
            out.append(
                FactProblem(
                    "$.adapter.recorded_from",
                    "what the recorded adapter says of its runs",
                    _shown(expected),
                    _shown(adapter.recorded_from),
                )
            )
    return out


_FactsRule = Callable[[Protocol, AdapterFacts, _Sources], list[FactProblem]]

#: Each built-in adapter's rule for its facts and sources, by adapter name.
_FACTS: dict[str, _FactsRule] = {
    "gymnasium": _gymnasium_facts,
    "cyborg": _cyborg_facts,
    "command": _command_facts,
    "inspect": _inspect_facts,
    "recorded": _recorded_facts,
}


def facts_problems(
    protocol: Protocol, adapter: AdapterFacts, sources: Sequence[Source]
) -> list[FactProblem]:
    """What the adapter's facts and pinned sources say that ``protocol`` contradicts: its name,
    and for a built-in adapter what it observes, its version against the package it names, and
    the roles its sources pin (each one the protocol calls for, once, and no other)."""
    out = []
    if adapter.name != protocol.adapter.name:
        out.append(
            FactProblem(
                "$.adapter.name",
                "the adapter that ran: the protocol's",
                _shown(protocol.adapter.name),
                _shown(adapter.name),
            )
        )
    rule = _FACTS.get(protocol.adapter.name)
    return out + ([] if rule is None else rule(protocol, adapter, _Sources(sources)))


def _participant_kind(protocol: Protocol, condition: Condition) -> str | None:
    return next((p.kind for p in protocol.participants if p.id == condition.participant), None)


def _participant_params(protocol: Protocol, condition: Condition) -> Mapping[str, Any]:
    return next((p.params for p in protocol.participants if p.id == condition.participant), {})


def _gymnasium_contract(
    protocol: Protocol, condition: Condition, index: _Sources
) -> dict[str, object]:
    expected: dict[str, object] = {
        "env_id": condition.factors.get("env_id"),
        "participant": condition.participant,
        "policy": _participant_kind(protocol, condition),
    }
    if "max_episode_steps" in condition.factors:
        expected["max_episode_steps"] = condition.factors["max_episode_steps"]
    return expected


def _cyborg_contract(
    protocol: Protocol, condition: Condition, index: _Sources
) -> dict[str, object]:
    kind = _participant_kind(protocol, condition)
    expected: dict[str, object] = {
        "red_agent": condition.factors.get("red_agent"),
        "trial_length": condition.factors.get("trial_length"),
        "participant": condition.participant,
        "policy": kind,
    }
    if kind == "shipped":
        expected["agent"] = _participant_params(protocol, condition).get("agent")
    return expected


def _command_contract(
    protocol: Protocol, condition: Condition, index: _Sources
) -> dict[str, object]:
    scenario = scenario_of(protocol, condition)
    return {
        "harness_sha256": index.digest("harness"),
        "release_sha256": index.digest("release"),
        "participant": condition.participant,
        "scenario": None if scenario is None else scenario.id,
        "scenario_version": None if scenario is None else scenario.version,
    }


def _inspect_contract(
    protocol: Protocol, condition: Condition, index: _Sources
) -> dict[str, object]:
    factors = condition.factors
    model, solver = factors.get("model"), factors.get("solver", DEFAULT_SOLVER)
    task = factors.get("task")
    return {
        "task": task,
        "task_sha256": index.digest(inspect_role(str(task))),
        "model": model,
        "model_sha256": None
        if isinstance(model, str) and "/" in model
        else index.digest(inspect_role(str(model))),
        "solver": solver,
        "solver_sha256": None
        if solver == DEFAULT_SOLVER
        else index.digest(inspect_role(str(solver))),
        "sample": factors.get(sample_factor(protocol)),
        "participant": condition.participant,
        "config": dict(_participant_params(protocol, condition).get("config", {})),
        "inspect_ai": _package_version(index, "evaluator"),
    }


def _recorded_contract(
    protocol: Protocol, condition: Condition, index: _Sources
) -> dict[str, object]:
    """The digest of the records file the condition's runs were read from: its participant's
    own, or the one file's."""
    owner = records_owner(protocol, condition.participant)
    return {"records_sha256": index.digest(records_role(owner))}


_ContractRule = Callable[[Protocol, Condition, _Sources], dict[str, object]]

#: What each built-in adapter's contract says that the protocol and the pins determine.
_CONTRACTS: dict[str, _ContractRule] = {
    "gymnasium": _gymnasium_contract,
    "cyborg": _cyborg_contract,
    "command": _command_contract,
    "inspect": _inspect_contract,
    "recorded": _recorded_contract,
}


def contract_problems(
    protocol: Protocol,
    condition: Condition,
    contract: Mapping[str, Any],
    sources: Sequence[Source],
) -> list[FactProblem]:
    """What a built-in adapter's contract for ``condition`` says that the protocol (its factors,
    participant, scenario) or the pinned ``sources`` (their digests) contradict; nothing for an
    adapter that is not built in."""
    rule = _CONTRACTS.get(protocol.adapter.name)
    if rule is None:
        return []
    out = []
    for key, value in rule(protocol, condition, _Sources(sources)).items():
        if key in contract and contract[key] != value:
            out.append(
                FactProblem(
                    json_path(json_path("$.contracts", condition.id), key),
                    f"condition {condition.id}'s contract: {key}",
                    _shown(value),
                    _shown(contract[key]),
                )
            )
    return out


def ledger_fact_problems(
    protocol: Protocol, conditions: Iterable[Condition], ledger: Ledger
) -> list[FactProblem]:
    """Every fact of ``ledger`` that ``protocol`` contradicts (:func:`facts_problems`,
    :func:`contract_problems`), and each contract of a condition the plan does not hold."""
    out = facts_problems(protocol, ledger.adapter, ledger.sources)
    known = {c.id: c for c in conditions}
    for condition_id, contract in ledger.contracts.items():
        condition = known.get(condition_id)
        if condition is None:
            out.append(
                FactProblem(
                    json_path("$.contracts", condition_id),
                    "a contract of a condition the sealed plan does not hold",
                    "a condition of the plan",
                    _shown(condition_id),
                )
            )
            continue
        out += contract_problems(protocol, condition, contract, ledger.sources)
    return out
