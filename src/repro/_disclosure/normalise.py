"""Hidden spellings: the view of a buffer with zero-width characters removed and percent-encoded
separators decoded, each byte mapped back to its offset in the file."""

from __future__ import annotations

import re
from bisect import bisect_right

#: Zero-width and invisible characters (as UTF-8), removed, and the percent escapes of the
#: characters that separate path components and drives ("/", "\", ":", "~"), decoded.
_HIDDEN = re.compile(
    rb"(?:\xe2\x80[\x8b-\x8d]|\xe2\x81\xa0|\xef\xbb\xbf|\xc2\xad)++"
    rb"|(?:%(?:2[Ff]|5[Cc]|3[Aa]|7[Ee]))++"
)
#: Each escape :data:`_HIDDEN` decodes, decoded.
_DECODED = {
    b"%" + hi + lo: bytes.fromhex((hi + lo).decode("ascii"))
    for hi, lows in ((b"2", b"Ff"), (b"3", b"Aa"), (b"5", b"Cc"), (b"7", b"Ee"))
    for lo in (lows[:1], lows[1:])
}
#: The proper prefixes of what :data:`_HIDDEN` removes or decodes: a block ending in one is cut
#: before it, and the rest waits for the next block. (Each starts with a byte that none of them
#: holds elsewhere, so nothing whole is ever cut.)
_HIDDEN_PREFIXES = frozenset(
    (
        b"\xe2",
        b"\xe2\x80",
        b"\xe2\x81",
        b"\xef",
        b"\xef\xbb",
        b"\xc2",
        b"%",
        b"%2",
        b"%3",
        b"%5",
        b"%7",
    )
)


#: The zero-width characters :data:`_HIDDEN` removes, by their first byte.
_ZERO_WIDTH = (
    (b"\xe2", (b"\xe2\x80\x8b", b"\xe2\x80\x8c", b"\xe2\x80\x8d", b"\xe2\x81\xa0")),
    (b"\xef", (b"\xef\xbb\xbf",)),
    (b"\xc2", (b"\xc2\xad",)),
)


def _hides(raw: bytes) -> bool:
    """Whether ``raw`` holds something :data:`_HIDDEN` removes or decodes, by substring checks
    (the regex itself would crawl through every byte, slower than all the checks together)."""
    if b"%" in raw and any(escape in raw for escape in _DECODED):
        return True
    if raw.isascii():
        return False
    return any(lead in raw and any(z in raw for z in chars) for lead, chars in _ZERO_WIDTH)


def held_back(raw: bytes) -> int:
    """How many bytes at the end of ``raw`` may begin something :data:`_HIDDEN` changes."""
    for k in (2, 1):
        if len(raw) >= k and raw[-k:] in _HIDDEN_PREFIXES:
            return k
    return 0


class Offsets:
    """The map from offsets in the normalised view to offsets in the file: from view offset
    ``view[i]`` on (up to the next), a view byte is ``shift[i]`` bytes further on in the file,
    the bytes removed before it. One entry per removed or decoded sequence."""

    def __init__(self) -> None:
        self.view: list[int] = [0]
        self.shift: list[int] = [0]

    def __call__(self, view: int) -> int:
        # Entries may share a view offset (a zero-width run just after an escape); the last
        # one holds.
        return view + self.shift[bisect_right(self.view, view) - 1]

    def forget_before(self, view: int) -> None:
        """Drop the entries that no view offset from ``view`` on needs."""
        i = bisect_right(self.view, view) - 1
        if i > 0:
            del self.view[:i], self.shift[:i]


def normalised_view(raw: bytes, file_at: int, offsets: Offsets) -> bytes:
    """The normalised view of ``raw`` (the file's bytes from offset ``file_at`` on), recording
    in ``offsets`` where its bytes come from."""
    if not _hides(raw):
        return raw
    pieces: list[bytes] = []
    views, shifts = offsets.view, offsets.shift
    removed = shifts[-1]
    copied = 0
    for match in _HIDDEN.finditer(raw):
        start, end = match.span()
        pieces.append(raw[copied:start])
        if end - start == 3 and raw[start] == 0x25:  # "%": one escape, three bytes for one
            pieces.append(_DECODED[raw[start:end]])
            removed += 2
            views.append(file_at + end - removed)
            shifts.append(removed)
        elif raw[start] == 0x25:  # a run of escapes
            escapes = (end - start) // 3
            pieces.append(bytes.fromhex(match.group().replace(b"%", b"").decode("ascii")))
            # The view byte after each decoded one is two bytes further on in the file.
            after = file_at + start - removed + 1
            views.extend(range(after, after + escapes))
            shifts.extend(range(removed + 2, removed + 2 * escapes + 1, 2))
            removed += 2 * escapes
        else:
            removed += end - start
            # The view byte after the removed run comes from file offset file_at + end.
            views.append(file_at + end - removed)
            shifts.append(removed)
        copied = end
    pieces.append(raw[copied:])
    return b"".join(pieces)
