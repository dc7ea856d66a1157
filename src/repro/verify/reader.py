"""The strict reader of bundle files: each file read once in blocks to be hashed and scanned,
held or read again where it is parsed (canonical JSON, schema, model), run records one line at
a time, never past the limits; every read problem is a finding."""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import types
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, cast, get_args, get_origin, get_type_hints

import attrs
import orjson
from attrs import frozen

from repro import layout
from repro.disclosure import FileHits, Scanner
from repro.errors import BadInput
from repro.json import canonical, schemas
from repro.json.serde import structure, to_bytes
from repro.layout import FIXED_PAYLOAD, TAG_FILES
from repro.models import (
    MAX_RECORD_VALUES,
    AttemptTimes,
    Partition,
    PlanEntry,
    RunRecord,
)
from repro.verify.findings import MAX_DIFFS, Finding, Findings, Location
from repro.verify.limits import Limits
from repro.verify.parallel import Jobs
from repro.verify.walk import DirectorySource, NotRegularFile, Opened, Source, os_reason

T = TypeVar("T")


@functools.cache
def _validator(kind: str) -> Any:
    # Imported here: only a value the model refuses is ever checked against its schema.
    import jsonschema

    return jsonschema.Draft202012Validator(schemas.load(kind))


#: Files kept in memory once read: the tag files, and the payload files whose size does not grow
#: with the plan. Every other file (partitions, runs, anything added) is read in blocks, hashed
#: and scanned, and read again when it is parsed, so that what verify holds does not grow with the
#: number of runs.
_HELD = frozenset({*TAG_FILES, *FIXED_PAYLOAD, layout.SEAL})


#: Bytes read at a time: a few copies of a block are what reading holds besides the models.
_BLOCK = 1 << 16


#: How deep a run record nests at most: an object holding an array of numbers. Where the limit on
#: JSON nesting is lower, only the strict reader can name the refusal.
_RUN_RECORD_DEPTH = 2


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
class _Seen:
    """What the first read of a file found: its sha256 and size, whether it ends with a newline,
    the disclosure hits in it, and its digests by the reader's further algorithms."""

    sha256: str
    size: int
    final_newline: bool
    disclosures: FileHits
    digests: dict[str, str]


def bounded_chunks(blocks: Iterable[bytes], limit: int) -> Iterator[bytes | int]:
    """The bytes of ``blocks`` cut after newlines: every chunk but the last ends with one, and
    none holds part of a line whose rest is in another. A line that grows past ``limit`` bytes
    is not held: its length comes instead of it, as an ``int``, once it has ended."""
    pending: list[bytes] = []
    held = 0
    skipped: int | None = None
    for block in blocks:
        cut = block.rfind(b"\n") + 1
        if not cut:
            if skipped is not None:
                skipped += len(block)
                continue
            pending.append(block)
            held += len(block)
            if held > limit:
                skipped, pending = held, []
            continue
        if skipped is not None:
            first = block.find(b"\n") + 1
            yield skipped + first
            skipped = None
            if first < cut:
                yield block[first:cut]
        else:
            yield b"".join([*pending, block[:cut]])
        pending = [block[cut:]] if cut < len(block) else []
        held = len(block) - cut
    if skipped is not None:
        yield skipped
    elif pending:
        yield b"".join(pending)


def _json_types(hint: Any) -> tuple[type, ...]:
    """The exact Python types of the JSON values that a field of type ``hint`` is written as:
    a string for a Literal of strings, a list for a tuple, None for an optional field."""
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return tuple(t for arg in get_args(hint) for t in _json_types(arg))
    if origin is Literal:
        return tuple(dict.fromkeys(type(arg) for arg in get_args(hint)))
    if origin is tuple:
        return (list,)
    if hint in (str, int, float, type(None)):
        return (hint,)
    raise TypeError(f"no JSON type for a model field of type {hint!r}")


def _shapes(cls: type) -> tuple[tuple[str, ...], frozenset[tuple[type, ...]]]:
    """The keys a canonical object of the model ``cls`` always holds (the fields written even
    when they hold their default), in sorted order, and every combination of value types, key by
    key, that it can hold under them: one set lookup checks them all. Derived from the model, so
    the shape is defined there alone. Exact types, as the strict converter's: a boolean is not
    an integer. Narrower than the converter where it converts: an integer where a float is
    expected becomes a float, which is written back with a fraction, so such a value is not
    canonical."""
    hints = get_type_hints(cls)
    kinds = {
        f.name: _json_types(hints[f.name])
        for f in attrs.fields(cls)
        if not f.metadata.get("omit_if_default")
    }
    keys = tuple(sorted(kinds))
    return keys, frozenset(itertools.product(*(kinds[k] for k in keys)))


#: The keys of a run line and the types of their values (see :func:`_shapes`).
_RUN_LINE_KEYS, _RUN_LINE_SHAPES = _shapes(RunRecord)


_STATUSES = frozenset(get_args(get_type_hints(RunRecord)["status"]))


#: Integers past 53 bits are refused, which leaves every one past 64 bits, which orjson would
#: write but the strict reader refuses, to the strict way. orjson writes a non-finite float as
#: null, which no parsed line holds in its place.
_RUN_LINE_DUMP = orjson.OPT_SORT_KEYS | orjson.OPT_STRICT_INTEGER


def _canonical_object(line: bytes) -> dict[str, Any] | None:
    """The JSON object ``line`` holds, when ``line`` is exactly its canonical bytes (and a
    newline); None otherwise. The quick readers of lines start here."""
    try:
        raw = orjson.loads(line)
        if orjson.dumps(raw, option=_RUN_LINE_DUMP) + b"\n" != line:
            return None
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return None
    return raw if type(raw) is dict else None


def _canonical_document(data: bytes) -> dict[str, Any] | None:
    """:func:`_canonical_object` for a whole file, parsed by the standard library's parser
    without the strict reader's hooks: orjson holds some sixteen times its input while it
    parses, three times what this parser does, and a file is read whole. The comparison with
    the canonical bytes leaves out all the strict reader would refuse, as for a line: a
    duplicate key, NaN or Infinity (which this parser reads), a number out of range, a lone
    surrogate (which orjson refuses to write)."""
    try:
        raw = json.loads(data.decode())
        if orjson.dumps(raw, option=_RUN_LINE_DUMP) + b"\n" != data:
            return None
    except (ValueError, RecursionError, orjson.JSONEncodeError):  # not UTF-8, not JSON
        return None
    return raw if type(raw) is dict else None


def canonical_record(line: bytes) -> RunRecord | None:
    """The run record whose canonical bytes are exactly ``line``, or None for any other line.

    A line that is its own record's canonical form is one the strict reader accepts as that
    record: it holds no duplicate key, no NaN, no lone surrogate and no number out of range,
    because the canonical writer writes none; and the schema accepts whatever the model does (it
    is generated from it). So this quick way, with orjson, gives the strict reader's answer for
    every line it accepts; a line it does not accept goes the strict way to be named. (Only for
    lines: orjson's parser holds some sixteen times its input while it parses, which is nothing
    for a record and too much for a whole partition.)

    The parsed line is checked as the strict converter would check it, without the converter,
    which costs most of a record's reading: the keys are the record's fields (in sorted order, as
    the line is canonical), each value has a type the field takes, the status is one
    the model names and the step rewards are floats. The record is built from the checked
    values, its validators run.
    """
    raw = _canonical_object(line)
    if (
        raw is None
        or tuple(raw) != _RUN_LINE_KEYS
        or tuple(map(type, raw.values())) not in _RUN_LINE_SHAPES
        or raw["status"] not in _STATUSES
    ):
        return None
    rewards = raw["step_rewards"]
    if rewards is not None:
        if not set(map(type, rewards)) <= {float}:
            return None
        raw["step_rewards"] = tuple(rewards)
    try:
        return RunRecord(**raw)
    except ValueError:  # a validator's refusal (FieldError): the strict way names it
        return None


_TIMES_KEYS = ("attempt_id", "finished_utc", "started_utc")
#: The type of each of them (one C pass checks all three: verify reads each line twice).
_TIMES_TYPES = (str, str, str)


def _canonical_times(line: bytes) -> AttemptTimes | None:
    """The attempt times whose canonical bytes are exactly ``line`` (three strings), or None for
    any other line, which the strict way then names: the quick way of :func:`canonical_record`
    for the times files. (A line with lost session opens, which is rare, goes the strict way.)"""
    raw = _canonical_object(line)
    if raw is None or tuple(raw) != _TIMES_KEYS or tuple(map(type, raw.values())) != _TIMES_TYPES:
        return None
    try:
        return AttemptTimes(**raw)
    except ValueError:
        return None


_PARTITION_KEYS, _PARTITION_SHAPES = _shapes(Partition)
_PARTITION_SCHEMAS = frozenset(get_args(get_type_hints(Partition)["schema"]))
_ENTRY_KEYS, _ENTRY_SHAPES = _shapes(PlanEntry)
_ENTRY_KEY_SET = frozenset(_ENTRY_KEYS)
#: The same for each of a partition's entries, key by key (the shapes are every combination of
#: them): the types each key's value may have. Checked without a tuple per entry, of which
#: CPython would keep two thousand, unused, in its free list of tuples of that size for as long
#: as verify runs.
_ENTRY_KINDS = tuple(frozenset(kinds) for kinds in zip(*_ENTRY_SHAPES, strict=True))


def canonical_partition(data: bytes) -> Partition | None:
    """The partition whose canonical bytes are exactly ``data``, or None for any other bytes:
    the quick way of :func:`canonical_record` for a plans/<partition>.json, whose strict reading
    (the strict parser's hooks and the converter, an entry at a time) costs several times what
    :func:`_canonical_document` and these checks do. The parsed object and each of its entries
    are checked as the strict converter would check them (the keys are the fields, each value
    has a type the field takes, the schema is the model's), and the partition is built of the
    checked values."""
    raw = _canonical_document(data)
    if (
        raw is None
        or tuple(raw) != _PARTITION_KEYS
        or tuple(map(type, raw.values())) not in _PARTITION_SHAPES
        or raw["schema"] not in _PARTITION_SCHEMAS
    ):
        return None
    entries = raw["entries"]
    for index, entry in enumerate(entries):
        if (
            type(entry) is not dict
            # (In sorted order, as the file is canonical.)
            or entry.keys() != _ENTRY_KEY_SET
            or not all(map(frozenset.__contains__, _ENTRY_KINDS, map(type, entry.values())))
        ):
            return None
        # Each parsed entry is let go as its model takes its place: what is held at once is
        # the partition once, not twice.
        entries[index] = PlanEntry(**entry)
    raw["entries"] = tuple(entries)
    return Partition(**raw)


#: The models read a quick way where the limits allow it (:meth:`BundleReader.json`): each
#: model's reader of canonical bytes, and the JSON nesting its files need.
_QUICK_MODELS: dict[type, tuple[Callable[[bytes], Any], int]] = {
    Partition: (canonical_partition, 3)
}


def _times_id(line: bytes) -> str | None:
    """The attempt ID of a line of a times file that is canonical and holds three strings
    under the times' keys, or None for any other line (which then goes the strict way): for
    reading again a file whose lines were each parsed strictly already (the times' formats are
    not checked again; a file that changed since is named as changed)."""
    raw = _canonical_object(line)
    if raw is None or tuple(raw) != _TIMES_KEYS or tuple(map(type, raw.values())) != _TIMES_TYPES:
        return None
    return raw["attempt_id"]  # type: ignore[no-any-return]


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

    def seen(self, name: str) -> _Seen:
        """What the read found, once it has read the whole file."""
        hits = FileHits(name, (), 0) if self.scanner is None else self.scanner.finish()
        digests = {algorithm: h.hexdigest() for algorithm, h in self.others.items()}
        return _Seen(self.digest.hexdigest(), self.count, self.final_newline, hits, digests)


class BundleReader:
    """Reads bundle files strictly: canonical JSON, schema, model. ``files`` maps each bundle
    name to its path below the bundle root, or is a packed bundle's :class:`Source`. Files are
    read without following a symlink, and never past the ``limits``; every read problem is a
    finding.

    Each file's first read hashes and scans it; the tag files and the fixed payload files are
    held from then on, every other file is read again, checked against its first read, where it
    is parsed. Run records are parsed one line at a time.
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
        self._seen: dict[str, _Seen | None] = {}
        self._held: dict[str, bytes] = {}
        #: Where findings about a file's content go: ``findings``, or nowhere while files are
        #: read again whose content was reported already (see :meth:`_repeating`).
        self._notes = findings
        #: Bytes still allowed to be read under ``limits.max_total_bytes``.
        self._budget = limits.max_total_bytes
        #: First reads done ahead by :meth:`prefetch`, each taken when its file is first read:
        #: what it found, and the size (the larger of its size when opened and the bytes read)
        #: the read must be allowed for the result to be the one reading now would give.
        self._prefetched: dict[str, tuple[_Seen, int]] = {}

    @property
    def files(self) -> frozenset[str]:
        """The name of every file there is to read."""
        return self.source.names

    def _validate(
        self, name: str, raw: Any, kind: str, cls: type[T], number: int | None = None
    ) -> T | None:
        line = "" if number is None else f" line {number}"
        try:
            return structure(raw, cls, what=f"{name}{line}")
        except BadInput as exc:
            refusal = str(exc)
        # The schema is generated from the model and accepts every value the model accepts
        # (tests/test_schemas.py), so it only has something to say about a refused value: its
        # errors, each at its JSON path, are named first, as the schema is the published rule.
        errors = sorted(
            _validator(kind).iter_errors(raw),
            key=lambda e: list(e.absolute_path),
        )
        for error in errors[:MAX_DIFFS]:
            where = "$" + "".join(
                f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path
            )
            self._notes.append(
                Finding(
                    "schema",
                    name,
                    f"schema {kind}{line} @ {where}",
                    "valid",
                    error.message[:200],
                    Location(line=number, path=where),
                )
            )
        if not errors:
            self._notes.append(
                Finding(
                    "model",
                    name,
                    f"model {cls.__name__}{line}",
                    "valid",
                    refusal,
                    Location(line=number),
                )
            )
        return None

    def _first(self, name: str) -> _Seen | None:
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

    def read_first(self, name: str) -> _Seen | None:
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
            self._budget -= ahead[0].size
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
        self._budget -= first.count
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
            self._budget,
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
            f"{limits.max_total_bytes - self._budget - count + size} bytes",
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
    def _repeating(self) -> Iterator[None]:
        """Read again files whose content was reported already: findings about their content
        are not made twice, while a file that changed since, or can no longer be read, is still
        named."""
        notes, self._notes = self._notes, Findings(0)
        try:
            yield
        finally:
            self._notes = notes

    def json(self, name: str, kind: str, cls: type[T]) -> T | None:
        """The model ``cls`` in the file, which must be canonical JSON valid against the schema
        ``kind``; None (with findings) when it is not."""
        return self._model(name, kind, cls)[0]

    def _quick(self, data: bytes, cls: type[T]) -> T | None:
        """The ``cls`` whose canonical bytes are exactly ``data``, read the quick way of
        :data:`_QUICK_MODELS` where the limits allow it (the strict way refuses bytes past
        ``max_file_bytes`` and nesting past ``max_json_depth``, and names why); None for any
        other bytes, and for a model without a quick way. A value read this way is one the
        strict way accepts as the same value, without a finding (see
        :func:`canonical_record`)."""
        quick, depth = _QUICK_MODELS.get(cls, (None, 0))
        limits = self.limits
        if quick is None or depth > limits.max_json_depth or len(data) > limits.max_file_bytes:
            return None
        return cast("T | None", quick(data))

    def _model(self, name: str, kind: str, cls: type[T]) -> tuple[T | None, str | None]:
        """:meth:`json`, and the sha256 of the model's canonical bytes (which are the file's
        when it is canonical)."""
        data = self.raw(name)
        if data is None:
            return None, None
        quick = self._quick(data, cls)
        if quick is not None:
            # The bytes are the value's canonical form: they are what the model is written as.
            return quick, canonical.sha256_hex(data)
        try:
            raw = canonical.loads(
                data,
                what=name,
                max_bytes=self.limits.max_file_bytes,
                max_depth=self.limits.max_json_depth,
            )
        except BadInput as exc:
            self._notes.append(
                Finding("json-parse", name, "strict JSON parse", "valid JSON", str(exc))
            )
            return None, None
        value = self._validate(name, raw, kind, cls)
        # The parsed tree is as large as the model: let it go before the model is written out.
        del raw
        if value is None:
            return None, None
        written = to_bytes(value)
        if written != data:
            self._notes.append(
                Finding(
                    "not-canonical",
                    name,
                    "bytes are not in canonical form",
                    "canonical JSON",
                    "other bytes",
                )
            )
        return value, canonical.sha256_hex(written)

    def run_records(self, name: str) -> Iterator[RunRecord | None] | None:
        """The run records of a JSON Lines file (see :meth:`json_lines`); canonical lines are
        read the quick way (:func:`canonical_record`) where the nesting limit allows it."""
        quick = canonical_record if self.limits.max_json_depth >= _RUN_RECORD_DEPTH else None
        return self.json_lines(name, "run-record", RunRecord, quick)

    def times_lines(self, name: str) -> Iterator[AttemptTimes | None] | None:
        """The lines of a times/<partition>.jsonl file (see :meth:`json_lines`)."""
        return self.json_lines(name, "attempt-times", AttemptTimes, _canonical_times)

    def times_ids(self, name: str) -> Iterator[str | None] | None:
        """The attempt IDs of a times/<partition>.jsonl file read again, a line at a time, as
        :meth:`times_lines` gives them, the lines :func:`_times_id` reads the quick way."""
        lines = self.json_lines(name, "attempt-times", AttemptTimes, cast(Any, _times_id))
        if lines is None:
            return None
        return (v if v is None or isinstance(v, str) else v.attempt_id for v in lines)

    def json_lines(
        self, name: str, kind: str, cls: type[T], quick: Callable[[bytes], T | None] | None
    ) -> Iterator[T | None] | None:
        """The values of a JSON Lines file, parsed one line at a time as they are read: each
        value, or None for a line that is not one (with findings). ``quick`` gives a line's
        value when the line is its value's canonical form (None otherwise: the strict way then
        names what is wrong). None (with a finding) when the file cannot be read or does not
        end with a newline."""
        seen = self._first(name)
        if seen is None:
            return None
        if not seen.final_newline:
            self._notes.append(
                Finding(
                    "jsonl-no-final-newline",
                    name,
                    "JSON Lines file does not end with a newline",
                    "final newline",
                    "none",
                )
            )
            return None
        return self._lines(name, kind, cls, quick)

    def _lines(
        self, name: str, kind: str, cls: type[T], quick: Callable[[bytes], T | None] | None
    ) -> Iterator[T | None]:
        """Each line's value, or None for a line that is not one (named). A line longer than
        ``limits.max_line_bytes`` is named and skipped without being held; after
        ``limits.max_bad_lines`` refused lines, the rest of the file is only read (for the
        check that it did not change), its lines counted, not parsed."""
        limit, cap = self.limits.max_line_bytes, self.limits.max_bad_lines
        number = bad = unparsed = 0
        for chunk in bounded_chunks(self._again(name), limit):
            if bad >= cap:
                unparsed += 1 if isinstance(chunk, int) else len(chunk.splitlines())
                continue
            # Chunks end at newlines, so their lines are the file's lines, also where a lone \r
            # ends one.
            lines: list[bytes | int] = (
                [chunk] if isinstance(chunk, int) else [*chunk.splitlines(keepends=True)]
            )
            for index, line in enumerate(lines):
                number += 1
                value = self._value(name, number, line, kind, cls, quick)
                bad += value is None
                yield value
                if bad >= cap:
                    unparsed += len(lines) - index - 1
                    break
        if unparsed:
            self._notes.append(
                Finding(
                    "bad-lines-limit",
                    name,
                    f"parsing stopped after {cap} refused lines: the limit max_bad_lines",
                    f"<= {cap} refused lines",
                    f"{unparsed} further line(s) not parsed",
                )
            )

    def _value(
        self,
        name: str,
        number: int,
        line: bytes | int,
        kind: str,
        cls: type[T],
        quick: Callable[[bytes], T | None] | None,
    ) -> T | None:
        """One line's value: the quick way, else the strict way; None (named) when it is not
        one, or when it is longer than the limit (``line`` is then its length)."""
        limit = self.limits.max_line_bytes
        if isinstance(line, int) or len(line) > limit:
            self._notes.append(
                Finding(
                    "line-bytes-limit",
                    name,
                    f"line {number} longer than the limit max_line_bytes: not read",
                    f"<= {limit} bytes",
                    f"{line if isinstance(line, int) else len(line)} bytes",
                    Location(line=number),
                )
            )
            return None
        # (Values take two bytes at least, so only a long line is worth counting in.)
        if len(line) > 2 * MAX_RECORD_VALUES and line.count(b",") > MAX_RECORD_VALUES:
            # Parsed, so many values would cost far more memory than the line's bytes.
            self._notes.append(
                Finding(
                    "line-values-limit",
                    name,
                    f"line {number} holds more values than a run record can: not parsed",
                    f"<= {MAX_RECORD_VALUES} values",
                    f"{line.count(b',') + 1} values or more",
                    Location(line=number),
                )
            )
            return None
        value = quick(line) if quick is not None else None
        return value if value is not None else self._line(name, number, line, kind, cls)

    def _line(self, name: str, number: int, line: bytes, kind: str, cls: type[T]) -> T | None:
        """The strict way for one line: parse, schema and model, each refusal named."""
        try:
            raw = canonical.loads(
                line,
                what=f"{name} line {number}",
                max_bytes=self.limits.max_file_bytes,
                max_depth=self.limits.max_json_depth,
            )
        except BadInput as exc:
            self._notes.append(
                Finding(
                    "json-parse",
                    name,
                    f"strict JSON parse, line {number}",
                    "valid JSON",
                    str(exc),
                    Location(line=number),
                )
            )
            return None
        value = self._validate(name, raw, kind, cls, number)
        if value is not None and to_bytes(value) != line:
            self._notes.append(
                Finding(
                    "not-canonical",
                    name,
                    f"line {number} is not in canonical form",
                    "canonical JSON",
                    "other bytes",
                    Location(line=number),
                )
            )
        return value


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
) -> list[tuple[str, tuple[_Seen, int] | None]]:
    """A job (:mod:`repro.verify.parallel`): each file of ``names`` with its first read as a
    reader with the whole byte budget makes it (:func:`_read_one_ahead`)."""
    return [(name, _read_one_ahead(context, name)) for name in names]


def _read_one_ahead(context: tuple[Source, Limits, Reads], name: str) -> tuple[_Seen, int] | None:
    """The first read of ``name`` as a reader with the whole byte budget makes it, and the size
    the read must be allowed for; None when it did not read the whole file (the reader that
    takes it then reads it, and names what it finds)."""
    source, limits, reads = context
    reader = BundleReader(source, Findings(limits.max_findings), limits, reads)
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
