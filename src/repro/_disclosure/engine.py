"""The pattern engine: a pattern (:class:`Pattern`: its regex, its bounded reach, the needles it
needs), the buffer it looks at (:class:`View`), and the search of one pattern over a range of
the buffer, run only near its needles (:func:`search`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from attrs import frozen

from repro._disclosure.hits import Kind

#: A hit as the engine finds it: its offset (in the buffer, then in the file), kind and pattern.
Hit = tuple[int, Kind, str]

#: A look at a match the regex alone cannot judge: the index in the scanned buffer where the hit
#: starts, or None to reject the match (which then consumes nothing: the search goes on from the
#: byte after its start).
Judge = Callable[[re.Match[bytes]], int | None]


class View:
    """One buffer being scanned, with the derived copies some patterns search instead of it,
    each made at most once and only when a pattern asks."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._lowered: bytes | None = None
        self._runs: bytes | None = None

    @property
    def lowered(self) -> bytes:
        """The data in lower case, for case-insensitive substring search."""
        if self._lowered is None:
            self._lowered = self.data.lower()
        return self._lowered

    @property
    def runs(self) -> bytes:
        """The data with each character of a base64 run (``[A-Za-z0-9/+]``) as ``a`` and every
        other byte as ``.``: runs of exactly 40 are then found by substring search."""
        if self._runs is None:
            self._runs = self.data.translate(_RUNS_TABLE)
        return self._runs


#: Where matches of a pattern may start: ranges ``(a, b)`` (both included), increasing and
#: disjoint, of the positions in ``[lo, hi)`` at which the pattern can match at all. A pattern
#: without it may start anywhere.
Starts = Callable[[View, int, int], Iterator[tuple[int, int]]]


@frozen
class Pattern:
    """One way a disclosure shows: a bounded regex, how far it reads, and what lets the
    scanner skip it or run it only where it can match."""

    name: str
    kind: Kind
    regex: re.Pattern[bytes]
    #: How many bytes from where a match starts the regex may read (its longest match and any
    #: lookahead after it): a position is judged once that many bytes follow it, or the data ends.
    reach: int
    judge: Judge | None = None
    starts: Starts | None = None
    #: A byte every match holds: where the data holds none (found at memchr speed, where even
    #: a regex that jumps by a literal reads every byte), the regex is not run.
    gate: bytes = b""
    #: Every match holds an upper-case letter: where the data holds none (its lower-cased copy,
    #: made for other patterns anyway, is equal to it), the regex is not run.
    cased: bool = False
    #: For a regex without a literal to jump by: every match starts at most ``before`` bytes
    #: before an occurrence of one of these (in the lower-cased data if ``folded``), and the
    #: regex runs only there (see :func:`_needle_ranges`). Each comes with a gate of its own,
    #: bytes of which the data must hold one for it to be looked for (none: always).
    needles: tuple[tuple[bytes, tuple[bytes, ...]], ...] = ()
    before: int = 0
    folded: bool = False


#: Lookbehinds read at most this many bytes before a match's start, and a hit starts at most
#: this many bytes before its match (``windows-drive`` reports the drive letter before the
#: colon its regex starts at); a margin on the largest, two.
BEHIND = 8
#: One character that can be part of a file or directory name (bytes >= 0x80: UTF-8 names).
NAME_CHAR = rb"[A-Za-z0-9_.~$@%+=\x80-\xff-]"
#: Not in the middle of a word, a relative path or a URL: the byte before a path's root is no
#: name character, dot, tilde, hyphen, slash or backslash ("src/usr/x", "a.tmp/x" and the path
#: part of "https://host/home/x" all have one there).
NOT_AFTER_NAME = rb"[A-Za-z0-9_.~/\\-]"


def needles_present(pattern: Pattern, view: View) -> list[bytes]:
    """The needles of ``pattern`` that occur in the data, each looked for only where the data
    holds a byte of its gate: where there are none, the pattern cannot match."""
    data = view.data
    haystack = view.lowered if pattern.folded else data
    present = []
    for needle, gate in pattern.needles:
        # A loop, not any(): this runs for every line of a file scanned line by line.
        for byte in gate:
            if byte in data:
                break
        else:
            if gate:
                continue
        if needle in haystack:
            present.append(needle)
    return present


def _needle_ranges(
    view: View, needles: list[bytes], before: int, folded: bool, lo: int, hi: int
) -> Iterator[tuple[int, int]]:
    """The starts in ``[lo, hi)`` within ``before`` bytes before an occurrence of one of the
    ``needles`` (in the lower-cased data if ``folded``).

    Occurrences within :data:`_SPAN` bytes of one another share one range, so that a text full
    of them costs one regex search per span rather than one call per occurrence.
    """
    data = view.lowered if folded else view.data
    # The next occurrence of each needle at or after ``pos``, searched again only once ``pos``
    # has passed it, so that each needle's occurrences are found in one sweep.
    upcoming = [data.find(n, lo) for n in needles]
    pos = lo
    while pos < hi:
        found = [q for q in upcoming if q >= 0]
        if not found:
            return
        q = min(found)
        if q - before >= hi:
            return
        a = max(pos, q - before)
        b = min(hi - 1, q + _SPAN)
        yield a, b
        pos = b + 1
        upcoming = [
            p if p < 0 or p >= pos else data.find(n, pos)
            for p, n in zip(upcoming, needles, strict=True)
        ]


#: See :func:`_needle_ranges`.
_SPAN = 512


#: ``a`` for the characters of a base64 run, ``.`` for every other byte.
_RUNS_TABLE = bytes(
    ord("a") if chr(i).isascii() and (chr(i).isalnum() or chr(i) in "/+") else ord(".")
    for i in range(256)
)


def prepared(patterns: tuple[Pattern, ...]) -> tuple[tuple[Pattern, str | int], ...]:
    """Per pattern, the group where its hits start (0: the match)."""
    return tuple((p, "at" if "at" in p.regex.groupindex else 0) for p in patterns)


def search_pattern(
    pattern: Pattern,
    at: str | int,
    view: View,
    pos: int,
    limit: int,
    hits: list[Hit],
    needles: list[bytes] | None = None,
) -> int:
    """Append to ``hits`` (as buffer index, kind, pattern) the hits of ``pattern`` in
    ``view.data`` whose matches start in ``[pos, limit)``; return the position its next search
    must start at, ``limit`` or the end of a hit past it. ``at`` names the group where a hit
    starts (0: the match); ``needles`` are the pattern's needles that occur in the data.

    A hit consumes its match, as :func:`re.finditer` does; a rejected match consumes nothing.
    """
    data = view.data
    regex = pattern.regex
    judge = pattern.judge
    ranges: Iterator[tuple[int, int]]
    reach = pattern.reach
    if needles:
        ranges = _needle_ranges(view, needles, pattern.before, pattern.folded, pos, limit)
    elif pattern.starts is not None:
        ranges = pattern.starts(view, pos, limit)
    elif judge is None and limit == len(data):
        # Every match to the end is a hit: finditer finds them as the loop below would.
        kind, name = pattern.kind, pattern.name
        hits.extend((match.start(at), kind, name) for match in regex.finditer(data, pos))
        return limit
    else:
        ranges = iter(((pos, limit - 1),))
        reach = len(data)
    for a, b in ranges:
        q = max(a, pos)
        # No match that starts at or before b reads past b + reach: searching a string cut
        # there finds the same matches there, and spares a crawl to the next range.
        end = min(len(data), b + reach)
        while q <= b:
            match = regex.search(data, q, end)
            if match is None or match.start() > b:
                q = b + 1
                break
            offset = match.start(at) if judge is None else judge(match)
            if offset is None:
                q = match.start() + 1
            else:
                hits.append((offset, pattern.kind, pattern.name))
                q = match.end()
        pos = max(pos, q)
    return max(pos, limit)
