"""aggregates.json: per condition the slots' counts, mean, sd and interval, and the estimand with
its interval, from the tally of the runs."""

from __future__ import annotations

from repro.derive import stats
from repro.derive.tally import ConditionTally, RunTally
from repro.models import (
    Aggregates,
    ConditionAggregate,
    EstimandValue,
    FrozenProtocol,
    Seal,
)

__all__ = ["aggregates"]


def aggregates(frozen_protocol: FrozenProtocol, seal: Seal, runs: RunTally) -> Aggregates:
    """aggregates.json from the tally of the runs."""
    p = frozen_protocol.protocol
    iv = p.interval
    rows = []
    summaries = []
    none = ConditionTally(scheduled=0, valid=0, failed=0, excluded=0, measures=())
    for condition in seal.conditions:
        slots = runs.conditions.get(condition.id, none)
        summary = stats.summarize(slots.measures)
        summaries.append(summary)
        rows.append(
            ConditionAggregate(
                condition=condition.id,
                factors=condition.factors,
                participant=condition.participant,
                scheduled=slots.scheduled,
                valid=slots.valid,
                failed=slots.failed,
                excluded=slots.excluded,
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
