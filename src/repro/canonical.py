"""Strict JSON in, canonical JSON out, and sha256 digests.

Reading refuses what a lenient parser would accept silently: duplicate keys, NaN and Infinity
(also a number too large for a double, which a lenient parser turns into Infinity), integers
beyond 64 bits, invalid UTF-8, strings with lone surrogates (``"\\ud800"``: valid JSON text, but
no UTF-8 form), oversized input and absurd nesting; each refusal names the JSON path.
Writing produces one canonical byte form: sorted keys, UTF-8, no insignificant white space,
finite numbers only, and a final newline.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

import orjson

from repro.errors import BadInput

__all__ = ["MAX_DEPTH", "MAX_INT", "dumps", "json_path", "loads", "sha256_hex"]

MAX_DEPTH = 64
#: orjson serialises integers of at most 64 bits; anything larger is refused rather than mangled.
MAX_INT = 2**63 - 1
_SURROGATE = re.compile("[\ud800-\udfff]")


class _Duplicate:
    __slots__ = ("key",)

    def __init__(self, key: str) -> None:
        self.key = key


class _Constant:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def _pairs(pairs: list[tuple[str, Any]]) -> Any:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            # Keep parsing; the walk below reports the first duplicate with its path.
            return _Duplicate(key)
        seen[key] = value
    return seen


def json_path(parent: str, key: str | int) -> str:
    """The JSON path of ``key`` (an object key or an array index) inside ``parent``:
    ``$.a``, ``$.a[0]``, or ``$["images/x.yaml"]`` for keys that are not identifiers."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    if key.isidentifier():
        return f"{parent}.{key}"
    return f"{parent}[{json.dumps(key)}]"


def _check(value: Any, what: str) -> None:
    stack: list[tuple[Any, str, int]] = [(value, "$", 1)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, _Duplicate):
            raise BadInput(f"{what}: duplicate key {node.key!r} @ {path}")
        if isinstance(node, _Constant):
            raise BadInput(f"{what}: {node.name} is not a JSON number @ {path}")
        if isinstance(node, (dict, list)) and depth > MAX_DEPTH:
            raise BadInput(f"{what}: nesting deeper than {MAX_DEPTH} levels @ {path}")
        if isinstance(node, dict):
            for key in node:
                if _SURROGATE.search(key):
                    where = json_path(path, key)
                    raise BadInput(f"{what}: key with a lone surrogate (no UTF-8 form) @ {where}")
            stack.extend((v, json_path(path, k), depth + 1) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, json_path(path, i), depth + 1) for i, v in enumerate(node))
        elif isinstance(node, str):
            if _SURROGATE.search(node):
                raise BadInput(f"{what}: string with a lone surrogate (no UTF-8 form) @ {path}")
        elif isinstance(node, float):
            if not math.isfinite(node):
                raise BadInput(f"{what}: number too large for a 64-bit float @ {path}")
        elif isinstance(node, int) and not isinstance(node, bool) and abs(node) > MAX_INT:
            raise BadInput(f"{what}: integer out of 64-bit range @ {path}")


def loads(data: bytes, *, what: str = "input", max_bytes: int = 1 << 20) -> Any:
    """Parse ``data`` strictly; ``what`` names the input in error messages."""
    if len(data) > max_bytes:
        raise BadInput(f"{what}: {len(data)} bytes is over the limit of {max_bytes} bytes @ $")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{what}: not UTF-8 (byte {exc.start}) @ $") from None
    try:
        value = json.loads(text, object_pairs_hook=_pairs, parse_constant=_Constant)
    except RecursionError:
        raise BadInput(f"{what}: nesting deeper than {MAX_DEPTH} levels @ $") from None
    except json.JSONDecodeError as exc:
        raise BadInput(
            f"{what}: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno}) @ $"
        ) from None
    _check(value, what)
    return value


def _refuse_non_finite(value: Any) -> None:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            raise ValueError(f"non-finite number {node!r} has no canonical JSON form")
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)


def dumps(value: Any, *, newline: bool = True) -> bytes:
    """Canonical bytes of a JSON value: sorted keys, compact, UTF-8, finite numbers only."""
    _refuse_non_finite(value)
    out = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    return out + b"\n" if newline else out


def sha256_hex(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()
