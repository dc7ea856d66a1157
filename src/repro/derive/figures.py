"""The figures a bundle shows condition by condition, observed next to published: one model
that the validation report's conditions table, ``repro show``'s table, its PNG plot and its HTML
page all read, so that none of them can show a figure the others leave out.

It is a pure function of the protocol (its matrix orders the factors in each label, its
published figures give the half-widths), aggregates.json (what was observed) and tiers.json (the
published values as the reproduction class compared them)."""

from __future__ import annotations

from collections.abc import Sequence

from attrs import frozen

from repro.models import Aggregates, FigureComparison, FrozenProtocol, IntervalValue, Level, Tiers

__all__ = ["FigureRow", "Figures", "condition_label", "figures"]


def condition_label(factors: dict[str, Level], participant: str, order: Sequence[str] = ()) -> str:
    """A condition as a reader names it: its factor levels (those named in ``order`` first, in
    that order, the rest sorted) and participant."""
    names = [n for n in order if n in factors] + sorted(set(factors) - set(order))
    return ", ".join(f"{n}={factors[n]}" for n in names) + f" / {participant}"


@frozen
class FigureRow:
    """One row: a condition, or the estimand. ``key`` is the condition's ID (the estimand's
    kind); ``label`` its factor levels and participant (the estimand's kind); ``n`` its valid
    runs and ``sd`` their standard deviation (None for the estimand); ``mean`` the observed mean
    (the estimand's value) with its ``interval``. ``published``, ``published_halfwidth``,
    ``equal_at_precision`` and ``observed_rounded`` are None where nothing was published."""

    key: str
    label: str
    is_estimand: bool
    n: int | None
    mean: float | None
    sd: float | None
    interval: IntervalValue | None
    published: float | None
    published_halfwidth: float | None
    equal_at_precision: bool | None
    observed_rounded: str | None


@frozen
class Figures:
    """Every condition's row in the order of aggregates.json, the estimand's row, the measure
    they are of, and the reproduction class they add up to."""

    measure: str
    conditions: tuple[FigureRow, ...]
    estimand: FigureRow
    verdict: str

    @property
    def rows(self) -> tuple[FigureRow, ...]:
        """The conditions' rows, then the estimand's."""
        return (*self.conditions, self.estimand)

    @property
    def level(self) -> float:
        """The estimand's interval level (0.95 when it has none): what a plot's legend names."""
        interval = self.estimand.interval
        return interval.level if interval is not None else 0.95


def _published_halfwidths(fp: FrozenProtocol, agg: Aggregates) -> dict[str, float]:
    """Each condition's published half-width, where the protocol gives one (matched to its row
    as :func:`repro.derive.reproduction.reproduction` matches it). tiers.json holds no condition's
    half-width, so the protocol is where it is read."""
    published = fp.protocol.published
    found: dict[str, float] = {}
    for pc in published.conditions if published is not None else ():
        for c in agg.conditions:
            matches = c.factors == pc.factors and pc.participant in (None, c.participant)
            if matches and pc.halfwidth is not None:
                found[c.condition] = pc.halfwidth
    return found


def _condition_rows(fp: FrozenProtocol, agg: Aggregates, tiers: Tiers) -> list[FigureRow]:
    """A row per condition, with its published figure (tiers.json's ``<id> mean``) and, where
    it has one, the published half-width."""
    order = [f.name for f in fp.protocol.matrix]
    compared = {f.figure: f for f in tiers.reproduction.figures}
    halves = _published_halfwidths(fp, agg)
    rows = []
    for c in agg.conditions:
        f = compared.get(f"{c.condition} mean")
        rows.append(
            FigureRow(
                key=c.condition,
                label=condition_label(c.factors, c.participant, order),
                is_estimand=False,
                n=c.valid,
                mean=c.mean,
                sd=c.sd,
                interval=c.interval,
                published=None if f is None else f.published,
                published_halfwidth=None if f is None else halves.get(c.condition),
                equal_at_precision=None if f is None else f.equal_at_precision,
                observed_rounded=None if f is None else f.observed_rounded,
            )
        )
    return rows


def _estimand_row(agg: Aggregates, tiers: Tiers) -> FigureRow:
    """The estimand's row, with tiers.json's figures ``estimand value`` and ``estimand
    half-width`` as its published ones."""
    e = agg.estimand
    compared: dict[str, FigureComparison] = {f.figure: f for f in tiers.reproduction.figures}
    value, half = compared.get("estimand value"), compared.get("estimand half-width")
    return FigureRow(
        key=e.kind,
        label=e.kind,
        is_estimand=True,
        n=None,
        mean=e.value,
        sd=None,
        interval=e.interval,
        published=None if value is None else value.published,
        published_halfwidth=None if half is None else half.published,
        equal_at_precision=None if value is None else value.equal_at_precision,
        observed_rounded=None if value is None else value.observed_rounded,
    )


def figures(fp: FrozenProtocol, agg: Aggregates, tiers: Tiers) -> Figures:
    """The figures of a bundle's protocol, aggregates and tiers, a row per condition and one for
    the estimand."""
    return Figures(
        measure=agg.measure,
        conditions=tuple(_condition_rows(fp, agg, tiers)),
        estimand=_estimand_row(agg, tiers),
        verdict=tiers.reproduction.verdict,
    )
