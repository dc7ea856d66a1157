"""Hardened verify: limits, links, unsafe manifest paths, read errors and unfinished studies.

Each test states what ``repro verify`` must do when the tree is hostile or half-written: report a
finding naming the file (or the limit), read nothing it should not, and never raise anything but
``BadInput`` for a root that is not a directory.
"""

from __future__ import annotations

import copy
import errno
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import SMALL, deadline, run_study
from forge import reseal, retag, sha256
from guarantees import record
from repro._bundle.writer import BundleWriter
from repro._cli.app import app
from repro._cli.verify import VERIFY_LIMITS
from repro._json import canonical
from repro._json.serde import structure
from repro._layout import MANIFEST, TAGMANIFEST
from repro._protocol.work import MAX_DERIVATION_WORK, derivation_work
from repro.errors import BadInput
from repro.models import Protocol
from repro.verify import MAX_FILE_BYTES, Finding, Limits, verify
from repro.verify import _walk as walk
from repro.verify._limits import limit_names

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="O_NOFOLLOW, hard links, FIFOs and SIGALRM need POSIX"
)

runner = CliRunner()


# --------------------------------------------------------------------------- helpers


def _with(findings: list[Finding], file: str, phrase: str) -> list[Finding]:
    return [f for f in findings if f.file == file and phrase in f.what]


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The bundle names verify opens for reading, in order."""
    names: list[str] = []
    real = walk.open_below

    def spy(root: Path, name: str) -> int:
        names.append(name)
        return real(root, name)

    monkeypatch.setattr(walk, "open_below", spy)
    return names


def _after_scan(monkeypatch: pytest.MonkeyPatch, change: Callable[[Path], None]) -> None:
    """Make ``change`` to the tree right after verify's scan, before it reads any file: the race
    a hostile writer would try."""
    real = walk.scan_tree

    def scan(root: Path, limits: Limits, findings: list[Finding]) -> Any:
        listing = real(root, limits, findings)
        change(root)
        return listing

    monkeypatch.setattr(walk, "scan_tree", scan)


def _tiny(tmp: Path, name: str, **changes: Any) -> Path:
    """A real bundle of the small protocol cut to 2 runs per condition, with ``changes``."""
    protocol = copy.deepcopy(SMALL) | {"runs_per_condition": 2} | changes
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(protocol), "utf-8")
    return run_study(path, tmp / name)


# --------------------------------------------------------------------------- limits


class TestLimits:
    """Past each limit verify reports a finding naming the limit and the value found, and reads
    no further."""

    def test_defaults(self) -> None:
        """The documented defaults."""
        limits = Limits()
        assert limits.max_files == 100_000
        assert limits.max_file_bytes == MAX_FILE_BYTES == 1 << 30
        assert limits.max_total_bytes == 16 << 30
        assert limits.max_depth == 8
        assert limits.max_json_depth == canonical.MAX_DEPTH == 64
        assert limits.max_resamples == 100_000
        assert limits.max_derivation_work == MAX_DERIVATION_WORK == 5 * 10**8
        assert limits.max_archive_ratio == 50

    def test_a_bundle_verifies_within_tight_limits(self, bundle_copy: Path) -> None:
        """Limits just large enough for the bundle are no finding: they bound, not judge."""
        sizes = [p.stat().st_size for p in bundle_copy.rglob("*") if p.is_file()]
        entries = sum(1 for _ in bundle_copy.rglob("*"))
        limits = Limits(
            max_files=entries,
            max_file_bytes=max(sizes),
            max_total_bytes=sum(sizes),
            max_depth=2,
            max_json_depth=6,
        )
        assert verify(bundle_copy, limits) == []

    def test_file_count(self, bundle_copy: Path, opened: list[str]) -> None:
        """Past max_files entries the scan stops: one finding naming the limit, nothing read."""
        findings = verify(bundle_copy, Limits(max_files=5))
        assert findings == [
            Finding(
                "scan-entries-limit",
                ".",
                "more entries than the limit max_files: verify stopped scanning",
                "<= 5 entries",
                "more than 5",
            )
        ]
        assert opened == []

    def test_total_bytes(self, bundle_copy: Path, opened: list[str]) -> None:
        """Past max_total_bytes (by the sizes the scan sees) nothing is read at all."""
        findings = verify(bundle_copy, Limits(max_total_bytes=10_000))
        assert len(findings) == 1
        assert findings[0].file == "."
        assert "max_total_bytes" in findings[0].what
        assert findings[0].expected == "<= 10000 bytes"
        assert int(findings[0].found.split()[0]) > 10_000
        assert opened == []

    def test_single_file_size(self, bundle_copy: Path) -> None:
        """Every file over max_file_bytes is named with its size and is not read; smaller files
        are read as usual."""
        # Large enough for the files that lead verify to the others (the manifest names every
        # file, the seal names the partitions and runs files), smaller than the largest.
        guides = [MANIFEST, "data/plans/seal.json", "data/protocol.json"]
        limit = max((bundle_copy / name).stat().st_size for name in guides)
        findings = verify(bundle_copy, Limits(max_file_bytes=limit))
        large = {
            p.relative_to(bundle_copy).as_posix(): p.stat().st_size
            for p in bundle_copy.rglob("*")
            if p.is_file() and p.stat().st_size > limit
        }
        assert large
        for name, size in large.items():
            [finding] = _with(findings, name, "larger than the limit max_file_bytes")
            assert (finding.expected, finding.found) == (f"<= {limit} bytes", f"{size} bytes")
        assert not [f for f in findings if "max_file_bytes" in f.what and f.file not in large]

    def test_huge_sparse_file_is_not_read(self, bundle_copy: Path) -> None:
        """A 2 GiB (sparse) file under data/, listed in the manifest, with default limits is named,
        not read: verify stays fast and small."""
        with open(bundle_copy / "data/blob.bin", "wb") as fh:
            fh.truncate(2 << 30)
        with open(bundle_copy / MANIFEST, "a") as fh:
            fh.write(f"{'0' * 64}  data/blob.bin\n")
        start = time.perf_counter()
        findings = verify(bundle_copy)
        assert time.perf_counter() - start < 5
        [finding] = _with(findings, "data/blob.bin", "larger than the limit max_file_bytes")
        assert finding.found == f"{2 << 30} bytes"

    def test_file_grown_after_the_scan(
        self, bundle_copy: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A file that grows between the scan and its read makes the bytes read pass
        max_total_bytes: the file whose read would pass it is named and not read."""
        total = sum(p.stat().st_size for p in bundle_copy.rglob("*") if p.is_file())

        def grow(root: Path) -> None:
            with open(root / "data/validation-report.md", "ab") as fh:
                fh.write(b"x" * 100)

        _after_scan(monkeypatch, grow)
        findings = verify(bundle_copy, Limits(max_total_bytes=total))
        # Whichever file is read last no longer fits: the grown one took its bytes.
        [finding] = [f for f in findings if "limit max_total_bytes" in f.what]
        assert finding.found == f"{total + 100} bytes"

    def test_directory_depth(self, bundle_copy: Path, opened: list[str]) -> None:
        """Directories deeper than max_depth are named with their depth and not entered."""
        findings = verify(bundle_copy, Limits(max_depth=1))
        for name in ("data/plans", "data/runs"):
            [finding] = _with(findings, name, "deeper than the limit max_depth")
            assert (finding.expected, finding.found) == ("<= 1 levels", "2 levels")
        assert not [n for n in opened if n.startswith(("data/plans/", "data/runs/"))]

    def test_deep_directories_are_not_walked(self, bundle_copy: Path) -> None:
        """A chain of 200 nested directories costs one finding at the default depth of 8."""
        deep = bundle_copy / "data"
        for _ in range(200):
            deep = deep / "d"
        deep.mkdir(parents=True)
        findings = verify(bundle_copy)
        [finding] = [f for f in findings if "max_depth" in f.what]
        assert finding.file == "data" + "/d" * 8
        assert finding.found == "9 levels"

    def test_json_depth(self, bundle_copy: Path) -> None:
        """Every JSON file nested deeper than max_json_depth fails its strict parse, naming the
        limit's value."""
        findings = verify(bundle_copy, Limits(max_json_depth=2))
        for name in ("data/protocol.json", "data/tiers.json", "data/aggregates.json"):
            [finding] = _with(findings, name, "strict JSON parse")
            assert "nesting deeper than 2 levels" in finding.found

    @pytest.mark.slow
    def test_bootstrap_resamples(self, tmp_path: Path) -> None:
        """A protocol asking for more bootstrap resamples than max_resamples is named and its
        aggregates are not recomputed; within the limit the same bundle verifies."""
        bundle = _tiny(
            tmp_path,
            "boot",
            runs_per_condition=3,
            interval={"method": "bootstrap", "level": 0.95, "resamples": 200, "seed": 1},
        )
        assert verify(bundle) == []
        findings = verify(bundle, Limits(max_resamples=199))
        assert findings == [
            Finding(
                "resamples-limit",
                "data/protocol.json",
                "bootstrap resamples over the limit max_resamples: aggregates not re-derived",
                "<= 199",
                "200",
            )
        ]

    @pytest.mark.slow
    def test_derivation_work(self, tmp_path: Path) -> None:
        """A protocol that asks more work of the derivations than max_derivation_work (the
        bound the study's rules apply, repro._protocol.work.derivation_work) is named, and its
        derivations are not run; at its work the same bundle verifies."""
        bundle = _tiny(
            tmp_path,
            "work",
            runs_per_condition=3,
            interval={"method": "bootstrap", "level": 0.95, "resamples": 200, "seed": 1},
        )
        fp = json.loads((bundle / "data/protocol.json").read_bytes())
        work = derivation_work(structure(fp["protocol"], Protocol, what="protocol"))
        total = sum(work.values())
        assert list(work) == ["$.interval.resamples"]
        assert verify(bundle, Limits(max_derivation_work=total)) == []
        # A forged aggregate is not reached: nothing is re-derived past the limit.
        aggregates = json.loads((bundle / "data/aggregates.json").read_bytes())
        aggregates["conditions"][0]["mean"] = 123.0
        (bundle / "data/aggregates.json").write_bytes(canonical.dumps(aggregates))
        reseal(bundle)
        [finding] = verify(bundle, Limits(max_derivation_work=total - 1))
        assert (finding.code, finding.file) == ("derivation-work-limit", "data/protocol.json")
        assert (finding.expected, finding.found) == (f"<= {total - 1}", str(total))
        assert "$.protocol.interval.resamples" in finding.what
        assert "--limit max_derivation_work=" in finding.what

    def test_limit_option(self, bundle_copy: Path) -> None:
        """repro verify --limit NAME=N sets a limit: a bundle past it exits 1 naming it; an
        unknown name, a value that is no whole number or one the limit refuses exits 2, naming
        the setting; --help lists every limit."""
        result = runner.invoke(
            app, ["verify", "--json", "--limit", "max_files=3", str(bundle_copy)]
        )
        assert result.exit_code == 1
        assert "scan-entries-limit" in {f["code"] for f in json.loads(result.stdout)["findings"]}
        both = ["--limit", "max_files=100000", "--limit", "max_derivation_work=500000000"]
        assert runner.invoke(app, ["verify", *both, str(bundle_copy)]).exit_code == 0
        for setting in ("max_filez=3", "max_files=three", "max_files=0", "max_files"):
            result = runner.invoke(app, ["verify", "--limit", setting, str(bundle_copy)])
            assert result.exit_code == 2, setting
            assert "--limit" in result.output, setting
        assert list(VERIFY_LIMITS) == limit_names()
        shown = " ".join(runner.invoke(app, ["verify", "--help"]).output.split())
        assert all(name in shown.replace(" ", "") for name in limit_names())

    def test_archive_ratio(self, bundle_copy: Path, tmp_path: Path) -> None:
        """A packed bundle whose members declare more bytes per byte of the archive than
        max_archive_ratio is named, and nothing of it is read; within the limit it verifies."""
        packed = tmp_path / "small.zip"
        assert runner.invoke(app, ["pack", str(bundle_copy), "--out", str(packed)]).exit_code == 0
        declared = sum(p.stat().st_size for p in bundle_copy.rglob("*") if p.is_file())
        ratio = declared // packed.stat().st_size
        assert verify(packed, Limits(max_archive_ratio=ratio + 1)) == []
        [finding] = verify(packed, Limits(max_archive_ratio=ratio - 1))
        assert (finding.code, finding.file) == ("archive-total-ratio-limit", ".")
        assert finding.expected == f"<= {ratio - 1} to 1"
        assert "--limit max_archive_ratio=" in finding.what

    def test_plan_is_not_expanded_past_what_was_read(self, bundle_copy: Path) -> None:
        """A protocol edited to plan 10**12 runs per condition is named at once; verify does not
        try to expand that plan."""
        path = bundle_copy / "data/protocol.json"
        value = json.loads(path.read_bytes())
        value["protocol"]["runs_per_condition"] = 10**12
        path.write_bytes(canonical.dumps(value))
        reseal(bundle_copy)
        start = time.perf_counter()
        findings = verify(bundle_copy)
        assert time.perf_counter() - start < 5
        [finding] = _with(findings, "data/protocol.json", "plans more slots")
        assert (finding.expected, finding.found) == ("32 slots", f"{4 * 10**12} slots")


# --------------------------------------------------------------------------- links


class TestLinks:
    """No link is ever followed, and a file reachable through another path is refused."""

    @pytest.mark.parametrize("name", ["data/aggregates.json", "bagit.txt", "data/runs/c02.jsonl"])
    def test_hard_link(self, bundle_copy: Path, tmp_path: Path, name: str) -> None:
        """A file hard-linked from outside the bundle, bytes unchanged, is the one finding."""
        os.link(bundle_copy / name, tmp_path / "outside")
        assert verify(bundle_copy) == [
            Finding("hard-link", name, "hard link in the bundle", "1 link", "2 links")
        ]

    def test_file_swapped_for_a_symlink_after_the_scan(
        self, bundle_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A file replaced by a symlink (to an identical copy outside) between scan and read is
        refused by O_NOFOLLOW, not followed."""
        name = "data/aggregates.json"
        outside = tmp_path / "aggregates.json"
        shutil.copyfile(bundle_copy / name, outside)

        def swap(root: Path) -> None:
            (root / name).unlink()
            (root / name).symlink_to(outside)

        _after_scan(monkeypatch, swap)
        findings = verify(bundle_copy)
        [finding] = _with(findings, name, "cannot read")
        assert finding.found == os.strerror(errno.ELOOP)

    def test_directory_swapped_for_a_symlink_after_the_scan(
        self, bundle_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """data/runs replaced by a symlink to an identical copy outside between scan and read:
        every runs file is unreadable, none is read through the link."""
        outside = tmp_path / "runs"
        shutil.copytree(bundle_copy / "data/runs", outside)

        def swap(root: Path) -> None:
            shutil.rmtree(root / "data/runs")
            (root / "data/runs").symlink_to(outside, target_is_directory=True)

        _after_scan(monkeypatch, swap)
        findings = verify(bundle_copy)
        for runs in sorted(outside.iterdir()):
            [finding] = _with(findings, f"data/runs/{runs.name}", "cannot read")
            assert finding.found in (os.strerror(errno.ELOOP), os.strerror(errno.ENOTDIR))

    def test_fifo_swapped_in_after_the_scan(
        self, bundle_copy: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A FIFO put in place of a file after the scan neither blocks verify nor is read."""
        name = "data/tiers.json"

        def swap(root: Path) -> None:
            (root / name).unlink()
            os.mkfifo(root / name)

        _after_scan(monkeypatch, swap)
        with deadline(20):
            findings = verify(bundle_copy)
        [finding] = _with(findings, name, "not a regular file when read")
        assert finding.found == "a special file"

    def test_directory_swapped_in_after_the_scan(
        self, bundle_copy: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A directory put in place of a file after the scan is a finding, not an EISDIR crash."""
        name = "data/environment.json"

        def swap(root: Path) -> None:
            (root / name).unlink()
            (root / name).mkdir()

        _after_scan(monkeypatch, swap)
        findings = verify(bundle_copy)
        [finding] = _with(findings, name, "not a regular file when read")
        assert finding.found == "a directory"


# --------------------------------------------------------------------------- manifest paths

UNSAFE = [
    ("../outside.json", "path traversal (..)"),
    ("data/../../outside.json", "path traversal (..)"),
    ("/etc/hostname", "absolute path"),
    ("data\\aggregates.json", "backslash in path"),
    ("data//aggregates.json", "empty or '.' path component"),
    ("./data/aggregates.json", "empty or '.' path component"),
    ("data/aggregates.json/", "empty or '.' path component"),
    ("data/\x01aggregates.json", "control character in path"),
]


class TestManifestPaths:
    """A manifest path that does not name a place inside the bag is a finding on the manifest
    and is never opened."""

    @pytest.mark.parametrize("manifest", [MANIFEST, TAGMANIFEST])
    @pytest.mark.parametrize(("path", "reason"), UNSAFE, ids=[r for _, r in UNSAFE])
    def test_unsafe_path(
        self, bundle_copy: Path, opened: list[str], manifest: str, path: str, reason: str
    ) -> None:
        """The line is named with its number and reason; what verify opens is only ever a name
        the scan found, even when the path leads to a real file outside."""
        (bundle_copy.parent / "outside.json").write_bytes(b"{}\n")
        digest = sha256(bundle_copy.parent / "outside.json")
        target = bundle_copy / manifest
        number = target.read_bytes().count(b"\n") + 1
        target.write_bytes(target.read_bytes() + f"{digest}  {path}\n".encode())
        if manifest == MANIFEST:
            retag(bundle_copy)
        findings = verify(bundle_copy)
        # An absolute path under a host root is also a disclosure, named on its own.
        disclosed = [f for f in findings if f.what.startswith("disclosure: host-path")]
        assert all(f.file == manifest for f in disclosed)
        assert bool(disclosed) == path.startswith("/etc/")
        assert [f for f in findings if f not in disclosed] == [
            Finding(
                "manifest-path-unsafe",
                manifest,
                f"unsafe path on line {number}: {reason}",
                "a relative path inside the bag",
                repr(path),
            )
        ]
        scanned = {p.relative_to(bundle_copy).as_posix() for p in bundle_copy.rglob("*")}
        assert set(opened) <= scanned


# --------------------------------------------------------------------------- layout


class TestLayout:
    """A bundle holds the files ``repro study`` writes and no others, whatever the manifests
    list."""

    @pytest.mark.parametrize("name", ["data/README.md", "data/extra/x.json", "data/.x.partial"])
    def test_payload_file_with_regenerated_manifests(self, bundle_copy: Path, name: str) -> None:
        """A payload file added and listed in regenerated manifests and Payload-Oxum (BagIt
        integrity holds) is the one finding."""
        (bundle_copy / name).parent.mkdir(exist_ok=True)
        (bundle_copy / name).write_bytes(b"the real results are twice as good\n")
        reseal(bundle_copy)
        assert verify(bundle_copy) == [
            Finding(
                "outside-bundle-layout",
                name,
                "payload file outside the bundle layout",
                "absent",
                "present",
            )
        ]

    def test_payload_file_without_its_manifest(self, bundle_copy: Path) -> None:
        """With manifest-sha256.txt gone, an added payload file is still named."""
        (bundle_copy / MANIFEST).rename(bundle_copy / "data/x.txt")
        findings = verify(bundle_copy)
        assert _with(findings, "data/x.txt", "payload file outside the bundle layout")


# --------------------------------------------------------------------------- never a crash


class TestNeverRaises:
    """Whatever the tree holds, a problem is a finding; only a root that is not a directory is
    BadInput."""

    def test_unreadable_file(self, bundle_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Permission denied on a file (simulated: the tests run as root) is a finding."""
        real = os.open

        def refuse(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            if path == "aggregates.json":
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
            return real(path, flags, *args, **kwargs)

        monkeypatch.setattr(os, "open", refuse)
        findings = verify(bundle_copy)
        [finding] = _with(findings, "data/aggregates.json", "cannot read")
        assert finding.found == os.strerror(errno.EACCES)

    def test_unreadable_directory(self, bundle_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Permission denied on a directory is a finding naming it; its files are missing."""
        real = os.open

        def refuse(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            if path == "runs":
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
            return real(path, flags, *args, **kwargs)

        monkeypatch.setattr(os, "open", refuse)
        findings = verify(bundle_copy)
        [finding] = _with(findings, "data/runs", "cannot open directory")
        assert finding.found == os.strerror(errno.EACCES)
        assert _with(findings, "data/runs/c00.jsonl", "listed in manifest-sha256.txt but missing")

    def test_name_that_is_not_utf8(self, bundle_copy: Path) -> None:
        """A file whose name is not UTF-8 is named (escaped) rather than crashing the output."""
        open(os.path.join(os.fsencode(bundle_copy), b"data", b"\xff.json"), "wb").close()
        findings = verify(bundle_copy)
        assert findings == [
            Finding(
                "name-not-utf8",
                "data/\\udcff.json",
                "name is not UTF-8",
                "a bundle name",
                "undecodable bytes",
            )
        ]

    def test_values_that_break_the_statistics(self, bundle_copy: Path) -> None:
        """Schema-valid measures whose sum overflows (forged, with manifests regenerated) make a
        finding, not an OverflowError."""
        path = bundle_copy / "data/runs/c00.jsonl"
        records = [json.loads(line) for line in path.read_bytes().splitlines()]
        for r in records:
            r["measure"], r["step_rewards"] = 1.7e308, None
        path.write_bytes(b"".join(canonical.dumps(r) for r in records))
        reseal(bundle_copy)
        findings = verify(bundle_copy)
        [finding] = [f for f in findings if f.what == "verify could not process the data"]
        assert finding.found.startswith("OverflowError")

    @pytest.mark.parametrize("text", ["1e999", "-1e400", "1" * 5000, '"\\ud800"'])
    def test_number_or_string_without_canonical_form(self, bundle_copy: Path, text: str) -> None:
        """A JSON value that has no canonical form (an overflowing number, a 5000-digit integer,
        a lone surrogate) fails the strict parse of the file that holds it."""
        path = bundle_copy / "data/environment.json"
        data = path.read_bytes()
        key = b'"python":'
        start = data.index(key) + len(key)
        end = data.index(b",", start)
        path.write_bytes(data[:start] + text.encode() + data[end:])
        reseal(bundle_copy)
        findings = verify(bundle_copy)
        assert _with(findings, "data/environment.json", "strict JSON parse")

    def test_root_with_nul_byte(self) -> None:
        """A root path with a NUL byte is bad input, not a ValueError."""
        with pytest.raises(BadInput, match="not a bundle directory"):
            verify(Path("bundle\x00"))


# --------------------------------------------------------------------------- unfinished studies


@pytest.fixture(scope="module")
def write_order(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, bytes]]:
    """Every file a real study writes, in the order BundleWriter renames it into place, with
    its final bytes."""
    tmp = tmp_path_factory.mktemp("order")
    committed: list[Path] = []
    real = BundleWriter.commit

    def spy(self: BundleWriter, tmp_file: Path, path: Path) -> None:
        committed.append(path)
        real(self, tmp_file, path)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(BundleWriter, "commit", spy)
        root = _tiny(tmp, "bundle")
    return [(p.relative_to(root).as_posix(), p.read_bytes()) for p in committed]


def _unfinished(
    base: Path, files: list[tuple[str, bytes]], partial: tuple[str, bytes] | None
) -> Path:
    """A root as a study killed at that point leaves it: ``files`` renamed into place, and the
    one being written, if any, still under its temporary name with part of its bytes."""
    base.mkdir(mode=0o700)
    for name, data in files:
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        (base / name).write_bytes(data)
    if partial is not None:
        name, data = partial
        path = base / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.with_name(f".{path.name}.partial").write_bytes(data[: len(data) // 2])
    return base


class TestIncomplete:
    """A root a study did not finish is called incomplete first, and never verifies."""

    @pytest.mark.slow
    def test_write_order(self, write_order: list[tuple[str, bytes]]) -> None:
        """BundleWriter writes bagit.txt first (the mark of a started study), then the payload,
        the protocol first, and the tag manifest last."""
        names = [name for name, _ in write_order]
        assert names[:2] == ["bagit.txt", "data/protocol.json"]
        assert names[-3:] == ["bag-info.txt", MANIFEST, TAGMANIFEST]
        assert all(n.startswith("data/") for n in names[1:-3])

    @pytest.mark.slow
    def test_every_kill_point(self, write_order: list[tuple[str, bytes]], tmp_path: Path) -> None:
        """Cut the write order after each file, with and without the next file half-written
        under its temporary name: the first finding says incomplete and names the partial file;
        only the full file set verifies."""
        failures = []
        tried = 0
        for k in range(len(write_order)):
            for during in (False, True):
                partial = write_order[k] if during else None
                root = _unfinished(tmp_path / f"{k}-{during}", write_order[:k], partial)
                if k == 0 and not during:
                    # Killed before its first write: an empty directory, no bundle at all.
                    with pytest.raises(BadInput, match="not a bundle"):
                        verify(root)
                    continue
                findings = verify(root)
                tried += 1
                temporary = "" if partial is None else f".{Path(partial[0]).name}.partial"
                if not findings or not findings[0].incomplete or temporary not in findings[0].what:
                    failures.append((k, during, findings[:1]))
        record("unfinished roots tried", tried)
        record("unfinished roots not called incomplete", len(failures))
        assert failures == []
        assert verify(_unfinished(tmp_path / "complete", write_order, None)) == []

    def test_message(self, write_order: list[tuple[str, bytes]], tmp_path: Path) -> None:
        """The finding says why: no tag manifest, and the partial files by name."""
        k = [name for name, _ in write_order].index("data/runs/c01.jsonl")
        root = _unfinished(tmp_path / "root", write_order[:k], write_order[k])
        assert verify(root)[0] == Finding(
            "incomplete",
            TAGMANIFEST,
            "incomplete: the study that wrote this root did not finish: "
            f"no {TAGMANIFEST}; 1 partial file(s): data/runs/.c01.jsonl.partial",
            "the tag manifest, written last by a finished study",
            "missing",
        )

    def test_cli_summary(self, write_order: list[tuple[str, bytes]], tmp_path: Path) -> None:
        """``repro verify`` on an unfinished root exits 1 and its summary says INCOMPLETE."""
        root = _unfinished(tmp_path / "root", write_order[:5], write_order[5])
        result = runner.invoke(app, ["verify", str(root)])
        assert result.exit_code == 1, result.output
        summary = " ".join(result.output.split())
        assert f"INCOMPLETE: {root} is an unfinished study and does not verify" in summary

    def test_tampered_bundle_is_not_incomplete(self, bundle_copy: Path) -> None:
        """A finished bundle with a flipped byte fails without being called incomplete."""
        path = bundle_copy / "data/aggregates.json"
        data = bytearray(path.read_bytes())
        data[10] ^= 0x01
        path.write_bytes(bytes(data))
        findings = verify(bundle_copy)
        assert findings
        assert not [f for f in findings if f.incomplete]
        result = runner.invoke(app, ["verify", str(bundle_copy)])
        assert result.exit_code == 1
        assert "INCOMPLETE" not in result.output

    def test_partial_file_beside_a_tag_manifest(self, bundle_copy: Path) -> None:
        """A partial file added to a finished bundle is an added file, not a sign of an
        unfinished study: a study writes its tag manifest last, after every rename."""
        (bundle_copy / "data/runs/.c00.jsonl.partial").write_bytes(b"{}\n")
        findings = verify(bundle_copy)
        assert _with(findings, "data/runs/.c00.jsonl.partial", f"not listed in {MANIFEST}")
        assert not [f for f in findings if f.incomplete]

    def test_tag_manifest_deleted_is_incomplete(self, bundle_copy: Path) -> None:
        """Without its tag manifest a bundle is indistinguishable from a study killed before the
        last rename, and is called incomplete."""
        (bundle_copy / TAGMANIFEST).unlink()
        assert verify(bundle_copy)[0].incomplete
