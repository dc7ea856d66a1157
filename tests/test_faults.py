"""Faults during a study: every attempt of a misbehaving simulator gets the right terminal state
and cause, retries follow the protocol, and the study still ends with a bundle that verifies."""

from __future__ import annotations

import errno
import itertools
import json
import math
import time
import types
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest

from conftest import _Quiet as Quiet
from conftest import busy_cores, register_adapters
from guarantees import record
from repro._derive.tally import Ended
from repro._disclosure import WITHHELD_CAUSE, short_cause
from repro._execute.attempts import run_slots
from repro._execute.spares import Spares
from repro._execute.studies import DaskCluster, LocalWorkers, Prepared, Prestart, prepare, study
from repro._execute.worker import Invalid, Job, Worker, adapter_target, check_evidence
from repro._json.serde import structure
from repro.adapters._base import Evidence
from repro.models import AttemptTimes, Condition, PlanEntry, RunRecord
from repro.verify import verify
from repro_fault_adapter import FAULTS, FLAKY, FLAKY_OPEN

TIMEOUT = 0.5
#: The bound on a worker's start and a session's opening: a few seconds here (a busy machine
#: starts a worker in about a second), so that a hung open costs the suite little.
OPEN_TIMEOUT = 10.0
RUNS = 2
#: Every fault level, in the order of the conditions of the study in :func:`records`.
LEVELS = [*FAULTS, *FLAKY, *FLAKY_OPEN]


pytestmark = pytest.mark.usefixtures("fault_adapter")


def _protocol(levels: list[str], mode: str = "per-run", attempts: int = 2) -> dict[str, Any]:
    return {
        "schema": "repro.protocol/1",
        "id": "faults",
        "title": "Fault injection",
        "adapter": {"name": "faults", "options": {}},
        "matrix": [{"name": "fault", "levels": levels}],
        "participants": [{"id": "p", "kind": "fixed", "params": {}}],
        "runs_per_condition": RUNS,
        "seeding": {"mode": mode, "seed": 11},
        "measure": {"name": "episode_return", "description": "sum of step rewards"},
        "estimand": "sum-of-condition-means",
        "interval": {"method": "normal", "level": 0.95},
        "retry": {
            "max_attempts": attempts,
            "timeout_seconds": TIMEOUT,
            "open_timeout_seconds": OPEN_TIMEOUT,
        },
    }


def _study(tmp_path: Path, protocol: dict[str, Any], name: str = "out") -> Path:
    """Run ``protocol`` into a fresh root, check that it verifies, and return the root."""
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(protocol), "utf-8")
    state = tmp_path / f"{name}-state"
    state.mkdir()
    root = tmp_path / name
    study(prepare(path, {"state_dir": str(state)}), root, Quiet())
    assert verify(root) == [], "a study with faults must still verify"
    record("fault-injected studies that verify", 1)
    return root


def _lines(root: Path, folder: str, cls: type[Any]) -> list[Any]:
    """The values of every JSON Lines file in data/``folder``, in partition order."""
    files = sorted((root / "data" / folder).glob("*.jsonl"))
    lines = b"".join(p.read_bytes() for p in files)
    return [structure(json.loads(line), cls, what=folder) for line in lines.splitlines()]


def _run(tmp_path: Path, protocol: dict[str, Any], name: str = "out") -> list[RunRecord]:
    return _lines(_study(tmp_path, protocol, name), "runs", RunRecord)


@pytest.fixture(scope="module")
def faults_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The root of one study with every fault as a condition."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        register_adapters(
            monkeypatch,
            tmp_path_factory.mktemp("adapters"),
            "repro-test-faults",
            {"faults": "repro_fault_adapter:FaultAdapter"},
        )
        return _study(tmp_path_factory.mktemp("faults"), _protocol(LEVELS))


@pytest.fixture(scope="module")
def records(faults_root: Path) -> list[RunRecord]:
    """The run records of the study with every fault as a condition."""
    return _lines(faults_root, "runs", RunRecord)


def _by_fault(values: list[Any]) -> dict[str, list[Any]]:
    """Run records or attempt times by the fault of their condition (``c03-r0001-a1``)."""
    out: dict[str, list[Any]] = {level: [] for level in LEVELS}
    for v in values:
        out[LEVELS[int(v.attempt_id.split("-")[0][1:])]].append(v)
    return out


@pytest.mark.slow  # the study with every fault as a condition takes about 20 s
class TestFaultyRuns:
    """One study with every fault as a condition (the slow faults cost a timeout each)."""

    _by_fault = staticmethod(_by_fault)

    @pytest.mark.parametrize("fault", list(FAULTS))
    def test_each_attempt_gets_its_terminal_state_and_cause(
        self, records: list[RunRecord], fault: str
    ) -> None:
        """A persistent fault gives every attempt of every slot the expected status and cause
        code, and retries up to max_attempts (2); a healthy run is valid at its first attempt."""
        status, cause = FAULTS[fault]
        mine = self._by_fault(records)[fault]
        attempts = 1 if status == "valid" else 2
        assert len(mine) == RUNS * attempts
        assert {(r.status, r.cause) for r in mine} == {(status, cause)}
        assert Counter(r.slot for r in mine) == {s: attempts for s in {r.slot for r in mine}}

    @pytest.mark.parametrize("fault", list(FLAKY))
    def test_a_flaky_fault_is_retried_into_a_valid_run(
        self, records: list[RunRecord], fault: str
    ) -> None:
        """A fault at the first attempt only: attempt 1 fails with the fault's cause, attempt 2
        (a new attempt ID naming attempt 1 as predecessor) is valid."""
        mine = self._by_fault(records)[fault]
        assert len(mine) == 2 * RUNS
        for first, second in zip(mine[::2], mine[1::2], strict=True):
            assert (first.status, first.cause, first.attempt) == ("failed", FLAKY[fault], 1)
            assert (second.status, second.attempt, second.predecessor) == (
                "valid",
                2,
                first.attempt_id,
            )

    @pytest.mark.parametrize("fault", list(FLAKY_OPEN))
    def test_a_worker_lost_while_opening_is_replaced(
        self, records: list[RunRecord], faults_root: Path, fault: str
    ) -> None:
        """A worker killed while it opens the condition's session (once) does not lose the
        condition: the open is retried with a fresh worker, every slot is valid at its first
        attempt, and the lost open is kept with the first attempt's times, not in its record."""
        mine = self._by_fault(records)[fault]
        assert [(r.status, r.attempt) for r in mine] == [("valid", 1)] * RUNS
        times = self._by_fault(_lines(faults_root, "times", AttemptTimes))[fault]
        assert [t.lost_opens for t in times] == [(FLAKY_OPEN[fault],)] + [()] * (RUNS - 1)

    def test_no_cause_carries_a_message_or_a_path(self, records: list[RunRecord]) -> None:
        """Causes are short codes: the exception messages (which hold a host path) and the
        malformed cause an adapter gave never reach the bundle."""
        for r in records:
            assert r.cause is None or ("/" not in r.cause and "\n" not in r.cause), r.cause


class TestStreamMode:
    """In stream mode a lost worker does not shift the generator stream."""

    @pytest.mark.slow
    def test_a_lost_attempt_is_replayed_from_the_state_at_its_start(self, tmp_path: Path) -> None:
        """With every first attempt killed (after drawing from the stream) and retried in a new
        worker, the valid measures equal those of a study without faults, slot by slot."""
        healthy = _run(tmp_path, _protocol(["none"], mode="stream"), "healthy")
        flaky = _run(tmp_path, _protocol(["flaky-kill"], mode="stream"), "flaky")
        assert [r.measure for r in healthy] == [r.measure for r in flaky if r.status == "valid"]
        assert [r.cause for r in flaky if r.status == "failed"] == ["worker-died:SIGKILL"] * RUNS


class TestEvidenceChecks:
    """The checks the worker applies to whatever an adapter returns."""

    @pytest.mark.parametrize(
        ("value", "cause"),
        [
            (None, "evidence-type:NoneType"),
            (types.SimpleNamespace(step_rewards=(1.0,)), "evidence-type:SimpleNamespace"),
            (Evidence("12", None, 1, None), "evidence-step-rewards-type"),  # type: ignore[arg-type]
            (Evidence((True,), None, 1, None), "evidence-step-reward-type"),
            (Evidence(None, "1", 1, None), "evidence-measure-type"),  # type: ignore[arg-type]
            (Evidence((1.0,), None, True, None), "evidence-steps-type"),
            (Evidence((1.0,), None, -1, None), "evidence-steps-range"),
            (Evidence((1.0,), None, 1, "ABC"), "evidence-trace-digest"),
        ],
    )
    def test_malformed_evidence_is_named(self, value: object, cause: str) -> None:
        """Each kind of malformed evidence becomes Invalid with its own cause code."""
        assert check_evidence(value) == Invalid(cause)

    def test_numbers_become_plain_floats_and_ints(self) -> None:
        """NumPy-like reals and ints are accepted and converted; non-finite values pass through
        (the executor judges them against the measure)."""
        checked = check_evidence(Evidence([1, 2.5, math.inf], 3, 4, "0" * 64))  # type: ignore[arg-type]
        assert checked == Evidence((1.0, 2.5, math.inf), 3.0, 4, "0" * 64)
        assert all(type(r) is float for r in checked.step_rewards or ())  # type: ignore[union-attr]

    @pytest.mark.parametrize(
        "rewards",
        [[1.5, -2.0], (1.5, -2.0), (np.float64(1.5), -2.0), [np.float32(1.5), -2.0], (True, 1.0)],
    )
    def test_step_rewards_come_back_as_a_tuple_of_plain_floats(self, rewards: Any) -> None:
        """Plain floats in a tuple or a list, and NumPy floats among them, come back as a tuple
        of plain floats; a boolean among them is refused."""
        checked = check_evidence(Evidence(rewards, None, 2, None))
        if any(isinstance(r, bool) for r in rewards):
            assert checked == Invalid("evidence-step-reward-type")
            return
        assert isinstance(checked, Evidence)
        assert checked.step_rewards == (1.5, -2.0)
        assert type(checked.step_rewards) is tuple
        assert all(type(r) is float for r in checked.step_rewards)

    @pytest.mark.parametrize(
        ("cause", "kept"),
        [
            ("simulator-error:KeyError", True),
            ("session-open-failed:worker-died:SIGKILL", True),
            ("bad /home/user/x", False),
            ("line\nbreak", False),
            ("C:\\Users\\x", False),
            ("x" * 121, False),
            ("", False),
        ],
    )
    def test_adapter_causes_are_kept_only_when_well_formed(self, cause: str, kept: bool) -> None:
        """A cause an adapter supplies is kept only if it is a short code without path
        separators or line breaks; otherwise it is withheld."""
        assert short_cause(cause) == (cause if kept else WITHHELD_CAUSE)


class _LoggingWorker:
    """Stands in for a :class:`~repro._execute.worker.Worker` in per-run mode: logs each request
    as it is sent (a run sent ahead when it is sent, not when it is asked for), then does the
    caller's ``meanwhile`` work, then answers at once with good evidence."""

    stream_state = None

    def __init__(self, log: list[tuple[str, str]]) -> None:
        self.log = log
        self.ahead: tuple[Any, ...] | None = None
        self.began = self.ended = datetime.now(UTC)

    def _sent(self, kind: str, value: Any) -> None:
        self.log.append(("send", value.slot if kind == "run" else kind))

    def request(
        self, kind: str, value: Any = None, meanwhile: Any = None, then: Any = None
    ) -> tuple[Any, ...]:
        if self.ahead != (kind, value):
            assert self.ahead is None, "a run sent ahead is asked for next"
            self._sent(kind, value)
        self.ahead = then
        if then is not None:
            self._sent(*then)
        if meanwhile is not None:
            meanwhile()
        if kind == "open":
            return ("opened", {})
        if kind == "run":
            return ("evidence", Evidence((1.0,), None, 1, None))
        return ("closed",)


def _prepared(tmp_path: Path, runs: int) -> Prepared:
    path = tmp_path / "protocol.json"
    path.write_text(json.dumps({**_protocol(["none"]), "runs_per_condition": runs}), "utf-8")
    state = tmp_path / "state"
    state.mkdir()
    return prepare(path, {"state_dir": str(state)})


def _worker_of(
    tmp_path: Path, runs: int, spares: Spares | None = None
) -> tuple[Worker, Condition, list[PlanEntry]]:
    """A worker of the fault adapter (no fault, timeout :data:`TIMEOUT`; its first child from
    ``spares`` when given), the condition to open and the ``runs`` slots to run."""
    prepared = _prepared(tmp_path, runs)
    job = Job(
        adapter_target(prepared.adapter),
        prepared.protocol,
        prepared.options,
        prepared.frozen,
        stream=None,
    )
    worker = Worker(job, TIMEOUT, spares=spares)
    return worker, prepared.plan.seal.conditions[0], list(prepared.plan.entries())


def _worker(tmp_path: Path) -> tuple[Worker, Condition, PlanEntry]:
    """A worker of the fault adapter, the condition to open and the one slot to run."""
    worker, condition, entries = _worker_of(tmp_path, 1)
    return worker, condition, entries[0]


class TestOverlap:
    """The study writes each record while the worker runs the next attempt, without changing
    what is written or how attempts are timed."""

    def test_each_record_is_written_after_the_next_attempt_is_sent(self, tmp_path: Path) -> None:
        """In per-run mode slot k+1's run request is sent with slot k's, so the worker starts
        it without waiting; slot k's record is emitted (and its slot reported done) only once
        slot k+2's request is on its way too; the last ones at the end; all in sealed order."""
        prepared = _prepared(tmp_path, 4)
        partition = prepared.plan.partitions[0]
        condition = prepared.plan.seal.conditions[0]
        log: list[tuple[str, str]] = []
        result = run_slots(
            _LoggingWorker(log),  # type: ignore[arg-type]
            prepared.protocol,
            prepared.frozen.facts,
            condition,
            partition.entries,
            lambda record: log.append(("emit", record.slot)),
            lambda end: log.append(("done", end)),
        )
        slots = [e.slot for e in partition.entries]
        expected: list[tuple[str, str]] = [("send", "open"), ("send", slots[0])]
        expected.append(("send", slots[1]))
        for previous, following in zip(slots, slots[2:], strict=False):
            expected += [("send", following), ("emit", previous), ("done", Ended("valid", None))]
        expected += [("emit", slots[-2]), ("done", Ended("valid", None))]
        expected += [("emit", slots[-1]), ("done", Ended("valid", None)), ("send", "close")]
        assert log == expected
        assert [r.slot for r in result.records] == slots

    @pytest.mark.slow
    def test_a_run_sent_ahead_starts_without_being_asked(self, tmp_path: Path) -> None:
        """A run sent ahead with ``then`` is answered with no further request; asking for it
        reads that answer, and its attempt began when the answer before it arrived. Asking
        for any other request first is refused."""
        worker, condition, (first, second) = _worker_of(tmp_path, 2)
        try:
            assert worker.request("open", condition)[0] == "opened"
            assert worker.request("run", first, then=("run", second))[0] == "evidence"
            assert worker.ahead == ("run", second)
            answered_first = worker.ended
            conn = worker._conn
            assert conn is not None and conn.poll(OPEN_TIMEOUT), "the child ran it unasked"
            with pytest.raises(RuntimeError):
                worker.request("close")
            assert worker.request("run", second)[0] == "evidence"
            assert worker.ahead is None
            assert worker.began == answered_first
        finally:
            worker.stop()

    @pytest.mark.slow
    def test_attempts_sent_ahead_begin_as_the_one_before_ends(self, tmp_path: Path) -> None:
        """In a per-run study each attempt after a partition's first began when the one before
        it was answered (its times line says so); the first began before its session opened."""
        root = _study(tmp_path, {**_protocol(["none"]), "runs_per_condition": 4})
        times = _lines(root, "times", AttemptTimes)
        assert len(times) == 4
        for before, after in itertools.pairwise(times):
            assert after.started_utc == before.finished_utc
        assert all(t.started_utc <= t.finished_utc for t in times)

    @pytest.mark.slow
    def test_slow_work_meanwhile_is_not_a_timeout(self, tmp_path: Path) -> None:
        """The timeout counts from the sending: an answer that came in time is read even when
        the caller's own work took longer than the timeout."""
        worker, condition, entry = _worker(tmp_path)
        try:
            assert worker.request("open", condition)[0] == "opened"
            answer = worker.request("run", entry, meanwhile=lambda: time.sleep(3 * TIMEOUT))
            assert answer[0] == "evidence"
        finally:
            worker.stop()

    @pytest.mark.slow
    def test_failing_work_meanwhile_kills_the_child(self, tmp_path: Path) -> None:
        """An error in the caller's work (a full disk, say) is raised as it is, not taken for a
        lost worker, and the child running the request is killed."""
        worker, condition, entry = _worker(tmp_path)
        try:
            assert worker.request("open", condition)[0] == "opened"
            process = worker._process
            assert process is not None

            def full() -> None:
                raise OSError(errno.ENOSPC, "No space left on device")

            with pytest.raises(OSError, match="No space left"):
                worker.request("run", entry, meanwhile=full)
            assert process.poll() is not None
        finally:
            worker.stop()


def _waited(done: Any, what: str) -> None:
    """Wait for ``done()`` to hold, at most :data:`OPEN_TIMEOUT` (a child's start on a busy
    machine); fail naming ``what`` otherwise."""
    deadline = time.monotonic() + OPEN_TIMEOUT
    while not done():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


class _Threaded:
    """An adapter whose sessions run on threads of the study process."""

    thread_sessions = True


class TestSpares:
    """Worker processes started before the study has a job for them: a worker takes one for its
    first child, told modules are imported as it waits, and whatever is not taken is killed."""

    @pytest.mark.slow
    def test_a_worker_takes_a_spare_for_its_first_child_only(self, tmp_path: Path) -> None:
        """The spare serves the worker's first requests; once it is lost, the next child is a
        new one (no spare is left), and serves as well."""
        with Spares() as spares:
            spares.start(1)
            assert len(spares) == 1
            spare = spares._idle[0][0]
            worker, condition, (entry,) = _worker_of(tmp_path, 1, spares)
            try:
                assert worker.request("open", condition)[0] == "opened"
                assert worker._process is spare
                assert len(spares) == 0
                assert worker.request("run", entry)[0] == "evidence"
                worker.kill()
                assert worker.request("open", condition)[0] == "opened"
                assert worker._process is not None and worker._process.pid != spare.pid
                assert worker.request("run", entry)[0] == "evidence"
            finally:
                worker.stop()

    @pytest.mark.slow
    def test_a_spare_imports_what_it_is_told_before_its_job(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A spare told modules imports each as it waits, before any job; one that fails to
        import leaves the child waiting, and then serving its job."""
        marker = tmp_path / "imported"
        (tmp_path / "spare_marker.py").write_text(f"open({str(marker)!r}, 'w').close()\n", "utf-8")
        monkeypatch.syspath_prepend(str(tmp_path))
        with Spares() as spares:
            spares.start(1, ["no_such_module_here", "spare_marker"])
            _waited(marker.exists, "the spare never imported the module it was told")
            worker, condition, (entry,) = _worker_of(tmp_path, 1, spares)
            try:
                assert worker.request("open", condition)[0] == "opened"
                assert worker.request("run", entry)[0] == "evidence"
            finally:
                worker.stop()

    def test_children_not_taken_are_killed_and_dead_ones_passed_over(self) -> None:
        """``close`` kills every child still waiting; ``take`` passes over one that died."""
        spares = Spares()
        spares.start(3)
        (dead, _), (taken, taken_conn), (left, _) = spares._idle
        dead.kill()
        dead.wait()
        assert spares.take() == (taken, taken_conn)
        try:
            spares.close()
            assert left.returncode is not None
            assert taken.poll() is None, "a child taken is the worker's to stop"
            assert len(spares) == 0 and spares.take() is None
        finally:
            taken_conn.close()
            taken.kill()
            taken.wait()

    def test_prestart_starts_one_per_worker_and_slot_or_none(self, tmp_path: Path) -> None:
        """Once the adapter is known, a local study has one child per worker, at most one per
        slot (2 slots here); a cluster, an adapter whose sessions run on threads and a backend
        the protocol cannot run on (stream seeding on 3 workers) have none."""
        prepared = _prepared(tmp_path, RUNS)
        protocol, adapter = prepared.protocol, prepared.adapter
        stream = attrs.evolve(protocol, seeding=attrs.evolve(protocol.seeding, mode="stream"))
        cases: list[tuple[Any, Any, Any, int]] = [
            (LocalWorkers(3), protocol, adapter, RUNS),
            (LocalWorkers(1), protocol, adapter, 1),
            (DaskCluster("tcp://127.0.0.1:1"), protocol, adapter, 0),
            (LocalWorkers(3), protocol, _Threaded(), 0),
            (LocalWorkers(3), stream, adapter, 0),
        ]
        for backend, p, a, expected in cases:
            with Spares() as spares:
                spares.start(1)
                Prestart(backend, spares).early(p, a)
                assert len(spares) == expected, backend


class TestBusyMachine:
    """Timeouts bound a run's work, never the start of the worker that runs it: on a machine
    whose cores are busy with other work, starting a worker takes about a second."""

    @pytest.mark.slow
    def test_short_timeouts_hold_beside_cpu_bound_work(self, tmp_path: Path) -> None:
        """A study of 10 ms runs with ``timeout_seconds`` 0.5, two conditions of 30 slots on
        two workers, one of whose workers is killed while it opens a session (so a fresh one
        starts), ends with every slot valid at its first attempt while two CPU-bound processes
        run beside it."""
        protocol = {**_protocol(["slow", "flaky-open-kill"], attempts=1), "runs_per_condition": 30}
        protocol["retry"] = {"max_attempts": 1, "timeout_seconds": 0.5}
        path = tmp_path / "busy.json"
        path.write_text(json.dumps(protocol), "utf-8")
        state = tmp_path / "state"
        state.mkdir()
        root = tmp_path / "busy"
        with busy_cores(2):
            study(prepare(path, {"state_dir": str(state)}), root, Quiet(), LocalWorkers(2))
        records = _lines(root, "runs", RunRecord)
        assert len(records) == 60
        assert {(r.status, r.cause, r.attempt) for r in records} == {("valid", None, 1)}
        assert verify(root) == []
