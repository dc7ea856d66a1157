"""The reproduction class and the six equivalence tiers, as pure functions of bundle data."""

from __future__ import annotations

from collections.abc import Sequence

from repro._derive.ledger import contract_digests, contract_sha256
from repro._derive.reproduction import reproduction
from repro._derive.tally import RunTally
from repro._disclosure import FileHits
from repro._plan.sealing import sources_sha256
from repro.models import (
    Aggregates,
    FrozenProtocol,
    Ledger,
    Protocol,
    Seal,
    Tier,
    Tiers,
)

__all__ = [
    "MAX_DISCLOSURES_LISTED",
    "authored_source",
    "contract",
    "contract_digests",
    "contract_sha256",
    "disclosure",
    "execution_control",
    "outcome_evaluation",
    "state_observation",
    "tiers",
]

#: At most this many disclosure hits are named one by one in the tier's evidence.
MAX_DISCLOSURES_LISTED = 10


# --------------------------------------------------------------------------- the six tiers


def authored_source(seal: Seal, ledger: Ledger) -> Tier:
    """authored-source: the ledger's sources are those sealed with the plan (fail otherwise),
    and at least one is pinned by file digest (weakened when all are package versions)."""
    evidence = tuple(
        f"{s.kind} {s.name} ({s.role}): "
        + (f"sha256 {s.sha256}, {s.size} bytes" if s.kind == "file" else f"version {s.version}")
        for s in ledger.sources
    )
    if sources_sha256(ledger.sources) != seal.sources_sha256:
        reason = "the ledger's sources differ from those sealed with the plan"
        return Tier("authored-source", "fail", evidence, reason)
    if not any(s.kind == "file" for s in ledger.sources):
        reason = "sources are pinned by package version only, no file digest"
        return Tier("authored-source", "weakened", evidence, reason)
    return Tier("authored-source", "pass", evidence, None)


def contract(runs: RunTally, ledger: Ledger) -> Tier:
    """contract: every run saw its condition's contract facts (fail otherwise), and the adapter
    recorded facts for every condition (weakened otherwise)."""
    mismatched = runs.contract_mismatches
    evidence = tuple(
        f"{c}: " + ", ".join(f"{k}={v}" for k, v in sorted(f.items()))
        for c, f in sorted(ledger.contracts.items())
    )
    if mismatched.count:
        reason = (
            f"{mismatched.count} run(s) saw other contract facts than their condition, "
            f"first {mismatched.first[0]}"
        )
        return Tier("contract", "fail", evidence, reason)
    if not ledger.contracts or not all(ledger.contracts.values()):
        reason = "the adapter recorded no contract facts for some condition"
        return Tier("contract", "weakened", evidence, reason)
    return Tier("contract", "pass", evidence, None)


def execution_control(protocol: Protocol, runs: RunTally, ledger: Ledger) -> Tier:
    """execution-control: the runs join the sealed plan without a problem (fail otherwise), were
    executed under the seal (weakened otherwise: an adapter that read them from a record says
    so, ``recorded_from``), and no slot failed after exhausting its attempts (weakened
    otherwise)."""
    seeding = protocol.seeding
    seed_note = f"seeding {seeding.mode}" + (
        f" ({seeding.statement})" if seeding.statement else f" (master seed {seeding.seed})"
    )
    evidence = (
        f"{runs.slots} slots sealed in {runs.partitions} partitions; "
        f"{runs.valid} valid, {runs.failed} failed, {runs.excluded} excluded",
        f"{runs.attempts} attempt records; at most {protocol.retry.max_attempts} attempt(s) "
        "per slot",
        seed_note + ("; one process, sealed order" if seeding.mode == "stream" else ""),
    )
    problems = runs.plan_join_problems
    if problems.count:
        first = problems.first[0]
        reason = f"{problems.count} join problem(s), first: {first.where}: {first.what}"
        return Tier("execution-control", "fail", evidence, reason)
    recorded = ledger.adapter.recorded_from
    if recorded is not None:
        lost = f"; {runs.failed} slot(s) failed" if runs.failed else ""
        return Tier("execution-control", "weakened", evidence, recorded + lost)
    if runs.failed:
        reason = f"{runs.failed} slot(s) failed after exhausting their attempts"
        return Tier("execution-control", "weakened", evidence, reason)
    return Tier("execution-control", "pass", evidence, None)


def state_observation(runs: RunTally, ledger: Ledger) -> Tier:
    """state-observation: weakened when the adapter observes less than the full state, or when
    a valid run carries no trace digest."""
    adapter, traced, valid = ledger.adapter, runs.traced, runs.valid
    evidence = (
        f"observation scope {adapter.observation_scope}: {adapter.observation_note}",
        f"{traced} of {valid} valid runs carry a trace digest",
    )
    if adapter.observation_scope != "full":
        return Tier("state-observation", "weakened", evidence, adapter.observation_note)
    if traced != valid:
        reason = f"{valid - traced} valid run(s) have no trace digest"
        return Tier("state-observation", "weakened", evidence, reason)
    return Tier("state-observation", "pass", evidence, None)


def outcome_evaluation(protocol: Protocol, runs: RunTally, ledger: Ledger) -> Tier:
    """outcome-evaluation: no measure differs from its step rewards (fail otherwise), and every
    valid measure was recomputed from them (weakened otherwise)."""
    recomputed, wrong, valid = runs.recomputed, runs.wrong_measures, runs.valid
    evidence = (
        f"measure {protocol.measure.name}: {protocol.measure.description}",
        f"{recomputed} of {valid} valid measures recomputed from their step rewards",
        f"estimand {protocol.estimand}, {protocol.interval.method} interval at level "
        f"{protocol.interval.level}",
    )
    if wrong.count:
        reason = f"{wrong.count} measure(s) differ from their step rewards, first {wrong.first[0]}"
        return Tier("outcome-evaluation", "fail", evidence, reason)
    if recomputed != valid or ledger.adapter.measure_inputs != "step-rewards":
        reason = "some measures are taken as reported by the adapter, not recomputed"
        return Tier("outcome-evaluation", "weakened", evidence, reason)
    return Tier("outcome-evaluation", "pass", evidence, None)


def _disclosure_evidence(protocol: Protocol, ledger: Ledger) -> tuple[str, ...]:
    """What the disclosure tier states in any case: the citation, the disagreements and losses
    recorded, and what was scanned."""
    cite = protocol.published.citation if protocol.published else None
    where = (
        f"{cite.title} <{cite.url}>" + (f" {cite.locator}" if cite.locator else "")
        if cite
        else "none declared"
    )
    return (
        f"published figures: {where}",
        f"{len(protocol.disagreements)} source disagreement(s) recorded",
        f"{len(ledger.losses)} loss(es) and exclusion(s) listed with their causes",
        "protocol, plan, runs, source ledger and environment scanned for host paths, "
        "tracebacks and credential-looking strings",
    )


def disclosure(protocol: Protocol, ledger: Ledger, disclosures: Sequence[FileHits]) -> Tier:
    """disclosure: any scan hit in an input file fails it, the earliest few named one by one;
    a citation without a commit or locator weakens it."""
    evidence = _disclosure_evidence(protocol, ledger)
    hit = [h for h in disclosures if h.count]
    count = sum(h.count for h in hit)
    if count:
        earliest = sorted(d for h in hit for d in h.first)
        listed = [d.describe() for d in earliest[:MAX_DISCLOSURES_LISTED]]
        if count > MAX_DISCLOSURES_LISTED:
            listed.append(f"{count - MAX_DISCLOSURES_LISTED} further hit(s)")
        kinds = ", ".join(sorted({kind for h in hit for kind in h.kinds}))
        reason = (
            f"{count} hit(s) in {len({h.file for h in hit})} input file(s): "
            f"the bundle discloses {kinds} content"
        )
        return Tier("disclosure", "fail", (*evidence, *listed), reason)
    cite = protocol.published.citation if protocol.published else None
    if cite is not None and cite.commit is None and cite.locator is None:
        reason = "the citation names no commit or locator for the published figures"
        return Tier("disclosure", "weakened", evidence, reason)
    return Tier("disclosure", "pass", evidence, None)


def tiers(
    frozen_protocol: FrozenProtocol,
    seal: Seal,
    runs: RunTally,
    ledger: Ledger,
    agg: Aggregates,
    disclosures: Sequence[FileHits],
) -> Tiers:
    """tiers.json: the six tiers and the reproduction class. ``runs`` is the tally of the runs
    against the sealed plan, with contract digests from ``ledger``; ``disclosures`` are the scan
    hits in the input files, file by file (each file's first few and their count), and any one
    fails the disclosure tier."""
    p = frozen_protocol.protocol
    return Tiers(
        schema="repro.tiers/1",
        protocol_sha256=frozen_protocol.sha256,
        tiers=(
            authored_source(seal, ledger),
            contract(runs, ledger),
            execution_control(p, runs, ledger),
            state_observation(runs, ledger),
            outcome_evaluation(p, runs, ledger),
            disclosure(p, ledger, disclosures),
        ),
        reproduction=reproduction(frozen_protocol, agg, runs.failed),
    )
