"""Thread sessions: a command study (whose adapter says ``thread_sessions``) runs its slots on
threads of the study process, with the guarantees of a worker process: byte-identical records
whatever the concurrency and whichever path ran them, per-run timeouts that kill the harness's
process group, sealed sources checked again, stop signals that stop every run at once and leave
the root incomplete, harnesses that die with a killed study; and a limit of 256 at once."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, SMALL, _Quiet, bundle_digests, register_adapters, run_study
from repro import _layout as layout
from repro._execute import worker
from repro._execute.studies import LocalWorkers, _workload, check_backend, prepare, study
from repro._execute.threads import thread_sessions
from repro._json.serde import structure
from repro.adapters._command import CommandAdapter
from repro.errors import BadInput
from repro.models import Protocol
from repro.verify import verify
from test_command import BAD

# Slow: studies on adapters that wait.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not sys.platform.startswith("linux"), reason="process groups, signals and /proc: Linux only"
    ),
]

PID_HARNESS = ROOT / "tests" / "harness" / "pid_harness.sh"


def _records(bundle: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in sorted((bundle / "data" / "runs").glob("*.jsonl"))
        for line in path.read_text("utf-8").splitlines()
    ]


@pytest.fixture(autouse=True)
def _harnesses_beside_protocols(tmp_path: Path) -> None:
    """The harnesses this module's protocols name, copied into the folder the protocols are
    written to: a protocol's harness path is relative to the protocol's folder."""
    for harness in (ROOT / "tests" / "harness" / "bad_harness.py", PID_HARNESS):
        shutil.copy(harness, tmp_path / harness.name)


def _hanging(runs: int, timeout: float = 60) -> dict[str, Any]:
    """Two conditions of ``runs`` runs of the PID harness, which hangs, one attempt each."""
    protocol = copy.deepcopy(BAD)
    protocol["adapter"]["options"] = {"harness": PID_HARNESS.name}
    protocol["participants"] = [{"id": "a", "kind": "agent", "params": {}}]
    protocol["matrix"] = [{"name": "case", "levels": ["one", "two"]}]
    protocol["runs_per_condition"] = runs
    protocol["retry"] = {"max_attempts": 1, "timeout_seconds": timeout}
    return protocol


def _wait_for(condition: Callable[[], bool], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not exited (a zombie has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _noted(pids: Path, kind: str) -> list[int]:
    return [int(p.read_text()) for p in pids.glob(f"{kind}-*") if p.read_text().strip()]


@pytest.fixture
def processes_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command adapter as if it did not say ``thread_sessions``: worker processes."""
    monkeypatch.setattr(CommandAdapter, "thread_sessions", False)


class TestPath:
    def test_a_command_study_runs_on_threads_without_a_worker(
        self, tmp_path: Path, write_protocol: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A per-run command study at 4 workers starts no worker process (one that started
        would fail the study) and writes a bundle that verifies."""

        def refuse(self: worker.Worker) -> None:
            raise AssertionError("a worker process was started")

        monkeypatch.setattr(worker.Worker, "_start", refuse)
        protocol = copy.deepcopy(BAD)
        protocol["participants"] = protocol["participants"][:1]
        out = run_study(write_protocol(protocol), tmp_path / "out", LocalWorkers(4))
        assert {r["status"] for r in _records(out)} == {"valid"}
        assert verify(out) == []

    def test_only_per_run_studies_of_thread_adapters_run_on_threads(
        self, write_protocol: Callable[..., Path], processes_path: None
    ) -> None:
        """The thread path is taken only when the adapter's class says so and the protocol
        seeds per run: a stream study keeps its one worker process."""
        protocol = copy.deepcopy(BAD)
        path = write_protocol(protocol)
        assert not thread_sessions(_workload(prepare(path, {})))
        CommandAdapter.thread_sessions = True  # undone by the fixture
        assert thread_sessions(_workload(prepare(path, {})))
        protocol["seeding"] = {"mode": "stream", "seed": 5}
        assert not thread_sessions(_workload(prepare(write_protocol(protocol), {})))


class TestNoSpareWorker:
    def test_thread_adapters_names_the_built_in_adapters_that_run_on_threads(self) -> None:
        """THREAD_ADAPTERS, which a study reads before it imports an adapter, is exactly the
        set of repro's own adapters whose classes say ``thread_sessions``."""
        import importlib

        from repro import DISTRIBUTION
        from repro._execute.spares import THREAD_ADAPTERS
        from repro.adapters._base import THREAD_SESSIONS, registered_adapters

        built_in = {
            r.name: r.target for r in registered_adapters() if r.distribution == DISTRIBUTION
        }
        on_threads = set()
        for name, target in built_in.items():
            module, _, attribute = target.partition(":")
            cls = getattr(importlib.import_module(module), attribute, None)
            if getattr(cls, THREAD_SESSIONS, False) is True:
                on_threads.add(name)
        assert {"command", "gymnasium"} <= set(built_in)
        assert on_threads == THREAD_ADAPTERS

    def test_a_protocol_is_read_for_its_adapter_before_it_is_loaded(self, tmp_path: Path) -> None:
        """A per-run protocol of a thread adapter says so; stream seeding, another adapter, and
        whatever is not such a protocol (no file, not JSON, another shape, over the size limit)
        say no."""
        from repro._execute.spares import runs_on_threads

        def peek(text: str) -> bool:
            path = tmp_path / "protocol.json"
            path.write_text(text)
            return runs_on_threads(path)

        stream = {**BAD, "seeding": {"mode": "stream", "seed": 5}}
        gym = {**BAD, "adapter": {"name": "gymnasium", "options": {}}}
        assert peek(json.dumps(BAD))
        assert not peek(json.dumps(stream))
        assert not peek(json.dumps(gym))
        assert not peek("[1, 2]")
        assert not peek('{"adapter": "command"}')
        assert not peek("not json")
        assert not peek(json.dumps({**BAD, "pad": "x" * (1 << 20)}))
        assert not runs_on_threads(tmp_path / "missing.json")

    def test_what_is_no_regular_file_is_not_read_for_its_adapter(self, tmp_path: Path) -> None:
        """A FIFO (opening it to read would wait for a writer), a character device (endless),
        a directory and a dangling link say no at once; the peek runs on a daemon thread so
        that a peek that blocks fails the test instead of hanging the suite."""
        from repro._execute.spares import runs_on_threads

        fifo = tmp_path / "protocol.fifo"
        os.mkfifo(fifo)
        (tmp_path / "dir.json").mkdir()
        (tmp_path / "link.json").symlink_to(tmp_path / "gone.json")
        for path in (fifo, Path("/dev/zero"), tmp_path / "dir.json", tmp_path / "link.json"):
            said: list[bool] = []
            peek = threading.Thread(
                target=lambda p=path, s=said: s.append(runs_on_threads(p)), daemon=True
            )
            peek.start()
            peek.join(120)  # a generous bound, far above a busy machine's few milliseconds
            assert said == [False], path

    def test_a_command_study_starts_no_worker_process(
        self, tmp_path: Path, write_protocol: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """``repro study`` of a per-run command protocol starts no worker process, not even
        the one a study starts before its imports (a spawn fails the test), and writes a
        bundle that verifies."""
        from typer.testing import CliRunner

        from repro._cli.app import app
        from repro._execute import spares

        def refuse() -> Any:
            raise AssertionError("a worker process was started")

        monkeypatch.setattr(spares, "spawn", refuse)
        protocol = copy.deepcopy(BAD)
        protocol["participants"] = protocol["participants"][:1]
        out = tmp_path / "out"
        done = CliRunner().invoke(
            app, ["study", str(write_protocol(protocol)), "--out", str(out), "--workers", "2"]
        )
        assert done.exit_code == 0, done.output
        assert verify(out) == []


class TestSameRecords:
    def test_records_do_not_depend_on_threads_or_processes(
        self, tmp_path: Path, write_protocol: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Every way a harness misbehaves (exit, timeout, not JSON, not an object, schema),
        retried up to max_attempts, gives the same bundle byte for byte on 1 and 8 threads and
        on 2 worker processes. (One run of each: each timed-out attempt waits out its 2 s.)"""
        path = write_protocol({**copy.deepcopy(BAD), "runs_per_condition": 1})
        one = run_study(path, tmp_path / "t1")
        eight = run_study(path, tmp_path / "t8", LocalWorkers(8))
        monkeypatch.setattr(CommandAdapter, "thread_sessions", False)
        processes = run_study(path, tmp_path / "p2", LocalWorkers(2))
        causes = {r["cause"] for r in _records(one)}
        assert {"timeout", "harness-exit:3", "outcome-schema"} <= causes
        assert bundle_digests(one) == bundle_digests(eight) == bundle_digests(processes)
        assert verify(eight) == []

    def test_changed_sources_fail_every_open_alike(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A harness changed between sealing and running fails every attempt with
        session-open-failed:sources-differ-in-worker, on threads as in worker processes."""
        harness = tmp_path / "harness.py"
        harness.write_text((ROOT / "tests" / "harness" / "bad_harness.py").read_text())
        protocol = copy.deepcopy(BAD)
        protocol["participants"] = protocol["participants"][:1]
        path = tmp_path / "p.json"
        path.write_text(json.dumps(protocol))
        options = {"harness": str(harness)}
        on_threads, on_processes = prepare(path, options), prepare(path, options)
        harness.write_text(harness.read_text() + "\n# changed\n")
        study(on_threads, tmp_path / "t", _Quiet(), LocalWorkers(2))
        monkeypatch.setattr(CommandAdapter, "thread_sessions", False)
        study(on_processes, tmp_path / "p", _Quiet(), LocalWorkers(2))
        causes = {r["cause"] for r in _records(tmp_path / "t")}
        assert causes == {"session-open-failed:sources-differ-in-worker"}
        assert bundle_digests(tmp_path / "t") == bundle_digests(tmp_path / "p")


class TestTimeouts:
    def test_a_timed_out_harness_is_killed_with_its_group(
        self, tmp_path: Path, write_protocol: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Runs past retry.timeout_seconds fail with cause timeout, and every harness and the
        child in its process group are gone after the study."""
        pids = tmp_path / "pids"
        pids.mkdir()
        monkeypatch.setenv("PIDS", str(pids))
        out = run_study(write_protocol(_hanging(3, timeout=1)), tmp_path / "out", LocalWorkers(4))
        assert {(r["status"], r["cause"]) for r in _records(out)} == {("failed", "timeout")}
        noted = _noted(pids, "harness") + _noted(pids, "child")
        assert len(noted) == 12
        _wait_for(lambda: not any(_alive(pid) for pid in noted))

    def test_a_run_that_ignores_its_timeout_is_stopped_by_the_study(
        self,
        tmp_path: Path,
        write_protocol: Callable[..., Path],
        monkeypatch: pytest.MonkeyPatch,
        tmp_path_factory: pytest.TempPathFactory,
    ) -> None:
        """A thread-session adapter whose runs never return by themselves: the study bounds
        each attempt by retry.timeout_seconds (cause timeout, every attempt retried) and ends
        the run through the stop it registered."""
        register_adapters(
            monkeypatch,
            tmp_path_factory.mktemp("adapters"),
            "repro-test-stuck",
            {"stuck": "repro_latency_adapters:StuckAdapter"},
        )
        protocol = _hanging(2, timeout=1)
        protocol["adapter"]["name"] = "stuck"
        protocol["retry"]["max_attempts"] = 2
        out = run_study(write_protocol(protocol), tmp_path / "out", LocalWorkers(3))
        records = _records(out)
        assert len(records) == 8
        assert {(r["status"], r["cause"]) for r in records} == {("failed", "timeout")}


class TestStopping:
    def _start(self, tmp_path: Path, runs: int, workers: int) -> tuple[subprocess.Popen[str], Path]:
        pids = tmp_path / "pids"
        pids.mkdir()
        path = tmp_path / "p.json"
        path.write_text(json.dumps(_hanging(runs)))
        (tmp_path / "out").mkdir()
        env = {**os.environ, "PIDS": str(pids)}
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        command = [sys.executable, "-m", "repro", "study", str(path)]
        command += ["--out", str(tmp_path / "out" / "b"), "--workers", str(workers)]
        process = subprocess.Popen(
            command, env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        _wait_for(lambda: len(_noted(pids, "harness")) == workers)
        return process, pids

    @pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
    def test_a_signal_stops_every_run_and_leaves_the_root_incomplete(
        self, tmp_path: Path, sig: signal.Signals
    ) -> None:
        """SIGINT or SIGTERM while 6 runs are under way ends the study at once with exit
        128 + N, saying the root is incomplete, without a traceback; the root has no tag
        manifest, its runs files are unfinished, and no harness nor its child is left."""
        process, pids = self._start(tmp_path, runs=5, workers=6)
        process.send_signal(sig)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 128 + sig, stderr
        assert "incomplete" in stderr and "Traceback" not in stderr
        root = tmp_path / "out" / "b"
        assert not (root / layout.TAGMANIFEST).exists()
        assert not list((root / "data" / "runs").glob("*.jsonl"))
        noted = _noted(pids, "harness") + _noted(pids, "child")
        _wait_for(lambda: not any(_alive(pid) for pid in noted))

    def test_a_killed_study_takes_its_harnesses_with_it(self, tmp_path: Path) -> None:
        """SIGKILL of the study process (no handler runs) kills every harness it started from
        its threads, and the harness's child in its process group, through the study's reaper
        (repro.adapters._reaper)."""
        process, pids = self._start(tmp_path, runs=2, workers=4)
        try:
            process.kill()
            process.communicate(timeout=60)
            noted = _noted(pids, "harness") + _noted(pids, "child")
            assert len(noted) == 8
            _wait_for(lambda: not any(_alive(pid) for pid in noted))
        finally:  # whatever the assertions found, nothing is left running
            for pid in _noted(pids, "child"):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


class TestMeanwhile:
    def test_idle_is_called_once_when_no_slot_ends_for_a_while(self) -> None:
        """The study's thread calls ``idle`` once, the first time no event came for
        IDLE_SECONDS, however long the threads then wait."""
        import queue
        import threading

        from repro._execute.attempts import IDLE_SECONDS, serve_on_threads

        events: queue.SimpleQueue[Any] = queue.SimpleQueue()
        called = threading.Event()
        calls: list[int] = []

        def idle() -> None:
            calls.append(1)
            called.set()

        def waits() -> None:
            called.wait(60)
            time.sleep(3 * IDLE_SECONDS)  # idle again, but called no more
            events.put(("exit",))

        serve_on_threads(
            [threading.Thread(target=waits)], events, lambda _: None, lambda: None, idle
        )
        assert calls == [1]

    def test_a_study_whose_runs_wait_does_its_after_work_meanwhile(
        self, tmp_path: Path, write_protocol: Callable[..., Path]
    ) -> None:
        """A command study whose runs only wait calls ``meanwhile`` once while they run, after
        importing what it needs after them; the bundle records every package's version and
        verifies."""
        from repro._execute.studies import AFTER_RUNS, CORE_PACKAGES

        protocol = copy.deepcopy(BAD)
        del protocol["adapter"]["options"]["outcome_schema"]
        protocol["participants"] = [{"id": "nap", "kind": "agent", "params": {"mode": "nap"}}]
        seen: list[list[str]] = []

        def meanwhile() -> None:
            seen.append([m for m in AFTER_RUNS if m in sys.modules])

        path = write_protocol(protocol)
        out = tmp_path / "out"
        study(prepare(path, {}), out, _Quiet(), LocalWorkers(2), meanwhile=meanwhile)
        assert seen == [list(AFTER_RUNS)]
        environment = json.loads((out / layout.ENVIRONMENT).read_text())
        assert set(CORE_PACKAGES) <= set(environment["packages"])
        assert verify(out) == []


class TestLimits:
    def _protocol(self, data: dict[str, Any]) -> Protocol:
        return structure(data, Protocol, what="protocol")

    def test_thread_adapters_take_up_to_256_workers(self) -> None:
        """A per-run command protocol takes --workers 256 and refuses 257 naming the range;
        a simulator adapter keeps 1 to 64; a stream command protocol refuses 2."""
        command = self._protocol(copy.deepcopy(BAD))
        check_backend(command, LocalWorkers(256), CommandAdapter())
        with pytest.raises(BadInput, match="from 1 to 256"):
            check_backend(command, LocalWorkers(257), CommandAdapter())
        with pytest.raises(BadInput, match="from 1 to 64"):
            check_backend(self._protocol(copy.deepcopy(SMALL)), LocalWorkers(65), object())
        stream = copy.deepcopy(BAD)
        stream["seeding"] = {"mode": "stream", "seed": 5}
        with pytest.raises(BadInput, match="stream"):
            check_backend(self._protocol(stream), LocalWorkers(2), CommandAdapter())
