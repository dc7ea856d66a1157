"""The trace digest: however items are added (one by one, or gathered by a loop and fed in
lists, past the block size or not), it is the sha256 of the framed items in order."""

from __future__ import annotations

import hashlib
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from repro.adapters._base import TraceDigest, frame

_ITEMS = st.lists(
    st.tuples(st.sampled_from([b"A", b"O", b"R"]), st.binary(max_size=40)), max_size=5000
)


def _expected(items: list[tuple[bytes, bytes]]) -> str:
    framed = b"".join(tag + struct.pack(">Q", len(payload)) + payload for tag, payload in items)
    return hashlib.sha256(b"repro.trace/1" + framed).hexdigest()


@pytest.mark.slow
@given(_ITEMS, st.integers(min_value=1, max_value=7000))
def test_every_way_of_adding_gives_the_digest_of_the_framed_items(
    items: list[tuple[bytes, bytes]], cut: int
) -> None:
    """Items added one by one, and the same items fed as gathered lists (cut every ``cut``
    items, with some added one by one in between), give one digest: sha256 over the tag
    ``repro.trace/1`` and each item's tag, 8-byte big-endian length and payload."""
    one_by_one = TraceDigest()
    for tag, payload in items:
        one_by_one.add(tag, payload)
    mixed = TraceDigest()
    parts: list[bytes] = []
    for number, (tag, payload) in enumerate(items, start=1):
        if number % 3 == 0:
            mixed.feed(parts)
            mixed.add(tag, payload)
            continue
        parts += [frame(tag, len(payload)), payload]
        if number % cut == 0:
            mixed.feed(parts)
    mixed.feed(parts)
    assert one_by_one.hexdigest() == mixed.hexdigest() == _expected(items)
