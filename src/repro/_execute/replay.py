"""``repro replay``: re-execute one slot of a verified bundle and compare its evidence byte for
byte; and the steps ``repro audit`` shares (:func:`prepare`, :func:`run_stretch`).

In ``per-run`` mode the slot runs alone, from its own seed. In ``stream`` mode every slot from
the nearest kept state before it is re-executed (the partition's first state, or, in a
``repro.checkpoint/2``, the one kept before every ``every``-th slot), because each run consumed
the stream its predecessors left; the result says how many slots that took. The simulator must
be installed, and must pin exactly the sources the bundle's ledger records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from attrs import frozen

from repro import _layout as layout
from repro._derive.ledger import source_differences
from repro._derive.scenarios import scenario_of
from repro._execute.attempts import ConditionSession, run_slot
from repro._execute.worker import Job, Worker, adapter_target, use_carried
from repro._json import canonical
from repro._json.serde import to_bytes, unstructure
from repro._plan.sealing import slot_id
from repro._plan.streams import generator_state, segment_of, state_at, stream_of
from repro.adapters._base import Adapter, Frozen, code_of_bundle, get_adapter
from repro.errors import BadInput, NotVerified
from repro.models import (
    AdapterFacts,
    Condition,
    GeneratorState,
    Partition,
    PlanEntry,
    Protocol,
    RunRecord,
)
from repro.verify import VerifiedBundle, open_verified

__all__ = ["Prepared", "Replay", "Rerun", "Stretch", "prepare", "replay", "run_stretch"]

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
    #: In stream mode, the slot whose state a ``repro.checkpoint/2`` kept mid-partition, which
    #: replay started from; None when it started from the partition's first state or a seed.
    kept_before: str | None = None

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
        # A field a record leaves out (an outcome it has none of) is shown as null.
        for key in sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k)):
            out.append(
                f"{old.attempt_id}: {key} is {_short(a.get(key))} in the bundle, "
                f"{_short(b.get(key))} on replay"
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
    sources than the bundle's. A module or program the bundle names comes only from
    ``sources`` (the directory the study's protocol file was in), or for modules the import
    path after it, and only at the digest its ledger pins (:func:`prepare`); without
    ``sources`` none is imported or run. With ``tracebacks``, the traceback of every exception
    the adapter raises is printed to stderr (never recorded)."""
    return _replay(prepare(root, options, tracebacks, sources), slot)


@frozen
class Rerun:
    """What re-executing slots needs of a study: its protocol, its sealed conditions and the
    facts its adapter froze to."""

    protocol: Protocol
    conditions: Sequence[Condition]
    facts: AdapterFacts


@frozen
class Prepared:
    """A verified bundle with its adapter frozen again here, pinning what the ledger pins."""

    bundle: VerifiedBundle
    adapter: Adapter
    frozen: Frozen
    options: Mapping[str, str]
    tracebacks: bool
    #: The directory the user gave for the bundle's own modules and files, if any.
    sources: Path | None
    #: The files of the bundle its adapter reads in place of those its protocol names.
    carried: tuple[tuple[str, bytes], ...] = ()

    @property
    def rerun(self) -> Rerun:
        """What re-executing the bundle's slots needs."""
        bundle = self.bundle
        return Rerun(bundle.protocol.protocol, bundle.seal.conditions, self.frozen.facts)


def prepare(
    root: Path, options: Mapping[str, str], tracebacks: bool, sources: Path | None
) -> Prepared:
    """Verify the bundle at ``root`` and freeze its adapter here. Raises :class:`BadInput` when
    the bundle does not verify or the installed simulator pins other sources than its ledger.

    The bundle may be anyone's: its adapter is frozen under
    :func:`repro.adapters._base.code_of_bundle`, so no module it names is imported, and no
    program it names is found, but in ``sources`` (modules: then on the import path) and at a
    digest its ledger pins, checked before any of its code runs."""
    try:
        bundle = open_verified(root)
    except NotVerified as exc:
        raise BadInput(
            f"{root} does not verify ({len(exc.findings)} finding(s)): replay needs a verified "
            f"bundle; see repro verify {root}"
        ) from None
    protocol, ledger = bundle.protocol.protocol, bundle.ledger
    adapter = get_adapter(protocol.adapter.name)
    # Runs made elsewhere whose files the bundle carries, with no --sources to read them from:
    # read again from the bundle, which verify has just held to the protocol's pins.
    carried: tuple[tuple[str, bytes], ...] = ()
    if sources is None and "records" not in options:
        carried = tuple((n, b"".join(bundle.blocks(n))) for n in layout.records_files(protocol))
    use_carried(adapter, carried)
    with code_of_bundle(sources, ledger.sources):
        frozen_adapter = adapter.freeze(protocol, options)
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
    return Prepared(bundle, adapter, frozen_adapter, options, tracebacks, sources, carried)


def new_worker(prepared: Prepared, start: tuple[str, Any] | None) -> Worker:
    """A worker for ``prepared``'s adapter; in stream mode its stream starts at ``start``."""
    protocol = prepared.bundle.protocol.protocol
    return Worker(
        Job(
            adapter_target(prepared.adapter),
            protocol,
            prepared.options,
            prepared.frozen,
            start,
            prepared.tracebacks,
            None if prepared.sources is None else str(prepared.sources.resolve()),
            replaying=True,
            carried=prepared.carried,
        ),
        protocol.retry.timeout_seconds,
    )


@frozen
class Stretch:
    """What re-executing some slots of a partition in one session found: each slot's
    differences from the bundle's records, the attempts run, and, in stream mode, the
    generator state after the last slot (after the session closed, if ``closed``)."""

    differences: dict[str, list[str]]
    attempts: dict[str, int]
    end: GeneratorState | None


def run_stretch(
    rerun: Rerun,
    worker: Worker,
    partition: Partition,
    entries: Sequence[PlanEntry],
    bundled: Mapping[str, list[RunRecord]],
    seek: tuple[tuple[str, Any], bool] | None,
    close_first: bool = False,
) -> Stretch:
    """Re-execute ``entries`` (slots of ``partition`` in sealed order) in one session on
    ``worker`` and compare each slot's records with ``bundled``. In stream mode ``seek`` is the
    state to set first and whether the session opens before it is set (a state kept
    mid-partition) or after (the partition's first); with ``close_first`` the end state is read
    after the session closes, as the next partition's first state was."""
    protocol = rerun.protocol
    condition = next(c for c in rerun.conditions if c.id == partition.condition)
    session = ConditionSession(worker, condition)
    scenario = scenario_of(protocol, condition)
    if seek is not None:
        session.seek(*seek)
    differences: dict[str, list[str]] = {}
    attempts: dict[str, int] = {}
    facts = rerun.facts
    for entry in entries:
        found = list(run_slot(entry, protocol, facts, session.digest, session.attempt, scenario))
        differences[entry.slot] = _differences(entry.slot, bundled.get(entry.slot, []), found)
        attempts[entry.slot] = len(found)
    if close_first:
        session.close()
    end = worker.stream_state
    if not close_first:
        session.close()
    return Stretch(differences, attempts, None if end is None else generator_state(end))


def bundled_records(bundle: VerifiedBundle, partition: str) -> dict[str, list[RunRecord]]:
    """A partition's run records in the bundle, by slot, in the order of its runs file."""
    out: dict[str, list[RunRecord]] = {}
    for record in bundle.records(partition):
        out.setdefault(record.slot, []).append(record)
    return out


def _replay(prepared: Prepared, slot: str) -> Replay:
    bundle, root = prepared.bundle, prepared.bundle.root
    partition = next(
        (part for part in bundle.partitions() if any(e.slot == slot for e in part.entries)), None
    )
    if partition is None:
        raise _no_such_slot(
            root, slot, bundle.seal.conditions, bundle.protocol.protocol.runs_per_condition
        )
    entries = list(partition.entries)
    target = next(i for i, e in enumerate(entries) if e.slot == slot)
    start, seek = target, None
    if bundle.protocol.protocol.seeding.mode == "stream":
        checkpoint = bundle.checkpoint(partition.id)
        start = segment_of(checkpoint, entries, target)[0]
        seek = (stream_of(state_at(checkpoint, entries, start)), start > 0)
    worker = new_worker(prepared, None if seek is None else seek[0])
    try:
        done = run_stretch(
            prepared.rerun,
            worker,
            partition,
            entries[start : target + 1],
            bundled_records(bundle, partition.id),
            seek,
        )
    finally:
        worker.stop()
    return Replay(
        slot=slot,
        partition=partition.id,
        replayed_slots=target + 1 - start,
        from_checkpoint=seek is not None,
        attempts=done.attempts[slot],
        differences=tuple(d for e in entries[start : target + 1] for d in done.differences[e.slot]),
        kept_before=entries[start].slot if seek is not None and start > 0 else None,
    )
