"""repro study --workers N and --scheduler ADDRESS: the same bundle, byte for byte, however the
partitions were spread; refusals before anything is written."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bagit
import pytest
from typer.testing import CliRunner

from conftest import bundle_digests, run_study
from repro._bundle.writer import BundleWriter, create_root
from repro._cli.app import app
from repro._cli.started import command, started
from repro._execute import cluster
from repro._execute import local as parallel
from repro._execute.studies import Backend, DaskCluster, LocalWorkers, prepare, study
from repro.models import Partition, PlanEntry
from repro.verify import verify
from repro_fault_adapter import FAULTS

# Slow: runs studies in worker processes and on Dask and compares their bundles.
pytestmark = pytest.mark.slow

runner = CliRunner()


def _cli_study(protocol: Path, out: Path, *extra: str) -> Any:
    """``repro study PROTOCOL --out OUT EXTRA...`` in this process."""
    return runner.invoke(app, ["study", str(protocol), "--out", str(out), *extra])


def _mixed(small_protocol: dict[str, Any]) -> dict[str, Any]:
    """Six partitions: seeded random, constant, and a policy on the global generators; one slot
    excluded."""
    small_protocol["participants"] = [
        *small_protocol["participants"],
        {
            "id": "globals",
            "kind": "callable",
            "params": {"target": "repro_test_policies:global_generators"},
        },
    ]
    small_protocol["exclusions"] = [{"slot": "c02-r0001", "reason": "declared before sealing"}]
    return small_protocol


#: Faults whose records must not depend on where a partition ran: raised, timed out, killed,
#: exited, a session that kills its worker, and flaky kills and hangs retried into valid runs.
_FAULT_LEVELS = ["none", "raise", "hang", "kill", "exit", "open-kill", "flaky-kill", "flaky-hang"]


def _fault_protocol() -> dict[str, Any]:
    return {
        "schema": "repro.protocol/1",
        "id": "faults",
        "title": "Fault injection",
        "adapter": {"name": "faults", "options": {}},
        "matrix": [{"name": "fault", "levels": _FAULT_LEVELS}],
        "participants": [{"id": "p", "kind": "fixed", "params": {}}],
        "runs_per_condition": 2,
        "seeding": {"mode": "per-run", "seed": 11},
        "measure": {"name": "episode_return", "description": "sum of step rewards"},
        "estimand": "sum-of-condition-means",
        "interval": {"method": "normal", "level": 0.95},
        "retry": {"max_attempts": 2, "timeout_seconds": 0.5},
    }


def _fault_study(tmp_path: Path, name: str, backend: Backend) -> Path:
    """A fault study with its own marker directory for the flaky faults."""
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(_fault_protocol()), "utf-8")
    (tmp_path / f"{name}-state").mkdir()
    return run_study(path, tmp_path / name, backend, {"state_dir": str(tmp_path / f"{name}-state")})


def _causes(bundle: Path) -> Counter[tuple[str, str | None]]:
    lines = b"".join(p.read_bytes() for p in sorted((bundle / "data/runs").glob("*.jsonl")))
    return Counter((r["status"], r["cause"]) for r in (json.loads(x) for x in lines.splitlines()))


class _Recorder:
    """A progress that records every call and the thread it came from."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []
        self.threads: set[int] = set()

    def start(self, total: int) -> None:
        self.threads.add(threading.get_ident())
        self.calls.append(("start", total))

    def advance(self, condition: str, end: str) -> None:
        self.threads.add(threading.get_ident())
        self.calls.append(("advance", condition))

    def finish(self) -> None:
        self.threads.add(threading.get_ident())
        self.calls.append(("finish", None))


def _execution(bundle: Path) -> tuple[str, int]:
    """What environment.json records of how the partitions ran."""
    environment = json.loads((bundle / "data" / "environment.json").read_text("utf-8"))
    return environment["backend"], environment["workers"]


class TestLocalWorkers:
    """Partitions on N local worker processes."""

    def test_bundle_is_byte_identical_whatever_the_worker_count(
        self, write_protocol: Callable[..., Path], small_protocol: dict[str, Any], tmp_path: Path
    ) -> None:
        """One, two and three workers write the same bytes in every file but those that record
        when and how it ran (runs, plans, aggregates, tiers, ledger, report are identical),
        environment.json records how many, and each bundle verifies."""
        path = write_protocol(_mixed(small_protocol))
        serial = run_study(path, tmp_path / "serial")
        expected = bundle_digests(serial)
        assert "data/runs/c05.jsonl" in expected and "data/validation-report.md" in expected
        assert _execution(serial) == ("local", 1)
        for count in (2, 3):
            bundle = run_study(path, tmp_path / f"workers-{count}", LocalWorkers(count))
            assert bundle_digests(bundle) == expected, count
            assert _execution(bundle) == ("local", count)
            assert verify(bundle) == []

    @pytest.mark.usefixtures("fault_adapter")
    def test_faults_are_recorded_alike(self, tmp_path: Path) -> None:
        """Raised, timed-out, killed and exited attempts, a session that kills its worker, and
        flaky faults retried in a fresh worker give the same records on two workers as on one,
        with the causes of serial execution."""
        serial = _fault_study(tmp_path, "serial", LocalWorkers(1))
        parallel = _fault_study(tmp_path, "parallel", LocalWorkers(2))
        assert bundle_digests(parallel) == bundle_digests(serial)
        # Two slots per fault: two failed attempts each, or for a flaky fault one failed and
        # one valid.
        assert _causes(parallel) == {
            ("valid", None): 2 + 2 + 2,
            FAULTS["raise"]: 4,
            ("failed", "timeout"): 4 + 2,
            ("failed", "worker-died:SIGKILL"): 4 + 2,
            FAULTS["exit"]: 4,
            FAULTS["open-kill"]: 4,
        }
        assert verify(parallel) == []

    def test_progress_comes_from_the_calling_thread(
        self, write_protocol: Callable[..., Path], small_protocol: dict[str, Any], tmp_path: Path
    ) -> None:
        """With three workers the progress hears of every slot once, each condition as often as
        it has slots, between start and finish, and only ever from the thread that called
        study."""
        progress = _Recorder()
        path = write_protocol(small_protocol)
        study(prepare(path, {}), tmp_path / "b", progress, LocalWorkers(3))
        assert progress.calls[0] == ("start", 32) and progress.calls[-1] == ("finish", None)
        advanced = Counter(c for kind, c in progress.calls if kind == "advance")
        assert advanced == {"c00": 8, "c01": 8, "c02": 8, "c03": 8}
        assert progress.threads == {threading.get_ident()}

    def test_through_the_cli(
        self, write_protocol: Callable[..., Path], small_protocol: dict[str, Any], tmp_path: Path
    ) -> None:
        """``repro study --workers 2`` counts every run, ends by printing the verify command,
        and the bundle verifies."""
        out = tmp_path / "b"
        result = _cli_study(write_protocol(small_protocol), out, "--workers", "2")
        assert result.exit_code == 0, result.output
        assert "study: 32/32 runs (100%)" in result.stderr
        assert result.stdout.strip().splitlines()[-1] == command(["verify", str(out)], started())
        assert verify(out) == []


def _stream(small_protocol: dict[str, Any]) -> dict[str, Any]:
    small_protocol["seeding"] = {"mode": "stream", "seed": 153, "statement": "random.seed(153)"}
    return small_protocol


class TestRefusals:
    """What cannot run is refused with exit 2 before anything is written."""

    def test_stream_mode_refuses_more_than_one_worker(
        self, write_protocol: Callable[..., Path], small_protocol: dict[str, Any], tmp_path: Path
    ) -> None:
        """A stream protocol with --workers 2 exits 2 naming --workers and why (one stream, in
        sealed order, in one process), and creates neither the root nor its parent."""
        out = tmp_path / "parent" / "b"
        result = _cli_study(write_protocol(_stream(small_protocol)), out, "--workers", "2")
        assert result.exit_code == 2
        assert "--workers 2" in result.stderr and "stream" in result.stderr
        assert "one generator stream" in result.stderr
        assert not out.parent.exists()

    def test_stream_mode_runs_on_one_worker(
        self, write_protocol: Callable[..., Path], small_protocol: dict[str, Any], tmp_path: Path
    ) -> None:
        """--workers 1 is the serial default, which a stream protocol accepts."""
        out = tmp_path / "b"
        result = _cli_study(write_protocol(_stream(small_protocol)), out, "--workers", "1")
        assert result.exit_code == 0, result.output
        assert verify(out) == []

    def test_stream_mode_refuses_a_cluster(
        self, write_protocol: Callable[..., Path], small_protocol: dict[str, Any], tmp_path: Path
    ) -> None:
        """A stream protocol with --scheduler exits 2 naming --scheduler and why, without
        connecting to anything, and writes nothing."""
        out = tmp_path / "parent" / "b"
        result = _cli_study(
            write_protocol(_stream(small_protocol)), out, "--scheduler", "tcp://127.0.0.1:9"
        )
        assert result.exit_code == 2
        assert "--scheduler" in result.stderr and "stream" in result.stderr
        assert not out.parent.exists()

    @pytest.mark.parametrize("count", ["0", "-1", "65", "1000"])
    def test_worker_count_out_of_range(
        self,
        write_protocol: Callable[..., Path],
        small_protocol: dict[str, Any],
        tmp_path: Path,
        count: str,
    ) -> None:
        """A worker count outside 1..64 exits 2 with the allowed range and writes nothing."""
        out = tmp_path / "parent" / "b"
        result = _cli_study(write_protocol(small_protocol), out, "--workers", count)
        assert result.exit_code == 2
        assert "from 1 to 64" in result.stderr
        assert not out.parent.exists()

    def test_worker_count_must_be_a_number(
        self, write_protocol: Callable[..., Path], small_protocol: dict[str, Any], tmp_path: Path
    ) -> None:
        """--workers two exits 2 and writes nothing."""
        out = tmp_path / "parent" / "b"
        result = _cli_study(write_protocol(small_protocol), out, "--workers", "two")
        assert result.exit_code == 2 and "--workers" in result.output
        assert not out.parent.exists()

    def test_workers_and_scheduler_exclude_each_other(
        self, write_protocol: Callable[..., Path], small_protocol: dict[str, Any], tmp_path: Path
    ) -> None:
        """Both --workers and --scheduler exit 2 and write nothing."""
        out = tmp_path / "parent" / "b"
        result = _cli_study(
            write_protocol(small_protocol),
            out,
            "--workers",
            "2",
            "--scheduler",
            "tcp://127.0.0.1:9",
        )
        assert result.exit_code == 2 and "exclude each other" in result.stderr
        assert not out.parent.exists()

    def test_missing_distributed_names_the_extra(
        self, write_protocol: Callable[..., Path], small_protocol: dict[str, Any], tmp_path: Path
    ) -> None:
        """Where distributed cannot be imported, --scheduler exits 2 saying how to get the dask
        extra (``uv run --extra dask repro ...``), and writes nothing."""
        out = tmp_path / "parent" / "b"
        code = (
            "import sys; sys.modules['distributed'] = None\n"
            "from repro._cli.app import main; sys.argv = ['repro', *sys.argv[1:]]; main()"
        )
        study_args = ["study", str(write_protocol(small_protocol)), "--out", str(out)]
        done = subprocess.run(
            [sys.executable, "-c", code, *study_args, "--scheduler", "tcp://127.0.0.1:9"],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "200"},
        )
        assert done.returncode == 2, done.stderr
        assert "uv run --extra dask repro" in done.stderr and "Traceback" not in done.stderr
        assert not out.parent.exists()

    def test_unreachable_scheduler(
        self,
        write_protocol: Callable[..., Path],
        small_protocol: dict[str, Any],
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """A scheduler address where nothing listens exits 2 naming the address, and writes
        nothing."""
        pytest.importorskip("distributed")
        monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_SECONDS", 1)
        with socket.socket() as probe:  # a port that was free a moment ago, and is closed
            probe.bind(("127.0.0.1", 0))
            address = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
        out = tmp_path / "parent" / "b"
        result = _cli_study(write_protocol(small_protocol), out, "--scheduler", address)
        assert result.exit_code == 2
        assert f"cannot reach a Dask scheduler at '{address}'" in result.stderr
        assert not out.parent.exists()


class TestTakingSlots:
    """When no partition is left to start, a free worker takes the later half of the slots that
    a running partition has not started."""

    def test_one_partition_on_three_workers(
        self,
        write_protocol: Callable[..., Path],
        small_protocol: dict[str, Any],
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """A single partition on three workers is shared (slots are taken from it at least
        once) and still gives the serial bundle byte for byte."""
        small_protocol["matrix"] = [{"name": "env_id", "levels": ["CartPole-v1"]}]
        small_protocol["participants"] = small_protocol["participants"][:1]
        small_protocol["runs_per_condition"] = 40
        path = write_protocol(small_protocol)
        serial = run_study(path, tmp_path / "serial")
        takes: list[int] = []
        take = parallel.Running.take_later_half

        def counting(self: parallel.Running) -> parallel._Taken | None:
            taken = take(self)
            if taken is not None:
                takes.append(len(taken.entries))
            return taken

        monkeypatch.setattr(parallel.Running, "take_later_half", counting)
        shared = run_study(path, tmp_path / "shared", LocalWorkers(3))
        assert takes, "no slot was taken"
        assert bundle_digests(shared) == bundle_digests(serial)

    def test_taken_ranges_and_the_owners_cover_the_partition_in_order(self) -> None:
        """However often slots are taken while the owner runs, the owner's slots followed by
        the taken ranges in order of their start are the partition's slots, once each."""
        entries = tuple(
            PlanEntry(slot=f"c00-r{i:04d}", condition="c00", replicate=i, order=i, seed=i)
            for i in range(23)
        )
        running = parallel.Running(0, Partition("repro.partition/1", "c00", "c00", entries))
        owned: list[PlanEntry] = []
        while (entry := running.next_slot()) is not None:
            owned.append(entry)
            if len(owned) % 2 == 0:
                running.take_later_half()
        assert len(running.taken) >= 3
        pieces = [*owned]
        for taken in sorted(running.taken, key=lambda t: t.start):
            pieces += taken.entries
        assert tuple(pieces) == entries
        assert running.take_later_half() is None


class TestBundleWriterThreads:
    """BundleWriter keeps a correct manifest when threads write files at once."""

    def test_concurrent_files_all_in_the_manifest(self, tmp_path: Path) -> None:
        """Eight threads streaming JSON Lines files and writing whole files at once: every file
        is in the manifest with its digest, and Payload-Oxum counts every byte and file."""
        root = tmp_path / "b"
        create_root(root)
        writer = BundleWriter(root)
        barrier = threading.Barrier(8)

        def write(number: int) -> None:
            barrier.wait()
            with writer.lines(f"data/runs/t{number}.jsonl") as emit:
                for i in range(200):
                    emit({"thread": number, "line": i})
            writer.write(f"data/plans/t{number}.json", b"{}\n" * number)

        threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        writer.finish({})
        manifest = (root / "manifest-sha256.txt").read_text().splitlines()
        files = sorted(p for p in (root / "data").rglob("*") if p.is_file())
        assert len(manifest) == len(files) == 16
        octets = sum(p.stat().st_size for p in files)
        assert f"Payload-Oxum: {octets}.16" in (root / "bag-info.txt").read_text()
        bagit.Bag(str(root)).validate()


class TestDask:
    """Partitions as tasks on a local Dask cluster (2 worker processes, 1 thread each)."""

    def test_bundle_is_byte_identical_to_serial(
        self,
        dask_scheduler: str,
        write_protocol: Callable[..., Path],
        small_protocol: dict[str, Any],
        tmp_path: Path,
    ) -> None:
        """The cluster writes the same bytes as serial execution in every file but
        environment.json and the tag files that digest it, and the bundle verifies."""
        path = write_protocol(_mixed(small_protocol))
        serial = run_study(path, tmp_path / "serial")
        on_dask = run_study(path, tmp_path / "dask", DaskCluster(dask_scheduler))
        assert bundle_digests(on_dask) == bundle_digests(serial)
        assert _execution(on_dask) == ("dask", 2)
        assert verify(on_dask) == []

    @pytest.mark.usefixtures("fault_adapter")
    def test_faults_are_recorded_alike(self, dask_scheduler: str, tmp_path: Path) -> None:
        """Each task runs its partition through a worker subprocess of its own, so raised,
        timed-out, killed and exited attempts are recorded on the cluster as they are serially,
        byte for byte."""
        serial = _fault_study(tmp_path, "serial", LocalWorkers(1))
        on_dask = _fault_study(tmp_path, "dask", DaskCluster(dask_scheduler))
        assert bundle_digests(on_dask) == bundle_digests(serial)
        assert verify(on_dask) == []

    def test_through_the_cli(
        self,
        dask_scheduler: str,
        write_protocol: Callable[..., Path],
        small_protocol: dict[str, Any],
        tmp_path: Path,
    ) -> None:
        """``repro study --scheduler ADDRESS`` counts every run and ends by printing the verify
        command; the bundle verifies."""
        out = tmp_path / "b"
        result = _cli_study(write_protocol(small_protocol), out, "--scheduler", dask_scheduler)
        assert result.exit_code == 0, result.output
        assert "study: 32/32 runs (100%)" in result.stderr
        assert result.stdout.strip().splitlines()[-1] == command(["verify", str(out)], started())
        assert verify(out) == []
