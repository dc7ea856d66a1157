"""JSON Schemas (2020-12) for the protocol and every bundle file: which model each describes,
and the committed schema of each, which verify consults to name what a model refuses.

The schemas are generated from the models by ``tools/schemas.py`` (a developer's tool, not part
of the runtime package), committed under ``schemas/`` (a test keeps them in step with the
models), and ship inside the wheel as ``repro/json_schemas``.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from repro import models

__all__ = ["SCHEMAS", "load", "schema_dir"]

#: File name stem -> the model each schema describes.
SCHEMAS: dict[str, type] = {
    "protocol": models.Protocol,
    "frozen-protocol": models.FrozenProtocol,
    "seal": models.Seal,
    "partition": models.Partition,
    "run-record": models.RunRecord,
    "checkpoint": models.Checkpoint,
    "attempt-times": models.AttemptTimes,
    "aggregates": models.Aggregates,
    "tiers": models.Tiers,
    "source-ledger": models.Ledger,
    "environment": models.Environment,
    "scores": models.Scores,
    "contrasts": models.ContrastsFile,
    "rl-aggregates": models.RLAggregates,
    "continuation": models.Continuation,
}


def schema_dir() -> Path:
    """Where the committed schemas are: inside the installed package, or the source tree's
    top-level ``schemas/`` when running from a checkout."""
    packaged = Path(__file__).parents[1] / "json_schemas"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parents[3] / "schemas"


@functools.cache
def load(name: str) -> dict[str, Any]:
    """The committed schema for file kind ``name``."""
    data: dict[str, Any] = json.loads((schema_dir() / f"{name}.schema.json").read_text("utf-8"))
    return data
