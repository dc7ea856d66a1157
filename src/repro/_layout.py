"""The one definition of which files a bundle holds: the BagIt tag files, the payload files every
bundle has, those each sealed partition adds, and which of them the derivations read. The
writer, the crate, ``verify``'s expected-file checks, the disclosure tier and the readers all
take their file names from here; and what a bundle's names and identity are: a name that stays
inside the bag (:func:`unsafe_path`), a packed bundle (:func:`is_packed`), the bundle's sha256
(:func:`bundle_sha256`).

It imports nothing else of repro at run time but :func:`repro._files.open_below` (standard
library only), so every layer may read it."""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from repro._files import open_below

if TYPE_CHECKING:
    from repro.models import FrozenProtocol, Protocol

__all__ = [
    "AGGREGATES",
    "BAGIT",
    "BAGIT_PROFILE",
    "BAGIT_PROFILE_FILE",
    "BAGIT_PROFILE_LABEL",
    "BAGIT_TXT",
    "BAG_INFO",
    "CONTINUATION",
    "CONTRASTS",
    "CRATE",
    "DATA",
    "DESCRIPTION_LABEL",
    "ENVIRONMENT",
    "FIXED_PAYLOAD",
    "LEDGER",
    "MANIFEST",
    "MANIFEST_LINE",
    "PARTITIONED",
    "PROTOCOL",
    "REPORT",
    "RL_AGGREGATES",
    "SCORES",
    "SEAL",
    "SIGNATURES",
    "TAGMANIFEST",
    "TAG_FILES",
    "TIERS",
    "bundle_sha256",
    "checkpoint_file",
    "is_derivation_input",
    "is_packed",
    "is_partitioned",
    "is_signature",
    "partition_files",
    "payload_files",
    "plan_file",
    "records_files",
    "run_files",
    "runs_file",
    "signature_file",
    "times_file",
    "unsafe_path",
]

#: The payload directory: the manifest names payload files with it, the seal without it.
DATA = "data/"
BAGIT = "bagit.txt"
#: What a study writes to :data:`BAGIT`, byte for byte.
BAGIT_TXT = b"BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n"
BAG_INFO = "bag-info.txt"
#: The bag-info.txt label under which a study writes its protocol's title.
DESCRIPTION_LABEL = "External-Description"
#: The bag-info.txt label naming the BagIt profile a bag conforms to (bagit-profiles 1.4.0).
BAGIT_PROFILE_LABEL = "BagIt-Profile-Identifier"
#: repro's BagIt profile, versioned: what a bundle declares under :data:`BAGIT_PROFILE_LABEL`
#: (bundles written before it declare none). The URI does not resolve (``.invalid``); the
#: profile ships in the package as :data:`BAGIT_PROFILE_FILE`.
BAGIT_PROFILE = "https://repro.invalid/bagit-profile/v1.json"
#: Where the profile lies inside the ``repro`` package (``importlib.resources``).
BAGIT_PROFILE_FILE = "data/bagit-profile.json"
MANIFEST = "manifest-sha256.txt"
TAGMANIFEST = "tagmanifest-sha256.txt"
#: A manifest line as repro writes it (and ``sha256sum -c`` reads it): digest, two spaces, path.
MANIFEST_LINE = re.compile(r"^([0-9a-f]{64})  (\S+)$")
#: The tag files at the bag's top, in the order a study writes them (the tag manifest last).
TAG_FILES = (BAGIT, BAG_INFO, MANIFEST, TAGMANIFEST)

PROTOCOL = "data/protocol.json"
LEDGER = "data/source-ledger.json"
AGGREGATES = "data/aggregates.json"
TIERS = "data/tiers.json"
ENVIRONMENT = "data/environment.json"
REPORT = "data/validation-report.md"
#: scores.json: in a bundle of a protocol with scoring, and only there.
SCORES = "data/scores.json"
#: contrasts.json: in a bundle of a protocol that declares contrasts, and only there.
CONTRASTS = "data/contrasts.json"
#: rl-aggregates.json: in a bundle of a protocol with an ``rl`` section, and only there.
RL_AGGREGATES = "data/rl-aggregates.json"
#: continuation.json: in a bundle of a study continued from an interrupted one
#: (``repro study --continue-from``), and only there: its account of the partitions it carried
#: whole and of those it ran.
CONTINUATION = "data/continuation.json"
SEAL = "data/plans/seal.json"
CRATE = "data/ro-crate-metadata.json"
#: The payload files every bundle has besides the crate, the seal and those of the partitions.
FIXED_PAYLOAD = (PROTOCOL, LEDGER, AGGREGATES, TIERS, ENVIRONMENT, REPORT)
#: The tag directory of signed attestations, beside the bag and outside every manifest (a
#: signature cannot be inside what it signs): ``signatures/<key>.<kind>.dsse.json``.
SIGNATURES = "signatures/"
#: A signature file's name: the first 12 hex digits of its key's SHA256 fingerprint, and the
#: kind of statement it signs (``bundle``, ``audit``).
_SIGNATURE = re.compile(r"^signatures/([0-9a-f]{12})\.([a-z][a-z0-9-]{0,31})\.dsse\.json$")
#: The payload directories whose files the seal's partitions name (and the seal itself).
PARTITIONED = ("data/plans/", "data/runs/", "data/times/")
#: The recorded adapter's records files, in a bundle whose protocol carries them
#: (``adapter.options.in_bundle``, true unless it says false), begin so
#: (:func:`records_files`): in plans/, beside the seal, being fixed before any run. A
#: condition's ID (``c`` and digits) never names a partition file so.
RECORDS = "data/plans/records"


def plan_file(partition: str) -> str:
    """plans/<partition>.json: the sealed partition (the seal names it as ``plans/<id>.json``)."""
    return f"data/plans/{partition}.json"


def runs_file(partition: str) -> str:
    """runs/<partition>.jsonl: one record per attempt of the partition's slots."""
    return f"data/runs/{partition}.jsonl"


def times_file(partition: str) -> str:
    """times/<partition>.jsonl: when each attempt of the partition that ran, ran."""
    return f"data/times/{partition}.jsonl"


def checkpoint_file(partition: str) -> str:
    """runs/<partition>.checkpoint.json: the generator's state before the partition (stream
    seeding only)."""
    return f"data/runs/{partition}.checkpoint.json"


def records_files(protocol: Protocol) -> list[str]:
    """Where a bundle of ``protocol`` carries the records files its runs were read from: none
    but for a protocol of the recorded adapter, which carries them unless it says not to
    (``in_bundle`` false). Its one file is ``records.csv`` for a CSV table, else
    ``records.json``; one file per participant (``records`` an object) is
    ``records.<participant>.json`` (``.csv``), in the protocol's participant order."""
    adapter = protocol.adapter
    if adapter.name != "recorded" or adapter.options.get("in_bundle", True) is not True:
        return []
    ext = ".csv" if adapter.options.get("format") == "csv" else ".json"
    records = adapter.options.get("records")
    if not isinstance(records, dict):
        return [RECORDS + ext]
    return [f"{RECORDS}.{p.id}{ext}" for p in protocol.participants if p.id in records]


def run_files(partition: str, stream: bool) -> list[str]:
    """The payload files one sealed partition's runs write: its runs and times files, and in
    stream mode its checkpoint."""
    names = [runs_file(partition), times_file(partition)]
    return [*names, checkpoint_file(partition)] if stream else names


def partition_files(partition: str, stream: bool) -> list[str]:
    """The payload files one sealed partition adds to a bundle: its plan file, then those its
    runs write (:func:`run_files`)."""
    return [plan_file(partition), *run_files(partition, stream)]


def payload_files(
    frozen_protocol: FrozenProtocol, partitions: Iterable[str], continued: bool = False
) -> list[str]:
    """Every payload file of a bundle of this protocol but the crate, sorted: what the crate
    lists as its parts. It follows from the protocol, the sealed partitions and whether the
    study was ``continued`` from an interrupted one (its bundle then holds
    :data:`CONTINUATION`) alone, so a file added to a bundle is named as such and does not
    change the crate's re-derivation."""
    p = frozen_protocol.protocol
    names = [*FIXED_PAYLOAD, SEAL, *([SCORES] if p.scoring is not None else [])]
    names += [CONTINUATION] if continued else []
    names += [CONTRASTS] if p.contrasts is not None else []
    names += [RL_AGGREGATES] if p.rl is not None else []
    names += records_files(p)
    for partition in partitions:
        names += partition_files(partition, p.seeding.mode == "stream")
    return sorted(names)


def signature_file(key: str, kind: str) -> str:
    """signatures/<key>.<kind>.dsse.json: the DSSE envelope by the key whose fingerprint begins
    with the 12 hex digits ``key``, over a statement of ``kind``."""
    name = f"{SIGNATURES}{key}.{kind}.dsse.json"
    if not _SIGNATURE.match(name):
        raise ValueError(f"not a signature file name: {name!r}")
    return name


def is_signature(name: str) -> tuple[str, str] | None:
    """The key digits and the kind a signature file's name gives, or None when ``name`` is no
    signature file's."""
    match = _SIGNATURE.match(name)
    return None if match is None else (match.group(1), match.group(2))


def is_partitioned(name: str) -> bool:
    """Whether payload file ``name`` lies where the seal's partitions put their files."""
    return name.startswith(PARTITIONED)


def is_derivation_input(name: str) -> bool:
    """Whether the derivations read ``name``: the protocol, the plan, the runs, the source
    ledger (which carries the facts gathered at run time) and the environment. The derived
    files repeat what these hold, and the tag files are checked by ``verify`` alone."""
    return name in (PROTOCOL, LEDGER, ENVIRONMENT) or name.startswith(("data/plans/", "data/runs/"))


def unsafe_path(path: str, *, controls: bool = False) -> str | None:
    """Why a bundle name (``/``-separated, as a manifest line or an archive member names a
    file) does not name a place inside the bag, or None when it does. A control character is
    refused unless ``controls`` allows it: a BagIt 1.0 manifest may name a file whose name holds
    a line feed, percent-encoded."""
    if path.startswith("/"):
        return "absolute path"
    if "\\" in path:
        return "backslash in path"
    parts = path.split("/")
    if ".." in parts:
        return "path traversal (..)"
    if "" in parts or "." in parts:
        return "empty or '.' path component"
    if not controls and any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
        return "control character in path"
    return None


def is_packed(path: Path) -> bool:
    """Whether ``path`` is a regular file (not a link to one): what can only be a packed
    bundle, where a bundle directory is expected."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except (OSError, ValueError):
        return False


def bundle_sha256(root: Path) -> str:
    """The bundle's identity: the sha256 of its tag manifest, which pins the other tag files,
    which pin every payload file. A bag carries no signature, so a forger who rewrites a file
    that is not re-derived (environment.json, bag-info.txt) and both manifests goes unnoticed by
    :func:`repro.verify.verify`, but not by a reader who compares this digest with a published
    one. Call it on a root that verifies."""
    digest = hashlib.sha256()
    fd = open_below(root, TAGMANIFEST)
    try:
        while block := os.read(fd, 1 << 20):
            digest.update(block)
    finally:
        os.close(fd)
    return digest.hexdigest()
