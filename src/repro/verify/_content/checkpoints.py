"""Checkpoints: a stream-mode partition's checkpoint against the protocol's seed and the
spacing it keeps states at."""

from __future__ import annotations

from repro import _layout as layout
from repro._plan.streams import checkpoint_slots, checkpoint_spacing, generator_state
from repro.models import Checkpoint, Partition, Protocol
from repro.verify._content.compare import short
from repro.verify._findings import Finding
from repro.verify._reader import BundleReader


def check_checkpoint(
    read: BundleReader, protocol: Protocol, part: Partition | None, name_id: str, first: bool
) -> Checkpoint | None:
    """A stream-mode partition's checkpoint parses and names its partition; for the first
    partition, its first state is exactly the state the protocol's seed gives; and a
    ``repro.checkpoint/2`` keeps the protocol's spacing and a state before exactly the slots
    :func:`~repro._plan.streams.checkpoint_slots` names (later states depend on the simulator,
    which replay and audit re-check). The checkpoint as read, None when it does not parse."""
    name = layout.checkpoint_file(name_id)
    checkpoint = read.json(name, "checkpoint", Checkpoint)
    if checkpoint is None:
        return None
    if checkpoint.partition != name_id:
        read.findings.append(
            Finding(
                "checkpoint-partition",
                name,
                "checkpoint names another partition",
                name_id,
                checkpoint.partition,
            )
        )
    seed = protocol.seeding.seed
    if first and checkpoint.python_random != generator_state(("seed", seed)):
        read.findings.append(
            Finding(
                "checkpoint-seed",
                name,
                "the first checkpoint is not the state the protocol's seed gives",
                f"random.seed({seed})",
                "another state",
            )
        )
    spacing = _spacing_problem(name, checkpoint, checkpoint_spacing(protocol), part)
    if spacing is not None:
        read.findings.append(spacing)
    return checkpoint


def _spacing_problem(
    name: str, checkpoint: Checkpoint, every: int, part: Partition | None
) -> Finding | None:
    """The finding for a checkpoint ``name`` that does not keep its states where the protocol's
    spacing ``every`` puts them: a ``repro.checkpoint/1`` keeps the first state only; a later
    schema keeps the spacing, and a state before exactly the slots of ``part`` it names."""
    if checkpoint.schema == "repro.checkpoint/1":
        if checkpoint.every is None and not checkpoint.later:
            return None
        return Finding(
            "checkpoint-spacing",
            name,
            "a repro.checkpoint/1 keeps the partition's first state only",
            "no later states",
            f"every {checkpoint.every}, {len(checkpoint.later)} later state(s)",
        )
    if checkpoint.every != every:
        return Finding(
            "checkpoint-spacing",
            name,
            "the checkpoint's spacing is not the protocol's",
            f"every {every}",
            f"every {checkpoint.every}",
        )
    if part is None:
        return None
    expected = checkpoint_slots(part.entries, every)
    found = [s.slot for s in checkpoint.later]
    if found == expected:
        return None
    return Finding(
        "checkpoint-slots",
        name,
        "the checkpoint's later states are not before the slots its spacing names",
        short(expected),
        short(found),
    )
