"""How a run's outcome is read, alike by a scored protocol's consistency rules
(:mod:`repro._protocol.scoring_rules`) and by the derivations that score its runs
(:mod:`repro._derive.scoring`, :mod:`repro._derive.scenarios`): the key a harness reports the
scenario version in, the JSON type of a value, what counts as a number, and the tokens of a text.
Here, below both, so that the protocol's rules need no derivation."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["VERSION_KEY", "is_number", "json_type", "tokens"]

#: The outcome key a harness reports the scenario version in.
VERSION_KEY = "scenario_version"

_TOKEN = re.compile(r"[a-z0-9]+")


def json_type(value: Any) -> str:
    """The JSON type name of ``value`` (object, array, string, number, boolean, null), for
    details and messages that say what was found instead of what was expected."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def tokens(text: str) -> frozenset[str]:
    """The ``[a-z0-9]+`` tokens of ``text`` lower-cased: concept coverage compares words, so
    that case and punctuation ("Token-Expiry!" against "token expiry") never decide it."""
    return frozenset(_TOKEN.findall(text.lower()))
