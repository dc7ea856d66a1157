"""A study says what it lost: the losses grouped by cause at its end, a running count while it
runs, an exit code that says slots were lost (4, unless ``--accept-losses``), causes that name
who failed, and the traceback of a failed slot on the user's own terminal only (``repro replay
--traceback``)."""

from __future__ import annotations

import copy
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from conftest import SMALL, repro_cli, run_study
from htmlpage import parse
from repro.errors import EXIT_SLOTS_LOST
from repro.verify import verify

#: CartPole with a policy that divides by zero at its first step, beside a healthy one.
BROKEN: dict[str, Any] = {
    **copy.deepcopy(SMALL),
    "id": "broken-policy",
    "matrix": [{"name": "env_id", "levels": ["CartPole-v1"]}],
    "participants": [
        {"id": "random", "kind": "random", "params": {}},
        {
            "id": "zero",
            "kind": "callable",
            "params": {"target": "repro_test_policies:divides_by_zero"},
        },
    ],
    "runs_per_condition": 6,
    "retry": {"max_attempts": 1},
}


@pytest.fixture(scope="module")
def broken_protocol(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """:data:`BROKEN` written to a file."""
    path = tmp_path_factory.mktemp("broken") / "protocol.json"
    path.write_text(json.dumps(BROKEN), "utf-8")
    return path


class TestLossesAreTold:
    """The end of a study and its progress say what was lost, and why."""

    @pytest.mark.slow
    def test_the_end_of_a_study_groups_its_losses_by_cause(
        self, broken_protocol: Path, tmp_path: Path
    ) -> None:
        """A policy that raises on every step beside a healthy one: the study runs whole (its
        first slots are the healthy one's), exits 4 (EXIT_SLOTS_LOST) with its bundle whole, and
        its last lines say how many slots failed and why (``6 of 12 slots failed:
        policy-error:ZeroDivisionError (6)``); the running progress counted them too."""
        done = repro_cli("study", str(broken_protocol), "--out", str(tmp_path / "b"))
        assert done.returncode == EXIT_SLOTS_LOST == 4, done.stderr
        text = " ".join(done.stderr.split())
        assert (
            "6 of 12 slots failed (attempts exhausted): policy-error:ZeroDivisionError (6)" in text
        )
        assert "6 not valid" in text  # the plain-lines progress, as in a log
        assert verify(tmp_path / "b") == []

    @pytest.mark.slow
    @pytest.mark.usefixtures("fault_adapter")
    def test_the_end_of_a_study_groups_its_losses_by_how_each_slot_ended(
        self, tmp_path: Path
    ) -> None:
        """Slots whose last attempt was invalid (a NaN step reward), failed (the simulator
        raised) or excluded (declared before sealing) are summed up apart, each named by its
        record status as docs/bundle-format.md defines them, invalid first: an invalid slot is
        never called failed."""
        from typer.testing import CliRunner

        from repro._cli.app import app

        protocol = {
            "schema": "repro.protocol/1",
            "id": "lost-three-ways",
            "title": "Losses of each kind",
            "adapter": {"name": "faults", "options": {}},
            "matrix": [{"name": "fault", "levels": ["none", "nan", "run-failed"]}],
            "participants": [{"id": "p", "kind": "fixed", "params": {}}],
            "runs_per_condition": 2,
            "seeding": {"mode": "per-run", "seed": 11},
            "measure": {"name": "episode_return", "description": "sum of step rewards"},
            "estimand": "sum-of-condition-means",
            "interval": {"method": "normal", "level": 0.95},
            "retry": {"max_attempts": 2},
            "exclusions": [{"slot": "c00-r0001", "reason": "declared before sealing"}],
        }
        path = tmp_path / "p.json"
        path.write_text(json.dumps(protocol), "utf-8")
        result = CliRunner().invoke(app, ["study", str(path), "--out", str(tmp_path / "b")])
        assert result.exit_code == EXIT_SLOTS_LOST, result.output
        lines = [" ".join(x.split()) for x in result.stderr.splitlines() if " of 6 slots " in x]
        assert lines == [
            "2 of 6 slots invalid (ran, but outside the protocol's validity rules): "
            "non-finite-step-reward (2)",
            "2 of 6 slots failed (attempts exhausted): simulator-error:Boom (2)",
            "1 of 6 slots excluded: excluded before sealing: declared before sealing (1)",
        ], result.stderr
        assert verify(tmp_path / "b") == []
        # The page says the same of each group of losses, and counts each kind.
        page = tmp_path / "page.html"
        shown = CliRunner().invoke(app, ["show", str(tmp_path / "b"), "--html", str(page)])
        assert shown.exit_code == 0, shown.output
        rows = [e for e in parse(page.read_text("utf-8")) if e.tag == "tr"]
        cells = [r.children for r in rows if r.children and r.children[0].tag == "td"]
        ended = {c[1].text: c[0].text for c in cells if len(c) == 5}
        assert ended == {
            "non-finite-step-reward": "invalid (ran, but outside the protocol's validity rules)",
            "simulator-error:Boom": "failed (attempts exhausted)",
            "excluded before sealing: declared before sealing": "excluded",
        }
        losses = next(e for e in parse(page.read_text("utf-8")) if e.attrs.get("id") == "losses")
        assert "5 slot(s) did not end valid (2 invalid, 2 failed, 1 excluded)" in losses.text

    @pytest.mark.slow
    def test_accept_losses_exits_0_and_strict_is_still_taken(
        self, broken_protocol: Path, tmp_path: Path
    ) -> None:
        """``--accept-losses`` exits 0 for the same study; ``--strict``, what earlier versions
        needed for exit 4, is still accepted and changes nothing."""
        done = repro_cli(
            "study", str(broken_protocol), "--out", str(tmp_path / "a"), "--accept-losses"
        )
        assert done.returncode == 0, done.stderr
        assert verify(tmp_path / "a") == []
        done = repro_cli("study", str(broken_protocol), "--out", str(tmp_path / "b"), "--strict")
        assert done.returncode == EXIT_SLOTS_LOST, done.stderr

    @pytest.mark.slow
    def test_exclusions_declared_before_sealing_are_no_loss(self, tmp_path: Path) -> None:
        """A study whose only non-valid slot is one the protocol excluded before sealing exits
        0, and its end says the slot was excluded."""
        protocol = {
            **copy.deepcopy(SMALL),
            "matrix": [{"name": "env_id", "levels": ["CartPole-v1"]}],
            "participants": [{"id": "random", "kind": "random", "params": {}}],
            "runs_per_condition": 3,
            "exclusions": [{"slot": "c00-r0001", "reason": "declared before sealing"}],
        }
        path = tmp_path / "p.json"
        path.write_text(json.dumps(protocol), "utf-8")
        done = repro_cli("study", str(path), "--out", str(tmp_path / "b"))
        assert done.returncode == 0, done.stderr
        assert "1 of 3 slots excluded" in " ".join(done.stderr.split())


class TestWhoFailed:
    """Causes name who failed: the policy, the simulator, the harness, the worker."""

    @pytest.mark.slow
    def test_a_policy_s_exception_is_a_policy_error(
        self, broken_protocol: Path, tmp_path: Path
    ) -> None:
        """The Gymnasium adapter records a callable policy's exception as
        ``policy-error:TYPE``, not as the simulator's."""
        root = run_study(broken_protocol, tmp_path / "b")
        lines = (root / "data" / "runs" / "c01.jsonl").read_text("utf-8").splitlines()
        assert {json.loads(line)["cause"] for line in lines} == {"policy-error:ZeroDivisionError"}


class TestTraceback:
    """A failed slot's traceback reaches the user's terminal, never a bundle."""

    @pytest.mark.slow
    def test_replay_prints_it_on_request(self, broken_protocol: Path, tmp_path: Path) -> None:
        """``repro replay DIR SLOT --traceback`` prints the policy's traceback to stderr (the
        exception and the policy's source line); the replay still compares byte for byte, and
        no bundle file holds a traceback."""
        root = run_study(broken_protocol, tmp_path / "b")
        # The failing policy is the tests' own module, beside this file.
        sources = ("--sources", str(Path(__file__).parent))
        done = repro_cli("replay", str(root), "c01-r0000", "--traceback", *sources)
        assert done.returncode == 0, done.stderr
        assert "Traceback (most recent call last)" in done.stderr
        assert "ZeroDivisionError" in done.stderr and "divides_by_zero" in done.stderr
        assert "byte-identical" in done.stdout
        plain = repro_cli("replay", str(root), "c01-r0000", *sources)
        assert "Traceback" not in plain.stderr
        for path in root.rglob("*"):
            if path.is_file():
                assert b"Traceback" not in path.read_bytes(), path


class TestModes:
    """A bundle's files are its owner's alone, whatever the umask."""

    @pytest.mark.slow
    def test_umask_0_gives_0600_files_and_0700_directories(self, tmp_path: Path) -> None:
        """Under ``umask 0`` every file of the bundle is 0600 and every directory 0700."""
        path = tmp_path / "p.json"
        path.write_text(json.dumps(SMALL), "utf-8")
        previous = os.umask(0)
        try:
            root = run_study(path, tmp_path / "b")
        finally:
            os.umask(previous)
        modes = {
            p.relative_to(root).as_posix(): stat.S_IMODE(p.stat().st_mode)
            for p in [root, *root.rglob("*")]
        }
        assert {m for n, m in modes.items() if (root / n).is_dir()} == {0o700}
        assert {m for n, m in modes.items() if (root / n).is_file()} == {0o600}
        assert verify(root) == []
