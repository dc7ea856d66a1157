"""A verifier in a fresh process of its own, for the tests whose subject needs a process that
runs nothing else: verify forks its worker processes only from a process with no other thread
(repro.verify._parallel), and the suite's process has others by the time some tests run (a Dask
client's event loop and offload threads outlive it); and a traced peak of memory counts what
every thread of the process allocates.

:class:`FreshVerifier` starts ``python tests/fresh_verifier.py``, which reads one request per
line on stdin and answers one JSON line on stdout, in this order:

- ``{"verify": PATH, "jobs": N}``: the findings of ``verify(PATH, jobs=N)``, each as
  ``Finding.as_dict()`` gives it, and whether its jobs ran in worker processes;
- ``{"pids": N}``: this process's ID and the IDs of the processes 16 jobs ran in, with N jobs;
- ``{"unordered": DIRECTORY}``: the tasks and results of ``Jobs.unordered`` with two jobs, of
  :data:`HANDSHAKE_TASKS` tasks of which the first waits for the last to have run (a file in
  DIRECTORY says it has), in the order they were taken;
- ``{"ordered": DIRECTORY}``: each task and result of ``Jobs.ordered`` with two jobs, of
  :func:`ordered_tasks` tasks of which the first waits for the last that ``Jobs.ordered`` may
  give before the first is taken (:func:`ordered_reach`), and how many tasks had started when
  the first result was taken;
- ``{"choose": [JOBS, SIZE, DIRECTORY]}``: ``Jobs.choose``'s count and whether it uses workers,
  and the cores this process may run on;
- ``{"peak": PATH}``: the most memory one ``verify(PATH, jobs=1)`` allocated at once (its jobs
  all in this process, traced), after one untraced verify (imports and caches are not the
  bundle's) and a full collection (which empties CPython's free lists, so that the peak does
  not depend on what ran before).

Each answer also says how many threads the process had, which the tests check is one."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any


def _pid(context: None, task: int) -> int:
    """A job: the process it runs in."""
    return os.getpid()


#: Tasks of the ``unordered`` request: more than two workers hold in flight at once.
HANDSHAKE_TASKS = 8


def ordered_reach() -> int:
    """The last task ``Jobs.ordered`` may give, with two jobs, before the first is taken."""
    from repro.verify import _parallel as parallel

    return 2 * parallel._HELD - 1


def ordered_tasks() -> int:
    """Tasks of the ``ordered`` request: more than it may give before the first is taken."""
    return ordered_reach() + 5


def _handshake(context: tuple[str, int], task: int) -> bool:
    """A job, given a directory and a last task: the first task waits (up to 60 s) for the last
    one to have run, which says so by a file in the directory; whether it saw that file. Every
    other task: True. Each task leaves a file of its own there as it starts."""
    directory, last = context
    (Path(directory) / f"started-{task}").touch()
    marker = Path(directory) / "last-ran"
    if task == last:
        marker.touch()
    if task != 0:
        return True
    for _ in range(600):
        if marker.exists():
            return True
        time.sleep(0.1)
    return False


def _numbered_handshake(context: tuple[str, int], task: int) -> tuple[int, bool]:
    """A job: the task with :func:`_handshake`'s result, so that their order can be seen."""
    return task, _handshake(context, task)


def _answer(request: dict[str, Any]) -> dict[str, Any]:
    from repro.verify import _parallel as parallel
    from repro.verify import verify

    if "verify" in request:
        jobs = parallel.Jobs.choose(request["jobs"], 0, directory=True)
        findings = [f.as_dict() for f in verify(Path(request["verify"]), jobs=request["jobs"])]
        return {"findings": findings, "workers": jobs.processes}
    if "pids" in request:
        pool = parallel.Jobs.choose(request["pids"], 0, directory=True)
        try:
            pids = list(pool.ordered(_pid, None, range(16)))
        finally:
            pool.close()
        return {"self": os.getpid(), "pids": pids, "workers": pool.processes}
    if "unordered" in request:
        pool = parallel.Jobs.choose(2, 0, directory=True)
        try:
            context = (request["unordered"], HANDSHAKE_TASKS - 1)
            got = list(pool.unordered(_handshake, context, range(HANDSHAKE_TASKS)))
        finally:
            pool.close()
        return {"results": got, "workers": pool.processes}
    if "ordered" in request:
        directory = Path(request["ordered"])
        pool = parallel.Jobs.choose(2, 0, directory=True)
        try:
            results = pool.ordered(
                _numbered_handshake, (str(directory), ordered_reach()), range(ordered_tasks())
            )
            ordered = [next(results)]
            started = len(list(directory.glob("started-*")))
            ordered.extend(results)
        finally:
            pool.close()
        return {"results": ordered, "started": started, "workers": pool.processes}
    if "choose" in request:
        asked, size, directory = request["choose"]
        chosen = parallel.Jobs.choose(asked, size, directory)
        return {
            "count": chosen.count,
            "workers": chosen.processes,
            "cores": len(os.sched_getaffinity(0)),
        }
    root = Path(request["peak"])
    assert verify(root, jobs=1) == []
    gc.collect()
    tracemalloc.start()
    try:
        found = verify(root, jobs=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return {"peak": peak, "findings": [f.as_dict() for f in found]}


def _serve() -> None:
    for line in sys.stdin:
        answer = _answer(json.loads(line))
        answer["threads"] = threading.active_count()
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


class FreshVerifier:
    """The fresh process, started on first use; :meth:`close` ends it."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[str] | None = None

    def ask(self, **request: Any) -> dict[str, Any]:
        """The answer to one request (see the module's text); its process had one thread."""
        if self._process is None:
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
            env.pop("REPRO_VERIFY_JOBS", None)
            self._process = subprocess.Popen(
                [sys.executable, __file__],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=env,
            )
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        assert line, f"the fresh verifier ended (exit {self._process.poll()})"
        answer: dict[str, Any] = json.loads(line)
        assert answer["threads"] == 1, answer
        return answer

    def close(self) -> None:
        """End the process."""
        if self._process is not None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            self._process.wait(timeout=60)
            self._process = None


if __name__ == "__main__":
    _serve()
