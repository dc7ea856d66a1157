"""Freeze a protocol: its defaults made explicit and the sha256 of its canonical bytes, the identity
every bundle file of a study names."""

from __future__ import annotations

from repro._json import canonical
from repro._json.serde import to_bytes
from repro.models import FrozenProtocol, Protocol

__all__ = ["freeze"]


def freeze(protocol: Protocol) -> FrozenProtocol:
    """The frozen form: defaults explicit, digested over canonical bytes."""
    return FrozenProtocol(
        schema="repro.frozen-protocol/1",
        sha256=canonical.sha256_hex(to_bytes(protocol)),
        protocol=protocol,
    )
