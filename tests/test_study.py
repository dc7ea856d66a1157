"""End to end: repro study writes a bundle that repro verify accepts, reproducibly."""

from __future__ import annotations

import hashlib
import json
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bagit
import pytest
from typer.testing import CliRunner

from conftest import ROOT, run_study
from repro._cli.app import app
from repro._cli.started import command, started
from repro.verify import verify

# Slow: end-to-end studies compared byte for byte.
pytestmark = pytest.mark.slow

runner = CliRunner()


def _runs(bundle: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for f in sorted((bundle / "data/runs").iterdir())
        for line in f.read_text().splitlines()
    ]


def _digests(bundle: Path, names: list[str]) -> dict[str, str]:
    out = {}
    for name in names:
        for path in sorted((bundle / "data").glob(name)):
            out[path.relative_to(bundle).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


class TestQuickStart:
    """The quick-start protocol in protocols/ runs, verifies and is a valid BagIt bag."""

    @pytest.mark.slow
    def test_quickstart_via_cli(self, tmp_path: Path) -> None:
        """study exits 0, prints the verify command last, and verify then exits 0."""
        out = tmp_path / "bundle"
        result = runner.invoke(
            app,
            ["study", str(ROOT / "protocols/gymnasium-classic-control.json"), "--out", str(out)],
        )
        assert result.exit_code == 0, result.output
        assert result.stdout.strip().splitlines()[-1] == command(["verify", str(out)], started())
        assert "study: 200/200 runs (100%)" in result.stderr
        check = runner.invoke(app, ["verify", str(out)])
        assert check.exit_code == 0, check.output
        bagit.Bag(str(out)).validate()
        shown = runner.invoke(app, ["show", str(out)], env={"COLUMNS": "200"})
        assert (
            shown.exit_code == 0
            and "CartPole-v1" in shown.stdout
            and "execution-control" in shown.stdout
        )


class TestFreshRoot:
    """The output root is fresh, private and complete."""

    def test_root_mode_0700(self, small_bundle: Path) -> None:
        """The root is created with mode 0700."""
        assert stat.S_IMODE(small_bundle.stat().st_mode) == 0o700

    def test_no_partial_files_left(self, small_bundle: Path) -> None:
        """Every file was renamed into place: no temporary names remain."""
        assert not [p for p in small_bundle.rglob("*") if p.name.endswith(".partial")]

    def test_bundle_verifies(self, small_bundle: Path) -> None:
        """The small bundle verifies with no findings."""
        assert verify(small_bundle) == []

    @pytest.mark.parametrize("parent", ["missing", "missing/deeper", "a-file"])
    def test_a_root_whose_parent_is_missing_is_refused(
        self,
        write_protocol: Callable[..., Path],
        small_protocol: dict[str, Any],
        tmp_path: Path,
        parent: str,
    ) -> None:
        """--out under a directory that does not exist (or a file): exit 2, the message names
        the parent, and nothing is created, neither the root nor any directory above it."""
        protocol = write_protocol(small_protocol)
        (tmp_path / "a-file").write_text("not a directory", "utf-8")
        before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
        out = tmp_path / parent / "bundle"
        result = runner.invoke(app, ["study", str(protocol), "--out", str(out)])
        assert result.exit_code == 2, result.output
        message = " ".join(result.stderr.split())
        assert f"cannot create output root {out}: its parent {out.parent}" in message
        assert ("is not a directory" if parent == "a-file" else "does not exist") in message
        assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


class TestDeterminism:
    """Running the same protocol twice gives byte-identical derived files."""

    def test_byte_identical(
        self, write_protocol: Callable[..., Path], small_protocol: dict[str, Any], tmp_path: Path
    ) -> None:
        """runs/, plans/, aggregates.json and tiers.json are identical across two studies."""
        path = write_protocol(small_protocol)
        a = run_study(path, tmp_path / "a")
        b = run_study(path, tmp_path / "b")
        names = [
            "runs/*.jsonl",
            "plans/*.json",
            "aggregates.json",
            "tiers.json",
            "source-ledger.json",
            "validation-report.md",
        ]
        da, db = _digests(a, names), _digests(b, names)
        assert da and da == db

    def test_stream_mode_is_deterministic(
        self, write_protocol: Callable[..., Path], small_protocol: dict[str, Any], tmp_path: Path
    ) -> None:
        """Stream seeding, set once, also gives byte-identical runs, checkpoints and derived
        files twice (NumPy's unseeded global generator, which the simulator's process imports,
        leaves no trace)."""
        small_protocol["seeding"] = {"mode": "stream", "seed": 153, "statement": "random.seed(153)"}
        path = write_protocol(small_protocol)
        a = run_study(path, tmp_path / "a")
        b = run_study(path, tmp_path / "b")
        names = ["runs/*", "plans/*.json", "aggregates.json", "tiers.json", "source-ledger.json"]
        da, db = _digests(a, names), _digests(b, names)
        assert any(name.endswith(".checkpoint.json") for name in da)
        assert da == db
        assert verify(a) == []


class TestRetriesAndExclusions:
    """Every slot ends with one terminal outcome; nothing is dropped or imputed."""

    def test_first_valid_attempt_wins(
        self, write_protocol: Callable[..., Path], small_protocol: dict[str, Any], tmp_path: Path
    ) -> None:
        """A transient failure is retried under a new attempt ID linked to its predecessor."""
        small_protocol["participants"] = [
            {"id": "flaky", "kind": "callable", "params": {"target": "repro_test_policies:flaky"}}
        ]
        small_protocol["matrix"] = [{"name": "env_id", "levels": ["CartPole-v1"]}]
        out = run_study(write_protocol(small_protocol), tmp_path / "b")
        runs = _runs(out)
        failed = [r for r in runs if r["status"] == "failed"]
        assert len(failed) == 1 and failed[0]["cause"] == "policy-error:RuntimeError"
        retry = next(r for r in runs if r["predecessor"] == failed[0]["attempt_id"])
        assert (
            retry["status"] == "valid"
            and retry["attempt"] == 2
            and retry["attempt_id"].endswith("-a2")
        )
        assert len({r["slot"] for r in runs}) == 8
        assert verify(out) == []

    def test_exhausted_slot_is_failed_not_dropped(
        self, write_protocol: Callable[..., Path], small_protocol: dict[str, Any], tmp_path: Path
    ) -> None:
        """A slot that fails every attempt is recorded failed, listed as a loss, and the class is
        unavailable because the plan is incomplete (the study runs whole: --keep-going)."""
        small_protocol["participants"] = [
            {"id": "broken", "kind": "callable", "params": {"target": "repro_test_policies:broken"}}
        ]
        small_protocol["matrix"] = [{"name": "env_id", "levels": ["CartPole-v1"]}]
        small_protocol["published"] = {
            "citation": {"title": "t", "url": "https://example.org", "locator": "x"},
            "decimals": 1,
            "estimand": {"value": 20.0},
        }
        out = run_study(write_protocol(small_protocol), tmp_path / "b", keep_going=True)
        runs = _runs(out)
        assert len(runs) == 16 and all(r["status"] == "failed" for r in runs)
        ledger = json.loads((out / "data/source-ledger.json").read_text())
        assert len(ledger["losses"]) == 8 and ledger["losses"][0]["attempts"] == 2
        tiers = json.loads((out / "data/tiers.json").read_text())
        assert tiers["reproduction"]["verdict"] == "unavailable"
        verdicts = {t["name"]: t["verdict"] for t in tiers["tiers"]}
        assert verdicts["execution-control"] == "weakened"
        agg = json.loads((out / "data/aggregates.json").read_text())
        assert agg["conditions"][0]["failed"] == 8 and agg["conditions"][0]["mean"] is None
        assert verify(out) == []

    def test_exclusion_is_recorded_and_reported(
        self, write_protocol: Callable[..., Path], small_protocol: dict[str, Any], tmp_path: Path
    ) -> None:
        """A declared exclusion yields one 'excluded' record, is not run, and is reported."""
        small_protocol["exclusions"] = [{"slot": "c02-r0001", "reason": "declared before sealing"}]
        out = run_study(write_protocol(small_protocol), tmp_path / "b")
        record = next(r for r in _runs(out) if r["slot"] == "c02-r0001")
        assert record["status"] == "excluded" and record["measure"] is None
        agg = json.loads((out / "data/aggregates.json").read_text())
        assert (agg["conditions"][2]["valid"], agg["conditions"][2]["excluded"]) == (7, 1)
        assert "c02-r0001" in (out / "data/source-ledger.json").read_text()
        assert verify(out) == []


class TestCallablePolicy:
    """An importable callable policy is pinned by the sha256 of its source file."""

    def test_pinned_in_ledger(
        self, write_protocol: Callable[..., Path], small_protocol: dict[str, Any], tmp_path: Path
    ) -> None:
        """The ledger lists the policy file by path inside its import root and sha256."""
        expected = hashlib.sha256((ROOT / "tests/repro_test_policies.py").read_bytes()).hexdigest()
        small_protocol["participants"] = [
            {
                "id": "left",
                "kind": "callable",
                "params": {"target": "repro_test_policies:always_left", "sha256": expected},
            }
        ]
        out = run_study(write_protocol(small_protocol), tmp_path / "b")
        ledger = json.loads((out / "data/source-ledger.json").read_text())
        pinned = [s for s in ledger["sources"] if s["name"] == "repro_test_policies.py"]
        assert pinned and pinned[0]["sha256"] == expected

    def test_digest_mismatch_refused(
        self, write_protocol: Callable[..., Path], small_protocol: dict[str, Any], tmp_path: Path
    ) -> None:
        """A pinned digest that does not match the file refuses to run: exit 2, nothing written."""
        small_protocol["participants"] = [
            {
                "id": "left",
                "kind": "callable",
                "params": {"target": "repro_test_policies:always_left", "sha256": "0" * 64},
            }
        ]
        out = tmp_path / "b"
        result = runner.invoke(
            app, ["study", str(write_protocol(small_protocol)), "--out", str(out)]
        )
        assert result.exit_code == 2
        assert "$.participants[0].params.sha256" in result.stderr
        assert not out.exists()


class TestPlot:
    """repro show --plot draws a PNG."""

    def test_plot(self, small_bundle: Path, tmp_path: Path) -> None:
        """The plot file is a PNG."""
        pytest.importorskip("matplotlib")
        target = tmp_path / "plot.png"
        result = runner.invoke(app, ["show", str(small_bundle), "--plot", str(target)])
        assert result.exit_code == 0, result.output
        assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
