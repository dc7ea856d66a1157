"""No study wasted: a study whose first slots all fail with one structural cause stops before
it spends the rest of its plan (exit 3, nothing claimed, what ran kept), the rule changes
nothing in a study it does not stop, and a study that lost slots exits non-zero unless the user
accepts losses (``--accept-losses``)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import _Quiet, bundle_digests, repro_cli
from repro._derive.tally import DECLARED, Ended
from repro._execute.stopping import (
    FIRST_SLOTS,
    EarlyStop,
    Gate,
    Watch,
    early_stop,
    ran,
    structural,
)
from repro._execute.studies import prepare, study
from repro.errors import EXIT_SLOTS_LOST, EXIT_STUDY_STOPPED, StudyStopped
from repro.verify import verify

#: A harness that counts its calls (one byte per call appended to the file named by its first
#: environment variable REPRO_TEST_COUNT names) and prints what its participant's mode says.
COUNTING = """\
import json, os, sys
spec = json.loads(sys.stdin.read())
with open(os.environ["REPRO_TEST_COUNT"], "ab") as count:
    count.write(b".")
mode = spec["participant"]["params"]["mode"]
if mode == "garbage":
    print("this is not JSON")
elif mode == "exit":
    sys.exit(7)
else:
    print(json.dumps({"score": len(spec["slot"])}))
"""


def _protocol(mode: str, runs: int = 15) -> dict[str, Any]:
    """A command study of ``runs`` slots in each of two conditions, whose one participant's
    harness behaves as ``mode`` says: ``ok``, ``garbage`` (no JSON) or ``exit`` (exit 7)."""
    return {
        "schema": "repro.protocol/1",
        "id": f"counting-{mode}",
        "title": "A harness that counts its calls",
        "adapter": {"name": "command", "options": {"harness": "counting_harness.py"}},
        "matrix": [{"name": "case", "levels": ["one", "two"]}],
        "participants": [{"id": mode, "kind": "agent", "params": {"mode": mode}}],
        "runs_per_condition": runs,
        "seeding": {"mode": "per-run", "seed": 11},
        "measure": {"name": "outcome_value", "key": "score", "description": "the slot's length"},
        "estimand": "mean-of-condition-means",
        "interval": {"method": "normal", "level": 0.95},
        "retry": {"max_attempts": 2, "timeout_seconds": 60},
    }


@pytest.fixture
def counting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The counting harness in ``tmp_path`` (the protocols go there too), its count file named
    in the environment; returns the count file."""
    (tmp_path / "counting_harness.py").write_text(COUNTING, "utf-8")
    count = tmp_path / "calls"
    count.write_bytes(b"")
    monkeypatch.setenv("REPRO_TEST_COUNT", str(count))
    monkeypatch.chdir(tmp_path)  # the harness path is relative, as a protocol writes it
    return count


def _write(tmp_path: Path, protocol: dict[str, Any]) -> Path:
    path = tmp_path / f"{protocol['id']}.json"
    path.write_text(json.dumps(protocol), "utf-8")
    return path


class TestTheRule:
    """The pure rule: what stops a study, and what never does."""

    def test_structural_causes(self) -> None:
        """Faults of the harness, policy or protocol are structural; a timeout, a killed
        harness, a measure out of its declared range and a valid run are not."""
        for cause in ("outcome-not-json", "outcome-schema", "harness-exit:1", "policy-error:E"):
            assert structural(cause), cause
        for cause in (None, "timeout", "harness-killed:SIGKILL", "measure-below-minimum"):
            assert not structural(cause), cause
        assert not structural("outcome-not-json-at-all")  # exact names are not prefixes

    def test_the_first_slots_alike_and_structural_stop(self) -> None:
        """Three failed slots with one structural cause stop a study of more slots; the same
        in a study of three slots (nothing to save), or with one valid, or with two causes,
        do not."""
        bad = Ended("failed", "outcome-not-json")
        assert early_stop([bad] * FIRST_SLOTS, 30) == "outcome-not-json"
        assert early_stop([bad] * FIRST_SLOTS, FIRST_SLOTS) is None
        assert early_stop([bad, bad, Ended("valid", None)], 30) is None
        assert early_stop([bad, bad, Ended("failed", "harness-exit:1")], 30) is None
        declared = Ended("excluded", f"{DECLARED}by the protocol")
        assert early_stop([bad, declared, bad, bad], 30) == bad.cause
        superseded = Ended("excluded", "superseded-scenario-version:2")
        assert early_stop([bad, superseded, bad, bad], 30) is None  # it ran

    @pytest.mark.slow
    @given(
        st.lists(
            st.sampled_from(
                [
                    Ended("valid", None),
                    Ended("failed", "timeout"),
                    Ended("failed", "outcome-not-json"),
                    Ended("failed", "harness-exit:1"),
                    Ended("excluded", f"{DECLARED}by the protocol"),
                    Ended("excluded", "superseded-scenario-version:2"),
                ]
            ),
            max_size=12,
        )
    )
    def test_the_watch_decides_once_as_the_rule_says(self, ends: list[Ended]) -> None:
        """Fed any sequence of slot ends, a watch raises at most once, exactly when the rule
        says so of the ends seen so far, and never after its first decision; an unarmed watch
        never raises."""
        watch, unarmed = Watch(30), Watch(30, armed=False)
        raised = []
        for i, end in enumerate(ends):
            unarmed.see(end)
            try:
                watch.see(end)
            except EarlyStop as stop:
                raised.append(i)
                assert stop.cause == early_stop(ends[: i + 1], 30)
        counted = [i for i, end in enumerate(ends) if ran(end)]
        decided = counted[FIRST_SLOTS - 1] if len(counted) >= FIRST_SLOTS else None
        expected = decided is not None and early_stop(ends[: decided + 1], 30) is not None
        assert raised == ([decided] if expected else [])


class TestTheGate:
    """Slots on threads wait at the watch's gate past the first three until it decides."""

    def test_the_first_slots_pass_and_the_rest_wait_for_the_decision(self) -> None:
        """A closed gate admits the first three slots at once; a fourth is refused once the
        study stopped, and admitted once the gate is open; an unarmed watch's gate is open
        from the start, and a watch opens its own when it decides to go on."""
        gate, cancelled = Gate(), threading.Event()
        assert [gate.admit(cancelled) for _ in range(FIRST_SLOTS)] == [True] * FIRST_SLOTS
        cancelled.set()
        assert gate.admit(cancelled) is False
        gate.open()
        assert gate.admit(threading.Event()) is True
        assert Watch(30, armed=False).gate.admit(cancelled) is True
        watch = Watch(30)
        for end in [Ended("valid", None)] * FIRST_SLOTS:
            watch.see(end)
        assert all(watch.gate.admit(cancelled) for _ in range(FIRST_SLOTS + 2))

    def test_every_thread_starts_its_first_slot(self) -> None:
        """Widened for 8 threads, a closed gate admits 8 slots at once, and no ninth once the
        study stopped."""
        gate, cancelled = Gate(), threading.Event()
        gate.widen(8)
        assert all(gate.admit(cancelled) for _ in range(8))
        cancelled.set()
        assert gate.admit(cancelled) is False


class TestAStudyStopsEarly:
    """A harness that fails structurally on every attempt stops the study early."""

    @pytest.mark.slow
    @pytest.mark.parametrize(
        ("mode", "cause"), [("garbage", "outcome-not-json"), ("exit", "harness-exit:7")]
    )
    def test_the_harness_is_called_far_fewer_times_than_the_plan_has_slots(
        self, counting: Path, tmp_path: Path, mode: str, cause: str
    ) -> None:
        """30 slots of two attempts each: the study stops after the first three slots (each
        tried twice), raising StudyStopped with exit 3 that names the
        cause and the count; the root is incomplete (no tag manifest, so verify refuses it) and
        keeps the records of what ran."""
        path = _write(tmp_path, _protocol(mode))
        out = tmp_path / "out"
        with pytest.raises(StudyStopped) as stopped:
            study(prepare(path, {}), out, _Quiet())
        assert stopped.value.exit_code == EXIT_STUDY_STOPPED == 3
        message = str(stopped.value)
        assert f"first {FIRST_SLOTS} slots" in message and cause in message
        # Two attempts for each of the three; the next slot's first may be under way (on the
        # study's one thread) when the third ends, and is stopped unrecorded.
        calls = len(counting.read_bytes())
        assert FIRST_SLOTS * 2 <= calls <= FIRST_SLOTS * 2 + 1 < 30
        assert not (out / "tagmanifest-sha256.txt").exists()
        kept = [
            json.loads(line)
            # a partition the stop cut short keeps its records under its temporary name
            for runs in sorted((out / "data" / "runs").glob("*.jsonl*"))
            for line in runs.read_text("utf-8").splitlines()
        ]
        assert len(kept) == FIRST_SLOTS * 2 and {r["cause"] for r in kept} == {cause}

    @pytest.mark.slow
    def test_the_command_line_exits_3_and_says_why(self, counting: Path, tmp_path: Path) -> None:
        """``repro study`` on the same study exits 3 with the cause on stderr; with
        ``--keep-going`` it runs every slot and, having lost them all, exits 4."""
        path = _write(tmp_path, _protocol("garbage", runs=3))
        stopped = repro_cli("study", str(path), "--out", str(tmp_path / "a"), cwd=tmp_path)
        assert stopped.returncode == EXIT_STUDY_STOPPED, stopped.stderr
        assert "outcome-not-json" in stopped.stderr
        # two attempts each, and the next slot's first may be under way when the third ends
        assert FIRST_SLOTS * 2 <= len(counting.read_bytes()) <= FIRST_SLOTS * 2 + 1
        counting.write_bytes(b"")
        going = repro_cli(
            "study", str(path), "--out", str(tmp_path / "b"), "--keep-going", cwd=tmp_path
        )
        assert going.returncode == EXIT_SLOTS_LOST, going.stderr
        assert len(counting.read_bytes()) == 6 * 2
        assert verify(tmp_path / "b") == []


class TestTheRuleChangesNothingElse:
    """A study the rule does not stop is byte for byte the study without the rule."""

    @pytest.mark.slow
    def test_a_study_that_does_not_stop_is_byte_identical_with_and_without_the_rule(
        self, counting: Path, tmp_path: Path
    ) -> None:
        """Nothing fails: the bundle with the rule armed equals the one with --keep-going in
        every file that does not record when it ran."""
        path = _write(tmp_path, _protocol("ok", runs=4))
        armed, unarmed = tmp_path / "armed", tmp_path / "unarmed"
        study(prepare(path, {}), armed, _Quiet())
        study(prepare(path, {}), unarmed, _Quiet(), keep_going=True)
        assert bundle_digests(armed) == bundle_digests(unarmed)
        assert verify(armed) == []

    @pytest.mark.slow
    def test_mixed_failures_do_not_stop_and_are_byte_identical(
        self, counting: Path, tmp_path: Path
    ) -> None:
        """Two participants, one of which always fails: the first slots to end are not all
        alike, so the study runs whole, and its bundle equals the --keep-going one."""
        protocol = _protocol("ok", runs=4)
        protocol["participants"] = [
            {"id": "ok", "kind": "agent", "params": {"mode": "ok"}},
            {"id": "garbage", "kind": "agent", "params": {"mode": "garbage"}},
        ]
        protocol["matrix"] = [{"name": "case", "levels": ["one"]}]
        path = _write(tmp_path, protocol)
        armed, unarmed = tmp_path / "armed", tmp_path / "unarmed"
        study(prepare(path, {}), armed, _Quiet())
        study(prepare(path, {}), unarmed, _Quiet(), keep_going=True)
        assert bundle_digests(armed) == bundle_digests(unarmed)
