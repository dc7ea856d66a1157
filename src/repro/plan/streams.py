"""A partition's generator stream and its checkpoint, one from the other.

Pure conversions apart from :mod:`repro.execute.worker`, so that verify can check a stream-mode
bundle's first checkpoint without importing the machinery that runs adapters.
"""

from __future__ import annotations

import random
from typing import Any

from repro.models import Checkpoint, GeneratorState

__all__ = ["checkpoint_of", "stream_of"]


def checkpoint_of(partition: str, stream: tuple[str, Any]) -> Checkpoint:
    """The checkpoint for a partition that begins with the generator stream at ``stream`` (a
    seed not yet applied, or the states a worker reported). Only Python's generator is kept:
    NumPy's is unseeded, so its state would differ from one study to the next."""
    kind, value = stream
    python_state = random.Random(value).getstate() if kind == "seed" else value[0]
    version, words, gauss_next = python_state
    return Checkpoint(
        schema="repro.checkpoint/1",
        partition=partition,
        python_random=GeneratorState(version, tuple(int(w) for w in words), gauss_next),
    )


def stream_of(checkpoint: Checkpoint) -> tuple[str, Any]:
    """The stream a worker resumes from to replay a checkpoint's partition."""
    py = checkpoint.python_random
    return ("state", ((py.version, py.words, py.gauss_next), None))
