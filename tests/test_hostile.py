"""Hostile bundles, family by family: tag-file encodings, empty directories, resource exhaustion,
pathological patterns and cheap edits (the payload edited and only the manifests regenerated, no
repro code needed). Each case runs ``repro verify --json`` in a process of its own, under a wall
time bound, and reads its peak resident memory from the kernel; the figures of every family
(cases, slowest wall time, largest peak) are printed under "repro guarantees (this run)".

The bounds are wide, several times what verify needs here on a busy machine, and far below what
verify took before it was bounded (the docstring of each case says how much)."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import time
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from attrs import frozen

from conftest import SMALL, study_once
from corpus_findings import TOP, _member
from forge import edit_protocol, reseal, retag
from guarantees import record, record_max
from repro._json import canonical
from repro._layout import MANIFEST, SEAL
from repro.verify import Limits

# Slow: verifies hostile bundles in subprocesses, measuring their memory.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="peak memory from wait4, Linux"),
]

#: Every case's verify must end within this many seconds ...
WALL_BOUND = 60.0
#: ... and peak below this many MiB of resident memory (verify of a small bundle takes ~50).
MEMORY_BOUND_MIB = 400


@frozen
class Outcome:
    """What one ``repro verify --json`` in a child did: its exit status, its JSON report (None
    when it printed none), its wall time and its peak resident memory."""

    status: int
    report: dict[str, Any] | None
    wall: float
    peak_mib: float

    @property
    def codes(self) -> set[str]:
        """The codes of its findings."""
        return {f["code"] for f in (self.report or {}).get("findings", [])}


#: Runs ``repro verify --json ROOT`` and, at its exit, writes the peak resident memory of its
#: own address space (VmHWM, kB) to stderr. (The kernel's ru_maxrss of a child counts the
#: parent's resident pages before exec: a large test process would inflate it.)
_MEASURED = """\
import atexit, sys
def _peak():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                sys.stderr.write(f"repro-peak-kb {line.split()[1]}\\n")
atexit.register(_peak)
sys.argv = ["repro", "verify", "--json", sys.argv[1]]
from repro._cli.app import main
main()
"""


def verify_in_child(root: Path, timeout: float = WALL_BOUND) -> Outcome:
    """Run ``repro verify --json root`` in a fresh interpreter, killed past ``timeout`` (the
    test then fails), with its wall time and its own peak resident memory."""
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-c", _MEASURED, str(root)], capture_output=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"verify ran past {timeout} s on {root.name}")
    wall = time.perf_counter() - started
    peaks = [line.split()[1] for line in done.stderr.splitlines() if b"repro-peak-kb" in line]
    assert peaks, done.stderr[-2000:]
    try:
        report = json.loads(done.stdout)
    except ValueError:
        report = None
    return Outcome(done.returncode, report, wall, int(peaks[-1]) / 1024)


def _case(family: str, root: Path, *codes: str, verifies: bool = False) -> Outcome:
    """Verify ``root`` in a child within the bounds; record the family's figures; check that it
    exits 1 with every one of ``codes`` among its findings (or, ``verifies``, exits 0)."""
    outcome = verify_in_child(root)
    record(f"{family}: cases", 1)
    record_max(f"{family}: slowest verify (s)", round(outcome.wall, 2))
    record_max(f"{family}: largest verify peak (MiB)", round(outcome.peak_mib))
    assert outcome.peak_mib < MEMORY_BOUND_MIB, outcome
    if verifies:
        assert outcome.status == 0, outcome.report
    else:
        assert outcome.status == 1, outcome
        missing = set(codes) - outcome.codes
        assert not missing, (missing, outcome.report)
    return outcome


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real bundle of the small protocol, made once; copy it before changing it."""
    # Pendulum's rewards differ from step to step, so permuting them changes the record.
    protocol = {
        **SMALL,
        "matrix": [{"name": "env_id", "levels": ["CartPole-v1", "Pendulum-v1"]}],
        "participants": [{"id": "random", "kind": "random", "params": {}}],
        "runs_per_condition": 4,
    }
    return study_once(tmp_path_factory, "hostile", protocol)


@pytest.fixture
def bundle(base: Path, tmp_path: Path) -> Path:
    """A private copy of the base bundle."""
    root = tmp_path / "bundle"
    shutil.copytree(base, root)
    return root


def _set_info(root: Path, data: bytes) -> None:
    """bag-info.txt replaced by ``data`` (its Payload-Oxum kept) and the tag manifest redone."""
    oxum = next(
        line for line in (root / "bag-info.txt").read_bytes().splitlines() if b"Oxum" in line
    )
    (root / "bag-info.txt").write_bytes(data + oxum + b"\n")
    retag(root)


# --------------------------------------------------------------------------- tag-file encodings


ENCODINGS: dict[str, tuple[bytes, str]] = {
    "latin-1 byte": (b"Contact-Name: Jos\xe9\n", "tag-file-not-utf8"),
    "NUL byte": (b"Contact-Name: a\x00b\n", "tag-file-nul"),
    "UTF-16 with BOM": ("Contact-Name: x\n".encode("utf-16"), "tag-file-not-utf8"),
    "lone surrogate bytes": (b"Contact-Name: \xed\xa0\x80\n", "tag-file-not-utf8"),
}


class TestTagFileEncodings:
    """A tag file that stock BagIt tools cannot read as the UTF-8 bagit.txt declares."""

    @pytest.mark.parametrize("case", list(ENCODINGS))
    def test_bag_info(self, bundle: Path, case: str) -> None:
        """bag-info.txt with a field in another encoding, or a NUL byte, tag manifest redone:
        named (the stock ``bagit`` package fails on the first kind)."""
        data, code = ENCODINGS[case]
        _set_info(bundle, data)
        _case("tag-file encodings", bundle, code)

    def test_manifest_with_a_nul_byte(self, bundle: Path) -> None:
        """A NUL byte inside a payload manifest line's path: named as an unsafe path."""
        path = bundle / MANIFEST
        lines = path.read_bytes().splitlines(keepends=True)
        lines[0] = lines[0][:70] + b"\x00" + lines[0][70:]
        path.write_bytes(b"".join(lines))
        retag(bundle)
        _case("tag-file encodings", bundle, "manifest-path-unsafe")

    def test_manifest_not_utf8(self, bundle: Path) -> None:
        """A payload manifest with a byte that is not UTF-8: named."""
        path = bundle / MANIFEST
        path.write_bytes(path.read_bytes() + b"\xff\n")
        retag(bundle)
        _case("tag-file encodings", bundle, "manifest-not-utf8")


# --------------------------------------------------------------------------- empty directories


class TestEmptyDirectories:
    """A study writes no empty directory; one in the bag changes nothing else verify sees."""

    @pytest.mark.parametrize("where", ["data/extra", "data/runs/extra", "extra", "data/a/b"])
    def test_named(self, bundle: Path, where: str) -> None:
        """An empty directory anywhere in the bag is named."""
        (bundle / where).mkdir(parents=True)
        outcome = _case("empty directories", bundle, "empty-directory")
        assert any(
            f["file"] == where
            for f in (outcome.report or {})["findings"]
            if f["code"] == "empty-directory"
        )


# --------------------------------------------------------------------------- resource exhaustion


def _junk_manifest(root: Path) -> None:
    """3 million malformed payload-manifest lines (before: 3 million findings, 4.4 GiB, 30 s)."""
    with open(root / MANIFEST, "ab") as out:
        out.write(b"x\n" * 3_000_000)
    retag(root)


def _empty_objects(root: Path) -> None:
    """200,000 ``{}`` lines in a runs file (before: 3.7 GiB)."""
    with open(root / "data/runs/c00.jsonl", "ab") as out:
        out.write(b"{}\n" * 200_000)
    reseal(root)


def _drive_letters(root: Path) -> None:
    """A 32 MiB added file of ``C:/a`` lines: 6.7 million disclosure hits (before: every hit
    kept, about 140 bytes each, some 900 MiB)."""
    (root / "data/notes.txt").write_bytes(b"C:/a\n" * ((32 << 20) // 5))
    reseal(root)


def _rewards_line(root: Path, count: int) -> None:
    """The first run record of c00 given ``count`` step rewards of 1.0 (its steps and measure
    to match), written a block at a time: the test's own process stays small."""
    path = root / "data/runs/c00.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    record_ = json.loads(lines[0])
    record_.update(step_rewards=[], steps=count, measure=float(count))
    head, tail = canonical.dumps(record_).split(b'"step_rewards":[]')
    with open(path, "wb") as out:
        out.write(head + b'"step_rewards":[1.0')
        block = b",1.0" * 65536
        for _ in range((count - 1) // 65536):
            out.write(block)
        out.write(b",1.0" * ((count - 1) % 65536) + b"]" + tail)
        out.write(b"".join(lines[1:]))
    reseal(root)


def _long_line(root: Path) -> None:
    """One 50 MB run line of step rewards (before: 896 MiB)."""
    _rewards_line(root, 12_500_000)


def _many_values(root: Path) -> None:
    """A run line under the line limit holding 6 million values (``[1.0,1.0,...]``), which
    parsed would take far more memory than its bytes."""
    _rewards_line(root, 6_000_000)


def _no_newline(root: Path) -> None:
    """A 256 MiB runs file with no newline (before, 1 GiB of it took 3.1 GiB)."""
    with open(root / "data/runs/c00.jsonl", "wb") as out:
        block = b"7" * (1 << 20)
        for _ in range(256):
            out.write(block)
    reseal(root)


def _huge_held(root: Path) -> None:
    """aggregates.json of 300 MiB, past the limit on a file verify holds whole."""
    with open(root / "data/aggregates.json", "wb") as out:
        out.write(b'{"schema":"')
        for _ in range(300):
            out.write(b"a" * (1 << 20))
        out.write(b'"}\n')
    reseal(root)


EXHAUSTION: dict[str, tuple[Callable[[Path], None], str]] = {
    "junk manifest lines": (_junk_manifest, "findings-limit"),
    "empty objects in a runs file": (_empty_objects, "bad-lines-limit"),
    "millions of disclosure hits": (_drive_letters, "disclosure-more"),
    "a 50 MB run line": (_long_line, "line-bytes-limit"),
    "millions of values in one line": (_many_values, "line-values-limit"),
    "256 MiB without a newline": (_no_newline, "jsonl-no-final-newline"),
    "a held file past its limit": (_huge_held, "held-file-bytes-limit"),
}


def _declaring_zip(root: Path) -> Path:
    """The bundle packed as a zip beside it, with 14 more members of 1,000 MiB each, every one
    deflated some 900 to 1 (under max_compression_ratio): 14 GiB declared, under
    max_total_bytes, from 16 MiB stored (before: verify inflated, hashed and scanned all of
    it, 154 s). The members are copies of one MiB's deflate blocks, each ended by a full
    flush so that the copies chain; their checksum is not the data's, as verify never reads
    that far."""
    rng = random.Random(0)
    chunk = bytearray(1 << 20)
    for at in rng.sample(range(len(chunk)), 12):
        chunk[at] = rng.randrange(1, 256)
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = packer.compress(bytes(chunk)) + packer.flush(zlib.Z_FULL_FLUSH)
    end = packer.flush(zlib.Z_FINISH)
    assert 800 < len(chunk) / len(block) < Limits().max_compression_ratio
    out = root.parent / "packed.zip"
    with zipfile.ZipFile(out, "w") as archive:
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            archive.writestr(
                _member(f"{TOP}/{path.relative_to(root).as_posix()}"), path.read_bytes()
            )
        # The deflated bytes are written as they are, in zipfile's own way of writing a member
        # (its header, then its bytes; the index is written at the close).
        for k in range(14):
            info = _member(f"{TOP}/data/junk/{k:02d}.txt")
            info.file_size, info.compress_size = 1000 << 20, 1000 * len(block) + len(end)
            info.CRC = 0
            info.header_offset = archive.fp.tell()
            archive.fp.write(info.FileHeader(False))
            for _ in range(1000):
                archive.fp.write(block)
            archive.fp.write(end)
            archive.filelist.append(info)
            archive.NameToInfo[info.filename] = info
            archive.start_dir = archive.fp.tell()
    return out


def _bootstrap_contrasts(root: Path) -> Path:
    """A protocol whose contrasts are 5,000 bootstraps of 100,000 resamples each, every one
    within max_resamples (before: re-derived one after another, 91 s)."""
    interval = {"method": "bootstrap", "resamples": 100_000, "seed": 1}
    family = [
        {
            "id": f"c{i}",
            "a": {"factors": {"env_id": "CartPole-v1"}},
            "b": {"factors": {"env_id": "Pendulum-v1"}},
            "pairing": "unpaired",
            "interval": interval,
        }
        for i in range(5000)
    ]
    edit_protocol(root, lambda p: p.update(contrasts={"family": family}))
    return root


def _rl_section(root: Path) -> Path:
    """An rl section the former bound on its work allowed: rliable's sampler, 100,000
    resamples of the statistics and of a profile of 256 taus (before: 213 s of replicates
    drawn and computed one at a time; re-derived now in seconds, and the bundle holds no
    rl-aggregates.json)."""
    taus = [t / 256 for t in range(256)]
    bootstrap = {"resamples": 100_000, "seed": 1, "sampler": "rliable"}
    rl = {"task_factor": "env_id", "bootstrap": bootstrap, "taus": taus}
    edit_protocol(root, lambda p: p.update(rl=rl))
    return root


def _missing_partitions(count: int) -> Callable[[Path], Path]:
    """A seal naming ``count`` more partitions, none of which exists and none of which its
    protocol plans (50,000 before: 142 s; the workers were sent the jobs' context, which grows
    with the partitions, with every partition's job; then 4.5 s reading each missing one)."""

    def make(root: Path) -> Path:
        seal = json.loads((root / SEAL).read_bytes())
        seal["partitions"] += [
            {"entries": 4, "file": f"plans/x{i:06d}.json", "id": f"x{i:06d}", "sha256": "0" * 64}
            for i in range(count)
        ]
        (root / SEAL).write_bytes(canonical.dumps(seal))
        reseal(root)
        return root

    return make


#: Bundles that declare much work in few bytes: each maker returns what to verify, with the
#: code verify names it by.
DECLARED: dict[str, tuple[Callable[[Path], Path], str]] = {
    "a zip declaring 14 GiB": (_declaring_zip, "archive-total-ratio-limit"),
    "5,000 bootstrap contrasts": (_bootstrap_contrasts, "derivation-work-limit"),
    "an rl section the former bound allowed": (_rl_section, "file-missing"),
    "a seal naming 50,000 missing partitions": (_missing_partitions(50_000), "seal-partitions"),
    "a seal of 240,000 partitions, at the held-file limit": (
        _missing_partitions(240_000),
        "seal-partitions",
    ),
}


class TestResourceExhaustion:
    """Files made to make verify hold or do ever more: each is named, and verify's time and
    memory stay within the bounds of this module."""

    @pytest.mark.parametrize("case", list(EXHAUSTION))
    def test_bounded(self, bundle: Path, case: str) -> None:
        """Named by its limit's code, within the wall time and memory bounds."""
        make, code = EXHAUSTION[case]
        make(bundle)
        _case("resource exhaustion", bundle, code)

    @pytest.mark.parametrize("case", list(DECLARED))
    def test_declared_work(self, bundle: Path, case: str) -> None:
        """A bundle that declares far more work than its bytes (an archive's members, a
        protocol's bootstraps, a seal's partitions) is named, within the same bounds."""
        make, code = DECLARED[case]
        _case("declared work", make(bundle), code)


# --------------------------------------------------------------------------- pathological patterns


def _info_tokens(root: Path) -> None:
    """240 KB of ``token_`` in bag-info.txt (before: past 120 s)."""
    _set_info(root, b"Contact-Name: " + b"token_" * 40_000 + b"\n")


def _data_tokens(root: Path) -> None:
    """The same text in an added data file."""
    (root / "data/notes.txt").write_bytes(b"token_" * 40_000 + b"\n")
    reseal(root)


def _manifest_secret(root: Path) -> None:
    """``Secret_`` repeated 34,000 times in a payload-manifest line."""
    with open(root / MANIFEST, "ab") as out:
        out.write(b"Secret_" * 34_000 + b"\n")
    retag(root)


#: Each case and the code verify names it by; None: nothing is wrong but the time it cost
#: (bag-info.txt's descriptive fields are free text, which nothing re-derives).
PATTERNS: dict[str, tuple[Callable[[Path], None], str | None]] = {
    "token_ in bag-info.txt": (_info_tokens, None),
    "token_ in a data file": (_data_tokens, "outside-bundle-layout"),
    "Secret_ in a manifest line": (_manifest_secret, "manifest-line-malformed"),
}


class TestPathologicalPatterns:
    """Texts that made the disclosure scan's patterns backtrack for minutes."""

    @pytest.mark.parametrize("case", list(PATTERNS))
    def test_linear(self, bundle: Path, case: str) -> None:
        """Verify ends within the bounds, naming what is wrong with the file."""
        make, code = PATTERNS[case]
        make(bundle)
        if code is None:
            _case("pathological patterns", bundle, verifies=True)
        else:
            _case("pathological patterns", bundle, code)

    def test_a_study_of_a_long_description(self, tmp_path: Path) -> None:
        """A protocol whose 120 KB description repeats ``token_`` checks in seconds (before,
        ``repro study`` hung on it after creating its root)."""
        protocol = {**SMALL, "description": "token_" * 20_000}
        path = tmp_path / "p.json"
        path.write_text(json.dumps(protocol), "utf-8")
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "repro", "protocol", "check", str(path)],
            capture_output=True,
            timeout=WALL_BOUND,
        )
        record("pathological patterns: cases", 1)
        record_max(
            "pathological patterns: slowest verify (s)", round(time.perf_counter() - started, 2)
        )
        assert done.returncode == 0, done.stderr


# --------------------------------------------------------------------------- cheap edits


def _runs(root: Path, condition: str = "c00") -> list[dict[str, Any]]:
    path = root / f"data/runs/{condition}.jsonl"
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def _write_runs(root: Path, records: list[dict[str, Any]], condition: str = "c00") -> None:
    (root / f"data/runs/{condition}.jsonl").write_bytes(
        b"".join(canonical.dumps(r) for r in records)
    )


def _valid(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["status"] == "valid"]


def _steps_999(root: Path) -> None:
    records = _runs(root)
    _valid(records)[0]["steps"] = 999
    _write_runs(root, records)


def _rewards_dropped(root: Path) -> None:
    records = _runs(root)
    _valid(records)[0]["step_rewards"] = None
    _write_runs(root, records)


def _out_of_order(root: Path) -> None:
    records = _runs(root)
    records[0], records[-1] = records[-1], records[0]
    _write_runs(root, records)


def _times_not_a_date(root: Path) -> None:
    path = root / "data/times/c00.jsonl"
    lines = path.read_bytes().splitlines()
    first = json.loads(lines[0])
    first["started_utc"] = "2026-99-99T99:99:99.000000Z"
    lines[0] = canonical.dumps(first).rstrip(b"\n")
    path.write_bytes(b"\n".join(lines) + b"\n")


def _times_after_the_end(root: Path) -> None:
    path = root / "data/times/c00.jsonl"
    lines = path.read_bytes().splitlines()
    last = json.loads(lines[-1])
    last["finished_utc"] = "2099-01-01T00:00:00.000000Z"
    lines[-1] = canonical.dumps(last).rstrip(b"\n")
    path.write_bytes(b"\n".join(lines) + b"\n")


CHEAP: dict[str, tuple[Callable[[Path], None], str]] = {
    "steps 999 with fewer rewards": (_steps_999, "validity-rules"),
    "step rewards of a step-rewards adapter removed": (_rewards_dropped, "validity-rules"),
    "records out of sealed order": (_out_of_order, "runs-order"),
    "attempt times that are no date": (_times_not_a_date, "model"),
    "attempt times after the study's end": (_times_after_the_end, "times-outside-study"),
}


def _swap_evidence(root: Path) -> None:
    records = _valid(_runs(root))
    every = _runs(root)
    a, b = (next(r for r in every if r["attempt_id"] == v["attempt_id"]) for v in records[:2])
    for key in ("measure", "steps", "step_rewards", "trace_sha256"):
        a[key], b[key] = b[key], a[key]
    _write_runs(root, every)


def _trace_edited(root: Path) -> None:
    records = _runs(root)
    _valid(records)[0]["trace_sha256"] = "0" * 64
    _write_runs(root, records)


def _rewards_permuted(root: Path) -> None:
    records = _runs(root, "c01")
    target = next(r for r in _valid(records) if len(set(r["step_rewards"])) > 1)
    target["step_rewards"] = sorted(target["step_rewards"])
    _write_runs(root, records, "c01")


#: Cheap edits no offline check can see; docs/guarantees.md says so, and replay or a signature
#: is how a reader closes the gap. Each case pins that limit: should verify ever see one, the
#: documentation must change with it.
UNSEEN: dict[str, Callable[[Path], None]] = {
    "two slots' evidence swapped": _swap_evidence,
    "a trace digest edited": _trace_edited,
    "a run's step rewards permuted": _rewards_permuted,
}


class TestCheapEdits:
    """Edits that need no forger's skill: the payload edited, only the manifests regenerated."""

    @pytest.mark.parametrize("case", list(CHEAP))
    def test_seen(self, bundle: Path, case: str) -> None:
        """Each internal inconsistency a record or its times allow is named."""
        edit, code = CHEAP[case]
        edit(bundle)
        reseal(bundle)
        _case("cheap edits", bundle, code)

    @pytest.mark.parametrize("case", list(UNSEEN))
    def test_unseen_offline(self, bundle: Path, case: str) -> None:
        """What offline verification cannot see verifies, as docs/guarantees.md says: only a
        replay of the slot (or a signature over the bundle) tells."""
        UNSEEN[case](bundle)
        reseal(bundle)
        _case("cheap edits", bundle, verifies=True)
