"""Running the plan's slots on a worker: the attempts of one slot, and a partition's slots (or a
range of them) in sealed order on one :class:`~repro._execute.worker.Worker`.

This is the part of a study that runs wherever a partition runs: in a thread of ``repro study``
(:mod:`repro._execute.local`) or in a task on a Dask worker (:mod:`repro._execute.cluster`). It
writes nothing itself; it hands each record to the caller as it is made.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import suppress
from datetime import UTC, datetime
from typing import Any

from attrs import frozen

from repro import _layout as layout
from repro._bundle.writer import BundleWriter
from repro._derive.ledger import contract_sha256
from repro._derive.scenarios import scenario_of
from repro._derive.tally import Ended, attempt_id, declared_exclusion, runs, slot_ended
from repro._derive.validity import judge
from repro._execute.aside import aside_contract, contract_file
from repro._execute.worker import Failure, Invalid, Job, Worker, WorkerLost
from repro.adapters._base import Evidence
from repro.models import (
    MAX_LOST_OPENS,
    AdapterFacts,
    AttemptTimes,
    Condition,
    Partition,
    PlanEntry,
    Protocol,
    RunRecord,
    Scenario,
)

__all__ = [
    "AttemptResult",
    "ConditionSession",
    "PartitionRun",
    "SessionOpens",
    "SlotsResult",
    "Workload",
    "answered",
    "run_slot",
    "run_slots",
    "serve_on_threads",
    "utc_now",
    "write_times",
]


@frozen
class Workload:
    """What every place that runs partitions needs: the job each worker process serves, the
    protocol's per-request timeout, and the sealed partitions (in sealed order) with the
    conditions they belong to (each partition expanded when it is read:
    :class:`repro._plan.sealing.PlanPartitions`)."""

    job: Job
    timeout: float | None
    partitions: Sequence[Partition]
    conditions: Mapping[str, Condition]


@frozen
class SlotsResult:
    """Slots of one condition run to their end (a whole partition, or a range of one): every
    attempt's record in sealed order, the contract facts of the first session that opened
    (empty when none opened), and when each attempt ran (every attempt but a declared
    exclusion, in the order of the records)."""

    records: tuple[RunRecord, ...]
    contract: dict[str, Any]
    times: tuple[AttemptTimes, ...] = ()


@frozen
class PartitionRun:
    """What a study keeps of a partition once its runs and times files are written: its
    condition, the contract facts of its first session that opened (empty when none opened) and
    how many session opens a dying worker process lost. Its records are let go: the study reads
    them back from the files, one partition at a time, as verify does."""

    condition: str
    contract: dict[str, Any]
    lost_opens: int

    @classmethod
    def of(
        cls, partition: Partition, contract: dict[str, Any], times: Iterable[AttemptTimes]
    ) -> PartitionRun:
        """What is kept of ``partition`` once written: the contract facts of its first session
        that opened and its attempts' ``times``."""
        return cls(partition.condition, contract, sum(len(t.lost_opens) for t in times))


def _record(entry: PlanEntry, attempt: int, **fields: object) -> RunRecord:
    base: dict[str, object] = {
        "attempt_id": attempt_id(entry.slot, attempt),
        "slot": entry.slot,
        "condition": entry.condition,
        "attempt": attempt,
        "predecessor": attempt_id(entry.slot, attempt - 1) if attempt > 1 else None,
        "cause": None,
        "measure": None,
        "steps": None,
        "step_rewards": None,
        "trace_sha256": None,
        "contract_sha256": None,
        "outcome": None,
        "harness": None,
        "outcome_sha256": None,
    }
    base.update(fields)
    return RunRecord(**base)  # type: ignore[arg-type]


#: What one attempt yields: well-typed evidence, or a failed or invalid attempt with its cause.
AttemptResult = Evidence | Failure | Invalid


def run_slot(
    entry: PlanEntry,
    protocol: Protocol,
    facts: AdapterFacts,
    contract: Callable[[], str | None],
    attempt: Callable[[PlanEntry], AttemptResult],
    scenario: Scenario | None = None,
) -> Iterator[RunRecord]:
    """Attempt one slot until the first valid attempt, a superseded one, or the protocol's
    attempt limit.

    ``attempt`` runs the entry once; ``contract`` gives the digest of the session's contract
    facts at the time of each attempt; ``scenario`` is the one the slot's condition runs; each
    completed attempt is judged by :func:`repro._derive.validity.judge` under the adapter's
    ``facts``.
    """
    if not runs(entry):
        yield _record(entry, 1, status="excluded", cause=declared_exclusion(entry.excluded or ""))
        return
    for number in range(1, protocol.retry.max_attempts + 1):
        result = attempt(entry)
        if isinstance(result, Failure):
            yield _record(entry, number, status="failed", cause=result.cause)
            continue
        if isinstance(result, Invalid):
            yield _record(
                entry, number, status="invalid", cause=result.cause, contract_sha256=contract()
            )
            continue
        judged = judge(
            protocol,
            facts,
            scenario,
            result.step_rewards,
            result.reported_measure,
            result.steps,
            result.outcome,
        )
        yield _record(
            entry,
            number,
            status=judged.status,
            cause=judged.cause,
            measure=judged.measure,
            steps=result.steps,
            step_rewards=judged.step_rewards,
            trace_sha256=result.trace_sha256,
            contract_sha256=contract(),
            outcome=judged.outcome,
            harness=result.harness,
            outcome_sha256=judged.outcome_sha256,
        )
        if judged.status != "invalid":
            return


class SessionOpens:
    """What a condition's session keeps of its opens, wherever it runs (in a worker process,
    :class:`ConditionSession`; on a thread of the study process,
    :class:`repro._execute.threads._ThreadSession`): why it could not open, once it could not
    (every later attempt fails with that cause, untried), the contract digest of the session
    now open, and the contract facts of the first session that opened."""

    def __init__(self) -> None:
        self._open_error: str | None = None
        self._digest: str | None = None
        #: The contract facts of the first session that opened; the ledger records them.
        self.contract: dict[str, Any] | None = None

    def _refused(self) -> Failure | None:
        """The failure of every attempt once the session could not open; None before."""
        return None if self._open_error is None else Failure(self._open_error)

    def _cannot_open(self, cause: str) -> Failure:
        """The session could not open, for ``cause``: this and every later attempt fail."""
        self._open_error = cause
        return Failure(cause)

    def _opened(self, contract: dict[str, Any]) -> None:
        """A session opened with ``contract``."""
        self._digest = contract_sha256(contract)
        if self.contract is None:
            self.contract = contract

    def digest(self) -> str | None:
        """The contract digest of the session now open."""
        return self._digest


def answered(kind: str, value: Any) -> AttemptResult:
    """The attempt's result from a session's answer to a run: its evidence, or why it was
    invalid or failed."""
    if kind == "evidence":
        evidence: Evidence = value
        return evidence
    if kind == "invalid":
        return Invalid(str(value))
    return Failure(str(value))


class ConditionSession(SessionOpens):
    """One condition's session in the worker: opened on first use, opened again after the
    worker was lost. ``meanwhile`` is done while the worker runs each attempt.

    A session that cannot open is told apart by why. An adapter that raises at opening (or
    refuses the sources, or gives a contract the ledger cannot hold) will do so again, and a
    session open that outlasted ``retry.open_timeout_seconds``, a generous bound, would cost as
    much again: either fails this and every later attempt of the condition with its cause,
    untried. A worker process that died or exited while it opened the session (the kernel's
    OOM killer, say) is replaced by a fresh one and the open tried again, up to
    :data:`~repro.models.MAX_LOST_OPENS` losses in a row; the losses are kept with the
    attempt's times (:attr:`lost_opens`), and only when every try is lost does the condition
    give up.

    An attempt may send the next slot's first attempt ahead (``then``, per-run mode), so the
    worker starts it as soon as it has answered, without waiting for this process. When the
    next attempt asked for is not that one (a retry of the slot before), the run sent ahead is
    read first and its result kept until its slot asks for it. :attr:`began` and :attr:`ended`
    say when the latest attempt ran: from its request's sending (or, for one sent ahead, the
    answer before it: when the worker began it) to its answer's arrival."""

    def __init__(
        self, worker: Worker, condition: Condition, meanwhile: Callable[[], None] | None = None
    ) -> None:
        super().__init__()
        self._worker = worker
        self._condition = condition
        self._meanwhile = meanwhile
        self._open = False
        #: The causes of the session opens lost (and retried) for the latest attempt.
        self.lost_opens: tuple[str, ...] = ()
        #: Results of runs sent ahead and read before their slot asked for them, by slot.
        self._early: dict[str, tuple[AttemptResult, datetime, datetime]] = {}
        self.began = self.ended = datetime.now(UTC)

    def _ensure_open(self) -> Failure | None:
        self.lost_opens = ()
        refused = self._refused()
        if refused is not None:
            return refused
        if self._open:
            return None
        lost: list[str] = []
        while True:
            try:
                answer = self._worker.request("open", self._condition)
                break
            except WorkerLost as loss:
                if loss.cause == "timeout" or len(lost) + 1 >= MAX_LOST_OPENS:
                    self.lost_opens = tuple(lost)
                    return self._cannot_open(f"session-open-failed:{loss.cause}")
                lost.append(loss.cause)
        self.lost_opens = tuple(lost)
        if answer[0] != "opened":
            return self._cannot_open(str(answer[1]))
        self._open = True
        self._opened(answer[1])
        return None

    def _read_ahead(self, entry: PlanEntry) -> None:
        """Read the result of ``entry``'s run, sent ahead, and keep it for its slot."""
        try:
            result = answered(*self._worker.request("run", entry))
            ended = self._worker.ended
        except WorkerLost as lost:
            self._open = False
            result, ended = Failure(lost.cause), datetime.now(UTC)
        self._early[entry.slot] = (result, self._worker.began, ended)

    def attempt(self, entry: PlanEntry, then: PlanEntry | None = None) -> AttemptResult:
        """Run ``entry`` once in the worker; send ``then`` (the next slot, in per-run mode)
        ahead unless its result is already in."""
        early = self._early.pop(entry.slot, None)
        if early is not None:
            result, self.began, self.ended = early
            self.lost_opens = ()
            return result
        message = ("run", entry)
        ahead = self._worker.ahead
        if ahead is not None and ahead != message:
            self._read_ahead(ahead[1])
            ahead = None
        began = datetime.now(UTC)
        failure = self._ensure_open()
        if failure is not None:
            self.began, self.ended = began, datetime.now(UTC)
            return failure
        following = None if then is None or then.slot in self._early else ("run", then)
        try:
            answer = self._worker.request(*message, meanwhile=self._meanwhile, then=following)
        except WorkerLost as lost:
            self._open = False
            self.began = self._worker.began if ahead is not None else began
            self.ended = datetime.now(UTC)
            return Failure(lost.cause)
        self.began = self._worker.began if ahead is not None else began
        self.ended = self._worker.ended
        return answered(*answer)

    def seek(self, stream: tuple[str, Any], opened: bool) -> None:
        """Set the worker's generator stream to ``stream`` (stream mode), with the session
        ``opened`` first or not: replay from a state kept mid-partition, which was the stream's
        with the session open, or from the partition's first, kept before it opened. A session
        that cannot open is left for the next attempt to report, as ever."""
        if opened and self._ensure_open() is not None:
            return
        try:
            self._worker.request("seek", stream)
        except WorkerLost:
            self._open = False

    def close(self) -> None:
        """Close the session if it is open; a worker lost while closing is let go."""
        if self._worker.ahead is not None:  # a run nobody asked for: the worker goes with it
            self._worker.kill()
            self._open = False
        if self._open:
            self._open = False
            with suppress(WorkerLost):
                self._worker.request("close")


def run_slots(
    worker: Worker,
    protocol: Protocol,
    facts: AdapterFacts,
    condition: Condition,
    entries: Iterable[PlanEntry],
    emit: Callable[[RunRecord], None],
    slot_done: Callable[[Ended], None],
    before: Callable[[PlanEntry], None] | None = None,
) -> SlotsResult:
    """Run ``entries`` (slots of ``condition``, in sealed order: a whole partition or a range of
    one) on ``worker``, in one session of the condition: ``emit`` gets each record in order,
    ``slot_done`` how each slot ended, after its records; both are called while the worker runs
    the next attempt, or at the end. ``before`` is called with each entry before its first
    attempt is asked for (where a stream's state is kept). In per-run mode the next slot's
    first attempt is sent with each slot's (:meth:`ConditionSession.attempt`)."""
    records: list[RunRecord] = []
    backlog = _Backlog(emit, slot_done)
    session = ConditionSession(worker, condition, backlog.catch_up)
    scenario = scenario_of(protocol, condition)
    stamps: list[tuple[datetime, datetime, tuple[str, ...]]] = []
    then: PlanEntry | None = None

    def timed(entry: PlanEntry) -> AttemptResult:
        result = session.attempt(entry, then)
        stamps.append((session.began, session.ended, session.lost_opens))
        return result

    # In per-run mode each slot's first attempt is sent while the worker runs the one before
    # (no run depends on which runs came before it), so the worker never waits for this
    # process between runs.
    for entry, following in _with_next(entries, worker.stream_state is None):
        then = following if following is not None and runs(following) else None
        if before is not None:
            before(entry)
        for record in run_slot(entry, protocol, facts, session.digest, timed, scenario):
            # An attempt the worker was asked to run has its times.
            backlog.record(record, stamps.pop() if runs(entry) else None)
            records.append(record)
        backlog.ended(slot_ended(records[-1] if records else None))
    backlog.catch_up()
    session.close()
    return SlotsResult(tuple(records), session.contract or {}, tuple(backlog.times))


class _Backlog:
    """Each record is handed on while the worker runs the next attempt (on a machine with a
    core to spare, writing it then costs no time): the backlog holds the records not handed on
    yet, and, where a slot ended, how it ended. The attempts' times are made then too: between
    an answer and the next request only what decides that request is done."""

    def __init__(self, emit: Callable[[RunRecord], None], slot_done: Callable[[Ended], None]):
        self._emit, self._slot_done = emit, slot_done
        self._items: list[RunRecord | Ended] = []
        self._clocked: list[tuple[str, datetime, datetime, tuple[str, ...]]] = []
        self.times: list[AttemptTimes] = []

    def record(
        self, record: RunRecord, stamp: tuple[datetime, datetime, tuple[str, ...]] | None
    ) -> None:
        """An attempt's record, and when it began and ended and the opens it lost (None for
        the record of an attempt the worker did not run)."""
        if stamp is not None:
            self._clocked.append((record.attempt_id, *stamp))
        self._items.append(record)

    def ended(self, end: Ended) -> None:
        """How a slot ended, after its records."""
        self._items.append(end)

    def catch_up(self) -> None:
        """Hand on what is held, in order, and make the times of the attempts clocked."""
        for item in self._items:
            if isinstance(item, Ended):
                self._slot_done(item)
            else:
                self._emit(item)
        self._items.clear()
        for attempt, began, ended, lost in self._clocked:
            self.times.append(AttemptTimes(attempt, _utc(began), _utc(ended), lost))
        self._clocked.clear()


def _with_next(
    entries: Iterable[PlanEntry], look: bool
) -> Iterator[tuple[PlanEntry, PlanEntry | None]]:
    """Each entry with the one after it (None after the last), both taken from ``entries``
    when the first is yielded; with None throughout unless ``look``."""
    pending = iter(entries)
    if not look:
        for entry in pending:
            yield entry, None
        return
    current = next(pending, None)
    while current is not None:
        following = next(pending, None)
        yield current, following
        current = following


def write_times(
    writer: BundleWriter,
    partition: str,
    times: Iterable[AttemptTimes],
    contract: Mapping[str, Any],
) -> None:
    """Write times/<partition>.jsonl, when each attempt of the partition ran: the last of its
    files, once its runs file is written. Before it, the partition's ``contract`` facts go
    aside, for a study that continues this one should it stop (:mod:`repro._execute.aside`):
    a partition whose times file is in place is finished."""
    writer.aside(contract_file(partition), aside_contract(contract))
    with writer.lines(layout.times_file(partition)) as emit:
        for line in times:
            emit(line)


#: How long no slot may end before the study's thread, waiting for the next, calls ``idle``.
IDLE_SECONDS = 0.1


def serve_on_threads(
    threads: Sequence[threading.Thread],
    events: queue.SimpleQueue[Any],
    on_slot: Callable[[Any], None],
    stop: Callable[[], None],
    idle: Callable[[], None] | None = None,
) -> None:
    """Start ``threads`` and take their events in this thread until each has said it ended
    (``("exit",)``): ``on_slot(event)`` for each ``("slot", ...)``, and an ``("error", exc)``
    raised again here; ``idle()`` once, the first time no event came for
    :data:`IDLE_SECONDS` (the runs under way then only wait, and so does this thread). Whatever
    ends this (that error, a signal raised in this thread, an error of ``on_slot`` or
    ``idle``), ``stop()`` is called, then every thread started is joined."""
    started: list[threading.Thread] = []
    try:
        for thread in threads:
            thread.start()
            started.append(thread)
        running = len(threads)
        waiting: Callable[[], None] | None = idle
        while running:
            if waiting is None:
                event = events.get()
            else:
                try:
                    event = events.get(timeout=IDLE_SECONDS)
                except queue.Empty:
                    meanwhile, waiting = waiting, None
                    meanwhile()
                    continue
            if event[0] == "slot":
                on_slot(event)
            elif event[0] == "error":
                raise event[1]
            else:
                running -= 1
    finally:
        stop()
        for thread in started:
            thread.join()


def utc_now() -> str:
    """The time now, UTC, to the microsecond, as :class:`~repro.models.AttemptTimes` holds it."""
    return _utc(datetime.now(UTC))


def _utc(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
