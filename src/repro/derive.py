"""Pure derivations from bundle data: aggregates, tiers, the ledger's losses, the report.

``repro study`` and ``repro verify`` both call :func:`derive`; the verifier compares the canonical
bytes it re-derives with what the bundle stores.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from attrs import frozen

from repro import judge, report, stats
from repro.disclosure import Disclosure
from repro.models import (
    Aggregates,
    ConditionAggregate,
    EstimandValue,
    FrozenProtocol,
    Ledger,
    Partition,
    RunRecord,
    Seal,
    Tiers,
)
from repro.outcomes import SlotOutcome, losses, slot_outcomes

__all__ = ["Derived", "aggregates", "derive", "source_ledger"]


def aggregates(
    frozen_protocol: FrozenProtocol, seal: Seal, outcomes: Sequence[SlotOutcome]
) -> Aggregates:
    """aggregates.json from the slot outcomes."""
    p = frozen_protocol.protocol
    iv = p.interval
    per_condition: dict[str, list[SlotOutcome]] = defaultdict(list)
    for o in outcomes:
        per_condition[o.entry.condition].append(o)
    rows = []
    summaries = []
    for condition in seal.conditions:
        slots = per_condition[condition.id]
        values = [
            o.terminal.measure for o in slots if o.outcome == "valid" and o.terminal is not None
        ]
        summary = stats.summarize([v for v in values if v is not None])
        summaries.append(summary)
        rows.append(
            ConditionAggregate(
                condition=condition.id,
                factors=condition.factors,
                participant=condition.participant,
                scheduled=len(slots),
                valid=sum(o.outcome == "valid" for o in slots),
                failed=sum(o.outcome == "failed" for o in slots),
                excluded=sum(o.outcome == "excluded" for o in slots),
                mean=summary.mean,
                sd=summary.sd,
                interval=stats.mean_interval(summary, iv.method, iv.level, iv.resamples, iv.seed),
            )
        )
    value, se, interval = stats.estimand_interval(
        summaries, p.estimand, iv.method, iv.level, iv.resamples, iv.seed
    )
    return Aggregates(
        schema="repro.aggregates/1",
        protocol_sha256=frozen_protocol.sha256,
        measure=p.measure.name,
        conditions=tuple(rows),
        estimand=EstimandValue(kind=p.estimand, value=value, se=se, interval=interval),
    )


@frozen
class Derived:
    """Everything a bundle stores that is a function of protocol, plan, runs and ledger facts."""

    aggregates: Aggregates
    tiers: Tiers
    ledger: Ledger
    report: str


def _outcomes(partitions: Sequence[Partition], records: Sequence[RunRecord]) -> list[SlotOutcome]:
    return slot_outcomes([e for p in partitions for e in p.entries], records)


def _ledger(
    frozen_protocol: FrozenProtocol, outcomes: Sequence[SlotOutcome], facts: Ledger
) -> Ledger:
    p = frozen_protocol.protocol
    return Ledger(
        schema="repro.source-ledger/1",
        protocol_sha256=frozen_protocol.sha256,
        adapter=facts.adapter,
        sources=facts.sources,
        contracts=facts.contracts,
        citation=p.published.citation if p.published else None,
        disagreements=p.disagreements,
        losses=losses(outcomes),
    )


def source_ledger(
    frozen_protocol: FrozenProtocol,
    partitions: Sequence[Partition],
    records: Sequence[RunRecord],
    facts: Ledger,
) -> Ledger:
    """source-ledger.json: the facts gathered at run time (adapter, sources, contracts) with the
    citation and disagreements of the protocol and the losses re-derived from the runs. The
    study writes it before :func:`derive`, whose disclosure tier reads its bytes."""
    return _ledger(frozen_protocol, _outcomes(partitions, records), facts)


def derive(
    frozen_protocol: FrozenProtocol,
    seal: Seal,
    partitions: Sequence[Partition],
    records: Sequence[RunRecord],
    ledger: Ledger,
    disclosures: Sequence[Disclosure],
) -> Derived:
    """Derive aggregates, tiers, the ledger's losses and the report. ``ledger`` supplies the
    facts gathered at run time (adapter, sources, contracts); its losses are re-derived.
    ``disclosures`` are the hits of :func:`repro.disclosure.scan` in the bytes of the input
    files (:func:`repro.disclosure.is_derivation_input`) as written or read."""
    outcomes = _outcomes(partitions, records)
    agg = aggregates(frozen_protocol, seal, outcomes)
    full_ledger = _ledger(frozen_protocol, outcomes, ledger)
    tiers = judge.tiers(frozen_protocol, seal, partitions, outcomes, full_ledger, agg, disclosures)
    text = report.validation_report(frozen_protocol, agg, tiers, full_ledger)
    return Derived(aggregates=agg, tiers=tiers, ledger=full_ledger, report=text)
