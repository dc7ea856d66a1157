"""``repro audit``: re-execute a sample of a verified bundle's slots, or all of them, and
compare each with the bundle's records byte for byte.

The sample is :func:`repro._derive.audit.audit_sample`'s: drawn from the slots that ran by a
generator seeded with the bundle's identity, so anyone who audits the bundle draws the same
slots, and its author could not know them before the bundle was final. In ``per-run`` mode each
sampled slot runs alone from its seed. In ``stream`` mode each sampled slot's stretch (from the
nearest kept state before it to the next) is re-executed whole, and the state it ends in is
compared with the next kept state (the next checkpoint, or the next partition's first):
chaining, so that a forged checkpoint is found as well as a forged run. The simulator must pin
exactly what the ledger pins, as for ``repro replay``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from repro import version
from repro._derive.audit import (
    AUDIT,
    AUDIT_LEVEL,
    MAX_NAMED,
    audit_population,
    audit_sample,
    excluded_fraction,
    kept_after,
    sample_sha256,
    stream_stretches,
)
from repro._execute.replay import Prepared, bundled_records, new_worker, prepare, run_stretch
from repro._execute.worker import Worker
from repro._plan.streams import state_at, stream_of
from repro.errors import BadInput
from repro.models import Partition, RunRecord

__all__ = ["Audit", "Chained", "SlotAudit", "audit", "audit_predicate", "sign_audit"]


@frozen
class SlotAudit:
    """One re-executed slot: whether the audit drew it (or re-executed it on the way to one it
    drew), its attempts, and each difference from the bundle's records."""

    slot: str
    sampled: bool
    attempts: int
    differences: tuple[str, ...]


@frozen
class Chained:
    """A kept state checked by chaining: the state a re-executed stretch of ``partition`` ended
    in, against the one the bundle keeps before ``before`` (a slot of the partition, or the
    next partition's first slot)."""

    partition: str
    before: str
    matched: bool


@frozen
class Audit:
    """What an audit found. ``population`` is the number of slots that ran (every slot but a
    declared exclusion); ``sampled`` the slots drawn, in sealed order."""

    bundle_sha256: str
    population: int
    requested: int | None
    sampled: tuple[str, ...]
    slots: tuple[SlotAudit, ...]
    chained: tuple[Chained, ...]

    @property
    def identical(self) -> bool:
        """Every re-executed slot matched the bundle and every chained state its kept one."""
        return all(not s.differences for s in self.slots) and all(c.matched for c in self.chained)

    @property
    def attempts(self) -> int:
        """Attempts re-executed in all (episodes, for a simulator)."""
        return sum(s.attempts for s in self.slots)

    @property
    def excluded_fraction(self) -> float | None:
        """A clean sample's bound (:func:`~repro._derive.audit.excluded_fraction`): every
        fraction of the population at or above it differing is excluded at 95%. None when the
        audit re-executed every slot that ran, which leaves nothing to bound."""
        if len(self.sampled) >= self.population:
            return None
        return excluded_fraction(len(self.sampled))


def audit(
    root: Path,
    sample: int | None,
    options: Mapping[str, str],
    tracebacks: bool = False,
    sources: Path | None = None,
) -> Audit:
    """Audit the bundle at ``root``: ``sample`` slots drawn from its identity, or every slot
    when ``sample`` is None. Raises :class:`BadInput` as :func:`repro._execute.replay.replay`
    does, and for a sample below 1."""
    if sample is not None and sample < 1:
        raise BadInput(f"--sample must be at least 1, not {sample}")
    return _audit(prepare(root, options, tracebacks, sources), sample)


def _audit(prepared: Prepared, sample: int | None) -> Audit:
    bundle = prepared.bundle
    parts = list(bundle.partitions())
    population = audit_population(bundle.protocol.protocol)
    drawn = population if sample is None else audit_sample(bundle.bundle_sha256, population, sample)
    chosen = set(drawn)
    stream = bundle.protocol.protocol.seeding.mode == "stream"
    slots: list[SlotAudit] = []
    chained: list[Chained] = []
    worker = new_worker(prepared, ("seed", 0) if stream else None)
    try:
        for i, part in enumerate(parts):
            wanted = [j for j, e in enumerate(part.entries) if e.slot in chosen]
            if not wanted:
                continue
            bundled = bundled_records(bundle, part.id)
            if not stream:
                entries = [part.entries[j] for j in wanted]
                done = run_stretch(prepared.rerun, worker, part, entries, bundled, None)
                slots += _slot_audits(done.differences, done.attempts, chosen)
                continue
            slots_, chained_ = _stream_part(prepared, worker, parts, i, wanted, bundled)
            slots += slots_
            chained += chained_
    finally:
        worker.stop()
    return Audit(
        bundle.bundle_sha256,
        len(population),
        sample,
        tuple(drawn),
        tuple(slots),
        tuple(chained),
    )


def _slot_audits(
    differences: Mapping[str, list[str]], attempts: Mapping[str, int], chosen: set[str]
) -> list[SlotAudit]:
    return [
        SlotAudit(slot, slot in chosen, attempts[slot], tuple(diffs))
        for slot, diffs in differences.items()
    ]


def _stream_part(
    prepared: Prepared,
    worker: Worker,
    parts: Sequence[Partition],
    index: int,
    wanted: list[int],
    bundled: Mapping[str, list[RunRecord]],
) -> tuple[list[SlotAudit], list[Chained]]:
    """Re-execute the stretches of ``parts[index]`` that hold a wanted slot, each from its kept
    state (:func:`repro._derive.audit.stream_stretches`), and chain each to the next kept state
    (:func:`repro._derive.audit.kept_after`). A ``repro.checkpoint/1`` keeps only the first
    state: its one stretch runs up to the last wanted slot, and is chained only when that is
    the partition's last."""
    bundle = prepared.bundle
    part = parts[index]
    checkpoint = bundle.checkpoint(part.id)
    entries = part.entries
    slots: list[SlotAudit] = []
    chained: list[Chained] = []
    chosen = {entries[j].slot for j in wanted}
    for start, stop in stream_stretches(len(entries), checkpoint.every, wanted):
        at_end = stop == len(entries)
        seek = (stream_of(state_at(checkpoint, entries, start)), start > 0)
        done = run_stretch(
            prepared.rerun, worker, part, entries[start:stop], bundled, seek, close_first=at_end
        )
        slots += _slot_audits(done.differences, done.attempts, chosen)
        following = parts[index + 1] if index + 1 < len(parts) else None
        before = kept_after(part, following, stop, checkpoint.every)
        if before is not None and done.end is not None:
            state = (
                bundle.checkpoint(following.id).python_random
                if at_end and following is not None
                else state_at(checkpoint, entries, stop)
            )
            chained.append(Chained(part.id, before, state == done.end))
    return slots, chained


def audit_predicate(result: Audit, repro_version: str) -> dict[str, Any]:
    """What an audit statement says: the sample (its request, size and
    :func:`~repro._derive.audit.sample_sha256`, which verify re-derives from the bundle's
    identity), what was re-executed, whether it all matched (the differing slots and broken
    links, the first :data:`MAX_NAMED` of each, by name), the bound of a clean sample, and the
    auditing repro's version."""
    differing = [s.slot for s in result.slots if s.differences]
    broken = [f"{c.partition} before {c.before}" for c in result.chained if not c.matched]
    return {
        "sample": "all" if result.requested is None else result.requested,
        "population": result.population,
        "sampled": len(result.sampled),
        "sampled_sha256": sample_sha256(result.sampled),
        "reexecuted_slots": len(result.slots),
        "attempts": result.attempts,
        "chained": len(result.chained),
        "identical": result.identical,
        "differing": len(differing),
        "differing_slots": differing[:MAX_NAMED],
        "broken": len(broken),
        "broken_links": broken[:MAX_NAMED],
        "excluded_fraction": result.excluded_fraction,
        "level": AUDIT_LEVEL,
        "repro_version": repro_version,
    }


def sign_audit(root: Path, result: Audit, key_path: Path) -> Path:
    """Sign ``result`` as an audit statement about the bundle at ``root`` with the private key
    at ``key_path``, beside the bag (:func:`repro._bundle.signatures.sign_statement`)."""
    # Lazy: cryptography only when the audit is signed.
    from repro._bundle.signatures import sign_statement, statement

    predicate = audit_predicate(result, version())
    return sign_statement(root, statement(AUDIT, result.bundle_sha256, predicate), key_path, AUDIT)
