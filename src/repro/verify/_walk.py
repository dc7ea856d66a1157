"""Stage 1, the tree walk: list the bundle without following a symlink, within the limits, and
say whether the root is an unfinished study; open any file below the root the same way. What
the walk lists (a :class:`Listing`) and how files are opened (a :class:`Source`) are what a
packed bundle's reader (:mod:`~repro.verify._packed`) gives too: every later stage reads either
through them alone."""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from attrs import frozen

from repro._files import DIR_FLAGS, open_below
from repro._layout import TAG_FILES, TAGMANIFEST
from repro.verify._findings import INCOMPLETE, Finding
from repro.verify._limits import Limits

#: The temporary name BundleWriter writes a file under before renaming it into place.
_PARTIAL = re.compile(r"^\..+\.partial$")


#: What a root must hold at its top to be a bundle or an unfinished study: a tag file, or one
#: being written (a study writes bagit.txt before anything else).
STUDY_MARKS = frozenset({*TAG_FILES, *(f".{name}.partial" for name in TAG_FILES)})


def os_reason(exc: OSError) -> str:
    """What an OS error says, in a few words."""
    return exc.strerror or type(exc).__name__


def bytes_limit(total: int, limits: Limits) -> Finding:
    """The finding of a scan (of a tree or of an archive's members) past ``max_total_bytes``."""
    return Finding(
        "scan-bytes-limit",
        ".",
        "more bytes than the limit max_total_bytes: verify stopped scanning",
        f"<= {limits.max_total_bytes} bytes",
        f"{total} bytes so far",
    )


def folded(name: str) -> str:
    """The name as a case-insensitive, normalization-insensitive file system sees it: two names
    folded alike are one file there."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", name).casefold())


class NotRegularFile(Exception):
    """What a :class:`Source` raises for a name that is, when opened, not a regular file."""

    def __init__(self, found: str) -> None:
        super().__init__(found)
        #: What it is instead: "a directory" or "a special file".
        self.found = found


class Opened(Protocol):
    """A bundle file opened for reading: the size it says it has, its bytes in blocks."""

    @property
    def size(self) -> int:
        """Bytes the file says it holds when opened (it may hold others: read to see)."""

    def read(self, n: int) -> bytes:
        """At most ``n`` further bytes; empty at the end. Raises :class:`OSError`."""

    def close(self) -> None:
        """Let the file go."""


class Source(Protocol):
    """Where a bundle's files are read from: a directory, or a packed bundle."""

    @property
    def names(self) -> frozenset[str]:
        """The bundle name of every regular file the scan listed."""

    def open(self, name: str) -> Opened:
        """``name`` opened for reading. Raises :class:`NotRegularFile`, or :class:`OSError`."""


class _Descriptor:
    """A regular file below a bundle directory, open by its descriptor."""

    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd
        self.size = size

    def read(self, n: int) -> bytes:
        return os.read(self.fd, n)

    def close(self) -> None:
        os.close(self.fd)


class DirectorySource:
    """The files of a bundle directory, by bundle name: ``files`` maps each to its path below
    the root. Each is opened with :func:`open_below`, never following a symlink."""

    def __init__(self, files: Mapping[str, Path]) -> None:
        self.files = files
        self.names = frozenset(files)

    def open(self, name: str) -> _Descriptor:
        # The path is the root joined with the name: walk the name down from the root.
        fd = open_below(self.files[name].parents[name.count("/")], name)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                # O_NOFOLLOW refused a symlink already: a directory or a special file.
                found = "a directory" if stat.S_ISDIR(info.st_mode) else "a special file"
                raise NotRegularFile(found)
        except BaseException:
            os.close(fd)
            raise
        return _Descriptor(fd, info.st_size)


@frozen
class Listing:
    """What the scan saw: regular files by bundle name (``/``-separated) with their sizes, every
    entry's name, and whether a limit stopped it (then the listing is partial)."""

    sizes: dict[str, int]
    entries: frozenset[str]
    stopped: bool


class _Walk:
    """One scan of a tree: what it has seen so far, and the findings it makes."""

    def __init__(self, limits: Limits, findings: list[Finding]) -> None:
        self.limits = limits
        self.findings = findings
        self.sizes: dict[str, int] = {}
        self.entries: set[str] = set()
        self.total = 0

    def _entries_limit(self) -> Finding:
        limit = self.limits.max_files
        return Finding(
            "scan-entries-limit",
            ".",
            "more entries than the limit max_files: verify stopped scanning",
            f"<= {limit} entries",
            f"more than {limit}",
        )

    def listed(self, fd: int, prefix: str) -> list[tuple[str, os.stat_result]] | bool:
        """The entries of the open directory ``fd`` with their ``lstat``; else whether the scan
        goes on: False when the limit on entries stops it, True past a directory that cannot be
        listed (each named)."""
        listed: list[tuple[str, os.stat_result]] = []
        try:
            with os.scandir(fd) as it:
                for entry in it:
                    if len(self.entries) >= self.limits.max_files:
                        self.findings.append(self._entries_limit())
                        return False
                    rel = prefix + entry.name
                    self.entries.add(rel)
                    try:
                        listed.append((entry.name, entry.stat(follow_symlinks=False)))
                    except OSError as exc:
                        self.findings.append(
                            Finding("cannot-stat", rel, "cannot stat", "an entry", os_reason(exc))
                        )
        except OSError as exc:
            self.findings.append(
                Finding(
                    "cannot-list-directory",
                    prefix or ".",
                    "cannot list directory",
                    "readable",
                    os_reason(exc),
                )
            )
            return True
        return listed

    def regular(self, rel: str, st: os.stat_result) -> bool:
        """Count a regular file; False when the bytes seen pass the limit (named)."""
        self.sizes[rel] = st.st_size
        self.total += st.st_size
        if st.st_nlink > 1:
            # The same bytes are reachable, and changeable, through a path outside the bag.
            self.findings.append(
                Finding(
                    "hard-link", rel, "hard link in the bundle", "1 link", f"{st.st_nlink} links"
                )
            )
        if self.total > self.limits.max_total_bytes:
            self.findings.append(bytes_limit(self.total, self.limits))
            return False
        return True

    def other(self, rel: str, mode: int, depth: int) -> bool:
        """Whether ``rel``, neither a regular file nor undecodable, is a directory to enter;
        anything else (a link, a special file, a directory past the depth limit) is named."""
        if stat.S_ISLNK(mode):
            what, expected, found = "symbolic link in the bundle", "a regular file", "a symlink"
            self.findings.append(Finding("symlink", rel, what, expected, found))
        elif not stat.S_ISDIR(mode):
            what, expected, found = "special file in the bundle", "a regular file", "a special file"
            self.findings.append(Finding("special-file", rel, what, expected, found))
        elif depth + 1 > self.limits.max_depth:
            self.findings.append(
                Finding(
                    "depth-limit",
                    rel,
                    "directory nested deeper than the limit max_depth: not read",
                    f"<= {self.limits.max_depth} levels",
                    f"{depth + 1} levels",
                )
            )
        else:
            return True
        return False

    def walk(self, fd: int, prefix: str, depth: int) -> bool:
        """List the directory ``fd`` (named ``prefix``), then enter its subdirectories; False
        when a limit stopped the scan."""
        listed = self.listed(fd, prefix)
        if isinstance(listed, bool):
            return listed
        if not listed and prefix:
            # A study writes no empty directory; BagIt tools that compare trees see one.
            self.findings.append(
                Finding(
                    "empty-directory",
                    prefix.rstrip("/"),
                    "empty directory in the bundle",
                    "no empty directory",
                    "an empty directory",
                )
            )
        subdirectories = []
        for name, st in sorted(listed, key=lambda pair: pair[0]):
            rel = prefix + name
            if not _utf8(name):
                self.findings.append(
                    Finding(
                        "name-not-utf8",
                        rel.encode("utf-8", "backslashreplace").decode(),
                        "name is not UTF-8",
                        "a bundle name",
                        "undecodable bytes",
                    )
                )
            elif stat.S_ISREG(st.st_mode):
                if not self.regular(rel, st):
                    return False
            elif self.other(rel, st.st_mode, depth):
                subdirectories.append(name)
        return all(self.enter(fd, prefix, name, depth) for name in subdirectories)

    def enter(self, fd: int, prefix: str, name: str, depth: int) -> bool:
        """Walk the subdirectory ``name`` of ``fd``, opened without following a link; False
        when a limit stopped the scan."""
        try:
            child = os.open(name, DIR_FLAGS, dir_fd=fd)
        except OSError as exc:
            self.findings.append(
                Finding(
                    "cannot-open-directory",
                    prefix + name,
                    "cannot open directory",
                    "readable",
                    os_reason(exc),
                )
            )
            return True
        try:
            return self.walk(child, f"{prefix}{name}/", depth + 1)
        finally:
            os.close(child)


def scan_tree(root: Path, limits: Limits, findings: list[Finding]) -> Listing:
    """List the tree below ``root`` without following a symlink: each directory is opened by name
    relative to its parent's descriptor with ``O_NOFOLLOW``. A directory's entries are all listed
    before its subdirectories are entered, so the root's tag files are seen first."""
    try:
        fd = os.open(root, DIR_FLAGS)
    except OSError as exc:
        findings.append(
            Finding(
                "cannot-open-root",
                ".",
                "cannot open the bundle directory",
                "readable",
                os_reason(exc),
            )
        )
        return Listing({}, frozenset(), stopped=True)
    scan = _Walk(limits, findings)
    try:
        complete = scan.walk(fd, "", 0)
    finally:
        os.close(fd)
    return Listing(scan.sizes, frozenset(scan.entries), stopped=not complete)


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def unfinished(listing: Listing) -> list[Finding]:
    """The finding that the root is an unfinished study, or none. BundleWriter writes the tag
    manifest last, so a root without one was never finished; the temporary files a killed writer
    leaves are named as further evidence. Beside a tag manifest, a partial file cannot come from
    the study that wrote the root: it is an added file like any other."""
    if TAGMANIFEST in listing.entries:
        return []
    partial = sorted(n for n in listing.sizes if _PARTIAL.match(n.rsplit("/", 1)[-1]))
    why = f"no {TAGMANIFEST}"
    if partial:
        shown = ", ".join(partial[:5]) + (", ..." if len(partial) > 5 else "")
        why += f"; {len(partial)} partial file(s): {shown}"
    return [
        Finding(
            "incomplete",
            TAGMANIFEST,
            f"{INCOMPLETE} the study that wrote this root did not finish: {why}",
            "the tag manifest, written last by a finished study",
            "missing",
        )
    ]
