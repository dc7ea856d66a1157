"""Strict JSON in, canonical JSON out, and sha256 digests.

Reading refuses what a lenient parser would accept silently: duplicate keys, NaN and Infinity,
numbers too large for a double or for 64 bits, lone surrogates, invalid UTF-8, oversized input
and absurd nesting; each refusal names the JSON path. Whatever the bytes, reading raises
:class:`repro.errors.BadInput` and nothing else.
Writing produces one canonical byte form: sorted keys, UTF-8, no insignificant white space,
finite numbers only, and a final newline.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable
from typing import Any

import orjson

from repro.errors import BadInput, Problem

__all__ = ["MAX_DEPTH", "MAX_INT", "dumps", "json_path", "loads", "sha256_hex", "syntax_hint"]

MAX_DEPTH = 64
#: orjson serialises integers of at most 64 bits; anything larger is refused rather than mangled.
MAX_INT = 2**63 - 1


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


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _sound(value: Any, max_depth: int, escapes: bool) -> bool:
    """Whether :func:`_check` finds nothing to refuse in ``value``: the same rules, without the
    JSON paths that only a refusal needs, and so several times faster."""
    stack: list[tuple[Iterable[Any], int]] = [((value,), 0)]
    while stack:
        children, depth = stack.pop()
        for node in children:
            kind = type(node)
            if kind is float:
                if not math.isfinite(node):
                    return False
            elif kind is str:
                if escapes and _has_surrogate(node):
                    return False
            elif kind is int:
                if abs(node) > MAX_INT:
                    return False
            elif kind is dict:
                if depth + 1 > max_depth or (escapes and any(map(_has_surrogate, node))):
                    return False
                stack.append((node.values(), depth + 1))
            elif kind is list:
                if depth + 1 > max_depth:
                    return False
                stack.append((node, depth + 1))
            elif node is not None and kind is not bool:
                return False  # a parse hook's marker
    return True


#: What a string or key that no UTF-8 writer can encode holds.
_SURROGATE = "with a lone surrogate (no UTF-8 form)"


def _refused(what: str, message: str, path: str, code: str) -> BadInput:
    """Bad input: ``what`` (the input's name) refused for one problem at ``path``."""
    return BadInput.of(what, [Problem(path, message, code)])


def _check(value: Any, what: str, max_depth: int, escapes: bool) -> None:
    """Refuse what the parse hooks marked, nesting deeper than ``max_depth`` and out-of-range
    numbers; with ``escapes`` (the text holds ``\\u`` escapes, the only way to spell a lone
    surrogate in valid UTF-8) also strings that no UTF-8 writer can encode."""
    if _sound(value, max_depth, escapes):
        return
    stack: list[tuple[Any, str, int]] = [(value, "$", 1)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, _Duplicate):
            raise _refused(what, f"duplicate key {node.key!r}", path, "duplicate")
        if isinstance(node, _Constant):
            raise _refused(what, f"{node.name} is not a JSON number", path, "not-allowed")
        if isinstance(node, (dict, list)) and depth > max_depth:
            raise _refused(what, f"nesting deeper than {max_depth} levels", path, "over-limit")
        if escapes and isinstance(node, str) and _has_surrogate(node):
            raise _refused(
                what, "string with a lone surrogate (no UTF-8 form)", path, "not-allowed"
            )
        if isinstance(node, dict):
            for k, v in node.items():
                if escapes and _has_surrogate(k):
                    where = json_path(path, k)
                    raise _refused(
                        what, "key with a lone surrogate (no UTF-8 form)", where, "not-allowed"
                    )
                stack.append((v, json_path(path, k), depth + 1))
        elif isinstance(node, list):
            stack.extend((v, json_path(path, i), depth + 1) for i, v in enumerate(node))
        elif isinstance(node, int) and not isinstance(node, bool) and abs(node) > MAX_INT:
            raise _refused(what, "integer out of 64-bit range", path, "over-limit")
        elif isinstance(node, float) and not math.isfinite(node):
            # NaN and Infinity literals are markers by now; this is a literal such as 1e999 that
            # the parser rounded to infinity.
            raise _refused(what, "number too large for a 64-bit float", path, "over-limit")


def _line(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _place(text: str, index: int) -> str:
    """``line L column C`` of ``text[index]``, counted from 1 as json's errors count them."""
    return f"line {_line(text, index)} column {index - text.rfind(chr(10), 0, index)}"


#: Python's spelling of JSON's constants, which a hand-written file may hold.
_PYTHON_CONSTANTS = {"True": "true", "False": "false", "None": "null"}


def syntax_hint(text: str, message: str, pos: int) -> str | None:
    """The likely cause of the JSON syntax error ``message`` at ``text[pos]`` (as
    :class:`json.JSONDecodeError` gives them), and where it is, for a person who wrote the
    file by hand; None when it is none of the common ones: a trailing comma, a comment, single
    quotes, Python's True/False/None, a key without quotes, a missing comma."""
    here = text[pos : pos + 1]
    # Where the last character before the error that is not white space ends.
    before = len(text[:pos].rstrip())
    if message.startswith("Illegal trailing comma"):  # Python 3.13's message, at the comma
        return f"a trailing comma at {_place(text, pos)}, which JSON does not allow"
    if text.startswith(("//", "/*"), pos):
        return f'a comment at {_place(text, pos)}: JSON has none (a "$comment" key holds a note)'
    if message.startswith(("Expecting property name", "Expecting value")):
        if here in ("}", "]") and before and text[before - 1] == ",":
            where = _place(text, before - 1)
            return f"a trailing comma at {where}, which JSON does not allow before {here}"
        if here == "'":
            return f"a string in single quotes at {_place(text, pos)}: JSON takes double quotes"
        for python, spelling in _PYTHON_CONSTANTS.items():
            if text.startswith(python, pos):
                return f"Python's {python} at {_place(text, pos)}: JSON spells it {spelling}"
        if message.startswith("Expecting property name") and (here.isalpha() or here == "_"):
            return f"a key without double quotes at {_place(text, pos)}"
    if message.startswith("Expecting ',' delimiter") and before:
        if _line(text, before - 1) != _line(text, pos):
            return f"a missing comma at the end of line {_line(text, before - 1)}"
        return f"a missing comma before {_place(text, pos)}"
    return None


def loads(
    data: bytes,
    *,
    what: str = "input",
    max_bytes: int = 1 << 20,
    max_depth: int = MAX_DEPTH,
    hints: bool = False,
) -> Any:
    """Parse ``data`` strictly; ``what`` names the input in error messages. Input over
    ``max_bytes`` or nested deeper than ``max_depth`` is refused. With ``hints`` (for a file a
    person wrote), a syntax error also names its likely cause (:func:`syntax_hint`)."""
    if len(data) > max_bytes:
        raise _refused(
            what, f"{len(data)} bytes is over the limit of {max_bytes} bytes", "$", "over-limit"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _refused(what, f"not UTF-8 (byte {exc.start})", "$", "unreadable") from None
    try:
        value = json.loads(text, object_pairs_hook=_pairs, parse_constant=_Constant)
    except RecursionError:
        raise _refused(what, f"nesting deeper than {max_depth} levels", "$", "over-limit") from None
    except json.JSONDecodeError as exc:
        hint = syntax_hint(text, exc.msg, exc.pos) if hints else None
        likely = "" if hint is None else f"; likely {hint}"
        said = f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno}){likely}"
        raise _refused(what, said, "$", "unreadable") from None
    except ValueError:
        # Python converts integer literals of at most 4300 digits; 64 bits need 19.
        raise _refused(what, "integer out of 64-bit range", "$", "over-limit") from None
    _check(value, what, max_depth, "\\u" in text)
    return value


#: Types that are neither a float nor hold one: most nodes of a model's data (IDs, counts,
#: nulls), passed over with one look-up rather than three ``isinstance`` calls.
_NO_FLOAT = frozenset({str, int, bool, type(None)})


def _finite(value: Any) -> bool:
    """Whether no number in ``value`` is NaN or infinite."""
    stack: list[Iterable[Any]] = [(value,)]
    while stack:
        for node in stack.pop():
            if type(node) in _NO_FLOAT:
                continue
            if isinstance(node, float):
                if not math.isfinite(node):
                    return False
            elif isinstance(node, dict):
                stack.append(node.values())
            elif isinstance(node, (list, tuple)):
                # A run's step rewards are thousands of numbers: one C-level pass over an array
                # of numbers; an array holding anything else is looked into one by one.
                try:
                    if not all(map(math.isfinite, node)):
                        return False
                except (TypeError, ValueError, OverflowError):
                    stack.append(node)
    return True


def _refuse_non_finite(value: Any) -> None:
    if _finite(value):
        return
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            raise ValueError(f"non-finite number {node!r} has no canonical JSON form")
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            # A run's step rewards are thousands of numbers: check them in one C-level pass, and
            # look inside one by one only when they are not all numbers.
            try:
                finite = all(map(math.isfinite, node))
            except (TypeError, OverflowError):
                stack.extend(node)
                continue
            if not finite:
                stack.extend(node)


def dumps(value: Any, *, newline: bool = True) -> bytes:
    """Canonical bytes of a JSON value: sorted keys, compact, UTF-8, finite numbers only."""
    _refuse_non_finite(value)
    out = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    return out + b"\n" if newline else out


def sha256_hex(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()
