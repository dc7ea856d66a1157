"""Load, validate and freeze a protocol."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from repro.derive.scoring import scoring_problems
from repro.errors import BadInput
from repro.json import canonical
from repro.json.canonical import json_path
from repro.json.serde import found, structure, to_bytes
from repro.models import FrozenProtocol, Protocol
from repro.plan.sealing import conditions_of, slot_ids

__all__ = [
    "COMMENT",
    "MAX_PROTOCOL_BYTES",
    "MAX_SLOTS",
    "check_consistency",
    "freeze",
    "load_protocol",
    "parse_protocol",
    "strip_comments",
]

MAX_PROTOCOL_BYTES = 1 << 20
#: The plan is expanded and sealed in memory before anything runs; a few lines of JSON could
#: otherwise ask for more slots (matrix cells x participants x runs) than memory holds.
MAX_SLOTS = 1_000_000
#: The key of a comment, in any object of a protocol (as in JSON Schema).
COMMENT = "$comment"


def load_protocol(path: Path) -> Protocol:
    """Read and validate the protocol at ``path``; every refusal names the JSON path."""
    try:
        if not path.is_file():
            raise BadInput(f"protocol {path}: not a readable file")
        size = path.stat().st_size
        if size > MAX_PROTOCOL_BYTES:
            raise BadInput(
                f"protocol: {size} bytes is over the limit of {MAX_PROTOCOL_BYTES} bytes @ $"
            )
        # Read one byte past the limit: a file may grow, or (in /proc) report a size of 0.
        with path.open("rb") as file:
            data = file.read(MAX_PROTOCOL_BYTES + 1)
    except OSError as exc:
        raise BadInput(f"protocol {path}: cannot read ({exc.strerror})") from None
    return parse_protocol(data)


def strip_comments(value: Any, path: str = "$") -> Any:
    """``value`` without the ``"$comment"`` key of any object in it, as JSON Schema allows:
    comments are for the protocol's readers and never reach strict validation, the frozen
    protocol or its digest. A comment must be a string, or it is refused with its JSON path:
    anything else under that key is more likely a mistake than a note.

    ``value`` comes from :func:`repro.json.canonical.loads`, which bounds its nesting, so the
    recursion is bounded too."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            where = json_path(path, key)
            if key == COMMENT:
                if not isinstance(item, str):
                    raise BadInput(
                        f"protocol: a {COMMENT} must be a string, {found(item)} @ {where}"
                    )
                continue
            out[key] = strip_comments(item, where)
        return out
    if isinstance(value, list):
        return [strip_comments(item, json_path(path, i)) for i, item in enumerate(value)]
    return value


def parse_protocol(data: bytes) -> Protocol:
    """Parse and validate protocol bytes; ``"$comment"`` keys are removed first."""
    raw = canonical.loads(data, what="protocol", max_bytes=MAX_PROTOCOL_BYTES)
    if not isinstance(raw, dict):
        raise BadInput("protocol: expected an object @ $")
    protocol = structure(strip_comments(raw), Protocol, what="protocol")
    check_consistency(protocol)
    return protocol


def _check_size(p: Protocol) -> None:
    conditions = math.prod(len(f.levels) for f in p.matrix) * len(p.participants)
    if conditions > MAX_SLOTS:
        raise BadInput(
            f"protocol: {conditions} conditions (matrix cells x participants) are over the "
            f"limit of {MAX_SLOTS} slots @ $.matrix"
        )
    slots = conditions * p.runs_per_condition
    if slots > MAX_SLOTS:
        raise BadInput(
            f"protocol: {conditions} conditions x {p.runs_per_condition} runs = {slots} slots "
            f"is over the limit of {MAX_SLOTS} @ $.runs_per_condition"
        )


def check_consistency(p: Protocol) -> None:
    """Refuse what each field allows alone but the protocol as a whole does not: a plan too
    large to seal, duplicate names, references to slots or conditions that do not exist, and
    scenarios, checks and gates that do not fit together."""
    _check_size(p)
    problems: list[str] = []
    names = [f.name for f in p.matrix]
    for i, factor in enumerate(p.matrix):
        if names.index(factor.name) != i:
            problems.append(f"duplicate factor name {factor.name!r} @ $.matrix[{i}].name")
        if len(set(factor.levels)) != len(factor.levels):
            problems.append(f"duplicate level in factor {factor.name!r} @ $.matrix[{i}].levels")
    ids = [q.id for q in p.participants]
    for i, participant in enumerate(p.participants):
        if ids.index(participant.id) != i:
            problems.append(f"duplicate participant id {participant.id!r} @ $.participants[{i}].id")
    m = p.measure
    if m.minimum is not None and m.maximum is not None and m.minimum > m.maximum:
        problems.append("minimum is greater than maximum @ $.measure")
    if p.interval.method == "bootstrap" and p.interval.resamples < 100:
        problems.append("a bootstrap needs at least 100 resamples @ $.interval.resamples")
    # One string per slot of the plan: expanded only when there is an exclusion to look up.
    valid_slots = set(slot_ids(p)) if p.exclusions else set()
    seen: set[str] = set()
    for i, exclusion in enumerate(p.exclusions):
        if exclusion.slot not in valid_slots:
            problems.append(f"unknown slot {exclusion.slot!r} @ $.exclusions[{i}].slot")
        if exclusion.slot in seen:
            problems.append(f"slot {exclusion.slot!r} excluded twice @ $.exclusions[{i}].slot")
        seen.add(exclusion.slot)
    if p.published is not None:
        conditions = conditions_of(p)
        matched: set[str] = set()
        for i, figure in enumerate(p.published.conditions):
            where = f"$.published.conditions[{i}]"
            if figure.participant is None and len(p.participants) > 1:
                problems.append(f"participant required when there are several @ {where}")
                continue
            hits = [
                c
                for c in conditions
                if c.factors == figure.factors
                and (figure.participant is None or figure.participant == c.participant)
            ]
            if len(hits) != 1:
                problems.append(f"matches no condition of the matrix @ {where}.factors")
            elif hits[0].id in matched:
                problems.append(f"condition published twice @ {where}")
            else:
                matched.add(hits[0].id)
        if not p.published.conditions and p.published.estimand is None:
            problems.append("published figures declared but none given @ $.published")
    problems += scoring_problems(p)
    if problems:
        raise BadInput("protocol: " + "; ".join(problems))


def freeze(protocol: Protocol) -> FrozenProtocol:
    """The frozen form: defaults explicit, digested over canonical bytes."""
    return FrozenProtocol(
        schema="repro.frozen-protocol/1",
        sha256=canonical.sha256_hex(to_bytes(protocol)),
        protocol=protocol,
    )
