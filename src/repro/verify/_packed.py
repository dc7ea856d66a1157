"""Stage 1 for a packed bundle: a zip or tar archive of a bag in one top-level directory, as BagIt
serializes a bag (``repro pack`` writes one), listed and read in place, never extracted.

It gives what the tree walk gives, a :class:`~repro.verify._walk.Listing` and a
:class:`~repro.verify._walk.Source`, so that every later stage runs unchanged. The archive is
read from its raw headers by verify's own strict readers (:mod:`~repro.verify._tarscan`,
:mod:`~repro.verify._zipscan`), not by tarfile and zipfile, whose tolerant readings differ from
what GNU tar and Info-ZIP unzip extract. What verify reads is exactly what they extract, or the
archive is refused as ambiguous: one finding, ``archive-ambiguous-SHAPE``, and nothing of the
archive is read, since which reading would be the bundle is undefined. The shapes: a file that
is both a tar and a zip (``-format``); bytes after a tar's end-of-archive block or a zip's end
record (``-after-end``); a tar header whose checksum does not match (``-checksum``); a header
field the readers read differently (``-header``: a GNU or v7 header with a POSIX prefix, a
number outside octal digits, a malformed or repeated pax record, a pax size other than the
header's, a global pax header that names or sizes, a directory with data, a zip extra field or
zip64 field out of shape, a zip member needing a later version than unzip extracts); two names
for one member, or one read two ways (``-name``: a GNU long name and a pax path, a NUL inside, a
zip name neither ASCII nor flagged UTF-8, an Info-ZIP Unicode Path field naming another file); a
zip's local header disagreeing with its index entry or data descriptor (``-local-header``); a
zip whose index, end records or members leave bytes unaccounted for or disagree on where things
are (``-layout``); a zip member whose bytes do not end where its sizes say, inflate to another
size or carry another CRC-32 (``-stream``, each regular member read through once while listing).

What only an archive can hold is otherwise a finding with its own code, and the member is not
listed: a name outside the top-level directory (``archive-outside-top``) or unsafe
(``archive-name-unsafe``: absolute, ``..``, a backslash, a control character), a name given
twice (``archive-name-repeated``; ``./a`` and ``a`` are one name, a leading ``./`` being how
``tar -C DIR -cf x.tar .`` writes names) or equal to another once case-folded and NFC-normalized
(``archive-name-collision``), a member compressed other than by deflate or encrypted
(``archive-member-method``: zipfile inflates the others without a bound), one that declares more
than ``max_compression_ratio`` bytes per stored byte (``archive-ratio-limit``), or whose bytes
overlap another's (``archive-overlap``, the shape of a zip bomb that reuses one compressed
stream). Links and special files are named as the walk names them (``symlink``, ``hard-link``,
``special-file``; a zip member is one by its mode bits whatever system made it), and so are an
empty directory and the limits on entries, bytes and depth. A header that cannot be read, or
data past the file's end, is ``archive-unreadable``, and nothing is read either.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from repro._layout import unsafe_path
from repro.errors import BadInput
from repro.verify import _tarscan as tarscan
from repro.verify import _zipscan as zipscan
from repro.verify._archive import (
    ArchiveError,
    ArchiveFile,
    Member,
    MemberReader,
    NotArchive,
    Refusal,
    ambiguous,
    unreadable,
)
from repro.verify._findings import Finding, Findings
from repro.verify._limits import Limits, raise_hint
from repro.verify._walk import Listing, bytes_limit, folded, os_reason

__all__ = ["ArchiveSource", "scan_archive"]

#: Bytes a tar member's extension headers (its pax header, a GNU long name) may hold: far more
#: than any bundle file needs, and the bound on what one header makes verify hold.
_HEADER_BYTES = 1 << 20


class ArchiveSource:
    """The regular members of a packed bundle, by bundle name (below the top-level directory),
    read from the archive file held open since it was listed: a file renamed over it changes
    nothing, one changed in place is named by the reader's second read."""

    def __init__(self, archive: ArchiveFile, members: dict[str, Member]) -> None:
        self.archive = archive
        self.members = members
        self.names = frozenset(members)

    def open(self, name: str) -> MemberReader:
        """The member ``name`` opened for reading, as an extractor writes it."""
        return MemberReader(self.archive, self.members[name])


def _open(path: Path) -> ArchiveFile:
    """The file at ``path``, opened without following a symlink. Raises :class:`BadInput`
    for one that is not a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise BadInput(f"{path}: not a bundle directory ({os_reason(exc)})") from None
    try:
        info = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise BadInput(f"{path}: not a bundle directory ({os_reason(exc)})") from None
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise BadInput(f"{path}: not a bundle directory")
    return ArchiveFile(fd, info.st_size)


def _members(archive: ArchiveFile, limits: Limits) -> list[Member]:
    """The archive's members, read by the reader of its format. A zip begins with a member's
    local header (or, empty, with its end record); a tar with a header. Raises
    :class:`Refusal` for a file that is both (a tar reader reads it from its start, a zip
    reader from its end), :class:`NotArchive` for one that is neither."""
    head = archive.read(0, min(tarscan.RECORD, archive.size))
    is_zip = head[:4] in (b"PK\x03\x04", b"PK\x05\x06")
    is_tar = tarscan.looks_like_header(head)
    if is_tar and (is_zip or zipscan.has_end_record(archive)):
        raise ambiguous(
            "format",
            ".",
            "file that is both a tar (read from its start) and a zip (read from its end)",
            "one format",
            "both",
        )
    if is_zip:
        return zipscan.read_zip(archive, limits)
    if not is_tar:
        raise NotArchive("no zip or tar header at its start")
    return tarscan.read_tar(archive, limits.max_files, _HEADER_BYTES)


def _read_through(archive: ArchiveFile, members: Iterable[Member], limits: Limits) -> None:
    """Read each zip member verify will read once through, as an extractor inflates it: one
    that ends anywhere but where its headers say is ambiguous (a tar member's bytes are what
    they are). A member past max_file_bytes is not read, here or later."""
    for member in sorted(members, key=lambda m: m.offset):
        if member.crc is None or member.size > limits.max_file_bytes:
            continue
        reader = MemberReader(archive, member)
        try:
            while reader.read(1 << 16):
                pass
        except ArchiveError as exc:
            raise ambiguous(
                "stream",
                member.name,
                "zip member whose stored bytes do not give exactly what its headers declare "
                "(zipfile stops at the declared size, unzip inflates the whole stream)",
                f"{member.size} bytes, CRC-32 {member.crc:08x}",
                exc.strerror or "other bytes",
            ) from None
        except OSError as exc:
            raise unreadable(
                "archive cannot be read: listing stopped",
                "a readable file",
                os_reason(exc),
                member.name,
            ) from None


class _Members:
    """One listing of an archive: what it has seen so far, and the findings it makes."""

    def __init__(self, limits: Limits, findings: Findings, stored: int) -> None:
        self.limits = limits
        self.findings = findings
        #: Bytes of the archive file: what the members' declared bytes are bounded by.
        self.stored = stored
        self.top: str | None = None
        self.count = 0
        self.total = 0
        self.sizes: dict[str, int] = {}
        self.members: dict[str, Member] = {}
        self.entries: set[str] = set()
        self.directories: set[str] = set()
        self.folded: dict[str, str] = {}
        self.deep: set[str] = set()

    def _name(self, raw: str, kind: str) -> str | None:
        """The bundle name of member ``raw`` (below the top-level directory), or None (named,
        or the top-level directory itself) when it has none."""
        try:
            raw.encode("utf-8")
        except UnicodeEncodeError:
            shown = raw.encode("utf-8", "backslashreplace").decode()
            self.findings.append(
                Finding("name-not-utf8", shown, "name is not UTF-8", "a bundle name", "bytes")
            )
            return None
        name = raw
        while name.startswith("./"):
            name = name[2:]
        if kind == "directory" and name in ("", "."):
            return None  # the archive's root, as tar -C DIR -cf x.tar . names it
        name = name[:-1] if kind == "directory" and name.endswith("/") else name
        unsafe = unsafe_path(name)
        if unsafe is not None:
            self.findings.append(
                Finding(
                    "archive-name-unsafe",
                    name,
                    f"member name is unsafe: {unsafe}",
                    "a relative path inside the top-level directory",
                    repr(raw[:80]),
                )
            )
            return None
        top, _, rest = name.partition("/")
        if self.top is None:
            self.top = top
        if top != self.top or (not rest and kind != "directory"):
            self.findings.append(
                Finding(
                    "archive-outside-top",
                    name,
                    "member outside the archive's one top-level directory",
                    f"below {self.top}/",
                    repr(raw[:80]),
                )
            )
            return None
        return rest or None

    def _unique(self, name: str) -> bool:
        """Whether ``name`` is the first member of its name, once folded (else named)."""
        folded_name = folded(name)
        earlier = self.folded.get(folded_name)
        if earlier is None:
            self.folded[folded_name] = name
            return True
        if earlier == name:
            code, what = "archive-name-repeated", "member name given twice"
        else:
            code, what = "archive-name-collision", f"member name equal to {earlier!r} "
            what += "once case-folded and normalized"
        self.findings.append(Finding(code, name, what, "one member of each name", "another"))
        return False

    def _deep(self, name: str) -> bool:
        """Whether ``name`` lies deeper than the limit max_depth (its directory named once)."""
        parts = name.split("/")
        if len(parts) - 1 <= self.limits.max_depth:
            return False
        directory = "/".join(parts[: self.limits.max_depth + 1])
        if directory not in self.deep:
            self.deep.add(directory)
            self.findings.append(
                Finding(
                    "depth-limit",
                    directory,
                    "directory nested deeper than the limit max_depth: not read",
                    f"<= {self.limits.max_depth} levels",
                    f"{self.limits.max_depth + 1} levels",
                )
            )
        return True

    def add(self, entry: Member) -> bool:
        """List one member; False when a limit stops the listing (named)."""
        self.count += 1
        if self.count > self.limits.max_files:
            limit = self.limits.max_files
            self.findings.append(
                Finding(
                    "scan-entries-limit",
                    ".",
                    "more entries than the limit max_files: verify stopped scanning",
                    f"<= {limit} entries",
                    f"more than {limit}",
                )
            )
            return False
        name = self._name(entry.name, entry.kind)
        if name is None or not self._unique(name) or self._deep(name):
            return True
        parts = name.split("/")
        self.entries.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
        if entry.kind == "directory":
            self.directories.add(name)
        elif entry.kind != "file":
            self._other(name, entry.kind)
        elif entry.problem is not None:
            code, what, expected, found = entry.problem
            self.findings.append(Finding(code, name, what, expected, found))
        else:
            return self._regular(name, entry)
        return True

    def _other(self, name: str, kind: str) -> None:
        if kind == "symlink":
            found = ("symlink", "symbolic link in the bundle", "a symlink")
        elif kind == "hard-link":
            found = ("hard-link", "hard link in the bundle", "a link to another member")
        else:
            found = ("special-file", "special file in the bundle", "a special file")
        code, what, shown = found
        self.findings.append(Finding(code, name, what, "a regular file", shown))

    def _regular(self, name: str, entry: Member) -> bool:
        self.sizes[name] = entry.size
        self.members[name] = entry
        self.total += entry.size
        if self.total > self.limits.max_total_bytes:
            self.findings.append(bytes_limit(self.total, self.limits))
            return False
        ratio = self.limits.max_archive_ratio
        if self.total > ratio * self.stored:
            self.findings.append(
                Finding(
                    "archive-total-ratio-limit",
                    ".",
                    "members declare more bytes per byte of the archive than the limit "
                    "max_archive_ratio: verify stopped scanning; "
                    + raise_hint("max_archive_ratio"),
                    f"<= {ratio} to 1",
                    f"{self.total} bytes or more from {self.stored}",
                )
            )
            return False
        return True

    def empty_directories(self) -> None:
        """Name each directory member that holds nothing, as the walk names one."""
        parents = {e.rpartition("/")[0] for e in self.entries}
        for name in sorted(self.directories - parents):
            self.findings.append(
                Finding(
                    "empty-directory",
                    name,
                    "empty directory in the bundle",
                    "no empty directory",
                    "an empty directory",
                )
            )


def scan_archive(
    path: Path, limits: Limits, findings: Findings
) -> tuple[Listing, ArchiveSource | None]:
    """List the packed bundle at ``path`` as :func:`~repro.verify._walk.scan_tree` lists a
    directory, each member's name checked and nothing extracted; and the source its files are
    read from (None when nothing can be: the archive is refused, its one finding says why).
    Raises :class:`BadInput` for a file that is not a zip or tar archive."""
    archive = _open(path)
    # The members' findings wait until the archive is known to read one way only.
    listed = _Members(limits, Findings(findings.cap), archive.size)
    try:
        complete = all(listed.add(member) for member in _members(archive, limits))
        if complete:
            listed.empty_directories()
            _read_through(archive, listed.members.values(), limits)
    except NotArchive as exc:
        archive.close()
        raise BadInput(
            f"{path}: not a bundle directory, nor a zip or tar archive of one ({exc})"
        ) from None
    except Refusal as refusal:
        archive.close()
        findings.append(refusal.finding)
        return Listing({}, frozenset(), stopped=True), None
    findings.extend(listed.findings)
    findings.dropped += listed.findings.dropped
    listing = Listing(dict(listed.sizes), frozenset(listed.entries), stopped=not complete)
    return listing, ArchiveSource(archive, listed.members)
