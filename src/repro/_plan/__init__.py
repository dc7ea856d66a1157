"""The plan: the protocol's conditions and slots, their seeds, the partitions they are run in,
and the seal that digests them before any run (:mod:`~repro._plan.sealing`); in ``stream``
seeding, the generator checkpoints a partition starts from (:mod:`~repro._plan.streams`)."""

from repro._plan.sealing import (
    SealedPlan,
    conditions_of,
    derive_seed,
    partition_ref,
    partitions,
    seal,
    seal_record,
    shared_seed,
    slot_id,
    slot_ids,
    sources_sha256,
)
from repro._plan.streams import checkpoint_of, stream_of

__all__ = [
    "SealedPlan",
    "checkpoint_of",
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
    "stream_of",
]
