"""Generated tamper corpus and clean bundles: verify is never fooled, never crashes, never strays.

A seeded generator turns one real bundle into many tampered copies, from a flipped byte to a
forger who regenerates both manifests after re-deriving everything but the join. Each copy is
verified in-process; every case must give at least one finding, no exception, no read outside
the copy (see :func:`_outside_reads`), "incomplete" exactly when the tag manifest is gone, and a
finding that names what was changed. Per kind, "names" means a finding whose ``file`` is:

- byte-flip, truncation: the changed file, or (a changed tag-manifest line surfaces on the file
  the line covers) a finding whose ``what`` mentions it;
- deletion, added-file: the deleted or added file; renamed-file: both the old and the new name;
- symlink, hard-link: the replaced file, in a finding about a symbolic or hard link;
- traversal-line, absolute-line, duplicate-line, malformed-line: the edited manifest, in a
  finding saying "path traversal", "absolute path", "listed twice" or "malformed manifest line";
- manifest-regenerated: manifest-sha256.txt, whose sha256 differs from the tag manifest;
- forged-runs: the runs file ("<attempt>: measure differs from the sum") when measure and step
  rewards disagree, else data/aggregates.json ("re-derived value differs");
- forged-aggregates: data/aggregates.json ("re-derived value differs"); a figure repro computes
  itself may move by one ulp, an interval's end (a library's figure, which verify accepts within
  the numeric policy's tolerance: repro._stats.figures) by more than that tolerance;
- forged-slot-removal: the runs file ("<slot>: slot has no terminal outcome");
- tag-file-encoding: bag-info.txt (code tag-file-not-utf8 or tag-file-nul);
- empty-directory: the directory (code empty-directory);
- cheap-edit: the runs file (code validity-rules, or runs-order for two records swapped), or
  the times file (code model, for a time that is no real date).

A hundred distinct real bundles, and copies of them, must verify with no finding at all.

``REPRO_STRESS=1`` runs ten times as many cases.
"""

from __future__ import annotations

import copy
import gc
import json
import math
import os
import random
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from attrs import frozen
from typer.testing import CliRunner

import repro
from conftest import SMALL, run_study
from forge import reseal, retag
from guarantees import record
from repro._bundle.writer import manifest_text
from repro._cli.app import app
from repro._derive.derivation import derive, tally_records
from repro._json import canonical
from repro._json.serde import structure, to_bytes
from repro._layout import AGGREGATES, MANIFEST, TAGMANIFEST
from repro._stats.figures import LIBRARY_FIGURES, same_figure
from repro.models import FrozenProtocol, Ledger, Partition, RunRecord, Seal
from repro.verify import Finding, verify

pytestmark = [
    pytest.mark.stress,
    pytest.mark.skipif(
        sys.platform == "win32", reason="symlinks, hard links and O_NOFOLLOW need POSIX"
    ),
]

STRESS = os.environ.get("REPRO_STRESS") == "1"
CASES = 10_000 if STRESS else 1000
SEED = 20_250_601
#: Every this many cases, the case also goes through the CLI.
CLI_EVERY = 25

KINDS = (
    "byte-flip",
    "truncation",
    "deletion",
    "added-file",
    "renamed-file",
    "symlink",
    "hard-link",
    "traversal-line",
    "absolute-line",
    "duplicate-line",
    "malformed-line",
    "manifest-regenerated",
    "forged-runs",
    "forged-aggregates",
    "forged-slot-removal",
    "tag-file-encoding",
    "empty-directory",
    "cheap-edit",
)


@frozen
class Case:
    """One generated tamper case: its kind and the seed of every choice it makes."""

    index: int
    kind: str
    seed: int


def _cases() -> list[Case]:
    # Kinds in turn, so that each appears CASES / len(KINDS) times; choices within a case are
    # drawn from its own seed, so any case can be rerun alone.
    rng = random.Random(SEED)
    return [Case(i, KINDS[i % len(KINDS)], rng.getrandbits(64)) for i in range(CASES)]


CORPUS = _cases()


@frozen
class Named:
    """What a finding must name for a case. ``phrase`` must occur in the finding's ``what``; the
    finding's ``file`` must be ``file``, or, with ``mentioned``, ``file`` may instead occur in the
    finding's ``what``. ``mentioned`` is for changes inside a tag manifest, which surface on the
    file a changed line covers ("bagit.txt: sha256 differs from tagmanifest-sha256.txt")."""

    file: str
    phrase: str = ""
    mentioned: bool = False
    #: The finding's code, when it must have one.
    code: str | None = None

    def matches(self, finding: Finding) -> bool:
        """Whether ``finding`` names this."""
        if self.phrase not in finding.what or self.code not in (None, finding.code):
            return False
        return finding.file == self.file or (self.mentioned and self.file in finding.what)


# --------------------------------------------------------------------------- the base bundle


@frozen
class Base:
    """The pristine bundle the corpus tampers with: its files' bytes and its parsed models."""

    files: dict[str, bytes]
    protocol: FrozenProtocol
    seal: Seal
    partitions: tuple[Partition, ...]
    records: tuple[RunRecord, ...]
    ledger: Ledger


def _parse(files: dict[str, bytes]) -> Base:
    def model(name: str, cls: type[Any]) -> Any:
        return structure(json.loads(files[name]), cls, what=name)

    seal = model("data/plans/seal.json", Seal)
    return Base(
        files=files,
        protocol=model("data/protocol.json", FrozenProtocol),
        seal=seal,
        partitions=tuple(model(f"data/{ref.file}", Partition) for ref in seal.partitions),
        records=tuple(
            structure(json.loads(line), RunRecord, what=ref.id)
            for ref in seal.partitions
            for line in files[f"data/runs/{ref.id}.jsonl"].splitlines()
        ),
        ledger=model("data/source-ledger.json", Ledger),
    )


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Base:
    """A real bundle of the small protocol cut to 2 runs per condition (four conditions, 19
    files), verified clean, held in memory."""
    tmp = tmp_path_factory.mktemp("corpus-base")
    path = tmp / "protocol.json"
    path.write_text(json.dumps(copy.deepcopy(SMALL) | {"runs_per_condition": 2}), "utf-8")
    root = run_study(path, tmp / "bundle")
    assert verify(root) == []
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    return _parse(files)


def _materialise(files: dict[str, bytes], root: Path) -> None:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)


# --------------------------------------------------------------------------- tampering


@frozen
class Tamper:
    """What one case did and what verify must name."""

    description: str
    named: tuple[Named, ...]


def _new_name(rng: random.Random, base: Base) -> str:
    """A path the bundle does not hold: in data/ or a subdirectory of it, beside the tag files,
    in a new directory, or the temporary name a writer would use for an existing file."""
    stem = f"x{rng.randrange(10**6)}{rng.choice(['.json', '.jsonl', '.txt', ''])}"
    place = rng.choice(["data", "data/runs", "data/plans", "root", "new", "data-new", "partial"])
    if place == "root":
        return stem
    if place == "new":
        return f"extra/{stem}"
    if place == "data-new":
        return f"data/extra/{stem}"
    if place == "partial":
        directory, _, leaf = rng.choice(sorted(base.files)).rpartition("/")
        return f"{directory}/.{leaf}.partial".lstrip("/")
    return f"{place}/{stem}"


def _content(rng: random.Random, base: Base) -> bytes:
    return rng.choice(
        [b"", rng.randbytes(rng.randrange(1, 200)), base.files[rng.choice(sorted(base.files))]]
    )


def _flip(path: Path, rng: random.Random) -> str:
    data = bytearray(path.read_bytes())
    offset, xor = rng.randrange(len(data)), rng.randrange(1, 256)
    data[offset] ^= xor
    path.write_bytes(bytes(data))
    return f"offset {offset} xor {xor:#04x}"


def _insert_line(path: Path, line: bytes, rng: random.Random) -> int:
    """Insert ``line`` (with its newline) at a random line of the manifest; return its number."""
    lines = path.read_bytes().splitlines(keepends=True)
    at = rng.randrange(len(lines) + 1)
    path.write_bytes(b"".join([*lines[:at], line, *lines[at:]]))
    return at + 1


def _retag_maybe(root: Path, manifest: str, rng: random.Random) -> str:
    """Half the time a forger also regenerates the tag manifest over an edited payload
    manifest; either way the line itself must be named."""
    if manifest == MANIFEST and rng.random() < 0.5:
        retag(root)
        return ", tag manifest regenerated"
    return ""


def _byte_flip(root: Path, rng: random.Random, base: Base, outside: Path) -> Tamper:
    name = rng.choice(sorted(base.files))
    how = _flip(root / name, rng)
    return Tamper(f"flip {name} at {how}", (Named(name, mentioned=True),))


def _truncation(root: Path, rng: random.Random, base: Base, outside: Path) -> Tamper:
    name = rng.choice(sorted(base.files))
    size = rng.randrange(len(base.files[name]))
    (root / name).write_bytes(base.files[name][:size])
    return Tamper(f"truncate {name} to {size} bytes", (Named(name, mentioned=True),))


def _deletion(root: Path, rng: random.Random, base: Base, outside: Path) -> Tamper:
    name = rng.choice(sorted(base.files))
    (root / name).unlink()
    return Tamper(f"delete {name}", (Named(name),))


def _added_file(root: Path, rng: random.Random, base: Base, outside: Path) -> Tamper:
    name = _new_name(rng, base)
    data = _content(rng, base)
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_bytes(data)
    # Half the time a forger also lists the file in regenerated manifests and Payload-Oxum.
    resealed = rng.random() < 0.5
    if resealed:
        reseal(root)
    return Tamper(
        f"add {name} ({len(data)} bytes){', manifests regenerated' if resealed else ''}",
        (Named(name),),
    )


def _renamed_file(root: Path, rng: random.Random, base: Base, outside: Path) -> Tamper:
    name = rng.choice(sorted(base.files))
    new = _new_name(rng, base)
    (root / new).parent.mkdir(parents=True, exist_ok=True)
    (root / name).rename(root / new)
    return Tamper(f"rename {name} to {new}", (Named(name), Named(new)))


def _symlink(root: Path, rng: random.Random, base: Base, outside: Path) -> Tamper:
    name = rng.choice(sorted(base.files))
    target = outside / "copy"
    target.write_bytes(base.files[name])
    (root / name).unlink()
    (root / name).symlink_to(target)
    return Tamper(f"{name} is a symlink to an identical copy outside", (Named(name, "symbolic"),))


def _hard_link(root: Path, rng: random.Random, base: Base, outside: Path) -> Tamper:
    name = rng.choice(sorted(base.files))
    target = outside / "copy"
    target.write_bytes(base.files[name])
    (root / name).unlink()
    os.link(target, root / name)
    return Tamper(f"{name} is a hard link to an identical copy outside", (Named(name, "hard"),))


def _traversal_line(root: Path, rng: random.Random, base: Base, outside: Path) -> Tamper:
    manifest = rng.choice([MANIFEST, TAGMANIFEST])
    (outside / "copy").write_bytes(b"{}\n")
    depth = len(root.relative_to(outside.parent).parts)  # from the root up to beside outside/
    path = rng.choice(
        [
            "../" * depth + f"{outside.name}/copy",
            f"data/../../{outside.name}/copy",
            "data/runs/../../../etc/passwd",
            "../bagit.txt",
        ]
    )
    digest = canonical.sha256_hex(b"{}\n")
    number = _insert_line(root / manifest, f"{digest}  {path}\n".encode(), rng)
    retagged = _retag_maybe(root, manifest, rng)
    return Tamper(
        f"line {number} of {manifest} lists {path}{retagged}",
        (Named(manifest, "path traversal"),),
    )


def _absolute_line(root: Path, rng: random.Random, base: Base, outside: Path) -> Tamper:
    manifest = rng.choice([MANIFEST, TAGMANIFEST])
    (outside / "copy").write_bytes(b"{}\n")
    path = rng.choice(
        [str(outside / "copy"), "/etc/passwd", f"{root}/data/aggregates.json", "/bagit.txt"]
    )
    digest = canonical.sha256_hex(b"{}\n")
    number = _insert_line(root / manifest, f"{digest}  {path}\n".encode(), rng)
    retagged = _retag_maybe(root, manifest, rng)
    return Tamper(
        f"line {number} of {manifest} lists {path}{retagged}",
        (Named(manifest, "absolute path"),),
    )


def _duplicate_line(root: Path, rng: random.Random, base: Base, outside: Path) -> Tamper:
    manifest = rng.choice([MANIFEST, TAGMANIFEST])
    line = rng.choice(base.files[manifest].splitlines(keepends=True))
    number = _insert_line(root / manifest, line, rng)
    retagged = _retag_maybe(root, manifest, rng)
    return Tamper(
        f"line {number} of {manifest} repeats {line!r}{retagged}",
        (Named(manifest, "listed twice"),),
    )


def _malformed_line(root: Path, rng: random.Random, base: Base, outside: Path) -> Tamper:
    manifest = rng.choice([MANIFEST, TAGMANIFEST])
    digest, path = rng.choice(base.files[manifest].decode().splitlines()).split("  ")
    line = rng.choice(
        [
            "garbage",
            "",
            digest,
            f"{digest[:-1]}  {path}",
            f"{digest.upper()}  {path}",
            f"{digest} {path}",
            f"{digest}\t{path}",
            f"{digest}  {path} ",
            f"{digest}  {path}\r",
            f"{digest}  {path} extra",
        ]
    )
    number = _insert_line(root / manifest, f"{line}\n".encode(), rng)
    retagged = _retag_maybe(root, manifest, rng)
    return Tamper(
        f"line {number} of {manifest} is {line!r}{retagged}",
        (Named(manifest, "malformed manifest line"),),
    )


def _manifest_regenerated(root: Path, rng: random.Random, base: Base, outside: Path) -> Tamper:
    name = rng.choice(sorted(n for n in base.files if n.startswith("data/")))
    how = _flip(root / name, rng)
    payload = {n: canonical.sha256_hex((root / n).read_bytes()) for n in base.files}
    (root / MANIFEST).write_bytes(
        manifest_text({n: d for n, d in payload.items() if n.startswith("data/")})
    )
    return Tamper(
        f"flip {name} at {how}, {MANIFEST} regenerated to match",
        (Named(MANIFEST, f"sha256 differs from {TAGMANIFEST}"),),
    )


def _edit_runs(root: Path, name: str, edit: Callable[[list[dict[str, Any]]], None]) -> None:
    records = [json.loads(line) for line in (root / name).read_bytes().splitlines()]
    edit(records)
    (root / name).write_bytes(b"".join(canonical.dumps(r) for r in records))


def _forged_runs(root: Path, rng: random.Random, base: Base, outside: Path) -> Tamper:
    record_ = rng.choice([r for r in base.records if r.status == "valid" and r.step_rewards])
    name = f"data/runs/{record_.condition}.jsonl"
    change = rng.choice(["measure", "step reward", "step reward and measure"])
    delta = rng.choice([1.0, -1.0, 0.5, 250.0])
    step = rng.randrange(len(record_.step_rewards or ()))

    def edit(records: list[dict[str, Any]]) -> None:
        [r] = [r for r in records if r["attempt_id"] == record_.attempt_id]
        if change == "measure":
            r["measure"] += delta
        else:
            r["step_rewards"][step] += delta
        if change == "step reward and measure":
            r["measure"] = math.fsum(r["step_rewards"])

    _edit_runs(root, name, edit)
    reseal(root)
    named = (
        Named("data/aggregates.json", "re-derived value differs")
        if change == "step reward and measure"
        else Named(name, f"{record_.attempt_id}: measure differs from the sum")
    )
    return Tamper(
        f"{record_.attempt_id}: {change} changed by {delta} (step {step}), both manifests "
        "regenerated",
        (named,),
    )


def _forged_aggregates(root: Path, rng: random.Random, base: Base, outside: Path) -> Tamper:
    value = json.loads(base.files["data/aggregates.json"])
    row = rng.choice([*value["conditions"], value["estimand"]])
    field = rng.choice(
        [k for k in ("mean", "sd", "valid", "value", "se") if row.get(k) is not None]
    )
    if row.get("interval") and rng.random() < 0.4:
        row, field = row["interval"], rng.choice(["low", "high", "halfwidth"])
    old = row[field]
    if isinstance(old, int):
        row[field] = old + rng.choice([-1, 1])
    else:
        row[field] = rng.choice([math.nextafter(old, math.inf), old + 0.5, -old, old * 10])
        if row[field] == old:  # -0.0 == 0.0, 0 * 10 == 0
            row[field] = old + 1.0
        if field in LIBRARY_FIGURES[AGGREGATES] and same_figure(old, row[field]):
            # An interval's end is a library's figure, which verify accepts within the numeric
            # policy's tolerance: a change as small as that is no change to name.
            row[field] = old + 0.5
    (root / "data/aggregates.json").write_bytes(canonical.dumps(value))
    reseal(root)
    return Tamper(
        f"aggregates.json: {field} {old!r} -> {row[field]!r}, both manifests regenerated",
        (Named("data/aggregates.json", "re-derived value differs"),),
    )


def _forged_slot_removal(root: Path, rng: random.Random, base: Base, outside: Path) -> Tamper:
    slot = rng.choice(sorted({r.slot for r in base.records}))
    records = [r for r in base.records if r.slot != slot]
    condition = next(r.condition for r in base.records if r.slot == slot)
    name = f"data/runs/{condition}.jsonl"
    (root / name).write_bytes(b"".join(to_bytes(r) for r in records if r.condition == condition))
    runs = tally_records(base.protocol, base.partitions, records, base.ledger)
    derived = derive(base.protocol, base.seal, runs, base.ledger, [])
    (root / "data/source-ledger.json").write_bytes(to_bytes(derived.ledger))
    (root / "data/aggregates.json").write_bytes(to_bytes(derived.aggregates))
    (root / "data/tiers.json").write_bytes(to_bytes(derived.tiers))
    (root / "data/validation-report.md").write_bytes(derived.report.encode())
    reseal(root)
    return Tamper(
        f"{slot}'s records removed; ledger, aggregates, tiers, report re-derived; both "
        "manifests regenerated",
        (Named(name, f"{slot}: slot has no terminal outcome"),),
    )


def _tag_file_encoding(root: Path, rng: random.Random, base: Base, outside: Path) -> Tamper:
    info = (root / "bag-info.txt").read_bytes()
    where = rng.randrange(len(info))
    if rng.random() < 0.5:
        bad, code = bytes([rng.choice([0x80, 0xC0, 0xE9, 0xFE, 0xFF])]), "tag-file-not-utf8"
    else:
        bad, code = b"\x00", "tag-file-nul"
    (root / "bag-info.txt").write_bytes(info[:where] + bad + info[where:])
    retag(root)
    return Tamper(
        f"bag-info.txt: {bad!r} inserted at byte {where}, tag manifest regenerated",
        (Named("bag-info.txt", code=code),),
    )


def _empty_directory(root: Path, rng: random.Random, base: Base, outside: Path) -> Tamper:
    parent = rng.choice(["", "data/", "data/runs/", "data/plans/", "data/times/"])
    name = parent + rng.choice(["x", "empty", ".hidden", "runs-old"])
    (root / name).mkdir(parents=True)
    return Tamper(f"{name}: empty directory added", (Named(name, code="empty-directory"),))


def _cheap_edit(root: Path, rng: random.Random, base: Base, outside: Path) -> Tamper:
    """An edit that needs no forger's skill: a run record changed in a way its own fields or
    its file's order give away, or its times made impossible; only the payload manifest
    regenerated (and the tag manifest, which covers it)."""
    valid = [r for r in base.records if r.status == "valid" and r.step_rewards]
    record_ = rng.choice(valid)
    name = f"data/runs/{record_.condition}.jsonl"
    # (The committed base bundle of tests/corpus_findings.py predates the times files.)
    timed = (root / "data/times").is_dir()
    change = rng.choice(["steps", "rewards-dropped", "order", *(["times-date"] if timed else [])])
    if change == "times-date":
        path = root / f"data/times/{record_.condition}.jsonl"
        lines = path.read_bytes().splitlines(keepends=True)
        k = rng.randrange(len(lines))
        times = json.loads(lines[k])
        times[rng.choice(["started_utc", "finished_utc"])] = rng.choice(
            ["2026-99-99T99:99:99.000000Z", "2026-02-30T12:00:00.000000Z"]
        )
        lines[k] = canonical.dumps(times)
        path.write_bytes(b"".join(lines))
        reseal(root)
        where = f"data/times/{record_.condition}.jsonl"
        return Tamper(f"{where} line {k + 1}: no real date", (Named(where, code="model"),))
    if change == "order":
        records = [json.loads(line) for line in (root / name).read_bytes().splitlines()]
        i, j = sorted(rng.sample(range(len(records)), 2))
        records[i], records[j] = records[j], records[i]
        (root / name).write_bytes(b"".join(canonical.dumps(r) for r in records))
        reseal(root)
        return Tamper(
            f"{name}: lines {i + 1} and {j + 1} swapped", (Named(name, code="runs-order"),)
        )

    def edit(records: list[dict[str, Any]]) -> None:
        [r] = [r for r in records if r["attempt_id"] == record_.attempt_id]
        if change == "steps":
            r["steps"] += rng.choice([-1, 1, 977])
        else:
            r["step_rewards"] = None

    _edit_runs(root, name, edit)
    reseal(root)
    return Tamper(
        f"{record_.attempt_id}: {change}, manifests regenerated",
        (Named(name, f"{record_.attempt_id}:", code="validity-rules"),),
    )


TAMPER: dict[str, Callable[[Path, random.Random, Base, Path], Tamper]] = {
    "byte-flip": _byte_flip,
    "truncation": _truncation,
    "deletion": _deletion,
    "added-file": _added_file,
    "renamed-file": _renamed_file,
    "symlink": _symlink,
    "hard-link": _hard_link,
    "traversal-line": _traversal_line,
    "absolute-line": _absolute_line,
    "duplicate-line": _duplicate_line,
    "malformed-line": _malformed_line,
    "manifest-regenerated": _manifest_regenerated,
    "forged-runs": _forged_runs,
    "forged-aggregates": _forged_aggregates,
    "forged-slot-removal": _forged_slot_removal,
    "tag-file-encoding": _tag_file_encoding,
    "empty-directory": _empty_directory,
    "cheap-edit": _cheap_edit,
}


# --------------------------------------------------------------------------- reads outside


class _Reads:
    """Paths opened or listed by the thread that set ``watching``, while it is set and no
    garbage collection runs; the audit hook does nothing otherwise. Other threads of the test
    process are not verify's (a Dask cluster another test module started for the session reads
    /proc on threads of its own), nor are the callbacks another library hangs on the collector,
    which run in whichever thread a collection falls in (Dask's reads the process's memory from
    /proc at every collection)."""

    def __init__(self) -> None:
        self.installed = False
        self._watching: int | None = None
        self.collecting = False
        self.events: list[tuple[str, Any, Any]] = []

    @property
    def watching(self) -> bool:
        return self._watching is not None

    @watching.setter
    def watching(self, on: bool) -> None:
        if on:  # first and last of the collector's callbacks, whoever added one since
            for mark in (_collection_starts, _collection_ends):
                if mark in gc.callbacks:
                    gc.callbacks.remove(mark)
            gc.callbacks.insert(0, _collection_starts)
            gc.callbacks.append(_collection_ends)
        self._watching = threading.get_ident() if on else None

    def sees(self) -> bool:
        """Whether the event being audited is the watching thread's own."""
        return (
            self._watching is not None
            and self._watching == threading.get_ident()
            and not self.collecting
        )


def _collection_starts(phase: str, info: dict[str, Any]) -> None:
    """First of the collector's callbacks: from here to :func:`_collection_ends`, a collection
    and the other callbacks run."""
    _READS.collecting = True


def _collection_ends(phase: str, info: dict[str, Any]) -> None:
    """Last of the collector's callbacks: a collection's end."""
    if phase == "stop":
        _READS.collecting = False


_READS = _Reads()


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event in ("open", "os.listdir", "os.scandir") and _READS.sees():
        _READS.events.append((event, args[0], args[2] if event == "open" else None))


@pytest.fixture(scope="module")
def reads(base: Base, tmp_path_factory: pytest.TempPathFactory) -> _Reads:
    """The audit log, with the hook installed (once per process: a hook cannot be removed) and
    verify warmed up, so that lazy imports and cached schema loads happen before any case: a
    clean bundle, and one with a value its model refuses, which only then is checked against
    its schema (the import of jsonschema lists the import path's directories, which are no
    bundle reads). Without the second, a case that is the first to refuse a value, run alone,
    would count those listings."""
    if not _READS.installed:
        sys.addaudithook(_audit)
        _READS.installed = True
    warm = tmp_path_factory.mktemp("warm") / "bundle"
    _materialise(base.files, warm)
    assert verify(warm) == []
    refused = tmp_path_factory.mktemp("warm-refused") / "bundle"
    _materialise({**base.files, "data/aggregates.json": b'{"schema": 1}\n'}, refused)
    assert verify(refused)
    assert "jsonschema" in sys.modules
    return _READS


def _library_dirs() -> tuple[str, ...]:
    dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(repro.__file__).parent)}
    return tuple(os.path.realpath(d) + os.sep for d in dirs)


def _outside_reads(
    events: list[tuple[str, Any, Any]], root: Path, names: set[str]
) -> Iterator[str]:
    """The events that may have read outside ``root``, by this rule:

    - A path given as a descriptor (an int) is a directory or file verify opened itself, and
      that open was checked here.
    - A relative path must be a single name the tree holds (a component of some path in it),
      opened with O_NOFOLLOW: verify resolves names only against descriptors of directories it
      opened below the root, so such an open cannot leave the root or follow a link.
    - An absolute path must resolve (symlinks followed, as the kernel would without O_NOFOLLOW)
      to the root or below it, except for the Python installation and the repro package, which
      are imports and package data, not bundle reads.

    Everything else, in particular any path into the temporary directory outside the case root
    where symlink and hard-link targets live, is a read outside the bundle.
    """
    inside = os.path.realpath(root)
    library = _library_dirs()
    for event, target, flags in events:
        if isinstance(target, int):
            continue
        path = os.fsdecode(target)
        if not os.path.isabs(path):
            single = "/" not in path and path in names
            if event != "open" or not single or not (flags or 0) & os.O_NOFOLLOW:
                yield f"{event} {path!r} (relative, flags {flags})"
            continue
        real = os.path.realpath(path)
        if real == inside or real.startswith(inside + os.sep) or real.startswith(library):
            continue
        yield f"{event} {path}"


def _tree_names(root: Path) -> set[str]:
    names = set()
    for directory, subdirectories, files in os.walk(root):
        names.update(subdirectories, files)
        names.update(Path(directory).relative_to(root).parts)
    return names


# --------------------------------------------------------------------------- the corpus

runner = CliRunner()


def _flat(text: str) -> str:
    return " ".join(text.split())


class TestCorpus:
    """Every generated tamper case fails verification, names what was changed, raises nothing
    and reads nothing outside the bundle."""

    def test_every_kind_is_covered(self) -> None:
        """The generator produces every kind, each several times, and each kind has a tamper
        function."""
        counts = {kind: sum(c.kind == kind for c in CORPUS) for kind in KINDS}
        assert set(TAMPER) == set(KINDS)
        assert min(counts.values()) >= 5, counts

    @pytest.mark.slow
    @pytest.mark.parametrize("case", CORPUS, ids=[f"{c.index:05d}-{c.kind}" for c in CORPUS])
    def test_case(
        self,
        case: Case,
        base: Base,
        reads: _Reads,
        tmp_path_factory: pytest.TempPathFactory,
    ) -> None:
        """Apply the case to a fresh copy and verify it in-process (every CLI_EVERY-th case also
        through the CLI): at least one finding, the changed file or manifest named as
        :class:`Named` says, "incomplete" exactly when the tag manifest is gone, no exception,
        no read outside the copy."""
        work = tmp_path_factory.getbasetemp() / "corpus" / f"{case.index:05d}"
        root, outside = work / "bundle", work / "outside"
        outside.mkdir(parents=True)
        _materialise(base.files, root)
        try:
            tamper = TAMPER[case.kind](root, random.Random(case.seed), base, outside)
            names = _tree_names(root)
            reads.events.clear()
            reads.watching = True
            try:
                findings = verify(root)
            except Exception:
                record("tamper cases crashed", 1)
                raise
            finally:
                reads.watching = False
            assert reads.events, "the audit hook saw no open: it is not watching"
            strays = list(_outside_reads(reads.events, root, names))
            record("tamper cases tried", 1)
            named = all(any(n.matches(f) for f in findings) for n in tamper.named)
            record("tamper cases detected", int(bool(findings)))
            record("tamper cases naming the change", int(named))
            record("tamper cases crashed", 0)
            record("reads outside the bundle", len(strays))
            context = f"case {case.index} ({case.kind}, seed {case.seed}): {tamper.description}"
            assert findings, f"{context}: verifies"
            for named in tamper.named:
                assert any(named.matches(f) for f in findings), f"{context}: {named} {findings}"
            unfinished = not os.path.lexists(root / TAGMANIFEST)
            assert any(f.incomplete for f in findings) == unfinished, f"{context}: {findings}"
            assert findings[0].incomplete == unfinished, f"{context}: {findings}"
            assert strays == [], f"{context}: read outside the bundle"
            if case.index % CLI_EVERY == 0:
                self._check_cli(root, findings, tamper, context)
        finally:
            shutil.rmtree(work)

    def test_the_watch_sees_a_read_through_a_link(
        self, base: Base, reads: _Reads, tmp_path: Path
    ) -> None:
        """The rule flags what a careless verifier would do: open a symlinked file by its path
        inside the root, or open a name relative to a directory without O_NOFOLLOW."""
        root, outside = tmp_path / "bundle", tmp_path / "outside"
        outside.mkdir()
        _materialise(base.files, root)
        tamper = _symlink(root, random.Random(0), base, outside)
        [named] = tamper.named
        reads.events.clear()
        reads.watching = True
        try:
            (root / named.file).read_bytes()
            fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
            os.close(os.open(Path(named.file).parts[0], os.O_RDONLY, dir_fd=fd))
            os.close(fd)
        finally:
            reads.watching = False
        strays = list(_outside_reads(reads.events, root, _tree_names(root)))
        assert strays[0] == f"open {root / named.file}"
        assert strays[1].startswith(f"open {Path(named.file).parts[0]!r} (relative")

    @staticmethod
    def _check_cli(root: Path, findings: list[Finding], tamper: Tamper, context: str) -> None:
        result = runner.invoke(app, ["verify", str(root)])
        text = _flat(result.output)
        assert result.exit_code == 1, f"{context}: {result.output}"
        unfinished = f"INCOMPLETE: {root} is an unfinished study and does not verify"
        summary = unfinished if findings[0].incomplete else f"{root} does not verify"
        assert summary in text, context
        assert ("INCOMPLETE:" in text) == findings[0].incomplete, context
        for named in tamper.named:
            shown = [f for f in findings if named.matches(f)]
            assert any(_flat(f"FAIL {f.file}: {f.what}") in text for f in shown), context
        record("tamper cases checked through the CLI", 1)


# --------------------------------------------------------------------------- clean bundles


def _clean_protocols(count: int) -> list[dict[str, Any]]:
    """``count`` distinct tiny protocols, varied in every way that shapes a bundle."""
    rng = random.Random(SEED + 1)
    out = []
    for i in range(count):
        protocol = copy.deepcopy(SMALL)
        protocol["id"] = f"clean-{i:03d}"
        protocol["matrix"][0]["levels"] = rng.choice(
            [["CartPole-v1"], ["MountainCar-v0"], ["CartPole-v1", "MountainCar-v0"]]
        )
        participants = rng.sample(SMALL["participants"], rng.randint(1, 2))
        if rng.random() < 0.25:
            participants.append(
                {
                    "id": "broken",
                    "kind": "callable",
                    "params": {"target": "repro_test_policies:broken"},
                }
            )
        protocol["participants"] = participants
        protocol["runs_per_condition"] = rng.randint(1, 3)
        mode = rng.choice(["per-run", "stream"])
        protocol["seeding"] = {"mode": mode, "seed": rng.randrange(2**31)}
        method = rng.choice(["normal", "t", "bootstrap"])
        protocol["interval"] = {
            "method": method,
            "level": rng.choice([0.9, 0.95, 0.99]),
            "resamples": rng.randint(100, 300),
            "seed": rng.randrange(100),
        }
        protocol["estimand"] = rng.choice(["sum-of-condition-means", "mean-of-condition-means"])
        protocol["retry"] = {"max_attempts": rng.randint(1, 3)}
        out.append(protocol)
    return out


CLEAN = _clean_protocols(100)


@pytest.mark.slow
class TestCleanBundles:
    """Real bundles, as ``repro study`` writes them, verify with no finding, and so do copies."""

    def test_protocols_are_distinct(self) -> None:
        """The hundred protocols are a hundred different studies."""
        assert len({canonical.dumps(p) for p in CLEAN}) == len(CLEAN)

    @pytest.mark.parametrize("protocol", CLEAN, ids=[p["id"] for p in CLEAN])
    def test_no_false_finding(
        self, protocol: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The bundle verifies with zero findings, and so does a copytree of it."""
        # fsync only makes the files durable, it does not change a byte of them; skipping it
        # halves the time of these hundred studies.
        monkeypatch.setattr(os, "fsync", lambda fd: None)
        path = tmp_path / "protocol.json"
        path.write_text(json.dumps(protocol), "utf-8")
        root = run_study(path, tmp_path / "bundle")
        copied = tmp_path / "copy"
        shutil.copytree(root, copied)
        findings = verify(root) + verify(copied)
        record("clean bundles verified (and their copies)", 1)
        record("false findings on clean bundles", len(findings))
        assert findings == []
