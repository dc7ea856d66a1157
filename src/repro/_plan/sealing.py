"""Expand a protocol into admitted plan entries, partition them and seal the partitions."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Collection, Iterator, Sequence
from typing import overload

import orjson

from repro import _layout as layout
from repro._json import canonical
from repro._json.serde import unstructure
from repro.models import (
    Condition,
    Partition,
    PartitionRef,
    PlanEntry,
    Protocol,
    Seal,
    Source,
)

__all__ = [
    "PARTICIPANT",
    "PartitionsWhenRead",
    "PlanPartitions",
    "SealedPlan",
    "conditions_of",
    "derive_seed",
    "partition_ref",
    "partitions",
    "seal",
    "seal_record",
    "shared_seed",
    "slot_id",
    "slot_ids",
    "sources_sha256",
]


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


def slot_id(condition: str, replicate: int, runs_per_condition: int) -> str:
    """The ID of run ``replicate`` of ``condition`` in a plan of ``runs_per_condition`` runs
    per condition: ``<condition>-r<replicate>``, the replicate written in at least 4 digits."""
    return f"{condition}-r{replicate:{_replicate_format(runs_per_condition)}}"


def _replicate_format(runs_per_condition: int) -> str:
    """How :func:`slot_id` writes a replicate: made once for all of a partition's slots."""
    return f"0{_width(runs_per_condition, 4)}d"


def _slot_id(condition: str, replicate: int, protocol: Protocol) -> str:
    return slot_id(condition, replicate, protocol.runs_per_condition)


def slot_ids(protocol: Protocol) -> list[str]:
    """Every slot ID of the plan in sealed order: ``<condition>-r<replicate>``."""
    return [
        _slot_id(c.id, r, protocol)
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


#: What :func:`shared_seed` names the condition's participant by in ``seeding.common``.
PARTICIPANT = "participant"


def shared_seed(master: int, condition: Condition, replicate: int, common: Collection[str]) -> int:
    """Per-run seed of replicate ``replicate`` of ``condition`` under common random numbers
    (``seeding.common``): the first 8 bytes of the sha256 of the UTF-8 text
    ``repro.seed/2:<master in decimal>:<key>``, read as a big-endian unsigned integer and
    shifted right by one bit, so it lies in [0, 2**63). ``<key>`` is the canonical JSON
    (:func:`repro._json.canonical.dumps`: sorted keys, compact, no final newline) of an object
    holding ``factors``, the condition's levels of the factors ``common`` does not name,
    ``participant``, the condition's participant unless ``common`` names ``"participant"``
    (then the key is left out), and ``replicate``.

    So the conditions that differ only in the factors ``common`` names share each replicate's
    seed, and each replicate still has its own. Like :func:`derive_seed` it depends on the
    protocol alone, never on the execution order. (Replicate 3 of the condition
    ``{"env_id": "CartPole-v1"}`` of participant ``random``, master seed 7, ``common`` =
    ``["participant"]``, gives the text
    ``repro.seed/2:7:{"factors":{"env_id":"CartPole-v1"},"replicate":3}``.)"""
    key: dict[str, object] = {
        "factors": {k: v for k, v in condition.factors.items() if k not in common},
        "replicate": replicate,
    }
    if PARTICIPANT not in common:
        key["participant"] = condition.participant
    text = f"repro.seed/2:{master}:".encode() + canonical.dumps(key, newline=False)
    digest = hashlib.sha256(text).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def sources_sha256(sources: tuple[Source, ...]) -> str:
    """Digest of the pinned sources, sealed with the plan."""
    return canonical.sha256_hex(canonical.dumps(unstructure(sources)))


class PartitionsWhenRead(Sequence[Partition]):
    """Partitions in sealed order, each made only when asked for (:meth:`_at`) and let go
    after, so that what is held does not grow with the plan."""

    def __len__(self) -> int:
        raise NotImplementedError

    def _at(self, index: int) -> Partition:
        """The partition at ``index`` (0 to ``len(self) - 1``), made now."""
        raise NotImplementedError

    @overload
    def __getitem__(self, index: int) -> Partition: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Partition]: ...

    def __getitem__(self, index: int | slice) -> Partition | Sequence[Partition]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._at(index)

    def __iter__(self) -> Iterator[Partition]:
        for index in range(len(self)):
            yield self._at(index)


class PlanPartitions(PartitionsWhenRead):
    """A plan's partitions in sealed order, each expanded from the protocol when asked for and
    let go after: what is held does not grow with the plan (a study of 200,000 slots holds one
    partition's entries at a time, not all of them). Expanding is deterministic, so every
    reading gives the same partitions."""

    def __init__(self, protocol: Protocol) -> None:
        self._protocol = protocol
        self._conditions = conditions_of(protocol)
        self._excluded = {x.slot: x.reason for x in protocol.exclusions}

    def __len__(self) -> int:
        return len(self._conditions)

    def _at(self, index: int) -> Partition:
        return _partition(self._protocol, index, self._conditions[index], self._excluded)


class SealedPlan:
    """The seal record and the partitions it seals (one per condition, expanded one at a time
    when read, :class:`PlanPartitions`), ready to write."""

    def __init__(self, seal: Seal, partitions: Sequence[Partition]) -> None:
        self.seal = seal
        self.partitions = partitions

    def entries(self) -> list[PlanEntry]:
        """All entries in sealed order."""
        return [e for p in self.partitions for e in p.entries]


def partitions(protocol: Protocol) -> Iterator[Partition]:
    """The plan's partitions, one per condition in sealed order, each made only when asked for:
    expanding one partition at a time keeps what is held to one condition's slots. In
    ``per-run`` seeding each slot's seed is :func:`derive_seed`'s, or :func:`shared_seed`'s
    when ``seeding.common`` names factors to share seeds across."""
    return iter(PlanPartitions(protocol))


def _partition(
    protocol: Protocol, index: int, condition: Condition, excluded: dict[str, str]
) -> Partition:
    """The partition of the ``index``-th condition in sealed order (``condition``): its slots
    come after the ``runs_per_condition`` slots of each condition before it."""
    seeding = protocol.seeding
    per_run = seeding.mode == "per-run"
    runs_per_condition = protocol.runs_per_condition
    first = index * runs_per_condition
    # Each slot's ID as slot_id makes it, its format made once: verify expands every partition.
    prefix, replicates = f"{condition.id}-r", _replicate_format(runs_per_condition)
    entries = []
    for replicate in range(runs_per_condition):
        slot = prefix + format(replicate, replicates)
        seed = None
        if per_run and seeding.common:
            seed = shared_seed(seeding.seed, condition, replicate, seeding.common)
        elif per_run:
            seed = derive_seed(seeding.seed, slot)
        # (slot, condition, replicate, order, seed, excluded), by position: quicker to build.
        entries.append(
            PlanEntry(slot, condition.id, replicate, first + replicate, seed, excluded.get(slot))
        )
    return Partition(
        schema="repro.partition/1",
        id=condition.id,
        condition=condition.id,
        entries=tuple(entries),
    )


def partition_ref(partition: Partition) -> PartitionRef:
    """How the seal lists ``partition``: by its file and the sha256 of its canonical bytes."""
    return PartitionRef(
        id=partition.id,
        file=layout.plan_file(partition.id).removeprefix(layout.DATA),
        entries=len(partition.entries),
        sha256=canonical.sha256_hex(_partition_bytes(partition)),
    )


def _partition_bytes(partition: Partition) -> bytes:
    """:func:`repro._json.serde.to_bytes` of ``partition``: the same bytes, without looking for
    a number that is not finite, which costs more than writing them: a partition holds none
    (strings, integers and nulls; verify digests every partition of the plan)."""
    return orjson.dumps(unstructure(partition), option=orjson.OPT_SORT_KEYS) + b"\n"


def seal_record(
    protocol: Protocol,
    protocol_sha256: str,
    sources: tuple[Source, ...],
    refs: tuple[PartitionRef, ...],
) -> Seal:
    """plans/seal.json for the plan whose partitions ``refs`` lists."""
    return Seal(
        schema="repro.seal/1",
        protocol_sha256=protocol_sha256,
        sources_sha256=sources_sha256(sources),
        seeding=protocol.seeding.mode,
        conditions=conditions_of(protocol),
        partitions=refs,
    )


def seal(protocol: Protocol, protocol_sha256: str, sources: tuple[Source, ...]) -> SealedPlan:
    """Expand, partition by condition, and digest each partition, one partition at a time: the
    plan holds the seal and expands its partitions again when they are read."""
    parts = PlanPartitions(protocol)
    refs = tuple(partition_ref(p) for p in parts)
    return SealedPlan(seal_record(protocol, protocol_sha256, sources, refs), parts)
