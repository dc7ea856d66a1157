"""``repro study``: freeze, seal, execute the partitions into a fresh root, derive, bundle.

Partitions execute one after another on one worker process by default (:class:`LocalWorkers`),
on N local worker processes at once, or as tasks on a Dask cluster (:class:`DaskCluster`). In
``per-run`` seeding mode the bundle is byte-identical whichever of these ran it; ``stream`` mode
has one generator stream for the whole plan and so runs on one worker only.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import os
import platform
import signal
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from typing import Protocol as TypingProtocol

import orjson
from attrs import field, frozen

from repro import __version__
from repro import _layout as layout
from repro._bundle.writer import BundleWriter, create_root
from repro._derive.facts import facts_problems
from repro._derive.ledger import source_ledger
from repro._derive.tally import Ended, RunTally, SlotEnd, is_declared_exclusion, runs
from repro._disclosure import refuse_disclosing_protocol, scan, withheld
from repro._execute import cluster
from repro._execute.aside import STOPPED, remove_aside
from repro._execute.attempts import PartitionRun, Workload
from repro._execute.backends import (
    MAX_LOCAL_WORKERS,
    Backend,
    DaskCluster,
    LocalWorkers,
    local_worker_limit,
)
from repro._execute.continuation import LeftToRun, write_account, write_carried
from repro._execute.interrupts import stop_on_signals
from repro._execute.local import run_on_local_workers
from repro._execute.spares import Spares
from repro._execute.stopping import EarlyStop, Watch
from repro._execute.threads import sessions_on_threads
from repro._execute.worker import Job, adapter_target, preloads
from repro._files import write_atomically
from repro._json import canonical
from repro._json.serde import ready, structure, unstructure
from repro._plan.sealing import SealedPlan, conditions_of, seal
from repro._protocol.estimand import ENVIRONMENT_FACTORS, mixed_environments
from repro._protocol.freeze import freeze
from repro._protocol.load import load_protocol
from repro.adapters._base import Adapter, Frozen, get_adapter, targets_in
from repro.errors import (
    EXIT_SIGNAL_BASE,
    EXIT_STUDY_STOPPED,
    BadInput,
    ClusterFailed,
    Interrupted,
    Problem,
    StudyStopped,
)
from repro.models import (
    Aggregates,
    AttemptTimes,
    BackendName,
    Environment,
    FrozenProtocol,
    Ledger,
    Protocol,
    RunRecord,
    Tiers,
)

__all__ = [
    "MAX_LOCAL_WORKERS",
    "Backend",
    "DaskCluster",
    "LocalWorkers",
    "Prestart",
    "Progress",
    "StudyResult",
    "check_backend",
    "lost_slots",
    "prepare",
    "study",
    "study_job",
]

if TYPE_CHECKING:
    from repro._derive.derivation import Derived
    from repro._derive.tally import LossStatus
    from repro._execute.continuation import Carry

T = TypeVar("T")

#: What a study imports only once its runs are done (the derivations, the crate), not before
#: its first run: it imports them while its runs only wait (:func:`_meanwhile`), or after them.
AFTER_RUNS = ("repro._derive.derivation", "repro._derive.crate")

#: Distributions whose versions every environment.json records, beside the adapter's packages.
CORE_PACKAGES = ("attrs", "cattrs", "orjson", "numpy", "scipy", "jsonschema")


class Progress(TypingProtocol):
    """Where the executor reports progress, always from the thread that called :func:`study`,
    however many workers run the partitions."""

    def start(self, total: int) -> None:
        """``total`` slots are about to run."""

    def advance(self, condition: str, end: SlotEnd) -> None:
        """One slot of ``condition`` reached its terminal outcome, ``end`` (valid, failed or
        excluded)."""

    def finish(self) -> None:
        """All slots are done."""


#: Runs a workload's partitions, writes their runs files, and calls back as each slot ends.
_RunPartitions = Callable[..., list[PartitionRun]]
"""How a study's partitions run: ``(workload, writer, slot_done, gate=...)``, as
:func:`repro._execute.local.run_on_local_workers` and
:func:`repro._execute.cluster.run_on_dask` take them."""


@frozen
class Prepared:
    """A study validated, frozen and sealed in memory: nothing is written yet."""

    protocol: Protocol
    frozen_protocol: FrozenProtocol
    adapter: Adapter
    options: Mapping[str, str]
    frozen: Frozen
    plan: SealedPlan
    #: The protocol file's directory, where its module targets are looked up first.
    target_root: Path | None = None
    #: What the protocol may not mean, said before anything runs (an estimand across
    #: environments: :func:`repro._protocol.estimand.mixed_environments`).
    warnings: tuple[str, ...] = ()


@frozen
class StudyResult:
    """What a finished study wrote."""

    root: Path
    derived: Derived
    wall_seconds: float
    #: Session opens lost to a dying worker process and retried (kept with the attempts' times).
    lost_opens: int = 0
    #: How each slot that did not end valid ended (:func:`repro._derive.tally.loss_status`).
    lost_as: Mapping[str, LossStatus] = field(factory=dict)

    @property
    def lost(self) -> int:
        """How many slots that ran did not end valid (:func:`lost_slots` of the ledger)."""
        return lost_slots(self.derived.ledger)


def lost_slots(ledger: Ledger) -> int:
    """How many slots that ran did not end valid (failed, or excluded at run time): the
    ledger's losses but those the protocol excluded before sealing. ``repro study`` (unless
    ``--accept-losses``) and ``repro.study(strict=True)`` refuse a study that lost any."""
    return sum(1 for loss in ledger.losses if not is_declared_exclusion(loss.cause))


def prepare(
    protocol_path: Path,
    options: Mapping[str, str],
    early: Callable[[Protocol, Adapter], None] | None = None,
) -> Prepared:
    """Load, validate, freeze and seal; raises :class:`repro.errors.BadInput` before any write.

    Module targets (a callable policy, an agent class) are looked up first in the protocol
    file's directory, here and in every worker process. ``early`` is called with the protocol
    and its adapter once both are known, before the adapter freezes (which imports the
    simulator): a study starts its worker processes then (:class:`Prestart`)."""
    protocol = load_protocol(protocol_path)
    fp = freeze(protocol)
    adapter = get_adapter(protocol.adapter.name)
    if early is not None:
        early(protocol, adapter)
    root = protocol_path.resolve().parent
    with targets_in(root):
        frozen_adapter = adapter.freeze(protocol, options)
    if (
        protocol.measure.name == "outcome_value"
        and frozen_adapter.facts.measure_inputs != "reported"
    ):
        raise BadInput.at(
            "$.measure.name",
            f"the {protocol.adapter.name} adapter's runs end in step rewards, not in an outcome "
            "object: use the episode_return measure",
            "inconsistent",
        )
    _refuse_contradicting_facts(protocol, frozen_adapter)
    # After the adapter's checks, whose messages say more about a field than this one does.
    refuse_disclosing_protocol(fp)
    _refuse_disclosing_pins(protocol.adapter.name, frozen_adapter)
    mixed = mixed_environments(protocol, getattr(adapter, ENVIRONMENT_FACTORS, ()))
    return Prepared(
        protocol,
        fp,
        adapter,
        dict(options),
        frozen_adapter,
        seal(protocol, fp.sha256, frozen_adapter.sources),
        root,
        () if mixed is None else (mixed,),
    )


def _refuse_contradicting_facts(protocol: Protocol, frozen: Frozen) -> None:
    """Refuse an adapter whose facts or pinned sources contradict the protocol
    (:func:`repro._derive.facts.facts_problems`, the rule verify applies to the ledger): an
    adapter that says it is another, or pins a source the protocol gives it no reason to."""
    problems = facts_problems(protocol, frozen.facts, frozen.sources)
    if problems:
        p = problems[0]
        raise BadInput.of(
            f"the {protocol.adapter.name} adapter's facts contradict the protocol",
            [
                Problem(
                    "$.adapter.name",
                    f"{p.what} is {p.found}, not {p.expected} (source-ledger.json {p.path})",
                    "inconsistent",
                )
            ],
        )


def _refuse_disclosing_pins(adapter: str, frozen: Frozen) -> None:
    """Refuse, before anything is written, an adapter whose facts or pinned sources (which the
    ledger records) would disclose a host path or a credential: a study never writes a bundle
    that its own verify rejects."""
    for what, value in (("facts", frozen.facts), ("pinned sources", frozen.sources)):
        hits = scan("", canonical.dumps(unstructure(value)))
        if hits:
            problem = Problem(
                "$.adapter",
                f"the {adapter} adapter's {what} would write {hits[0].kind} content "
                f"({hits[0].pattern}) into the bundle's source ledger; name pinned files by "
                "their place inside their package or directory",
                "not-allowed",
            )
            raise BadInput(str(problem), [problem])


def _utc() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _versions(names: list[str]) -> dict[str, str]:
    out = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


class Prestart:
    """What a study on ``backend`` does with the worker processes it started before it needed
    them (``spares``: a local study starts its first one before it even imports its machinery)
    once :func:`prepare` knows the protocol and its adapter (:meth:`early`, ``prepare``'s
    ``early``): each is told to import the adapter's modules, and more start, one per local
    worker and at most one per slot, all while the adapter freezes and the plan is sealed. An
    adapter whose sessions run on threads of the study process, a backend the protocol cannot
    run on (:func:`check_backend` refuses it after the preparation) or a cluster gets none: any
    already started is killed. Pass ``spares`` to :func:`study`."""

    def __init__(self, backend: Backend, spares: Spares) -> None:
        self._backend = backend
        self._spares = spares

    def early(self, protocol: Protocol, adapter: Adapter) -> None:
        """Told the protocol and its adapter: preload, and start the rest, or kill them all."""
        backend = self._backend
        if not isinstance(backend, LocalWorkers) or not _on_processes(protocol, backend, adapter):
            self._spares.close()
            return
        modules = preloads(adapter)
        self._spares.preload(modules)
        slots = len(conditions_of(protocol)) * protocol.runs_per_condition
        self._spares.start(min(backend.count, slots) - len(self._spares), modules)


def _on_processes(protocol: Protocol, backend: LocalWorkers, adapter: Adapter) -> bool:
    """Whether ``protocol`` will run on worker processes on ``backend``: its adapter's sessions
    do not run on threads, and :func:`check_backend` accepts the backend."""
    if sessions_on_threads(type(adapter), protocol.seeding.mode != "stream"):
        return False
    try:
        check_backend(protocol, backend, adapter)
    except BadInput:
        return False
    return True


def check_backend(protocol: Protocol, backend: Backend, adapter: object = None) -> None:
    """Refuse, before anything is written, a backend the protocol cannot run on: more than one
    worker, or a cluster, for a ``stream`` study (its one generator stream runs the whole plan
    in sealed order in one process), or a worker count out of range (for ``adapter``'s kind,
    :func:`~repro._execute.backends.local_worker_limit`)."""
    limit = local_worker_limit(adapter, protocol.seeding.mode == "stream")
    if isinstance(backend, LocalWorkers) and not 1 <= backend.count <= limit:
        raise BadInput(f"--workers must be a whole number from 1 to {limit}, not {backend.count}")
    if protocol.seeding.mode != "stream":
        return
    if isinstance(backend, DaskCluster):
        raise BadInput(
            "--scheduler cannot run a protocol with stream seeding: its runs consume one "
            "generator stream in sealed order, in one process; use per-run seeding to run "
            "partitions on a cluster"
        )
    if backend.count > 1:
        raise BadInput(
            f"--workers {backend.count} cannot run a protocol with stream seeding: its runs "
            "consume one generator stream in sealed order, in one process; use --workers 1, "
            "or per-run seeding to run partitions in parallel"
        )


@frozen
class _Runner:
    """How the partitions will run, and what environment.json records of it."""

    run: _RunPartitions
    backend: BackendName
    workers: int


@contextmanager
def _partition_runner(
    backend: Backend, spares: Spares | None, idle: Callable[[], None] | None = None
) -> Iterator[_Runner]:
    """How the partitions will run (local workers call ``idle`` once while their runs only
    wait); for a cluster, connected before the root is created, so an unreachable scheduler
    writes nothing."""
    if isinstance(backend, LocalWorkers):
        run = functools.partial(run_on_local_workers, backend.count, spares=spares, idle=idle)
        yield _Runner(run, "local", backend.count)
        return

    with cluster.connect(backend.address) as client:
        workers = len(client.scheduler_info().get("workers", {}))
        yield _Runner(functools.partial(cluster.run_on_dask, client), "dask", workers)


def study_job(prepared: Prepared, stream: tuple[str, Any] | None) -> Job:
    """What a worker process of the study ``prepared`` is given; in stream mode its generator
    stream starts at ``stream``."""
    return Job(
        adapter_target(prepared.adapter),
        prepared.protocol,
        prepared.options,
        prepared.frozen,
        stream,
        target_root=None if prepared.target_root is None else str(prepared.target_root),
    )


def _workload(prepared: Prepared, carry: Carry | None = None) -> Workload:
    """What the runs need: the partitions of the plan but those ``carry`` carried from an
    interrupted study; in stream mode the stream starts at the protocol's seed, or where the
    carried partitions left it (:func:`repro._execute.continuation.rejoin`)."""
    p, plan = prepared.protocol, prepared.plan
    ids = [ref.id for ref in plan.seal.partitions]
    stream = ("seed", p.seeding.seed) if p.seeding.mode == "stream" else None
    if carry is not None and carry.stream is not None:
        stream = carry.stream
    carried = frozenset() if carry is None else carry.ids
    return Workload(
        job=study_job(prepared, stream),
        timeout=p.retry.timeout_seconds,
        partitions=LeftToRun(plan.partitions, ids, carried) if carried else plan.partitions,
        conditions={c.id: c for c in plan.seal.conditions},
    )


def study(
    prepared: Prepared,
    out: Path,
    progress: Progress,
    backend: Backend = LocalWorkers(),
    spares: Spares | None = None,
    meanwhile: Callable[[], None] | None = None,
    *,
    keep_going: bool = False,
    carry: Carry | None = None,
) -> StudyResult:
    """Execute a prepared study into the fresh root ``out`` on ``backend`` and write the whole
    bundle; local workers take their first processes from ``spares`` (:class:`Prestart`). With
    ``carry`` (:func:`repro._execute.continuation.carry_from`), the partitions an interrupted
    study finished are carried into ``out`` and only the rest run. What
    the study needs only after its runs is imported while they only wait (on local workers),
    and ``meanwhile()`` is called then too: what the caller would otherwise do after them.

    Raises :class:`BadInput` (nothing written) when the backend cannot run the protocol or
    cannot be reached, or ``out`` cannot be created; and :class:`StudyStopped` when a signal,
    an I/O error or a failed cluster stops the study after the root exists, or when its first
    slots all fail with one structural cause (:mod:`repro._execute.stopping`; never with
    ``keep_going``): the root is then left incomplete (no tag manifest), so it never verifies.
    """
    check_backend(prepared.protocol, backend, prepared.adapter)
    versions: dict[str, str] = {}
    idle = _meanwhile(_packages(prepared), versions, meanwhile)
    with _partition_runner(backend, spares, idle) as runner:
        create_root(out)
        return _study_stopping_cleanly(prepared, out, progress, runner, versions, keep_going, carry)


def _packages(prepared: Prepared) -> list[str]:
    """The distributions whose versions environment.json records."""
    sources = prepared.frozen.sources
    return sorted({*CORE_PACKAGES, *(s.name for s in sources if s.kind == "package")})


def _meanwhile(
    packages: list[str], versions: dict[str, str], then: Callable[[], None] | None
) -> Callable[[], None]:
    """What a study does while its runs only wait: import what it needs after them
    (:data:`AFTER_RUNS`), make the converter's hooks for the files it reads back and writes
    after them, read the versions of ``packages`` into ``versions``, then ``then()``. A study
    whose runs never wait does each after its runs."""

    def idle() -> None:
        for module in AFTER_RUNS:
            importlib.import_module(module)
        ready(
            structured=(RunRecord, AttemptTimes),
            unstructured=(Ledger, Environment, Aggregates, Tiers),
        )
        versions.update(_versions(packages))
        if then is not None:
            then()

    return idle


def _study_stopping_cleanly(
    prepared: Prepared,
    out: Path,
    progress: Progress,
    runner: _Runner,
    versions: dict[str, str],
    keep_going: bool = False,
    carry: Carry | None = None,
) -> StudyResult:
    """Run the study into the root it created; turn whatever stops it into one
    :class:`StudyStopped` that says how far it got (and that the root says how it stopped)."""
    total, planned = _slots_and_runs(prepared.plan, carry)
    watch = Watch(planned, armed=not keep_going)
    done = [0]
    try:
        with stop_on_signals():
            try:
                return _study(
                    prepared, out, progress, runner, (done, total), versions, watch, carry
                )
            finally:
                progress.finish()
    except (EarlyStop, Interrupted, OSError, ClusterFailed) as exc:
        _say_stopped(out, exc)
        raise _stopped(exc, out, f"{done[0]} of {total} slots") from None


def _slots_and_runs(plan: SealedPlan, carry: Carry | None = None) -> tuple[int, int]:
    """How many slots the plan has, and how many runs it plans, in one pass (each reading of
    the plan's partitions expands them again from the protocol), but those ``carry`` carried."""
    total = planned = 0
    carried = frozenset() if carry is None else carry.ids
    for ref, part in zip(plan.seal.partitions, plan.partitions, strict=True):
        if ref.id in carried:
            continue
        total += len(part.entries)
        planned += sum(runs(entry) for entry in part.entries)
    return total, planned


def _stopped(
    exc: EarlyStop | Interrupted | OSError | ClusterFailed, out: Path, far: str
) -> StudyStopped:
    """What stopped the study into ``out`` after ``far`` (``"N of M slots"``) ended."""
    if isinstance(exc, EarlyStop):
        return StudyStopped(
            f"stopped early: the first {exc.slots} slots to end all failed with {exc.cause}, a "
            "fault of the harness, the policy or the protocol rather than of one run; "
            f"{far} ended and the rest were not run. Nothing is claimed: "
            f"{out} is incomplete, will not verify, and keeps the records of what ran in "
            "data/runs/ (an unfinished partition's as .NAME.jsonl.partial). Fix the cause and "
            "run the study into a fresh root, or pass --keep-going to run the whole plan "
            "whatever its first slots do",
            EXIT_STUDY_STOPPED,
        )
    if isinstance(exc, Interrupted):
        return _interrupted(exc.signum, out, far)
    if isinstance(exc, OSError):
        return _cannot_write(exc, out, far)
    return StudyStopped(
        f"{exc}, after {far}; {out} is incomplete and will not verify", EXIT_STUDY_STOPPED
    )


def _say_stopped(out: Path, exc: BaseException) -> None:
    """Write into the unfinished root how the study stopped (:data:`STOPPED`), which a study
    that continues it records; nothing when the root cannot be written."""
    if isinstance(exc, Interrupted):
        cause = signal.Signals(exc.signum).name
    else:
        cause = {EarlyStop: "EARLYSTOP", ClusterFailed: "CLUSTER"}.get(type(exc), "IOERROR")
    if (out / layout.TAGMANIFEST).is_file():
        return
    with suppress(OSError):
        (out / STOPPED).parent.mkdir(mode=0o700, exist_ok=True)
        with write_atomically(out / STOPPED) as fh:
            fh.write(canonical.dumps({"cause": cause}))


def _interrupted(signum: int, out: Path, far: str) -> StudyStopped:
    """The study was stopped by the signal ``signum``."""
    name = signal.Signals(signum).name
    if (out / layout.TAGMANIFEST).is_file():  # the signal came after the last file was in place
        return StudyStopped(
            f"stopped by {name} after the bundle was complete; {out} is whole",
            EXIT_SIGNAL_BASE + signum,
        )
    return StudyStopped(
        f"stopped by {name} after {far}; {out} is incomplete and will not verify. "
        f"Continue it into a fresh root: repro study PROTOCOL --out NEW --continue-from {out}",
        EXIT_SIGNAL_BASE + signum,
    )


def _cannot_write(exc: OSError, out: Path, far: str) -> StudyStopped:
    """An I/O error stopped the study: which file of ``out`` it could not write, if known."""
    where = exc.filename
    what = (
        f"cannot write {Path(where).relative_to(out) if _inside(where, out) else 'a file'}"
        if where
        else "an operating-system error"
    )
    return StudyStopped(
        f"{what}: {exc.strerror or type(exc).__name__}, after {far}; "
        f"{out} is incomplete and will not verify",
        EXIT_STUDY_STOPPED,
    )


def _read_back(out: Path, name: str, cls: type[T]) -> Iterator[T]:
    """The values of the JSON Lines file ``name`` that this study wrote into ``out``, one line
    at a time: a study reads its runs and times back, a partition at a time, rather than hold
    every record until the end."""
    with open(out / name, "rb") as fh:
        for line in fh:
            yield structure(orjson.loads(line), cls, what=name)


def _tally(prepared: Prepared, out: Path, facts: Ledger) -> RunTally:
    """The tally of the runs files written into ``out``, one partition at a time."""
    # Lazy: the derivations load while the runs wait, or after them (AFTER_RUNS).
    from repro._derive.derivation import tally_partitions

    return tally_partitions(
        prepared.frozen_protocol,
        (
            (part, _read_back(out, layout.runs_file(part.id), RunRecord))
            for part in prepared.plan.partitions
        ),
        facts,
    )


def _parsed(out: Path, name: str) -> Iterator[dict[str, Any]]:
    """Each line of the JSON Lines file ``name`` that this study wrote into ``out``, parsed but
    not made into its model: what the crate takes of a line is a few of its fields, and the
    model's checks ran as the study made the line (and, for a run record, again as
    :func:`_tally` read it back)."""
    with open(out / name, "rb") as fh:
        for line in fh:
            yield orjson.loads(line)


def _crate(
    prepared: Prepared, out: Path, ledger: Ledger, environment: Environment, continued: bool
) -> Iterator[bytes]:
    """data/ro-crate-metadata.json of the bundle written so far into ``out`` (every other
    payload file, data/continuation.json among them when ``continued``), piece by piece: each
    partition's actions are made from its runs and times files read back, one partition at a
    time."""
    # Lazy: the crate loads while the runs wait, or after them (AFTER_RUNS).
    from repro._derive.crate import ActionFacts, CrateBuilder

    fp, seal = prepared.frozen_protocol, prepared.plan.seal
    names = [ref.id for ref in seal.partitions]
    builder = CrateBuilder(fp, ledger, environment, layout.payload_files(fp, names, continued))
    yield builder.head()
    for name in names:
        times = {t["attempt_id"]: t for t in _parsed(out, layout.times_file(name))}
        yield from builder.partition(
            name,
            (
                ActionFacts(
                    r["attempt_id"],
                    r["slot"],
                    r["condition"],
                    r["status"],
                    r["cause"],
                    structure(times[r["attempt_id"]], AttemptTimes, what=layout.times_file(name)),
                )
                for r in _parsed(out, layout.runs_file(name))
                if r["attempt_id"] in times
            ),
        )
    ran = (t["attempt_id"] for name in names for t in _parsed(out, layout.times_file(name)))
    yield from builder.tail(ran)


def _inside(path: object, root: Path) -> bool:
    return isinstance(path, str | os.PathLike) and Path(path).is_relative_to(root)


def _study(
    prepared: Prepared,
    out: Path,
    progress: Progress,
    runner: _Runner,
    counts: tuple[list[int], int],
    versions: dict[str, str],
    watch: Watch,
    carry: Carry | None = None,
) -> StudyResult:
    """Write the plan, carry what ``carry`` carries, run the other partitions, derive, write
    the rest of the bundle; ``counts``: the slots ended so far and the slots to run;
    ``versions``: the packages' versions if they were read while the runs waited."""
    (done, total) = counts
    writer = BundleWriter(out)
    _write_plan(writer, prepared)
    carried = [] if carry is None else write_carried(writer, carry)
    started, clock = _utc(), time.perf_counter()
    progress.start(total)

    def slot_done(condition: str, end: Ended) -> None:
        done[0] += 1
        progress.advance(condition, end.outcome)
        watch.see(end)

    # What is kept of each partition once written; its records are read back below.
    work = _workload(prepared, carry)
    results = carried + runner.run(work, writer, slot_done, gate=watch.gate)
    wall = time.perf_counter() - clock
    ran = _Ran(runner, versions, started, wall)
    runs, derived = _after_runs(prepared, writer, results, ran, carry)
    lost_opens = sum(result.lost_opens for result in results)
    return StudyResult(
        root=out, derived=derived, wall_seconds=wall, lost_opens=lost_opens, lost_as=runs.lost_as
    )


def _write_plan(writer: BundleWriter, prepared: Prepared) -> None:
    """Begin the bundle with what is fixed before any run: the protocol, the partitions and
    the seal."""
    plan = prepared.plan
    writer.begin()
    writer.model(layout.PROTOCOL, prepared.frozen_protocol)
    for ref, part in zip(plan.seal.partitions, plan.partitions, strict=True):
        writer.model(f"data/{ref.file}", part)
    writer.model(layout.SEAL, plan.seal)
    # The recorded adapter's records files, when the protocol carries them: fixed before any
    # run.
    carried = getattr(prepared.adapter, "carried", None)
    for name, data in carried(prepared.protocol) if callable(carried) else ():
        writer.write(name, data)


@frozen
class _Ran:
    """How the runs went, as environment.json records it."""

    runner: _Runner
    #: The packages' versions if they were read while the runs waited (else empty).
    versions: dict[str, str]
    started: str
    wall: float


def _after_runs(
    prepared: Prepared,
    writer: BundleWriter,
    results: list[PartitionRun],
    ran: _Ran,
    carry: Carry | None = None,
) -> tuple[RunTally, Derived]:
    """Write what follows the runs: the ledger and environment (derivation inputs: written,
    and so scanned, before derive), a continued study's account of what it carried, the
    derived files, the crate, and the tag files."""
    # Lazy: the derivations load while the runs wait, or after them (AFTER_RUNS).
    from repro._derive.derivation import derive

    fp, out = prepared.frozen_protocol, writer.root
    facts = Ledger(
        schema="repro.source-ledger/1",
        protocol_sha256=fp.sha256,
        adapter=prepared.frozen.facts,
        sources=prepared.frozen.sources,
        contracts={result.condition: result.contract for result in results},
        citation=None,
        disagreements=(),
        losses=(),
    )
    runs = _tally(prepared, out, facts)
    ledger = source_ledger(fp, runs, facts)
    writer.model(layout.LEDGER, ledger)
    environment = _environment(prepared, ran)
    writer.model(layout.ENVIRONMENT, environment)
    continuation, problems = (
        (None, []) if carry is None else write_account(writer, carry, prepared.plan.seal)
    )
    inputs = [d for d in writer.disclosures if layout.is_derivation_input(d.file)]
    derived = derive(
        fp,
        prepared.plan.seal,
        runs,
        ledger,
        inputs,
        continuation=continuation,
        continuation_problems=problems,
    )
    _write_derived(writer, derived)
    writer.stream(layout.CRATE, _crate(prepared, out, ledger, environment, carry is not None))
    remove_aside(out)
    writer.finish(
        {
            "Bag-Software-Agent": f"repro {__version__}",
            "Bagging-Date": ran.started[:10],
            "External-Identifier": f"sha256:{fp.sha256}",
            layout.DESCRIPTION_LABEL: prepared.protocol.title,
            layout.BAGIT_PROFILE_LABEL: layout.BAGIT_PROFILE,
        }
    )
    return runs, derived


def _environment(prepared: Prepared, ran: _Ran) -> Environment:
    """environment.json, finished now. What is recorded of this machine names no one and no
    machine: a value that would (a kernel release or a local version label holding a host
    name) is withheld."""

    def kept(value: str) -> str:
        return withheld(layout.ENVIRONMENT, value)

    return Environment(
        schema="repro.environment/1",
        repro_version=__version__,
        python=kept(platform.python_version()),
        implementation=kept(platform.python_implementation()),
        platform=kept(f"{platform.system()} {platform.release()}"),
        machine=kept(platform.machine()),
        packages={
            name: kept(version)
            for name, version in (ran.versions or _versions(_packages(prepared))).items()
        },
        started_utc=ran.started,
        finished_utc=_utc(),
        wall_seconds=round(ran.wall, 3),
        backend=ran.runner.backend,
        workers=ran.runner.workers,
    )


def _write_derived(writer: BundleWriter, derived: Derived) -> None:
    """The derived files: aggregates, tiers, and those the protocol calls for, then the
    report."""
    writer.model(layout.AGGREGATES, derived.aggregates)
    writer.model(layout.TIERS, derived.tiers)
    if derived.scores is not None:
        writer.model(layout.SCORES, derived.scores)
    if derived.contrasts is not None:
        writer.model(layout.CONTRASTS, derived.contrasts)
    if derived.rl is not None:
        writer.model(layout.RL_AGGREGATES, derived.rl)
    writer.write(layout.REPORT, derived.report.encode())
