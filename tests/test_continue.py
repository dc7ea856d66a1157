"""``repro study --continue-from OLD``: a study interrupted at any point (SIGINT or SIGKILL of
the study) and continued into a fresh root gives runs files byte-identical to an uninterrupted
study's, carries only what OLD finished (checked by verify's rules first), never writes OLD,
says what it carried in data/continuation.json, and refuses, before writing anything, an OLD
it cannot continue (another protocol, a finished bundle, tampered files). A stream-seeded study
takes its one generator stream up again where OLD left it and gives the uninterrupted study's
runs and checkpoint files byte for byte."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

import repro
from conftest import SMALL
from repro.errors import BadInput
from study_driver import events_printed

# Slow: every case runs studies in subprocesses, some killed on purpose.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals: Linux only"),
]

DRIVER = Path(__file__).with_name("study_driver.py")
#: Four partitions (conditions) of six slots: an interruption can fall between partitions, in
#: the middle of one, before the first or after the last.
PROTOCOL: dict[str, Any] = {**SMALL, "runs_per_condition": 6}
KILLS = int(os.environ.get("REPRO_CONTINUE_KILLS", "8"))


def _tree(root: Path) -> dict[str, str]:
    """Every file below ``root`` by its path, with its sha256."""
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def _driver(at: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``repro ARGS`` through the driver that stops the study at bundle event ``at``."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, str(DRIVER), at, "--", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=600,
    )


def _repro(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "repro", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, int]:
    """The protocol, an uninterrupted study of it, and how many bundle events that study had."""
    base = tmp_path_factory.mktemp("continue")
    protocol = base / "protocol.json"
    protocol.write_text(json.dumps(PROTOCOL), "utf-8")
    done = _driver("0", "study", str(protocol), "--out", str(base / "reference"))
    assert done.returncode == 0, done.stderr
    events = events_printed(done.stderr)
    return protocol, base / "reference", events


def _runs_files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / "data" / "runs").glob("*.jsonl"))}


def _continue_and_compare(protocol: Path, old: Path, reference: Path, new: Path) -> dict[str, Any]:
    """Continue ``old`` into ``new`` and check what every continuation must give; the
    account."""
    before = _tree(old)
    done = _repro("study", str(protocol), "--out", str(new), "--continue-from", str(old))
    assert done.returncode == 0, done.stderr
    assert _tree(old) == before, "the interrupted study's root was written"
    assert _runs_files(new) == _runs_files(reference)
    for name in ("aggregates.json", "plans/seal.json", "protocol.json"):
        assert (new / "data" / name).read_bytes() == (reference / "data" / name).read_bytes()
    assert not (new / "continue").exists()
    verified = repro.verify(new)
    assert verified.ok, verified.findings
    tiers = json.loads((new / "data" / "tiers.json").read_bytes())["tiers"]
    assert [(t["name"], t["verdict"]) for t in tiers if t["name"] == "continuation"] == [
        ("continuation", "pass")
    ]
    account: dict[str, Any] = json.loads((new / "data" / "continuation.json").read_bytes())
    seal = json.loads((reference / "data" / "plans" / "seal.json").read_bytes())
    ids = [p["id"] for p in seal["partitions"]]
    carried = [c["partition"] for c in account["carried"]]
    assert sorted(carried + account["ran"]) == sorted(ids)
    assert set(account["unfinished"]) <= set(account["ran"])
    for part in account["carried"]:
        for name, digest in part["files"].items():
            assert hashlib.sha256((old / name).read_bytes()).hexdigest() == digest
            assert (new / name).read_bytes() == (old / name).read_bytes()
    return account


class TestInterruptedAnywhere:
    """Stopped at bundle events drawn at random from a real run, by SIGKILL or SIGINT."""

    @pytest.mark.parametrize("how", ["KILL", "INT"])
    def test_continued_runs_are_the_uninterrupted_ones(
        self, reference: tuple[Path, Path, int], tmp_path: Path, how: str
    ) -> None:
        """Wherever the study stopped, continuing it gives the uninterrupted study's runs files
        and aggregates byte for byte, carries only whole partitions OLD finished (byte for
        byte), and leaves OLD as it was; a point where OLD is no study root yet, or a finished
        bundle, is refused with exit 2 and nothing written."""
        protocol, ref, events = reference
        rng = random.Random(f"continue-{how}")
        points = sorted(rng.sample(range(1, events), min(KILLS, events - 1)))
        continued = 0
        for point in points:
            old, new = tmp_path / f"old-{point}", tmp_path / f"new-{point}"
            stopped = _driver(f"{point}:{how}", "study", str(protocol), "--out", str(old))
            if stopped.returncode == 0 or not (old / "data" / "plans" / "seal.json").is_file():
                # Stopped after the bundle was whole, or before its plan was sealed.
                refused = _repro(
                    "study", str(protocol), "--out", str(new), "--continue-from", str(old)
                )
                assert refused.returncode == 2, (point, refused.stderr)
                assert not new.exists()
                continue
            account = _continue_and_compare(protocol, old, ref, new)
            if how == "INT":
                assert account["interruption"] == "SIGINT"
            else:
                assert account["interruption"] is None
            continued += 1
        assert continued >= len(points) // 2, "too few points fell inside the run"


class TestProcessGroupKilled:
    """The study and its worker processes stopped together, as a terminal's Ctrl-C (SIGINT to
    the foreground process group) or ``kill -9 -PGID`` stops them, once its first partition is
    finished, on two workers."""

    @pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["INT", "KILL"])
    def test_continued_runs_are_the_uninterrupted_ones(
        self, tmp_path: Path, how: signal.Signals
    ) -> None:
        """Whatever the signal did to the workers, continuing gives the uninterrupted study's
        runs files byte for byte."""
        protocol = tmp_path / "protocol.json"
        protocol.write_text(json.dumps({**PROTOCOL, "runs_per_condition": 150}), "utf-8")
        ref, old, new = tmp_path / "ref", tmp_path / "old", tmp_path / "new"
        done = _repro("study", str(protocol), "--out", str(ref), "--workers", "2")
        assert done.returncode == 0, done.stderr
        args = ["study", str(protocol), "--out", str(old), "--workers", "2"]
        study = subprocess.Popen(
            [sys.executable, "-m", "repro", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            while study.poll() is None and not list((old / "data" / "times").glob("*.jsonl")):
                time.sleep(0.005)
            os.killpg(study.pid, how)
        except ProcessLookupError:
            pass
        finally:
            study.communicate(timeout=120)
        if study.returncode == 0:
            pytest.skip("the study finished before the signal")
        account = _continue_and_compare(protocol, old, ref, new)
        assert account["interruption"] == ("SIGINT" if how == signal.SIGINT else None)


@pytest.fixture(scope="module")
def interrupted(
    reference: tuple[Path, Path, int], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A study stopped by SIGINT about half-way through its bundle events."""
    protocol, _, events = reference
    old = tmp_path_factory.mktemp("interrupted") / "old"
    stopped = _driver(f"{events // 2}:INT", "study", str(protocol), "--out", str(old))
    assert stopped.returncode != 0 and (old / "bagit.txt").is_file(), stopped.stderr
    finished = list((old / "data" / "times").glob("*.jsonl"))
    assert 0 < len(finished) < 4, "half-way: some partitions finished, not all"
    return old


def _edit_line(
    old: Path, folder: str, edit: Callable[[dict[str, Any]], None], last: bool = False
) -> Path:
    """Change, by ``edit``, the first line of the first file in OLD's ``data/<folder>`` (the
    last line of the last file with ``last``), written back as compact sorted JSON; the file."""
    files = sorted((old / "data" / folder).glob("*.jsonl"))
    assert files, "the interrupted study finished no partition"
    path = files[-1 if last else 0]
    lines = path.read_bytes().splitlines(keepends=True)
    at = -1 if last else 0
    value = json.loads(lines[at])
    edit(value)
    lines[at] = json.dumps(value, separators=(",", ":"), sort_keys=True).encode() + b"\n"
    path.write_bytes(b"".join(lines))
    return path


class TestRefusals:
    """What cannot be continued is refused with exit 2, named, and nothing is written."""

    def _refused(self, protocol: Path, old: Path, new: Path) -> str:
        done = _repro("study", str(protocol), "--out", str(new), "--continue-from", str(old))
        assert done.returncode == 2, done.stderr
        assert not new.exists()
        return done.stderr

    def test_another_protocol_is_named_where_it_differs(
        self, interrupted: Path, tmp_path: Path
    ) -> None:
        """A protocol that freezes otherwise (more runs per condition) is refused, naming the
        file and the JSON path of the first difference."""
        other = tmp_path / "other.json"
        other.write_text(json.dumps({**PROTOCOL, "runs_per_condition": 7}), "utf-8")
        said = self._refused(other, interrupted, tmp_path / "new")
        assert "data/protocol.json differs at $.protocol.runs_per_condition" in said

    def test_a_finished_bundle(self, reference: tuple[Path, Path, int], tmp_path: Path) -> None:
        """A finished bundle is not an interrupted study."""
        protocol, ref, _ = reference
        assert "finished bundle" in self._refused(protocol, ref, tmp_path / "new")

    def test_a_directory_that_is_no_study(
        self, reference: tuple[Path, Path, int], tmp_path: Path
    ) -> None:
        """A directory without bagit.txt is no study root."""
        protocol, _, _ = reference
        (tmp_path / "empty").mkdir()
        assert "not the root of a study" in self._refused(
            protocol, tmp_path / "empty", tmp_path / "new"
        )

    def test_out_inside_old(
        self, reference: tuple[Path, Path, int], interrupted: Path, tmp_path: Path
    ) -> None:
        """OLD is never written: a new root inside it is refused."""
        protocol, _, _ = reference
        before = _tree(interrupted)
        self._refused(protocol, interrupted, interrupted / "new")
        assert _tree(interrupted) == before

    def test_a_changed_record_is_not_carried(
        self, reference: tuple[Path, Path, int], interrupted: Path, tmp_path: Path
    ) -> None:
        """A finished partition whose records were changed (a measure that is no longer its
        step rewards' sum) is refused, naming the partition and verify's finding."""
        protocol, _, _ = reference
        old = tmp_path / "old"
        shutil.copytree(interrupted, old)
        changed = _edit_line(
            old, "runs", lambda r: r.__setitem__("measure", (r["measure"] or 0) + 1)
        )
        said = self._refused(protocol, old, tmp_path / "new")
        assert f"partition {changed.stem}" in said and "measure-not-sum" in said

    def test_times_verify_would_refuse_are_not_carried(
        self, reference: tuple[Path, Path, int], interrupted: Path, tmp_path: Path
    ) -> None:
        """A finished partition whose times file says an attempt ended before it started is
        refused as verify's times join refuses it (times-order), before anything is written:
        carried, it would make a bundle that does not verify."""
        protocol, _, _ = reference
        old = tmp_path / "old"
        shutil.copytree(interrupted, old)
        changed = _edit_line(
            old, "times", lambda t: t.__setitem__("finished_utc", "2000-01-01T00:00:00.000000Z")
        )
        said = self._refused(protocol, old, tmp_path / "new")
        assert f"partition {changed.stem}" in said and "times-order" in said


class TestPythonApi:
    """``repro.study(continue_from=...)`` does what the command does."""

    def test_continue_from(
        self, reference: tuple[Path, Path, int], interrupted: Path, tmp_path: Path
    ) -> None:
        """The API continues the interrupted study: the same runs files as the uninterrupted
        study's; a bad OLD is BadInput."""
        protocol, ref, _ = reference
        result = repro.study(protocol, tmp_path / "new", continue_from=interrupted)
        assert _runs_files(result.root) == _runs_files(ref)
        with pytest.raises(BadInput):
            repro.study(protocol, tmp_path / "again", continue_from=ref)
        assert not (tmp_path / "again").exists()


class TestOtherBackends:
    """A continuation runs what is left wherever a study runs: on a Dask cluster, and on the
    threads of an adapter whose sessions only wait (the command adapter's)."""

    def test_on_dask(
        self,
        reference: tuple[Path, Path, int],
        interrupted: Path,
        dask_scheduler: str,
        tmp_path: Path,
    ) -> None:
        """The partitions left run as Dask tasks; the runs files are the uninterrupted ones."""
        protocol, ref, _ = reference
        result = repro.study(
            protocol, tmp_path / "new", scheduler=dask_scheduler, continue_from=interrupted
        )
        assert _runs_files(result.root) == _runs_files(ref)
        assert repro.verify(result.root).ok

    def test_on_threads(self, tmp_path: Path) -> None:
        """A command-adapter study (slots on threads, several at once) stopped half-way and
        continued on threads gives the uninterrupted study's runs files."""
        shipped = Path(__file__).resolve().parents[1] / "protocols"
        shutil.copytree(shipped / "harness", tmp_path / "harness")
        protocol = tmp_path / "agent-gate-eval.json"
        shutil.copy(shipped / "agent-gate-eval.json", protocol)
        ref, old, new = tmp_path / "ref", tmp_path / "old", tmp_path / "new"
        done = _driver("0", "study", str(protocol), "--out", str(ref), "--workers", "3")
        assert done.returncode == 0, done.stderr
        events = events_printed(done.stderr)
        stopped = _driver(
            f"{events // 2}:INT", "study", str(protocol), "--out", str(old), "--workers", "3"
        )
        assert stopped.returncode != 0 and (old / "data" / "plans" / "seal.json").is_file()
        account = _continue_and_compare(protocol, old, ref, new)
        assert account["interruption"] == "SIGINT"
        assert account["carried"] and account["ran"], account


#: Stream seeding, with a kept state every 4 slots (the last partition carried is taken up
#: again from its slot 4 of 6, its session open) and with the default spacing (10: from the
#: partition's first state, before its session opens).
STREAM: dict[str, dict[str, Any]] = {
    "every-4": {"mode": "stream", "seed": 7, "checkpoint_every": 4},
    "default": {"mode": "stream", "seed": 7},
}


def _stream_files(root: Path) -> dict[str, bytes]:
    """The runs and checkpoint files of a stream-seeded study, by name."""
    return {p.name: p.read_bytes() for p in sorted((root / "data" / "runs").iterdir())}


@pytest.fixture(scope="module", params=sorted(STREAM))
def stream_reference(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path, int]:
    """A stream-seeded protocol, an uninterrupted study of it, and its bundle events."""
    base = tmp_path_factory.mktemp(f"stream-{request.param}")
    protocol = base / "protocol.json"
    protocol.write_text(json.dumps({**PROTOCOL, "seeding": STREAM[request.param]}), "utf-8")
    done = _driver("0", "study", str(protocol), "--out", str(base / "reference"))
    assert done.returncode == 0, done.stderr
    events = events_printed(done.stderr)
    return protocol, base / "reference", events


class TestStreamSeeding:
    """One generator stream through the plan: the continuation takes it up where OLD left it."""

    @pytest.mark.parametrize("how", ["KILL", "INT"])
    def test_continued_stream_is_the_uninterrupted_one(
        self, stream_reference: tuple[Path, Path, int], tmp_path: Path, how: str
    ) -> None:
        """Stopped anywhere, a stream-seeded study continues into the uninterrupted study's
        runs and checkpoint files byte for byte: the carried partitions are the plan's first,
        and the account (repro.continuation/2) says which slots of the last ran again."""
        protocol, ref, events = stream_reference
        rng = random.Random(f"stream-{how}-{protocol.parent.name}")
        points = sorted(rng.sample(range(1, events), min(KILLS // 2, events - 1)))
        every = json.loads(protocol.read_bytes())["seeding"].get("checkpoint_every", 10)
        continued = 0
        for point in points:
            old, new = tmp_path / f"old-{point}", tmp_path / f"new-{point}"
            stopped = _driver(f"{point}:{how}", "study", str(protocol), "--out", str(old))
            if stopped.returncode == 0 or not (old / "data" / "plans" / "seal.json").is_file():
                continue
            account = _continue_and_compare(protocol, old, ref, new)
            assert _stream_files(new) == _stream_files(ref)
            assert account["schema"] == "repro.continuation/2"
            carried = [c["partition"] for c in account["carried"]]
            assert carried == ["c00", "c01", "c02", "c03"][: len(carried)]
            if carried:
                start = 4 if every == 4 else 0
                assert account["rejoined"] == {
                    "partition": carried[-1],
                    "start": start,
                    "slots": 6 - start,
                }
            else:
                assert "rejoined" not in account
            continued += 1
        assert continued >= 1, "no point fell inside the run"

    def test_an_audit_chains_the_stream_across_the_continuation(
        self, stream_reference: tuple[Path, Path, int], tmp_path: Path
    ) -> None:
        """repro audit of every slot of a continued stream study matches, its chain included;
        a continuation that began the next partition at another state (the protocol's seed)
        verifies, but its audit names the broken link after the last carried partition."""
        protocol, _, events = stream_reference
        old = tmp_path / "old"
        stopped = _driver(f"{events // 2}:INT", "study", str(protocol), "--out", str(old))
        assert stopped.returncode != 0, stopped.stderr
        new = repro.study(protocol, tmp_path / "new", continue_from=old).root
        account = json.loads((new / "data" / "continuation.json").read_bytes())
        last = account["carried"][-1]["partition"]
        audited = _repro("audit", str(new), "--all", "--json")
        assert audited.returncode == 0, audited.stderr
        # A continuation that took the stream up wrongly: the next partition from the seed.
        import repro._execute.continuation as continuation

        rejoin = continuation.rejoin

        def from_the_seed(*args: Any, **kwargs: Any) -> Any:
            carry = rejoin(*args, **kwargs)
            return attrs.evolve(carry, stream=("seed", 7))

        try:
            continuation.rejoin = from_the_seed  # type: ignore[assignment]
            wrong = repro.study(protocol, tmp_path / "wrong", continue_from=old).root
        finally:
            continuation.rejoin = rejoin  # type: ignore[assignment]
        assert repro.verify(wrong).ok, "verify cannot see a stream: the audit must"
        broken = _repro("audit", str(wrong), "--all", "--json")
        assert broken.returncode == 1, broken.stderr
        said = json.loads(broken.stdout)
        assert not any(slot["differences"] for slot in said["slots"])
        assert [c["partition"] for c in said["chained"] if not c["matched"]] == [last]

    def test_a_changed_record_in_the_rerun_slots_is_refused(
        self, stream_reference: tuple[Path, Path, int], tmp_path: Path
    ) -> None:
        """A record of the slots that run again, changed where no rule of verify's can see
        (its trace digest), is found by the re-run: refused with exit 2, nothing written."""
        protocol, _, events = stream_reference
        old = tmp_path / "old"
        stopped = _driver(f"{events // 2}:INT", "study", str(protocol), "--out", str(old))
        assert stopped.returncode != 0, stopped.stderr
        _edit_line(old, "runs", lambda r: r.__setitem__("trace_sha256", "0" * 64), last=True)
        new = tmp_path / "new"
        done = _repro("study", str(protocol), "--out", str(new), "--continue-from", str(old))
        assert done.returncode == 2, done.stderr
        assert not new.exists()
        assert "did not give OLD's records" in done.stderr and "trace_sha256" in done.stderr

    def test_a_gap_in_the_finished_partitions_is_refused(
        self, stream_reference: tuple[Path, Path, int], tmp_path: Path
    ) -> None:
        """A stream study finishes its partitions in sealed order: an OLD whose first partition
        is unfinished but whose second is finished was changed, and is refused."""
        protocol, _, events = stream_reference
        old = tmp_path / "old"
        stopped = _driver(f"{events // 2}:INT", "study", str(protocol), "--out", str(old))
        assert stopped.returncode != 0, stopped.stderr
        assert (old / "data" / "runs" / "c01.jsonl").is_file(), "c01 finished"
        (old / "data" / "runs" / "c00.jsonl").unlink()
        new = tmp_path / "new"
        done = _repro("study", str(protocol), "--out", str(new), "--continue-from", str(old))
        assert done.returncode == 2, done.stderr
        assert not new.exists()
        assert "finished partition c01 but not c00" in done.stderr
