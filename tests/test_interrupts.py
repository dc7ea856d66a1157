"""A study that is killed, interrupted or starved of disk leaves a root that never verifies as
complete, says why, writes nothing outside its root, and leaves no worker running behind it.

Each case runs ``repro study`` in a subprocess whose HOME, TMPDIR and working directory are
fresh directories of the case; "nothing outside the root" means those directories and the
root's parent hold, afterwards, exactly what they held before.
"""

from __future__ import annotations

import json
import os
import random
import resource
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from conftest import SMALL
from guarantees import record
from repro.verify import verify
from study_driver import events_printed

# Slow: kills and signals studies running in subprocesses.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not sys.platform.startswith("linux"), reason="signals, /proc and tmpfs: Linux only"
    ),
]

DRIVER = Path(__file__).with_name("study_driver.py")
STRESS = bool(os.environ.get("REPRO_STRESS"))
#: Kill points drawn from the bundle events of a real run, and kills at random times.
EVENT_KILLS = 60 if STRESS else 20
TIMED_KILLS = 12 if STRESS else 4


class Case:
    """A fresh place for one study: protocol, HOME, TMPDIR, cwd, and the root to be."""

    def __init__(self, base: Path, protocol: dict[str, Any]) -> None:
        self.base = base
        self.marker = uuid.uuid4().hex
        for name in ("home", "tmp", "cwd"):
            (base / name).mkdir(parents=True)
        self.protocol = base / "protocol.json"
        self.protocol.write_text(json.dumps(protocol), "utf-8")
        self.root = base / "out" / "bundle"
        self.root.parent.mkdir()  # repro creates the root alone, never its parent
        self.before = self.listing()

    def env(self) -> dict[str, str]:
        """The subprocess environment, with a marker by which its processes are found."""
        return {
            **os.environ,
            "HOME": str(self.base / "home"),
            "TMPDIR": str(self.base / "tmp"),
            "REPRO_TEST_MARKER": self.marker,
            "PYTHONDONTWRITEBYTECODE": "1",
        }

    def args(self, kill_at: int = 0, extra: tuple[str, ...] = ()) -> list[str]:
        """The driver's command line: study the protocol into the root, with ``extra``
        arguments."""
        study = ["study", str(self.protocol), "--out", str(self.root), *extra]
        return [sys.executable, str(DRIVER), str(kill_at), "--", *study]

    def start(
        self, kill_at: int = 0, extra: tuple[str, ...] = (), **kwargs: Any
    ) -> subprocess.Popen[str]:
        """Start the study."""
        return subprocess.Popen(
            self.args(kill_at, extra),
            env=self.env(),
            cwd=self.base / "cwd",
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            **kwargs,
        )

    def listing(self) -> set[str]:
        """Every path under the case directory, except inside the root."""
        out = set()
        for dirpath, dirnames, filenames in os.walk(self.base):
            for name in dirnames + filenames:
                path = Path(dirpath, name)
                if path != self.root and self.root not in path.parents:
                    out.add(path.relative_to(self.base).as_posix())
        return out

    def survivors(self, wait: float = 5.0) -> list[int]:
        """Processes (other than this test's) still carrying the case's marker."""
        deadline = time.monotonic() + wait
        while True:
            found = []
            for proc in Path("/proc").iterdir():
                if not proc.name.isdigit() or int(proc.name) == os.getpid():
                    continue
                try:
                    environ = (proc / "environ").read_bytes()
                except OSError:
                    continue
                if f"REPRO_TEST_MARKER={self.marker}".encode() in environ:
                    found.append(int(proc.name))
            if not found or time.monotonic() > deadline:
                return found
            time.sleep(0.05)

    def check_left_incomplete(self) -> list[str]:
        """The guarantees after a study that did not finish; returns the verify findings."""
        assert self.listing() == self.before, (
            "written outside the root",
            self.listing() - self.before,
        )
        assert self.survivors() == [], "a worker survived the study"
        if not self.root.exists():
            return []
        findings = verify(self.root)
        assert findings, "an unfinished root verified"
        assert findings[0].what.startswith("incomplete"), findings[0]
        cli = subprocess.run(
            [sys.executable, "-m", "repro", "verify", str(self.root)],
            capture_output=True,
            text=True,
            env=self.env(),
            check=False,
        )
        assert cli.returncode == 1, cli.stderr
        assert "incomplete" in (cli.stderr + cli.stdout).lower()
        record("stopped studies whose root verify calls incomplete", 1)
        return [f.what for f in findings]


def _protocol(runs: int) -> dict[str, Any]:
    return {**SMALL, "runs_per_condition": runs}


@pytest.fixture(scope="module")
def event_count(tmp_path_factory: pytest.TempPathFactory) -> int:
    """Bundle events in one complete run of the small protocol, which must verify."""
    case = Case(tmp_path_factory.mktemp("complete"), _protocol(8))
    done = case.start()
    _, stderr = done.communicate(timeout=120)
    assert done.returncode == 0, stderr
    assert verify(case.root) == []
    return events_printed(stderr)


@pytest.mark.stress
class TestSigkill:
    """SIGKILL at random points of a real run."""

    def test_kill_at_random_bundle_events(self, event_count: int, tmp_path: Path) -> None:
        """Killed at 20 (60 under REPRO_STRESS) bundle events drawn at random from a real run
        (the last rename, that of the tag manifest, always among them), the root never verifies,
        its first finding says "incomplete", nothing is written outside it and no worker
        survives."""
        rng = random.Random(20261130)
        # The final event is the tag manifest's rename: killing there still leaves it unwritten.
        points = sorted({event_count, *rng.sample(range(1, event_count), EVENT_KILLS - 1)})

        def one(point: int) -> tuple[int, int]:
            case = Case(tmp_path / f"event-{point}", _protocol(8))
            process = case.start(point)
            process.communicate(timeout=120)
            assert process.returncode == -signal.SIGKILL, (point, process.returncode)
            case.check_left_incomplete()
            return point, process.returncode

        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(one, points))
        assert len(results) == len(points) >= 20
        record("studies killed (SIGKILL) at a bundle event", len(results))

    def test_kill_at_random_times(self, tmp_path: Path) -> None:
        """SIGKILL from outside at random moments after the root appears leaves the same
        guarantees, on one worker process or (every other case) two."""
        rng = random.Random(153)
        for i in range(TIMED_KILLS):
            case = Case(tmp_path / f"timed-{i}", _protocol(100))
            process = case.start(extra=("--workers", str(1 + i % 2)))
            _wait_for(lambda c=case: c.root.exists())  # type: ignore[misc]
            time.sleep(rng.uniform(0.0, 0.8))
            process.kill()
            process.communicate(timeout=60)
            if process.returncode == 0:
                continue  # it finished first: a complete bundle, checked elsewhere
            record("studies killed (SIGKILL) at a random time", 1)
            if (case.root / "tagmanifest-sha256.txt").exists():
                # Killed on its way out, after the last file was in place: the bundle is whole.
                assert case.survivors() == [], "a worker survived the study"
                assert verify(case.root) == []
                record("studies killed after their bundle was complete (and it verified)", 1)
                continue
            case.check_left_incomplete()


def _wait_for(condition: Any, timeout: float = 60.0) -> float:
    """Wait until ``condition()`` holds, at most ``timeout`` seconds; the seconds it took."""
    started = time.monotonic()
    while not condition():
        waited = time.monotonic() - started
        assert waited < timeout, f"timed out waiting ({waited:.1f} s)"
        time.sleep(0.01)
    return time.monotonic() - started


class TestSignals:
    """SIGINT, SIGTERM and SIGHUP stop a study cleanly."""

    @pytest.mark.parametrize(
        ("sig", "group", "workers"),
        [
            (signal.SIGTERM, False, 1),
            (signal.SIGINT, False, 1),
            (signal.SIGINT, True, 1),
            (signal.SIGHUP, False, 1),
            (signal.SIGTERM, False, 2),
            (signal.SIGINT, True, 2),
        ],
    )
    def test_a_signal_stops_the_study_with_a_message(
        self, tmp_path: Path, sig: signal.Signals, group: bool, workers: int
    ) -> None:
        """Sent while runs are being written (to the study, or as Ctrl-C does to its whole
        process group, workers included), on one worker process or two, the signal ends the
        study with exit 128 + N and one message saying it stopped and that the root is
        incomplete, without a traceback; the root says "incomplete" and no worker is left."""
        case = Case(tmp_path, _protocol(100))
        process = case.start(extra=("--workers", str(workers)), start_new_session=group)
        _wait_for(lambda: any((case.root / "data" / "runs").glob(".*.partial")))
        if group:
            os.killpg(process.pid, sig)
        else:
            process.send_signal(sig)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 128 + sig, stderr
        assert f"stopped by {sig.name}" in stderr
        assert "incomplete" in stderr
        assert "Traceback" not in stderr
        record(f"studies stopped by {sig.name}", 1)
        case.check_left_incomplete()


@contextmanager
def _tmpfs(path: Path, options: str) -> Iterator[None]:
    path.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", str(path)], check=True)


def _limit_file_size(limit: int) -> Any:
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


class TestFullOrUnwritable:
    """A full disk or an unwritable place gives a clear error, not a traceback."""

    def test_full_tmpfs(self, tmp_path: Path) -> None:
        """On a 64 KiB tmpfs the study stops with exit 3, names the file it could not write and
        "No space left on device", says the root is incomplete, and the root says so too."""
        disk = tmp_path / "disk"
        with _tmpfs(disk, "size=64k"):
            case = Case(tmp_path / "case", _protocol(60))
            case.root = disk / "bundle"
            process = case.start()
            _, stderr = process.communicate(timeout=120)
            assert process.returncode == 3, stderr
            assert "No space left on device" in stderr
            assert "cannot write data/" in stderr and "incomplete" in stderr
            assert "Traceback" not in stderr
            case.check_left_incomplete()

    def test_file_size_limit(self, tmp_path: Path) -> None:
        """With writes capped at 16 KiB per file (RLIMIT_FSIZE, which needs no privilege), the
        study stops with exit 3 and a one-line reason, and the root says "incomplete"."""
        case = Case(tmp_path, _protocol(60))
        process = case.start(preexec_fn=_limit_file_size(16 * 1024))
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 3, stderr
        assert "File too large" in stderr and "incomplete" in stderr
        assert "Traceback" not in stderr
        case.check_left_incomplete()

    def test_read_only_place(self, tmp_path: Path) -> None:
        """A root asked for on a read-only file system is refused with exit 2 and the reason,
        and nothing is written."""
        place = tmp_path / "ro"
        with _tmpfs(place, "ro,size=64k"):
            case = Case(tmp_path / "case", _protocol(2))
            case.root = place / "bundle"
            process = case.start()
            _, stderr = process.communicate(timeout=120)
            assert process.returncode == 2, stderr
            assert "cannot create output root" in stderr and "Read-only file system" in stderr
            assert not case.root.exists()
            assert case.listing() == case.before


def _worker_processes_below_this_one() -> list[Any]:
    """repro worker subprocesses among this process's descendants (those of the test cluster's
    Dask workers included)."""
    import psutil

    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if "from repro._execute.worker import main" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.Error:  # it ended meanwhile
            continue
    return found


class TestSignalsOnDask:
    """A study whose partitions run on a Dask cluster stops cleanly, and so do its tasks."""

    def test_sigterm_stops_the_study_and_its_tasks(
        self, dask_scheduler: str, tmp_path: Path
    ) -> None:
        """SIGTERM while tasks run on the cluster ends the study with exit 143 and the usual
        message; the root says "incomplete", nothing is written outside it, and within thirty
        seconds no task's worker subprocess is left on the cluster (the plan would keep them
        busy for five minutes on a quiet machine, longer on a busy one: with five seconds and
        half a minute's plan, a busy machine once took longer to end them)."""
        # Only this study's task subprocesses count: the session's cluster and this process may
        # hold others, of tests before it.
        before = {p.pid for p in _worker_processes_below_this_one()}

        def ours() -> list[Any]:
            return [p for p in _worker_processes_below_this_one() if p.pid not in before]

        case = Case(tmp_path, _protocol(25_000))
        process = case.start(extra=("--scheduler", dask_scheduler))
        _wait_for(lambda: bool(ours()))
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 128 + signal.SIGTERM, stderr
        assert "stopped by SIGTERM" in stderr and "incomplete" in stderr
        assert "Traceback" not in stderr
        case.check_left_incomplete()
        _wait_for(lambda: not ours(), timeout=30)

    def test_a_cancelled_task_stops_without_the_stop_event(
        self, dask_scheduler: str, tmp_path: Path
    ) -> None:
        """A task the study cancels sees it stop from its Dask worker's own record of the task,
        even when the stop event is never set (a worker's client to the scheduler can close
        under load and leave the event unreadable, which once left tasks running after the
        study had stopped)."""
        distributed = pytest.importorskip("distributed")
        with distributed.Client(dask_scheduler, set_as_default=False) as client:
            future = client.submit(
                _watch_a_never_set_event, str(tmp_path), pure=False, key=f"w-{uuid.uuid4().hex}"
            )
            _wait_for(lambda: (tmp_path / "watching").exists())
            assert not (tmp_path / "stopped").exists()
            client.cancel([future])
            _wait_for(lambda: (tmp_path / "stopped").exists(), timeout=30)


def _watch_a_never_set_event(directory: str) -> None:
    """A Dask task: watch a stop event nobody sets, as a partition's task does, and write
    ``stopped`` in ``directory`` once the flag says the study is stopping (at most 5 minutes)."""
    from repro._execute.cluster import _StudyStopping

    flag = _StudyStopping(f"never-set-{uuid.uuid4().hex}")
    Path(directory, "watching").touch()
    deadline = time.monotonic() + 300
    while not flag.is_set() and time.monotonic() < deadline:
        time.sleep(0.05)
    if flag.is_set():
        Path(directory, "stopped").touch()
