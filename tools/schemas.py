"""Write the JSON Schemas (2020-12) of the protocol and of every bundle file, generated from the
models, into ``schemas/``: ``uv run python tools/schemas.py``. ``tests/test_schemas.py`` keeps
the committed files equal to what this generates.

A field's type gives its schema; its constraint (a :class:`~repro.models._constraints.Constraint`
of attrs validators) adds the keywords that state it, read from the validators' parameters:
``pattern`` from ``matches_re``, ``minimum``, ``exclusiveMinimum``, ``maximum`` and
``exclusiveMaximum`` from ``ge``, ``gt``, ``le`` and ``lt``, ``minItems`` or ``minLength`` from
``min_len`` (``maxItems``, ``maxLength`` from ``max_len``), ``enum`` from ``in_``, and ``items``
from ``deep_iterable``. A constraint marked ``in_schema=False`` is stated by the model alone (where
it is declared says why).

A developer's tool: nothing in a study or a verification runs it (:mod:`repro._json.schemas`
reads the committed files)."""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import attrs

from repro._json.schemas import SCHEMAS
from repro.models import Level
from repro.models._constraints import (
    Constraint,
    DeepIterableValidator,
    InValidator,
    MatchesReValidator,
    MaxLengthValidator,
    MinLengthValidator,
    NumberValidator,
    OptionalValidator,
    parts,
)

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


#: The keyword that states each of attrs' comparisons.
_BOUNDS = {">=": "minimum", ">": "exclusiveMinimum", "<=": "maximum", "<": "exclusiveMaximum"}


def _keywords(check: Any, prop: dict[str, Any]) -> dict[str, Any]:
    """The keywords that state ``check`` (attrs validators) on a value of schema ``prop``."""
    out: dict[str, Any] = {}
    array = prop.get("type") == "array"
    for part in parts(check):
        if isinstance(part, NumberValidator):
            out[_BOUNDS[part.compare_op]] = part.bound
        elif isinstance(part, MatchesReValidator):
            pattern = part.pattern.pattern
            # matches_re matches the whole string; a schema's pattern is searched for.
            if not (pattern.startswith("^") and pattern.endswith("$")):
                raise TypeError(f"anchor the pattern {pattern!r} with ^ and $")
            out["pattern"] = pattern
        elif isinstance(part, MinLengthValidator):
            out["minItems" if array else "minLength"] = part.min_length
        elif isinstance(part, MaxLengthValidator):
            out["maxItems" if array else "maxLength"] = part.max_length
        elif isinstance(part, InValidator):
            out["enum"] = list(part.options)
        elif isinstance(part, DeepIterableValidator):
            out["items"] = {**prop["items"], **_keywords(part.member_validator, prop["items"])}
            if part.iterable_validator is not None:
                out.update(_keywords(part.iterable_validator, prop))
        else:
            raise TypeError(
                f"no schema keyword states {part!r}: mark its Constraint in_schema=False"
            )
    return out


def _constrained(prop: dict[str, Any], validator: Any, name: str) -> dict[str, Any]:
    """``prop``, the schema of field ``name``'s type, with the keywords its validator states."""
    if validator is None:
        return prop
    if isinstance(validator, OptionalValidator):
        # Null passes every keyword of a constraint but "enum" (each holds for values of one JSON
        # type), so they go beside the anyOf, not in its branch: jsonschema then names the keyword
        # a value fails ("does not match '^[0-9a-f]{64}$'"), which verify reports, not only that
        # no branch matched.
        (branch,) = [b for b in prop["anyOf"] if b != {"type": "null"}]
        stated = _constrained(branch, validator.validator, name)
        added = {k: v for k, v in stated.items() if branch.get(k) != v}
        if "enum" in added:
            raise TypeError(f"{name}: null would fail the enum of a field that may be null")
        return {**prop, **added}
    if not isinstance(validator, Constraint):
        raise TypeError(
            f"{name}: declare its validator as a Constraint of repro.models._constraints"
        )
    return {**prop, **_keywords(validator.check, prop)} if validator.in_schema else prop


def _object(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    fields = attrs.fields(attrs.resolve_types(cls))
    return {
        "type": "object",
        "description": (cls.__doc__ or "").strip().split("\n\n")[0],
        "additionalProperties": False,
        "required": [f.name for f in fields if f.default is attrs.NOTHING],
        "properties": {
            f.name: _constrained(_type(f.type, defs), f.validator, f.name) for f in fields
        },
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
