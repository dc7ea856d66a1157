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
    Reproduction,
    Seal,
    Tier,
    Tiers,
)
from repro.plan.sealing import sources_sha256

__all__ = [
    "MAX_DISCLOSURES_LISTED",
    "contract_digests",
    "contract_sha256",
    "reproduction",
    "rounded",
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


def reproduction(
    frozen_protocol: FrozenProtocol, agg: Aggregates, failed_slots: int
) -> Reproduction:
    """exact: every published figure equals the observed one at the published precision;
    bounded: every available interval contains the other side's point estimate; failed
    otherwise; unavailable without published figures or with an incomplete plan."""
    published = frozen_protocol.protocol.published
    if published is None:
        return Reproduction("unavailable", "the protocol declares no published figures", ())
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
    result = tuple(figures)
    if failed_slots:
        return Reproduction(
            "unavailable", f"the plan is incomplete: {failed_slots} slot(s) failed", result
        )
    if any(f.observed is None for f in result):
        return Reproduction(
            "unavailable", "an observed figure is undefined (fewer than two valid runs)", result
        )
    differing = [f.figure for f in result if not f.equal_at_precision]
    if not differing:
        return Reproduction(
            "exact", f"all {len(result)} published figures equal at {d} decimals", result
        )
    checks = [
        c
        for f in result
        for c in (f.published_interval_contains_observed, f.observed_interval_contains_published)
        if c is not None
    ]
    head = f"differ at {d} decimals: {', '.join(differing)}"
    if checks and all(checks):
        return Reproduction(
            "bounded", f"{head}; every interval contains the other point estimate", result
        )
    return Reproduction("failed", f"{head}; an interval excludes the other point estimate", result)


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
    valid, failed, excluded = runs.valid, runs.failed, runs.excluded
    out: list[Tier] = []

    # authored-source
    evidence = tuple(
        f"{s.kind} {s.name} ({s.role}): "
        + (f"sha256 {s.sha256}, {s.size} bytes" if s.kind == "file" else f"version {s.version}")
        for s in ledger.sources
    )
    if sources_sha256(ledger.sources) != seal.sources_sha256:
        out.append(
            Tier(
                "authored-source",
                "fail",
                evidence,
                "the ledger's sources differ from those sealed with the plan",
            )
        )
    elif not any(s.kind == "file" for s in ledger.sources):
        out.append(
            Tier(
                "authored-source",
                "weakened",
                evidence,
                "sources are pinned by package version only, no file digest",
            )
        )
    else:
        out.append(Tier("authored-source", "pass", evidence, None))

    # contract
    mismatched = runs.contract_mismatches
    evidence = tuple(
        f"{c}: " + ", ".join(f"{k}={v}" for k, v in sorted(f.items()))
        for c, f in sorted(ledger.contracts.items())
    )
    if mismatched.count:
        out.append(
            Tier(
                "contract",
                "fail",
                evidence,
                f"{mismatched.count} run(s) saw other contract facts than their condition, "
                f"first {mismatched.first[0]}",
            )
        )
    elif not ledger.contracts or not all(ledger.contracts.values()):
        out.append(
            Tier(
                "contract",
                "weakened",
                evidence,
                "the adapter recorded no contract facts for some condition",
            )
        )
    else:
        out.append(Tier("contract", "pass", evidence, None))

    # execution-control
    problems = runs.plan_join_problems
    seed_note = f"seeding {p.seeding.mode}" + (
        f" ({p.seeding.statement})" if p.seeding.statement else f" (master seed {p.seeding.seed})"
    )
    evidence = (
        f"{runs.slots} slots sealed in {runs.partitions} partitions; "
        f"{valid} valid, {failed} failed, {excluded} excluded",
        f"{runs.attempts} attempt records; at most {p.retry.max_attempts} attempt(s) per slot",
        seed_note + ("; one process, sealed order" if p.seeding.mode == "stream" else ""),
    )
    if problems.count:
        first = problems.first[0]
        out.append(
            Tier(
                "execution-control",
                "fail",
                evidence,
                f"{problems.count} join problem(s), first: {first.where}: {first.what}",
            )
        )
    elif failed:
        out.append(
            Tier(
                "execution-control",
                "weakened",
                evidence,
                f"{failed} slot(s) failed after exhausting their attempts",
            )
        )
    else:
        out.append(Tier("execution-control", "pass", evidence, None))

    # state-observation
    traced = runs.traced
    evidence = (
        f"observation scope {ledger.adapter.observation_scope}: {ledger.adapter.observation_note}",
        f"{traced} of {valid} valid runs carry a trace digest",
    )
    if ledger.adapter.observation_scope != "full":
        out.append(Tier("state-observation", "weakened", evidence, ledger.adapter.observation_note))
    elif traced != valid:
        out.append(
            Tier(
                "state-observation",
                "weakened",
                evidence,
                f"{valid - traced} valid run(s) have no trace digest",
            )
        )
    else:
        out.append(Tier("state-observation", "pass", evidence, None))

    # outcome-evaluation
    recomputed, wrong = runs.recomputed, runs.wrong_measures
    evidence = (
        f"measure {p.measure.name}: {p.measure.description}",
        f"{recomputed} of {valid} valid measures recomputed from their step rewards",
        f"estimand {p.estimand}, {p.interval.method} interval at level {p.interval.level}",
    )
    if wrong.count:
        out.append(
            Tier(
                "outcome-evaluation",
                "fail",
                evidence,
                f"{wrong.count} measure(s) differ from their step rewards, first {wrong.first[0]}",
            )
        )
    elif recomputed != valid or ledger.adapter.measure_inputs != "step-rewards":
        out.append(
            Tier(
                "outcome-evaluation",
                "weakened",
                evidence,
                "some measures are taken as reported by the adapter, not recomputed",
            )
        )
    else:
        out.append(Tier("outcome-evaluation", "pass", evidence, None))

    # disclosure
    cite = p.published.citation if p.published else None
    evidence = (
        "published figures: "
        + (
            f"{cite.title} <{cite.url}>" + (f" {cite.locator}" if cite.locator else "")
            if cite
            else "none declared"
        ),
        f"{len(p.disagreements)} source disagreement(s) recorded",
        f"{len(ledger.losses)} loss(es) and exclusion(s) listed with their causes",
        "protocol, plan, runs, source ledger and environment scanned for host paths, "
        "tracebacks and credential-looking strings",
    )
    hit = [h for h in disclosures if h.count]
    count = sum(h.count for h in hit)
    if count:
        earliest = sorted(d for h in hit for d in h.first)
        listed = [d.describe() for d in earliest[:MAX_DISCLOSURES_LISTED]]
        if count > MAX_DISCLOSURES_LISTED:
            listed.append(f"{count - MAX_DISCLOSURES_LISTED} further hit(s)")
        kinds = ", ".join(sorted({kind for h in hit for kind in h.kinds}))
        out.append(
            Tier(
                "disclosure",
                "fail",
                (*evidence, *listed),
                f"{count} hit(s) in {len({h.file for h in hit})} input file(s): "
                f"the bundle discloses {kinds} content",
            )
        )
    elif cite is not None and cite.commit is None and cite.locator is None:
        out.append(
            Tier(
                "disclosure",
                "weakened",
                evidence,
                "the citation names no commit or locator for the published figures",
            )
        )
    else:
        out.append(Tier("disclosure", "pass", evidence, None))

    return Tiers(
        schema="repro.tiers/1",
        protocol_sha256=frozen_protocol.sha256,
        tiers=tuple(out),
        reproduction=reproduction(frozen_protocol, agg, failed),
    )
