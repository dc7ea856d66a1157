"""The walk over a file's bytes: a :class:`Scanner` fed block by block, and :func:`scan_hits`
and :func:`scan` over bytes held whole; each finds the same hits whatever the blocks."""

from __future__ import annotations

from bisect import insort

from repro._disclosure.engine import BEHIND, Hit, Pattern, View, needles_present, search_pattern
from repro._disclosure.hits import MAX_HITS_KEPT, Disclosure, FileHits, Kind
from repro._disclosure.identity import PREPARED, prepared_for
from repro._disclosure.normalise import Offsets, held_back, normalised_view

#: Blocks smaller than this are gathered before they are scanned, so that feeding a byte at a
#: time does not scan the carried tail again at every byte.
GATHER = 1 << 16
#: Blocks larger than this are scanned this much at a time, so that the copies a scan makes
#: (lower case, base64 runs, normalised view) stay small however large the block.
ROUND = 1 << 20


class _Stream:
    """The hits in a stream of bytes, fed in blocks of any size: the engine under
    :class:`Scanner` and :func:`scan`. Hits come out as (file offset, kind, pattern), in no
    particular order, once nothing that follows can change them."""

    def __init__(self, prepared: tuple[tuple[Pattern, str | int], ...] = PREPARED) -> None:
        self._prepared = prepared
        self._gathered = bytearray()
        #: File bytes not yet normalised: the end of a block that may begin a hidden character.
        self._held = b""
        self._file_at = 0
        self._offsets = Offsets()
        #: The normalised view from ``_tail_at`` on that positions still to be judged may read.
        self._tail = b""
        self._tail_at = 0
        #: Per pattern, the view offset its next search starts at.
        self._resume = [0] * len(prepared)

    def feed(self, block: bytes) -> list[Hit]:
        """The hits that ``block`` (the next bytes of the stream) settles."""
        if len(self._gathered) + len(block) < GATHER:
            self._gathered += block
            return []
        hits: list[Hit] = []
        if self._gathered:
            hits += self._round(bytes(self._gathered), final=False)
            self._gathered.clear()
        if len(block) <= ROUND:
            hits += self._round(bytes(block), final=False)
        else:
            view = memoryview(block)
            for i in range(0, len(block), ROUND):
                hits += self._round(bytes(view[i : i + ROUND]), final=False)
        return hits

    def finish(self) -> list[Hit]:
        """The hits still to come, the stream having ended."""
        hits = self._round(bytes(self._gathered), final=True)
        self._gathered.clear()
        return hits

    def _round(self, block: bytes, *, final: bool) -> list[Hit]:
        raw = self._held + block if self._held else block
        cut = len(raw) - (0 if final else held_back(raw))
        body, self._held = (raw, b"") if cut == len(raw) else (raw[:cut], raw[cut:])
        normalised = normalised_view(body, self._file_at, self._offsets)
        self._file_at += len(body)
        data = self._tail + normalised if self._tail else normalised
        base = self._tail_at
        end = base + len(data)
        view = View(data)
        found: list[Hit] = []
        resume = self._resume
        for i, (pattern, at) in enumerate(self._prepared):
            limit = end if final else end - pattern.reach
            pos = resume[i]
            if pos >= limit:
                continue
            skipped = bool(pattern.gate and pattern.gate not in data) or (
                pattern.cased and view.lowered == data
            )
            # Looking for needles costs a search through the data each: only where the gates
            # leave the pattern to run (a runs file holds no "/" for file URLs).
            needles = needles_present(pattern, view) if pattern.needles and not skipped else []
            if skipped or (pattern.needles and not needles):
                # No match lies wholly in ``data``, so none starts before ``limit``.
                resume[i] = limit
            else:
                resume[i] = base + search_pattern(
                    pattern, at, view, pos - base, limit - base, found, needles
                )
        keep_from = min(max(min(self._resume) - BEHIND, base), end)
        self._tail = data[keep_from - base :]
        self._tail_at = keep_from
        to_file = self._offsets
        if len(to_file.view) == 1:
            # Nothing removed or decoded since the tail began: one shift for every hit.
            at = base + to_file.shift[0]
            hits = [(at + offset, kind, name) for offset, kind, name in found]
        else:
            hits = [(to_file(base + offset), kind, name) for offset, kind, name in found]
        to_file.forget_before(keep_from)
        return hits


class Scanner:
    """The hits in bundle file ``file``, fed as blocks of its bytes from byte ``start`` on:
    :meth:`feed` each block in order (of any size, empty too), then :meth:`finish` once.

    The result is exactly what :func:`scan` finds in the bytes fed, joined, however they were
    cut; it keeps the first ``keep`` hits in sorted order and counts the rest. Memory is bounded
    by the largest block plus a constant: between blocks only a short tail is carried.
    """

    def __init__(self, file: str, start: int = 0, keep: int = MAX_HITS_KEPT) -> None:
        self._file = file
        self._start = start
        self._keep = keep
        self._stream = _Stream(prepared_for(file))
        #: The first ``keep`` hits so far, sorted, as (offset, kind, pattern).
        self._first: list[Hit] = []
        self._count = 0
        self._kinds: set[Kind] = set()

    def _take(self, hits: list[Hit]) -> None:
        self._count += len(hits)
        if hits:
            self._kinds.update(kind for _, kind, _ in hits)
        first, keep = self._first, self._keep
        for hit in hits:
            if len(first) < keep:
                insort(first, hit)
            elif first and hit < first[-1]:
                insort(first, hit)
                first.pop()

    def feed(self, block: bytes) -> None:
        """Scan ``block``, the next bytes of the file."""
        self._take(self._stream.feed(block))

    def finish(self) -> FileHits:
        """The hits in everything fed: the first ``keep`` and how many there are in all."""
        self._take(self._stream.finish())
        first = tuple(_disclosure(self._file, self._start, hit) for hit in self._first)
        return FileHits(self._file, first, self._count, frozenset(self._kinds))


def _disclosure(file: str, start: int, hit: Hit) -> Disclosure:
    offset, kind, pattern = hit
    return Disclosure(file, start + offset, kind, pattern)


def scan_hits(file: str, data: bytes, start: int = 0, keep: int = MAX_HITS_KEPT) -> FileHits:
    """The hits in ``data``, the bytes of bundle file ``file`` from byte ``start`` on: the first
    ``keep`` in sorted order and how many there are (a :class:`Scanner` fed ``data`` once)."""
    scanner = Scanner(file, start, keep)
    scanner.feed(data)
    return scanner.finish()


def _whole(data: bytes, prepared: tuple[tuple[Pattern, str | int], ...]) -> list[Hit]:
    """The hits in ``data``, a whole stream: what a :class:`_Stream` fed it and finished finds,
    without the stream's bookkeeping (which a scan of one line at a time would pay for)."""
    if len(data) > ROUND:
        stream = _Stream(prepared)
        return stream.feed(data) + stream.finish()
    offsets = Offsets()
    normalised = normalised_view(bytes(data), 0, offsets)
    view = View(normalised)
    found: list[Hit] = []
    for pattern, at in prepared:
        if (pattern.gate and pattern.gate not in normalised) or (
            pattern.cased and view.lowered == normalised
        ):
            continue
        if pattern.needles:
            needles = needles_present(pattern, view)
            if needles:
                search_pattern(pattern, at, view, 0, len(normalised), found, needles)
        elif pattern.starts is None and pattern.judge is None:
            kind, name = pattern.kind, pattern.name
            found += [(match.start(at), kind, name) for match in pattern.regex.finditer(normalised)]
        else:
            search_pattern(pattern, at, view, 0, len(normalised), found)
    if len(offsets.view) == 1:
        return found
    return [(offsets(offset), kind, name) for offset, kind, name in found]


def scan(file: str, data: bytes, start: int = 0) -> list[Disclosure]:
    """Every hit in ``data``, the bytes of bundle file ``file`` from byte ``start`` on, sorted by
    offset (then kind and pattern). For small inputs: a :class:`Scanner` keeps a bounded number
    of hits of a file of any size."""
    return sorted(_disclosure(file, start, hit) for hit in _whole(data, prepared_for(file)))
