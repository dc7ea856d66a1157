"""Stage 1 for a packed bundle: a zip or tar archive of a bag in one top-level directory, as
BagIt serializes a bag (``repro pack`` writes one), listed and read in place, never extracted.

It gives what the tree walk gives, a :class:`~repro.verify.walk.Listing` and a
:class:`~repro.verify.walk.Source`, so that every later stage runs unchanged. What only an
archive can hold is a finding with its own code, and the member is not listed: a name outside
the top-level directory (``archive-outside-top``) or unsafe (``archive-name-unsafe``: absolute,
``..``, a backslash, a control character), a name given twice (``archive-name-repeated``) or
equal to another once case-folded and NFC-normalized (``archive-name-collision``), a member
compressed other than by deflate (``archive-member-method``: zipfile inflates the others without
a bound), one that declares more than ``max_compression_ratio`` bytes per stored byte
(``archive-ratio-limit``), or whose bytes overlap another's (``archive-overlap``, the shape of
a zip bomb that reuses one compressed stream). Links and special files are named as the walk
names them (``symlink``, ``hard-link``, ``special-file``), and so are an empty directory and the
limits on entries, bytes and depth.
"""

from __future__ import annotations

import os
import stat
import struct
import tarfile
import unicodedata
import weakref
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from attrs import frozen

from repro.errors import BadInput
from repro.verify.findings import Finding
from repro.verify.limits import Limits, raise_hint
from repro.verify.walk import Listing, bytes_limit, os_reason, unsafe_path

__all__ = ["ArchiveSource", "is_packed", "scan_archive"]

#: What zipfile, tarfile and zlib raise on an archive they cannot read; read as an OSError.
_ARCHIVE_ERRORS = (
    zipfile.BadZipFile,
    tarfile.TarError,
    zlib.error,
    struct.error,
    EOFError,
    ValueError,
    RuntimeError,
    NotImplementedError,
    KeyError,
    OverflowError,
)

#: Bytes tarfile may read for one member's headers (its pax header, a GNU long name, a sparse
#: map) before its data: far more than any bundle file needs, and the bound on what one header
#: makes tarfile hold.
_HEADER_BYTES = 1 << 20

#: A zip's end-of-central-directory record, and zip64's record and locator.
_EOCD = struct.Struct("<4s4H2LH")
_EOCD64 = struct.Struct("<4sQ2H2L4Q")
_EOCD64_LOCATOR = 20


class ArchiveError(OSError):
    """A member the archive library could not read: its reason, as an OSError's."""

    def __init__(self, reason: str) -> None:
        super().__init__(0, reason[:200])


def is_packed(path: Path) -> bool:
    """Whether ``path`` is a regular file (not a link to one): what can only be a packed
    bundle, where a bundle directory is expected."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except (OSError, ValueError):
        return False


class _Counted:
    """The archive file as tarfile reads it: the bytes read since the last seek are counted,
    and a member's headers past :data:`_HEADER_BYTES` are refused (tarfile seeks to each
    member, then reads its headers; member data is read later, a block at a time)."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.since_seek = 0

    def read(self, n: int = -1) -> bytes:
        if n < 0 or self.since_seek + n > _HEADER_BYTES + (1 << 16):
            raise ArchiveError(f"a header or read past {_HEADER_BYTES} bytes")
        data = self.raw.read(n)
        self.since_seek += len(data)
        return data

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        self.since_seek = 0
        return self.raw.seek(offset, whence)

    def tell(self) -> int:
        return self.raw.tell()


class _Member:
    """One member opened for reading: the size the archive declares, its bytes as the library
    gives them, any failure an :class:`ArchiveError`."""

    def __init__(self, stream: IO[bytes], size: int) -> None:
        self.stream = stream
        self.size = size

    def read(self, n: int) -> bytes:
        try:
            return self.stream.read(n)
        except _ARCHIVE_ERRORS as exc:
            raise ArchiveError(f"{type(exc).__name__}: {exc}") from None

    def close(self) -> None:
        self.stream.close()


class ArchiveSource:
    """The regular members of a packed bundle, by bundle name (below the top-level directory),
    read from the archive file held open since it was listed: a file renamed over it changes
    nothing, one changed in place is named by the reader's second read."""

    def __init__(self, archive: zipfile.ZipFile | tarfile.TarFile, members: dict[str, Any]):
        self.archive = archive
        self.members = members
        self.names = frozenset(members)

    def open(self, name: str) -> _Member:
        member = self.members[name]
        try:
            if isinstance(self.archive, zipfile.ZipFile):
                return _Member(self.archive.open(member), member.file_size)
            stream = self.archive.extractfile(member)
        except _ARCHIVE_ERRORS as exc:
            raise ArchiveError(f"{type(exc).__name__}: {exc}") from None
        if stream is None:  # not a regular member: never listed as one
            raise ArchiveError("not a regular member")
        return _Member(stream, member.size)


@frozen
class _Entry:
    """One member as the name rules see it: its name, kind ("file", "directory", "symlink",
    "hard-link", "special"), declared size and, for a zip, what the bomb rules need."""

    name: str
    kind: str
    size: int
    member: Any
    #: Why a regular member is not read: code, what, expected, found.
    problem: tuple[str, str, str, str] | None = None


def _zip_kind(info: zipfile.ZipInfo) -> str:
    mode = info.external_attr >> 16 if info.create_system == 3 else 0
    if stat.S_ISLNK(mode):
        return "symlink"
    if info.is_dir() or stat.S_ISDIR(mode):
        return "directory"
    if stat.S_IFMT(mode) not in (0, stat.S_IFREG):
        return "special"
    return "file"


def _tar_kind(info: tarfile.TarInfo) -> str:
    if info.issym():
        return "symlink"
    if info.islnk():
        return "hard-link"
    if info.isdir():
        return "directory"
    if info.isreg() and not info.issparse():
        return "file"
    return "special"


def _central_directory_bytes(fh: IO[bytes], size: int) -> int | None:
    """The size a zip's end record gives its central directory (found as zipfile finds it:
    the last end record, zip64's when there is one), or None when there is none."""
    tail = min(size, _EOCD.size + 0xFFFF)
    fh.seek(size - tail)
    data = fh.read(tail)
    at = data.rfind(b"PK\x05\x06")
    if at < 0 or at + _EOCD.size > len(data):
        return None
    cd_bytes: int = _EOCD.unpack_from(data, at)[5]
    locator = at - _EOCD64_LOCATOR
    if locator >= _EOCD64.size and data[locator : locator + 4] == b"PK\x06\x07":
        record = data[locator - _EOCD64.size : locator]
        if record[:4] == b"PK\x06\x06":
            cd_bytes = _EOCD64.unpack(record)[8]
    return cd_bytes


def _open_archive(
    path: Path, limits: Limits, findings: list[Finding]
) -> zipfile.ZipFile | tarfile.TarFile | None:
    """The zip or tar archive at ``path``, opened without following a symlink; None (named)
    when a zip's index is past the limit. Raises :class:`BadInput` for a file that is neither."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise BadInput(f"{path}: not a bundle directory ({os_reason(exc)})") from None
    fh = os.fdopen(fd, "rb")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BadInput(f"{path}: not a bundle directory")
        # A zip begins with a member's local header (or, empty, with its end record); any
        # other file is read as a tar, whose first header tarfile checks.
        is_zip = fh.read(4) in (b"PK\x03\x04", b"PK\x05\x06")
        cd_bytes = _central_directory_bytes(fh, info.st_size) if is_zip else None
        if is_zip and cd_bytes is None:
            raise zipfile.BadZipFile("no end of central directory record")
        if cd_bytes is not None and cd_bytes > limits.max_archive_index_bytes:
            findings.append(
                Finding(
                    "archive-index-limit",
                    ".",
                    "zip index larger than the limit max_archive_index_bytes: not read",
                    f"<= {limits.max_archive_index_bytes} bytes",
                    f"{cd_bytes} bytes",
                )
            )
            fh.close()
            return None
        fh.seek(0)
        archive: zipfile.ZipFile | tarfile.TarFile
        if cd_bytes is not None:
            archive = zipfile.ZipFile(fh)
        else:
            archive = tarfile.TarFile(fileobj=_Counted(fh))  # type: ignore[arg-type]
    except BadInput:
        fh.close()
        raise
    except (OSError, *_ARCHIVE_ERRORS) as exc:
        fh.close()
        raise BadInput(
            f"{path}: not a bundle directory, nor a zip or tar archive of one "
            f"({type(exc).__name__}: {str(exc)[:200]})"
        ) from None
    weakref.finalize(archive, fh.close)
    return archive


def _zip_entries(archive: zipfile.ZipFile, limits: Limits) -> Iterator[_Entry]:
    """Each member of the zip, with the finding of a bomb rule it breaks."""
    infos = archive.infolist()
    # Where each member's bytes lie, at the least: its local header and stored bytes. Two
    # members that overlap, or one that runs into the index, reuse bytes: a bomb's shape.
    spans = sorted(
        (i.header_offset, i.header_offset + 30 + len(_stored_name(i)) + i.compress_size)
        for i in infos
    )
    overlapping = {
        start for (start, _), (_, end) in zip(spans[1:], spans, strict=False) if start < end
    } | {start for start, end in spans if end > archive.start_dir}
    for info in infos:
        kind = _zip_kind(info)
        problem = None
        if kind == "file":
            problem = _zip_problem(info, info.header_offset in overlapping, limits)
        yield _Entry(info.orig_filename, kind, info.file_size, info, problem)


def _stored_name(info: zipfile.ZipInfo) -> bytes:
    """A member's name as the zip stores it: UTF-8 when its flag says so, else cp437."""
    encoding = "utf-8" if info.flag_bits & 0x800 else "cp437"
    return info.orig_filename.encode(encoding, "replace")


def _zip_problem(
    info: zipfile.ZipInfo, overlaps: bool, limits: Limits
) -> tuple[str, str, str, str] | None:
    """Why a regular member of a zip is not read (code, what, expected, found), or None."""
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        return (
            "archive-member-method",
            "member compressed other than by deflate: not inflated",
            "stored or deflated",
            f"compression method {info.compress_type}",
        )
    if info.file_size > limits.max_compression_ratio * max(info.compress_size, 1):
        return (
            "archive-ratio-limit",
            "member declares more bytes per stored byte than the limit max_compression_ratio: "
            "not inflated",
            f"<= {limits.max_compression_ratio} to 1",
            f"{info.file_size} bytes from {info.compress_size}",
        )
    if overlaps:
        return (
            "archive-overlap",
            "member's bytes overlap another member's or the index: not read",
            "members apart",
            f"stored at byte {info.header_offset}",
        )
    return None


def _tar_entries(archive: tarfile.TarFile, findings: list[Finding]) -> Iterator[_Entry]:
    """Each member of the tar, read one header at a time; a header tarfile cannot read is
    named and ends the listing."""
    while True:
        try:
            info = archive.next()
        except (OSError, *_ARCHIVE_ERRORS) as exc:
            findings.append(
                Finding(
                    "archive-unreadable",
                    ".",
                    "archive member header cannot be read: listing stopped",
                    "a tar header",
                    f"{type(exc).__name__}: {str(exc)[:200]}",
                )
            )
            return
        if info is None:
            return
        yield _Entry(info.name, _tar_kind(info), info.size, info)


def _fold(name: str) -> str:
    """The name as a case-insensitive, normalization-insensitive file system sees it."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", name).casefold())


class _Members:
    """One listing of an archive: what it has seen so far, and the findings it makes."""

    def __init__(self, limits: Limits, findings: list[Finding], stored: int) -> None:
        self.limits = limits
        self.findings = findings
        #: Bytes of the archive file: what the members' declared bytes are bounded by.
        self.stored = stored
        self.top: str | None = None
        self.count = 0
        self.total = 0
        self.sizes: dict[str, int] = {}
        self.members: dict[str, Any] = {}
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
        name = raw[:-1] if kind == "directory" and raw.endswith("/") else raw
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
        folded = _fold(name)
        earlier = self.folded.get(folded)
        if earlier is None:
            self.folded[folded] = name
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

    def add(self, entry: _Entry) -> bool:
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

    def _regular(self, name: str, entry: _Entry) -> bool:
        self.sizes[name] = entry.size
        self.members[name] = entry.member
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
    path: Path, limits: Limits, findings: list[Finding]
) -> tuple[Listing, ArchiveSource | None]:
    """List the packed bundle at ``path`` as :func:`~repro.verify.walk.scan_tree` lists a
    directory, each member's name checked and nothing extracted; and the source its files are
    read from (None when nothing can be). Raises :class:`BadInput` for a file that is not a zip
    or tar archive."""
    archive = _open_archive(path, limits, findings)
    if archive is None:
        return Listing({}, frozenset(), stopped=True), None
    members = _Members(limits, findings, os.lstat(path).st_size)
    try:
        entries = (
            _zip_entries(archive, limits)
            if isinstance(archive, zipfile.ZipFile)
            else _tar_entries(archive, findings)
        )
        complete = all(members.add(entry) for entry in entries)
    except _ARCHIVE_ERRORS as exc:
        findings.append(
            Finding(
                "archive-unreadable",
                ".",
                "archive cannot be listed",
                "a zip or tar archive",
                f"{type(exc).__name__}: {str(exc)[:200]}",
            )
        )
        complete = False
    if complete:
        members.empty_directories()
    listing = Listing(dict(members.sizes), frozenset(members.entries), stopped=not complete)
    return listing, ArchiveSource(archive, members.members)
