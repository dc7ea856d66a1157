"""What the callers do with a hit: a protocol that discloses is refused (naming the JSON path),
an outcome's string that discloses is withheld, and a failure's cause is a short code."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from repro._disclosure.hits import Disclosure
from repro._disclosure.scanner import scan, scan_hits
from repro._json import canonical
from repro._json.serde import to_bytes, unstructure
from repro.errors import BadInput
from repro.models import FrozenProtocol


def _locate(value: Any, path: str = "$") -> Iterator[tuple[str, Disclosure]]:
    """The JSON path of every key or string in plain JSON data ``value`` that holds a hit, each
    scanned as the JSON string it is written as (so escapes count as in the file)."""
    if isinstance(value, str):
        for hit in scan("", canonical.dumps(value, newline=False)):
            yield path, hit
    elif isinstance(value, dict):
        for key, item in value.items():
            for hit in scan("", canonical.dumps(key, newline=False)):
                yield f"{path}.{key}", hit
            yield from _locate(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _locate(item, f"{path}[{i}]")


def refuse_disclosing_protocol(frozen_protocol: FrozenProtocol) -> None:
    """Refuse, before anything is written, a protocol whose protocol.json would disclose
    something: raise :class:`BadInput` naming the first hit's JSON path (or, for a hit that
    spans a key and its value, its byte in protocol.json)."""
    hits = scan_hits("data/protocol.json", to_bytes(frozen_protocol), keep=1)
    if not hits.count:
        return
    located = next(_locate(unstructure(frozen_protocol.protocol)), None)
    first = located[1] if located else hits.first[0]
    where = located[0] if located else f"byte {first.offset} of protocol.json"
    message = (
        f"would write {first.kind} content ({first.pattern}) into the bundle; keep host paths, "
        "tracebacks and credentials out of the protocol (host-specific adapter options can be "
        "given with --option)"
    )
    if located:
        raise BadInput.at(where, message, "not-allowed")
    raise BadInput(f"protocol: {message} @ {where}")


#: What a cause code may look like: short, one line, no quotes, slashes or backslashes (so no
#: path and no traceback frame), e.g. ``policy-error:RuntimeError``.
_CAUSE_CODE = re.compile(r"[A-Za-z0-9_.:;,=+ -]{1,120}")
#: Recorded instead of an adapter's cause that is no short code or would disclose something.
WITHHELD_CAUSE = "cause-withheld"


def withheld(file: str, value: str) -> str:
    """``value``, a string a study writes into bundle file ``file``, or ``"withheld"`` when it
    would disclose there (:func:`scan`, as verify scans the file): what a study records of the
    machine it ran on (its platform, its packages' versions) never names the machine."""
    return "withheld" if scan(file, canonical.dumps(value, newline=False)) else value


def short_cause(cause: str) -> str:
    """``cause`` when it is a short code that discloses nothing, else :data:`WITHHELD_CAUSE`:
    an adapter's message never reaches the bundle as it is."""
    if _CAUSE_CODE.fullmatch(cause) and not scan("", cause.encode()):
        return cause
    return WITHHELD_CAUSE
