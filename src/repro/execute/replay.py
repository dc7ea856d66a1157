"""``repro replay``: re-execute one slot of a verified bundle and compare its evidence byte for
byte.

In ``per-run`` mode the slot runs alone, from its own seed. In ``stream`` mode every slot of its
partition up to it is re-executed from the partition's checkpoint (the generator state when the
partition began), because each run consumed the stream its predecessors left; the result says how
many slots that took. The simulator must be installed, and must pin exactly the sources the
bundle's ledger records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from attrs import frozen

from repro.adapters.base import get_adapter, target_root, targets_in
from repro.derive.ledger import source_differences
from repro.derive.scenarios import scenario_of
from repro.errors import BadInput, NotVerified
from repro.execute.attempts import _ConditionSession, run_slot
from repro.execute.worker import Job, Worker, adapter_target
from repro.json import canonical
from repro.json.serde import to_bytes, unstructure
from repro.models import Condition, RunRecord
from repro.plan.sealing import slot_id
from repro.plan.streams import stream_of
from repro.verify import open_verified

__all__ = ["Replay", "replay"]

T = TypeVar("T")


@frozen
class Replay:
    """What replaying ``slot`` found: how many slots were re-executed (from which checkpoint, in
    stream mode), how many attempts of the slot itself, and every difference from the bundle's
    records (empty when all re-executed records are byte-identical)."""

    slot: str
    partition: str
    replayed_slots: int
    from_checkpoint: bool
    attempts: int
    differences: tuple[str, ...]

    @property
    def identical(self) -> bool:
        """Whether every re-executed record equals the bundle's, byte for byte."""
        return not self.differences


def _differences(slot: str, expected: list[RunRecord], found: list[RunRecord]) -> list[str]:
    if [to_bytes(r) for r in expected] == [to_bytes(r) for r in found]:
        return []
    if len(expected) != len(found):
        return [f"{slot}: {len(expected)} attempt(s) in the bundle, {len(found)} on replay"]
    out = []
    for old, new in zip(expected, found, strict=True):
        a: dict[str, Any] = unstructure(old)
        b: dict[str, Any] = unstructure(new)
        for key in sorted(k for k in a if a[k] != b[k]):
            out.append(
                f"{old.attempt_id}: {key} is {_short(a[key])} in the bundle, "
                f"{_short(b[key])} on replay"
            )
    return out


def _short(value: Any) -> str:
    text = canonical.dumps(value, newline=False).decode()
    return text if len(text) <= 60 else text[:57] + "..."


def _no_such_slot(root: Path, slot: str, conditions: Sequence[Condition], runs: int) -> BadInput:
    """The refusal of a slot the plan does not hold, saying how slots are named and which
    there are: ``... c00-r0000 .. c03-r0007 (4 conditions, c00 .. c03, of 8 runs each)``."""
    first, last = conditions[0].id, conditions[-1].id
    return BadInput(
        f"{root}: no slot {slot!r} in the sealed plan; a slot is named by its condition, then "
        f"its run: {slot_id(first, 0, runs)} .. {slot_id(last, runs - 1, runs)} here "
        f"({len(conditions)} condition(s), {first} .. {last}, of {runs} run(s) each, "
        f"{slot_id('', 0, runs)[1:]} .. {slot_id('', runs - 1, runs)[1:]})"
    )


def replay(
    root: Path,
    slot: str,
    options: Mapping[str, str],
    tracebacks: bool = False,
    sources: Path | None = None,
) -> Replay:
    """Re-execute ``slot`` of the bundle at ``root`` and compare. Raises :class:`BadInput` when
    the bundle does not verify, the slot is unknown, or the installed simulator pins other
    sources than the bundle's. Module targets are looked up first in ``sources`` (the directory
    the study's protocol file was in; default the current directory), as the study did. With
    ``tracebacks``, the traceback of every exception the adapter raises is printed to stderr
    (never recorded)."""
    with targets_in(Path.cwd() if sources is None else sources):
        return _replay(root, slot, options, tracebacks)


def _replay(root: Path, slot: str, options: Mapping[str, str], tracebacks: bool) -> Replay:
    try:
        bundle = open_verified(root)
    except NotVerified as exc:
        raise BadInput(
            f"{root} does not verify ({len(exc.findings)} finding(s)): replay needs a verified "
            f"bundle; see repro verify {root}"
        ) from None
    fp, seal, ledger = bundle.protocol, bundle.seal, bundle.ledger
    partition = next(
        (part for part in bundle.partitions() if any(e.slot == slot for e in part.entries)), None
    )
    if partition is None:
        raise _no_such_slot(root, slot, seal.conditions, fp.protocol.runs_per_condition)
    protocol = fp.protocol
    adapter = get_adapter(protocol.adapter.name)
    try:
        frozen_adapter = adapter.freeze(protocol, options)
    except BadInput as exc:
        raise BadInput(
            f"{exc} (replay looks the protocol's modules up in --sources DIR first, the "
            "directory the study's protocol file was in; default the current directory)"
        ) from None
    if (frozen_adapter.facts, frozen_adapter.sources) != (ledger.adapter, ledger.sources):
        differing = source_differences(ledger.sources, frozen_adapter.sources)
        was, now = unstructure(ledger.adapter), unstructure(frozen_adapter.facts)
        differing += [
            f"adapter {key}: {was[key]!r} in the bundle, {now[key]!r} here"
            for key in was
            if was[key] != now[key]
        ]
        raise BadInput(
            "the installed sources are not the ones the bundle pins, so replay runs nothing: "
            + "; ".join(differing)
        )

    stream = protocol.seeding.mode == "stream"
    entries = list(partition.entries)
    target = next(i for i, e in enumerate(entries) if e.slot == slot)
    if stream:
        checkpoint = bundle.checkpoint(partition.id)
        todo, start = entries[: target + 1], stream_of(checkpoint)
    else:
        todo, start = [entries[target]], None
    condition = next(c for c in seal.conditions if c.id == partition.condition)
    bundled: dict[str, list[RunRecord]] = {}
    for record in bundle.records(partition.id):
        bundled.setdefault(record.slot, []).append(record)

    worker = Worker(
        Job(
            adapter_target(adapter),
            protocol,
            options,
            frozen_adapter,
            start,
            tracebacks,
            None if target_root() is None else str(target_root()),
        ),
        protocol.retry.timeout_seconds,
    )
    differences: list[str] = []
    attempts = 0
    try:
        session = _ConditionSession(worker, condition)
        scenario = scenario_of(protocol, condition)
        for entry in todo:
            found = list(
                run_slot(
                    entry,
                    protocol,
                    frozen_adapter.facts,
                    session.digest,
                    session.attempt,
                    scenario,
                )
            )
            differences += _differences(entry.slot, bundled.get(entry.slot, []), found)
            attempts = len(found)
        session.close()
    finally:
        worker.stop()
    return Replay(
        slot=slot,
        partition=partition.id,
        replayed_slots=len(todo),
        from_checkpoint=stream,
        attempts=attempts,
        differences=tuple(differences),
    )
