"""A partition's generator stream and its checkpoints, one from the other.

Pure conversions apart from :mod:`repro._execute.worker`, so that verify can check a stream-mode
bundle's checkpoints without importing the machinery that runs adapters. A partition's
checkpoint holds the state when it began and, from ``repro.checkpoint/2`` on, the state before
every :func:`checkpoint_spacing`-th slot after that (:func:`checkpoint_slots`), from which
replay and audit re-execute the nearest stretch (:func:`segment_of`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from repro.models import (
    CHECKPOINT_EVERY,
    Checkpoint,
    GeneratorState,
    PlanEntry,
    Protocol,
    SlotState,
)

__all__ = [
    "checkpoint_of",
    "checkpoint_slots",
    "checkpoint_spacing",
    "generator_state",
    "segment",
    "segment_of",
    "state_at",
    "stream_of",
    "stream_spacing",
]


def generator_state(stream: tuple[str, Any]) -> GeneratorState:
    """Python's generator state at ``stream`` (a seed not yet applied, or the states a worker
    reported). Only Python's generator is kept: NumPy's is unseeded, so its state would differ
    from one study to the next."""
    kind, value = stream
    python_state = random.Random(value).getstate() if kind == "seed" else value[0]
    version, words, gauss_next = python_state
    return GeneratorState(version, tuple(int(w) for w in words), gauss_next)


def checkpoint_of(
    partition: str,
    stream: tuple[str, Any],
    every: int | None = None,
    later: Sequence[tuple[str, tuple[str, Any]]] = (),
) -> Checkpoint:
    """The checkpoint for a partition that begins with the generator stream at ``stream``;
    with ``every``, a ``repro.checkpoint/2`` that also holds ``later``, each slot's stream
    before its first attempt."""
    if every is None:
        return Checkpoint("repro.checkpoint/1", partition, generator_state(stream))
    return Checkpoint(
        "repro.checkpoint/2",
        partition,
        generator_state(stream),
        every,
        tuple(SlotState(slot, generator_state(s)) for slot, s in later),
    )


def checkpoint_spacing(protocol: Protocol) -> int:
    """Slots between two checkpoints of a stream-seeded partition: the protocol's
    ``seeding.checkpoint_every``, or :data:`~repro.models.CHECKPOINT_EVERY`."""
    return protocol.seeding.checkpoint_every or CHECKPOINT_EVERY


def stream_spacing(protocol: Protocol) -> int | None:
    """:func:`checkpoint_spacing` of a stream-seeded protocol; None for per-run seeding, whose
    partitions keep no checkpoint."""
    return checkpoint_spacing(protocol) if protocol.seeding.mode == "stream" else None


def checkpoint_slots(entries: Sequence[PlanEntry], every: int) -> list[str]:
    """The slots of a partition (its entries in sealed order) whose state a checkpoint keeps in
    ``later``: every ``every``-th after the first."""
    return [entry.slot for entry in entries[every::every]]


def segment_of(checkpoint: Checkpoint, entries: Sequence[PlanEntry], index: int) -> tuple[int, int]:
    """Where replay of the slot at ``index`` (of the partition's ``entries``) starts and where
    the stretch it starts ends: the index of the nearest kept state at or before it, and the
    index of the next kept state (or the partition's end). A ``repro.checkpoint/1`` keeps only
    the first state: the stretch is the whole partition."""
    return segment(checkpoint.every, len(entries), index)


def segment(every: int | None, count: int, index: int) -> tuple[int, int]:
    """:func:`segment_of` by a checkpoint's spacing (``every``, None for a
    ``repro.checkpoint/1``) and the partition's number of slots."""
    if every is None:
        return 0, count
    start = index - index % every
    return start, min(start + every, count)


def state_at(checkpoint: Checkpoint, entries: Sequence[PlanEntry], index: int) -> GeneratorState:
    """The kept state before the slot at ``index``, which must be a checkpointed position (0, or
    one of :func:`checkpoint_slots`, as :func:`segment_of` gives)."""
    if index == 0:
        return checkpoint.python_random
    slot = entries[index].slot
    return next(s.python_random for s in checkpoint.later if s.slot == slot)


def stream_of(state: Checkpoint | GeneratorState) -> tuple[str, Any]:
    """The stream a worker resumes from at a kept state (a checkpoint's first one, or any)."""
    py = state.python_random if isinstance(state, Checkpoint) else state
    return ("state", ((py.version, py.words, py.gauss_next), None))
