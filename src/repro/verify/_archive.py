"""What the strict archive readers (:mod:`~repro.verify._tarscan`, :mod:`~repro.verify._zipscan`)
share: the archive file read at offsets, each member as its headers declare it, and the one
refusal that stops a reading, so that nothing of an archive that more than one reading fits is
read as bundle content."""

from __future__ import annotations

import os
import weakref
import zlib

from attrs import frozen

from repro.verify._findings import Finding

__all__ = [
    "AMBIGUOUS",
    "BLOCK",
    "ArchiveError",
    "ArchiveFile",
    "Member",
    "MemberReader",
    "NotArchive",
    "Refusal",
    "ambiguous",
    "shown",
    "unreadable",
]

#: The prefix of every code of an archive refused as ambiguous: one that GNU tar or Info-ZIP
#: unzip (or another common reader) could extract otherwise than verify reads it.
AMBIGUOUS = "archive-ambiguous"

#: Bytes read at a time: a member's data, a zip's tail, a tar's padding after its end.
BLOCK = 1 << 16


class ArchiveError(OSError):
    """A member that cannot be read as its headers declare it: its reason, as an OSError's (the
    reader names it ``cannot-read``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(0, reason[:200])


class NotArchive(Exception):
    """The file is no zip or tar archive at all: why (verify then says it is not a bundle)."""


class Refusal(Exception):
    """Why nothing of an archive is read: the one finding that says so (an ambiguous archive,
    one that cannot be read as its format says, or an index past its limit)."""

    def __init__(self, code: str, file: str, what: str, expected: str, found: str) -> None:
        super().__init__(what)
        self.finding = Finding(code, file, what, expected, found)


def ambiguous(shape: str, file: str, what: str, expected: str, found: str) -> Refusal:
    """The refusal of an archive that can be read more than one way, by its shape (the code is
    ``archive-ambiguous-SHAPE``)."""
    return Refusal(f"{AMBIGUOUS}-{shape}", file, f"{what}: archive not read", expected, found)


def unreadable(what: str, expected: str, found: str, file: str = ".") -> Refusal:
    """The refusal of an archive whose structure cannot be read as its format says."""
    return Refusal("archive-unreadable", file, what, expected, found)


def shown(name: bytes) -> str:
    """A member's raw name as a finding shows it."""
    return name.decode("utf-8", "backslashreplace")[:200] or "."


@frozen
class Member:
    """One member as its archive's headers declare it, checked against every other way of
    reading them: its name (decoded, surrogate escapes for bytes that are not UTF-8), kind
    ("file", "directory", "symlink", "hard-link", "special"), size, and where its bytes lie."""

    name: str
    kind: str
    size: int
    #: Where its stored bytes begin in the archive file, and how many there are.
    offset: int = 0
    stored: int = 0
    #: How they are stored: 0 as they are, 8 deflated (a zip's methods).
    method: int = 0
    #: A zip member's CRC-32 of its bytes; None for a tar member (tar has none).
    crc: int | None = None
    #: Why a regular member is not read (code, what, expected, found): the bomb rules.
    problem: tuple[str, str, str, str] | None = None


class ArchiveFile:
    """The archive file, open by its descriptor (held until this object goes), read at offsets:
    members read at once do not share a position."""

    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd
        self.size = size
        self._closed = weakref.finalize(self, os.close, fd)

    def read(self, offset: int, n: int) -> bytes:
        """The ``n`` bytes at ``offset``, which must lie in the file (else :class:`Refusal`)."""
        if n < 0 or offset < 0 or offset + n > self.size:
            raise unreadable(
                "archive ends inside a record: listing stopped",
                f"{n} bytes at byte {offset}",
                f"a file of {self.size} bytes",
            )
        try:
            data = self._pread(offset, n)
        except OSError as exc:
            raise unreadable(
                "archive cannot be read: listing stopped",
                f"{n} bytes at byte {offset}",
                exc.strerror or type(exc).__name__,
            ) from None
        if len(data) != n:
            raise unreadable(
                "archive changed while it was listed", f"{n} bytes at byte {offset}", "fewer"
            )
        return data

    def _pread(self, offset: int, n: int) -> bytes:
        chunks = []
        while n > 0:
            chunk = os.pread(self.fd, min(n, BLOCK), offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        """Let the file go."""
        self._closed()


class MemberReader:
    """A member's bytes as an extractor writes them: its stored bytes, inflated when deflated.
    A member whose bytes end anywhere but where its headers say (a deflate stream that ends
    before its stored bytes do or runs past them, more or fewer bytes than it declares, another
    CRC-32) is an :class:`ArchiveError` when its end is read."""

    def __init__(self, archive: ArchiveFile, member: Member) -> None:
        self.archive = archive
        self.member = member
        self.size = member.size
        self._at = member.offset
        self._left = member.stored
        self._given = 0
        self._crc = 0
        self._inflate = zlib.decompressobj(-zlib.MAX_WBITS) if member.method == 8 else None
        self._ended = False

    def read(self, n: int) -> bytes:
        """At most ``n`` further bytes; empty at the end, once the end is checked."""
        if n <= 0 or self._ended:
            return b""
        try:
            data = self._next(min(n, BLOCK))
        except zlib.error as exc:
            raise ArchiveError(f"deflate stream cannot be inflated: {exc}") from None
        if not data:
            self._end()
            return b""
        self._given += len(data)
        if self._given > self.size:
            raise ArchiveError(f"member gives more than the {self.size} bytes it declares")
        if self.member.crc is not None:
            self._crc = zlib.crc32(data, self._crc)
        return data

    def _stored(self, n: int) -> bytes:
        want = min(n, self._left)
        if want <= 0:
            return b""
        data = os.pread(self.archive.fd, want, self._at)
        if not data:
            raise ArchiveError(f"archive ends {self._left} bytes before the member does")
        self._at += len(data)
        self._left -= len(data)
        return data

    def _next(self, n: int) -> bytes:
        inflate = self._inflate
        if inflate is None:
            return self._stored(n)
        while not inflate.eof:
            data = inflate.unconsumed_tail or self._stored(BLOCK)
            out = inflate.decompress(data, n)
            if out:
                return out
            if not data:
                raise ArchiveError("deflate stream runs past the member's stored bytes")
        return b""

    def _end(self) -> None:
        self._ended = True
        if self._inflate is not None and (self._inflate.unused_data or self._left):
            raise ArchiveError("deflate stream ends before the member's stored bytes do")
        if self._given != self.size:
            raise ArchiveError(f"member gives {self._given} bytes, declares {self.size}")
        if self.member.crc is not None and self._crc != self.member.crc:
            raise ArchiveError(
                f"member's CRC-32 is {self._crc:08x}, its headers say {self.member.crc:08x}"
            )

    def close(self) -> None:
        """Let the member go (the archive file stays open for the others)."""
