"""The strict parser of bundle files: bytes to JSON values and models, never past the limits,
each refusal a finding. A file or line that is exactly its value's canonical bytes is read a
quick way whose types are checked as the strict converter checks them; anything else the strict
way (canonical JSON, schema, model), which names what is wrong."""

from __future__ import annotations

import functools
import itertools
import json
import types
from collections.abc import Callable
from typing import Any, Literal, TypeVar, Union, cast, get_args, get_origin, get_type_hints

import attrs
import orjson

from repro._json import canonical, schemas
from repro._json.serde import structure, to_bytes
from repro.errors import BadInput
from repro.models import AttemptTimes, Partition, PlanEntry, RunRecord
from repro.verify._findings import MAX_DIFFS, Finding, Location
from repro.verify._limits import Limits

T = TypeVar("T")


@functools.cache
def _validator(kind: str) -> Any:
    # Imported here: only a value the model refuses is ever checked against its schema.
    import jsonschema

    return jsonschema.Draft202012Validator(schemas.load(kind))


def _json_types(hint: Any) -> tuple[type, ...]:
    """The exact Python types of the JSON values that a field of type ``hint`` is written as:
    a string for a Literal of strings, a list for a tuple, None for an optional field."""
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return tuple(t for arg in get_args(hint) for t in _json_types(arg))
    if origin is Literal:
        return tuple(dict.fromkeys(type(arg) for arg in get_args(hint)))
    if origin is tuple:
        return (list,)
    if hint in (str, int, float, type(None)):
        return (hint,)
    raise TypeError(f"no JSON type for a model field of type {hint!r}")


def _shapes(cls: type) -> tuple[tuple[str, ...], frozenset[tuple[type, ...]]]:
    """The keys a canonical object of the model ``cls`` always holds (the fields written even
    when they hold their default), in sorted order, and every combination of value types, key by
    key, that it can hold under them: one set lookup checks them all. Derived from the model, so
    the shape is defined there alone. Exact types, as the strict converter's: a boolean is not
    an integer. Narrower than the converter where it converts: an integer where a float is
    expected becomes a float, which is written back with a fraction, so such a value is not
    canonical."""
    hints = get_type_hints(cls)
    kinds = {
        f.name: _json_types(hints[f.name])
        for f in attrs.fields(cls)
        if not f.metadata.get("omit_if_default")
    }
    keys = tuple(sorted(kinds))
    return keys, frozenset(itertools.product(*(kinds[k] for k in keys)))


#: The keys of a run line and the types of their values (see :func:`_shapes`).
_RUN_LINE_KEYS, _RUN_LINE_SHAPES = _shapes(RunRecord)


_STATUSES = frozenset(get_args(get_type_hints(RunRecord)["status"]))


#: Integers past 53 bits are refused, which leaves every one past 64 bits, which orjson would
#: write but the strict reader refuses, to the strict way. orjson writes a non-finite float as
#: null, which no parsed line holds in its place.
_RUN_LINE_DUMP = orjson.OPT_SORT_KEYS | orjson.OPT_STRICT_INTEGER


def _canonical_object(line: bytes) -> dict[str, Any] | None:
    """The JSON object ``line`` holds, when ``line`` is exactly its canonical bytes (and a
    newline); None otherwise. The quick readers of lines start here."""
    try:
        raw = orjson.loads(line)
        if orjson.dumps(raw, option=_RUN_LINE_DUMP) + b"\n" != line:
            return None
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return None
    return raw if type(raw) is dict else None


def _canonical_document(data: bytes) -> dict[str, Any] | None:
    """:func:`_canonical_object` for a whole file, parsed by the standard library's parser
    without the strict reader's hooks: orjson holds some sixteen times its input while it
    parses, three times what this parser does, and a file is read whole. The comparison with
    the canonical bytes leaves out all the strict reader would refuse, as for a line: a
    duplicate key, NaN or Infinity (which this parser reads), a number out of range, a lone
    surrogate (which orjson refuses to write)."""
    try:
        raw = json.loads(data.decode())
        if orjson.dumps(raw, option=_RUN_LINE_DUMP) + b"\n" != data:
            return None
    except (ValueError, RecursionError, orjson.JSONEncodeError):  # not UTF-8, not JSON
        return None
    return raw if type(raw) is dict else None


def canonical_record(line: bytes) -> RunRecord | None:
    """The run record whose canonical bytes are exactly ``line``, or None for any other line.

    A line that is its own record's canonical form is one the strict reader accepts as that
    record: it holds no duplicate key, no NaN, no lone surrogate and no number out of range,
    because the canonical writer writes none; and the schema accepts whatever the model does (it
    is generated from it). So this quick way, with orjson, gives the strict reader's answer for
    every line it accepts; a line it does not accept goes the strict way to be named. (Only for
    lines: orjson's parser holds some sixteen times its input while it parses, which is nothing
    for a record and too much for a whole partition.)

    The parsed line is checked as the strict converter would check it, without the converter,
    which costs most of a record's reading: the keys are the record's fields (in sorted order, as
    the line is canonical), each value has a type the field takes, the status is one
    the model names and the step rewards are floats. The record is built from the checked
    values, its validators run.
    """
    raw = _canonical_object(line)
    if (
        raw is None
        or tuple(raw) != _RUN_LINE_KEYS
        or tuple(map(type, raw.values())) not in _RUN_LINE_SHAPES
        or raw["status"] not in _STATUSES
    ):
        return None
    rewards = raw["step_rewards"]
    if rewards is not None:
        if not set(map(type, rewards)) <= {float}:
            return None
        raw["step_rewards"] = tuple(rewards)
    try:
        return RunRecord(**raw)
    except ValueError:  # a validator's refusal (FieldError): the strict way names it
        return None


_TIMES_KEYS = ("attempt_id", "finished_utc", "started_utc")
#: The type of each of them (one C pass checks all three: verify reads each line twice).
_TIMES_TYPES = (str, str, str)


def canonical_times(line: bytes) -> AttemptTimes | None:
    """The attempt times whose canonical bytes are exactly ``line`` (three strings), or None for
    any other line, which the strict way then names: the quick way of :func:`canonical_record`
    for the times files. (A line with lost session opens, which is rare, goes the strict way.)"""
    raw = _canonical_object(line)
    if raw is None or tuple(raw) != _TIMES_KEYS or tuple(map(type, raw.values())) != _TIMES_TYPES:
        return None
    try:
        return AttemptTimes(**raw)
    except ValueError:
        return None


_PARTITION_KEYS, _PARTITION_SHAPES = _shapes(Partition)
_PARTITION_SCHEMAS = frozenset(get_args(get_type_hints(Partition)["schema"]))
_ENTRY_KEYS, _ENTRY_SHAPES = _shapes(PlanEntry)
_ENTRY_KEY_SET = frozenset(_ENTRY_KEYS)
#: The same for each of a partition's entries, key by key (the shapes are every combination of
#: them): the types each key's value may have. Checked without a tuple per entry, of which
#: CPython would keep two thousand, unused, in its free list of tuples of that size for as long
#: as verify runs.
_ENTRY_KINDS = tuple(frozenset(kinds) for kinds in zip(*_ENTRY_SHAPES, strict=True))


def canonical_partition(data: bytes) -> Partition | None:
    """The partition whose canonical bytes are exactly ``data``, or None for any other bytes:
    the quick way of :func:`canonical_record` for a plans/<partition>.json, whose strict reading
    (the strict parser's hooks and the converter, an entry at a time) costs several times what
    :func:`_canonical_document` and these checks do. The parsed object and each of its entries
    are checked as the strict converter would check them (the keys are the fields, each value
    has a type the field takes, the schema is the model's), and the partition is built of the
    checked values."""
    raw = _canonical_document(data)
    if (
        raw is None
        or tuple(raw) != _PARTITION_KEYS
        or tuple(map(type, raw.values())) not in _PARTITION_SHAPES
        or raw["schema"] not in _PARTITION_SCHEMAS
    ):
        return None
    entries = raw["entries"]
    for index, entry in enumerate(entries):
        if (
            type(entry) is not dict
            # (In sorted order, as the file is canonical.)
            or entry.keys() != _ENTRY_KEY_SET
            or not all(map(frozenset.__contains__, _ENTRY_KINDS, map(type, entry.values())))
        ):
            return None
        # Each parsed entry is let go as its model takes its place: what is held at once is
        # the partition once, not twice.
        entries[index] = PlanEntry(**entry)
    raw["entries"] = tuple(entries)
    return Partition(**raw)


#: The models read a quick way where the limits allow it (:func:`parse_model`): each model's
#: reader of canonical bytes, and the JSON nesting its files need.
QUICK_MODELS: dict[type, tuple[Callable[[bytes], Any], int]] = {Partition: (canonical_partition, 3)}


def times_id(line: bytes) -> str | None:
    """The attempt ID of a line of a times file that is canonical and holds three strings
    under the times' keys, or None for any other line (which then goes the strict way): for
    reading again a file whose lines were each parsed strictly already (the times' formats are
    not checked again; a file that changed since is named as changed)."""
    raw = _canonical_object(line)
    if raw is None or tuple(raw) != _TIMES_KEYS or tuple(map(type, raw.values())) != _TIMES_TYPES:
        return None
    return raw["attempt_id"]  # type: ignore[no-any-return]


def validate(
    note: Callable[[Finding], None],
    name: str,
    raw: Any,
    kind: str,
    cls: type[T],
    number: int | None = None,
) -> T | None:
    """The model ``cls`` structured from the parsed value ``raw`` of the file ``name`` (its line
    ``number``, for a JSON Lines file); None when the model refuses it, each error of the schema
    ``kind`` named by ``note`` (or the model's refusal, where the schema has none)."""
    line = "" if number is None else f" line {number}"
    try:
        return structure(raw, cls, what=f"{name}{line}")
    except BadInput as exc:
        refusal = str(exc)
    # The schema is generated from the model and accepts every value the model accepts
    # (tests/test_schemas.py), so it only has something to say about a refused value: its
    # errors, each at its JSON path, are named first, as the schema is the published rule.
    errors = sorted(
        _validator(kind).iter_errors(raw),
        key=lambda e: list(e.absolute_path),
    )
    for error in errors[:MAX_DIFFS]:
        where = "$" + "".join(
            f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path
        )
        note(
            Finding(
                "schema",
                name,
                f"schema {kind}{line} @ {where}",
                "valid",
                error.message[:200],
                Location(line=number, path=where),
            )
        )
    if not errors:
        note(
            Finding(
                "model",
                name,
                f"model {cls.__name__}{line}",
                "valid",
                refusal,
                Location(line=number),
            )
        )
    return None


def _quick(data: bytes, cls: type[T], limits: Limits) -> T | None:
    """The ``cls`` whose canonical bytes are exactly ``data``, read the quick way of
    :data:`QUICK_MODELS` where the limits allow it (the strict way refuses bytes past
    ``max_file_bytes`` and nesting past ``max_json_depth``, and names why); None for any
    other bytes, and for a model without a quick way. A value read this way is one the
    strict way accepts as the same value, without a finding (see :func:`canonical_record`)."""
    quick, depth = QUICK_MODELS.get(cls, (None, 0))
    if quick is None or depth > limits.max_json_depth or len(data) > limits.max_file_bytes:
        return None
    return cast("T | None", quick(data))


def parse_model(
    note: Callable[[Finding], None], limits: Limits, name: str, data: bytes, kind: str, cls: type[T]
) -> tuple[T | None, str | None]:
    """The model ``cls`` in the bytes ``data`` of the file ``name``, which must be canonical JSON
    valid against the schema ``kind`` (None, each refusal named by ``note``, when they are not),
    and the sha256 of the model's canonical bytes (which are the file's when it is canonical)."""
    quick = _quick(data, cls, limits)
    if quick is not None:
        # The bytes are the value's canonical form: they are what the model is written as.
        return quick, canonical.sha256_hex(data)
    try:
        raw = canonical.loads(
            data, what=name, max_bytes=limits.max_file_bytes, max_depth=limits.max_json_depth
        )
    except BadInput as exc:
        note(Finding("json-parse", name, "strict JSON parse", "valid JSON", str(exc)))
        return None, None
    value = validate(note, name, raw, kind, cls)
    # The parsed tree is as large as the model: let it go before the model is written out.
    del raw
    if value is None:
        return None, None
    written = to_bytes(value)
    if written != data:
        note(
            Finding(
                "not-canonical",
                name,
                "bytes are not in canonical form",
                "canonical JSON",
                "other bytes",
            )
        )
    return value, canonical.sha256_hex(written)


def parse_line(
    note: Callable[[Finding], None],
    limits: Limits,
    name: str,
    number: int,
    line: bytes,
    kind: str,
    cls: type[T],
) -> T | None:
    """The strict way for line ``number`` of the JSON Lines file ``name``: parse, schema and
    model, each refusal named by ``note``."""
    try:
        raw = canonical.loads(
            line,
            what=f"{name} line {number}",
            max_bytes=limits.max_file_bytes,
            max_depth=limits.max_json_depth,
        )
    except BadInput as exc:
        note(
            Finding(
                "json-parse",
                name,
                f"strict JSON parse, line {number}",
                "valid JSON",
                str(exc),
                Location(line=number),
            )
        )
        return None
    value = validate(note, name, raw, kind, cls, number)
    if value is not None and to_bytes(value) != line:
        note(
            Finding(
                "not-canonical",
                name,
                f"line {number} is not in canonical form",
                "canonical JSON",
                "other bytes",
                Location(line=number),
            )
        )
    return value
