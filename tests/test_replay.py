"""repro replay: one slot of a verified bundle re-executed and compared byte for byte."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import _Quiet as Quiet
from conftest import run_study
from repro._cli.app import app
from repro._execute.studies import prepare, study

runner = CliRunner()


def _fault_protocol(fault: str, mode: str) -> dict[str, Any]:
    return {
        "schema": "repro.protocol/1",
        "id": "replay",
        "title": "Replay",
        "adapter": {"name": "faults", "options": {}},
        "matrix": [{"name": "fault", "levels": ["none", fault]}],
        "participants": [{"id": "p", "kind": "fixed", "params": {}}],
        "runs_per_condition": 3,
        "seeding": {"mode": mode, "seed": 5},
        "measure": {"name": "episode_return", "description": "sum of step rewards"},
        "estimand": "sum-of-condition-means",
        "interval": {"method": "normal", "level": 0.95},
        "retry": {"max_attempts": 2, "timeout_seconds": 5},
    }


def _fault_study(tmp_path: Path, protocol: dict[str, Any], state: Path) -> Path:
    path = tmp_path / "protocol.json"
    path.write_text(json.dumps(protocol), "utf-8")
    state.mkdir(exist_ok=True)
    out = tmp_path / "bundle"
    study(prepare(path, {"state_dir": str(state)}), out, Quiet())
    return out


@pytest.mark.slow
class TestReplay:
    """Replay re-executes and compares; it says how far it had to go."""

    def test_per_run_slot_replays_alone(self, small_bundle: Path) -> None:
        """In per-run mode a slot runs alone from its seed and matches byte for byte; --json
        says so too."""
        result = runner.invoke(app, ["replay", str(small_bundle), "c03-r0005"])
        assert result.exit_code == 0, result.output
        assert result.stdout.strip() == (
            "c03-r0005: replayed alone from its seed; 1 attempt(s); byte-identical"
        )
        as_json = json.loads(
            runner.invoke(app, ["replay", "--json", str(small_bundle), "c00-r0000"]).stdout
        )
        assert (as_json["identical"], as_json["replayed_slots"], as_json["differences"]) == (
            True,
            1,
            [],
        )

    @pytest.mark.usefixtures("fault_adapter")
    def test_stream_slot_replays_from_the_checkpoint(self, tmp_path: Path) -> None:
        """In stream mode the third slot of a partition re-executes the partition's three slots
        from its checkpoint, including a retried slot whose first attempt killed its worker."""
        state = tmp_path / "state"
        bundle = _fault_study(tmp_path, _fault_protocol("flaky-kill", "stream"), state)
        shutil.rmtree(state)
        state.mkdir()
        result = runner.invoke(
            app, ["replay", str(bundle), "c01-r0002", "--option", f"state_dir={state}"]
        )
        assert result.exit_code == 0, result.output
        assert "replayed 3 slot(s) of c01 from its checkpoint; 2 attempt(s); byte-identical" in (
            result.stdout
        )

    @pytest.mark.usefixtures("fault_adapter")
    def test_a_different_outcome_is_named(self, tmp_path: Path) -> None:
        """When the simulator now behaves differently (a flaky fault that has already fired),
        replay exits 1 and names each differing field of each attempt."""
        state = tmp_path / "state"
        bundle = _fault_study(tmp_path, _fault_protocol("flaky-raise", "per-run"), state)
        result = runner.invoke(
            app, ["replay", str(bundle), "c01-r0000", "--option", f"state_dir={state}"]
        )
        assert result.exit_code == 1, result.output
        assert "2 attempt(s) in the bundle, 1 on replay" in result.stderr
        assert "differs" in result.stdout


class TestRefusals:
    """Replay refuses, with exit 2, what it cannot honestly replay."""

    @pytest.mark.parametrize("slot", ["c09-r0000", "c01-r0008", "c1-r1", "C01-R0001"])
    def test_unknown_slot(self, small_bundle: Path, slot: str) -> None:
        """A slot the sealed plan does not hold (a condition or a run past the plan's, a
        misspelt ID) is named, with how slots are named and the plan's range: its first and
        last slot, its conditions and its runs per condition."""
        result = runner.invoke(app, ["replay", str(small_bundle), slot])
        assert result.exit_code == 2
        message = " ".join(result.stderr.split())
        assert f"no slot {slot!r} in the sealed plan" in message
        assert "named by its condition, then its run" in message
        assert "c00-r0000 .. c03-r0007 here" in message
        assert "(4 condition(s), c00 .. c03, of 8 run(s) each, r0000 .. r0007)" in message

    def test_bundle_that_does_not_verify(self, bundle_copy: Path) -> None:
        """A tampered bundle is not replayed: the user is sent to repro verify."""
        target = bundle_copy / "data" / "aggregates.json"
        target.write_bytes(target.read_bytes().replace(b"0", b"1", 1))
        result = runner.invoke(app, ["replay", str(bundle_copy), "c00-r0000"])
        assert result.exit_code == 2
        assert "does not verify" in result.stderr

    @pytest.mark.slow
    def test_other_simulator_sources(
        self,
        tmp_path: Path,
        write_protocol: Callable[..., Path],
        small_protocol: dict[str, Any],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """When a pinned source file has changed since the study, replay names it, with the
        digest the bundle pins and the one found here, and runs nothing: not even the changed
        module's top-level code."""
        sources = tmp_path / "sources"
        sources.mkdir()
        module = sources / "replay_policy_module.py"
        module.write_text("def act(observation, rng):\n    return 0\n", "utf-8")
        monkeypatch.syspath_prepend(str(sources))
        small_protocol["participants"] = [
            {"id": "p", "kind": "callable", "params": {"target": "replay_policy_module:act"}}
        ]
        small_protocol["runs_per_condition"] = 2
        bundle = run_study(write_protocol(small_protocol), tmp_path / "bundle")
        before = hashlib.sha256(module.read_bytes()).hexdigest()
        ran = tmp_path / "ran"
        module.write_text(
            f"open({str(ran)!r}, 'w').close()\ndef act(observation, rng):\n    return 1\n",
            "utf-8",
        )
        after = hashlib.sha256(module.read_bytes()).hexdigest()
        sys.modules.pop("replay_policy_module", None)
        result = runner.invoke(app, ["replay", str(bundle), "c00-r0000", "--sources", str(sources)])
        assert result.exit_code == 2
        said = " ".join(result.stderr.split())
        assert f"replay_policy_module.py has sha256 {after} here" in said
        assert f"the bundle's ledger pins {before}" in said
        assert not ran.exists()
