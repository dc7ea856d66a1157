"""Partitions as tasks on a Dask cluster: ``repro study --scheduler ADDRESS`` (the optional extra
``dask``, which installs ``distributed``).

Each partition is one task. The task runs in a Dask worker process, and runs its partition
there through a :class:`~repro._execute.worker.Worker` subprocess of its own, exactly as a local
thread does: a run that raises, hangs past the timeout or kills its process is one recorded attempt
there too. The task returns the partition's records and contract facts; the study writes each
partition's runs file, in sealed order, as soon as that partition and every one before it have
come back.

The Dask workers need repro, the adapter and the sources it pins, installed as where the study
was sealed: each worker subprocess freezes the adapter again and refuses to open a session
whose sources differ from the sealed ones (``session-open-failed:sources-differ-in-worker``).
A Dask worker lost while it runs a task makes Dask run the task again elsewhere (it depends on
its slot seeds alone); a task that cannot be run at all stops the study (:class:`ClusterFailed`).
When the study stops, it cancels its tasks and sets a cluster-wide event: a running task sees
either (its Dask worker's record of the task says it was cancelled, or the event is set) and
kills its worker subprocess within about a second, and queued tasks never start.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

from repro import _layout as layout
from repro._bundle.writer import BundleWriter
from repro._derive.tally import Ended, slot_ended
from repro._execute.attempts import PartitionRun, SlotsResult, Workload, run_slots, write_times
from repro._execute.stopping import Gate
from repro._execute.worker import Job, Worker
from repro.errors import BadInput, ClusterFailed, install_hint
from repro.models import Condition, Partition, RunRecord

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["connect", "run_on_dask", "run_partition_task"]

#: How long to wait for the scheduler to answer when connecting.
CONNECT_TIMEOUT_SECONDS = 10
#: How often a running task asks the scheduler whether the study is stopping.
_STOP_POLL_SECONDS = 1.0
#: The states of a task its Dask worker still runs for the study (any other: cancelled,
#: released, forgotten).
_WANTED = frozenset({"executing", "long-running"})


@contextmanager
def connect(address: str) -> Iterator[Client]:
    """A client of the scheduler at ``address`` (e.g. ``tcp://127.0.0.1:8786``), closed when
    the block ends. Raises :class:`BadInput` when ``distributed`` is not installed or the
    scheduler cannot be reached, before anything is written."""
    try:
        # Lazy: distributed is the dask extra, maybe absent; only a cluster run needs it.
        from distributed import Client
    except ImportError:
        raise BadInput(
            "--scheduler runs partitions on a Dask cluster, which needs the distributed "
            f"package: {install_hint('dask')}"
        ) from None
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT_SECONDS, set_as_default=False)
    except Exception as exc:  # distributed refuses a malformed address with AssertionError too
        raise BadInput(
            f"--scheduler: cannot reach a Dask scheduler at {address!r} "
            f"({str(exc) or type(exc).__name__})"
        ) from None
    try:
        yield client
    finally:
        client.close()


class _StudyStopping:
    """A task's cancel flag: set once the study stops. Two things say so, each looked at most
    once every :data:`_STOP_POLL_SECONDS`: this task is no longer wanted on its Dask worker (the
    study cancelled it, or its client went away, and the scheduler released it: the worker's own
    record of the task says so, without asking anyone), or the study's cluster-wide stop event
    is set. A question that fails counts as "not yet": under load a worker's client to the
    scheduler can close and stay closed, which is why the task's own state comes first."""

    def __init__(self, name: str) -> None:
        # Lazy: distributed is the dask extra, maybe absent; only a cluster run needs it.
        from distributed import Event, get_worker

        self._event = Event(name)
        try:
            worker = get_worker()
            self._task: tuple[Any, Any] | None = (worker, worker.get_current_task())
        except (ValueError, KeyError):  # not inside a task (a test calls it directly)
            self._task = None
        self._stopping = False
        self._next_look = 0.0

    def _released(self) -> bool:
        """Whether the worker no longer runs this task for anyone: cancelled, released or
        forgotten."""
        if self._task is None:
            return False
        worker, key = self._task
        task = worker.state.tasks.get(key)
        return task is None or task.state not in _WANTED

    def is_set(self) -> bool:
        """Whether the study is stopping."""
        now = time.monotonic()
        if not self._stopping and now >= self._next_look:
            self._next_look = now + _STOP_POLL_SECONDS
            with suppress(Exception):
                self._stopping = self._released()
            if not self._stopping:
                with suppress(Exception):
                    self._stopping = bool(self._event.is_set())
        return self._stopping


def run_partition_task(
    job: Job, timeout: float | None, condition: Condition, partition: Partition, stop: str
) -> SlotsResult:
    """The task: run ``partition`` in this Dask worker through a worker subprocess of its own,
    which is stopped when the task ends; ``stop`` names the study's stop event."""
    worker = Worker(job, timeout, _StudyStopping(stop))
    try:
        return run_slots(
            worker, job.protocol, job.frozen.facts, condition, partition.entries, _drop, _nothing
        )
    finally:
        worker.stop()


def _slot_ends(records: Sequence[RunRecord]) -> Iterator[Ended]:
    """How each slot of a partition's records (in sealed order) ended."""
    for record, following in zip(records, [*records[1:], None], strict=True):
        if following is None or following.slot != record.slot:
            yield slot_ended(record)


def _drop(_: Any) -> None:
    """The records travel back in the task's result, not one by one."""


def _nothing(_: Ended) -> None:
    """Progress is counted by the study when a partition comes back."""


def run_on_dask(
    client: Client,
    work: Workload,
    writer: BundleWriter,
    slot_done: Callable[[str, Ended], None],
    gate: Gate | None = None,
) -> list[PartitionRun]:
    """Run every partition of ``work`` as a task on ``client``'s cluster and write each one's
    runs file in sealed order; call ``slot_done(condition, end)`` once per slot of each partition
    that comes back (a partition is one task, which runs whole: ``gate`` holds no slot back
    here, and a study the watch stops stops when the partition that decides comes back).
    Return what the study keeps of each partition, in sealed order (a
    partition's records are held from when it comes back until it is written).

    Whatever stops this function first sets the stop event and cancels the tasks."""
    # Lazy: distributed is the dask extra, maybe absent; only a cluster run needs it.
    from distributed import Event, as_completed

    token = uuid.uuid4().hex
    stop = Event(f"repro-stop-{token}", client=client)
    futures = _submit(client, work, stop.name, token)
    index = {future.key: i for i, future in enumerate(futures)}
    results: list[SlotsResult | PartitionRun | None] = [None] * len(futures)
    written = 0
    try:
        for future in as_completed(futures, loop=client.loop):
            i = index[future.key]
            part = work.partitions[i]
            try:
                came: SlotsResult = future.result()
            except Exception as exc:
                raise ClusterFailed(
                    f"the Dask cluster could not run partition {part.id} ({type(exc).__name__})"
                ) from None
            results[i] = came
            for end in _slot_ends(came.records):
                slot_done(part.condition, end)
            written = _write_ready(work, writer, results, written)
    finally:
        if written < len(results):
            with suppress(Exception):
                stop.set()
            with suppress(Exception):
                client.cancel(futures)
    return [result for result in results if isinstance(result, PartitionRun)]


def _submit(client: Client, work: Workload, stop: str, token: str) -> list[Any]:
    """One task per partition of ``work``, in sealed order, each watching the stop event
    ``stop``; their futures."""
    return [
        client.submit(
            run_partition_task,
            work.job,
            work.timeout,
            work.conditions[part.condition],
            part,
            stop,
            key=f"repro-{part.id}-{token}",
            pure=False,
        )
        for part in work.partitions
    ]


def _write_ready(
    work: Workload,
    writer: BundleWriter,
    results: list[SlotsResult | PartitionRun | None],
    written: int,
) -> int:
    """Write the runs and times files of each partition from the ``written``-th on that has
    come back with every one before it, keeping in ``results`` only what the study keeps of
    each; return how many are now written."""
    while written < len(results) and isinstance(result := results[written], SlotsResult):
        done = work.partitions[written]
        with writer.lines(layout.runs_file(done.id)) as emit:
            for record in result.records:
                emit(record)
        write_times(writer, done.id, result.times, result.contract)
        results[written] = PartitionRun.of(done, result.contract, result.times)
        written += 1
    return written
