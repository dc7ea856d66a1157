"""aggregates.json: per condition the slots' counts, mean, sd and interval, and the estimand with
its interval, from the tally of the runs (the statistics of :mod:`repro._stats.estimators`)."""

from __future__ import annotations

from repro._derive.tally import ConditionTally, RunTally
from repro._stats import estimators as stats
from repro.models import (
    Aggregates,
    ConditionAggregate,
    EstimandValue,
    FrozenProtocol,
    IntervalValue,
    Seal,
)

__all__ = ["aggregates", "interval_value"]


def interval_value(interval: stats.Interval) -> IntervalValue:
    """An interval of :mod:`repro._stats.estimators` as a derived file holds it."""
    return IntervalValue(
        method=interval.method,
        level=interval.level,
        low=interval.low,
        high=interval.high,
        halfwidth=interval.halfwidth,
    )


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
        mean_interval = stats.mean_interval(summary, iv.method, iv.level, iv.resamples, iv.seed)
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
                interval=None if mean_interval is None else interval_value(mean_interval),
            )
        )
    value, se, estimated = stats.estimand_interval(
        summaries, p.estimand, iv.method, iv.level, iv.resamples, iv.seed
    )
    interval = None if estimated is None else interval_value(estimated)
    return Aggregates(
        schema="repro.aggregates/1",
        protocol_sha256=frozen_protocol.sha256,
        measure=p.measure.name,
        conditions=tuple(rows),
        estimand=EstimandValue(kind=p.estimand, value=value, se=se, interval=interval),
    )
