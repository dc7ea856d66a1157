"""Partitions on N local worker processes: N threads, each owning one
:class:`~repro.worker.Worker`, take partitions from a queue in sealed order and run each to its
end, writing its runs file as it goes.

The simulator runs in the worker processes, so the threads only wait on sockets and write
files. The main thread waits for their events and reports progress, so the progress display is
only ever touched by one thread, and a stop signal (which Python delivers to the main thread)
sets the threads' cancel flag: each kills its worker process within a fraction of a second and
leaves its runs file unfinished, under its temporary name.

Which partitions ran together, and on which worker, leaves no trace in the bundle: in per-run
mode every run depends on its slot's seed alone, each partition's records are written in sealed
order to its own file, and the records are handed back in sealed order.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Literal

from repro.bundle import BundleWriter
from repro.slots import PartitionResult, Workload, run_partition
from repro.worker import Cancelled, Worker

__all__ = ["run_on_local_workers"]

#: What a thread tells the main thread: a slot of a condition finished; it failed with an
#: exception; it has stopped.
_Event = (
    tuple[Literal["slot"], str] | tuple[Literal["error"], BaseException] | tuple[Literal["exit"]]
)


def _serve_partitions(
    work: Workload,
    writer: BundleWriter,
    todo: queue.SimpleQueue[int],
    results: list[PartitionResult | None],
    events: queue.SimpleQueue[_Event],
    cancel: threading.Event,
) -> None:
    """One thread's loop: take the next partition in sealed order until none is left or the
    study stops. Its worker process lives no longer than the thread, which stops it last."""
    worker = Worker(work.job, work.timeout, cancel)
    try:
        while not cancel.is_set():
            try:
                index = todo.get_nowait()
            except queue.Empty:
                break
            part = work.partitions[index]
            condition = work.conditions[part.condition]
            with writer.lines(f"data/runs/{part.id}.jsonl") as emit:
                results[index] = run_partition(
                    worker,
                    work.job.protocol,
                    condition,
                    part,
                    emit,
                    lambda c=part.condition: events.put(("slot", c)),  # type: ignore[misc]
                )
    except Cancelled:
        pass  # the main thread is stopping the study and knows why
    except BaseException as exc:  # handed to the main thread, which stops the study with it
        events.put(("error", exc))
    finally:
        worker.stop()
        events.put(("exit",))


def run_on_local_workers(
    count: int, work: Workload, writer: BundleWriter, slot_done: Callable[[str], None]
) -> list[PartitionResult]:
    """Run every partition of ``work`` on ``count`` worker processes and write each one's runs
    file; call ``slot_done(condition)`` in this thread as each slot finishes. Return the results
    in sealed order.

    Whatever stops this function (a signal raised in this thread, a thread's I/O error, which is
    raised again here) first stops every thread and its worker process."""
    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    for index in range(len(work.partitions)):
        todo.put(index)
    results: list[PartitionResult | None] = [None] * len(work.partitions)
    events: queue.SimpleQueue[_Event] = queue.SimpleQueue()
    cancel = threading.Event()
    threads = [
        threading.Thread(
            target=_serve_partitions,
            args=(work, writer, todo, results, events, cancel),
            name=f"repro-worker-{number}",
        )
        for number in range(min(count, len(work.partitions)))
    ]
    started: list[threading.Thread] = []
    try:
        for thread in threads:
            thread.start()
            started.append(thread)
        running = len(threads)
        while running:
            event = events.get()
            if event[0] == "slot":
                slot_done(event[1])
            elif event[0] == "error":
                raise event[1]
            else:
                running -= 1
    finally:
        cancel.set()
        for thread in started:
            thread.join()
    done = [result for result in results if result is not None]
    assert len(done) == len(results), "every partition ran"
    return done
