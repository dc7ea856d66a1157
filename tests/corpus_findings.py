"""Findings of tamper cases on one committed bundle, to compare one verify with another.

``tests/data/corpus-base/`` is a real bundle of the small protocol cut to 2 runs per condition,
the base the tamper corpus uses (``tests/test_corpus.py``). ``tests/data/corpus-findings.json``
holds what ``verify`` found in each case on it, first written before verify read the runs one
record at a time, and written again when verify gained the validity rules, the sealed-order
check and the corpus its three newer kinds (the cases whose kind and seed stayed the same gave
the same findings; those that changed were checked one by one), and written again when join
problems came to name the runs file their record is in rather than the file an attempt ID's
prefix names (four findings of two cases changed file: foreign-attempt-id,
slot-of-other-partition), and when the schemas came to carry the models' patterns (four
cases, 263, 342, 551 and 713, whose malformed digest the schema now names before the model
does, at the same JSON path; nothing else changed), and when verify came to check the ledger's
facts against the protocol (one case, 695, whose byte flip renames a participant in
protocol.json: its condition's contract in the ledger now also contradicts the protocol, two
``ledger-facts`` findings more; nothing else changed), when verify came to accept a library's
figure within the numeric policy's tolerance (three forged-aggregates cases, 247, 301 and 985,
moved an interval's end by one ulp, which is now no change to name: the corpus makes such a
forgery material, +0.5, and their findings name that value; nothing else changed), and when
bag-info.txt came to be read as RFC 8493's metadata elements, in a bundle as in any bag (one
case, 771, whose NUL byte stands between ``Payload-Oxum:`` and its value: that line is no
element, so it is named and the Payload-Oxum is missing; nothing else changed): every case of
the corpus, and
the cases below, which put run records where the streaming reader
must fall back to reading the whole plan at once (a record in another partition's file, an
attempt ID that is not its slot's, a re-sealed partition) or must cut lines as before (a lone
carriage return, an integer past 64 bits); and, since verify reads packed bundles, the hostile
packed bundles of :data:`PACKED` (recorded alone, the others' findings left as they were). To
write it again with another verify, put that
verify's ``src`` and ``tests`` first on the path, before this directory, from elsewhere (a
script's own directory would come first)::

    cd /tmp && PYTHONPATH=OTHER/src:OTHER/tests:REPO/tests \\
        python -c "import corpus_findings; corpus_findings.main()" > findings.json
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import stat
import struct
import sys
import tarfile
import tempfile
import warnings
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from forge import reseal
from repro._json import canonical
from repro.verify import Finding, verify
from test_corpus import CORPUS, TAMPER, Base, _materialise, _parse

DATA = Path(__file__).resolve().parent / "data"
BASE = DATA / "corpus-base"
FINDINGS = DATA / "corpus-findings.json"


def base_files() -> dict[str, bytes]:
    """The committed base bundle's files by bundle name."""
    return {p.relative_to(BASE).as_posix(): p.read_bytes() for p in BASE.rglob("*") if p.is_file()}


def _lines(root: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (root / name).read_bytes().splitlines()]


def _write_lines(root: Path, name: str, records: list[dict[str, Any]]) -> None:
    (root / name).write_bytes(b"".join(canonical.dumps(r) for r in records))


def _move_record(root: Path) -> None:
    """The first record of c00 moved to the end of c01's runs file."""
    c00, c01 = _lines(root, "data/runs/c00.jsonl"), _lines(root, "data/runs/c01.jsonl")
    _write_lines(root, "data/runs/c00.jsonl", c00[1:])
    _write_lines(root, "data/runs/c01.jsonl", [*c01, c00[0]])


def _copy_record(root: Path) -> None:
    """The first record of c00 also at the start of c02's runs file."""
    c00, c02 = _lines(root, "data/runs/c00.jsonl"), _lines(root, "data/runs/c02.jsonl")
    _write_lines(root, "data/runs/c02.jsonl", [c00[0], *c02])


def _unknown_slot(root: Path) -> None:
    """A record renamed, slot and attempt ID, to a slot the plan does not have."""
    records = _lines(root, "data/runs/c01.jsonl")
    records[0]["slot"], records[0]["attempt_id"] = "c01-r9999", "c01-r9999-a1"
    _write_lines(root, "data/runs/c01.jsonl", records)


def _foreign_attempt_id(root: Path) -> None:
    """A record of c03 carrying the attempt ID of a record of c02."""
    c02, c03 = _lines(root, "data/runs/c02.jsonl"), _lines(root, "data/runs/c03.jsonl")
    c03[1]["attempt_id"] = c02[0]["attempt_id"]
    _write_lines(root, "data/runs/c03.jsonl", c03)


def _slot_of_other_partition(root: Path) -> None:
    """A record of c00 renamed to the second slot of c01, left in c00's runs file."""
    records = _lines(root, "data/runs/c00.jsonl")
    records[0]["slot"], records[0]["attempt_id"] = "c01-r0001", "c01-r0001-a1"
    _write_lines(root, "data/runs/c00.jsonl", records)


def _records_reversed(root: Path) -> None:
    """Every runs file with its records in reverse order."""
    for name in ("c00", "c01", "c02", "c03"):
        _write_lines(root, f"data/runs/{name}.jsonl", _lines(root, f"data/runs/{name}.jsonl")[::-1])


def _record_twice(root: Path) -> None:
    """A record repeated in its own runs file."""
    records = _lines(root, "data/runs/c02.jsonl")
    _write_lines(root, "data/runs/c02.jsonl", [*records, records[0]])


def _partition_resealed(root: Path) -> None:
    """An entry's order changed in a partition, with the seal's digest of it made to match."""
    path = root / "data/plans/c01.json"
    part = json.loads(path.read_bytes())
    part["entries"][0]["order"] = 99
    path.write_bytes(canonical.dumps(part))
    seal_path = root / "data/plans/seal.json"
    seal = json.loads(seal_path.read_bytes())
    seal["partitions"][1]["sha256"] = canonical.sha256_hex(path.read_bytes())
    seal_path.write_bytes(canonical.dumps(seal))


def _partitions_swapped(root: Path) -> None:
    """The seal lists c00's and c01's partitions (and so their runs files) the other way."""
    seal_path = root / "data/plans/seal.json"
    seal = json.loads(seal_path.read_bytes())
    seal["partitions"][0], seal["partitions"][1] = seal["partitions"][1], seal["partitions"][0]
    seal_path.write_bytes(canonical.dumps(seal))


def _entries_to_other_condition(root: Path) -> None:
    """A partition's entries given the next condition, with the seal's digest made to match."""
    path = root / "data/plans/c02.json"
    part = json.loads(path.read_bytes())
    for entry in part["entries"]:
        entry["condition"] = "c03"
    path.write_bytes(canonical.dumps(part))
    seal_path = root / "data/plans/seal.json"
    seal = json.loads(seal_path.read_bytes())
    seal["partitions"][2]["sha256"] = canonical.sha256_hex(path.read_bytes())
    seal_path.write_bytes(canonical.dumps(seal))


def _carriage_return(root: Path) -> None:
    """A lone carriage return in the middle of a record, cutting it in two lines."""
    data = (root / "data/runs/c01.jsonl").read_bytes()
    cut = data.index(b',"condition"')
    (root / "data/runs/c01.jsonl").write_bytes(data[:cut] + b"\r" + data[cut:])


def _large_integer(root: Path) -> None:
    """An attempt number past 64 bits (orjson reads it, the strict reader refuses it)."""
    records = _lines(root, "data/runs/c00.jsonl")
    line = canonical.dumps(records[0]).replace(b'"attempt":1,', b'"attempt":9223372036854775808,')
    rest = b"".join(canonical.dumps(r) for r in records[1:])
    (root / "data/runs/c00.jsonl").write_bytes(line + rest)


def _non_canonical_line(root: Path) -> None:
    """A record written with spaces after its separators."""
    records = _lines(root, "data/runs/c03.jsonl")
    spaced = json.dumps(records[0], sort_keys=True).encode() + b"\n"
    rest = b"".join(canonical.dumps(r) for r in records[1:])
    (root / "data/runs/c03.jsonl").write_bytes(spaced + rest)


#: The further cases by name: each edits the payload, and then both manifests are regenerated.
EXTRA: dict[str, Callable[[Path], None]] = {
    "move-record": _move_record,
    "copy-record": _copy_record,
    "unknown-slot": _unknown_slot,
    "foreign-attempt-id": _foreign_attempt_id,
    "slot-of-other-partition": _slot_of_other_partition,
    "records-reversed": _records_reversed,
    "record-twice": _record_twice,
    "partition-resealed": _partition_resealed,
    "partitions-swapped": _partitions_swapped,
    "entries-to-other-condition": _entries_to_other_condition,
    "carriage-return": _carriage_return,
    "large-integer": _large_integer,
    "non-canonical-line": _non_canonical_line,
}

# --------------------------------------------------------------------------- packed bundles

#: The top-level directory of every packed case.
TOP = "bundle"


def _member(name: str, mode: int = stat.S_IFREG | 0o644) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.create_system = 3
    info.external_attr = mode << 16
    return info


def _write_zip(
    out: Path, files: dict[str, bytes], extra: Sequence[tuple[zipfile.ZipInfo, bytes]] = ()
) -> None:
    """The bundle's files below TOP/ (in sorted order) in a zip, then the ``extra`` members."""
    with zipfile.ZipFile(out, "w") as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of a repeated name: the case makes one
        for name in sorted(files):
            archive.writestr(_member(f"{TOP}/{name}"), files[name])
        for info, data in extra:
            archive.writestr(info, data)


def _tar_member(name: str, kind: bytes = tarfile.REGTYPE, size: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.mode = kind, size, 0o644
    return info


def _write_tar(
    out: Path, files: dict[str, bytes], extra: Sequence[tuple[tarfile.TarInfo, bytes]] = ()
) -> None:
    """The bundle's files below TOP/ in a tar, then the ``extra`` members."""
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as archive:
        for name in sorted(files):
            archive.addfile(_tar_member(f"{TOP}/{name}", size=len(files[name])), _io(files[name]))
        for info, data in extra:
            archive.addfile(info, _io(data) if info.isreg() else None)


def _io(data: bytes) -> io.BytesIO:
    return io.BytesIO(data)


def _without(files: dict[str, bytes], name: str) -> dict[str, bytes]:
    return {n: d for n, d in files.items() if n != name}


AGG = "data/aggregates.json"


def _zip_overlap(out: Path, files: dict[str, bytes]) -> None:
    """A second index entry, renamed, for the bytes of data/aggregates.json: two members that
    share one stored stream, the shape of an overlapping zip bomb."""
    _write_zip(out, files)
    data = bytearray(out.read_bytes())
    end = data.rfind(b"PK\x05\x06")
    _, _, _, entries, total, size, start, _ = struct.unpack_from("<4s4H2LH", data, end)
    old = f"{TOP}/{AGG}".encode()
    at = start
    while True:  # the index record of data/aggregates.json
        name_len, extra_len, comment_len = struct.unpack_from("<3H", data, at + 28)
        if data[at + 46 : at + 46 + name_len] == old:
            break
        at += 46 + name_len + extra_len + comment_len
    record = bytearray(data[at : at + 46 + name_len + extra_len + comment_len])
    record[46 : 46 + name_len] = f"{TOP}/data/aggregatez.json".encode()
    index = data[start : start + size] + record
    tail = struct.pack(
        "<4s4H2LH", b"PK\x05\x06", 0, 0, entries + 1, total + 1, len(index), start, 0
    )
    out.write_bytes(bytes(data[:start]) + bytes(index) + tail)


#: Hostile packed bundles made of the base bundle: each writes its archive to the path given.
PACKED: dict[str, Callable[[Path, dict[str, bytes]], None]] = {
    "zip-outside-top": lambda out, f: _write_zip(out, f, [(_member("other/x.json"), b"{}\n")]),
    "zip-absolute-name": lambda out, f: _write_zip(out, f, [(_member(f"/{TOP}/x.json"), b"")]),
    "zip-dotdot-name": lambda out, f: _write_zip(
        out, f, [(_member(f"{TOP}/data/../../x.json"), b"")]
    ),
    "zip-backslash-name": lambda out, f: _write_zip(
        out, f, [(_member(f"{TOP}/data\\x.json"), b"")]
    ),
    "zip-repeated-name": lambda out, f: _write_zip(out, f, [(_member(f"{TOP}/{AGG}"), b"{}\n")]),
    "zip-case-collision": lambda out, f: _write_zip(
        out, f, [(_member(f"{TOP}/data/Aggregates.json"), f[AGG])]
    ),
    "zip-nfc-collision": lambda out, f: _write_zip(
        out,
        f,
        [
            (_member(f"{TOP}/data/caf\u00e9.json"), b"{}\n"),
            (_member(f"{TOP}/data/cafe\u0301.json"), b"{}\n"),
        ],
    ),
    "zip-symlink": lambda out, f: _write_zip(
        out, _without(f, AGG), [(_member(f"{TOP}/{AGG}", stat.S_IFLNK | 0o777), b"/etc/passwd")]
    ),
    "zip-special-file": lambda out, f: _write_zip(
        out, _without(f, AGG), [(_member(f"{TOP}/{AGG}", stat.S_IFIFO | 0o644), b"")]
    ),
    "zip-empty-directory": lambda out, f: _write_zip(
        out, f, [(_member(f"{TOP}/data/empty/", stat.S_IFDIR | 0o755), b"")]
    ),
    "zip-ratio-bomb": lambda out, f: _write_zip(
        out, f, [(_member(f"{TOP}/data/zeros.json"), bytes(8 << 20))]
    ),
    "zip-overlap": _zip_overlap,
    "zip-bzip2-member": lambda out, f: _write_zip(
        out, f, [(_bzip2(_member(f"{TOP}/data/x.json")), b"{}\n")]
    ),
    "tar-symlink": lambda out, f: _write_tar(
        out, _without(f, AGG), [(_link(f"{TOP}/{AGG}", tarfile.SYMTYPE, "/etc/passwd"), b"")]
    ),
    "tar-hard-link": lambda out, f: _write_tar(
        out, _without(f, AGG), [(_link(f"{TOP}/{AGG}", tarfile.LNKTYPE, f"{TOP}/bagit.txt"), b"")]
    ),
    "tar-device": lambda out, f: _write_tar(
        out, _without(f, AGG), [(_tar_member(f"{TOP}/{AGG}", tarfile.CHRTYPE), b"")]
    ),
    "tar-dotdot-name": lambda out, f: _write_tar(
        out, f, [(_tar_member(f"{TOP}/../x.json", size=3), b"{}\n")]
    ),
    "tar-repeated-name": lambda out, f: _write_tar(
        out, f, [(_tar_member(f"{TOP}/{AGG}", size=3), b"{}\n")]
    ),
    "tar-outside-top": lambda out, f: _write_tar(
        out, f, [(_tar_member("x.json", size=3), b"{}\n")]
    ),
}


def _bzip2(info: zipfile.ZipInfo) -> zipfile.ZipInfo:
    info.compress_type = zipfile.ZIP_BZIP2
    return info


def _link(name: str, kind: bytes, target: str) -> tarfile.TarInfo:
    info = _tar_member(name, kind)
    info.linkname = target
    return info


#: How many of the corpus's cases are compared: those of a run without REPRO_STRESS.
CORPUS_CASES = 1000


def _normalised(findings: list[Any], root: Path, outside: Path) -> list[list[str]]:
    """Findings as lists of strings, with the case's temporary paths replaced by names. A file
    that holds such a path (a manifest line a case added) has a digest that depends on where
    the case ran: it is replaced by the digest of the file with its paths replaced."""
    names = {str(root): "<root>", str(outside): "<outside>"}

    def named(text: str) -> str:
        for path, name in names.items():
            text = text.replace(path, name)
        return text

    digests = {}
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            plain = named(data.decode("utf-8", "surrogateescape")).encode(
                "utf-8", "surrogateescape"
            )
            if plain != data:
                digests[hashlib.sha256(data).hexdigest()] = hashlib.sha256(plain).hexdigest()
    out = []
    for f in findings:
        fields = []
        for text in (f.file, f.what, f.expected, f.found):
            for actual, plain_digest in digests.items():
                text = text.replace(actual, plain_digest)
            fields.append(named(text))
        out.append(fields)
    return out


#: Files bundles gained after the committed base bundle and the findings were recorded (the RO-Crate
#: metadata and the attempt times): the base lacks them, so every case also finds them missing,
#: which is left out of the comparison; tests/test_crate.py covers them.
NEWER_FILES = ("data/ro-crate-metadata.json", "data/times/")


def older_findings(findings: list[Finding]) -> list[Finding]:
    """The findings on files the base bundle's format already had."""
    return [f for f in findings if not f.file.startswith(NEWER_FILES)]


def case_findings(name: str, base: Base, work: Path) -> list[list[str]]:
    """The normalised findings of verify on the base bundle after case ``name``: a corpus
    case's index, or a key of :data:`EXTRA`."""
    root, outside = work / "bundle", work / "outside"
    outside.mkdir(parents=True)
    if name in PACKED:
        archive = work / f"{TOP}.{name[:3]}"
        PACKED[name](archive, base.files)
        return _normalised(older_findings(verify(archive)), archive, outside)
    _materialise(base.files, root)
    if name in EXTRA:
        EXTRA[name](root)
        reseal(root)
    else:
        case = CORPUS[int(name)]
        TAMPER[case.kind](root, random.Random(case.seed), base, outside)
    return _normalised(older_findings(verify(root)), root, outside)


def case_names() -> list[str]:
    """Every case compared: the corpus's first :data:`CORPUS_CASES`, then the further ones, then
    the packed ones."""
    return [str(i) for i in range(CORPUS_CASES)] + list(EXTRA) + list(PACKED)


def main() -> None:
    """Print every case's findings as JSON."""
    base = _parse(base_files())
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in case_names():
            out[name] = case_findings(name, base, Path(tmp) / name)
    json.dump(out, sys.stdout, indent=0, sort_keys=True)
    sys.stdout.write("\n")
