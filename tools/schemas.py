"""Write the JSON Schemas (2020-12) of the protocol and of every bundle file, generated from the
models, into ``schemas/``: ``uv run python tools/schemas.py``. ``tests/test_schemas.py`` keeps
the committed files equal to what this generates.

A developer's tool: nothing in a study or a verification runs it (:mod:`repro.json.schemas`
reads the committed files)."""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import attrs

from repro.json.schemas import SCHEMAS
from repro.models import Level

__all__ = ["generate", "write_all"]


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


def write_all(directory: Path) -> None:
    """Regenerate every schema file into ``directory``."""
    for name in SCHEMAS:
        text = json.dumps(generate(name), indent=2, sort_keys=False) + "\n"
        (directory / f"{name}.schema.json").write_text(text, "utf-8")


if __name__ == "__main__":
    write_all(Path(__file__).resolve().parents[1] / "schemas")
