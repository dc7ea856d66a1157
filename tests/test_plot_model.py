"""The figures model (repro._figures) that every view of a bundle reads, and the plot model
made of it that both plots draw: it carries each published half-width and each condition's
valid runs, its axes have nice ticks and one scale for all conditions, the estimand its own, its
runs are binned past a stated limit, and the PNG and the HTML page's plot draw the same model;
the terminal's table reads the figures model too."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from rich.console import Console

from htmlpage import axis_range, axis_ticks, expected_runs, legend, parse, plot_runs
from repro._figures import (
    BINS,
    MARGIN,
    MAX_TICKS,
    POINTS_LIMIT,
    Figures,
    figures,
    nice_axis,
    plot_model,
)
from repro._present.plot import PUBLISHED, plot
from repro._present.showing import Shown, load
from repro._present.terminal import print_tables
from repro._stats import estimators as stats


@pytest.fixture(scope="module")
def published(published_bundle: Path) -> Shown:
    """The parsed files of the bundle with published figures (one per-condition half-width)."""
    return load(published_bundle)


def _expected_halfwidths(shown: Shown) -> dict[str, float]:
    """Each condition's published half-width, read from the protocol with no help from the
    model: the row whose factors and participant the published condition names."""
    p = shown.protocol.protocol.published
    assert p is not None
    found = {}
    for pc in p.conditions:
        for c in shown.aggregates.conditions:
            same = c.factors == pc.factors and pc.participant in (None, c.participant)
            if same and pc.halfwidth is not None:
                found[c.condition] = pc.halfwidth
    return found


# --------------------------------------------------------------------------- the figures model


def test_the_model_carries_each_published_halfwidth(published: Shown) -> None:
    """Built from protocol, aggregates and tiers, the model has a row per condition in the order
    of aggregates.json and one for the estimand; each condition's published value is tiers.json's
    figure, its published half-width the protocol's, and the estimand's both are tiers.json's."""
    model = figures(published.protocol, published.aggregates, published.tiers, published.values())
    assert model == published.figures()
    agg = published.aggregates
    assert [r.key for r in model.conditions] == [c.condition for c in agg.conditions]
    assert [r.n for r in model.conditions] == [c.valid for c in agg.conditions]
    compared = {f.figure: f.published for f in published.tiers.reproduction.figures}
    halves = _expected_halfwidths(published)
    assert halves == {"c00": 6.5}
    for r in model.conditions:
        assert r.published == compared.get(f"{r.key} mean")
        assert r.published_halfwidth == halves.get(r.key)
    e = model.estimand
    assert e.is_estimand and e.key == agg.estimand.kind and e.mean == agg.estimand.value
    assert (e.published, e.published_halfwidth) == (
        compared["estimand value"],
        compared["estimand half-width"],
    )
    assert e.values is None


@pytest.mark.parametrize("which", ["published_bundle", "scored_bundle"])
def test_each_condition_carries_the_runs_its_mean_is_of(
    which: str, request: pytest.FixtureRequest
) -> None:
    """Each condition's values are its valid runs' measures in sealed order, read from the runs
    files with the standard library; summed up as aggregates.json sums them, they give its
    mean and sd to the last bit. Without them (the validation report's model) there are none."""
    bundle: Path = request.getfixturevalue(which)
    shown = load(bundle)
    model = shown.figures()
    want = expected_runs(bundle)
    for row, c in zip(model.conditions, shown.aggregates.conditions, strict=True):
        assert row.values is not None
        assert list(row.values) == want[row.key]
        summary = stats.summarize(row.values)
        assert (summary.mean, summary.sd) == (c.mean, c.sd)
    bare = figures(shown.protocol, shown.aggregates, shown.tiers)
    assert all(r.values is None for r in bare.rows)


# --------------------------------------------------------------------------- axes and ticks

_FINITE = st.floats(allow_nan=False, allow_infinity=False)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@example(low=-500.0, high=89.0)
@example(low=-227.926625, high=-226.776709)
@example(low=-200.0, high=-200.0)
@example(low=0.0, high=0.0)
@example(low=5e-324, high=5e-324)
@example(low=-1.7e308, high=1.7e308)
@example(low=1.7e308, high=1.7e308)
@example(low=1e15, high=1e15 + 1)
@given(low=_FINITE, high=_FINITE)
def test_an_axis_holds_its_values_with_nice_ticks(low: float, high: float) -> None:
    """Any finite values: the axis holds them with a small margin (the spread's
    :data:`MARGIN` each side, or a tenth of a single value), and has 2 to :data:`MAX_TICKS`
    ticks inside it, evenly a step of 1, 2 or 5 times a power of ten apart, each labelled so
    that it reads back as its value; or, where no such ticks are floats (past the largest
    floats, or a spread too small for its magnitude), the two ends."""
    axis = nice_axis(low, high, "m")
    lo, hi = min(low, high), max(low, high)
    assert axis.low <= lo and hi <= axis.high
    assert all(math.isfinite(v) for v in (axis.low, axis.high, *axis.ticks))
    assert axis.ticks == tuple(sorted(axis.ticks))
    assert all(axis.low <= t <= axis.high for t in axis.ticks)
    assert 2 <= len(axis.ticks) <= MAX_TICKS and len(axis.labels) == len(axis.ticks)
    if lo < hi and (hi - lo) > 1e-300:
        reach = (axis.high / 2 - axis.low / 2) / (hi / 2 - lo / 2)
        assert reach <= 1 + 2 * MARGIN + 1e-9
    if axis.ticks == (axis.low, axis.high):
        return
    step = axis.ticks[1] - axis.ticks[0]
    for a, b in zip(axis.ticks, axis.ticks[1:], strict=False):
        assert b - a == pytest.approx(step, rel=1e-6)
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert any(math.isclose(mantissa, m, rel_tol=1e-6) for m in (1, 2, 5, 10))
    for tick, label in zip(axis.ticks, axis.labels, strict=True):
        assert float(label) == pytest.approx(tick, rel=1e-9, abs=step / 1000)
        assert not label.startswith("-0") or float(label) != 0


@pytest.mark.parametrize(
    ("low", "high", "labels"),
    [
        (-500.0, 89.0, ["-500", "-400", "-300", "-200", "-100", "0", "100"]),
        (-227.93, -226.78, ["-227.8", "-227.6", "-227.4", "-227.2", "-227.0", "-226.8"]),
        (0.0, 1.0, ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]),
        (-0.5, 1000.5, ["0", "200", "400", "600", "800", "1000"]),
        (0.0012, 0.0019, ["0.0012", "0.0014", "0.0016", "0.0018"]),
        (1e8, 3e8, ["1.0e+08", "1.5e+08", "2.0e+08", "2.5e+08", "3.0e+08"]),
        (-200.0, -200.0, ["-220", "-210", "-200", "-190", "-180"]),
    ],
)
def test_tick_labels_are_what_a_reader_expects(low: float, high: float, labels: list[str]) -> None:
    """Round values at a step of 1, 2 or 5 times a power of ten, with the decimals the step
    needs: not the extremes to four decimals."""
    assert list(nice_axis(low, high, "m").labels) == labels


# --------------------------------------------------------------------------- the plot model


def _model(published: Shown, values: list[list[float]]) -> Figures:
    """The published bundle's figures model with two conditions' runs replaced by ``values``
    (their means left as they were: the plot model draws what it is given)."""
    model = published.figures()
    rows = tuple(
        attrs.evolve(r, values=tuple(v)) for r, v in zip(model.conditions, values, strict=False)
    )
    return attrs.evolve(model, conditions=rows)


def test_every_condition_shares_one_axis_and_the_estimand_has_its_own(published: Shown) -> None:
    """One axis holds every condition's runs, means, intervals and published values; the
    estimand's holds its own; the axes are titled with the measure and the estimand's kind, and
    name the interval's level and method."""
    model = published.figures()
    drawn = plot_model(model)
    axis = drawn.conditions.axis
    for row in model.conditions:
        values = [*(row.values or ()), row.mean, row.published]
        if row.interval is not None:
            values += [row.interval.low, row.interval.high]
        assert all(axis.low <= v <= axis.high for v in values if v is not None)
    e = model.estimand
    assert e.interval is not None and e.mean is not None
    e_axis = drawn.estimand.axis
    assert e_axis.low <= e.interval.low < e.interval.high <= e_axis.high
    assert not axis.low <= e.mean <= axis.high
    assert axis.title == model.measure == "episode_return"
    assert e_axis.title == f"{e.key} of {model.measure}"
    assert f"{e.interval.level:.0%} {e.interval.method} interval" in axis.detail
    assert [r.row for r in drawn.conditions.rows] == list(model.conditions)
    assert [r.row for r in drawn.estimand.rows] == [e]


def test_the_runs_are_drawn_one_by_one_up_to_the_limit_then_binned(published: Shown) -> None:
    """Up to :data:`POINTS_LIMIT` valid runs in all, a point per run in sealed order with an
    offset in [-1, 1] that is the same at every render; one more, and each condition's runs are
    counted in at most :data:`BINS` bins across the shared axis, their counts adding up to its
    runs, every run inside its bin; the caption says which."""
    half = POINTS_LIMIT // 2
    values = [[float(i % 17) for i in range(half)], [float(i % 5) - 2.5 for i in range(half)]]
    at_limit = plot_model(_model(published, values))
    assert not at_limit.binned and at_limit.runs == POINTS_LIMIT
    for row, v in zip(at_limit.conditions.rows, values, strict=False):
        assert [p.value for p in row.points] == v and row.bins == ()
        assert all(-1 <= p.offset <= 1 for p in row.points)
        # Ties spread out: the offsets of equal values differ.
        assert len({p.offset for p in row.points if p.value == v[0]}) > 1
    assert at_limit == plot_model(_model(published, values))
    assert "one valid run" in at_limit.caption[0]
    values[1].append(0.0)
    past = plot_model(_model(published, values))
    assert past.binned and past.runs == POINTS_LIMIT + 1
    for row, v in zip(past.conditions.rows, values, strict=False):
        assert row.points == () and 0 < len(row.bins) <= BINS
        assert sum(b.count for b in row.bins) == len(v)
        assert all(any(b.low <= x <= b.high for b in row.bins) for x in v)
    widths = {round(b.high - b.low, 9) for row in past.conditions.rows for b in row.bins}
    assert len(widths) == 1
    assert f"more than the {POINTS_LIMIT:,} drawn one by one" in past.caption[0]
    assert f"counted in {BINS} bins" in past.caption[0]


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(
        st.lists(st.floats(-1e6, 1e6) | st.sampled_from([0.0, -200.0]), max_size=40),
        min_size=1,
        max_size=3,
    ),
    limit=st.integers(0, 60),
)
def test_binning_keeps_every_run(published: Shown, values: list[list[float]], limit: int) -> None:
    """Whatever the runs and the limit: binned exactly when there are more runs than the limit,
    and every run is drawn, as a point or counted in a bin that holds it."""
    drawn = plot_model(_model(published, values), points_limit=limit)
    total = sum(len(v) for v in values)
    assert drawn.binned == (total > limit)
    for row, v in zip(drawn.conditions.rows, values, strict=False):
        if drawn.binned:
            assert sum(b.count for b in row.bins) == len(v)
            assert all(any(b.low <= x <= b.high for b in row.bins) for x in v)
        else:
            assert [p.value for p in row.points] == v


def test_published_only_where_published(published: Shown) -> None:
    """The model draws a published legend only when some row has a published value."""
    assert plot_model(published.figures()).has_published
    model = published.figures()
    bare = attrs.evolve(
        model,
        conditions=tuple(
            attrs.evolve(r, published=None, published_halfwidth=None) for r in model.conditions
        ),
        estimand=attrs.evolve(model.estimand, published=None, published_halfwidth=None),
    )
    drawn = plot_model(bare)
    assert not drawn.has_published
    assert not any("published" in line.lower() for line in drawn.caption)


# --------------------------------------------------------------------------- the PNG


def _drawn(model: Figures, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The matplotlib figure :func:`plot` draws of ``model`` (kept from being closed), after it
    wrote a PNG."""
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    kept: list[Any] = []
    monkeypatch.setattr(plt, "close", kept.append)
    out = tmp_path / "plot.png"
    plot(model, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(kept) == 1
    return kept[0]


def _colour(c: Any) -> tuple[float, ...]:
    from matplotlib.colors import to_rgb

    return tuple(round(x, 3) for x in to_rgb(c))


@pytest.mark.slow
def test_the_png_draws_the_plot_model(
    published: Shown, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The PNG has two panels with the model's ticks, labels and titles; a run's dot per valid
    run; a published (red) mark per published value, with its half-width as its reach; a legend
    with the published entry only when something is published."""
    model = published.figures()
    drawn = plot_model(model)
    fig = _drawn(model, tmp_path, monkeypatch)
    top, bottom = fig.axes
    for ax, panel in ((top, drawn.conditions), (bottom, drawn.estimand)):
        assert list(ax.get_xticks()) == list(panel.axis.ticks)
        assert [t.get_text() for t in ax.get_xticklabels()] == list(panel.axis.labels)
        assert ax.get_xlim() == (panel.axis.low, panel.axis.high)
        assert ax.get_xlabel() == f"{panel.axis.title}\n{panel.axis.detail}"
    dots = {c.get_gid(): len(c.get_offsets()) for c in top.collections if c.get_gid()}
    assert dots == {f"runs {r.key}": r.n for r in model.conditions}
    red = [
        line
        for ax in fig.axes
        for line in ax.lines
        if _colour(line.get_color()) == _colour(PUBLISHED)
    ]
    published_rows = [r for r in model.rows if r.published is not None]
    assert sorted(line.get_xdata()[0] for line in red if line.get_marker() == "x") == sorted(
        r.published for r in published_rows
    )
    texts = [t.get_text() for t in top.get_legend().get_texts()]
    assert texts == [
        "a valid run",
        "mean, 95% normal interval",
        "published value \u00b1 published half-width",
    ]
    bare = attrs.evolve(
        model,
        conditions=tuple(
            attrs.evolve(r, published=None, published_halfwidth=None) for r in model.conditions
        ),
        estimand=attrs.evolve(model.estimand, published=None, published_halfwidth=None),
    )
    (tmp_path / "bare").mkdir()
    fig = _drawn(bare, tmp_path / "bare", monkeypatch)
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert texts == ["a valid run", "mean, 95% normal interval"]
    assert not [
        line
        for ax in fig.axes
        for line in ax.lines
        if _colour(line.get_color()) == _colour(PUBLISHED)
    ]


def _svg_figures(page: str) -> dict[tuple[str, str], dict[str, Any]]:
    """The figures the HTML page's plot draws, by (kind, key): data-field to data-value."""
    elements = parse(page)
    svg = next(e for e in elements if e.tag == "svg")
    found: dict[tuple[str, str], dict[str, Any]] = {}
    todo = list(svg.children)
    while todo:
        e = todo.pop()
        todo += e.children
        for kind in ("condition", "estimand"):
            if f"data-{kind}" in e.attrs and "data-value" in e.attrs:
                key = (kind, e.attrs[f"data-{kind}"])
                found.setdefault(key, {})[e.attrs["data-field"]] = json.loads(e.attrs["data-value"])
    return found


@pytest.mark.slow
def test_png_and_html_plot_show_the_same(
    published: Shown, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The HTML page's plot and the PNG draw one model: the same axes (ends, ticks, labels,
    titles), the same runs per condition, and for every row the same figures: the observed
    mean and interval, the published value, and the published half-width exactly where the
    model has one."""
    model = published.figures()
    page = published.html()
    elements = parse(page)
    fig = _drawn(model, tmp_path, monkeypatch)
    for ax, name in zip(fig.axes, ("conditions", "estimand"), strict=True):
        ticks = axis_ticks(elements, name)
        assert [v for v, _ in ticks] == list(ax.get_xticks())
        assert [label for _, label in ticks] == [t.get_text() for t in ax.get_xticklabels()]
        assert axis_range(elements, name) == ax.get_xlim()
        group = next(e for e in elements if e.attrs.get("data-axis") == name)
        titles = [
            c.text for c in group.children if c.attrs.get("class") in ("axis-title", "axis-detail")
        ]
        assert "\n".join(titles) == ax.get_xlabel()
    points, _ = plot_runs(elements)
    png_points = {
        c.get_gid(): sorted(c.get_offsets()[:, 0].tolist())
        for c in fig.axes[0].collections
        if c.get_gid()
    }
    assert png_points == {f"runs {r.key}": sorted(points[r.key]) for r in model.conditions}
    in_svg = _svg_figures(page)
    for row in model.rows:
        key = ("estimand" if row.is_estimand else "condition", row.key)
        want: dict[str, Any] = {}
        if row.mean is not None:
            want["value" if row.is_estimand else "mean"] = row.mean
        if row.interval is not None:
            want |= {"low": row.interval.low, "high": row.interval.high}
        if row.published is not None:
            want["published"] = row.published
            if row.published_halfwidth is not None:
                want["published_halfwidth"] = row.published_halfwidth
        assert in_svg[key] == want, key
    assert in_svg[("condition", "c00")]["published_halfwidth"] == 6.5
    assert legend(elements) == ["runs", "observed", "published"]


# --------------------------------------------------------------------------- the terminal


def test_terminal_table_shows_the_models_figures(published: Shown) -> None:
    """repro show's conditions table has a line per row of the model with its ID, n, mean,
    interval and published value, and the estimand's line its value and half-width."""
    buffer = io.StringIO()
    model = published.figures()
    print_tables(model, published.tiers, Console(file=buffer, width=240, color_system=None))
    text = buffer.getvalue()
    for r in model.conditions:
        assert r.mean is not None and r.interval is not None
        line = next(li for li in text.splitlines() if f" {r.key} " in li)
        cells = [f"{r.n}", f"{r.mean:.4f}", f"[{r.interval.low:.4f}, {r.interval.high:.4f}]"]
        cells += [] if r.published is None else [str(r.published)]
        assert all(cell in line for cell in cells), (line, cells)
    e = model.estimand
    assert e.mean is not None and e.interval is not None
    assert f"{e.key}: {e.mean:.4f} ± {e.interval.halfwidth:.4f}" in text


def test_ties_are_counted_the_most_runs_first() -> None:
    """Values two or more runs share, with how many, the most runs first then by value; a
    plot names at most four a row, none within an eighth of the axis of one named before."""
    from repro._figures import Tie, _ties, nice_axis, ties_to_name

    ties = _ties([500.0] * 10 + [1.0, 2.0, 2.0, 3.0, 1.0])
    assert ties == (Tie(500.0, 10), Tie(1.0, 2), Tie(2.0, 2))
    axis = nice_axis(0.0, 500.0, "m")
    assert ties_to_name(ties, axis) == [Tie(500.0, 10), Tie(1.0, 2)]
    assert Tie(500.0, 10).text(axis) == "\u00d710 at 500"
    assert _ties([1.0, 2.0, 3.0]) == ()
