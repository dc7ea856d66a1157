"""How much verify reads and recomputes at most: the :class:`Limits` every stage keeps to, so
that no tree can make it consume unbounded memory, time or file descriptors."""

from __future__ import annotations

from collections.abc import Iterable

import attrs
from attrs import field, frozen
from attrs.validators import ge

from repro._json import canonical
from repro._protocol.work import MAX_DERIVATION_WORK
from repro.errors import BadInput
from repro.verify._findings import MAX_DIFFS

__all__ = ["MAX_FILE_BYTES", "Limits", "limit_names", "raise_hint", "with_limits"]

MAX_FILE_BYTES = 1 << 30


@frozen
class Limits:
    """How much :func:`verify` reads and recomputes at most. Past a limit it reports a finding
    that names the limit and what it found, and reads no further, so no tree can make it consume
    unbounded memory, time or file descriptors."""

    #: Entries of any kind (files, directories, links; in a packed bundle, members) the scan
    #: lists; it stops at the next one and nothing is read.
    max_files: int = field(default=100_000, validator=ge(1))
    #: Bytes of one file; a larger file is not read.
    max_file_bytes: int = field(default=MAX_FILE_BYTES, validator=ge(1))
    #: Bytes of all regular files together (in a packed bundle, as its members declare them,
    #: uncompressed); past it the scan stops and nothing is read.
    max_total_bytes: int = field(default=16 << 30, validator=ge(1))
    #: Directory nesting below the root (``data/runs`` is at depth 2); a deeper directory is
    #: named and not entered.
    max_depth: int = field(default=8, validator=ge(0))
    #: Nesting of arrays and objects in a JSON file (see :func:`repro._json.canonical.loads`).
    max_json_depth: int = field(default=canonical.MAX_DEPTH, validator=ge(1))
    #: Bootstrap resamples verify recomputes, of the intervals (the protocol default is 9999)
    #: or of rliable's aggregates (``rl.bootstrap``); a protocol asking for more is named and
    #: its aggregates are not re-derived.
    max_resamples: int = field(default=100_000, validator=ge(1))
    #: Work the protocol may ask of the derivations verify runs again, all its bootstraps and
    #: contrasts together (:func:`repro._protocol.work.derivation_work`): past it, named and
    #: nothing is re-derived. The default is the bound a study's rules refuse a protocol past,
    #: so only a bundle of an earlier repro, or a forged one, can ask more.
    max_derivation_work: int = field(default=MAX_DERIVATION_WORK, validator=ge(0))
    #: Bytes of a file verify holds whole to parse it: a tag file, or a payload file whose size
    #: does not grow with the runs (protocol, seal, ledger, aggregates, tiers, ...). A larger
    #: one is named and not parsed (its digest is still checked). Those files grow with the
    #: conditions, some hundreds of bytes each, and a bundle within ``max_files`` holds at most
    #: a third as many partitions (a plan, a runs and a times file each): a few MB. Parsing
    #: many small values costs far more than reading bytes (a 33 MB seal: 2.7 s), so the limit
    #: keeps a file's parse within seconds.
    max_held_file_bytes: int = field(default=32 << 20, validator=ge(1))
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
    #: Signature files (``signatures/*.dsse.json``) verify reads; the rest are named in one
    #: finding and not read.
    max_signatures: int = field(default=64, validator=ge(0))
    #: Bytes of one signature file (an envelope of repro's is about 1 KiB); a larger one is
    #: named and not read.
    max_signature_bytes: int = field(default=64 << 10, validator=ge(1))
    #: Signatures in one DSSE envelope (repro writes one; DSSE allows any number). Each is
    #: checked against each trusted key it may be by, an Ed25519 verification apiece; an
    #: envelope with more is named (``signature-malformed``) and none of its signatures checked.
    max_envelope_signatures: int = field(default=16, validator=ge(1))
    #: Bytes a member of a packed bundle (a zip) may declare per byte it is stored in. Deflate,
    #: the one compression verify inflates, cannot pass about 1032 to 1, and a bundle's files
    #: stay far below it (a runs file of ten thousand identical CartPole records deflates about
    #: 600 to 1): a member that declares more is named and not inflated.
    max_compression_ratio: int = field(default=1000, validator=ge(1))
    #: Bytes of a zip's index (its central directory, some 80 bytes a member of a bundle), which
    #: is read whole to list the members; a larger one is named and nothing is read.
    max_archive_index_bytes: int = field(default=32 << 20, validator=ge(1))
    #: Bytes the members of a packed bundle declare in all per byte of the archive file: what
    #: verify inflates, hashes and scans for each byte it is given. A bundle's files deflate
    #: some 10 to 30 to 1 together; past it the listing stops and nothing is read.
    max_archive_ratio: int = field(default=50, validator=ge(1))


def limit_names() -> list[str]:
    """The names of the limits, as ``--limit`` and :class:`Limits` take them."""
    return [a.name for a in attrs.fields(Limits)]


def raise_hint(name: str) -> str:
    """How a user who knows the bundle is this large lets verify go past the limit ``name``."""
    return f"to verify it anyway, raise the limit (repro verify --limit {name}=N)"


def with_limits(limits: Limits, settings: Iterable[str]) -> Limits:
    """``limits`` with each ``NAME=VALUE`` of ``settings`` (``--limit``) set: a known name and
    a whole number it allows, else :class:`BadInput` naming the setting."""
    changes: dict[str, int] = {}
    names = limit_names()
    for setting in settings:
        name, _, text = setting.partition("=")
        if name not in names:
            raise BadInput(f"--limit {setting!r}: not a limit; the limits are {', '.join(names)}")
        try:
            changes[name] = int(text)
        except ValueError:
            raise BadInput(f"--limit {setting!r}: {text!r} is not a whole number") from None
    try:
        return attrs.evolve(limits, **changes)
    except ValueError as exc:
        raise BadInput(f"--limit: {exc}") from None
