"""A hit as the scanner reports it: the file, the kind, the byte offset and the pattern's name,
never the matched text (:class:`Disclosure`), and a file's hits (:class:`FileHits`)."""

from __future__ import annotations

from typing import Literal

from attrs import frozen

Kind = Literal["host-path", "traceback", "credential", "identity"]

#: How many hits of one file a :class:`Scanner` keeps (the first ones in sorted order); it counts
#: every other hit without keeping it.
MAX_HITS_KEPT = 25


@frozen(order=True)
class Disclosure:
    """One hit: ``file`` (bundle-relative), the byte ``offset`` where the match starts, its
    ``kind`` and the ``pattern`` that matched (a name, the only hint given about the content)."""

    file: str
    offset: int
    kind: Kind
    pattern: str

    def describe(self) -> str:
        """``file: kind at byte N (pattern)``, for tier evidence and messages."""
        return f"{self.file}: {self.kind} at byte {self.offset} ({self.pattern})"


@frozen
class FileHits:
    """The hits in one file: ``first``, the first hits in sorted order (by offset, then kind and
    pattern; at most the ``keep`` the scanner was given), ``count``, every hit in the file, and
    ``kinds``, the kinds of every hit."""

    file: str
    first: tuple[Disclosure, ...]
    count: int
    kinds: frozenset[Kind] = frozenset()
