"""How verify uses the cores it has: the per-file and per-partition work of a verification run
as jobs, in worker processes (forked, so they start with what the verifier has imported and
read so far) or in this process, with results taken in the order the jobs were given (or,
for work whose results are kept by task, such as files read ahead, as the jobs end).

A job is a pure function of its task and of the context given with it: it reads the bundle's
files through a reader of its own and returns what it found (findings included), which the
verifier merges in sealed order. The same jobs run, and are merged the same way, whether they
run here or in workers, so the findings do not depend on the number of jobs nor on which job
ends first. At most a few tasks per worker are given and not yet taken at a time, so what is
held while they run does not grow with the number of files or partitions.

The number of jobs is the cores this process may run on (``os.sched_getaffinity``: ``taskset
-c 0`` gives one), unless ``REPRO_VERIFY_JOBS`` or ``repro verify --jobs`` says otherwise.
Worker processes are used only where they can pay for themselves: a bundle directory (a packed
bundle is read from one open archive), a process running no other thread (forking one that does
can deadlock the child), and, unless the number of jobs was asked for, a bundle of at least
:data:`WORTH_BYTES`."""

from __future__ import annotations

import gc
import itertools
import os
import pickle
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any, TypeVar

__all__ = ["ENV", "WORTH_BYTES", "Jobs", "available_cores", "requested_jobs"]

#: The environment variable that sets the number of jobs (a positive integer).
ENV = "REPRO_VERIFY_JOBS"
#: Bytes of a bundle below which verify runs its jobs in this process unless told otherwise:
#: starting workers costs more than such a bundle's work.
WORTH_BYTES = 4 << 20
#: Tasks in flight (given, not ended) per worker.
_AHEAD = 2
#: Tasks given and not yet taken, ended or not, per worker, in :meth:`Jobs.ordered`: while the
#: first runs, the other workers go on with the next ones until this many wait to be taken.
_HELD = 4

T = TypeVar("T")
R = TypeVar("R")

#: The context of the jobs running in this process, by the token it was given with: a worker
#: unpickles a context once, and keeps only the latest.
_CONTEXTS: dict[int, Any] = {}

#: In a worker: what every worker waits at once it has taken a context (:func:`_install`), so
#: that each takes exactly one of the tasks that hand one over.
_INSTALLED: Any = None


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on every platform
        return max(1, os.cpu_count() or 1)


def requested_jobs(jobs: int | None) -> int | None:
    """The number of jobs asked for: ``jobs``, else ``REPRO_VERIFY_JOBS``; None when neither
    says (then :class:`Jobs` decides). A value that is not a positive integer is refused."""
    if jobs is None:
        text = os.environ.get(ENV, "").strip()
        if not text:
            return None
        try:
            jobs = int(text)
        except ValueError:
            raise ValueError(f"{ENV}={text!r}: not a positive integer") from None
    if jobs < 1:
        raise ValueError(f"jobs: {jobs} is not a positive integer")
    return jobs


def _start_worker(installed: Any) -> None:
    """A worker's start: the barrier it waits at after taking a context."""
    global _INSTALLED
    _INSTALLED = installed


def _install(token: int, context: bytes) -> None:
    """A worker takes the context of the jobs to come, then waits for every other worker to
    have taken it: a worker that waits takes no other task, so each takes one such task."""
    _CONTEXTS.clear()
    _CONTEXTS[token] = pickle.loads(context)
    _INSTALLED.wait()


def _run(job: Callable[[Any, T], R], token: int, task: T) -> R:
    """A job in a worker, with the context installed for it."""
    return job(_CONTEXTS[token], task)


class Jobs:
    """Where a verification runs its jobs: ``count`` worker processes, started on first use,
    or this process (``count`` 1, or ``processes`` False). Close it when done."""

    def __init__(self, count: int, processes: bool) -> None:
        self.count = count
        self.processes = processes and count > 1 and threading.active_count() == 1
        self._pool: Any = None
        self._token = 0

    @classmethod
    def choose(cls, jobs: int | None, size: int, directory: bool) -> Jobs:
        """The jobs for a bundle of ``size`` bytes (a directory or not), ``jobs`` as asked for
        (see :func:`requested_jobs`)."""
        asked = requested_jobs(jobs)
        count = asked if asked is not None else available_cores()
        worth = asked is not None or size >= WORTH_BYTES
        return cls(count, directory and worth)

    def _executor(self) -> Any:
        if self._pool is None:
            # Lazy: the process pool (multiprocessing) only when verify hashes in processes.
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            # What is there when the workers are forked is theirs too, never collected there:
            # the collector of a worker then neither walks it nor copies its pages by touching
            # them.
            gc.freeze()
            try:
                forked = multiprocessing.get_context("fork")
                # A pool of forked workers starts every worker at once, each with the barrier.
                self._pool = ProcessPoolExecutor(
                    max_workers=self.count,
                    mp_context=forked,
                    initializer=_start_worker,
                    initargs=(forked.Barrier(self.count),),
                )
                self._pool.submit(int).result()  # the workers start with the first task
            finally:
                gc.unfreeze()
        return self._pool

    def _submitter(self, job: Callable[[Any, T], R], context: Any) -> Callable[[T], Future[R]]:
        """A function that gives one task to the workers, to run ``job`` with ``context``.

        The context is pickled once, here, and handed to each worker once, before the tasks
        (:func:`_install`), never with each task: a context grows with the bundle (the crate's
        list of files grows with the partitions), and sent with every partition's task it made
        verify's time grow with their square."""
        pool = self._executor()
        self._token += 1
        token, blob = self._token, pickle.dumps(context, protocol=pickle.HIGHEST_PROTOCOL)
        for installed in [pool.submit(_install, token, blob) for _ in range(self.count)]:
            installed.result()
        return lambda task: pool.submit(_run, job, token, task)

    def ordered(
        self, job: Callable[[Any, T], R], context: Any, tasks: Iterable[T]
    ) -> Generator[R, None, None]:
        """``job(context, task)`` for each task, in the order of ``tasks``. In workers, a few
        tasks per worker are in flight, and while the first runs the others go on with the next
        ones, until a few per worker wait to be taken (:data:`_HELD`); stopping early cancels
        those not started. ``job`` must be a module-level function, and the context
        and each task picklable."""
        if not self.processes:
            for task in tasks:
                yield job(context, task)
            return
        submit = self._submitter(job, context)
        pending: deque[Future[R]] = deque()
        source = iter(tasks)
        flight, held = self.count * _AHEAD, self.count * _HELD
        try:
            while True:
                running = sum(not f.done() for f in pending)
                room = min(flight - running, held - len(pending))
                given = len(pending)
                for task in itertools.islice(source, max(room, 0)):
                    pending.append(submit(task))
                if not pending:
                    return
                if pending[0].done():
                    yield pending.popleft().result()
                    continue
                unfinished = [f for f in pending if not f.done()]
                # Until the first ends, or another does and makes room for the next task. One
                # that ended since the room was counted makes room now: waiting then would wait
                # for the first alone (for as long as it runs) with a worker idle.
                if len(unfinished) == running + len(pending) - given:
                    wait(unfinished, return_when=FIRST_COMPLETED)
        finally:
            for future in pending:
                future.cancel()

    def unordered(
        self, job: Callable[[Any, T], R], context: Any, tasks: Iterable[T]
    ) -> Generator[tuple[T, R], None, None]:
        """Each task with ``job(context, task)``, in the order they end: for work whose results
        are kept by task, whatever their order (a file read ahead, by its name). In workers, a
        few tasks per worker are in flight, and one that ends makes room for the next whatever
        the others do: a long task holds up no other worker (as :meth:`ordered` does once a few
        per worker wait behind it, its results being taken in order). Here, the tasks run in
        their order. Stopping early cancels those not started. ``job``, context and tasks as
        for :meth:`ordered`."""
        if not self.processes:
            for task in tasks:
                yield task, job(context, task)
            return
        submit = self._submitter(job, context)
        running: dict[Future[R], T] = {}
        source = iter(tasks)
        try:
            while True:
                for task in itertools.islice(source, self.count * _AHEAD - len(running)):
                    running[submit(task)] = task
                if not running:
                    return
                ended, _ = wait(running, return_when=FIRST_COMPLETED)
                # Taken in the order they were given among those that ended together.
                for future in [f for f in running if f in ended]:
                    yield running.pop(future), future.result()
        finally:
            for future in running:
                future.cancel()

    def close(self) -> None:
        """Stop the workers, if any were started."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
