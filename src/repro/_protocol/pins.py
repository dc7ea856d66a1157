"""The protocol's pins against the ledger's sources: every digest a protocol pins (a built-in
adapter's options, a participant's ``params.sha256``) names one source of source-ledger.json,
which must record that digest. One rule per built-in adapter, in :data:`PIN_RULES` by adapter
name, and the one place that maps each pin to the ledger source it names: the adapter's
``freeze`` refuses a simulator that breaks it (:func:`refuse_pin_problems`), and ``repro
verify`` applies it again to the bundle's protocol and ledger (:func:`ledger_problems`).

Pure: it imports no simulator and no adapter, so verify runs it where none is installed."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from attrs import frozen

from repro._json.canonical import json_path
from repro.errors import BadInput
from repro.models import SHA256_HEX, Protocol, Source

__all__ = [
    "PIN_RULES",
    "RECORDS_ROLE",
    "SCENARIO_ROLE",
    "TREE_ROLE",
    "PinProblem",
    "agent_role",
    "command_problems",
    "cyborg_problems",
    "gymnasium_problems",
    "ledger_problems",
    "named_files",
    "policy_role",
    "recorded_problems",
    "records_owner",
    "records_role",
    "refuse_pin_problems",
]

#: The ledger role of each scenario file the cyborg adapter pins (named by its file name).
SCENARIO_ROLE = "scenario"
#: The ledger role of the simulator package's tree (``repro.adapters._cyborg``).
TREE_ROLE = "simulator tree"
#: The ledger role of the recorded adapter's records file (``repro.adapters._recorded``).
RECORDS_ROLE = "records"
#: Where the cyborg adapter's options pin the scenario files and the simulator's tree.
SCENARIO_PINS = "$.adapter.options.scenario_sha256"
TREE_PIN = "$.adapter.options.simulator_tree_sha256"
#: What a pin or a source is when there is none.
NOTHING = "nothing"
MISSING = "missing"


def agent_role(participant: str) -> str:
    """The ledger role of a cyborg ``agent_class`` participant's module."""
    return f"blue agent {participant}"


def policy_role(participant: str) -> str:
    """The ledger role of a gymnasium ``callable`` participant's module."""
    return f"policy {participant}"


@frozen
class PinProblem:
    """A pin the ledger does not record: the pin's JSON path in the protocol, what is pinned
    (``scenario file Scenario2.yaml``), the pinned digest (or ``nothing``) and what the ledger
    records (a digest, several, or ``missing``)."""

    path: str
    what: str
    expected: str
    found: str


class _Sources:
    """The ledger's sources indexed once by role and by role and name."""

    def __init__(self, sources: Sequence[Source]) -> None:
        self.by_role: dict[str, list[Source]] = {}
        self.by_name: dict[tuple[str, str], list[Source]] = {}
        for source in sources:
            self.by_role.setdefault(source.role, []).append(source)
            self.by_name.setdefault((source.role, source.name), []).append(source)


def _recorded(found: Sequence[Source]) -> str:
    """What the ledger records for a pin: its one digest, every digest, or ``missing``."""
    if not found:
        return MISSING
    return ", ".join(str(s.sha256) if s.sha256 is not None else "no sha256" for s in found)


def _check(path: str, what: str, pinned: str, found: Sequence[Source]) -> list[PinProblem]:
    """The problem of one pin, if the ledger does not record exactly that one digest."""
    if [s.sha256 for s in found] == [pinned]:
        return []
    return [PinProblem(path, what, pinned, _recorded(found))]


def _malformed(path: str, what: str, value: Any) -> PinProblem:
    shown = value if isinstance(value, str) else type(value).__name__
    return PinProblem(path, what, "64 lower-case hex digits", str(shown)[:80])


def _participant_pins(
    protocol: Protocol, kind: str, role: Callable[[str], str], index: _Sources
) -> list[PinProblem]:
    """The ``params.sha256`` of each participant of ``kind``: its module's source, pinned in
    the ledger under ``role(participant id)``."""
    out = []
    for i, participant in enumerate(protocol.participants):
        if participant.kind != kind or "sha256" not in participant.params:
            continue
        path = f"$.participants[{i}].params.sha256"
        what = role(participant.id)
        pinned = participant.params["sha256"]
        if not (isinstance(pinned, str) and SHA256_HEX.fullmatch(pinned)):
            out.append(_malformed(path, what, pinned))
            continue
        out += _check(path, what, pinned, index.by_role.get(what, []))
    return out


def cyborg_problems(protocol: Protocol, sources: Sequence[Source]) -> list[PinProblem]:
    """The cyborg adapter's pins against ``sources``: with ``scenario_sha256``, every scenario
    file, pinned or in the ledger, pinned at the ledger's digest (a file only one side has is a
    problem too); with ``simulator_tree_sha256``, the one ``simulator tree`` source at that
    digest; each ``agent_class`` participant's ``params.sha256``, its module's source."""
    index = _Sources(sources)
    options = protocol.adapter.options
    out: list[PinProblem] = []
    if "scenario_sha256" in options:
        pins = options["scenario_sha256"]
        if not isinstance(pins, Mapping) or not pins:
            out.append(
                PinProblem(
                    SCENARIO_PINS,
                    "the scenario files",
                    "an object of file name -> sha256",
                    type(pins).__name__ if not isinstance(pins, Mapping) else "no pin",
                )
            )
        else:
            recorded = {s.name for s in index.by_role.get(SCENARIO_ROLE, [])}
            for name in sorted({*pins, *recorded}):
                what = f"scenario file {name}"
                if name not in pins:
                    found = index.by_name[(SCENARIO_ROLE, name)]
                    out.append(PinProblem(SCENARIO_PINS, what, NOTHING, _recorded(found)))
                    continue
                path, pinned = json_path(SCENARIO_PINS, name), pins[name]
                if not (isinstance(pinned, str) and SHA256_HEX.fullmatch(pinned)):
                    out.append(_malformed(path, what, pinned))
                    continue
                out += _check(path, what, pinned, index.by_name.get((SCENARIO_ROLE, name), []))
    if "simulator_tree_sha256" in options:
        pinned, what = options["simulator_tree_sha256"], "the simulator's tree"
        if not (isinstance(pinned, str) and SHA256_HEX.fullmatch(pinned)):
            out.append(_malformed(TREE_PIN, what, pinned))
        else:
            out += _check(TREE_PIN, what, pinned, index.by_role.get(TREE_ROLE, []))
    return out + _participant_pins(protocol, "agent_class", agent_role, index)


def gymnasium_problems(protocol: Protocol, sources: Sequence[Source]) -> list[PinProblem]:
    """The gymnasium adapter's pins against ``sources``: each ``callable`` participant's
    ``params.sha256``, its module's source."""
    return _participant_pins(protocol, "callable", policy_role, _Sources(sources))


def command_problems(protocol: Protocol, sources: Sequence[Source]) -> list[PinProblem]:
    """The command adapter pins nothing in the protocol (its harness and release are pinned in
    the ledger at freeze, from the files given): no problem."""
    return []


def records_role(participant: str | None) -> str:
    """The ledger role of a records file: ``records`` for the one file of a protocol, ``records
    of <participant>`` for a participant's own."""
    return RECORDS_ROLE if participant is None else f"{RECORDS_ROLE} of {participant}"


def records_owner(protocol: Protocol, participant: str) -> str | None:
    """Whose records file holds ``participant``'s runs: its own (``records`` an object that
    names it), else None, the protocol's one file."""
    records = protocol.adapter.options.get("records")
    return participant if isinstance(records, dict) and participant in records else None


def named_files(protocol: Protocol) -> list[tuple[str | None, Any, Any]]:
    """The records files the protocol's options name, each as (participant, file, pinned
    sha256): one, for no participant, when ``records`` is not an object; else one per key of
    ``records`` in the protocol's participant order, then any other key (which the adapter
    refuses), with the pin ``records_sha256`` gives that key (None when it gives none)."""
    options = protocol.adapter.options
    records, pins = options.get("records"), options.get("records_sha256")
    if not isinstance(records, dict):
        return [(None, records, pins)]
    order = [p.id for p in protocol.participants if p.id in records]
    order += sorted(k for k in records if k not in order)
    pinned = pins if isinstance(pins, dict) else {}
    return [(key, records[key], pinned.get(key)) for key in order]


def recorded_problems(protocol: Protocol, sources: Sequence[Source]) -> list[PinProblem]:
    """The recorded adapter's ``records_sha256``: each records file's source (one, or one per
    participant: :func:`named_files`) at its digest."""
    index, out = _Sources(sources), []
    for participant, _, pinned in named_files(protocol):
        path, what = "$.adapter.options.records_sha256", "the records file"
        if participant is not None:
            path, what = json_path(path, participant), f"{participant}'s records file"
        if not (isinstance(pinned, str) and SHA256_HEX.fullmatch(pinned)):
            out.append(_malformed(path, what, pinned))
            continue
        out += _check(path, what, pinned, index.by_role.get(records_role(participant), []))
    return out


#: Each built-in adapter's pin rule, by adapter name.
PIN_RULES: dict[str, Callable[[Protocol, Sequence[Source]], list[PinProblem]]] = {
    "cyborg": cyborg_problems,
    "gymnasium": gymnasium_problems,
    "command": command_problems,
    "recorded": recorded_problems,
}


def ledger_problems(protocol: Protocol, sources: Sequence[Source]) -> list[PinProblem] | None:
    """Each pin of ``protocol`` that ``sources`` (a ledger's) do not record, by the rule of the
    protocol's adapter; ``None`` for an adapter without a rule here (a third party's), whose
    pins are not checked."""
    rule = PIN_RULES.get(protocol.adapter.name)
    return None if rule is None else rule(protocol, sources)


def refuse_pin_problems(
    problems: Sequence[PinProblem], context: Mapping[str, str] | None = None
) -> None:
    """Refuse the first problem as :class:`BadInput` naming its JSON path (what an adapter's
    ``freeze`` raises); ``context`` maps a pin's JSON path to what is said after the found
    value (the host's simulator, say)."""
    if problems:
        p = problems[0]
        said = (context or {}).get(p.path, "")
        raise BadInput.at(
            p.path, f"{p.what} is pinned at {p.expected} but is {p.found}{said}", "inconsistent"
        )
