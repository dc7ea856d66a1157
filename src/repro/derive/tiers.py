"""The reproduction class and the six equivalence tiers, as pure functions of bundle data."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from repro.derive.disclosure import FileHits
from repro.derive.tally import RunTally
from repro.json import canonical
from repro.models import (
    Aggregates,
    FigureComparison,
    FrozenProtocol,
    IntervalValue,
    Ledger,
    Protocol,
    Published,
    Reproduction,
    Seal,
    Tier,
    Tiers,
)
from repro.plan.sealing import sources_sha256

__all__ = [
    "MAX_DISCLOSURES_LISTED",
    "authored_source",
    "contract",
    "contract_digests",
    "contract_sha256",
    "disclosure",
    "execution_control",
    "outcome_evaluation",
    "reproduction",
    "rounded",
    "state_observation",
    "tiers",
]

#: At most this many disclosure hits are named one by one in the tier's evidence.
MAX_DISCLOSURES_LISTED = 10


def rounded(value: float, decimals: int) -> str:
    """``value`` at ``decimals`` places, rounding the exact binary value half to even; a negative
    zero prints as zero."""
    text = format(value, f".{decimals}f")
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def contract_sha256(facts: dict[str, object]) -> str:
    """Digest of one condition's contract facts, as each run records it."""
    return canonical.sha256_hex(canonical.dumps(facts))


def contract_digests(ledger: Ledger) -> Mapping[str, str]:
    """The contract digest each run of a condition must record, by condition."""
    return {c: contract_sha256(facts) for c, facts in ledger.contracts.items()}


def _contains(low: float, high: float, point: float) -> bool:
    return low <= point <= high


def _compare(
    figure: str,
    published: float,
    published_half: float | None,
    observed: float | None,
    observed_interval: IntervalValue | None,
    decimals: int,
) -> FigureComparison:
    if observed is None:
        return FigureComparison(figure, published, None, None, False, None, None)
    text = rounded(observed, decimals)
    return FigureComparison(
        figure=figure,
        published=published,
        observed=observed,
        observed_rounded=text,
        equal_at_precision=text == rounded(published, decimals),
        published_interval_contains_observed=(
            None
            if published_half is None
            else _contains(published - published_half, published + published_half, observed)
        ),
        observed_interval_contains_published=(
            None
            if observed_interval is None
            else _contains(observed_interval.low, observed_interval.high, published)
        ),
    )


def _figures(published: Published, agg: Aggregates) -> tuple[FigureComparison, ...]:
    """Each published figure against the observed one: a condition's mean, then the estimand's
    value and half-width."""
    d = published.decimals
    figures = []
    for pc in published.conditions:
        # The protocol was checked to match each published condition to exactly one row.
        row = next(
            c
            for c in agg.conditions
            if c.factors == pc.factors and pc.participant in (None, c.participant)
        )
        figures.append(
            _compare(f"{row.condition} mean", pc.mean, pc.halfwidth, row.mean, row.interval, d)
        )
    if published.estimand is not None:
        e = agg.estimand
        pe = published.estimand
        figures.append(_compare("estimand value", pe.value, pe.halfwidth, e.value, e.interval, d))
        if pe.halfwidth is not None:
            half = e.interval.halfwidth if e.interval is not None else None
            figures.append(_compare("estimand half-width", pe.halfwidth, None, half, None, d))
    return tuple(figures)


def _classify(result: tuple[FigureComparison, ...], decimals: int) -> Reproduction:
    """exact, bounded or failed, for figures that are all observed."""
    differing = [f.figure for f in result if not f.equal_at_precision]
    if not differing:
        return Reproduction(
            "exact", f"all {len(result)} published figures equal at {decimals} decimals", result
        )
    checks = [
        c
        for f in result
        for c in (f.published_interval_contains_observed, f.observed_interval_contains_published)
        if c is not None
    ]
    head = f"differ at {decimals} decimals: {', '.join(differing)}"
    if checks and all(checks):
        return Reproduction(
            "bounded", f"{head}; every interval contains the other point estimate", result
        )
    return Reproduction("failed", f"{head}; an interval excludes the other point estimate", result)


def reproduction(
    frozen_protocol: FrozenProtocol, agg: Aggregates, failed_slots: int
) -> Reproduction:
    """exact: every published figure equals the observed one at the published precision;
    bounded: every available interval contains the other side's point estimate; failed
    otherwise; unavailable without published figures or with an incomplete plan."""
    published = frozen_protocol.protocol.published
    if published is None:
        return Reproduction("unavailable", "the protocol declares no published figures", ())
    result = _figures(published, agg)
    if failed_slots:
        return Reproduction(
            "unavailable", f"the plan is incomplete: {failed_slots} slot(s) failed", result
        )
    if any(f.observed is None for f in result):
        return Reproduction(
            "unavailable", "an observed figure is undefined (fewer than two valid runs)", result
        )
    return _classify(result, published.decimals)


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


def execution_control(protocol: Protocol, runs: RunTally) -> Tier:
    """execution-control: the runs join the sealed plan without a problem (fail otherwise), and
    no slot failed after exhausting its attempts (weakened otherwise)."""
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
            execution_control(p, runs),
            state_observation(runs, ledger),
            outcome_evaluation(p, runs, ledger),
            disclosure(p, ledger, disclosures),
        ),
        reproduction=reproduction(frozen_protocol, agg, runs.failed),
    )
