"""The sealed partitions read and tallied, each (with its runs file, checkpoint and part of the
crate) by a job, their findings taken in sealed order as one reader reading them in turn would
make them."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any, cast

from attrs import frozen

from repro import _layout as layout
from repro._derive.crate import CrateBuilder
from repro._derive.tally import Attempt, tally
from repro.models import FrozenProtocol, Partition, PartitionRef, Seal
from repro.verify._content.checkpoints import check_checkpoint
from repro.verify._content.crate import (
    CrateCheck,
    Mentioned,
    crate_check,
    crate_partition,
    times_mentions,
)
from repro.verify._content.jobs import JobReader, Stretch, seen_of
from repro.verify._content.records import PartitionRuns, RecordChecks, read_attempts
from repro.verify._content.sealing import Resealing
from repro.verify._content.stored import Stored
from repro.verify._findings import Finding
from repro.verify._limits import Limits
from repro.verify._parallel import Jobs
from repro.verify._reader import BundleReader
from repro.verify._walk import Source as FileSource


@frozen
class _PartitionContext:
    """What every partition's job is given: where the files are, the limits, the protocol, the
    record checks (none run yet) and the crate's builder and window (None without a crate to
    re-derive)."""

    source: FileSource
    limits: Limits
    fp: FrozenProtocol
    checks: RecordChecks
    builder: CrateBuilder | None
    window: tuple[str, str] | None


@frozen
class _PartitionTask:
    """One partition's job: its reference in the seal, whether it is the first, what the
    verifier's first reads found of its files, and the byte budget left."""

    ref: PartitionRef
    first: bool
    seen: dict[str, Any]
    budget: int
    #: Carried whole from an interrupted study (continuation.json says so): its attempts ran
    #: there, before this study started.
    carried: bool = False


@frozen
class _PartitionDone:
    """What one partition's job found: its reading (partition, checkpoint and runs file), the
    record checks' findings and counts, what verify keeps of it (None when a file did not
    parse), and, when the crate is re-derived and the runs parsed, the crate's reading (its
    times file), the crate's bytes of its actions and whether they could not all be made."""

    read: Stretch
    checks: tuple[list[Finding], dict[str, int]]
    kept: PartitionRuns | None
    crate: tuple[Stretch, bytes, bool] | None


def _partition_job(context: _PartitionContext, task: _PartitionTask) -> _PartitionDone:
    """A job (:mod:`repro.verify._parallel`): read one partition and its runs file (and, in
    stream mode, its checkpoint), tally its runs and make its part of the crate."""
    job = JobReader(context.source, context.limits, task.seen, task.budget)
    checks = context.checks.fresh()
    got = _partition_runs(job.read, context.fp, task.ref, task.first, checks)
    reading = job.stretch()
    crate = None
    if got is not None and context.builder is not None:
        part, _, attempts = got
        window = context.window
        if task.carried and window is not None:
            # Ran by the interrupted study: ended before this one started.
            window = ("", window[0])
        made, broken = crate_partition(job.read, context.builder, window, part, attempts)
        crate = (job.stretch(), made, broken)
    return _PartitionDone(
        reading, (checks.findings, checks.counts), None if got is None else got[1], crate
    )


def _partition_runs(
    read: BundleReader,
    fp: FrozenProtocol,
    ref: PartitionRef,
    first: bool,
    checks: RecordChecks,
) -> tuple[Partition, PartitionRuns, list[Attempt]] | None:
    """Read one partition and its runs file (and, in stream mode, its checkpoint) and tally its
    runs; None when either does not parse. What is held of it is let go once its crate's part
    is made: only the tally is kept."""
    name = layout.DATA + ref.file
    digest = read.sha256(name)
    if digest is not None and digest != ref.sha256:
        read.findings.append(
            Finding(
                "partition-digest",
                name,
                "partition digest differs from the seal",
                ref.sha256,
                digest,
            )
        )
    part, part_sha256 = read.model(name, "partition", Partition)
    if fp.protocol.seeding.mode == "stream":
        check_checkpoint(read, fp.protocol, part, ref.id, first)
    runs_name = layout.runs_file(ref.id)
    got = read_attempts(read, runs_name, part, checks)
    if part is None or part_sha256 is None or got is None:
        return None
    attempts, contained = got
    kept = PartitionRuns(
        file=name,
        runs_file=runs_name,
        id=part.id,
        entries=len(part.entries),
        sha256=part_sha256,
        tally=tally(
            [part], attempts, fp.protocol.retry.max_attempts, checks.contracts, checks.scenarios
        ),
        contained=contained,
    )
    return part, kept, attempts


def read_partitions(
    read: BundleReader,
    stored: Stored,
    fp: FrozenProtocol,
    seal: Seal,
    checks: RecordChecks,
    jobs: Jobs,
    resealing: Resealing,
) -> list[PartitionRuns] | None:
    """Read and tally every sealed partition, each by a job, building the crate's
    re-derivation on the way (and re-sealing the plan by ``resealing`` as they come), and name
    each partitioned file the seal does not name; None when a partition does not read. The
    jobs' findings are taken in sealed order, as one reader reading the partitions in turn
    would make them: a partition's crate part only while the crate is whole."""
    crate = crate_check(read, stored, fp, seal)
    context = _PartitionContext(
        read.source,
        read.limits,
        fp,
        checks.fresh(),
        None if crate is None else crate.builder,
        None if crate is None else crate.window,
    )
    stream = fp.protocol.seeding.mode == "stream"
    told = stored.continuation
    carried = frozenset(() if told is None else (c.partition for c in told.carried))

    def tasks() -> Iterator[_PartitionTask]:
        for ref in seal.partitions:
            names = [layout.DATA + ref.file, *layout.run_files(ref.id, stream)]
            seen = seen_of(read, names)
            first = ref is seal.partitions[0]
            yield _PartitionTask(ref, first, seen, read.budget, ref.id in carried)

    def mentions() -> Iterator[tuple[str, dict[str, Any]]]:
        # Given after the partitions' jobs, to run while the last of them do (their results
        # are taken only if the crate is whole once every partition is read).
        for ref in seal.partitions if crate is not None else ():
            name = layout.times_file(ref.id)
            yield name, seen_of(read, [name])

    count = len(seal.partitions)
    # Here, a job is no round trip, and each partition's is given the budget the partitions
    # before it left.
    most = _CHUNK_TASKS if jobs.processes else 1
    every = itertools.chain(_chunks(tasks(), most), _chunks(mentions(), most))
    chunked = jobs.ordered(_partition_or_mentions, context, every)
    results = itertools.chain.from_iterable(chunked)
    try:
        kept = _merge_partitions(read, itertools.islice(results, count), checks, crate, resealing)
        _not_in_seal(read, seal, stream, layout.records_files(fp.protocol))
        if crate is not None and kept is not None:
            names = [layout.times_file(ref.id) for ref in seal.partitions]
            crate.finish(read, zip(names, cast(Iterator[Mentioned], results), strict=True))
    finally:
        chunked.close()
    return kept


#: Partitions (or times files) one job takes at most, and the bytes of their files past which it
#: takes no more: a job is a round trip to a worker, which many small partitions would each
#: pay, and a seal that names thousands of missing ones made verify's time a round trip each.
_CHUNK_TASKS = 64


_CHUNK_BYTES = 1 << 20


_Task = _PartitionTask | tuple[str, dict[str, Any]]


def _chunks(tasks: Iterable[_Task], most: int) -> Iterator[list[_Task]]:
    """``tasks`` in consecutive groups, each of at most ``most`` tasks, ended by the first task
    that brings the bytes their first reads found to :data:`_CHUNK_BYTES`."""
    chunk: list[_Task] = []
    size = 0
    for task in tasks:
        chunk.append(task)
        seen = task.seen if isinstance(task, _PartitionTask) else task[1]
        size += sum(s.size for s in seen.values() if s is not None)
        if len(chunk) == most or size >= _CHUNK_BYTES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def _partition_or_mentions(
    context: _PartitionContext, chunk: list[_Task]
) -> list[_PartitionDone | Mentioned]:
    """A job (:mod:`repro.verify._parallel`): for each task of ``chunk``, a partition's
    (:func:`_partition_job`), or the mentions of a times file (:func:`times_mentions`)."""
    return [
        _partition_job(context, task)
        if isinstance(task, _PartitionTask)
        else times_mentions((context.source, context.limits), task)
        for task in chunk
    ]


def _merge_partitions(
    read: BundleReader,
    results: Iterable[_PartitionDone | Mentioned],
    checks: RecordChecks,
    crate: CrateCheck | None,
    resealing: Resealing,
) -> list[PartitionRuns] | None:
    """Take each partition's job's findings in sealed order, as one reader reading the
    partitions in turn would make them (a partition's crate part only while the crate is
    whole), and re-seal the plan as they come; what verify keeps of the partitions, or None
    when one did not read."""
    kept: list[PartitionRuns] = []
    complete = True
    for done in results:
        assert isinstance(done, _PartitionDone)
        done.read.into(read)
        checks.merge(*done.checks)
        if done.crate is not None and crate is not None and crate.whole:
            reading, made, broken = done.crate
            reading.into(read)
            crate.add(made, broken)
        if done.kept is None:
            complete = False
        else:
            kept.append(done.kept)
        # Let this partition's crate part go before the next one is made.
        del done
        if complete:
            resealing.advance(kept)
    return kept if complete else None


def _not_in_seal(read: BundleReader, seal: Seal, stream: bool, records: list[str]) -> None:
    """Name each partitioned file the seal does not name (nor the protocol: the ``records``
    files it carries)."""
    expected_files = {layout.SEAL, *records}
    for ref in seal.partitions:
        expected_files |= {layout.DATA + ref.file, *layout.run_files(ref.id, stream)}
    for name in sorted(n for n in read.files if layout.is_partitioned(n)):
        if name not in expected_files:
            read.findings.append(
                Finding("not-in-seal", name, "file not named by the seal", "absent", "present")
            )
