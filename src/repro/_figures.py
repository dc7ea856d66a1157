"""The figures a bundle shows condition by condition, observed next to published: one model
that the validation report's conditions table, ``repro show``'s table, its PNG plot and its HTML
page all read, so that none of them can show a figure the others leave out.

It is a pure function of the protocol (its matrix orders the factors in each label, its
published figures give the half-widths), aggregates.json (what was observed) and tiers.json (the
published values as the reproduction class compared them), and, for the plots, of each
condition's valid measures (:func:`repro._derive.derivation.run_measures`, tallied from the run
records as verify tallies them).

:func:`plot_model` makes of it what both plots draw, the HTML page's SVG and the PNG: one axis
with "nice" ticks shared by every condition, the estimand on an axis of its own, each
condition's valid runs as points (or, past :data:`POINTS_LIMIT` runs in all, counted in
:data:`BINS` bins), and published values only where there are some.

:func:`forest_model` makes of contrasts.json what the HTML page's forest plot draws: every
pre-registered contrast's difference with its interval on one axis of differences (the same
nice ticks, :func:`nice_axis`), which always holds 0 and each non-inferiority contrast's
``-margin``.

Presentation models, not a derived file: a pure function of the models alone, below
:mod:`repro._derive` so that the report it derives (:mod:`repro._derive.report`), the plan of
``repro protocol power`` and every view of :mod:`repro._present` read the one model."""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Literal

from attrs import frozen

from repro.models import (
    Aggregates,
    ContrastResult,
    ContrastsFile,
    FigureComparison,
    FrozenProtocol,
    IntervalValue,
    Level,
    Tiers,
)

__all__ = [
    "BINS",
    "MARGIN",
    "MAX_TICKS",
    "MAX_TIES_NAMED",
    "POINTS_LIMIT",
    "Axis",
    "Bin",
    "FigureRow",
    "Figures",
    "Forest",
    "ForestPanel",
    "ForestRow",
    "ForestUnit",
    "Plot",
    "PlotPanel",
    "PlotRow",
    "Point",
    "Tie",
    "adjusted_name",
    "condition_label",
    "figures",
    "forest_model",
    "nice_axis",
    "p_text",
    "plot_model",
    "ties_to_name",
    "unit_of",
]


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
    #: The measures of the condition's valid runs in sealed order (those ``mean`` and
    #: ``interval`` are of); None for the estimand, and where they were not read.
    values: tuple[float, ...] | None = None
    #: The condition's scheduled slots (None for the estimand).
    scheduled: int | None = None


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
    as :func:`repro._derive.reproduction.reproduction` matches it). tiers.json holds no condition's
    half-width, so the protocol is where it is read."""
    published = fp.protocol.published
    found: dict[str, float] = {}
    for pc in published.conditions if published is not None else ():
        for c in agg.conditions:
            matches = c.factors == pc.factors and pc.participant in (None, c.participant)
            if matches and pc.halfwidth is not None:
                found[c.condition] = pc.halfwidth
    return found


def _condition_rows(
    fp: FrozenProtocol,
    agg: Aggregates,
    tiers: Tiers,
    values: Mapping[str, Sequence[float]] | None,
) -> list[FigureRow]:
    """A row per condition, with its published figure (tiers.json's ``<id> mean``), where it
    has one the published half-width, and its runs' ``values`` when given."""
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
                values=None if values is None else tuple(values.get(c.condition, ())),
                scheduled=c.scheduled,
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


def figures(
    fp: FrozenProtocol,
    agg: Aggregates,
    tiers: Tiers,
    values: Mapping[str, Sequence[float]] | None = None,
) -> Figures:
    """The figures of a bundle's protocol, aggregates and tiers, a row per condition and one for
    the estimand; with ``values`` (:func:`repro._derive.derivation.run_measures`), each
    condition's runs too."""
    return Figures(
        measure=agg.measure,
        conditions=tuple(_condition_rows(fp, agg, tiers, values)),
        estimand=_estimand_row(agg, tiers),
        verdict=tiers.reproduction.verdict,
    )


# --------------------------------------------------------------------------- the plots

#: Past this many valid runs in all, both plots count each condition's runs in :data:`BINS`
#: bins instead of drawing a point per run, so that a page stays a few hundred kilobytes
#: whatever the number of slots.
POINTS_LIMIT = 2000
#: The bins across the conditions' axis when the runs are counted in bins.
BINS = 60
#: An axis has at most this many ticks (and at least two).
MAX_TICKS = 7
#: An axis reaches past the values it holds by this share of their spread, each side, so that
#: no mark sits on its end.
MARGIN = 0.03
#: The tick steps tried in each decade, times a power of ten.
_STEPS = (1, 2, 5)
#: Successive runs' vertical offsets step by the golden ratio (mod 1): spread evenly, the same
#: at every render, with no random draw.
_GOLDEN = (math.sqrt(5) - 1) / 2
_LARGEST = 1.7976931348623157e308


@frozen
class Axis:
    """A scale: the values ``low`` to ``high``, its ``ticks`` with their ``labels``, its
    ``title`` (what the values are of: the measure's name) and the ``detail`` of what is drawn
    on it. ``decimals`` is how many decimals the labels carry (None when they are in
    scientific notation)."""

    low: float
    high: float
    ticks: tuple[float, ...]
    labels: tuple[str, ...]
    decimals: int | None
    title: str
    detail: str = ""

    def share(self, value: float) -> float:
        """Where ``value`` stands on the axis, from 0 (``low``) to 1 (``high``), clamped. It
        works on halves, so that the spread of the largest floats stays finite."""
        span = self.high / 2 - self.low / 2
        if not span > 0:
            return 0.5
        share = (value / 2 - self.low / 2) / span
        return 0.5 if math.isnan(share) else min(1.0, max(0.0, share))

    def at(self, share: float) -> float:
        """The value at ``share`` of the way from ``low`` to ``high``."""
        return self.low * (1 - share) + self.high * share

    def text(self, value: float | None) -> str:
        """``value`` rounded for people: two decimals more than the tick labels."""
        if value is None:
            return "n/a"
        if self.decimals is None:
            return f"{value:.4g}"
        return f"{value:.{min(self.decimals + 2, 12)}f}"


def _label(value: float, decimals: int | None, digits: int) -> str:
    if value == 0:
        return "0" if not decimals else f"{0:.{decimals}f}"
    text = f"{value:.{digits}e}" if decimals is None else f"{value:.{decimals}f}"
    # No "-0": a tick at zero is zero.
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def _ticks(low: float, high: float, most: int) -> tuple[tuple[float, ...], int] | None:
    """The most ticks ``n * m * 10**k`` (``m`` in 1, 2, 5) from ``low`` to ``high``, at most
    ``most`` of them, and ``k``; None when there are no two such ticks, finite and evenly
    spaced as floats (past the largest floats, or a spread too small for its magnitude)."""
    raw = (high / 2 - low / 2) / ((most - 1) / 2)
    if not (raw > 0 and math.isfinite(raw)):
        return None
    decade = math.floor(math.log10(raw))
    for k in range(decade - 1, decade + 3):
        for m in _STEPS:
            step = float(f"{m}e{k}")
            if not (step > 0 and math.isfinite(step)):
                return None
            first, last = math.ceil(low / step), math.floor(high / step)
            if last - first + 1 > most + 2:
                continue
            # From the decimal text: 3 x 0.1 is the float nearest 0.3, not 0.30000000000000004;
            # and, the division having rounded, only those truly inside.
            near = (float(f"{n * m}e{k}") for n in range(first - 1, last + 2))
            ticks = tuple(t for t in near if low <= t <= high)
            if len(ticks) > most:
                continue
            even = all(
                math.isfinite(b - a) and math.isclose(b - a, step, rel_tol=1e-6)
                for a, b in itertools.pairwise(ticks)
            )
            return (ticks, k) if len(ticks) >= 2 and even else None
    return None


def nice_axis(low: float, high: float, title: str, detail: str = "", most: int = MAX_TICKS) -> Axis:
    """An axis that holds every value from ``low`` to ``high`` with a margin of
    :data:`MARGIN` of their spread each side, and the most ticks, at most ``most``, a step of 1,
    2 or 5 times a power of ten apart, labelled with the decimals that step needs (in scientific
    notation past ten million or below a ten-thousandth). A single value gets a range around
    it. Finite floats only."""
    low, high = min(low, high), max(low, high)
    # A single value gets a tenth of itself each side (or 1, at zero).
    pad = (abs(low) / 10 or 1.0) if low == high else (high / 2 - low / 2) * (2 * MARGIN)
    low, high = max(low - pad, -_LARGEST), min(high + pad, _LARGEST)
    found = _ticks(low, high, most)
    if found is None:
        # Past the largest floats' ticks, or a spread too small for its magnitude: the ends
        # alone, each in full.
        ends = (repr(low), repr(high))
        return Axis(low, high, (low, high), ends, None, title, detail)
    ticks, k = found
    largest = max(abs(t) for t in ticks)
    scientific = largest >= 1e7 or k < -4
    decimals = None if scientific else max(0, -k)
    digits = max(0, math.floor(math.log10(largest)) - k) if scientific and largest else 0
    labels = tuple(_label(t, decimals, digits) for t in ticks)
    return Axis(low, high, ticks, labels, decimals, title, detail)


@frozen
class Point:
    """One valid run: its measure, and where it stands up or down in its row, from -1 to 1."""

    value: float
    offset: float


@frozen
class Bin:
    """Runs counted together: those from ``low`` up to ``high`` (the last bin's ``high``
    included), ``count`` of them."""

    low: float
    high: float
    count: int


@frozen
class Tie:
    """Runs of one row with the same measure: ``count`` of them at ``value``. Their points are
    drawn on one spot, so a plot says how many there are (``x10 at 500``)."""

    value: float
    count: int

    def text(self, axis: Axis) -> str:
        """The tie in words to the axis' precision: ``x10 at 500``, x a multiplication sign."""
        value = f"{self.value:g}" if self.value == int(self.value) else axis.text(self.value)
        return f"\u00d7{self.count} at {value}"


@frozen
class PlotRow:
    """One row of a plot: the figures' row, its ``label`` and the ``note`` of its figures, and
    its valid runs, as ``points`` or as ``bins`` (both empty for the estimand, or where the
    runs were not read), with the ``ties`` among its points, the most runs first."""

    row: FigureRow
    label: str
    note: str
    points: tuple[Point, ...] = ()
    bins: tuple[Bin, ...] = ()
    ties: tuple[Tie, ...] = ()


@frozen
class PlotPanel:
    """Rows on one axis."""

    axis: Axis
    rows: tuple[PlotRow, ...]


@frozen
class Plot:
    """What both plots draw: the conditions on one axis, the estimand on its own, whether any
    published value is drawn (and so named in a legend), how many valid runs there are and
    whether they are drawn one by one or counted in bins, and the caption that says so."""

    measure: str
    verdict: str
    level: float
    method: str | None
    conditions: PlotPanel
    estimand: PlotPanel
    has_published: bool
    #: Whether the conditions' runs were read (the figures carry their values).
    has_runs: bool
    #: The valid runs with a measure, in all conditions.
    runs: int
    binned: bool
    caption: tuple[str, ...]


def _reach(row: FigureRow) -> list[float]:
    """Every value a row draws: its runs, mean, interval bounds, published value and the ends
    of its published half-width (clamped to the finite floats)."""
    found = list(row.values or ())
    found += [v for v in (row.mean, row.published) if v is not None]
    if row.interval is not None:
        found += [row.interval.low, row.interval.high]
    if row.published is not None and row.published_halfwidth is not None:
        p, h = row.published, row.published_halfwidth
        found += [max(p - h, -_LARGEST), min(p + h, _LARGEST)]
    return found


def _axis_of(rows: Sequence[FigureRow], title: str, detail: str) -> Axis:
    values = [v for row in rows for v in _reach(row)]
    return nice_axis(min(values, default=0.0), max(values, default=0.0), title, detail)


def _note(row: FigureRow, axis: Axis) -> str:
    """The figures of a row in words, rounded to the axis' precision."""
    if row.is_estimand:
        parts = []
    elif row.scheduled is not None and row.scheduled != row.n:
        parts = [f"n {row.n} (of {row.scheduled} scheduled)"]
    else:
        parts = [f"n {row.n}"]
    if row.mean is None:
        parts.append("mean n/a" if not row.is_estimand else "undefined")
    else:
        mean = ("" if row.is_estimand else "mean ") + axis.text(row.mean)
        iv = row.interval
        parts.append(mean + ("" if iv is None else f" [{axis.text(iv.low)}, {axis.text(iv.high)}]"))
    if row.published is not None:
        half = row.published_halfwidth
        parts.append(f"published {row.published}" + ("" if half is None else f" \u00b1 {half}"))
    return ", ".join(parts)


def _ties(values: Sequence[float]) -> tuple[Tie, ...]:
    """Every value at least two runs share, with how many: the most runs first, then by
    value."""
    counts: dict[float, int] = defaultdict(int)
    for v in values:
        counts[v] += 1
    found = [Tie(v, n) for v, n in counts.items() if n >= 2]
    return tuple(sorted(found, key=lambda t: (-t.count, t.value)))


#: A plot names at most this many ties a row, the most runs first.
MAX_TIES_NAMED = 4
#: A tie is not named nearer than this share of the axis to one already named in its row (the
#: two texts would overlap).
_TIE_SPACING = 0.12


def ties_to_name(ties: Sequence[Tie], axis: Axis) -> list[Tie]:
    """The ties of a row that a plot names: the most runs first, at most
    :data:`MAX_TIES_NAMED`, none within :data:`_TIE_SPACING` of the axis of one named before
    it."""
    named: list[Tie] = []
    for t in ties:
        if len(named) == MAX_TIES_NAMED:
            break
        if all(abs(axis.share(t.value) - axis.share(n.value)) >= _TIE_SPACING for n in named):
            named.append(t)
    return named


def _points(values: Sequence[float]) -> tuple[Point, ...]:
    return tuple(Point(v, ((i + 1) * _GOLDEN) % 1.0 * 2 - 1) for i, v in enumerate(values))


def _bins(values: Sequence[float], axis: Axis, bins: int) -> tuple[Bin, ...]:
    """The non-empty ones of ``bins`` equal bins across ``axis``."""
    counts: dict[int, int] = defaultdict(int)
    for v in values:
        counts[min(bins - 1, int(axis.share(v) * bins))] += 1
    return tuple(Bin(axis.at(i / bins), axis.at((i + 1) / bins), counts[i]) for i in sorted(counts))


def _caption(model: Figures, drawn: tuple[int, bool, int, int], axis: Axis) -> list[str]:
    """What the plots show, in words: ``drawn`` is the valid runs, whether they are binned, the
    points limit and the bins."""
    runs, binned, limit, bins = drawn
    method = _method(model)
    interval = f"{model.level:.0%} {method} interval" if method else "interval"
    top = f"Top: every condition on one shared axis of {model.measure}."
    if not any(r.values is not None for r in model.conditions):
        top += f" The dot and bar are each condition's mean with its {interval}."
    elif binned:
        width = axis.text(axis.at(1 / bins) - axis.low)
        top += (
            f" The bundle has {runs:,} valid runs, more than the {limit:,} drawn one by one, so "
            f"each condition's runs are counted in {bins} bins {width} wide (the bars' heights "
            f"are relative within a condition); the dot and bar are its mean with its {interval}."
        )
    else:
        top += (
            f" Each small dot is one valid run ({runs:,} in all, spread up and down in a fixed "
            "pattern so that equal values stay visible; \u00d7N at V: N runs with the same "
            f"value V); the large dot and bar are the condition's mean with its {interval}."
        )
    lines = [top, f"Bottom: the estimand, {model.estimand.key}, on an axis of its own."]
    if any(r.published is not None for r in model.rows):
        lines.append("Red \u00d7: the published value, with its published half-width where given.")
    return lines


def _method(model: Figures) -> str | None:
    found = [r.interval.method for r in model.rows if r.interval is not None]
    return found[0] if found else None


def plot_model(model: Figures, points_limit: int = POINTS_LIMIT, bins: int = BINS) -> Plot:
    """What the page's SVG and the PNG both draw of ``model``: every condition on one axis
    (each condition's valid runs as points, or counted in ``bins`` bins when there are more
    than ``points_limit`` in all), the estimand on an axis of its own, and published values
    only where there are some."""
    method = _method(model)
    interval = f"{model.level:.0%} {method} interval" if method else "interval"
    runs = sum(len(r.values or ()) for r in model.conditions)
    binned = runs > points_limit
    has_runs = any(r.values is not None for r in model.conditions)
    what = "each condition's mean with its "
    if has_runs:
        runs_text = "valid runs (in bins)" if binned else "each valid run"
        what = f"{runs_text}, and each condition's mean with its "
    axis = _axis_of(model.conditions, model.measure, what + interval)
    rows = []
    for r in model.conditions:
        values = r.values or ()
        rows.append(
            PlotRow(
                r,
                f"{r.key} {r.label}",
                _note(r, axis),
                () if binned else _points(values),
                _bins(values, axis, bins) if binned else (),
                () if binned else _ties(values),
            )
        )
    e = model.estimand
    e_axis = _axis_of([e], f"{e.key} of {model.measure}", f"the estimand, with its {interval}")
    return Plot(
        measure=model.measure,
        verdict=model.verdict,
        level=model.level,
        method=method,
        conditions=PlotPanel(axis, tuple(rows)),
        estimand=PlotPanel(e_axis, (PlotRow(e, e.label, _note(e, e_axis)),)),
        has_published=any(r.published is not None for r in model.rows),
        has_runs=has_runs,
        runs=runs,
        binned=binned,
        caption=tuple(_caption(model, (runs, binned, points_limit, bins), axis)),
    )


# --------------------------------------------------------------------------- the forest plot


@frozen
class ForestRow:
    """One contrast of a forest plot: contrasts.json's figures, the row's ``label`` (its id,
    and whether it is primary), the ``null`` boundary its claim is tested against (0, or
    ``-margin`` for non-inferiority), the ``note`` of its figures, and the ``axis`` of its
    panel (whose precision its figures are written to)."""

    contrast: ContrastResult
    label: str
    null: float
    note: str
    axis: Axis


#: A forest plot's panels, one per unit its contrasts' differences are in: differences of the
#: measure, and differences of rates (a check's passes or a category's share).
ForestUnit = Literal["measure", "rate"]


@frozen
class ForestPanel:
    """The contrasts whose differences are in one ``unit``, on one ``axis``."""

    unit: ForestUnit
    axis: Axis
    rows: tuple[ForestRow, ...]


@frozen
class Forest:
    """What the forest plot draws: every contrast of the family in the order contrasts.json
    holds them (``rows``), in a panel per unit (``panels``: the measure's differences first,
    then the rates'), each on its own axis of differences (positive favours ``a``), the
    family's ``multiplicity`` control, and the ``caption`` that says what the marks are."""

    measure: str
    multiplicity: str
    panels: tuple[ForestPanel, ...]
    rows: tuple[ForestRow, ...]
    caption: tuple[str, ...]


def unit_of(c: ContrastResult) -> ForestUnit:
    """What a contrast's difference is in: the measure's units (outcome ``measure``) or a
    rate's (``check:NAME``, ``category:NAME``)."""
    return "measure" if c.outcome == "measure" else "rate"


def _null_of(c: ContrastResult) -> float:
    """The boundary a contrast's claim is tested against: ``-margin`` for non-inferiority, 0
    otherwise (as :func:`repro._derive.contrasts.verdict` tests it)."""
    return -c.margin if c.direction == "non-inferiority" else 0.0


def adjusted_name(multiplicity: str) -> str:
    """What the family's adjusted p-value is called: ``Holm-adjusted p``, or ``p (no
    multiplicity control)``."""
    return "Holm-adjusted p" if multiplicity == "holm" else "p (no multiplicity control)"


def p_text(p: float | None) -> str:
    """A p-value for people: three significant digits."""
    return "n/a" if p is None else f"{p:.3g}"


def _forest_note(c: ContrastResult, axis: Axis, multiplicity: str) -> str:
    if c.estimate is None or c.interval is None:
        return "nothing estimated"
    iv = c.interval
    return (
        f"difference {axis.text(c.estimate)} [{axis.text(iv.low)}, {axis.text(iv.high)}], "
        f"{adjusted_name(multiplicity)} {p_text(c.p_adjusted)}"
    )


def _interval_words(rows: Sequence[ContrastResult]) -> str:
    levels = sorted({c.interval.level if c.interval else c.level for c in rows})
    methods = sorted({c.interval.method for c in rows if c.interval is not None})
    level = "/".join(f"{v:.0%}" for v in levels)
    return f"{level} {'/'.join(methods)} interval" if methods else f"{level} interval"


def _forest_axis(rows: Sequence[ContrastResult], unit: ForestUnit, measure: str) -> Axis:
    """The axis of one unit's contrasts: it holds every estimate and interval, 0, and each
    non-inferiority contrast's ``-margin``, with nice ticks (:func:`nice_axis`)."""
    reach = [0.0] + [_null_of(c) for c in rows]
    reach += [c.estimate for c in rows if c.estimate is not None]
    reach += [v for c in rows if c.interval is not None for v in (c.interval.low, c.interval.high)]
    lower = any(c.better == "lower" for c in rows)
    detail = f"each contrast's difference with its {_interval_words(rows)}" + (
        "; b - a where lower is better" if lower else ""
    )
    if unit == "measure":
        title = f"{measure}: difference a - b (positive favours a)"
    else:
        outcomes = ", ".join(sorted({c.outcome for c in rows}))
        title = f"rate ({outcomes}): difference a - b (positive favours a)"
    return nice_axis(min(reach), max(reach), title, detail)


def forest_model(compared: ContrastsFile, measure: str) -> Forest:
    """The forest plot of contrasts.json: a row per contrast, in a panel per unit (the
    measure's differences, then the rates'), each panel on its own axis of differences (a - b,
    or b - a for a contrast where lower is better: positive always favours ``a``) that holds
    every estimate and interval, 0, and each non-inferiority contrast's ``-margin``, with nice
    ticks (:func:`nice_axis`). A difference of rates and one of the measure are never drawn on
    one axis: their units differ."""
    rows = compared.contrasts
    units: tuple[ForestUnit, ...] = ("measure", "rate")
    axes = {
        unit: _forest_axis([c for c in rows if unit_of(c) == unit], unit, measure)
        for unit in units
        if any(unit_of(c) == unit for c in rows)
    }
    forest_rows = tuple(
        ForestRow(
            c,
            c.id + (" (primary)" if c.primary else ""),
            _null_of(c),
            _forest_note(c, axes[unit_of(c)], compared.multiplicity),
            axes[unit_of(c)],
        )
        for c in rows
    )
    panels = tuple(
        ForestPanel(unit, axis, tuple(r for r in forest_rows if unit_of(r.contrast) == unit))
        for unit, axis in axes.items()
    )
    lower = any(c.better == "lower" for c in rows)
    shared = (
        f"one shared axis of differences in {measure}"
        if set(axes) == {"measure"}
        else "one shared axis of differences of rates"
        if set(axes) == {"rate"}
        else f"an axis per unit: differences in {measure} above, differences of rates below"
    )
    caption = [
        f"Every pre-registered contrast on {shared} (a - b; positive favours a"
        + ("; for a contrast where lower is better, b - a" if lower else "")
        + f"). Each row's mark is its difference, its bar the difference's "
        f"{_interval_words(rows)}; the solid vertical line is 0, no difference.",
    ]
    if any(c.direction == "non-inferiority" for c in rows):
        caption.append(
            "A dashed mark is -margin of a non-inferiority contrast: a may be worse than b by "
            "less than the margin."
        )
    caption.append(
        "Each row names its verdict: holds (filled dot), does-not-hold (filled square) or "
        "inconclusive (open dot)."
    )
    return Forest(measure, compared.multiplicity, panels, forest_rows, tuple(caption))
