"""The protocol: load a protocol file strictly (comments removed, every field validated;
:mod:`~repro.protocol.load`), check that its parts agree with each other
(:mod:`~repro.protocol.rules`, a scored protocol's in :mod:`~repro.protocol.scoring_rules`, its
contrasts' in :mod:`~repro.protocol.contrasts`, its ``rl`` section's in
:mod:`~repro.protocol.rl_rules`), and freeze it with its digest before anything runs
(:mod:`~repro.protocol.freeze`)."""

from repro.protocol.freeze import freeze
from repro.protocol.load import (
    COMMENT,
    MAX_PROTOCOL_BYTES,
    load_protocol,
    parse_protocol,
    strip_comments,
)
from repro.protocol.rules import MAX_SLOTS, check_consistency

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
