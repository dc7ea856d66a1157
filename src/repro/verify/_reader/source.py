"""The byte source of the strict reader: where a bundle file's bytes come from (a bundle
directory, a packed bundle), each file read once in blocks to be hashed and scanned, held or read
again (and checked against the first read) where it is parsed, never past the limits; every read
problem is a finding."""

from __future__ import annotations

import hashlib
from collections.abc import Generator, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from attrs import frozen

from repro import _layout as layout
from repro._disclosure import FileHits, Scanner
from repro._layout import FIXED_PAYLOAD, TAG_FILES
from repro.verify._findings import Finding, Findings
from repro.verify._limits import Limits
from repro.verify._parallel import Jobs
from repro.verify._walk import DirectorySource, NotRegularFile, Opened, Source, os_reason

#: Files kept in memory once read: the tag files, and the payload files whose size does not grow
#: with the plan. Every other file (partitions, runs, anything added) is read in blocks, hashed
#: and scanned, and read again when it is parsed, so that what verify holds does not grow with the
#: number of runs.
_HELD = frozenset({*TAG_FILES, *FIXED_PAYLOAD, layout.SEAL})


#: Bytes read at a time: a few copies of a block are what reading holds besides the models.
_BLOCK = 1 << 16


@frozen
class Reads:
    """What a reader does with each file it reads: ``held``, the files it keeps whole once read
    (each bounded by ``max_held_file_bytes``, the others read again where they are parsed), the
    digests it takes of every file besides sha256 (``algorithms``, hashlib's names), and whether
    it scans every file for disclosures (a bundle's files, which its disclosure tier judges)."""

    held: frozenset[str] = _HELD
    algorithms: frozenset[str] = frozenset()
    scan: bool = True


@frozen
class Seen:
    """What the first read of a file found: its sha256 and size, whether it ends with a newline,
    the disclosure hits in it, and its digests by the reader's further algorithms."""

    sha256: str
    size: int
    final_newline: bool
    disclosures: FileHits
    digests: dict[str, str]


class _FirstRead:
    """A file's first read as it goes: its size when opened, the bytes it may have, what was
    read, its digests and disclosure scan (None: not scanned), and the blocks kept of a held
    file."""

    def __init__(
        self, size: int, allowed: int, scanner: Scanner | None, algorithms: frozenset[str]
    ) -> None:
        self.size = size
        self.allowed = allowed
        self.scanner = scanner
        self.count = 0
        self.digest = hashlib.sha256()
        self.others = {name: hashlib.new(name) for name in sorted(algorithms)}
        self.kept: list[bytes] = []
        self.final_newline = True

    def feed(self, block: bytes, held: bool) -> None:
        """Take the next block read."""
        self.count += len(block)
        self.digest.update(block)
        for other in self.others.values():
            other.update(block)
        if held:
            self.kept.append(block)
        if self.scanner is not None:
            self.scanner.feed(block)
        self.final_newline = block.endswith(b"\n")

    def seen(self, name: str) -> Seen:
        """What the read found, once it has read the whole file."""
        hits = FileHits(name, (), 0) if self.scanner is None else self.scanner.finish()
        digests = {algorithm: h.hexdigest() for algorithm, h in self.others.items()}
        return Seen(self.digest.hexdigest(), self.count, self.final_newline, hits, digests)


class ByteSource:
    """Reads bundle files' bytes: ``files`` maps each bundle name to its path below the bundle
    root, or is a packed bundle's :class:`Source`. Files are read without following a symlink,
    and never past the ``limits``; every read problem is a finding.

    Each file's first read hashes and scans it; the tag files and the fixed payload files are
    held from then on, every other file is read again, checked against its first read, where it
    is parsed (:class:`repro.verify._reader.BundleReader` parses them).
    """

    def __init__(
        self,
        files: Mapping[str, Path] | Source,
        findings: list[Finding],
        limits: Limits = Limits(),
        reads: Reads = Reads(),
    ) -> None:
        #: Where the files are read from: a bundle directory's files, or a packed bundle's.
        self.source: Source = DirectorySource(files) if isinstance(files, Mapping) else files
        self.findings = findings
        self.limits = limits
        self.reads = reads
        self._seen: dict[str, Seen | None] = {}
        self._held: dict[str, bytes] = {}
        #: Where findings about a file's content go: ``findings``, or nowhere while files are
        #: read again whose content was reported already (see :meth:`repeating`).
        self._notes = findings
        #: Bytes still allowed to be read under ``limits.max_total_bytes`` (a job's reader is
        #: given what the verifier's has left, and the verifier's spends what a job's read).
        self.budget = limits.max_total_bytes
        #: First reads done ahead by :meth:`prefetch`, each taken when its file is first read:
        #: what it found, and the size (the larger of its size when opened and the bytes read)
        #: the read must be allowed for the result to be the one reading now would give.
        self._prefetched: dict[str, tuple[Seen, int]] = {}

    @property
    def first_reads(self) -> Mapping[str, Seen | None]:
        """What each file's first read found, by name, of the files read so far (None: the
        read failed, and was named)."""
        return self._seen

    def adopt(self, seen: Mapping[str, Seen | None]) -> None:
        """Take first reads another reader of the same files made (a job's, or the verifier's
        for a job) as this reader's own, where it has not read the file itself."""
        for name, found in seen.items():
            self._seen.setdefault(name, found)

    def note(self, finding: Finding) -> None:
        """Name a finding about a file's content: in ``findings``, unless the file is being read
        again whose content was reported already (:meth:`repeating`)."""
        self._notes.append(finding)

    @property
    def files(self) -> frozenset[str]:
        """The name of every file there is to read."""
        return self.source.names

    def _first(self, name: str) -> Seen | None:
        """What the first read of the file found, reading it now if it was not read yet; None
        (with a finding, made once) when missing, unreadable or past a limit."""
        if name not in self._seen:
            self._seen[name] = self.read_first(name)
        return self._seen[name]

    def sha256(self, name: str) -> str | None:
        """The sha256 of the file's bytes, from its first read."""
        seen = self._first(name)
        return seen.sha256 if seen is not None else None

    def digest(self, name: str, algorithm: str) -> str | None:
        """The file's digest by ``algorithm`` (sha256, or one of the reader's further
        algorithms), in lowercase hex, from its first read."""
        seen = self._first(name)
        if seen is None:
            return None
        return seen.sha256 if algorithm == "sha256" else seen.digests[algorithm]

    def size(self, name: str) -> int | None:
        """The file's size in bytes, from its first read."""
        seen = self._first(name)
        return seen.size if seen is not None else None

    def disclosures(self, name: str) -> FileHits | None:
        """The disclosure hits in the file's bytes, from its first read."""
        seen = self._first(name)
        return seen.disclosures if seen is not None else None

    def raw(self, name: str) -> bytes | None:
        """The file's bytes: read once for a held file, read again (and checked against the
        first read) for any other; None when missing, unreadable or past a limit."""
        if self._first(name) is None:
            return None
        if name in self.reads.held:
            return self._held[name]
        return b"".join(self._again(name))

    def blocks(self, name: str) -> Iterator[bytes]:
        """The file's bytes in blocks, read again and checked against the first read (a change
        is named once they are all read); nothing when it is missing, unreadable or past a
        limit (named)."""
        if self._first(name) is None:
            return iter(())
        if name in self.reads.held:
            return iter((self._held[name],))
        return self._again(name)

    def head(self, name: str, size: int) -> bytes | None:
        """At most the first ``size`` bytes of the file (read again, a block or so, and not
        checked against the first read: the whole file's bytes are); None when missing,
        unreadable or past a limit."""
        if self._first(name) is None:
            return None
        if name in self.reads.held:
            return self._held[name][:size]
        kept = b""
        blocks = self._again(name)
        try:
            for block in blocks:
                kept += block
                if len(kept) >= size:
                    break
        finally:
            blocks.close()
        return kept[:size]

    def read_first(self, name: str) -> Seen | None:
        """Read a file for the first time: hash and scan it in blocks, keep it if it is held;
        None (named) when missing, unreadable or past a limit. (:meth:`_first` reads each file
        so once; tests change a file right after it.)"""
        if name not in self.source.names:
            self.findings.append(
                Finding(
                    "file-missing", name, "expected bundle file is missing", "present", "missing"
                )
            )
            return None
        ahead = self._prefetched.pop(name, None)
        if ahead is not None and ahead[1] <= self._allowed(name):
            # Read whole within what this read may read: the bytes it would read now.
            self.budget -= ahead[0].size
            return ahead[0]
        try:
            opened = self.source.open(name)
            try:
                first = self._read_open(name, opened)
            finally:
                opened.close()
        except NotRegularFile as exc:
            what = "not a regular file when read"
            self.findings.append(
                Finding("not-regular-file", name, what, "a regular file", exc.found)
            )
            return None
        except OSError as exc:
            self.findings.append(
                Finding(
                    "cannot-read", name, "cannot read", "a readable regular file", os_reason(exc)
                )
            )
            return None
        self.budget -= first.count
        size = max(first.size, first.count)
        if size <= first.allowed:
            if name in self.reads.held:
                self._held[name] = b"".join(first.kept)
            return first.seen(name)
        self.findings.append(self._over_limit(name, size, first.count))
        return None

    def _read_open(self, name: str, opened: Opened) -> _FirstRead:
        """Read the open file in blocks, hashing and scanning them (and keeping them, for a held
        file), unless its size is past what it may be."""
        held = name in self.reads.held
        allowed = self._allowed(name)
        scanner = Scanner(name) if self.reads.scan else None
        first = _FirstRead(opened.size, allowed, scanner, self.reads.algorithms)
        if opened.size > allowed:
            return first
        # One byte past what is allowed is read to see a file that grew since its fstat. The
        # scanner carries only a short tail between blocks: what it holds does not grow with the
        # file, nor with a line however long.
        while first.count <= allowed:
            block = opened.read(min(allowed + 1 - first.count, _BLOCK))
            if not block:
                break
            first.feed(block, held)
        return first

    def _allowed(self, name: str) -> int:
        """Bytes the first read of ``name`` may read now."""
        return min(
            self.limits.max_held_file_bytes
            if name in self.reads.held
            else self.limits.max_file_bytes,
            self.limits.max_file_bytes,
            self.budget,
        )

    def prefetch(self, jobs: Jobs, sizes: Mapping[str, int]) -> None:
        """Read ahead the files ``sizes`` lists (those not held: their bytes are not kept), as
        many at a time as ``jobs`` runs, hashing and scanning each, so that their first reads
        later take what was found instead of reading. A result is taken only where the read it
        stands for may read the whole file then (otherwise the file is read again then, and
        named as that read finds it); one that failed is not kept, and the file is read then,
        and named."""
        if not jobs.processes:
            return
        wanted = sorted(
            (n for n in set(sizes) - self.reads.held - set(self._seen) if n in self.source.names),
            key=lambda n: (-sizes[n], n),
        )
        context = (self.source, self.limits, self.reads)
        # Taken as they end: a file as large as the rest together (a crate of many runs) then
        # holds up only the worker reading it.
        for _, done in jobs.unordered(_read_ahead, context, _batches(wanted, sizes)):
            for name, got in done:
                if got is not None:
                    self._prefetched[name] = got

    def _over_limit(self, name: str, size: int, count: int) -> Finding:
        """The finding for a file of ``size`` bytes (``count`` of them read) that is past the
        limit it is read under."""
        limits = self.limits
        if name in self.reads.held and size > limits.max_held_file_bytes:
            return Finding(
                "held-file-bytes-limit",
                name,
                "file larger than the limit max_held_file_bytes: not read",
                f"<= {limits.max_held_file_bytes} bytes",
                f"{size} bytes",
            )
        if size > limits.max_file_bytes:
            return Finding(
                "file-bytes-limit",
                name,
                "file larger than the limit max_file_bytes: not read",
                f"<= {limits.max_file_bytes} bytes",
                f"{size} bytes",
            )
        return Finding(
            "total-bytes-limit",
            name,
            "reading it would pass the limit max_total_bytes: not read",
            f"<= {limits.max_total_bytes} bytes in all",
            f"{limits.max_total_bytes - self.budget - count + size} bytes",
        )

    def _again(self, name: str) -> Generator[bytes]:
        """The bytes of a file read before, read again in blocks; a file that is no longer
        what the first read saw is named once they are all read."""
        seen = self._seen[name]
        assert seen is not None, "only a file whose first read succeeded is read again"
        digest = hashlib.sha256()
        count = 0
        try:
            opened = self.source.open(name)
            try:
                while count <= seen.size:
                    block = opened.read(min(seen.size + 1 - count, _BLOCK))
                    if not block:
                        break
                    count += len(block)
                    digest.update(block)
                    yield block
            finally:
                opened.close()
        except NotRegularFile as exc:
            what = "not a regular file when read again"
            self.findings.append(
                Finding("not-regular-file", name, what, "a regular file", exc.found)
            )
            return
        except OSError as exc:
            self.findings.append(
                Finding(
                    "cannot-read-again",
                    name,
                    "cannot read again",
                    "a readable regular file",
                    os_reason(exc),
                )
            )
            return
        if (count, digest.hexdigest()) != (seen.size, seen.sha256):
            self.findings.append(
                Finding(
                    "changed-while-read",
                    name,
                    "changed while verify read it",
                    f"sha256 {seen.sha256} ({seen.size} bytes) as first read",
                    f"sha256 {digest.hexdigest()} ({count} bytes or more)",
                )
            )

    @contextmanager
    def repeating(self) -> Iterator[None]:
        """Read again files whose content was reported already: findings about their content
        are not made twice, while a file that changed since, or can no longer be read, is still
        named."""
        notes, self._notes = self._notes, Findings(0)
        try:
            yield
        finally:
            self._notes = notes


#: Files one read-ahead job takes at most, and the bytes past which it takes no more: a job is a
#: round trip to a worker, which a bag of many small files would pay for each (a bag of 99,000
#: files of a few bytes took 45 s with a job a file, 11 s of it in this process alone).
_BATCH_FILES = 64
_BATCH_BYTES = 1 << 20


def _batches(names: Iterable[str], sizes: Mapping[str, int]) -> Iterator[tuple[str, ...]]:
    """``names`` in consecutive groups of at most :data:`_BATCH_FILES`, each ended by the first
    name that brings their sizes to :data:`_BATCH_BYTES` (so a large file goes alone)."""
    batch: list[str] = []
    size = 0
    for name in names:
        batch.append(name)
        size += sizes[name]
        if len(batch) == _BATCH_FILES or size >= _BATCH_BYTES:
            yield tuple(batch)
            batch, size = [], 0
    if batch:
        yield tuple(batch)


def _read_ahead(
    context: tuple[Source, Limits, Reads], names: tuple[str, ...]
) -> list[tuple[str, tuple[Seen, int] | None]]:
    """A job (:mod:`repro.verify._parallel`): each file of ``names`` with its first read as a
    reader with the whole byte budget makes it (:func:`_read_one_ahead`)."""
    return [(name, _read_one_ahead(context, name)) for name in names]


def _read_one_ahead(context: tuple[Source, Limits, Reads], name: str) -> tuple[Seen, int] | None:
    """The first read of ``name`` as a reader with the whole byte budget makes it, and the size
    the read must be allowed for; None when it did not read the whole file (the reader that
    takes it then reads it, and names what it finds)."""
    source, limits, reads = context
    reader = ByteSource(source, Findings(limits.max_findings), limits, reads)
    try:
        opened = source.open(name)
        try:
            first = reader._read_open(name, opened)
        finally:
            opened.close()
    except (NotRegularFile, OSError):
        return None
    size = max(first.size, first.count)
    if size > first.allowed:
        return None
    return first.seen(name), size
