"""What a field's value must be, for every model: the validators the models share, the error a
refusal raises, and the metadata that leaves a field out of its JSON while it holds its default."""

from __future__ import annotations

import math
import re
import unicodedata
from datetime import datetime
from typing import Any

__all__ = ["OMIT_IF_DEFAULT", "FieldError"]

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


#: Field metadata: the field is left out of its object's JSON while it holds its default, so
#: that adding it changed no existing file's bytes (or a protocol's digest).
OMIT_IF_DEFAULT = {"omit_if_default": True}


class FieldError(ValueError):
    """A field value of the right type that a validator refuses; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _ident(_: object, attribute: Any, value: str) -> None:
    if not _ID.fullmatch(value):
        raise FieldError(
            attribute.name,
            f"{attribute.name} {value!r} must be 1-64 characters of letters, digits, '_', '.', '-'",
        )


def _sha256(_: object, attribute: Any, value: str) -> None:
    if not _HEX64.fullmatch(value):
        raise FieldError(attribute.name, f"{attribute.name} must be 64 lower-case hex digits")


def _one_line(_: object, attribute: Any, value: str) -> None:
    # The title goes into bag-info.txt as a "Label: value" line; a line break would add lines.
    if any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in value):
        raise FieldError(
            attribute.name, f"{attribute.name} must be one line without control characters"
        )


def _seed(_: object, attribute: Any, value: int) -> None:
    if not 0 <= value < 2**63:
        raise FieldError(attribute.name, f"{attribute.name} must be in [0, 2**63), not {value}")


def _positive(_: object, attribute: Any, value: int) -> None:
    if value < 1:
        raise FieldError(attribute.name, f"{attribute.name} must be at least 1, not {value}")


def _probability(_: object, attribute: Any, value: float) -> None:
    if not 0.5 <= value < 1:
        raise FieldError(attribute.name, f"{attribute.name} must be in [0.5, 1), not {value}")


def _finite(_: object, attribute: Any, value: float) -> None:
    if not math.isfinite(value):
        raise FieldError(attribute.name, f"{attribute.name} must be finite")


def _fraction(_: object, attribute: Any, value: float) -> None:
    if not (math.isfinite(value) and 0 <= value <= 1):
        raise FieldError(attribute.name, f"{attribute.name} must be in [0, 1], not {value}")


_SPDX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+-]{0,63}$")


def _spdx(_: object, attribute: Any, value: str) -> None:
    # The licence of what the bundle holds, named by its SPDX identifier (e.g. CC-BY-4.0); the
    # RO-Crate metadata links it as https://spdx.org/licenses/<identifier>.
    if not _SPDX.fullmatch(value):
        raise FieldError(attribute.name, f"{attribute.name} must be an SPDX license identifier")


def _non_empty(_: object, attribute: Any, value: tuple[Any, ...]) -> None:
    if not value:
        raise FieldError(attribute.name, f"{attribute.name} must not be empty")


_UTC = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z$")


def _real_time(value: str) -> bool:
    """Whether ``value``, a UTC time in one of the shapes above, is a time that exists in the
    calendar (not ``2026-99-99T99:99:99Z``). (``fromisoformat`` reads those shapes, and is many
    times faster than ``strptime``: verify judges two times per attempt.)"""
    try:
        datetime.fromisoformat(value[:-1])
    except ValueError:
        return False
    return True


def _utc(_: object, attribute: Any, value: str) -> None:
    if not (_UTC.fullmatch(value) and _real_time(value)):
        raise FieldError(
            attribute.name, f"{attribute.name} must be a UTC time as YYYY-MM-DDTHH:MM:SS.ffffffZ"
        )


_UTC_SECONDS = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$")


def _utc_seconds(_: object, attribute: Any, value: str) -> None:
    if not (_UTC_SECONDS.fullmatch(value) and _real_time(value)):
        raise FieldError(
            attribute.name, f"{attribute.name} must be a UTC time as YYYY-MM-DDTHH:MM:SSZ"
        )
