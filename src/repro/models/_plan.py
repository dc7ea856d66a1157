"""The sealed plan: the conditions, each partition's run slots (:class:`Partition`) and the seal
over them (:class:`Seal`), all written before any run."""

from __future__ import annotations

from typing import Literal

from attrs import field, frozen

from repro.models._constraints import SHA256
from repro.models._protocol import Level, SeedingMode

__all__ = ["Condition", "Partition", "PartitionRef", "PlanEntry", "Seal"]


@frozen
class Condition:
    """One cell of the matrix crossed with one participant."""

    id: str
    factors: dict[str, Level]
    participant: str


@frozen
class PlanEntry:
    """One admitted run slot. ``order`` is its place in the sealed execution order; ``seed`` is
    its derived seed in per-run mode and null in stream mode; ``excluded`` the declared reason."""

    slot: str
    condition: str
    replicate: int
    order: int
    seed: int | None
    excluded: str | None = None


@frozen
class Partition:
    """plans/<id>.json: one sealed partition of the plan."""

    schema: Literal["repro.partition/1"]
    id: str
    condition: str
    entries: tuple[PlanEntry, ...]


@frozen
class PartitionRef:
    """A partition as listed in the seal, with the sha256 of its canonical file bytes."""

    id: str
    file: str
    entries: int
    sha256: str = field(validator=SHA256)


@frozen
class Seal:
    """plans/seal.json: the sealed plan, written before any run."""

    schema: Literal["repro.seal/1"]
    protocol_sha256: str = field(validator=SHA256)
    sources_sha256: str = field(validator=SHA256)
    seeding: SeedingMode
    conditions: tuple[Condition, ...]
    partitions: tuple[PartitionRef, ...]
