"""The figures model (repro.derive.figures) that every view of a bundle reads: it carries each
published half-width, the PNG's panels draw them, the PNG and the HTML page's plot show the same
figures because they read the same model, and so does the terminal's table."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from htmlpage import parse
from repro.derive.figures import FigureRow, figures
from repro.present.plot import Panel, panels, plot
from repro.present.showing import Shown, load
from repro.present.terminal import print_tables


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


def test_the_model_carries_each_published_halfwidth(published: Shown) -> None:
    """Built from protocol, aggregates and tiers, the model has a row per condition in the order
    of aggregates.json and one for the estimand; each condition's published value is tiers.json's
    figure, its published half-width the protocol's, and the estimand's both are tiers.json's."""
    model = figures(published.protocol, published.aggregates, published.tiers)
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


def test_png_panels_draw_each_published_halfwidth(published: Shown) -> None:
    """A PNG panel per row of the model: a condition with a published half-width gets a
    published error bar of that half-width, inside the panel's x range; one without gets a
    bare published mark; the estimand's panel comes last."""
    model = published.figures()
    drawn = panels(model)
    assert [p.label for p in drawn] == [r.label for r in model.rows]
    for row, panel in zip(model.rows, drawn, strict=True):
        assert (panel.published, panel.published_halfwidth) == (
            row.published,
            row.published_halfwidth,
        )
        if row.published is not None and row.published_halfwidth is not None:
            assert panel.xlim is not None
            low, high = panel.xlim
            assert low < row.published - row.published_halfwidth
            assert row.published + row.published_halfwidth < high
            assert f"published {row.published} ± {row.published_halfwidth}" in panel.note
    with_half = [p.label for p in drawn if p.published_halfwidth is not None]
    assert with_half == [model.conditions[0].label, model.estimand.label]


def test_plot_draws_what_its_panels_hold(
    published: Shown, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """plot() makes one published (red) error bar per panel with a published value, with the
    panel's half-width as its reach each side (none without one), and writes a PNG."""
    pytest.importorskip("matplotlib")
    from matplotlib.axes import Axes

    calls: list[dict[str, Any]] = []
    real = Axes.errorbar

    def errorbar(self: Axes, x: Any, y: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append({"x": x, **kwargs})
        return real(self, x, y, *args, **kwargs)

    monkeypatch.setattr(Axes, "errorbar", errorbar)
    model = published.figures()
    out = tmp_path / "plot.png"
    plot(model, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    red = [(c["x"], c["xerr"]) for c in calls if c["color"] == "tab:red"]
    want = [
        ([p.published], None if h is None else [[h], [h]])
        for p in panels(model)
        if p.published is not None
        for h in [p.published_halfwidth]
    ]
    assert red == want
    assert ([model.conditions[0].published], [[6.5], [6.5]]) in red


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


def _panel_figures(row: FigureRow, panel: Panel) -> dict[str, Any]:
    """What the PNG's panel of ``row`` draws, named as the HTML page names it."""
    drawn: dict[str, Any] = {}
    if panel.observed is not None:
        drawn["value" if row.is_estimand else "mean"] = panel.observed
        if panel.observed_reach is not None:
            drawn["low"] = panel.observed - panel.observed_reach[0]
            drawn["high"] = panel.observed + panel.observed_reach[1]
    if panel.published is not None:
        drawn["published"] = panel.published
        if panel.published_halfwidth is not None:
            drawn["published_halfwidth"] = panel.published_halfwidth
    return drawn


def test_png_and_html_plot_show_the_same_figures(published: Shown) -> None:
    """For every row of the model, the HTML page's plot and the PNG's panel show the same
    figures: the observed mean and interval, the published value, and the published half-width
    exactly where the model has one (a condition's included)."""
    model = published.figures()
    in_svg = _svg_figures(published.html())
    for row, panel in zip(model.rows, panels(model), strict=True):
        key = ("estimand" if row.is_estimand else "condition", row.key)
        png = _panel_figures(row, panel)
        svg = in_svg[key]
        assert set(svg) == set(png), (key, svg, png)
        for field, value in svg.items():
            assert value == pytest.approx(png[field], rel=1e-12, abs=1e-12), (key, field)
        assert svg.get("published_halfwidth") == row.published_halfwidth
    assert in_svg[("condition", "c00")]["published_halfwidth"] == 6.5


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
