"""``repro study``: freeze, seal, execute serially into a fresh root, derive, bundle."""

from __future__ import annotations

import importlib.metadata
import math
import os
import platform
import signal
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from typing import Protocol as TypingProtocol

from attrs import frozen

from repro import __version__
from repro.adapters.base import Adapter, Evidence, Frozen, get_adapter
from repro.bundle import TAGMANIFEST, BundleWriter, create_root
from repro.derive import Derived, derive, source_ledger, tally_records
from repro.disclosure import is_derivation_input, refuse_disclosing_protocol
from repro.errors import EXIT_STUDY_STOPPED, Interrupted, StudyStopped
from repro.interrupts import stop_on_signals
from repro.judge import contract_sha256
from repro.models import (
    Condition,
    Environment,
    FrozenProtocol,
    Ledger,
    PlanEntry,
    Protocol,
    RunRecord,
)
from repro.outcomes import attempt_id, measure_of
from repro.plan import SealedPlan, seal
from repro.protocol import freeze, load_protocol
from repro.worker import (
    Failure,
    Invalid,
    Job,
    Worker,
    WorkerLost,
    adapter_target,
    checkpoint_of,
)

__all__ = ["Progress", "StudyResult", "prepare", "run_slot", "study"]

#: Distributions whose versions every environment.json records, beside the adapter's packages.
CORE_PACKAGES = ("attrs", "cattrs", "orjson", "numpy", "scipy", "jsonschema")


class Progress(TypingProtocol):
    """Where the executor reports progress."""

    def start(self, total: int) -> None:
        """``total`` slots are about to run."""

    def advance(self, condition: str) -> None:
        """One slot of ``condition`` reached its terminal outcome."""

    def finish(self) -> None:
        """All slots are done."""


@frozen
class Prepared:
    """A study validated, frozen and sealed in memory: nothing is written yet."""

    protocol: Protocol
    frozen_protocol: FrozenProtocol
    adapter: Adapter
    options: Mapping[str, str]
    frozen: Frozen
    plan: SealedPlan


@frozen
class StudyResult:
    """What a finished study wrote."""

    root: Path
    derived: Derived
    wall_seconds: float


def prepare(protocol_path: Path, options: Mapping[str, str]) -> Prepared:
    """Load, validate, freeze and seal; raises :class:`repro.errors.BadInput` before any write."""
    protocol = load_protocol(protocol_path)
    fp = freeze(protocol)
    adapter = get_adapter(protocol.adapter.name)
    frozen_adapter = adapter.freeze(protocol, options)
    # After the adapter's checks, whose messages say more about a field than this one does.
    refuse_disclosing_protocol(fp)
    return Prepared(
        protocol,
        fp,
        adapter,
        dict(options),
        frozen_adapter,
        seal(protocol, fp.sha256, frozen_adapter.sources),
    )


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
    }
    base.update(fields)
    return RunRecord(**base)  # type: ignore[arg-type]


#: What one attempt yields: well-typed evidence, or a failed or invalid attempt with its cause.
AttemptResult = Evidence | Failure | Invalid


def run_slot(
    entry: PlanEntry,
    protocol: Protocol,
    contract: Callable[[], str | None],
    attempt: Callable[[PlanEntry], AttemptResult],
) -> Iterator[RunRecord]:
    """Attempt one slot until the first valid attempt or the protocol's attempt limit.

    ``attempt`` runs the entry once; ``contract`` gives the digest of the session's contract
    facts at the time of each attempt.
    """
    if entry.excluded is not None:
        yield _record(
            entry, 1, status="excluded", cause=f"excluded before sealing: {entry.excluded}"
        )
        return
    m = protocol.measure
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
        rewards = result.step_rewards
        measure = measure_of(rewards) if rewards is not None else result.reported_measure
        cause = None
        if rewards is not None and not all(math.isfinite(r) for r in rewards):
            cause, measure, rewards = "non-finite-step-reward", None, None
        elif measure is None or not math.isfinite(measure):
            cause, measure = "no-finite-measure", None
        elif m.minimum is not None and measure < m.minimum:
            cause = "measure-below-minimum"
        elif m.maximum is not None and measure > m.maximum:
            cause = "measure-above-maximum"
        yield _record(
            entry,
            number,
            status="invalid" if cause else "valid",
            cause=cause,
            measure=measure,
            steps=result.steps,
            step_rewards=rewards,
            trace_sha256=result.trace_sha256,
            contract_sha256=contract(),
        )
        if cause is None:
            return


class _ConditionSession:
    """One condition's session in the worker: opened on first use, opened again after the
    worker was lost. A session that fails to open fails every later attempt of the condition
    with the same cause, without trying again."""

    def __init__(self, worker: Worker, condition: Condition) -> None:
        self._worker = worker
        self._condition = condition
        self._open = False
        self._open_error: str | None = None
        self._digest: str | None = None
        #: The contract facts of the first session that opened; the ledger records them.
        self.contract: dict[str, Any] | None = None

    def _ensure_open(self) -> Failure | None:
        if self._open_error is not None:
            return Failure(self._open_error)
        if self._open:
            return None
        try:
            answer = self._worker.request("open", self._condition)
        except WorkerLost as lost:
            self._open_error = f"session-open-failed:{lost.cause}"
            return Failure(self._open_error)
        if answer[0] != "opened":
            self._open_error = str(answer[1])
            return Failure(self._open_error)
        self._open = True
        self._digest = contract_sha256(answer[1])
        if self.contract is None:
            self.contract = answer[1]
        return None

    def digest(self) -> str | None:
        """The contract digest of the session now open."""
        return self._digest

    def attempt(self, entry: PlanEntry) -> AttemptResult:
        """Run ``entry`` once in the worker."""
        failure = self._ensure_open()
        if failure is not None:
            return failure
        try:
            answer = self._worker.request("run", entry)
        except WorkerLost as lost:
            self._open = False
            return Failure(lost.cause)
        kind, value = answer
        if kind == "evidence":
            evidence: Evidence = value
            return evidence
        if kind == "invalid":
            return Invalid(str(value))
        return Failure(str(value))

    def close(self) -> None:
        """Close the session if it is open; a worker lost while closing is let go."""
        if self._open:
            self._open = False
            with suppress(WorkerLost):
                self._worker.request("close")


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


def _execute(
    prepared: Prepared, writer: BundleWriter, progress: Progress, done: list[int]
) -> tuple[list[RunRecord], dict[str, dict[str, object]]]:
    """Run every slot in sealed order in one worker process; count finished slots in ``done``."""
    p, plan = prepared.protocol, prepared.plan
    stream = ("seed", p.seeding.seed) if p.seeding.mode == "stream" else None
    worker = Worker(
        Job(adapter_target(prepared.adapter), p, prepared.options, prepared.frozen, stream),
        p.retry.timeout_seconds,
    )
    conditions = {c.id: c for c in plan.seal.conditions}
    contracts: dict[str, dict[str, object]] = {}
    records: list[RunRecord] = []
    try:
        for part in plan.partitions:
            state = worker.stream_state
            if state is not None:  # stream mode: where replay of this partition starts
                writer.model(f"data/runs/{part.id}.checkpoint.json", checkpoint_of(part.id, state))
            session = _ConditionSession(worker, conditions[part.condition])
            with writer.lines(f"data/runs/{part.id}.jsonl") as emit:
                for entry in part.entries:
                    for record in run_slot(entry, p, session.digest, session.attempt):
                        emit(record)
                        records.append(record)
                    done[0] += 1
                    progress.advance(part.condition)
            session.close()
            contracts[part.condition] = session.contract or {}
    finally:
        worker.stop()
    return records, contracts


def study(prepared: Prepared, out: Path, progress: Progress) -> StudyResult:
    """Execute a prepared study into the fresh root ``out`` and write the whole bundle.

    Raises :class:`BadInput` (nothing written) when ``out`` cannot be created, and
    :class:`StudyStopped` when a signal or an I/O error stops the study after the root exists:
    the root is then left incomplete (no tag manifest), so it never verifies.
    """
    create_root(out)
    total = sum(len(part.entries) for part in prepared.plan.partitions)
    done = [0]
    try:
        with stop_on_signals():
            try:
                return _study(prepared, out, progress, done, total)
            finally:
                progress.finish()
    except Interrupted as exc:
        signum = exc.signum
        name = signal.Signals(signum).name
        if (out / TAGMANIFEST).is_file():  # the signal came after the last file was in place
            raise StudyStopped(
                f"stopped by {name} after the bundle was complete; {out} is whole", 128 + signum
            ) from None
        raise StudyStopped(
            f"stopped by {name} after {done[0]} of {total} slots; {out} is incomplete and will "
            "not verify (repro never resumes: run the study again into a fresh root)",
            128 + signum,
        ) from None
    except OSError as exc:
        where = exc.filename
        what = (
            f"cannot write {Path(where).relative_to(out) if _inside(where, out) else 'a file'}"
            if where
            else "an operating-system error"
        )
        raise StudyStopped(
            f"{what}: {exc.strerror or type(exc).__name__}, after {done[0]} of {total} slots; "
            f"{out} is incomplete and will not verify",
            EXIT_STUDY_STOPPED,
        ) from None


def _inside(path: object, root: Path) -> bool:
    return isinstance(path, str | os.PathLike) and Path(path).is_relative_to(root)


def _study(
    prepared: Prepared, out: Path, progress: Progress, done: list[int], total: int
) -> StudyResult:
    p, fp, plan = prepared.protocol, prepared.frozen_protocol, prepared.plan
    writer = BundleWriter(out)
    writer.model("data/protocol.json", fp)
    for ref, part in zip(plan.seal.partitions, plan.partitions, strict=True):
        writer.model(f"data/{ref.file}", part)
    writer.model("data/plans/seal.json", plan.seal)

    started, clock = _utc(), time.perf_counter()
    progress.start(total)
    records, contracts = _execute(prepared, writer, progress, done)
    wall = time.perf_counter() - clock

    facts = Ledger(
        schema="repro.source-ledger/1",
        protocol_sha256=fp.sha256,
        adapter=prepared.frozen.facts,
        sources=prepared.frozen.sources,
        contracts=contracts,
        citation=None,
        disagreements=(),
        losses=(),
    )
    # The ledger and environment are derivation inputs: written, and so scanned, before derive.
    runs = tally_records(fp, plan.partitions, records, facts)
    ledger = source_ledger(fp, runs, facts)
    writer.model("data/source-ledger.json", ledger)
    packages = [*CORE_PACKAGES, *(s.name for s in prepared.frozen.sources if s.kind == "package")]
    writer.model(
        "data/environment.json",
        Environment(
            schema="repro.environment/1",
            repro_version=__version__,
            python=platform.python_version(),
            implementation=platform.python_implementation(),
            platform=f"{platform.system()} {platform.release()}",
            machine=platform.machine(),
            packages=_versions(sorted(set(packages))),
            started_utc=started,
            finished_utc=_utc(),
            wall_seconds=round(wall, 3),
        ),
    )
    inputs = [d for d in writer.disclosures if is_derivation_input(d.file)]
    derived = derive(fp, plan.seal, runs, ledger, inputs)
    writer.model("data/aggregates.json", derived.aggregates)
    writer.model("data/tiers.json", derived.tiers)
    writer.write("data/validation-report.md", derived.report.encode())
    writer.finish(
        {
            "Bag-Software-Agent": f"repro {__version__}",
            "Bagging-Date": started[:10],
            "External-Identifier": f"sha256:{fp.sha256}",
            "External-Description": p.title,
        }
    )
    return StudyResult(root=out, derived=derived, wall_seconds=wall)
