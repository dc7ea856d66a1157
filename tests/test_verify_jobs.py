"""verify runs its per-file and per-partition work as jobs, in worker processes or in its own
(repro.verify._parallel): the findings, their order and the JSON output are the same whatever
the number of jobs, on clean bundles and on tampered ones."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corpus_findings import EXTRA, base_files
from forge import reseal
from fresh_verifier import HANDSHAKE_TASKS, FreshVerifier, ordered_reach, ordered_tasks
from repro._json import canonical
from repro.errors import BadInput
from repro.verify import _parallel as parallel
from repro.verify import verify
from repro.verify._findings import MAX_DIFFS
from synthetic import synthetic_bundle
from test_corpus import CORPUS, TAMPER, Base, _materialise, _parse


def _pid(context: None, task: int) -> int:
    """A job: the process it runs in."""
    return os.getpid()


def _both(root: Path, fresh: FreshVerifier) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The findings of verify on ``root`` with one job, in this process, and with two, in two
    worker processes of a fresh process (this one may run other threads, and then verify forks
    no worker: tests/fresh_verifier.py)."""
    two = fresh.ask(verify=str(root), jobs=2)
    assert two["workers"], "the jobs ran in worker processes"
    return [f.as_dict() for f in verify(root, jobs=1)], two["findings"]


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synthetic bundle of 4 partitions of 30 runs of 5 steps, times and crate included."""
    return synthetic_bundle(tmp_path_factory.mktemp("jobs") / "bundle", 4, 30, 5)


@pytest.fixture(scope="module")
def base() -> Base:
    """The committed base bundle of the tamper corpus, parsed."""
    return _parse(base_files())


class TestJobs:
    """How many jobs, and where they run."""

    @pytest.mark.slow
    def test_workers_are_other_processes(self, fresh_verifier: FreshVerifier) -> None:
        """In a process running no other thread, with two jobs asked for, the jobs run in two
        worker processes, not in that one (so the comparisons below compare workers with this
        process)."""
        answer = fresh_verifier.ask(pids=2)
        assert answer["workers"]
        assert answer["self"] not in answer["pids"]
        assert 1 <= len(set(answer["pids"])) <= 2

    def test_no_workers_beside_other_threads(self) -> None:
        """In a process that runs another thread, verify forks no worker (a fork copies the
        locks other threads hold): its jobs run in that process, whatever was asked."""
        release = threading.Event()
        other = threading.Thread(target=release.wait)
        other.start()
        try:
            jobs = parallel.Jobs.choose(2, parallel.WORTH_BYTES, directory=True)
            assert not jobs.processes
            assert set(jobs.ordered(_pid, None, range(3))) == {os.getpid()}
        finally:
            release.set()
            other.join()

    def test_unordered_long_task_holds_up_no_worker(
        self, fresh_verifier: FreshVerifier, tmp_path: Path
    ) -> None:
        """Jobs.unordered, in two workers, gives the next tasks as others end while the first
        still runs: the first task, which waits for the last to have run, sees that it has
        (taken in order, as Jobs.ordered takes them, the last would be given only once the
        first ended). Every task's result is taken once, the first's last."""
        answer = fresh_verifier.ask(unordered=str(tmp_path))
        assert answer["workers"]
        results = answer["results"]
        assert sorted(task for task, _ in results) == list(range(HANDSHAKE_TASKS))
        assert results[-1] == [0, True]
        assert all(ok for _, ok in results)

    def test_ordered_goes_on_while_the_first_runs(
        self, fresh_verifier: FreshVerifier, tmp_path: Path
    ) -> None:
        """Jobs.ordered, in two workers, goes on giving tasks while the first still runs, up to
        a bound of tasks given and not yet taken: the first task, which waits for the last task
        within that bound to have run, sees that it has (with only the tasks in flight given,
        that task would wait for the first to end); no task beyond the bound had started when
        the first result was taken; the results come in the tasks' order."""
        answer = fresh_verifier.ask(ordered=str(tmp_path))
        assert answer["workers"]
        assert answer["results"] == [[task, True] for task in range(ordered_tasks())]
        assert answer["started"] <= ordered_reach() + 1

    def test_ordered_gives_more_when_the_others_ended_unseen(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Jobs.ordered does not wait for the first task alone when the others ended between
        its counting them and its waiting: here every task but the first ends as it is given,
        and the first ends (True) only once the last task within the bound has been given, or
        after ten seconds (False). Waiting on the first alone, as it once did, gave False and a
        worker idle for as long as the first ran (seen as a sixty-second wait in the quick
        tier)."""
        from concurrent.futures import Future

        first: Future[bool] = Future()
        reach = ordered_reach()
        timer = threading.Timer(10, lambda: first.done() or first.set_result(False))
        timer.start()

        def submit(task: int) -> Future[bool]:
            if task == 0:
                return first
            if task == reach and not first.done():
                first.set_result(True)
            done: Future[bool] = Future()
            done.set_result(True)
            return done

        jobs = parallel.Jobs(2, processes=True)
        jobs.processes = True  # a thread runs here (the timer): no pool is made all the same
        monkeypatch.setattr(jobs, "_submitter", lambda job, context: submit)
        try:
            results = list(jobs.ordered(_pid, None, range(reach + 3)))
        finally:
            timer.cancel()
        assert results == [True] * (reach + 3)

    def test_unordered_here_in_order(self) -> None:
        """With one job, Jobs.unordered runs the tasks here, in their order."""
        jobs = parallel.Jobs.choose(1, 1 << 40, directory=True)
        assert list(jobs.unordered(_pid, None, range(3))) == [(t, os.getpid()) for t in range(3)]

    def test_one_job_runs_here(self) -> None:
        """With one job, the jobs run in this process."""
        jobs = parallel.Jobs.choose(1, 1 << 40, directory=True)
        assert not jobs.processes
        assert set(jobs.ordered(_pid, None, range(3))) == {os.getpid()}

    def test_default_is_the_cores_it_may_run_on(self, fresh_verifier: FreshVerifier) -> None:
        """Without --jobs nor REPRO_VERIFY_JOBS, in a process running no other thread, the
        number of jobs is the number of cores the process may run on; workers only for a bundle
        directory of WORTH_BYTES or more."""
        big = fresh_verifier.ask(choose=[None, parallel.WORTH_BYTES, True])
        assert big["count"] == big["cores"]
        assert big["workers"] == (big["cores"] > 1)
        for small in ([None, parallel.WORTH_BYTES - 1, True], [None, parallel.WORTH_BYTES, False]):
            assert not fresh_verifier.ask(choose=small)["workers"]

    @pytest.mark.slow
    def test_taskset_one_core(self, clean: Path) -> None:
        """Under ``taskset -c 0`` verify sees one core; the JSON output is the same as with
        two jobs."""
        if shutil.which("taskset") is None:
            pytest.skip("no taskset")
        code = "import os; print(len(os.sched_getaffinity(0)))"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        env.pop(parallel.ENV, None)
        one = subprocess.run(
            ["taskset", "-c", "0", sys.executable, "-c", code], env=env, capture_output=True
        )
        assert one.stdout.strip() == b"1"
        outputs = [
            subprocess.run(
                [*prefix, sys.executable, "-m", "repro", "verify", "--json", *args, str(clean)],
                env=env,
                capture_output=True,
            )
            for prefix, args in ((["taskset", "-c", "0"], []), ([], ["--jobs", "2"]))
        ]
        assert [o.returncode for o in outputs] == [0, 0]
        assert outputs[0].stdout == outputs[1].stdout
        assert json.loads(outputs[0].stdout)["ok"] is True

    @pytest.mark.parametrize("value", ["0", "-1", "two"])
    def test_bad_environment_value(self, clean: Path, value: str) -> None:
        """A REPRO_VERIFY_JOBS that is not a positive integer is refused, naming it."""
        os.environ[parallel.ENV] = value
        try:
            with pytest.raises(BadInput, match=parallel.ENV if value == "two" else "jobs"):
                verify(clean)
        finally:
            del os.environ[parallel.ENV]


class TestSameFindings:
    """The findings with one job and with two are the same, in the same order."""

    @pytest.mark.slow
    def test_clean(self, clean: Path, fresh_verifier: FreshVerifier) -> None:
        """A clean bundle verifies with one job and with two."""
        assert _both(clean, fresh_verifier) == ([], [])

    @pytest.mark.parametrize("index", range(0, 1000, 25))
    def test_corpus_case(
        self, index: int, base: Base, tmp_path: Path, fresh_verifier: FreshVerifier
    ) -> None:
        """Every 25th case of the tamper corpus (tests/test_corpus.py) on its base bundle."""
        root, outside = tmp_path / "bundle", tmp_path / "outside"
        outside.mkdir()
        _materialise(base.files, root)
        case = CORPUS[index]
        TAMPER[case.kind](root, random.Random(case.seed), base, outside)
        one, two = _both(root, fresh_verifier)
        assert one, "a tampered case has findings"
        assert one == two

    @pytest.mark.parametrize("name", sorted(EXTRA))
    def test_further_case(
        self, name: str, base: Base, tmp_path: Path, fresh_verifier: FreshVerifier
    ) -> None:
        """The further cases of tests/corpus_findings.py (records and partitions out of their
        place: the whole plan read again)."""
        root = tmp_path / "bundle"
        _materialise(base.files, root)
        EXTRA[name](root)
        reseal(root)
        one, two = _both(root, fresh_verifier)
        assert one
        assert one == two

    def test_capped_kinds_across_partitions(
        self, clean: Path, tmp_path: Path, fresh_verifier: FreshVerifier
    ) -> None:
        """Measures that are not their step rewards' sum, in every partition: at most MAX_DIFFS
        of them are named in all, the first ones in sealed order, with two jobs as with one."""
        root = tmp_path / "bundle"
        shutil.copytree(clean, root)
        for runs in sorted((root / "data/runs").glob("*.jsonl")):
            lines = runs.read_bytes().splitlines(keepends=True)
            changed = [canonical.dumps({**json.loads(line), "measure": 1e6}) for line in lines]
            runs.write_bytes(b"".join(changed))
        reseal(root)
        one, two = _both(root, fresh_verifier)
        assert one == two
        named = [f for f in one if f["code"] == "measure-not-sum"]
        assert len(named) == MAX_DIFFS
        assert named[0]["file"] == "data/runs/c00.jsonl"

    @pytest.mark.slow
    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(data=st.data())
    def test_edits(
        self,
        clean: Path,
        tmp_path_factory: pytest.TempPathFactory,
        fresh_verifier: FreshVerifier,
        data: Any,
    ) -> None:
        """Random edits of a bundle with times and crate: lines dropped, swapped, duplicated
        or changed in a partition's files, a file deleted; with or without the manifests made
        again to match."""
        root = tmp_path_factory.mktemp("edit") / "bundle"
        shutil.copytree(clean, root)
        names = sorted(
            str(p.relative_to(root))
            for p in (root / "data").rglob("*")
            if p.is_file() and p.parent.name in ("runs", "times", "plans")
        )
        for _ in range(data.draw(st.integers(1, 3), label="edits")):
            name = data.draw(st.sampled_from(names), label="file")
            path = root / name
            if not path.exists():
                continue
            edit = data.draw(st.sampled_from(sorted(EDITS)), label="edit")
            EDITS[edit](path, data)
        if data.draw(st.booleans(), label="manifests made again"):
            reseal(root)
        one, two = _both(root, fresh_verifier)
        assert one == two


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _drop(path: Path, data: Any) -> None:
    lines = _lines(path)
    if lines:
        del lines[data.draw(st.integers(0, len(lines) - 1), label="line")]
    path.write_bytes(b"".join(lines))


def _swap(path: Path, data: Any) -> None:
    lines = _lines(path)
    if len(lines) > 1:
        i = data.draw(st.integers(0, len(lines) - 2), label="line")
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
    path.write_bytes(b"".join(lines))


def _twice(path: Path, data: Any) -> None:
    lines = _lines(path)
    if lines:
        i = data.draw(st.integers(0, len(lines) - 1), label="line")
        lines.insert(i, lines[i])
    path.write_bytes(b"".join(lines))


def _byte(path: Path, data: Any) -> None:
    raw = bytearray(path.read_bytes())
    if raw:
        i = data.draw(st.integers(0, len(raw) - 1), label="byte")
        raw[i] = data.draw(st.sampled_from(b'0123456789",:{}x'), label="value")
    path.write_bytes(bytes(raw))


def _delete(path: Path, data: Any) -> None:
    path.unlink()


EDITS: dict[str, Callable[[Path, Any], None]] = {
    "drop": _drop,
    "swap": _swap,
    "twice": _twice,
    "byte": _byte,
    "delete": _delete,
}
