"""``repro study``: freeze, seal, execute serially into a fresh root, derive, bundle."""

from __future__ import annotations

import importlib.metadata
import math
import platform
import random
import time
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol as TypingProtocol

from attrs import frozen

from repro import __version__
from repro.adapters.base import Adapter, Frozen, Session, get_adapter
from repro.bundle import BundleWriter, create_root
from repro.derive import Derived, derive, source_ledger
from repro.disclosure import is_derivation_input, refuse_disclosing_protocol, short_cause
from repro.errors import RunFailed
from repro.judge import contract_sha256
from repro.models import (
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
    refuse_disclosing_protocol(fp)
    adapter = get_adapter(protocol.adapter.name)
    frozen_adapter = adapter.freeze(protocol, options)
    return Prepared(
        protocol, fp, adapter, frozen_adapter, seal(protocol, fp.sha256, frozen_adapter.sources)
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


def run_slot(
    session: Session | None,
    entry: PlanEntry,
    protocol: Protocol,
    contract: str | None,
    open_error: str = "",
) -> Iterator[RunRecord]:
    """Attempt one slot until the first valid attempt or the protocol's attempt limit."""
    if entry.excluded is not None:
        yield _record(
            entry, 1, status="excluded", cause=f"excluded before sealing: {entry.excluded}"
        )
        return
    m = protocol.measure
    for attempt in range(1, protocol.retry.max_attempts + 1):
        if session is None:
            yield _record(entry, attempt, status="failed", cause=open_error or "no-session")
            continue
        try:
            evidence = session.run(entry)
        except RunFailed as exc:
            yield _record(entry, attempt, status="failed", cause=short_cause(exc.cause))
            continue
        rewards = evidence.step_rewards
        measure = measure_of(rewards) if rewards is not None else evidence.reported_measure
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
            attempt,
            status="invalid" if cause else "valid",
            cause=cause,
            measure=measure,
            steps=evidence.steps,
            step_rewards=rewards,
            trace_sha256=evidence.trace_sha256,
            contract_sha256=contract,
        )
        if cause is None:
            return


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


def study(prepared: Prepared, out: Path, progress: Progress) -> StudyResult:
    """Execute a prepared study into the fresh root ``out`` and write the whole bundle."""
    create_root(out)
    p, fp, plan = prepared.protocol, prepared.frozen_protocol, prepared.plan
    writer = BundleWriter(out)
    writer.model("data/protocol.json", fp)
    for ref, part in zip(plan.seal.partitions, plan.partitions, strict=True):
        writer.model(f"data/{ref.file}", part)
    writer.model("data/plans/seal.json", plan.seal)

    started, clock = _utc(), time.perf_counter()
    if p.seeding.mode == "stream":
        # Set once; every run then consumes the same stream in sealed order, in this process.
        random.seed(p.seeding.seed)
    conditions = {c.id: c for c in plan.seal.conditions}
    contracts: dict[str, dict[str, object]] = {}
    records: list[RunRecord] = []
    progress.start(sum(len(part.entries) for part in plan.partitions))
    for part in plan.partitions:
        condition = conditions[part.condition]
        open_error = ""
        session: Session | None
        try:
            session = prepared.adapter.open(p, condition, prepared.frozen)
        except Exception as exc:  # recorded as failed attempts of every slot, never dropped
            session, open_error = None, f"session-open-failed:{type(exc).__name__}"
        contracts[condition.id] = dict(session.contract) if session is not None else {}
        digest = contract_sha256(contracts[condition.id]) if session is not None else None
        with writer.lines(f"data/runs/{part.id}.jsonl") as emit:
            for entry in part.entries:
                for record in run_slot(session, entry, p, digest, open_error):
                    emit(record)
                    records.append(record)
                progress.advance(condition.id)
        if session is not None:
            session.close()
    progress.finish()
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
    ledger = source_ledger(fp, plan.partitions, records, facts)
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
    derived = derive(fp, plan.seal, plan.partitions, records, ledger, inputs)
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
