"""Partitions on N local worker processes: N threads, each owning one
:class:`~repro._execute.worker.Worker`, take partitions from a queue in sealed order and run each
to its end, writing its runs file as they go.

When the queue is empty, a thread that is free takes the later half of the slots that the
partition with most slots left has not started yet, and runs them in a session of its own;
the owner of the partition appends their records to its runs file, in sealed order, when it
has run the rest. Without this the last partitions would run alone at the end (with
partitions of unequal cost, sealed order often puts the longest last). In per-run mode every
run depends on its slot's seed alone, so who ran a slot leaves no trace in the bundle.

The simulator runs in the worker processes, so the threads only wait on sockets and write
files. The main thread waits for their events and reports progress, so the progress display is
only ever touched by one thread, and a stop signal (which Python delivers to the main thread)
sets the threads' cancel flag: each kills its worker process within a fraction of a second and
leaves its runs file unfinished, under its temporary name.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable
from typing import Any, Literal

from repro import _layout as layout
from repro._bundle.writer import BundleWriter
from repro._derive.tally import Ended
from repro._execute.attempts import (
    PartitionRun,
    SlotsResult,
    Workload,
    run_slots,
    serve_on_threads,
    write_times,
)
from repro._execute.spares import Spares
from repro._execute.stopping import Gate
from repro._execute.threads import run_on_threads, thread_sessions
from repro._execute.worker import Cancelled, Worker
from repro._plan.streams import checkpoint_of, checkpoint_slots, checkpoint_spacing
from repro.models import AttemptTimes, Partition, PlanEntry, Protocol, RunRecord

__all__ = ["run_on_local_workers"]

#: What a thread tells the main thread: a slot of a condition finished; it failed with an
#: exception; it has stopped.
_Event = (
    tuple[Literal["slot"], str, Ended]
    | tuple[Literal["error"], BaseException]
    | tuple[Literal["exit"]]
)
#: How often a thread waiting for slots another thread took looks at the cancel flag.
_WAIT_SLICE_SECONDS = 0.1


class _Taken:
    """Slots of a running partition that another thread took, and their result once run."""

    def __init__(self, start: int, entries: tuple[PlanEntry, ...]) -> None:
        self.start = start
        self.entries = entries
        self.done = threading.Event()
        self.result: SlotsResult | None = None


class Running:
    """A partition that its owner thread is running: the slots it has not started yet,
    ``[next, end)``, of which another thread may take the later half, and the ranges taken."""

    def __init__(self, index: int, partition: Partition) -> None:
        self.index = index
        self.partition = partition
        self._lock = threading.Lock()
        self._next = 0
        self._end = len(partition.entries)
        self.taken: list[_Taken] = []

    def next_slot(self) -> PlanEntry | None:
        """The owner's next slot, or None when it has run or given away all the others."""
        with self._lock:
            if self._next >= self._end:
                return None
            self._next += 1
            return self.partition.entries[self._next - 1]

    def left(self) -> int:
        """How many slots the owner has not started."""
        with self._lock:
            return self._end - self._next

    def take_later_half(self) -> _Taken | None:
        """Take the later half of the slots not started (None when fewer than two are left:
        one slot is not worth a second session)."""
        with self._lock:
            left = self._end - self._next
            if left < 2:
                return None
            start = self._end - left // 2
            taken = _Taken(start, self.partition.entries[start : self._end])
            self._end = start
            self.taken.append(taken)
            return taken


class _Pool:
    """The partitions not yet started, in sealed order, and those running."""

    def __init__(self, partitions: Iterable[Partition]) -> None:
        self._lock = threading.Lock()
        # Expanded one at a time, as each is started.
        self._todo = enumerate(partitions)
        self._running: list[Running] = []

    def next_partition(self) -> Running | None:
        """The next partition in sealed order, now running; None when all have started."""
        with self._lock:
            started = next(self._todo, None)
            if started is None:
                return None
            running = Running(*started)
            # A partition whose owner has finished is let go: no slot is left to take from it.
            self._running = [r for r in self._running if r.left() > 0]
            self._running.append(running)
            return running

    def take_slots(self) -> tuple[Running, _Taken] | None:
        """Later slots of the running partition with most left; None when no partition has
        two or more slots left to start."""
        with self._lock:
            for running in sorted(self._running, key=lambda r: r.left(), reverse=True):
                taken = running.take_later_half()
                if taken is not None:
                    return running, taken
            return None


def _wait(event: threading.Event, cancel: threading.Event) -> None:
    while not event.wait(_WAIT_SLICE_SECONDS):
        if cancel.is_set():
            raise Cancelled("the study is stopping")


def _serve_partitions(
    work: Workload,
    writer: BundleWriter,
    pool: _Pool,
    results: list[PartitionRun | None],
    events: queue.SimpleQueue[_Event],
    cancel: threading.Event,
    spares: Spares | None,
) -> None:
    """One thread's loop: run the next partition in sealed order until none is left, then take
    slots from running partitions until none has two left, or until the study stops. Its worker
    process (one of ``spares`` first, when one is left) lives no longer than the thread, which
    stops it last."""
    worker = Worker(work.job, work.timeout, cancel, spares)
    try:
        while not cancel.is_set() and (running := pool.next_partition()) is not None:
            results[running.index] = _own_partition(worker, work, writer, running, events, cancel)
        while not cancel.is_set() and (took := pool.take_slots()) is not None:
            running, taken = took
            part = running.partition
            taken.result = run_slots(
                worker,
                work.job.protocol,
                work.job.frozen.facts,
                work.conditions[part.condition],
                taken.entries,
                _keep,
                _reporter(events, part.condition),
            )
            taken.done.set()
    except Cancelled:
        pass  # the main thread is stopping the study and knows why
    except BaseException as exc:  # handed to the main thread, which stops the study with it
        events.put(("error", exc))
    finally:
        worker.stop()
        events.put(("exit",))


def _own_partition(
    worker: Worker,
    work: Workload,
    writer: BundleWriter,
    running: Running,
    events: queue.SimpleQueue[_Event],
    cancel: threading.Event,
) -> PartitionRun:
    """Run the partition this thread owns to its end and write its files: its runs file (its
    own slots, then those other threads took), its checkpoint (stream mode), its times."""
    part, protocol = running.partition, work.job.protocol
    state = worker.stream_state
    keep = _Keeper(worker, part, protocol) if state is not None else None
    with writer.lines(layout.runs_file(part.id)) as emit:
        own = run_slots(
            worker,
            protocol,
            work.job.frozen.facts,
            work.conditions[part.condition],
            iter(running.next_slot, None),
            emit,
            _reporter(events, part.condition),
            keep,
        )
        contract, times = _append_taken(running, own, emit, cancel)
    if keep is not None and state is not None:
        checkpoint = checkpoint_of(part.id, state, keep.every, keep.later)
        writer.model(layout.checkpoint_file(part.id), checkpoint)
    write_times(writer, part.id, times, contract)
    return PartitionRun.of(part, contract, times)


def _append_taken(
    running: Running, own: SlotsResult, emit: Callable[[Any], None], cancel: threading.Event
) -> tuple[dict[str, Any], list[AttemptTimes]]:
    """Once the owner has run its own slots (nothing is taken once it has no slot left to
    start), wait for the slots other threads took and write their records after its own, in
    sealed order; the partition's contract facts and times, the owner's first."""
    contract, times = own.contract, list(own.times)
    for taken in sorted(running.taken, key=lambda t: t.start):
        _wait(taken.done, cancel)
        assert taken.result is not None
        for record in taken.result.records:
            emit(record)
        times += taken.result.times
        contract = contract or taken.result.contract
        taken.result = None  # written: let its records go
    return contract, times


class _Keeper:
    """Stream mode (one worker): the states replay and audit start from, besides the one when
    the partition begins: the worker's stream before every ``every``-th slot after it."""

    def __init__(self, worker: Worker, partition: Partition, protocol: Protocol) -> None:
        self._worker = worker
        self.every = checkpoint_spacing(protocol)
        self._kept = set(checkpoint_slots(partition.entries, self.every))
        self.later: list[tuple[str, Any]] = []

    def __call__(self, entry: PlanEntry) -> None:
        state = self._worker.stream_state
        if entry.slot in self._kept and state is not None:
            self.later.append((entry.slot, state))


def _reporter(events: queue.SimpleQueue[_Event], condition: str) -> Callable[[Ended], None]:
    """Tells the main thread that a slot of ``condition`` finished, and how."""
    return lambda end: events.put(("slot", condition, end))


def _keep(_: RunRecord) -> None:
    """Taken slots' records go to the partition's owner with their result, all at once."""


def run_on_local_workers(
    count: int,
    work: Workload,
    writer: BundleWriter,
    slot_done: Callable[[str, Ended], None],
    spares: Spares | None = None,
    idle: Callable[[], None] | None = None,
    gate: Gate | None = None,
) -> list[PartitionRun]:
    """Run every partition of ``work`` on ``count`` worker processes and write each one's runs
    and times files; call ``slot_done(condition, end)`` in this thread as each slot finishes,
    and ``idle()`` once, the first time no slot has ended for a while
    (:func:`~repro._execute.attempts.serve_on_threads`). Return what the study keeps of each
    partition, in sealed order: its records are in its runs file, and none is held longer than
    its partition runs.

    Whatever stops this function (a signal raised in this thread, a thread's I/O error, which is
    raised again here) first stops every thread and its worker process.

    An adapter whose sessions only wait on other processes runs on ``count`` threads of this
    process instead, no worker process at all (:mod:`repro._execute.threads`), its slots started
    as ``gate`` admits them. Worker processes do not wait at the gate: a study the watch stops
    there may have started a slot or two more on each of them."""
    # ---- thread sessions: a separate path, in repro._execute.threads
    if thread_sessions(work):
        return run_on_threads(count, work, writer, slot_done, idle, gate)
    # ---- worker processes
    pool = _Pool(work.partitions)
    results: list[PartitionRun | None] = [None] * len(work.partitions)
    events: queue.SimpleQueue[_Event] = queue.SimpleQueue()
    cancel = threading.Event()
    threads = [
        threading.Thread(
            target=_serve_partitions,
            args=(work, writer, pool, results, events, cancel, spares),
            name=f"repro-worker-{number}",
        )
        for number in range(count)
    ]
    serve_on_threads(threads, events, lambda event: slot_done(event[1], event[2]), cancel.set, idle)
    done = [result for result in results if result is not None]
    assert len(done) == len(results), "every partition ran"
    return done
