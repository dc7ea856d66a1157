"""The HTML report as headless Chromium renders it: the DOM it builds holds the plot's every
valid run, nice ticks, axis titles that name the measure, and a published legend only where
something is published, and, for a bundle with contrasts, every contrast's figures as
contrasts.json holds them; and the plot (and the forest plot of the contrasts) is drawn at the
width of the page's content column, at a wide and at a narrow window, as the DOM's layout and a
screenshot's pixels both say, not at a fixed 360 px.

Like tests/test_show.py's, these tests are skipped when /usr/bin/chromium is missing, unless CI
is set, in which case its absence fails them. Nothing here depends on how long Chromium takes:
each run has a generous timeout, and nothing is timed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from browser import run_chromium
from htmlpage import (
    axis_range,
    axis_ticks,
    check_figures,
    check_runs,
    expected_contrasts,
    external_references,
    legend,
    parse,
    without_section,
)
from repro._cli.app import app

# Slow: renders reports in headless Chromium.
pytestmark = pytest.mark.slow

runner = CliRunner()
#: A run of Chromium may take this long on a busy machine before the test gives up on it.
TIMEOUT = 300
#: The window widths rendered: a desktop's and a narrow one (headless windows are at least
#: 500 px wide).
WIDE, NARROW = 1280, 600


def _chromium(chromium: Path, tmp_path: Path, width: int, *args: str) -> str:
    """Run headless Chromium on a ``width`` px wide window with ``args``, its scrollbars hidden
    so that the layout's width is the window's, and return its stdout."""
    window = ("--hide-scrollbars", f"--window-size={width},2400")
    return run_chromium(chromium, tmp_path, *window, *args, timeout=TIMEOUT)


def _page(bundle: Path, tmp_path: Path) -> Path:
    page = tmp_path / "report.html"
    result = runner.invoke(app, ["show", str(bundle), "--html", str(page)])
    assert result.exit_code == 0, result.output
    return page


def _json(bundle: Path, name: str) -> Any:
    return json.loads((bundle / "data" / name).read_text("utf-8"))


@pytest.mark.parametrize("which", ["published_bundle", "scored_bundle"])
def test_chromium_shows_every_run_the_ticks_and_the_legend(
    which: str, request: pytest.FixtureRequest, chromium: Path, tmp_path: Path
) -> None:
    """In the DOM Chromium builds from the page: every figure is the bundle's, each condition
    has a point per valid run with that run's measure, both axes have ticks a step of 1, 2 or
    5 times a power of ten apart, the conditions' axis is titled with the measure, and the
    legend names published values exactly when the bundle has some."""
    bundle: Path = request.getfixturevalue(which)
    page = _page(bundle, tmp_path)
    elements = parse(_chromium(chromium, tmp_path, WIDE, "--dump-dom", page.as_uri()))
    check_figures(elements, bundle)
    assert check_runs(elements, bundle) == "points"
    for name in ("conditions", "estimand"):
        ticks = axis_ticks(elements, name)
        assert len(ticks) >= 2
        assert all(float(label) == pytest.approx(value) for value, label in ticks)
    measure = _json(bundle, "aggregates.json")["measure"]
    titles = [
        e.text
        for e in without_section(elements, "contrasts")
        if e.attrs.get("class") == "axis-title"
    ]
    assert titles[0] == measure
    published = bool(_json(bundle, "tiers.json")["reproduction"]["figures"])
    assert ("published" in legend(elements)) == published
    assert published == (which == "published_bundle")


def test_chromium_shows_the_contrasts(
    contrasted_bundle: Path, chromium: Path, tmp_path: Path
) -> None:
    """In the DOM Chromium builds from the page of a bundle with contrasts: every figure is the
    bundle's, each contrast's (by ``data-contrast`` and ``data-field``) equal to contrasts.json
    to the last bit, in the table's text and in the forest plot's marks; the forest plot has a
    row per contrast in the family's order on an axis of differences with nice ticks that
    holds 0, titled with the measure; and nothing refers outside the page."""
    page = _page(contrasted_bundle, tmp_path)
    elements = parse(_chromium(chromium, tmp_path, WIDE, "--dump-dom", page.as_uri()))
    in_text = check_figures(elements, contrasted_bundle)
    want = expected_contrasts(contrasted_bundle)
    assert set(want) <= in_text
    stored = _json(contrasted_bundle, "contrasts.json")["contrasts"]
    drawn = {
        (e.attrs["data-contrast"], e.attrs["data-field"]): json.loads(e.attrs["data-value"])
        for e in elements
        if "data-contrast" in e.attrs and e.tag in ("circle", "rect", "line", "tspan")
    }
    for c in stored:
        assert drawn[(c["id"], "estimate")] == c["estimate"]
        assert drawn[(c["id"], "low")] == c["interval"]["low"]
        assert drawn[(c["id"], "high")] == c["interval"]["high"]
        assert drawn[(c["id"], "verdict")] == c["verdict"]
    rows = [e.attrs["data-forest-row"] for e in elements if "data-forest-row" in e.attrs]
    assert rows == [c["id"] for c in stored]
    ticks = axis_ticks(elements, "contrasts")
    assert len(ticks) >= 2
    assert all(float(label) == pytest.approx(value) for value, label in ticks)
    low, high = axis_range(elements, "contrasts")
    assert low < 0 < high
    measure = _json(contrasted_bundle, "aggregates.json")["measure"]
    titles = [e.text for e in elements if e.attrs.get("class") == "axis-title"]
    assert titles[0] == f"{measure}: difference a - b (positive favours a)"
    assert check_runs(elements, contrasted_bundle) == "points"
    assert external_references(elements, page.as_uri()) == []


#: Measures the laid-out page and writes the rectangles into the DOM, for --dump-dom: the
#: content column (the conditions table's section), the SVG the axis ``AXIS`` (``conditions``,
#: the plot's; ``contrasts``, the forest plot's) is in, and that axis' line.
_MEASURE = """<script>
(() => {
  const x = e => { const b = e.getBoundingClientRect(); return [b.left, b.right]; };
  const axis = document.querySelector('[data-axis=AXIS] line.axis');
  document.body.setAttribute('data-rects', JSON.stringify({
    viewport: innerWidth,
    page: document.documentElement.scrollWidth,
    column: x(document.getElementById('conditions')),
    svg: x(axis.closest('svg')),
    axis: x(axis),
  }));
})();
</script>"""
#: The axis ``AXIS``'s line, drawn thick in a colour nothing else on the page has.
_MARK = "<style>svg [data-axis=AXIS] line.axis { stroke: #ff00ff; stroke-width: 4; }</style>"


def _measuring_copy(page: Path, tmp_path: Path, axis: str) -> Path:
    """A copy of ``page`` that may run one inline script (the measuring one, appended) and
    draws the axis ``axis`` in magenta: the page itself runs none."""
    text = page.read_text("utf-8")
    policy = "default-src 'none'; style-src 'unsafe-inline'"
    assert text.count(policy) == 1 and "<script" not in text
    text = text.replace(policy, policy + "; script-src 'unsafe-inline'")
    mark, measure = _MARK.replace("AXIS", axis), _MEASURE.replace("AXIS", axis)
    text = text.replace("</head>", mark + "</head>").replace("</body>", measure + "</body>")
    copy = tmp_path / "measured.html"
    copy.write_text(text, "utf-8")
    return copy


def _magenta_extent(png: Path) -> tuple[int, int]:
    """The leftmost and rightmost columns of the screenshot with magenta pixels."""
    image = pytest.importorskip("PIL.Image").open(png).convert("RGB")
    width, height = image.size
    pixels = image.load()
    columns = [
        x
        for x in range(width)
        if any(r > 200 and b > 200 and g < 80 for r, g, b in (pixels[x, y] for y in range(height)))
    ]
    assert columns, "no magenta axis in the screenshot"
    return columns[0], columns[-1]


@pytest.mark.parametrize(
    ("which", "axis"), [("published_bundle", "conditions"), ("contrasted_bundle", "contrasts")]
)
@pytest.mark.parametrize("width", [WIDE, NARROW])
def test_the_plot_is_as_wide_as_the_content_column(
    width: int,
    which: str,
    axis: str,
    request: pytest.FixtureRequest,
    chromium: Path,
    tmp_path: Path,
) -> None:
    """At a wide and at a narrow window, the plot's SVG (and the forest plot's, of a bundle
    with contrasts) is exactly as wide as the content column (the conditions table's section),
    its axis spans nearly all of it (less only the padding that keeps the outer tick labels on
    the page), the page does not overflow the window, and the screenshot's pixels show the
    axis drawn from the same left to the same right."""
    bundle: Path = request.getfixturevalue(which)
    page = _measuring_copy(_page(bundle, tmp_path), tmp_path, axis)
    dom = parse(_chromium(chromium, tmp_path, width, "--dump-dom", page.as_uri()))
    rects = json.loads(next(e for e in dom if "data-rects" in e.attrs).attrs["data-rects"])
    column, svg, line = rects["column"], rects["svg"], rects["axis"]
    column_width = column[1] - column[0]
    assert rects["viewport"] == width and rects["page"] <= width
    assert svg == pytest.approx(column, abs=1)
    assert line[1] - line[0] >= 0.9 * column_width
    assert column[0] <= line[0] < line[1] <= column[1]
    if width == WIDE:
        # The page's width class: its 72rem column, not a plot of 360 px.
        assert column_width == pytest.approx(72 * 16, abs=1)
        assert line[1] - line[0] > 2.5 * 360
    else:
        assert column_width <= width - 16
    shot = tmp_path / "shot.png"
    _chromium(chromium, tmp_path, width, f"--screenshot={shot}", page.as_uri())
    left, right = _magenta_extent(shot)
    assert left == pytest.approx(line[0], abs=3) and right == pytest.approx(line[1], abs=3)


#: Measures the forest plot's and the plot's text and lines as laid out, for --dump-dom.
_GEOMETRY = """<script>
(() => {
  const r = e => { const b = e.getBoundingClientRect();
    return [b.left, b.top, b.right, b.bottom]; };
  const all = q => [...document.querySelectorAll(q)].map(r);
  document.body.setAttribute('data-geometry', JSON.stringify({
    panels: [...document.querySelectorAll('[data-forest-panel]')].map(
      p => [p.getAttribute('data-forest-panel'), r(p.querySelector('line.axis'))]),
    zeros: all('#contrasts line.zero'),
    labels: all('#contrasts text.forest-label'),
    ties: [...document.querySelectorAll('text.tie')].map(
      t => [t.textContent, r(t), r(t.closest('g').querySelector('text'))]),
  }));
})();
</script>"""


def _overlap(a: list[float], b: list[float]) -> bool:
    """Whether two rectangles (left, top, right, bottom) share any area."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@pytest.mark.parametrize("width", [WIDE, NARROW])
def test_the_forest_has_a_panel_per_unit_and_its_zero_line_crosses_no_label(
    contrasted_bundle: Path, chromium: Path, tmp_path: Path, width: int
) -> None:
    """As Chromium lays out the page of a family with a difference of rates beside
    differences of the measure, at a wide and at a narrow window: the forest plot has two
    panels, the measure's above the rates', each with its own axis line; no 0 line crosses a
    contrast's label; and the plot names its ties (push-left on MountainCar, -200 every run)
    with text that has a size and stands clear of its row's label."""
    from repro._present.showing import load
    from test_html import _mixed

    page = tmp_path / "mixed.html"
    text = _mixed(load(contrasted_bundle)).html()
    policy = "default-src 'none'; style-src 'unsafe-inline'"
    text = text.replace(policy, policy + "; script-src 'unsafe-inline'")
    page.write_text(text.replace("</body>", _GEOMETRY + "</body>"), "utf-8")
    dom = parse(_chromium(chromium, tmp_path, width, "--dump-dom", page.as_uri()))
    found = json.loads(next(e for e in dom if "data-geometry" in e.attrs).attrs["data-geometry"])
    panels = found["panels"]
    assert [unit for unit, _ in panels] == ["measure", "rate"]
    assert panels[0][1][3] < panels[1][1][1]  # the measure's axis above the rates'
    assert len(found["zeros"]) == 3 and len(found["labels"]) == 3
    for zero in found["zeros"]:
        for label in found["labels"]:
            assert not _overlap(zero, label), (zero, label)
    assert found["ties"]
    assert any(t.endswith(" at -200") for t, _, _ in found["ties"])
    for tie, box, label in found["ties"]:
        assert box[2] > box[0] and box[3] > box[1], tie
        assert not _overlap(box, label), (tie, box, label)
