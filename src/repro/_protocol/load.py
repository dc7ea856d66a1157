"""Load a protocol: read its file strictly, remove its comments, validate every field, and apply
the consistency rules (:mod:`~repro._protocol.rules`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repro._files import read_regular
from repro._json import canonical
from repro._json.canonical import json_path
from repro._json.serde import found, structure
from repro._protocol.rules import check_consistency
from repro.errors import BadInput, Problem
from repro.models import Protocol

__all__ = [
    "COMMENT",
    "MAX_PROTOCOL_BYTES",
    "load_protocol",
    "parse_protocol",
    "strip_comments",
]

MAX_PROTOCOL_BYTES = 1 << 20
#: The key of a comment, in any object of a protocol (as in JSON Schema).
COMMENT = "$comment"


def load_protocol(path: Path) -> Protocol:
    """Read and validate the protocol at ``path``; every refusal names the JSON path."""
    try:
        read = read_regular(path, MAX_PROTOCOL_BYTES)
    except OSError as exc:
        said = f"cannot read ({exc.strerror})"
        raise BadInput.of(f"protocol {path}", [Problem("$", said, "unreadable")]) from None
    if read is None:
        raise BadInput.of(f"protocol {path}", [Problem("$", "not a readable file", "unreadable")])
    size, data = read
    if size > MAX_PROTOCOL_BYTES:
        said = f"{size} bytes is over the limit of {MAX_PROTOCOL_BYTES} bytes"
        raise BadInput.of("protocol", [Problem("$", said, "over-limit")])
    return parse_protocol(data)


def strip_comments(value: Any, path: str = "$") -> Any:
    """``value`` without the ``"$comment"`` key of any object in it, as JSON Schema allows:
    comments are for the protocol's readers and never reach strict validation, the frozen
    protocol or its digest. A comment must be a string, or it is refused with its JSON path:
    anything else under that key is more likely a mistake than a note.

    ``value`` comes from :func:`repro._json.canonical.loads`, which bounds its nesting, so the
    recursion is bounded too."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            where = json_path(path, key)
            if key == COMMENT:
                if not isinstance(item, str):
                    said = f"a {COMMENT} must be a string, {found(item)}"
                    raise BadInput.of("protocol", [Problem(where, said, "wrong-type")])
                continue
            out[key] = strip_comments(item, where)
        return out
    if isinstance(value, list):
        return [strip_comments(item, json_path(path, i)) for i, item in enumerate(value)]
    return value


def parse_protocol(data: bytes) -> Protocol:
    """Parse and validate protocol bytes; ``"$comment"`` keys are removed first."""
    raw = canonical.loads(data, what="protocol", max_bytes=MAX_PROTOCOL_BYTES, hints=True)
    if not isinstance(raw, dict):
        raise BadInput.of("protocol", [Problem("$", "expected an object", "wrong-type")])
    protocol = structure(strip_comments(raw), Protocol, what="protocol")
    check_consistency(protocol)
    return protocol
