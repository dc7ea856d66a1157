"""The offline verifier: integrity, strict parse and schema, joins, and re-derivation.

It needs no simulator and no network. Cheap checks come first (structure, listing), then
completeness and digests, then parsing, then the joins and the re-derivations. Every problem is a
:class:`Finding`; nothing is logged and passed over.

Whatever the tree holds, verify stays inside it and within bounds: it never follows a symlink
(every file and directory is opened by name, one component at a time, relative to its parent's
descriptor, with ``O_NOFOLLOW``), it reads nothing past its :class:`Limits`, and it raises nothing
but :class:`BadInput`, and that only for a root that is not a directory.

What it holds does not grow with the runs: every file is read once in blocks to be hashed and
scanned; the partitions and runs files, whose size grows with the plan, are read again where they
are parsed (a file that changed in between is named), run records one line at a time, and each
partition's runs are reduced to their tally (:mod:`repro.derive.tally`) before the next partition is
read. The derivations are those ``repro study`` ran, on the same tally.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar, get_args, get_type_hints

import orjson
from attrs import field, frozen
from attrs.validators import ge

from repro import plan
from repro.bundle import layout
from repro.bundle.layout import CRATE, FIXED_PAYLOAD, MANIFEST, TAG_FILES, TAGMANIFEST
from repro.bundle.writer import BAGIT_TXT, MANIFEST_LINE
from repro.derive.crate import ActionFacts, CrateBuilder
from repro.derive.derivation import derive
from repro.derive.disclosure import FileHits, Scanner
from repro.derive.scenarios import by_condition
from repro.derive.tally import Attempt, RunTally, attempt_id, merge, runs, tally
from repro.derive.tiers import contract_digests
from repro.derive.validity import record_problem
from repro.errors import BadInput
from repro.json import canonical, schemas
from repro.json.serde import structure, to_bytes, unstructure
from repro.models import (
    MAX_RECORD_VALUES,
    AdapterFacts,
    Aggregates,
    AttemptTimes,
    Checkpoint,
    Environment,
    FrozenProtocol,
    Ledger,
    Partition,
    PartitionRef,
    Protocol,
    RunRecord,
    Scenario,
    Scores,
    Seal,
    Source,
    Tiers,
)
from repro.plan.streams import checkpoint_of
from repro.protocol.load import check_consistency

__all__ = ["BundleReader", "Finding", "Limits", "bundle_sha256", "verify"]

T = TypeVar("T")

MAX_FILE_BYTES = 1 << 30
#: At most this many findings of one kind in one file are listed one by one; the rest are counted.
MAX_DIFFS = 25
#: Characters of each text of a finding at most.
MAX_FINDING_TEXT = 400
#: How the first finding on an unfinished study begins.
INCOMPLETE = "incomplete:"

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: O_NONBLOCK: a FIFO put in place of a file after the scan must not block the open; fstat then
#: refuses it as not a regular file before anything is read.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
#: The payload files of every bundle besides those in data/plans/ and data/runs/ (which the seal
#: names): any other payload file is not part of a bundle, even when the manifest lists it.
_PAYLOAD = frozenset({*FIXED_PAYLOAD, CRATE})
#: Payload files only some bundles have: scores.json, in a bundle of a protocol with scoring.
_OPTIONAL_PAYLOAD = frozenset({layout.SCORES})
#: The temporary name BundleWriter writes a file under before renaming it into place.
_PARTIAL = re.compile(r"^\..+\.partial$")
#: What a root must hold at its top to be a bundle or an unfinished study: a tag file, or one
#: being written (a study writes bagit.txt before anything else).
_STUDY_MARKS = frozenset({*TAG_FILES, *(f".{name}.partial" for name in TAG_FILES)})


@frozen
class Limits:
    """How much :func:`verify` reads and recomputes at most. Past a limit it reports a finding
    that names the limit and what it found, and reads no further, so no tree can make it consume
    unbounded memory, time or file descriptors."""

    #: Entries of any kind (files, directories, links) the scan lists; it stops at the next one
    #: and nothing is read.
    max_files: int = field(default=100_000, validator=ge(1))
    #: Bytes of one file; a larger file is not read.
    max_file_bytes: int = field(default=MAX_FILE_BYTES, validator=ge(1))
    #: Bytes of all regular files together; past it the scan stops and nothing is read.
    max_total_bytes: int = field(default=16 << 30, validator=ge(1))
    #: Directory nesting below the root (``data/runs`` is at depth 2); a deeper directory is
    #: named and not entered.
    max_depth: int = field(default=8, validator=ge(0))
    #: Nesting of arrays and objects in a JSON file (see :func:`repro.json.canonical.loads`).
    max_json_depth: int = field(default=canonical.MAX_DEPTH, validator=ge(1))
    #: Bootstrap resamples verify recomputes (the protocol default is 9999); a protocol asking
    #: for more is named and its aggregates are not re-derived.
    max_resamples: int = field(default=100_000, validator=ge(1))
    #: Bytes of a file verify holds whole to parse it: a tag file, or a payload file whose size
    #: does not grow with the runs (protocol, ledger, aggregates, tiers, ...). A larger one is
    #: named and not parsed (its digest is still checked).
    max_held_file_bytes: int = field(default=256 << 20, validator=ge(1))
    #: Bytes of one line of a JSON Lines file (a run record, an attempt's times). A run record
    #: of the most step rewards and the largest outcome a study keeps is well under it. A longer
    #: line is named and skipped without being held.
    max_line_bytes: int = field(default=32 << 20, validator=ge(1))
    #: Findings listed one by one in all; the rest are counted in one last finding, so that a
    #: hostile bundle cannot make the list itself unbounded.
    max_findings: int = field(default=1000, validator=ge(1))
    #: Lines of one JSON Lines file the strict reader refuses before verify stops parsing that
    #: file (the rest is still read, for its digest, and counted).
    max_bad_lines: int = field(default=MAX_DIFFS, validator=ge(1))


def _clip(text: str) -> str:
    """``text`` cut to :data:`MAX_FINDING_TEXT` characters: a finding quotes what a bundle holds,
    and a hostile bundle may hold anything, of any length."""
    if len(text) <= MAX_FINDING_TEXT:
        return text
    return f"{text[: MAX_FINDING_TEXT - 40]}... ({len(text)} characters in all)"


@frozen
class Finding:
    """One verification problem: a stable machine-readable ``code`` (kebab-case; what tests and
    ``--json`` users match), which file, what, what was expected and what was found (each text
    at most :data:`MAX_FINDING_TEXT` characters)."""

    code: str
    file: str = field(converter=_clip)
    what: str = field(converter=_clip)
    expected: str = field(converter=_clip)
    found: str = field(converter=_clip)

    @property
    def incomplete(self) -> bool:
        """Whether this finding says the root is an unfinished study rather than a tampered
        bundle."""
        return self.what.startswith(INCOMPLETE)

    def as_dict(self) -> dict[str, str]:
        """Plain data for ``--json``."""
        return {
            "code": self.code,
            "file": self.file,
            "what": self.what,
            "expected": self.expected,
            "found": self.found,
        }


class _Findings(list[Finding]):
    """The findings of one verification, at most ``cap`` of them listed: past it, findings are
    counted, not kept (:meth:`close` adds the count as one last finding)."""

    def __init__(self, cap: int) -> None:
        super().__init__()
        self.cap = cap
        self.dropped = 0

    def append(self, finding: Finding) -> None:
        if len(self) < self.cap:
            super().append(finding)
        else:
            self.dropped += 1

    def extend(self, findings: Iterable[Finding]) -> None:
        for finding in findings:
            self.append(finding)

    def __iadd__(self, findings: Iterable[Finding]) -> _Findings:  # type: ignore[override, misc]
        self.extend(findings)
        return self

    def close(self) -> list[Finding]:
        """The findings as a plain list, with the count of those not listed last."""
        out = list(self)
        if self.dropped:
            out.append(
                Finding(
                    "findings-limit",
                    ".",
                    f"{self.dropped} further finding(s) not listed: the limit max_findings",
                    f"<= {self.cap} findings listed",
                    f"{self.cap + self.dropped} findings",
                )
            )
        return out


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


@frozen
class _Listing:
    """What the scan saw: regular files by bundle name (``/``-separated) with their sizes, every
    entry's name, and whether a limit stopped it (then the listing is partial)."""

    sizes: dict[str, int]
    entries: frozenset[str]
    stopped: bool


def _scan(root: Path, limits: Limits, findings: list[Finding]) -> _Listing:
    """List the tree below ``root`` without following a symlink: each directory is opened by name
    relative to its parent's descriptor with ``O_NOFOLLOW``. A directory's entries are all listed
    before its subdirectories are entered, so the root's tag files are seen first."""
    sizes: dict[str, int] = {}
    entries: set[str] = set()
    total = 0

    def walk(fd: int, prefix: str, depth: int) -> bool:
        nonlocal total
        listed: list[tuple[str, os.stat_result]] = []
        try:
            with os.scandir(fd) as it:
                for entry in it:
                    if len(entries) >= limits.max_files:
                        findings.append(
                            Finding(
                                "scan-entries-limit",
                                ".",
                                "more entries than the limit max_files: verify stopped scanning",
                                f"<= {limits.max_files} entries",
                                f"more than {limits.max_files}",
                            )
                        )
                        return False
                    rel = prefix + entry.name
                    entries.add(rel)
                    try:
                        listed.append((entry.name, entry.stat(follow_symlinks=False)))
                    except OSError as exc:
                        findings.append(
                            Finding("cannot-stat", rel, "cannot stat", "an entry", _reason(exc))
                        )
        except OSError as exc:
            findings.append(
                Finding(
                    "cannot-list-directory",
                    prefix or ".",
                    "cannot list directory",
                    "readable",
                    _reason(exc),
                )
            )
            return True
        if not listed and prefix:
            # A study writes no empty directory; BagIt tools that compare trees see one.
            findings.append(
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
            mode = st.st_mode
            if not _utf8(name):
                findings.append(
                    Finding(
                        "name-not-utf8",
                        rel.encode("utf-8", "backslashreplace").decode(),
                        "name is not UTF-8",
                        "a bundle name",
                        "undecodable bytes",
                    )
                )
            elif stat.S_ISLNK(mode):
                findings.append(
                    Finding(
                        "symlink", rel, "symbolic link in the bundle", "a regular file", "a symlink"
                    )
                )
            elif stat.S_ISDIR(mode):
                if depth + 1 > limits.max_depth:
                    findings.append(
                        Finding(
                            "depth-limit",
                            rel,
                            "directory nested deeper than the limit max_depth: not read",
                            f"<= {limits.max_depth} levels",
                            f"{depth + 1} levels",
                        )
                    )
                else:
                    subdirectories.append(name)
            elif stat.S_ISREG(mode):
                sizes[rel] = st.st_size
                total += st.st_size
                if st.st_nlink > 1:
                    # The same bytes are reachable, and changeable, through a path outside the bag.
                    findings.append(
                        Finding(
                            "hard-link",
                            rel,
                            "hard link in the bundle",
                            "1 link",
                            f"{st.st_nlink} links",
                        )
                    )
                if total > limits.max_total_bytes:
                    findings.append(
                        Finding(
                            "scan-bytes-limit",
                            ".",
                            "more bytes than the limit max_total_bytes: verify stopped scanning",
                            f"<= {limits.max_total_bytes} bytes",
                            f"{total} bytes so far",
                        )
                    )
                    return False
            else:
                findings.append(
                    Finding(
                        "special-file",
                        rel,
                        "special file in the bundle",
                        "a regular file",
                        "a special file",
                    )
                )
        for name in subdirectories:
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                findings.append(
                    Finding(
                        "cannot-open-directory",
                        prefix + name,
                        "cannot open directory",
                        "readable",
                        _reason(exc),
                    )
                )
                continue
            try:
                if not walk(child, f"{prefix}{name}/", depth + 1):
                    return False
            finally:
                os.close(child)
        return True

    try:
        fd = os.open(root, _DIR_FLAGS)
    except OSError as exc:
        findings.append(
            Finding(
                "cannot-open-root",
                ".",
                "cannot open the bundle directory",
                "readable",
                _reason(exc),
            )
        )
        return _Listing({}, frozenset(), stopped=True)
    try:
        complete = walk(fd, "", 0)
    finally:
        os.close(fd)
    return _Listing(sizes, frozenset(entries), stopped=not complete)


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _unfinished(listing: _Listing) -> list[Finding]:
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


def _open_below(root: Path, name: str) -> int:
    """A descriptor for ``name`` (``/``-separated) below ``root``, reached one component at a
    time without following a symlink, so a file or directory swapped for a link after the scan
    is refused rather than followed."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        *directories, leaf = name.split("/")
        for part in directories:
            parent, fd = fd, os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(parent)
        return os.open(leaf, _FILE_FLAGS, dir_fd=fd)
    finally:
        os.close(fd)


def bundle_sha256(root: Path) -> str:
    """The bundle's identity: the sha256 of its tag manifest, which pins the other tag files,
    which pin every payload file. A bag carries no signature, so a forger who rewrites a file
    that is not re-derived (environment.json, bag-info.txt) and both manifests goes unnoticed by
    :func:`verify`, but not by a reader who compares this digest with a published one. Call it
    on a root that verifies."""
    digest = hashlib.sha256()
    fd = _open_below(root, TAGMANIFEST)
    try:
        while block := os.read(fd, 1 << 20):
            digest.update(block)
    finally:
        os.close(fd)
    return digest.hexdigest()


def _unsafe(path: str) -> str | None:
    """Why a manifest path does not name a place inside the bag, or None when it does."""
    if path.startswith("/"):
        return "absolute path"
    if "\\" in path:
        return "backslash in path"
    parts = path.split("/")
    if ".." in parts:
        return "path traversal (..)"
    if "" in parts or "." in parts:
        return "empty or '.' path component"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
        return "control character in path"
    return None


def _text_lines(text: str) -> Iterator[str]:
    """The lines of ``text`` without their newlines, one at a time (a manifest may hold
    millions): a final newline ends the last line rather than starting an empty one, and empty
    text is one empty line."""
    start = 0
    while True:
        end = text.find("\n", start)
        if end < 0:
            if start < len(text) or start == 0:
                yield text[start:]
            return
        yield text[start:end]
        start = end + 1


def _parse_manifest(name: str, data: bytes, findings: list[Finding]) -> dict[str, str]:
    out: dict[str, str] = {}
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        findings.append(
            Finding(
                "manifest-not-utf8",
                name,
                "manifest is not UTF-8",
                "UTF-8 text",
                "undecodable bytes",
            )
        )
        return out
    for number, line in enumerate(_text_lines(text), 1):
        match = MANIFEST_LINE.match(line)
        if not match:
            findings.append(
                Finding(
                    "manifest-line-malformed",
                    name,
                    f"malformed manifest line {number}",
                    "<sha256>  <path>",
                    repr(line[:80]),
                )
            )
            continue
        digest, path = match.groups()
        unsafe = _unsafe(path)
        if unsafe is not None:
            # Never looked up, let alone opened: only names the scan found are ever read.
            findings.append(
                Finding(
                    "manifest-path-unsafe",
                    name,
                    f"unsafe path on line {number}: {unsafe}",
                    "a relative path inside the bag",
                    repr(path[:80]),
                )
            )
            continue
        if path in out:
            findings.append(
                Finding(
                    "manifest-path-repeated",
                    name,
                    f"path listed twice (line {number})",
                    "once",
                    path,
                )
            )
        out[path] = digest
    if text and not text.endswith("\n"):
        findings.append(
            Finding(
                "manifest-no-final-newline",
                name,
                "manifest does not end with a newline",
                "final newline",
                "none",
            )
        )
    return out


def _check_tag_text(name: str, data: bytes, findings: list[Finding]) -> None:
    """A tag file is UTF-8 text (bagit.txt declares that encoding) without NUL bytes, which
    stock BagIt tools fail on or cut text at."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        findings.append(
            Finding(
                "tag-file-not-utf8",
                name,
                f"tag file is not UTF-8 (byte {exc.start})",
                "UTF-8 text, as bagit.txt declares",
                "undecodable bytes",
            )
        )
    nul = data.find(b"\x00")
    if nul >= 0:
        findings.append(
            Finding(
                "tag-file-nul",
                name,
                f"tag file holds a NUL byte (byte {nul})",
                "text without NUL",
                "a NUL byte",
            )
        )


def _integrity(listing: _Listing, read: BundleReader, findings: list[Finding]) -> None:
    files = listing.sizes
    if layout.BAGIT not in files:
        findings.append(
            Finding(
                "bagit-txt-missing", layout.BAGIT, "missing BagIt declaration", "present", "missing"
            )
        )
    else:
        declaration = read.raw(layout.BAGIT)
        if declaration is not None and declaration != BAGIT_TXT:
            findings.append(
                Finding(
                    "bagit-txt-content",
                    layout.BAGIT,
                    "BagIt declaration",
                    BAGIT_TXT.decode().strip(),
                    "other content",
                )
            )
    for name in sorted(files):
        if ("/" not in name and name not in TAG_FILES) or (
            "/" in name and not name.startswith(layout.DATA)
        ):
            findings.append(
                Finding(
                    "outside-bag-layout", name, "file outside the bag layout", "absent", "present"
                )
            )
        elif (
            name.startswith(layout.DATA)
            and name not in _PAYLOAD
            and name not in _OPTIONAL_PAYLOAD
            and not layout.is_partitioned(name)
        ):
            findings.append(
                Finding(
                    "outside-bundle-layout",
                    name,
                    "payload file outside the bundle layout",
                    "absent",
                    "present",
                )
            )
    for manifest, covered in (
        (MANIFEST, None),
        (TAGMANIFEST, (layout.BAGIT, layout.BAG_INFO, MANIFEST)),
    ):
        if manifest not in files:
            findings.append(
                Finding("manifest-missing", manifest, "missing manifest", "present", "missing")
            )
            continue
        data = read.raw(manifest)
        if data is None:
            continue
        listed = _parse_manifest(manifest, data, findings)
        if covered is None:
            actual = {n for n in files if n.startswith(layout.DATA)}
        else:
            actual = {n for n in covered if n in files}
            for name in covered:
                if name not in listed:
                    findings.append(
                        Finding(
                            "tag-file-not-listed",
                            manifest,
                            f"{name} not listed",
                            "listed",
                            "not listed",
                        )
                    )
        for name in sorted(set(listed) - actual):
            findings.append(
                Finding(
                    "listed-but-missing",
                    name,
                    f"listed in {manifest} but missing",
                    "present",
                    "missing",
                )
            )
        for name in sorted(actual - set(listed)):
            if covered is None:
                findings.append(
                    Finding("not-listed", name, f"not listed in {manifest}", "listed", "extra file")
                )
        for name in sorted(set(listed) & actual):
            digest = read.sha256(name)
            if digest is None:
                continue
            if digest != listed[name]:
                findings.append(
                    Finding(
                        "digest-mismatch",
                        name,
                        f"sha256 differs from {manifest}",
                        listed[name],
                        digest,
                    )
                )
    if layout.BAG_INFO in files:
        payload = [size for name, size in files.items() if name.startswith(layout.DATA)]
        oxum = f"{sum(payload)}.{len(payload)}"
        raw_info = read.raw(layout.BAG_INFO) or b""
        _check_tag_text(layout.BAG_INFO, raw_info, findings)
        info = raw_info.decode("utf-8", "replace").splitlines()
        stated = [
            line.split(":", 1)[1].strip() for line in info if line.startswith("Payload-Oxum:")
        ]
        if stated != [oxum]:
            findings.append(
                Finding(
                    "payload-oxum",
                    "bag-info.txt",
                    "Payload-Oxum",
                    oxum,
                    ", ".join(stated) or "missing",
                )
            )
    else:
        findings.append(
            Finding(
                "bag-info-missing", layout.BAG_INFO, "missing bag-info.txt", "present", "missing"
            )
        )


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
class _Seen:
    """What the first read of a file found: its sha256 and size, whether it ends with a newline,
    and the disclosure hits in it."""

    sha256: str
    size: int
    final_newline: bool
    disclosures: FileHits


def _bounded_chunks(blocks: Iterable[bytes], limit: int) -> Iterator[bytes | int]:
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


#: The type of JSON value a canonical run line holds under each key of a run record, keys in
#: the canonical (sorted) order. Exact types, as the strict converter's: a boolean is not an
#: integer. Narrower than the converter where it converts: an integer where a float is expected
#: becomes a float, which is written back with a fraction, so such a line is not canonical.
_RUN_LINE_TYPES: dict[str, tuple[type, ...]] = {
    "attempt": (int,),
    "attempt_id": (str,),
    "cause": (str, type(None)),
    "condition": (str,),
    "contract_sha256": (str, type(None)),
    "measure": (float, type(None)),
    "predecessor": (str, type(None)),
    "slot": (str,),
    "status": (str,),
    "step_rewards": (list, type(None)),
    "steps": (int, type(None)),
    "trace_sha256": (str, type(None)),
}
_RUN_LINE_KEYS = tuple(sorted(_RUN_LINE_TYPES))
#: Every combination of value types, key by key, that a canonical run line can hold: one set
#: lookup checks them all.
_RUN_LINE_SHAPES = frozenset(itertools.product(*(_RUN_LINE_TYPES[k] for k in _RUN_LINE_KEYS)))
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


def _canonical_record(line: bytes) -> RunRecord | None:
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


def _canonical_times(line: bytes) -> AttemptTimes | None:
    """The attempt times whose canonical bytes are exactly ``line`` (three strings), or None for
    any other line, which the strict way then names: the quick way of :func:`_canonical_record`
    for the times files. (A line with lost session opens, which is rare, goes the strict way.)"""
    raw = _canonical_object(line)
    if raw is None or tuple(raw) != _TIMES_KEYS:
        return None
    if not all(type(v) is str for v in raw.values()):
        return None
    try:
        return AttemptTimes(**raw)
    except ValueError:
        return None


class BundleReader:
    """Reads bundle files strictly: canonical JSON, schema, model. ``files`` maps each bundle
    name to its path below the bundle root. Files are read without following a symlink, and
    never past the ``limits``; every read problem is a finding.

    Each file's first read hashes and scans it; the tag files and the fixed payload files are
    held from then on, every other file is read again, checked against its first read, where it
    is parsed. Run records are parsed one line at a time.
    """

    def __init__(
        self, files: Mapping[str, Path], findings: list[Finding], limits: Limits = Limits()
    ) -> None:
        self.files = files
        self.findings = findings
        self.limits = limits
        self._seen: dict[str, _Seen | None] = {}
        self._held: dict[str, bytes] = {}
        #: Where findings about a file's content go: ``findings``, or nowhere while files are
        #: read again whose content was reported already (see :meth:`_repeating`).
        self._notes = findings
        #: Bytes still allowed to be read under ``limits.max_total_bytes``.
        self._budget = limits.max_total_bytes

    def _validate(self, name: str, raw: Any, kind: str, cls: type[T], line: str = "") -> T | None:
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
                    "schema", name, f"schema {kind}{line} @ {where}", "valid", error.message[:200]
                )
            )
        if not errors:
            self._notes.append(
                Finding("model", name, f"model {cls.__name__}{line}", "valid", refusal)
            )
        return None

    def _first(self, name: str) -> _Seen | None:
        """What the first read of the file found, reading it now if it was not read yet; None
        (with a finding, made once) when missing, unreadable or past a limit."""
        if name not in self._seen:
            self._seen[name] = self._read_first(name)
        return self._seen[name]

    def sha256(self, name: str) -> str | None:
        """The sha256 of the file's bytes, from its first read."""
        seen = self._first(name)
        return seen.sha256 if seen is not None else None

    def disclosures(self, name: str) -> FileHits | None:
        """The disclosure hits in the file's bytes, from its first read."""
        seen = self._first(name)
        return seen.disclosures if seen is not None else None

    def raw(self, name: str) -> bytes | None:
        """The file's bytes: read once for a held file, read again (and checked against the
        first read) for any other; None when missing, unreadable or past a limit."""
        if self._first(name) is None:
            return None
        if name in _HELD:
            return self._held[name]
        return b"".join(self._again(name))

    def _read_first(self, name: str) -> _Seen | None:
        path = self.files.get(name)
        if path is None:
            self.findings.append(
                Finding(
                    "file-missing", name, "expected bundle file is missing", "present", "missing"
                )
            )
            return None
        digest = hashlib.sha256()
        kept: list[bytes] = []
        scanner = Scanner(name)
        count = 0
        final_newline = True
        try:
            # The path is the root joined with the name: walk the name down from the root.
            fd = _open_below(path.parents[name.count("/")], name)
            try:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    # O_NOFOLLOW refused a symlink already: a directory or a special file.
                    found = "a directory" if stat.S_ISDIR(info.st_mode) else "a special file"
                    what = "not a regular file when read"
                    self.findings.append(
                        Finding("not-regular-file", name, what, "a regular file", found)
                    )
                    return None
                held = name in _HELD
                allowed = min(
                    self.limits.max_held_file_bytes if held else self.limits.max_file_bytes,
                    self.limits.max_file_bytes,
                    self._budget,
                )

                def blocks() -> Iterator[bytes]:
                    nonlocal count
                    # One byte past what is allowed is read to see a file that grew since its
                    # fstat.
                    while count <= allowed:
                        block = os.read(fd, min(allowed + 1 - count, _BLOCK))
                        if not block:
                            return
                        count += len(block)
                        digest.update(block)
                        if held:
                            kept.append(block)
                        yield block

                if info.st_size <= allowed:
                    # The scanner carries only a short tail between blocks: what it holds does
                    # not grow with the file, nor with a line however long.
                    for block in blocks():
                        scanner.feed(block)
                        final_newline = block.endswith(b"\n")
            finally:
                os.close(fd)
        except OSError as exc:
            self.findings.append(
                Finding("cannot-read", name, "cannot read", "a readable regular file", _reason(exc))
            )
            return None
        self._budget -= count
        size = max(info.st_size, count)
        if size <= allowed:
            if name in _HELD:
                self._held[name] = b"".join(kept)
            return _Seen(digest.hexdigest(), count, final_newline, scanner.finish())
        if name in _HELD and size > self.limits.max_held_file_bytes:
            self.findings.append(
                Finding(
                    "held-file-bytes-limit",
                    name,
                    "file larger than the limit max_held_file_bytes: not read",
                    f"<= {self.limits.max_held_file_bytes} bytes",
                    f"{size} bytes",
                )
            )
        elif size > self.limits.max_file_bytes:
            self.findings.append(
                Finding(
                    "file-bytes-limit",
                    name,
                    "file larger than the limit max_file_bytes: not read",
                    f"<= {self.limits.max_file_bytes} bytes",
                    f"{size} bytes",
                )
            )
        else:
            self.findings.append(
                Finding(
                    "total-bytes-limit",
                    name,
                    "reading it would pass the limit max_total_bytes: not read",
                    f"<= {self.limits.max_total_bytes} bytes in all",
                    f"{self.limits.max_total_bytes - self._budget - count + size} bytes",
                )
            )
        return None

    def _again(self, name: str) -> Iterator[bytes]:
        """The bytes of a file read before, read again in blocks; a file that is no longer
        what the first read saw is named once they are all read."""
        seen = self._seen[name]
        assert seen is not None, "only a file whose first read succeeded is read again"
        digest = hashlib.sha256()
        count = 0
        try:
            fd = _open_below(self.files[name].parents[name.count("/")], name)
            try:
                mode = os.fstat(fd).st_mode
                if not stat.S_ISREG(mode):
                    found = "a directory" if stat.S_ISDIR(mode) else "a special file"
                    what = "not a regular file when read again"
                    self.findings.append(
                        Finding("not-regular-file", name, what, "a regular file", found)
                    )
                    return
                while count <= seen.size:
                    block = os.read(fd, min(seen.size + 1 - count, _BLOCK))
                    if not block:
                        break
                    count += len(block)
                    digest.update(block)
                    yield block
            finally:
                os.close(fd)
        except OSError as exc:
            self.findings.append(
                Finding(
                    "cannot-read-again",
                    name,
                    "cannot read again",
                    "a readable regular file",
                    _reason(exc),
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
        notes, self._notes = self._notes, _Findings(0)
        try:
            yield
        finally:
            self._notes = notes

    def json(self, name: str, kind: str, cls: type[T]) -> T | None:
        """The model ``cls`` in the file, which must be canonical JSON valid against the schema
        ``kind``; None (with findings) when it is not."""
        return self._model(name, kind, cls)[0]

    def _model(self, name: str, kind: str, cls: type[T]) -> tuple[T | None, str | None]:
        """:meth:`json`, and the sha256 of the model's canonical bytes (which are the file's
        when it is canonical)."""
        data = self.raw(name)
        if data is None:
            return None, None
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
        read the quick way (:func:`_canonical_record`) where the nesting limit allows it."""
        quick = _canonical_record if self.limits.max_json_depth >= _RUN_RECORD_DEPTH else None
        return self.json_lines(name, "run-record", RunRecord, quick)

    def times_lines(self, name: str) -> Iterator[AttemptTimes | None] | None:
        """The lines of a times/<partition>.jsonl file (see :meth:`json_lines`)."""
        return self.json_lines(name, "attempt-times", AttemptTimes, _canonical_times)

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
        for chunk in _bounded_chunks(self._again(name), limit):
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
                    "json-parse", name, f"strict JSON parse, line {number}", "valid JSON", str(exc)
                )
            )
            return None
        value = self._validate(name, raw, kind, cls, f" line {number}")
        if value is not None and to_bytes(value) != line:
            self._notes.append(
                Finding(
                    "not-canonical",
                    name,
                    f"line {number} is not in canonical form",
                    "canonical JSON",
                    "other bytes",
                )
            )
        return value


def _diff(expected: Any, found: Any, path: str = "$") -> Iterator[tuple[str, Any, Any]]:
    if isinstance(expected, dict) and isinstance(found, dict):
        for key in sorted(set(expected) | set(found)):
            yield from _diff(expected.get(key), found.get(key), f"{path}.{key}")
    elif isinstance(expected, list) and isinstance(found, list) and len(expected) == len(found):
        for i, (e, f) in enumerate(zip(expected, found, strict=True)):
            yield from _diff(e, f, f"{path}[{i}]")
    elif expected != found or type(expected) is not type(found):
        yield path, expected, found


def _short(value: Any) -> str:
    text = canonical.dumps(value, newline=False).decode() if value is not None else "absent"
    return text if len(text) <= 120 else text[:117] + "..."


def _compare(
    name: str, expected: Any, found_bytes: bytes | None, findings: list[Finding], found: Any
) -> None:
    if found_bytes is None or found is None:
        return
    expected_plain = unstructure(expected)
    if canonical.dumps(expected_plain) == found_bytes:
        return
    diffs = list(_diff(expected_plain, unstructure(found)))
    for path, e, f in diffs[:MAX_DIFFS]:
        findings.append(
            Finding(
                "rederived-differs",
                name,
                f"re-derived value differs @ {path}",
                _short(e),
                _short(f),
            )
        )
    if len(diffs) > MAX_DIFFS:
        findings.append(
            Finding(
                "rederived-differs-more",
                name,
                f"{len(diffs) - MAX_DIFFS} further differing values",
                "none",
                "differences",
            )
        )
    if not diffs:
        findings.append(
            Finding(
                "rederived-bytes-differ",
                name,
                "re-derived bytes differ",
                "canonical re-derivation",
                "other bytes",
            )
        )


def _disclosures(read: BundleReader, findings: list[Finding]) -> list[FileHits]:
    """Scan every file, tag files too, each from the bytes read once; one finding per hit (at
    most MAX_DIFFS per file, the rest counted). Returns every file's hits."""
    out: list[FileHits] = []
    for name in sorted(read.files):
        hits = read.disclosures(name)
        if hits is None:
            continue
        for hit in hits.first[:MAX_DIFFS]:
            findings.append(
                Finding(
                    "disclosure",
                    name,
                    f"disclosure: {hit.kind} at byte {hit.offset}",
                    "no host path, traceback or credential-looking string",
                    hit.pattern,
                )
            )
        shown = min(len(hits.first), MAX_DIFFS)
        if hits.count > shown:
            findings.append(
                Finding(
                    "disclosure-more",
                    name,
                    f"{hits.count - shown} further disclosure hits",
                    "none",
                    "hits",
                )
            )
        out.append(hits)
    return out


def verify(root: Path, limits: Limits = Limits()) -> list[Finding]:
    """Every finding for the bundle at ``root``; empty when it verifies. Raises
    :class:`BadInput` when ``root`` is not a directory at all (a symlink to one is not), or is
    not a bundle: it holds none of the BagIt tag files, of which a study writes bagit.txt first.
    Whatever else the tree holds, every problem is a finding. When the root is an unfinished
    study (bagit.txt or another tag file, but no tag manifest), the first finding says so
    (:attr:`Finding.incomplete`)."""
    try:
        mode = os.lstat(root).st_mode
    except (OSError, ValueError) as exc:
        raise BadInput(f"{root}: not a bundle directory ({exc})") from None
    if not stat.S_ISDIR(mode):
        raise BadInput(f"{root}: not a bundle directory")
    # The schemas are consulted only to name what the models refuse, but read now: once verify
    # reads the bundle, the only files it opens are the bundle's.
    for kind in schemas.SCHEMAS:
        schemas.load(kind)
    findings = _Findings(limits.max_findings)
    listing = _scan(root, limits, findings)
    # The root's own entries are listed first, so its tag files are seen even when a limit
    # stopped the scan. A study writes bagit.txt before anything else: a root that holds no tag
    # file was never a study's, finished or not.
    if not listing.entries & _STUDY_MARKS:
        raise BadInput(
            f"{root}: not a bundle (it holds none of {', '.join(TAG_FILES)}; a study writes "
            "bagit.txt first)"
        )
    if listing.stopped:
        return findings.close()
    findings[:0] = _unfinished(listing)
    read = BundleReader({name: root / name for name in listing.sizes}, findings, limits)
    _integrity(listing, read, findings)
    try:
        _check_content(read, limits)
    except Exception as exc:
        # The re-derivations run repro's statistics and judgement on whatever schema-valid values
        # the files hold (a sum that overflows, a degenerate sample). Whatever they raise, the
        # bundle does not verify: say so as a finding rather than crash.
        findings.append(
            Finding(
                "could-not-process",
                "data/",
                "verify could not process the data",
                "data the re-derivations accept",
                f"{type(exc).__name__}: {exc}"[:200],
            )
        )
    return findings.close()


class _RecordChecks:
    """The findings on single run records that come after the join problems: a measure that is
    not the sum of its step rewards, a contract digest that is not its condition's, and a record
    whose status, cause or measure is not what the validity rules give for the evidence it keeps
    (:func:`repro.derive.validity.record_problem`, under the ledger's adapter facts). At most
    MAX_DIFFS of each kind are named, in the order the records are read."""

    def __init__(
        self,
        contracts: Mapping[str, str],
        scenarios: Mapping[str, Scenario],
        protocol: Protocol,
        facts: AdapterFacts | None,
    ) -> None:
        self.contracts = contracts
        #: The scenario each condition runs, whose version outcomes are judged against.
        self.scenarios = scenarios
        self._protocol = protocol
        self._facts = facts
        self.findings: list[Finding] = []
        self._measures = self._contracts = self._rules = 0

    def check(self, record: RunRecord, a: Attempt) -> None:
        """Check one record and its attempt. A record named for a measure that is not the sum
        of its step rewards is not named again for the validity rules, which say the same."""
        where = layout.runs_file(a.condition)
        summed = a.recomputed is None or a.measure is None or a.recomputed == a.measure
        if not summed:
            self._measures += 1
            if self._measures <= MAX_DIFFS:
                self.findings.append(
                    Finding(
                        "measure-not-sum",
                        where,
                        f"{a.attempt_id}: measure differs from the sum of its step rewards",
                        repr(a.recomputed),
                        repr(a.measure),
                    )
                )
        elif self._facts is not None:
            scenario = self.scenarios.get(a.condition)
            problem = record_problem(self._protocol, self._facts, scenario, record)
            if problem is not None:
                self._rules += 1
                if self._rules <= MAX_DIFFS:
                    self.findings.append(
                        Finding(
                            "validity-rules",
                            where,
                            f"{a.attempt_id}: record breaks the validity rules",
                            "the status, cause and measure the rules give its evidence",
                            problem,
                        )
                    )
        expected = self.contracts.get(a.condition)
        if a.status in ("valid", "invalid") and a.contract_sha256 != expected:
            self._contracts += 1
            if self._contracts <= MAX_DIFFS:
                self.findings.append(
                    Finding(
                        "contract-digest",
                        where,
                        f"{a.attempt_id}: contract digest",
                        str(expected),
                        str(a.contract_sha256),
                    )
                )


@frozen
class _PartitionRuns:
    """What verify keeps of one partition and its runs file once both are read: the tally of
    the runs against the partition, and what tells whether the tallies of all partitions add up
    to the tally of the whole plan (see :func:`repro.derive.tally.merge`)."""

    file: str
    runs_file: str
    #: The partition's ``id``, which names it where it is compared with its re-derivation.
    id: str
    entries: int
    #: sha256 of the partition's canonical bytes.
    sha256: str
    tally: RunTally
    #: Every record in the runs file names a slot of this partition and has the attempt ID its
    #: slot and number give.
    contained: bool


def _attempts(
    read: BundleReader, runs_file: str, part: Partition | None, checks: _RecordChecks | None
) -> tuple[list[Attempt], bool] | None:
    """The attempts of the records in ``runs_file``, read one line at a time, and whether each
    names a slot of ``part`` with the attempt ID its slot and number give; None when a line is
    not a run record (each named). ``checks`` see every record."""
    records = read.run_records(runs_file)
    if records is None:
        return None
    order = {e.slot: e.order for e in part.entries} if part is not None else {}
    attempts: list[Attempt] = []
    contained = ok = in_order = True
    previous: tuple[int, int] = (-1, 0)
    for number, record in enumerate(records, start=1):
        if record is None:
            ok = False
            continue
        a = Attempt.of(record)
        if checks is not None:
            checks.check(record, a)
        attempts.append(a)
        place = order.get(a.slot)
        contained = (
            contained and place is not None and a.attempt_id == attempt_id(a.slot, a.attempt)
        )
        if place is not None and checks is not None and in_order:
            # A study writes each partition's records in sealed order: slots by their order in
            # the plan, each slot's attempts by number.
            if (place, a.attempt) <= previous:
                in_order = False
                checks.findings.append(
                    Finding(
                        "runs-order",
                        runs_file,
                        f"records out of sealed order from line {number}",
                        "slots in plan order, each slot's attempts by number",
                        a.attempt_id,
                    )
                )
            previous = (place, a.attempt)
    return (attempts, contained) if ok else None


def _whole_plan_tally(
    read: BundleReader,
    kept: list[_PartitionRuns],
    max_attempts: int,
    checks: _RecordChecks,
) -> RunTally | None:
    """The tally of all partitions and runs files together, read again: for a plan whose
    partitions' tallies may not add up to it. None when a file no longer reads as it did (which
    is named)."""
    with read._repeating():
        parts = [read.json(k.file, "partition", Partition) for k in kept]
        attempts: list[Attempt] = []
        for k in kept:
            got = _attempts(read, k.runs_file, None, None)
            if got is None:
                return None
            attempts += got[0]
    if None in parts:
        return None
    parts_read = [p for p in parts if p is not None]
    return tally(parts_read, attempts, max_attempts, checks.contracts, checks.scenarios)


def _check_checkpoint(read: BundleReader, partition: str, first: bool, seed: int) -> None:
    """A stream-mode partition's checkpoint parses, names its partition and, for the first
    partition, holds exactly the state the protocol's seed gives (later states depend on the
    simulator, which replay re-checks)."""
    name = layout.checkpoint_file(partition)
    checkpoint = read.json(name, "checkpoint", Checkpoint)
    if checkpoint is None:
        return
    if checkpoint.partition != partition:
        read.findings.append(
            Finding(
                "checkpoint-partition",
                name,
                "checkpoint names another partition",
                partition,
                checkpoint.partition,
            )
        )
    if first and checkpoint != checkpoint_of(partition, ("seed", seed)):
        read.findings.append(
            Finding(
                "checkpoint-seed",
                name,
                "the first checkpoint is not the state the protocol's seed gives",
                f"random.seed({seed})",
                "another state",
            )
        )


class _CrateCheck:
    """The re-derivation of data/ro-crate-metadata.json, one partition at a time as verify reads
    them: its bytes are hashed as they are made, and the digest is compared at the end."""

    def __init__(self, builder: CrateBuilder, window: tuple[str, str] | None) -> None:
        self._builder = builder
        self._hash = hashlib.sha256(builder.head())
        #: When the study ran, to the second (environment.json), where the attempts' times come
        #: from the same clock (local workers; a cluster's workers have their own).
        self._window = window
        #: False once a partition's actions could not be made (its files are named already).
        self.whole = True

    def partition(self, read: BundleReader, partition: Partition, attempts: list[Attempt]) -> None:
        """Add the actions of ``partition``'s attempts that ran, joined one by one with the
        lines of its times file as they are read; a file that does not parse, or does not hold
        one line per attempt that ran (in the runs file's order, each ending after it starts),
        is named and leaves the crate unjudged."""
        if not self.whole:
            return
        name = layout.times_file(partition.id)
        lines = read.times_lines(name)
        if lines is None:
            self.whole = False
            return
        declared = {e.slot for e in partition.entries if not runs(e)}
        ran = [a for a in attempts if a.slot not in declared]
        broken: list[str] = []
        joined = _joined(read, name, ran, iter(lines), broken, self._window)
        for piece in self._builder.partition(partition.id, joined):
            self._hash.update(piece)
        if broken:
            self.whole = False

    def finish(self, read: BundleReader, partitions: Iterable[str]) -> None:
        """Compare the re-derived crate with the file, if every partition was made. The root's
        mentions are the attempts of the times files, read again one line at a time."""
        if not self.whole:
            return
        with read._repeating():
            attempts = (
                t.attempt_id
                for partition in partitions
                for t in read.times_lines(layout.times_file(partition)) or ()
                if t is not None
            )
            for piece in self._builder.tail(attempts):
                self._hash.update(piece)
        found = read.sha256(CRATE)
        if found is not None and found != self._hash.hexdigest():
            read.findings.append(
                Finding(
                    "crate-differs",
                    CRATE,
                    "RO-Crate metadata differs from its re-derivation",
                    f"sha256 {self._hash.hexdigest()}",
                    f"sha256 {found}",
                )
            )


_END = object()


def _joined(
    read: BundleReader,
    name: str,
    ran: list[Attempt],
    lines: Iterator[AttemptTimes | None],
    broken: list[str],
    window: tuple[str, str] | None = None,
) -> Iterator[ActionFacts]:
    """The crate's facts of each attempt that ran with its line of the times file ``name``, one
    at a time. The first line that does not parse (named as it was read), names another
    attempt, ends before it starts, lies outside the study's ``window`` (its recorded start and
    end, to the second), or is missing or left over, ends the join: it is named and put in
    ``broken``."""
    for number, a in enumerate(ran, start=1):
        t = next(lines, _END)
        if t is None:
            broken.append(name)
            return
        if t is _END or not isinstance(t, AttemptTimes) or t.attempt_id != a.attempt_id:
            found = t.attempt_id if isinstance(t, AttemptTimes) else "end of file"
            what = f"times do not match the attempts that ran, from line {number}"
            read.findings.append(Finding("times-mismatch", name, what, a.attempt_id, found))
            broken.append(name)
            return
        if t.finished_utc < t.started_utc:
            what = f"attempt {a.attempt_id} ends before it starts"
            read.findings.append(Finding("times-order", name, what, "end >= start", t.finished_utc))
            broken.append(name)
            return
        # Times to the microsecond against the study's to the second: compare whole seconds.
        if window is not None and not (
            window[0][:19] <= t.started_utc[:19] and t.finished_utc[:19] <= window[1][:19]
        ):
            what = f"attempt {a.attempt_id} ran outside the study's recorded start and end"
            found = f"{t.started_utc} to {t.finished_utc}"
            read.findings.append(
                Finding("times-outside-study", name, what, f"{window[0]} to {window[1]}", found)
            )
            broken.append(name)
            return
        yield ActionFacts(a.attempt_id, a.slot, a.condition, a.status, a.cause, t)
    extra = next(lines, _END)
    if extra is not _END:
        found = extra.attempt_id if isinstance(extra, AttemptTimes) else "a line"
        what = f"times do not match the attempts that ran, from line {len(ran) + 1}"
        read.findings.append(Finding("times-mismatch", name, what, "end of file", found))
        broken.append(name)


def _partition_runs(
    read: BundleReader,
    fp: FrozenProtocol,
    ref: PartitionRef,
    first: bool,
    checks: _RecordChecks,
    crate: _CrateCheck | None,
) -> _PartitionRuns | None:
    """Read one partition and its runs file (and, in stream mode, its checkpoint) and tally its
    runs; None when either does not parse. Whatever it reads of the partition is let go on
    return: only the tally is kept."""
    name = layout.DATA + ref.file
    digest = read.sha256(name)
    if digest is not None and digest != ref.sha256:
        read.findings.append(
            Finding(
                "partition-digest",
                name,
                "partition digest differs from the seal",
                ref.sha256,
                digest,
            )
        )
    part, part_sha256 = read._model(name, "partition", Partition)
    if fp.protocol.seeding.mode == "stream":
        _check_checkpoint(read, ref.id, first, fp.protocol.seeding.seed)
    runs_name = layout.runs_file(ref.id)
    got = _attempts(read, runs_name, part, checks)
    if part is None or part_sha256 is None or got is None:
        return None
    attempts, contained = got
    if crate is not None:
        crate.partition(read, part, attempts)
    return _PartitionRuns(
        file=name,
        runs_file=runs_name,
        id=part.id,
        entries=len(part.entries),
        sha256=part_sha256,
        tally=tally(
            [part], attempts, fp.protocol.retry.max_attempts, checks.contracts, checks.scenarios
        ),
        contained=contained,
    )


def _reseal(
    read: BundleReader,
    protocol: Protocol,
    protocol_sha256: str,
    sources: tuple[Source, ...],
    kept: list[_PartitionRuns],
    seal: Seal,
) -> list[PartitionRef]:
    """Re-seal the plan one partition at a time and compare the seal, then each partition, with
    its re-derivation; a partition that differs is read again to name the differences. Returns
    the re-derived partitions' references."""
    refs = []
    partition_findings: list[Finding] = []
    for index, expected in enumerate(plan.partitions(protocol)):
        refs.append(plan.partition_ref(expected))
        if index < len(kept) and refs[-1].sha256 != kept[index].sha256:
            with read._repeating():
                part = read.json(kept[index].file, "partition", Partition)
            if part is not None:
                found = to_bytes(part)
                _compare(layout.plan_file(part.id), expected, found, partition_findings, part)
                del part
        # Let this partition go before the next one is made.
        del expected
    resealed = plan.seal_record(protocol, protocol_sha256, sources, tuple(refs))
    found_seal = read.raw(layout.SEAL)
    _compare(layout.SEAL, resealed, found_seal, read.findings, seal)
    read.findings.extend(partition_findings)
    return refs


def _check_content(read: BundleReader, limits: Limits) -> None:
    """Parse every payload file, check the joins and compare each stored derivation with its
    re-derivation, adding findings to ``read.findings``.

    The runs are read one partition at a time, and each partition's runs are tallied as soon as
    they are read, so that what is held does not grow with the runs."""
    findings = read.findings
    fp = read.json(layout.PROTOCOL, "frozen-protocol", FrozenProtocol)
    seal = read.json(layout.SEAL, "seal", Seal)
    ledger = read.json(layout.LEDGER, "source-ledger", Ledger)
    aggregates_found = read.json(layout.AGGREGATES, "aggregates", Aggregates)
    tiers_found = read.json(layout.TIERS, "tiers", Tiers)
    environment = read.json(layout.ENVIRONMENT, "environment", Environment)
    scored = fp is not None and fp.protocol.scoring is not None
    scores_found = read.json(layout.SCORES, "scores", Scores) if scored else None
    if not scored and layout.SCORES in read.files:
        findings.append(
            Finding(
                "scores-without-scoring",
                layout.SCORES,
                "scores of a protocol that declares no scoring",
                "absent",
                "present",
            )
        )
    report_bytes = read.raw(layout.REPORT)
    disclosures = _disclosures(read, findings)

    if fp is None or seal is None:
        return
    if canonical.sha256_hex(to_bytes(fp.protocol)) != fp.sha256:
        findings.append(
            Finding(
                "protocol-digest",
                layout.PROTOCOL,
                "protocol digest",
                fp.sha256,
                canonical.sha256_hex(to_bytes(fp.protocol)),
            )
        )
    if seal.protocol_sha256 != fp.sha256:
        findings.append(
            Finding(
                "seal-protocol-digest",
                layout.SEAL,
                "protocol digest in the seal",
                fp.sha256,
                seal.protocol_sha256,
            )
        )

    protocol = fp.protocol
    max_attempts = protocol.retry.max_attempts
    contracts = contract_digests(ledger) if ledger is not None else {}
    checks = _RecordChecks(
        contracts,
        by_condition(protocol, seal.conditions),
        protocol,
        ledger.adapter if ledger is not None else None,
    )
    kept: list[_PartitionRuns] = []
    complete = True
    expected_files = {layout.SEAL}
    crate = None
    if ledger is not None and environment is not None:
        payload = layout.payload_files(fp, [ref.id for ref in seal.partitions])
        # A cluster's workers time the attempts by their own clocks.
        window = (
            None
            if environment.backend == "dask"
            else (environment.started_utc, environment.finished_utc)
        )
        crate = _CrateCheck(CrateBuilder(fp, ledger, environment, payload), window)
    for ref in seal.partitions:
        partition_runs = _partition_runs(read, fp, ref, ref is seal.partitions[0], checks, crate)
        expected_files |= {
            layout.DATA + ref.file,
            *layout.partition_files(ref.id, protocol.seeding.mode == "stream")[1:],
        }
        if partition_runs is None:
            complete = False
        else:
            kept.append(partition_runs)
    for name in sorted(n for n in read.files if layout.is_partitioned(n)):
        if name not in expected_files:
            findings.append(
                Finding("not-in-seal", name, "file not named by the seal", "absent", "present")
            )
    if crate is not None and complete:
        crate.finish(read, [ref.id for ref in seal.partitions])
    if not complete or ledger is None:
        return
    planned = (
        math.prod(len(f.levels) for f in protocol.matrix)
        * len(protocol.participants)
        * protocol.runs_per_condition
    )
    entries = sum(k.entries for k in kept)
    if planned > entries:
        # Expanding the plan costs as much as the slots it has; bound that by what was read.
        findings.append(
            Finding(
                "plan-limit",
                layout.PROTOCOL,
                "the protocol plans more slots than the sealed partitions hold: not re-derived",
                f"{entries} slots",
                f"{planned} slots",
            )
        )
        return
    try:
        check_consistency(protocol)
    except BadInput as exc:
        findings.append(
            Finding(
                "protocol-inconsistent",
                layout.PROTOCOL,
                "protocol consistency",
                "consistent",
                str(exc),
            )
        )
        return

    refs = _reseal(read, protocol, fp.sha256, ledger.sources, kept, seal)
    # The partitions' tallies add up to the whole plan's when every partition is the one the
    # protocol seals and every record is in its own partition's runs file with the attempt ID
    # its slot and number give: then no slot and no attempt ID is in two partitions. Otherwise
    # (a changed bundle) everything is read again and tallied together.
    sealed = len(refs) == len(kept) and all(
        ref.sha256 == k.sha256 and k.contained for ref, k in zip(refs, kept, strict=True)
    )
    runs = (
        merge([k.tally for k in kept])
        if sealed
        else _whole_plan_tally(read, kept, max_attempts, checks)
    )
    if runs is None:
        return
    for problem in runs.join_problems.first:
        findings.append(
            Finding(
                f"join-{problem.code}",
                layout.runs_file(problem.partition),
                f"{problem.where}: {problem.what}",
                problem.expected,
                problem.found,
            )
        )
    findings += checks.findings

    interval = protocol.interval
    if interval.method == "bootstrap" and interval.resamples > limits.max_resamples:
        findings.append(
            Finding(
                "resamples-limit",
                layout.PROTOCOL,
                "bootstrap resamples over the limit max_resamples: aggregates not re-derived",
                f"<= {limits.max_resamples}",
                str(interval.resamples),
            )
        )
        return
    inputs = [d for d in disclosures if layout.is_derivation_input(d.file)]
    derived = derive(fp, seal, runs, ledger, inputs)
    _compare(
        layout.LEDGER,
        derived.ledger,
        read.raw(layout.LEDGER),
        findings,
        ledger,
    )
    if aggregates_found is not None:
        _compare(
            layout.AGGREGATES,
            derived.aggregates,
            read.raw(layout.AGGREGATES),
            findings,
            aggregates_found,
        )
    if tiers_found is not None:
        _compare(
            layout.TIERS,
            derived.tiers,
            read.raw(layout.TIERS),
            findings,
            tiers_found,
        )
    if scores_found is not None and derived.scores is not None:
        _compare(
            layout.SCORES,
            derived.scores,
            read.raw(layout.SCORES),
            findings,
            scores_found,
        )
    if report_bytes is not None and report_bytes != derived.report.encode():
        findings.append(
            Finding(
                "report-differs",
                layout.REPORT,
                "report differs from its re-derivation",
                "re-derived text",
                "other text",
            )
        )
