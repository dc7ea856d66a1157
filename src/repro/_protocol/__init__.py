"""The protocol: load a protocol file strictly (comments removed, every field validated;
:mod:`~repro._protocol.load`), check that its parts agree with each other
(:mod:`~repro._protocol.rules`, a scored protocol's in :mod:`~repro._protocol.scoring_rules`, its
contrasts' in :mod:`~repro._protocol.contrasts`, its ``rl`` section's in
:mod:`~repro._protocol.rl_rules`), and freeze it with its digest before anything runs
(:mod:`~repro._protocol.freeze`)."""

from repro._protocol.freeze import freeze
from repro._protocol.load import (
    COMMENT,
    MAX_PROTOCOL_BYTES,
    load_protocol,
    parse_protocol,
    strip_comments,
)
from repro._protocol.rules import MAX_SLOTS, check_consistency

__all__ = [
    "COMMENT",
    "MAX_PROTOCOL_BYTES",
    "MAX_SLOTS",
    "check_consistency",
    "freeze",
    "load_protocol",
    "parse_protocol",
    "strip_comments",
]
