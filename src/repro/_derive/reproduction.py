"""The reproduction class in tiers.json: each published figure against its observed value (equal at
the published precision, inside the observed interval), and the class they give together: exact,
bounded, failed or unavailable.

The protocol's ``criteria.bounded`` says at which level the containment checks take their
intervals: each at its own (``mutual-interval-containment``), or all at the Bonferroni level of
the family of available checks (``familywise-interval-containment``, :func:`familywise_level`):
the observed intervals recomputed from aggregates.json at that level
(:func:`repro._stats.estimators.mean_interval_at`,
:func:`~repro._stats.estimators.estimand_interval_at`),
the published half-widths rescaled to it (:func:`rescaled_halfwidth`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from attrs import frozen

from repro._derive.aggregates import interval_value
from repro._stats import estimators as stats
from repro.models import (
    Aggregates,
    FamilywiseLevels,
    FigureComparison,
    FrozenProtocol,
    IntervalValue,
    Protocol,
    Published,
    Reproduction,
)
from repro.models._protocol import FAMILYWISE

__all__ = ["FAMILYWISE", "familywise_level", "reproduction", "rescaled_halfwidth", "rounded"]


def rounded(value: float, decimals: int) -> str:
    """``value`` at ``decimals`` places, rounding the exact binary value half to even; a negative
    zero prints as zero."""
    text = format(value, f".{decimals}f")
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def familywise_level(level: float, checks: int) -> float:
    """The level at which each of ``checks`` intervals is taken so that, by Bonferroni's
    inequality, all of them hold together with probability at least ``level``:
    ``1 - (1 - level) / checks``."""
    return 1 - (1 - level) / checks


def rescaled_halfwidth(halfwidth: float, level: float, new_level: float) -> float:
    """A published half-width at ``level`` taken at ``new_level``, assuming that it is a normal
    interval's: ``halfwidth * z(1 - a'/2) / z(1 - a/2)``, with ``a = 1 - level`` and ``a' = 1 -
    new_level``. The assumption is stated, not known: a publication says "95% confidence
    intervals" (the CAGE-2 leaderboard does) and rarely how they were made; for a t interval on
    many degrees of freedom it is close, on few it makes the wider interval too narrow."""
    return halfwidth * stats.normal_quantile(new_level) / stats.normal_quantile(level)


@frozen
class _Figure:
    """One published figure and what it is checked against: its published half-width and the
    observed value's interval, where they exist, and ``at``, that interval at another level."""

    name: str
    published: float
    published_half: float | None
    observed: float | None
    interval: IntervalValue | None
    at: Callable[[float], IntervalValue] | None = None

    @property
    def checks(self) -> int:
        """The containment checks this figure has: its published interval's, its observed
        interval's (none where nothing is observed)."""
        if self.observed is None:
            return 0
        return (self.published_half is not None) + (self.interval is not None)


def _converted(at: Callable[[float], stats.Interval]) -> Callable[[float], IntervalValue]:
    """``at``, its interval as tiers.json holds it."""
    return lambda level: interval_value(at(level))


def _figures(p: Protocol, published: Published, agg: Aggregates) -> list[_Figure]:
    """Each published figure with its observed counterpart: a condition's mean, then the
    estimand's value and half-width."""
    method = p.interval.method
    figures = []
    for pc in published.conditions:
        # The protocol was checked to match each published condition to exactly one row.
        row = next(
            c
            for c in agg.conditions
            if c.factors == pc.factors and pc.participant in (None, c.participant)
        )
        at = None
        if row.interval is not None and row.mean is not None and row.sd is not None:
            at = _converted(partial(stats.mean_interval_at, row.mean, row.sd, row.valid, method))
        name = f"{row.condition} mean"
        figures.append(_Figure(name, pc.mean, pc.halfwidth, row.mean, row.interval, at))
    if published.estimand is not None:
        e, pe = agg.estimand, published.estimand
        at = None
        if e.interval is not None:
            # An estimand interval exists only where every condition has a mean and an sd.
            means = [c.mean for c in agg.conditions if c.mean is not None]
            sds = [c.sd for c in agg.conditions if c.sd is not None]
            ns = [c.valid for c in agg.conditions]
            at = _converted(partial(stats.estimand_interval_at, means, sds, ns, e.kind, method))
        figures.append(_Figure("estimand value", pe.value, pe.halfwidth, e.value, e.interval, at))
        if pe.halfwidth is not None:
            half = e.interval.halfwidth if e.interval is not None else None
            figures.append(_Figure("estimand half-width", pe.halfwidth, None, half, None))
    return figures


def _levels(p: Protocol, published: Published, figures: Sequence[_Figure]) -> FamilywiseLevels:
    """The family-wise criterion's levels for ``figures``' available checks (at least one)."""
    k = sum(f.checks for f in figures)
    return FamilywiseLevels(
        checks=k,
        observed_level=familywise_level(p.interval.level, k),
        published_level=familywise_level(published.level, k),
    )


def _contains(low: float, high: float, point: float) -> bool:
    return low <= point <= high


def _compare(f: _Figure, published: Published, levels: FamilywiseLevels | None) -> FigureComparison:
    """One figure against its published value; with ``levels``, the checks' intervals at the
    family-wise levels (and recorded)."""
    if f.observed is None:
        return FigureComparison(f.name, f.published, None, None, False, None, None)
    half, interval = f.published_half, f.interval
    if levels is not None:
        if half is not None:
            half = rescaled_halfwidth(half, published.level, levels.published_level)
        if interval is not None and f.at is not None:
            interval = f.at(levels.observed_level)
    text = rounded(f.observed, published.decimals)
    return FigureComparison(
        figure=f.name,
        published=f.published,
        observed=f.observed,
        observed_rounded=text,
        equal_at_precision=text == rounded(f.published, published.decimals),
        published_interval_contains_observed=(
            None if half is None else _contains(f.published - half, f.published + half, f.observed)
        ),
        observed_interval_contains_published=(
            None if interval is None else _contains(interval.low, interval.high, f.published)
        ),
        familywise_observed_interval=None if levels is None else interval,
        familywise_published_halfwidth=None if levels is None else half,
    )


def _level_text(levels: FamilywiseLevels | None) -> str:
    """How the reason names the intervals' level: nothing under the default criterion."""
    if levels is None:
        return ""
    o, p = levels.observed_level, levels.published_level
    both = f"{o:.6g}" if o == p else f"{o:.6g} (observed) and {p:.6g} (published)"
    return f" at the family-wise level {both} ({levels.checks} checks)"


def _classify(
    result: tuple[FigureComparison, ...], decimals: int, levels: FamilywiseLevels | None
) -> Reproduction:
    """exact, bounded or failed, for figures that are all observed."""
    differing = [f.figure for f in result if not f.equal_at_precision]
    if not differing:
        reason = f"all {len(result)} published figures equal at {decimals} decimals"
        return Reproduction("exact", reason, result, levels)
    checks = [
        c
        for f in result
        for c in (f.published_interval_contains_observed, f.observed_interval_contains_published)
        if c is not None
    ]
    head = f"differ at {decimals} decimals: {', '.join(differing)}"
    at = _level_text(levels)
    if checks and all(checks):
        reason = f"{head}; every interval{at} contains the other point estimate"
        return Reproduction("bounded", reason, result, levels)
    reason = f"{head}; an interval{at} excludes the other point estimate"
    return Reproduction("failed", reason, result, levels)


def reproduction(
    frozen_protocol: FrozenProtocol, agg: Aggregates, failed_slots: int
) -> Reproduction:
    """exact: every published figure equals the observed one at the published precision;
    bounded: every available interval contains the other side's point estimate, each interval
    at the level the protocol's ``criteria.bounded`` says; failed otherwise; unavailable without
    published figures or with an incomplete plan."""
    p = frozen_protocol.protocol
    published = p.published
    if published is None:
        return Reproduction("unavailable", "the protocol declares no published figures", ())
    figures = _figures(p, published, agg)
    familywise = p.criteria.bounded == FAMILYWISE and any(f.checks for f in figures)
    levels = _levels(p, published, figures) if familywise else None
    result = tuple(_compare(f, published, levels) for f in figures)
    if failed_slots:
        reason = f"the plan is incomplete: {failed_slots} slot(s) failed"
        return Reproduction("unavailable", reason, result, levels)
    if any(f.observed is None for f in result):
        reason = "an observed figure is undefined (fewer than two valid runs)"
        return Reproduction("unavailable", reason, result, levels)
    return _classify(result, published.decimals, levels)
