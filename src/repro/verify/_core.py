"""The offline verifier in its stages, and the one way other commands read a bundle.

It needs no simulator and no network. The stages run cheapest first: the tree walk
(:mod:`~repro.verify._walk`), integrity (:mod:`~repro.verify._integrity`: layout, BagIt
declaration, manifests, completeness, digests, bag-info.txt), then content
(:mod:`~repro.verify._content`: parsing, the joins, the validity rules and the re-derivations),
every file read by the strict reader (:mod:`~repro.verify._reader`). Every problem is a
:class:`~repro.verify._findings.Finding`; nothing is logged and passed over.

:func:`~repro.verify._bag.verify_bag` (``repro verify --bagit-only``; a module of its own, which
imports none of the content stage) checks any bag as BagIt 1.0 or 0.97 alone, whoever wrote it:
the tree walk and the same BagIt stage, read as BagIt allows
(:func:`~repro.verify._integrity.check_bag`), no content, no signature. :func:`verify` refuses as
bad input a root that holds no ``data/protocol.json`` and is such a valid bag: another tool's,
not a study's (a study writes the protocol before any manifest).

``show``, ``publish``, ``compare`` and ``replay`` read a bundle only through
:func:`open_verified`: it verifies, and hands back what verify parsed, with the same reader for
the files read later (run records, partitions), so that nothing is read behind verify's back and
a file that changes after verify read it is named, not used.

Whatever the tree holds, verify stays inside it and within bounds: it never follows a symlink
(every file and directory is opened by name, one component at a time, relative to its parent's
descriptor, with ``O_NOFOLLOW``), it reads nothing past its :class:`Limits`, and it raises nothing
but :class:`BadInput`, and that only for a root that is not a directory nor a zip or tar file.
A packed bundle (:mod:`~repro.verify._packed`) is listed and read in place, never extracted, and
goes through the same stages.

What it holds does not grow with the runs: every file is read once in blocks to be hashed and
scanned; the partitions and runs files, whose size grows with the plan, are read again where they
are parsed (a file that changed in between is named), run records one line at a time, and each
partition's runs are reduced to their tally (:mod:`repro._derive.tally`) before the next partition
is read. The derivations are those ``repro study`` ran, on the same tally.

The first reads and the partitions are read as jobs (:mod:`~repro.verify._parallel`), on as many
cores as the process may run on; each job reads through a reader of its own, and what each finds
is taken in sealed order, as one reader reading them in turn would have found it, so that the
findings are the same whatever the number of jobs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from attrs import frozen

from repro import _layout as layout
from repro._json import schemas
from repro._layout import TAG_FILES, TAGMANIFEST
from repro.errors import BadInput, NotVerified
from repro.models import (
    Aggregates,
    Checkpoint,
    Continuation,
    ContrastsFile,
    Environment,
    FrozenProtocol,
    Ledger,
    Partition,
    RLAggregates,
    RunRecord,
    Scores,
    Seal,
    Tiers,
)
from repro.verify import _parallel as parallel
from repro.verify._bag import bag_stage, listed, requested
from repro.verify._content import Stored, check_content
from repro.verify._findings import Finding, Findings, with_causes
from repro.verify._integrity import TOLERATED, check_integrity
from repro.verify._limits import Limits
from repro.verify._reader import BundleReader
from repro.verify._signatures import SignatureStatus, check_signatures
from repro.verify._walk import STUDY_MARKS, DirectorySource, Listing, Source, unfinished

if TYPE_CHECKING:
    from repro._bundle.signatures import PublicKey

__all__ = [
    "Verification",
    "VerifiedBundle",
    "open_verified",
    "read_signatures",
    "verification",
    "verify",
]

T = TypeVar("T")


@frozen
class Verification:
    """One verification's findings and what it found of each signature file, and, when it got
    as far as reading the files, the reader and what it parsed."""

    findings: list[Finding]
    signatures: list[SignatureStatus]
    _read: BundleReader | None = None
    _stored: Stored | None = None

    @property
    def ok(self) -> bool:
        """Whether the bundle verifies: no finding (a signature's among them)."""
        return not self.findings

    @property
    def bundle_sha256(self) -> str | None:
        """The bundle's identity, the sha256 of the tag manifest verify read, when it verifies
        (see :func:`~repro._layout.bundle_sha256`); a packed bundle's is its bag's."""
        return None if self.findings else self.tagmanifest_sha256

    @property
    def tagmanifest_sha256(self) -> str | None:
        """The sha256 of the tag manifest verify read, whether or not the bundle verifies (what
        a summary of a failed verification names); None when verify read none."""
        return self.file_sha256(TAGMANIFEST)

    def file_sha256(self, name: str) -> str | None:
        """The sha256 of the bundle's file ``name`` as verify read it (a signature file's, say);
        None when verify did not read it."""
        return None if self._read is None else self._read.sha256(name)

    @property
    def reproduction(self) -> str | None:
        """The reproduction class the bundle's tiers.json states (re-derived by verify: when the
        bundle verifies, the files give this class); None when it could not be parsed."""
        stored = self._stored
        return None if stored is None or stored.tiers is None else stored.tiers.reproduction.verdict


def _foreign(
    listing: Listing, source: Source, limits: Limits, asked: int | None
) -> list[Finding] | None:
    """What the BagIt check finds of a root that is no repro bundle, or None when it may be
    one (a study's that stopped, or a bundle whose protocol is gone). A root is no repro bundle
    when it holds no protocol, none of the files only a study writes (its plan, ledger, runs),
    and more than a study that stopped at once holds (bagit.txt, and a protocol being written):
    a study writes its protocol right after bagit.txt. Its findings are BagIt's alone: none,
    a valid bag that is not a repro bundle; some, an invalid bag, each fault named."""
    if layout.PROTOCOL in listing.entries or any(
        name in (layout.SEAL, layout.LEDGER) or name.startswith(("data/plans/", "data/runs/"))
        for name in listing.entries
    ):
        return None
    if all(name in ("bagit.txt", "data") or _partial(name) for name in listing.entries):
        return None  # all a study that stopped at once holds
    findings = Findings(limits.max_findings)
    bag_stage(listing, source, limits, asked, findings)
    return [f for f in findings.close() if f.code not in TOLERATED]


def _partial(name: str) -> bool:
    """Whether ``name`` is a file a study writes under a temporary name (``.NAME.partial``)."""
    last = name.rsplit("/", 1)[-1]
    return last.startswith(".") and last.endswith(".partial")


def verification(
    root: str | os.PathLike[str],
    trusted_keys: Sequence[PublicKey] = (),
    limits: Limits = Limits(),
    jobs: int | None = None,
) -> Verification:
    """Verify the bundle at ``root`` as :func:`verify` does, checking its signatures against
    ``trusted_keys`` (:mod:`repro.verify._signatures`; without any, each signature is listed as
    not checked): its findings, and each signature file's status."""
    return _verification(Path(root), limits, trusted_keys, jobs)


def read_signatures(
    root: str | os.PathLike[str], trusted_keys: Sequence[PublicKey] = (), limits: Limits = Limits()
) -> list[SignatureStatus]:
    """What verify finds of each signature file of the bundle at ``root``, in name order
    (see :func:`verification`)."""
    return _verification(Path(root), limits, trusted_keys).signatures


def _verification(
    root: Path, limits: Limits, trusted: Sequence[PublicKey] = (), jobs: int | None = None
) -> Verification:
    asked = requested(jobs)
    # The schemas are consulted only to name what the models refuse, but read now: once verify
    # reads the bundle, the only files it opens are the bundle's.
    for kind in schemas.SCHEMAS:
        schemas.load(kind)
    findings = Findings(limits.max_findings)
    listing, source = listed(root, limits, findings)
    # A study writes bagit.txt before anything else: a root that holds no tag file was never a
    # study's, finished or not.
    judged = isinstance(source, DirectorySource) or not listing.stopped
    if judged and not listing.entries & STUDY_MARKS:
        raise BadInput(
            f"{root}: not a bundle (it holds none of {', '.join(TAG_FILES)}; a study writes "
            "bagit.txt first)"
        )
    if listing.stopped or source is None:
        return Verification(findings.close(), [])
    foreign = _foreign(listing, source, limits, asked)
    if foreign is not None:
        faults = [f for f in findings if f.code not in TOLERATED] + foreign
        if not faults:
            raise BadInput(
                f"{root}: a valid BagIt bag, not a repro bundle: it holds no {layout.PROTOCOL} "
                "(repro verify --bagit-only checks it as a bag)"
            )
        codes = sorted({f.code for f in faults})
        raise BadInput(
            f"{root}: not a repro bundle (it holds no {layout.PROTOCOL}, nor any file only a "
            f"study writes), and an invalid BagIt bag: {len(faults)} finding(s), "
            f"{', '.join(codes)} (repro verify --bagit-only names each)"
        )
    findings[:0] = unfinished(listing)
    read = BundleReader(source, findings, limits)
    pool = parallel.Jobs.choose(
        asked, sum(listing.sizes.values()), isinstance(source, DirectorySource)
    )
    try:
        read.prefetch(pool, listing.sizes)
        check_integrity(listing, read, findings)
        stored = _content(read, limits, pool, findings)
    finally:
        pool.close()
    signatures = check_signatures(listing, read, stored, trusted, limits, findings)
    return Verification(with_causes(findings.close()), signatures, read, stored)


def _content(
    read: BundleReader, limits: Limits, pool: parallel.Jobs, findings: Findings
) -> Stored | None:
    """Stage 3, whatever the re-derivations raise."""
    try:
        return check_content(read, limits, pool)
    except Exception as exc:
        # The re-derivations run repro's statistics and judgement on whatever schema-valid values
        # the files hold (a sum that overflows, a degenerate sample). Whatever they raise, the
        # bundle does not verify: say so as a finding rather than crash.
        findings.append(
            Finding(
                "could-not-process",
                layout.DATA,
                "verify could not process the data",
                "data the re-derivations accept",
                f"{type(exc).__name__}: {exc}"[:200],
            )
        )
        return None


def verify(
    root: str | os.PathLike[str], limits: Limits = Limits(), jobs: int | None = None
) -> list[Finding]:
    """Every finding for the bundle at ``root`` (a directory, or a packed bundle: a zip or tar
    file); empty when it verifies. Raises :class:`BadInput` when ``root`` is neither (a symlink
    to one is not), or is not a bundle: it holds none of the BagIt tag files, of which a study
    writes bagit.txt first, or it is a valid BagIt bag without ``data/protocol.json``. Whatever
    else the tree holds, every problem is a finding. When the root is an unfinished study
    (bagit.txt or another tag file, but no tag manifest), the first finding says so
    (:attr:`Finding.incomplete`). ``jobs``: how many jobs verify runs at a time
    (:mod:`~repro.verify._parallel`; by default the cores it has), which changes nothing of the
    findings."""
    return _verification(Path(root), limits, jobs=jobs).findings


@frozen
class VerifiedBundle:
    """A bundle that verified, with the files verify parsed and its identity (the sha256 of the
    tag manifest verify read). The files read later (the partitions, the run records, the
    checkpoints) are read by verify's own reader, checked against what verify read: a file
    changed since raises :class:`NotVerified` naming it."""

    root: Path
    bundle_sha256: str
    protocol: FrozenProtocol
    seal: Seal
    ledger: Ledger
    aggregates: Aggregates
    tiers: Tiers
    environment: Environment
    #: None for a protocol without scoring.
    scores: Scores | None
    _read: BundleReader
    #: None for a protocol that declares no contrasts.
    contrasts: ContrastsFile | None = None
    #: None for a protocol without an ``rl`` section.
    rl: RLAggregates | None = None
    #: Each signature file, as verify found it (not checked: open_verified trusts no key).
    signatures: tuple[SignatureStatus, ...] = ()
    #: continuation.json, in the bundle of a study continued from an interrupted one; None in
    #: any other.
    continuation: Continuation | None = None

    @property
    def packed(self) -> bool:
        """Whether the bundle is packed (a zip or tar file) rather than a directory."""
        return not isinstance(self._read.source, DirectorySource)

    def names(self) -> list[str]:
        """Every file of the bundle, by bundle name, in sorted order: the bag's tag files, its
        payload and its signatures."""
        return sorted(self._read.files)

    def size(self, name: str) -> int:
        """Bytes of one file, as verify read them."""
        size = self._read.size(name)
        if size is None:
            raise NotVerified([_changed(self.root)])
        return size

    def blocks(self, name: str) -> Iterator[bytes]:
        """The bytes of one file, read again in blocks by verify's reader. A file that is no
        longer what verify read raises :class:`NotVerified` once its last block is read."""
        since = len(self._read.findings)
        yield from self._read.blocks(name)
        if len(self._read.findings) > since:
            raise self._failed(since)

    def _failed(self, since: int) -> NotVerified:
        return NotVerified(list(self._read.findings[since:]) or [_changed(self.root)])

    def _model(self, name: str, kind: str, cls: type[T]) -> T:
        since = len(self._read.findings)
        value = self._read.json(name, kind, cls)
        if value is None or len(self._read.findings) > since:
            raise self._failed(since)
        return value

    def partitions(self) -> Iterator[Partition]:
        """The sealed partitions, in sealed order, read one at a time."""
        for ref in self.seal.partitions:
            yield self._model(layout.DATA + ref.file, "partition", Partition)

    def records(self, partition: str) -> Iterator[RunRecord]:
        """The run records of one sealed partition, in the order of its runs file, one line at
        a time. A file that is no longer what verify read raises :class:`NotVerified` at the
        latest once its last line is read."""
        since = len(self._read.findings)
        lines = self._read.run_records(layout.runs_file(partition))
        if lines is None:
            raise self._failed(since)
        for record in lines:
            if record is None or len(self._read.findings) > since:
                raise self._failed(since)
            yield record
        if len(self._read.findings) > since:
            raise self._failed(since)

    def all_records(self) -> Iterator[RunRecord]:
        """Every run record of the bundle, partition by partition in sealed order."""
        for ref in self.seal.partitions:
            yield from self.records(ref.id)

    def checkpoint(self, partition: str) -> Checkpoint:
        """A stream-seeded partition's checkpoint."""
        return self._model(layout.checkpoint_file(partition), "checkpoint", Checkpoint)


def _changed(root: Path) -> Finding:
    return Finding(
        "changed-after-verify",
        layout.DATA,
        f"{root} changed after it verified: read it again",
        "the files verify read",
        "other files",
    )


def open_verified(root: str | os.PathLike[str], limits: Limits = Limits()) -> VerifiedBundle:
    """Verify the bundle at ``root`` and return what verify parsed. Raises :class:`NotVerified`
    with every finding when it does not verify, and :class:`BadInput` when ``root`` is not a
    bundle directory at all (see :func:`verify`)."""
    root = Path(root)
    done = _verification(root, limits)
    if done.findings or done._read is None or done._stored is None:
        raise NotVerified(done.findings or [_changed(root)])
    s, digest = done._stored, done._read.sha256(TAGMANIFEST)
    if (
        s.protocol is None
        or s.seal is None
        or s.ledger is None
        or s.aggregates is None
        or s.tiers is None
        or s.environment is None
        or digest is None
        or (s.protocol.protocol.scoring is not None and s.scores is None)
        or (s.protocol.protocol.contrasts is not None and s.contrasts is None)
        or (s.protocol.protocol.rl is not None and s.rl is None)
        or (layout.CONTINUATION in done._read.files and s.continuation is None)
    ):
        raise NotVerified([_changed(root)])
    return VerifiedBundle(
        root,
        digest,
        s.protocol,
        s.seal,
        s.ledger,
        s.aggregates,
        s.tiers,
        s.environment,
        s.scores,
        done._read,
        s.contrasts,
        s.rl,
        tuple(done.signatures),
        s.continuation,
    )
