"""Expand a protocol into admitted plan entries, partition them and seal the partitions."""

from __future__ import annotations

import hashlib
import itertools

from repro import canonical
from repro.models import (
    Condition,
    Partition,
    PartitionRef,
    PlanEntry,
    Protocol,
    Seal,
    Source,
)
from repro.serde import to_bytes, unstructure

__all__ = ["SealedPlan", "conditions_of", "derive_seed", "seal", "slot_ids", "sources_sha256"]


def _width(count: int, minimum: int) -> int:
    return max(minimum, len(str(count - 1)))


def conditions_of(protocol: Protocol) -> tuple[Condition, ...]:
    """Matrix cells crossed with participants, first factor outermost, participants innermost."""
    cells = list(itertools.product(*(f.levels for f in protocol.matrix)))
    total = len(cells) * len(protocol.participants)
    width = _width(total, 2)
    out: list[Condition] = []
    for cell in cells:
        factors = {f.name: level for f, level in zip(protocol.matrix, cell, strict=True)}
        for participant in protocol.participants:
            out.append(
                Condition(id=f"c{len(out):0{width}d}", factors=factors, participant=participant.id)
            )
    return tuple(out)


def slot_ids(protocol: Protocol) -> list[str]:
    """Every slot ID of the plan in sealed order: ``<condition>-r<replicate>``."""
    width = _width(protocol.runs_per_condition, 4)
    return [
        f"{c.id}-r{r:0{width}d}"
        for c in conditions_of(protocol)
        for r in range(protocol.runs_per_condition)
    ]


def derive_seed(master: int, slot: str) -> int:
    """Per-run seed of ``slot``: the first 8 bytes of the sha256 of the UTF-8 text
    ``repro.seed/1:<master in decimal>:<slot>``, read as a big-endian unsigned integer and
    shifted right by one bit, so it lies in [0, 2**63).

    It depends on the master seed and the slot ID alone, never on the execution order, so any
    run can execute on any worker, in any order, or alone. (``c00-r0000`` with master seed 7
    gives the text ``repro.seed/1:7:c00-r0000``.)"""
    digest = hashlib.sha256(f"repro.seed/1:{master}:{slot}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def sources_sha256(sources: tuple[Source, ...]) -> str:
    """Digest of the pinned sources, sealed with the plan."""
    return canonical.sha256_hex(canonical.dumps(unstructure(sources)))


class SealedPlan:
    """The seal record and its partitions (one per condition), ready to write."""

    def __init__(self, seal: Seal, partitions: tuple[Partition, ...]) -> None:
        self.seal = seal
        self.partitions = partitions

    def entries(self) -> list[PlanEntry]:
        """All entries in sealed order."""
        return [e for p in self.partitions for e in p.entries]


def seal(protocol: Protocol, protocol_sha256: str, sources: tuple[Source, ...]) -> SealedPlan:
    """Expand, partition by condition, and digest each partition."""
    excluded = {x.slot: x.reason for x in protocol.exclusions}
    per_run = protocol.seeding.mode == "per-run"
    ids = iter(slot_ids(protocol))
    partitions = []
    order = 0
    for condition in conditions_of(protocol):
        entries = []
        for replicate in range(protocol.runs_per_condition):
            slot = next(ids)
            entries.append(
                PlanEntry(
                    slot=slot,
                    condition=condition.id,
                    replicate=replicate,
                    order=order,
                    seed=derive_seed(protocol.seeding.seed, slot) if per_run else None,
                    excluded=excluded.get(slot),
                )
            )
            order += 1
        partitions.append(
            Partition(
                schema="repro.partition/1",
                id=condition.id,
                condition=condition.id,
                entries=tuple(entries),
            )
        )
    refs = tuple(
        PartitionRef(
            id=p.id,
            file=f"plans/{p.id}.json",
            entries=len(p.entries),
            sha256=canonical.sha256_hex(to_bytes(p)),
        )
        for p in partitions
    )
    record = Seal(
        schema="repro.seal/1",
        protocol_sha256=protocol_sha256,
        sources_sha256=sources_sha256(sources),
        seeding=protocol.seeding.mode,
        conditions=conditions_of(protocol),
        partitions=refs,
    )
    return SealedPlan(record, tuple(partitions))
