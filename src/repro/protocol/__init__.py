"""The protocol: load a protocol file strictly (comments removed, every field validated), check
that its parts agree with each other, and freeze it with its digest before anything runs."""

from repro.protocol.load import (
    COMMENT,
    MAX_PROTOCOL_BYTES,
    MAX_SLOTS,
    check_consistency,
    freeze,
    load_protocol,
    parse_protocol,
    strip_comments,
)

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
