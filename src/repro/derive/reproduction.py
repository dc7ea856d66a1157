"""The reproduction class in tiers.json: each published figure against its observed value (equal at
the published precision, inside the observed interval), and the class they give together: exact,
within-interval, failed or unavailable."""

from __future__ import annotations

from repro.models import (
    Aggregates,
    FigureComparison,
    FrozenProtocol,
    IntervalValue,
    Published,
    Reproduction,
)

__all__ = ["reproduction", "rounded"]


def rounded(value: float, decimals: int) -> str:
    """``value`` at ``decimals`` places, rounding the exact binary value half to even; a negative
    zero prints as zero."""
    text = format(value, f".{decimals}f")
    return text[1:] if text.startswith("-") and float(text) == 0 else text


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
