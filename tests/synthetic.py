"""Synthetic bundles of any size, written the way ``repro study`` writes a bundle but without a
simulator, for the memory test and the verify benchmarks (``benchmarks/verify_*.py``).

Every slot has one valid attempt whose step rewards are drawn out of CAGE-2's reward values
from one generator seeded once, as in a ``stream`` study, with a checkpoint of its state at
each partition's start. The plan, the ledger, the environment and the derived files come from
repro's own functions, and every file from :class:`repro._bundle.writer.BundleWriter`, so a
synthetic bundle verifies clean.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

from repro._bundle.writer import BundleWriter, create_root
from repro._derive.crate import ActionFacts, CrateBuilder
from repro._derive.derivation import derive
from repro._derive.ledger import source_ledger
from repro._derive.tally import Attempt, attempt_id, measure_of, merge, tally
from repro._derive.tiers import contract_digests
from repro._json.serde import structure
from repro._layout import CRATE, is_derivation_input, payload_files
from repro._plan.sealing import seal
from repro._plan.streams import checkpoint_of
from repro._protocol.freeze import freeze
from repro.models import (
    AdapterFacts,
    AttemptTimes,
    Environment,
    Ledger,
    Protocol,
    RunRecord,
    Source,
)

__all__ = ["synthetic_bundle"]

#: Blue's reward per step in CAGE-2 takes few values; these make episode returns like its own.
REWARDS = (0.0, 0.0, -0.1, -1.0, -1.1, -2.1, -3.1, -13.1)


def _protocol(conditions: int, runs_per_condition: int, seed: int) -> Protocol:
    return structure(
        {
            "schema": "repro.protocol/1",
            "id": "synthetic",
            "title": "Synthetic study",
            "adapter": {"name": "synthetic", "options": {}},
            "matrix": [{"name": "arm", "levels": [f"arm{i}" for i in range(conditions)]}],
            "participants": [{"id": "sleep", "kind": "constant", "params": {"action": 0}}],
            "runs_per_condition": runs_per_condition,
            "seeding": {"mode": "stream", "seed": seed},
            "measure": {"name": "episode_return", "description": "sum of step rewards"},
            "estimand": "sum-of-condition-means",
            "interval": {"method": "normal", "level": 0.95},
        },
        Protocol,
        what="synthetic protocol",
    )


#: When every synthetic attempt ran.
_WHEN = "2026-01-01T00:00:00.000000Z"


def synthetic_bundle(
    root: Path, conditions: int, runs_per_condition: int, steps: int, seed: int = 153
) -> Path:
    """Write a bundle of ``conditions`` x ``runs_per_condition`` runs of ``steps`` steps each,
    drawn from a generator seeded with ``seed``, into the fresh root ``root`` and return it."""
    protocol = _protocol(conditions, runs_per_condition, seed)
    fp = freeze(protocol)
    sources = (Source(kind="package", role="simulator", name="synthetic", version="1"),)
    plan = seal(protocol, fp.sha256, sources)
    facts = Ledger(
        schema="repro.source-ledger/1",
        protocol_sha256=fp.sha256,
        adapter=AdapterFacts(
            name="synthetic",
            version="1",
            observation_scope="full",
            observation_note="every step is drawn from a seeded generator",
            measure_inputs="step-rewards",
        ),
        sources=sources,
        contracts={c.id: {"steps": steps} for c in plan.seal.conditions},
        citation=None,
        disagreements=(),
        losses=(),
    )
    contracts = contract_digests(facts)
    create_root(root)
    writer = BundleWriter(root)
    writer.model("data/protocol.json", fp)
    for ref, part in zip(plan.seal.partitions, plan.partitions, strict=True):
        writer.model(f"data/{ref.file}", part)
    writer.model("data/plans/seal.json", plan.seal)
    environment = Environment(
        schema="repro.environment/1",
        repro_version="0",
        python="3",
        implementation="CPython",
        platform="synthetic",
        machine="synthetic",
        packages={},
        started_utc="2026-01-01T00:00:00Z",
        finished_utc="2026-01-01T00:00:00Z",
        wall_seconds=0.0,
    )
    # The crate's head and actions read only the ledger's adapter facts and sources, which the
    # final ledger shares with ``facts``.
    crate = CrateBuilder(fp, facts, environment, payload_files(fp, [p.id for p in plan.partitions]))
    pieces = [crate.head()]
    rng = random.Random(seed)
    tallies = []
    for part in plan.partitions:
        state = ("state", (rng.getstate(), None))
        writer.model(f"data/runs/{part.id}.checkpoint.json", checkpoint_of(part.id, state))
        attempts = []
        with writer.lines(f"data/runs/{part.id}.jsonl") as emit:
            for entry in part.entries:
                rewards = tuple(rng.choices(REWARDS, k=steps))
                record = RunRecord(
                    attempt_id=attempt_id(entry.slot, 1),
                    slot=entry.slot,
                    condition=entry.condition,
                    attempt=1,
                    predecessor=None,
                    status="valid",
                    cause=None,
                    measure=measure_of(rewards),
                    steps=steps,
                    step_rewards=rewards,
                    trace_sha256=hashlib.sha256(entry.slot.encode()).hexdigest(),
                    contract_sha256=contracts[entry.condition],
                )
                emit(record)
                attempts.append(Attempt.of(record))
        times = [AttemptTimes(a.attempt_id, _WHEN, _WHEN) for a in attempts]
        with writer.lines(f"data/times/{part.id}.jsonl") as emit:
            for line in times:
                emit(line)
        pieces.extend(
            crate.partition(
                part.id,
                (
                    ActionFacts(a.attempt_id, a.slot, a.condition, a.status, a.cause, t)
                    for a, t in zip(attempts, times, strict=True)
                ),
            )
        )
        tallies.append(tally([part], attempts, protocol.retry.max_attempts, contracts))
    runs = merge(tallies)
    ledger = source_ledger(fp, runs, facts)
    writer.model("data/source-ledger.json", ledger)
    writer.model("data/environment.json", environment)
    inputs = [d for d in writer.disclosures if is_derivation_input(d.file)]
    derived = derive(fp, plan.seal, runs, ledger, inputs)
    writer.model("data/aggregates.json", derived.aggregates)
    writer.model("data/tiers.json", derived.tiers)
    writer.write("data/validation-report.md", derived.report.encode())
    ran = (attempt_id(e.slot, 1) for part in plan.partitions for e in part.entries)
    writer.write(CRATE, b"".join([*pieces, *crate.tail(ran)]))
    writer.finish({"External-Description": protocol.title})
    return root
