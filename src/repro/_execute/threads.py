"""Thread sessions: the slots of an adapter whose sessions only wait on other processes (its
class says ``thread_sessions = True``, as the command adapter's does) run on N threads of the
study process, N up to :data:`~repro._execute.backends.MAX_THREAD_WORKERS`, in ``per-run``
seeding mode.

A run of such an adapter (a model call, an agent harness) takes seconds and costs the machine
almost nothing: its real work is a child process. A worker process per concurrent run would
cost more than the run (a fresh interpreter, its imports, tens of MiB each, a socket round trip
per request), so here the adapter is rebuilt and frozen again in the study process, as a worker
would do it (a frozen result that differs from the sealed one fails every session open with
``session-open-failed:sources-differ-in-worker``), and each thread opens its own session of a
condition when it first runs one of its slots.

Slots are handed out one at a time in sealed order, whichever partition they belong to, so N
runs are under way whenever N are left. Per-run seeding makes every run a function of its
slot alone, so which thread ran a slot leaves no trace in the records; the main thread puts each
partition's records back in sealed order and writes its runs file (and its times file, at its
end), so every file is written by one thread, and reports progress.

What a worker process guarantees is kept per run. Each attempt runs on a thread other than its
slot's (the slot thread's runner, which makes its calls one after another), which the slot's
thread waits on at most ``retry.timeout_seconds`` (``retry.open_bound`` for a session's
opening): past it the attempt fails with cause ``timeout``, the runner is given up, the run is
stopped (:class:`~repro.adapters._lifetime.RunScope`: the command adapter kills its harness's
process group) and its session is dropped, as a lost worker's is. A stop signal (delivered to
the main thread) stops every run under way the same way at once and leaves the runs files
unfinished, under their temporary names. A harness started from a thread dies with the study process
(:mod:`~repro.adapters._reaper`). What the adapter returns is checked as a worker
checks it (:func:`~repro._execute.worker.check_evidence`); an exception is the attempt's failure.
"""

from __future__ import annotations

import contextlib
import importlib
import queue
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from repro import _layout as layout
from repro._bundle.writer import BundleWriter
from repro._derive.scenarios import scenario_of
from repro._derive.tally import Ended, runs, slot_ended
from repro._execute.attempts import (
    AttemptResult,
    PartitionRun,
    SessionOpens,
    Workload,
    answered,
    run_slot,
    serve_on_threads,
    utc_now,
    write_times,
)
from repro._execute.stopping import Gate
from repro._execute.worker import Cancelled, Failure, Job, RunScope, open_session, run_entry
from repro.adapters._base import THREAD_SESSIONS, Adapter, Frozen, Session, targets_in
from repro.models import AttemptTimes, Condition, Partition, PlanEntry, RunRecord

__all__ = ["run_on_threads", "sessions_on_threads", "thread_sessions"]

#: How long a stopping study waits for the runs it stopped to end, all told.
_STOP_GRACE_SECONDS = 5.0


def sessions_on_threads(adapter: type | None, per_run: bool) -> bool:
    """Whether the sessions of an ``adapter`` class run on threads of this process: the class
    says ``thread_sessions = True`` and the protocol seeds per run."""
    return per_run and getattr(adapter, THREAD_SESSIONS, False) is True


def thread_sessions(work: Workload) -> bool:
    """Whether ``work`` runs on threads of this process (:func:`sessions_on_threads`)."""
    module, _, name = work.job.adapter.partition(":")
    cls = getattr(importlib.import_module(module), name, None)
    return sessions_on_threads(cls, work.job.stream is None)


class _Timeout(Exception):
    """The call outlasted its bound."""


class _Call:
    """One adapter call, run on its slot thread's runner (:class:`_Runner`), and its result."""

    def __init__(self, fn: Callable[[], tuple[Any, ...]]) -> None:
        self.scope = RunScope()
        self.done = threading.Event()
        self.result: tuple[Any, ...] | None = None
        self._fn = fn

    def run(self) -> None:
        """Make the call in this thread, within its scope."""
        self.scope.enter()
        try:
            self.result = self._fn()
        except BaseException as exc:  # an adapter that exits or raises past its catch-alls
            self.result = ("failed", f"adapter-raised:{type(exc).__name__}")
        finally:
            self.done.set()


class _Runner:
    """The thread that makes one slot thread's calls, one after another: a call waited on with
    a bound must run on a thread other than the waiting one, and starting a thread per call
    cost the study process more than the rest of a run's own work (a thread start waits for
    the new thread to take the interpreter lock, with a hundred threads wanting it). A runner
    whose call outlasts its bound, or is stopped, is given up: it ends once that call returns,
    and its slot thread starts another for its next call."""

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._main, daemon=True, name="repro-run")
        self.thread.start()

    def _main(self) -> None:
        while (call := self._calls.get()) is not None:
            call.run()

    def make(self, call: _Call) -> None:
        """Make ``call`` on this runner's thread (without waiting for it)."""
        self._calls.put(call)

    def end(self) -> None:
        """End the thread once the call it makes, if any, returns."""
        self._calls.put(None)


class _Calls:
    """The calls under way, each on its slot thread's runner; a stopping study stops them all
    at once."""

    def __init__(self, cancel: threading.Event) -> None:
        self._lock = threading.Lock()
        self._cancel = cancel
        self._live: dict[_Call, _Runner] = {}
        self._stopped: list[_Runner] = []
        #: Each slot thread's runner (``runner``), while it has one.
        self._mine = threading.local()

    def _runner(self) -> _Runner:
        """The calling slot thread's runner, started on its first call."""
        runner: _Runner | None = getattr(self._mine, "runner", None)
        if runner is None:
            runner = self._mine.runner = _Runner()
        return runner

    def _give_up(self) -> None:
        """Give up the calling slot thread's runner: it ends once its call returns."""
        runner: _Runner | None = getattr(self._mine, "runner", None)
        self._mine.runner = None
        if runner is not None:
            runner.end()

    def call(self, fn: Callable[[], tuple[Any, ...]], bound: float | None) -> tuple[Any, ...]:
        """``fn()`` on the calling slot thread's runner; :class:`_Timeout` (the call stopped)
        when it takes longer than ``bound`` seconds, :class:`Cancelled` when the study stops
        meanwhile."""
        call = _Call(fn)
        runner = self._runner()
        with self._lock:
            if self._cancel.is_set():
                raise Cancelled("the study is stopping")
            self._live[call] = runner
        try:
            runner.make(call)
            finished = call.done.wait(bound)
            if self._cancel.is_set():
                call.scope.stop()
                self._give_up()
                raise Cancelled("the study is stopping")
            if not finished:
                call.scope.stop()
                self._give_up()
                raise _Timeout
            assert call.result is not None
            return call.result
        finally:
            with self._lock:
                self._live.pop(call, None)

    def done(self) -> None:
        """The calling slot thread makes no more calls: its runner ends."""
        self._give_up()

    def stop_all(self) -> None:
        """Stop every call under way and wake the threads that wait on them (the cancel flag is
        set first, so no call starts after)."""
        with self._lock:
            self._cancel.set()
            live = list(self._live.items())
        self._stopped = [runner for _, runner in live]
        for call, _ in live:
            call.scope.stop()
            call.done.set()

    def join(self, seconds: float) -> None:
        """Wait at most ``seconds`` in all for the runners of the calls stopped to end."""
        deadline = time.monotonic() + seconds
        for runner in self._stopped:
            runner.thread.join(max(0.0, deadline - time.monotonic()))


class _Host:
    """The adapter, rebuilt and frozen again in this process as a worker process would."""

    def __init__(self, job: Job) -> None:
        module, _, name = job.adapter.partition(":")
        self.adapter: Adapter = getattr(importlib.import_module(module), name)()
        try:
            refrozen: Frozen | None = self.adapter.freeze(job.protocol, job.options)
        except Exception:
            refrozen = None
        self.unpinned = refrozen != job.frozen
        self.job = job


class _ThreadSession(SessionOpens):
    """One condition's session on one thread: opened on first use, opened again after a run
    that outlasted its timeout (whose session is dropped, as a lost worker's is). A session
    that cannot open fails this and every later attempt of the condition on this thread with
    its cause, as in a worker process."""

    def __init__(self, host: _Host, calls: _Calls, condition: Condition, timeout: float | None):
        super().__init__()
        self._host = host
        self._calls = calls
        self._condition = condition
        self._timeout = timeout
        self._session: Session | None = None

    def _ensure_open(self) -> Failure | None:
        refused = self._refused()
        if refused is not None:
            return refused
        if self._session is not None:
            return None
        host, job = self._host, self._host.job
        if host.unpinned:
            answer: tuple[Any, ...] = (
                "open-failed",
                "session-open-failed:sources-differ-in-worker",
            )
        else:
            try:
                answer = self._calls.call(
                    lambda: open_session(host.adapter, job, self._condition),
                    job.protocol.retry.open_bound,
                )
            except _Timeout:
                answer = ("open-failed", "session-open-failed:timeout")
        if answer[0] != "opened":
            return self._cannot_open(str(answer[1]))
        self._session = answer[1]
        self._opened(answer[2])
        return None

    def attempt(self, entry: PlanEntry) -> AttemptResult:
        """Run ``entry`` once."""
        failure = self._ensure_open()
        if failure is not None:
            return failure
        session, job = self._session, self._host.job
        assert session is not None
        try:
            kind, value = self._calls.call(lambda: run_entry(job, session, entry), self._timeout)
        except _Timeout:
            self._session = None  # still running, perhaps: never used again
            return Failure("timeout")
        return answered(kind, value)

    def close(self) -> None:
        """Close the session if one is open."""
        session, self._session = self._session, None
        if session is not None:
            with contextlib.suppress(Exception):
                session.close()


#: What a thread tells the main thread: a slot ran (its partition's index and the partition,
#: its place in it, its records, their times, the contract of the session that ran it); it
#: failed; it stopped.
_SlotEvent = tuple[
    Literal["slot"],
    int,
    Partition,
    int,
    list[RunRecord],
    list[AttemptTimes],
    dict[str, Any] | None,
]
_Event = _SlotEvent | tuple[Literal["error"], BaseException] | tuple[Literal["exit"]]


class _Slots:
    """Every slot of the plan, in sealed order, one at a time to whichever thread asks; each
    partition is expanded once, when its first slot is asked for (the plan's partitions are
    expanded when read, :class:`repro._plan.sealing.PlanPartitions`), and partitions without a
    slot are noted for the main thread."""

    def __init__(self, work: Workload, gate: Gate | None = None) -> None:
        self._lock = threading.Lock()
        self.empty: list[tuple[int, Partition]] = []
        self._items = self._each(work)
        self._gate = gate

    def _each(self, work: Workload) -> Iterator[tuple[int, Partition, int, PlanEntry]]:
        for index, part in enumerate(work.partitions):
            if not part.entries:
                self.empty.append((index, part))
            for place, entry in enumerate(part.entries):
                yield index, part, place, entry

    def next(self, cancel: threading.Event) -> tuple[int, Partition, int, PlanEntry] | None:
        """The next slot: its partition's index, the partition, its place in it, the entry;
        one that runs once the gate admits it (:class:`repro._execute.stopping.Gate`), None
        when the study stopped meanwhile."""
        with self._lock:
            item = next(self._items, None)
        if item is None or self._gate is None or not runs(item[3]):
            return item
        return item if self._gate.admit(cancel) else None


def _serve(
    work: Workload,
    host: _Host,
    calls: _Calls,
    slots: _Slots,
    events: queue.SimpleQueue[_Event],
    cancel: threading.Event,
) -> None:
    """One thread's loop: run the next slot of the plan until none is left or the study
    stops."""
    sessions: dict[str, _ThreadSession] = {}
    try:
        while not cancel.is_set() and (item := slots.next(cancel)) is not None:
            index, part, place, entry = item
            condition = work.conditions[part.condition]
            session = sessions.get(condition.id)
            if session is None:
                session = _ThreadSession(host, calls, condition, work.timeout)
                sessions[condition.id] = session
            records, times = _run_slot(work, condition, session, entry)
            events.put(("slot", index, part, place, records, times, session.contract))
    except Cancelled:
        pass  # the main thread is stopping the study and knows why
    except BaseException as exc:  # handed to the main thread, which stops the study with it
        events.put(("error", exc))
    finally:
        for session in sessions.values():
            session.close()
        calls.done()
        events.put(("exit",))


def _run_slot(
    work: Workload, condition: Condition, session: _ThreadSession, entry: PlanEntry
) -> tuple[list[RunRecord], list[AttemptTimes]]:
    """Every attempt of one slot (:func:`~repro._execute.attempts.run_slot`), and when each
    ran."""
    protocol = work.job.protocol
    records: list[RunRecord] = []
    times: list[AttemptTimes] = []
    started: list[str] = []

    def timed(entry: PlanEntry) -> AttemptResult:
        started.append(utc_now())
        return session.attempt(entry)

    scenario = scenario_of(protocol, condition)
    facts = work.job.frozen.facts
    for record in run_slot(entry, protocol, facts, session.digest, timed, scenario):
        if runs(entry):  # the record of an attempt that ran
            times.append(AttemptTimes(record.attempt_id, started.pop(), utc_now(), ()))
        records.append(record)
    return records, times


class _Partition:
    """A partition's records as they come back, written in sealed order (main thread only):
    those that came back before an earlier slot's are held until it does; the times are held
    until the partition's end, as a worker's are."""

    def __init__(self, part: Partition) -> None:
        self.id = part.id
        self.condition = part.condition
        self.size = len(part.entries)
        self.next = 0
        self.waiting: dict[
            int, tuple[list[RunRecord], list[AttemptTimes], dict[str, Any] | None]
        ] = {}
        self.times: list[AttemptTimes] = []
        self.contract: dict[str, Any] | None = None
        self.file = contextlib.ExitStack()
        self.emit: Callable[[RunRecord], None] | None = None


def _collect(
    part: _Partition,
    place: int,
    records: list[RunRecord],
    times: list[AttemptTimes],
    contract: dict[str, Any] | None,
    writer: BundleWriter,
    files: contextlib.ExitStack,
) -> PartitionRun | None:
    """Take one slot's records (and the contract facts of the session that ran it); write
    every record now in sealed order; what the study keeps of the partition once its last slot
    is written."""
    part.waiting[place] = (records, times, contract)
    while part.next in part.waiting:
        if part.emit is None:
            part.emit = part.file.enter_context(writer.lines(layout.runs_file(part.id)))
            files.push(part.file)
        slot_records, slot_times, slot_contract = part.waiting.pop(part.next)
        # The contract of the first session (in sealed order) that opened, as one worker's.
        part.contract = part.contract or slot_contract
        for record in slot_records:
            part.emit(record)
        part.times += slot_times
        part.next += 1
    if part.next < part.size:
        return None
    part.file.close()
    write_times(writer, part.id, part.times, part.contract or {})
    return PartitionRun(part.condition, part.contract or {}, 0)


def run_on_threads(
    count: int,
    work: Workload,
    writer: BundleWriter,
    slot_done: Callable[[str, Ended], None],
    idle: Callable[[], None] | None = None,
    gate: Gate | None = None,
) -> list[PartitionRun]:
    """Run every slot of ``work`` on ``count`` threads of this process and write each
    partition's runs and times files; call ``slot_done(condition, end)`` in this thread as each
    slot finishes (slots that run start as ``gate`` admits them), and ``idle()`` once, the
    first time no slot has ended for a while
    (:func:`~repro._execute.attempts.serve_on_threads`). Return what the study keeps of each
    partition, in sealed order: its records are in its runs file, and none is held after it is
    written.

    Whatever stops this function (a signal raised in this thread, a thread's error, which is
    raised again here) first stops every run under way and every thread."""
    root = work.job.target_root
    with targets_in(None if root is None else Path(root)):
        return _run_on_threads(count, work, writer, slot_done, idle, gate)


def _run_on_threads(
    count: int,
    work: Workload,
    writer: BundleWriter,
    slot_done: Callable[[str, Ended], None],
    idle: Callable[[], None] | None,
    gate: Gate | None,
) -> list[PartitionRun]:
    host = _Host(work.job)
    results: list[PartitionRun | None] = [None] * len(work.partitions)
    # The partitions with a slot under way or written, until their last is written.
    parts: dict[int, _Partition] = {}
    events: queue.SimpleQueue[_Event] = queue.SimpleQueue()
    cancel = threading.Event()
    calls = _Calls(cancel)
    if gate is not None:
        gate.widen(max(1, count))
    slots = _Slots(work, gate)
    threads = [
        threading.Thread(
            target=_serve,
            args=(work, host, calls, slots, events, cancel),
            name=f"repro-slots-{number}",
        )
        for number in range(max(1, count))
    ]
    with contextlib.ExitStack() as files:

        def took(event: _SlotEvent) -> None:
            _, index, partition, place, records, times, contract = event
            part = parts.get(index) or parts.setdefault(index, _Partition(partition))
            ended = slot_ended(records[-1] if records else None)
            # The slot's records are handed on before it is told done: a study that stops then
            # (repro._execute.stopping) keeps them.
            result = _collect(part, place, records, times, contract, writer, files)
            slot_done(part.condition, ended)
            if result is not None:
                results[index] = result
                del parts[index]

        try:
            serve_on_threads(threads, events, took, calls.stop_all, idle)
            for index, partition in slots.empty:  # no slot: empty runs and times files
                with writer.lines(layout.runs_file(partition.id)):
                    pass
                write_times(writer, partition.id, (), {})
                results[index] = PartitionRun(partition.condition, {}, 0)
        finally:
            calls.join(_STOP_GRACE_SECONDS)
    done = [result for result in results if result is not None]
    assert len(done) == len(results), "every partition ran"
    return done
