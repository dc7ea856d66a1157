"""The RO-Crate metadata re-derived: each partition's actions made by its job, joined with
its times file a line at a time, hashed as they are made and compared with the stored crate's
digest at the end."""

from __future__ import annotations

import hashlib
import pickle
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from repro import _layout as layout
from repro._derive.crate import CRATE_VERSION, VERSIONS, ActionFacts, CrateBuilder, version_of
from repro._derive.tally import Attempt, runs
from repro._layout import CRATE
from repro.models import AttemptTimes, FrozenProtocol, Partition, Seal
from repro.verify._content.compare import short
from repro.verify._content.jobs import JobReader, Stretch
from repro.verify._content.stored import Stored
from repro.verify._findings import Finding
from repro.verify._limits import Limits
from repro.verify._reader import BundleReader
from repro.verify._walk import Source as FileSource

#: Bytes of a partition's actions inflated at a time.
_BLOCK = 1 << 16


class CrateCheck:
    """The re-derivation of data/ro-crate-metadata.json, one partition at a time as verify reads
    them: its bytes are hashed as they are made (each partition's made by its job, see
    :func:`crate_partition`), and the digest is compared at the end."""

    def __init__(self, builder: CrateBuilder, window: tuple[str, str] | None) -> None:
        self.builder = builder
        self._hash = hashlib.sha256(builder.head())
        #: When the study ran, to the second (environment.json), where the attempts' times come
        #: from the same clock (local workers; a cluster's workers have their own).
        self.window = window
        #: False once a partition's actions could not be made (its files are named already).
        self.whole = True

    def add(self, made: bytes, broken: bool) -> None:
        """Add one partition's actions as its job made them (deflated); ``broken``: they could
        not all be made, which leaves the crate unjudged."""
        unpacker = zlib.decompressobj()
        data = made
        while data:
            self._hash.update(unpacker.decompress(data, _BLOCK))
            data = unpacker.unconsumed_tail
        self._hash.update(unpacker.flush())
        if broken:
            self.whole = False

    def finish(self, read: BundleReader, mentions: Iterable[tuple[str, Mentioned]]) -> None:
        """Compare the re-derived crate with the file, if every partition was made. The root's
        mentions are the attempts of the times files, read again one line at a time, a
        partition's by a job (:func:`times_mentions`): ``mentions``, each file's in sealed order."""
        if not self.whole:
            return

        def attempts() -> Iterator[str]:
            for name, (got, packed) in mentions:
                got.into(read, name)
                yield from _mentioned(packed)

        for piece in self.builder.tail(attempts()):
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


#: What :func:`times_mentions` gives: the attempt IDs pickled and deflated (a tenth of the list's
#: bytes, so that the verifier may hold several while a partition's job ends; see
#: :func:`_mentioned`).
Mentioned = tuple[Stretch, bytes]


def times_mentions(
    context: tuple[FileSource, Limits], task: tuple[str, dict[str, Any]]
) -> Mentioned:
    """A job (:mod:`repro.verify._parallel`): the attempt IDs of a times file's lines, read
    again (findings about its content are not made twice)."""
    name, seen = task
    job = JobReader(*context, seen)
    with job.read.repeating():
        ids = [t for t in job.read.times_ids(name) or () if t is not None]
    return job.stretch(), zlib.compress(pickle.dumps(ids, protocol=pickle.HIGHEST_PROTOCOL), 1)


def _mentioned(packed: bytes) -> list[str]:
    """The attempt IDs :func:`times_mentions` gave."""
    ids: list[str] = pickle.loads(zlib.decompress(packed))
    return ids


def crate_partition(
    read: BundleReader,
    builder: CrateBuilder,
    window: tuple[str, str] | None,
    partition: Partition,
    attempts: list[Attempt],
) -> tuple[bytes, bool]:
    """The crate's actions of ``partition``'s attempts that ran, joined one by one with the
    lines of its times file as they are read, and whether they could not all be made: a file
    that does not parse, or does not hold one line per attempt that ran (in the runs file's
    order, each ending after it starts), is named and leaves the crate unjudged."""
    name = layout.times_file(partition.id)
    lines = read.times_lines(name)
    if lines is None:
        return b"", True
    declared = {e.slot for e in partition.entries if not runs(e)}
    ran = [a for a in attempts if a.slot not in declared]
    broken: list[str] = []
    joined = joined_times(read, name, ran, iter(lines), broken, window)
    # Deflated as they are made: what is held and handed over is a tenth of the actions' bytes.
    packer = zlib.compressobj(1)
    made = [packer.compress(piece) for piece in builder.partition(partition.id, joined)]
    made.append(packer.flush())
    return b"".join(made), bool(broken)


_END = object()


def joined_times(
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
    end, to the second; a partition carried from an interrupted study's, from ``""`` to the
    study's start), or is missing or left over, ends the join: it is named and put in
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
            expected = f"{window[0]} to {window[1]}"
            if not window[0]:  # carried from an interrupted study
                what = f"attempt {a.attempt_id}, carried, ran after the study started"
                expected = f"before {window[1]}"
            found = f"{t.started_utc} to {t.finished_utc}"
            read.findings.append(Finding("times-outside-study", name, what, expected, found))
            broken.append(name)
            return
        yield ActionFacts(a.attempt_id, a.slot, a.condition, a.status, a.cause, t)
    extra = next(lines, _END)
    if extra is not _END:
        found = extra.attempt_id if isinstance(extra, AttemptTimes) else "a line"
        what = f"times do not match the attempts that ran, from line {len(ran) + 1}"
        read.findings.append(Finding("times-mismatch", name, what, "end of file", found))
        broken.append(name)


def crate_check(
    read: BundleReader, stored: Stored, fp: FrozenProtocol, seal: Seal
) -> CrateCheck | None:
    """The crate's re-derivation, made as the partitions are read; None without the ledger and
    the environment it describes."""
    ledger, environment = stored.ledger, stored.environment
    if ledger is None or environment is None:
        return None
    continued = layout.CONTINUATION in read.files
    payload = layout.payload_files(fp, [ref.id for ref in seal.partitions], continued)
    # A cluster's workers time the attempts by their own clocks.
    window = (
        None
        if environment.backend == "dask"
        else (environment.started_utc, environment.finished_utc)
    )
    version = _crate_version(read)
    if version is None:
        return None
    return CrateCheck(CrateBuilder(fp, ledger, environment, payload, version), window)


#: How much of the stored crate is read to find its version: its first line (the context) and
#: its metadata descriptor's, each a few hundred bytes.
_CRATE_HEAD_BYTES = 4096


def _crate_version(read: BundleReader) -> int | None:
    """The crate version the stored crate declares in its metadata descriptor (its second line),
    re-derived as that version. A descriptor that does not parse leaves the current version,
    whose re-derivation then differs; a marker verify does not know is named, and leaves the
    crate unjudged (None); so does a crate that cannot be read (named by the reader)."""
    head = read.head(CRATE, _CRATE_HEAD_BYTES)
    if head is None:
        return None
    lines = head.split(b"\n", 2)
    try:
        descriptor = orjson.loads(lines[1].removesuffix(b",")) if len(lines) > 2 else None
    except orjson.JSONDecodeError:
        descriptor = None
    if not isinstance(descriptor, dict) or descriptor.get("@id") != "ro-crate-metadata.json":
        return CRATE_VERSION
    version = version_of(descriptor)
    if version is None:
        read.findings.append(
            Finding(
                "crate-version",
                CRATE,
                "RO-Crate metadata declares a version verify does not know",
                " or ".join(repr(v) for v in VERSIONS if v is not None) + " or none",
                short(repr(descriptor.get("version"))),
            )
        )
    return version
