"""docs/protocol-reference.md, generated from the protocol's JSON Schema and the models.

Every object type of ``schemas/protocol.schema.json`` gets a section: its description (the
model's docstring) and a table of its fields with their JSON type, whether they are required,
their default (from the model, through attrs: the schema states none) and the constraint the
model's validator enforces, in the words its refusal says, read from the validator (a
:class:`~repro.models._constraints.Constraint`): nothing here states a constraint by hand.
``python tools/docgen.py`` rewrites the file; ``tests/test_docs.py`` fails when the committed
file differs from what this module generates, as ``tests/test_schemas.py`` does for
``schemas/``.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

from repro import models
from repro._json import canonical, schemas
from repro._json.serde import unstructure
from repro._protocol.load import MAX_PROTOCOL_BYTES
from repro._protocol.rules import MAX_SLOTS
from repro.models._constraints import Constraint, MatchesReValidator, OptionalValidator, parts

__all__ = ["constraint", "reference", "write"]

#: Where the generated file goes in a checkout.
TARGET = Path("docs") / "protocol-reference.md"


def constraint(field: attrs.Attribute[Any]) -> str:
    """The constraint on ``field`` in words, read from its validator: the words its refusal says
    (derived from attrs' validators where they can be) and the regular expression it matches, if
    any. Raises :class:`KeyError` for a validator that is not a
    :class:`~repro.models._constraints.Constraint`, which this cannot read."""
    validator: Any = field.validator
    if validator is None:
        return ""
    nullable = isinstance(validator, OptionalValidator)
    rule = validator.validator if nullable else validator
    if not isinstance(rule, Constraint):
        raise KeyError(
            f"{field.name}: declare its validator as a Constraint of repro.models._constraints"
        )
    words = rule.words
    if not nullable:
        text = f"must {words}"
    elif words.startswith("be "):
        text = f"must be null or {words.removeprefix('be ')}"
    else:
        text = f"null, or must {words}"
    patterns = [p.pattern.pattern for p in parts(rule.check) if isinstance(p, MatchesReValidator)]
    return text + "".join(f" (pattern `{p}`)" for p in patterns)


# --------------------------------------------------------------------------- rendering


def _anchor(name: str) -> str:
    return name.lower()


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _type(prop: dict[str, Any]) -> str:
    """A property's JSON type as a reader says it, with object types linked."""
    if "$ref" in prop:
        name = _ref_name(prop["$ref"])
        return f"[{name}](#{_anchor(name)})"
    if "enum" in prop:
        values = [f"`{json.dumps(v)}`" for v in prop["enum"]]
        return values[0] if len(values) == 1 else "one of " + ", ".join(values)
    if "anyOf" in prop:
        return " or ".join(_type(p) for p in prop["anyOf"])
    kind = prop.get("type")
    if kind is None:
        return "any JSON value"
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array":
        return f"array of {_type(prop['items'])}"
    if kind == "object":
        values = prop.get("additionalProperties", {})
        return "object" if values == {} else f"object whose values are {_type(values)}"
    return str(kind)


def _refs(prop: Any) -> Iterator[str]:
    """The object types a property refers to, in order."""
    if isinstance(prop, dict):
        if "$ref" in prop:
            yield _ref_name(prop["$ref"])
        for value in prop.values():
            yield from _refs(value)
    elif isinstance(prop, list):
        for value in prop:
            yield from _refs(value)


def _markdown(docstring: str | None) -> str:
    """A model docstring as Markdown: reStructuredText literals and roles become code spans."""
    text = inspect.cleandoc(docstring or "")
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


def _default(field: attrs.Attribute[Any], prop: dict[str, Any]) -> str:
    default: Any = field.default
    if "default" in prop:
        value = prop["default"]
    elif default is attrs.NOTHING:
        return ""
    elif isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        value = unstructure(default.factory())
    else:
        value = unstructure(default)
    text = f"`{json.dumps(value, ensure_ascii=False)}`"
    if field.metadata.get("omit_if_default"):
        text += " (left out of protocol.json while it is the default)"
    return text


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _section(name: str, schema: dict[str, Any], used_in: list[str]) -> list[str]:
    cls = getattr(models, name)
    fields = {f.name: f for f in attrs.fields(attrs.resolve_types(cls))}
    required = set(schema.get("required", []))
    lines = [f"## {name}", "", _markdown(cls.__doc__), ""]
    if used_in:
        lines += ["Used in: " + ", ".join(used_in) + ".", ""]
    lines += [
        "| field | JSON type | required | default | constraint |",
        "|---|---|---|---|---|",
    ]
    for key, prop in schema["properties"].items():
        field = fields[key]
        row = [
            f"`{key}`",
            _type(prop),
            "yes" if key in required else "no",
            _default(field, prop),
            constraint(field),
        ]
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    lines.append("")
    return lines


_INTRO = """\
A protocol is one JSON object in a file of at most {max_bytes:,} bytes of UTF-8. It is read
strictly: duplicate keys, `NaN` and `Infinity`, numbers too large for a double or for 64 bits,
lone surrogates, nesting deeper than {max_depth} levels, unknown keys, wrong JSON types and
values outside the constraints below are refused (`repro study` exits 2, names the problem and
its JSON path, and writes nothing). The plan it describes (matrix cells x participants x
`runs_per_condition`) may hold at most {max_slots:,} slots.

Any object may carry a `"$comment"` key holding a string, as in JSON Schema: the loader removes
it before it validates anything, so comments never change the frozen protocol or its digest (a
`"$comment"` that is not a string is refused).

What the adapter named in `adapter.name` accepts (its `options`, the names and levels of the
matrix factors, each participant's `kind` and `params`) is the adapter's to check: see
[adapter-api.md](adapter-api.md), "The built-in adapters", and the contract a new one meets there.

A module target in `params.target` (`"module:attribute"`: a Gymnasium `callable` policy, a
CybORG `agent_class`) is looked up first in the directory of the protocol file, then on the
import path; a module found in that directory must lie inside it, and the module's source file
is pinned by sha256. `repro replay` and `repro audit` import it only from `--sources DIR` (then the
import path), at the digest the bundle's ledger pins, checked before it runs. The contract of a
`callable` policy (its arguments, `params.arguments`, the `factory` form):
[adapter-api.md](adapter-api.md), "Your own policy: the `callable` contract".

`repro study` freezes the protocol into the bundle's `data/protocol.json` with every default
made explicit, except the fields marked "left out of protocol.json while it is the default",
and digests its canonical bytes: that sha256 identifies the protocol.

## Rules across fields

Besides each field's own constraint, a protocol is refused when:

- two factors have the same name, a factor lists a level twice, or two participants share an
  `id`;
- `measure.minimum` is greater than `measure.maximum`;
- a `bootstrap` interval has fewer than 100 `resamples`;
- an exclusion names a slot that is not in the plan, or a slot twice;
- a published condition matches no condition of the matrix or is published twice, names no
  participant when there are several, or `published` gives neither conditions nor an estimand;
- scenarios, scoring and gates do not fit together: scenario IDs repeat; scoring comes without
  scenarios or scenarios without scoring; the scenario factor is not a matrix factor or its
  levels are not exactly the scenario IDs; check names repeat, or a check lacks the `key` or
  `keys` its kind needs; a scenario lacks an expectation a check needs, or has one of the wrong
  type; the taxonomy's rules name undeclared categories or checks, or a rule other than the
  last has no conditions, or the last has some; gates come without scoring, the breadth bounds
  are out of order, or the control floor names a factor, level or check that does not exist;
- an `outcome_value` measure has no `key`, or an `episode_return` measure has one;
- contrasts do not fit the matrix (a group names an unknown factor, level or participant,
  matches no condition, or overlaps the other; a paired contrast cannot pair), repeat an `id`,
  give a `margin` to other than non-inferiority or none to it, name an unknown check, category
  or cluster, compare a check and a category at once, ask non-inferiority or a cluster of a
  rate, cluster a paired contrast by a factor its groups name, or take levels Holm cannot
  control together, or `multiplicity` is `none` beyond one primary contrast;
- a contrast's `interval` is a `bootstrap` without its `resamples` or `seed`, of a rate or of
  a clustered contrast, or with too few resamples for its smallest p-value
  (`1 / (resamples + 1)`, twice that two-sided) times the family's size under Holm to be
  below `1 - level`; or it is a `t` given resamples or a seed, or declared for a rate.

Slot IDs, used by `exclusions`, look like `c03-r0042`: the condition (matrix cells crossed with
participants, the first factor outermost and participants innermost, numbered from `c00`) and
the replicate (from `r0000`).
"""


def reference() -> str:
    """The text of docs/protocol-reference.md, from the committed protocol schema."""
    schema = schemas.load("protocol")
    root = schemas.SCHEMAS[schema["title"]].__name__
    defs: dict[str, Any] = schema.get("$defs", {})
    bodies = {root: schema, **defs}
    # Object types in the order a reader meets them: breadth first from the protocol.
    order = [root]
    used_in: dict[str, list[str]] = {name: [] for name in bodies}
    for name in order:
        for key, prop in bodies[name]["properties"].items():
            for ref in _refs(prop):
                link = f"[{name}](#{_anchor(name)}).`{key}`"
                if link not in used_in[ref]:
                    used_in[ref].append(link)
                if ref not in order:
                    order.append(ref)
    order += sorted(set(bodies) - set(order))
    lines = [
        "> Generated from schemas/protocol.schema.json and the models in src/repro/models/ "
        "by `python tools/docgen.py`: do not edit it by hand; regenerate it with "
        "`uv run python tools/docgen.py`.",
        "",
        "# Protocol reference",
        "",
        _INTRO.format(
            max_bytes=MAX_PROTOCOL_BYTES, max_depth=canonical.MAX_DEPTH, max_slots=MAX_SLOTS
        ),
        "Object types: " + ", ".join(f"[{n}](#{_anchor(n)})" for n in order) + ".",
        "",
    ]
    for name in order:
        lines += _section(name, bodies[name], used_in[name])
    return "\n".join(lines).rstrip("\n") + "\n"


def write(root: Path) -> Path:
    """Write the reference under the checkout at ``root``; returns its path."""
    path = root / TARGET
    path.parent.mkdir(exist_ok=True)
    path.write_text(reference(), "utf-8")
    return path


if __name__ == "__main__":
    print(f"wrote {write(Path(__file__).resolve().parents[1])}")
