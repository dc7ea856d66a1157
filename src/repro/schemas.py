"""JSON Schemas (2020-12) for the protocol and every bundle file, generated from the models.

The generated files are committed under ``schemas/`` (a test keeps them in step with the models)
and ship inside the wheel as ``repro/json_schemas``; the verifier validates every bundle file
against them.
"""

from __future__ import annotations

import functools
import json
import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import attrs

from repro import models
from repro.models import Level

__all__ = ["SCHEMAS", "generate", "load", "schema_dir"]

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
}


def _type(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    if tp is Any:
        return {}
    if tp is str:
        return {"type": "string"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is type(None):
        return {"type": "null"}
    if tp == Level:
        return {"type": ["string", "integer"]}
    origin = get_origin(tp)
    if origin is Literal:
        return {"enum": list(get_args(tp))}
    if origin in (Union, types.UnionType):
        return {"anyOf": [_type(a, defs) for a in get_args(tp)]}
    if origin is tuple:
        return {"type": "array", "items": _type(get_args(tp)[0], defs)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _type(get_args(tp)[1], defs)}
    if attrs.has(tp):
        if tp.__name__ not in defs:
            defs[tp.__name__] = {}
            defs[tp.__name__] = _object(tp, defs)
        return {"$ref": f"#/$defs/{tp.__name__}"}
    raise TypeError(f"no schema for {tp!r}")


def _object(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    fields = attrs.fields(attrs.resolve_types(cls))
    return {
        "type": "object",
        "description": (cls.__doc__ or "").strip().split("\n\n")[0],
        "additionalProperties": False,
        "required": [f.name for f in fields if f.default is attrs.NOTHING],
        "properties": {f.name: _type(f.type, defs) for f in fields},
    }


def generate(name: str) -> dict[str, Any]:
    """The schema for file kind ``name`` (a key of :data:`SCHEMAS`)."""
    defs: dict[str, Any] = {}
    root = _object(SCHEMAS[name], defs)
    defs.pop(SCHEMAS[name].__name__, None)
    schema: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://repro.invalid/schemas/{name}.schema.json",
        "title": name,
        **root,
    }
    if defs:
        schema["$defs"] = dict(sorted(defs.items()))
    return schema


def schema_dir() -> Path:
    """Where the committed schemas are: inside the installed package, or the source tree's
    top-level ``schemas/`` when running from a checkout."""
    packaged = Path(__file__).with_name("json_schemas")
    return packaged if packaged.is_dir() else Path(__file__).resolve().parents[2] / "schemas"


@functools.cache
def load(name: str) -> dict[str, Any]:
    """The committed schema for file kind ``name``."""
    data: dict[str, Any] = json.loads((schema_dir() / f"{name}.schema.json").read_text("utf-8"))
    return data


def write_all(directory: Path) -> None:
    """Regenerate every schema file into ``directory``."""
    for name in SCHEMAS:
        text = json.dumps(generate(name), indent=2, sort_keys=False) + "\n"
        (directory / f"{name}.schema.json").write_text(text, "utf-8")


if __name__ == "__main__":
    write_all(Path(__file__).resolve().parents[2] / "schemas")
