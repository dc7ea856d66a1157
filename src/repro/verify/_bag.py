"""A bag checked as BagIt alone (``repro verify --bagit-only``), and the first stage every
verification shares: the tree walked, or the packed bundle listed.

Kept apart from :mod:`~repro.verify._core` so that an archivist's integrity check imports the
tree walk, the reader and the BagIt stage, and none of the content stage (the models, the
derivations): on a large bag the check's wall time is near the hashing limit, and start-up is a
part of it (docs/performance.md).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from attrs import frozen

from repro import _layout as layout
from repro.errors import BadInput
from repro.verify import _packed as packed
from repro.verify import _parallel as parallel
from repro.verify import _walk as walk
from repro.verify._findings import Finding, Findings
from repro.verify._integrity import TOLERATED, bag_reads, check_bag
from repro.verify._limits import Limits
from repro.verify._reader import BundleReader
from repro.verify._tagfiles import Declaration
from repro.verify._walk import DirectorySource, Listing, Source

__all__ = ["BagVerification", "bag_stage", "listed", "requested", "verify_bag"]


@frozen
class BagVerification:
    """What ``repro verify --bagit-only`` finds of a bag: its faults (``findings``; none when it
    is a valid bag), what BagIt tolerates but the bag had better not hold (``warnings``), and
    the BagIt version it was read by (None when verify read none of it)."""

    findings: list[Finding]
    warnings: list[Finding]
    version: str | None


def verify_bag(
    root: str | os.PathLike[str], limits: Limits = Limits(), jobs: int | None = None
) -> BagVerification:
    """Check the bag at ``root`` (a directory, or a zip or tar file of one in one top-level
    directory) as a BagIt 1.0 or 0.97 bag alone, whoever wrote it: the tree walk and the BagIt
    stage (:func:`repro.verify._integrity.check_bag`), within ``limits``, fetching nothing and
    reading nothing outside it. Raises :class:`BadInput` only when ``root`` is neither a
    directory nor a zip or tar file."""
    asked = requested(jobs)
    findings = Findings(limits.max_findings)
    listing, source = listed(Path(root), limits, findings)
    walked = findings.close()
    findings = Findings(limits.max_findings)
    findings.extend(f for f in walked if f.code not in TOLERATED)
    warnings = [f for f in walked if f.code in TOLERATED]
    if listing.stopped or source is None:
        return BagVerification(findings.close(), warnings, None)
    declared, tolerated = bag_stage(listing, source, limits, asked, findings)
    return BagVerification(findings.close(), warnings + tolerated, declared.version)


def bag_stage(
    listing: Listing, source: Source, limits: Limits, asked: int | None, findings: Findings
) -> tuple[Declaration, list[Finding]]:
    """The BagIt stage of a bag, read by a reader of its own."""
    read = BundleReader(source, findings, limits, bag_reads(listing.sizes))
    pool = parallel.Jobs.choose(
        asked, sum(listing.sizes.values()), isinstance(source, DirectorySource)
    )
    try:
        read.prefetch(pool, listing.sizes)
        return check_bag(listing, read, findings)
    finally:
        pool.close()


def requested(jobs: int | None) -> int | None:
    """The jobs asked for (``--jobs``, else ``REPRO_VERIFY_JOBS``); a bad setting is bad
    input."""
    try:
        return parallel.requested_jobs(jobs)
    except ValueError as exc:
        raise BadInput(str(exc)) from None


def listed(root: Path, limits: Limits, findings: Findings) -> tuple[Listing, Source | None]:
    """Stage 1: the bundle directory walked, or the packed bundle listed; and where its files
    are read from (None when a limit left nothing to read)."""
    if layout.is_packed(root):
        return packed.scan_archive(root, limits, findings)
    try:
        mode = os.lstat(root).st_mode
    except (OSError, ValueError) as exc:
        raise BadInput(f"{root}: not a bundle directory ({exc})") from None
    if not stat.S_ISDIR(mode):
        raise BadInput(f"{root}: not a bundle directory")
    listing = walk.scan_tree(root, limits, findings)
    # The root's own entries are listed first, so its tag files are seen even when a limit
    # stopped the scan (a packed bundle's members come in any order: it is judged only when
    # listed whole).
    return listing, DirectorySource({name: root / name for name in listing.sizes})
