"""The HTML report (repro.present.html.render), read back with html.parser: every figure it
carries is the bundle's to the last bit, it needs nothing outside itself, user text cannot break
out of its place, and the plot draws each figure where its value says."""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path

import attrs
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from htmlpage import Element, check_figures, external_references, parse
from repro.models import ConditionAggregate, IntervalValue
from repro.present.html import render
from repro.present.showing import Shown, load


def _render(shown: Shown) -> str:
    return shown.html()


@pytest.fixture(scope="module")
def published(published_bundle: Path) -> Shown:
    """The parsed files of the bundle with published figures and a loss."""
    return load(published_bundle)


@pytest.fixture(scope="module")
def scored(scored_bundle: Path) -> Shown:
    """The parsed files of the scored example bundle."""
    return load(scored_bundle)


def _svg(elements: list[Element]) -> list[Element]:
    svgs = [e for e in elements if e.tag == "svg"]
    assert len(svgs) == 1
    inside: list[Element] = []
    todo = list(svgs[0].children)
    while todo:
        element = todo.pop(0)
        inside.append(element)
        todo[:0] = element.children
    return inside


def _x(element: Element) -> float:
    """Where a plot mark stands: a circle's centre, a tick's x, the centre of a cross."""
    if element.tag == "circle":
        return float(element.attrs["cx"])
    if element.tag == "line":
        return (float(element.attrs["x1"]) + float(element.attrs["x2"])) / 2
    numbers = [float(n) for n in re.findall(r"-?[0-9.]+", element.attrs["d"])]
    return sum(numbers[0::2]) / len(numbers[0::2])


def _marks(elements: list[Element], condition: str) -> dict[str, Element]:
    return {
        e.attrs["data-field"]: e
        for e in _svg(elements)
        if e.attrs.get("data-condition") == condition
    }


# --------------------------------------------------------------------------- figures


@pytest.mark.parametrize("which", ["published_bundle", "scored_bundle"])
def test_every_figure_is_the_bundles(which: str, request: pytest.FixtureRequest) -> None:
    """Each data-value in the page is the figure of aggregates.json, tiers.json, the ledger or
    scores.json it names, with the same JSON type and the same float; each table cell's text
    rounds to it; every figure is there, and each condition's n, mean, sd and interval are in
    the conditions table, not only in the plot."""
    bundle: Path = request.getfixturevalue(which)
    shown = load(bundle)
    in_text = check_figures(parse(_render(shown)), bundle)
    for c in shown.aggregates.conditions:
        for field in ("valid", "mean", "sd", "low", "high"):
            assert ("condition", c.condition, field) in in_text


def test_the_page_says_what_the_bundle_says(published: Shown) -> None:
    """Title, protocol id and sha256, the bundle's identity, the reproduction class, every
    tier's verdict with its evidence, and every loss are on the page."""
    elements = parse(_render(published))
    text = "".join(e.text for e in elements if e.tag == "body")
    p = published.protocol
    assert [e.text for e in elements if e.tag == "h1"] == [p.protocol.title]
    assert any(e.attrs.get("data-protocol") == p.protocol.id for e in elements)
    assert any(e.attrs.get("data-protocol-sha256") == p.sha256 for e in elements)
    assert published.bundle_sha256 in text
    verdicts = [e.attrs["data-reproduction"] for e in elements if "data-reproduction" in e.attrs]
    assert verdicts == [published.tiers.reproduction.verdict] == ["failed"]
    assert published.tiers.reproduction.reason in text
    shown_tiers = {
        e.attrs["data-tier"]: [c.attrs.get("data-verdict") for c in e.children]
        for e in elements
        if "data-tier" in e.attrs
    }
    for tier in published.tiers.tiers:
        assert tier.verdict in shown_tiers[tier.name]
        assert all(item in text for item in tier.evidence)
    assert published.ledger.losses
    for loss in published.ledger.losses:
        assert loss.slot in text and loss.cause in text


def test_scored_page_has_the_cells_and_gates(scored: Shown) -> None:
    """A scored bundle's page has a row per cell and says whether each publish gate holds."""
    assert scored.scores is not None
    elements = parse(_render(scored))
    gates = {
        e.attrs["data-gate"]: e.attrs["data-holds"] for e in elements if "data-gate" in e.attrs
    }
    assert gates == {g.name: "true" if g.holds else "false" for g in scored.scores.gates}
    cells = {e.attrs["data-cell"] for e in elements if "data-cell" in e.attrs}
    assert cells == {c.condition for c in scored.scores.cells}


def test_the_page_needs_nothing_outside_itself(published: Shown) -> None:
    """No script, no linked or embedded resource, no URL in any fetching attribute or style,
    and a Content-Security-Policy that forbids every fetch; the citation's URL is text only."""
    page = _render(published)
    elements = parse(page)
    tags = {e.tag for e in elements}
    assert not tags & {"script", "link", "img", "iframe", "object", "embed", "image", "use"}
    assert external_references(elements, "") == []
    assert not [e for e in elements if {"src", "href"} & set(e.attrs)]
    policy = [e.attrs["content"] for e in elements if e.attrs.get("http-equiv")]
    assert policy == ["default-src 'none'; style-src 'unsafe-inline'"]
    assert "https://example.org/paper" in "".join(e.text for e in elements if e.tag == "code")


# --------------------------------------------------------------------------- user text

#: Markup's own characters, often, among any others.
_MARKUP = st.sampled_from([*"<>&\"'/=;#!-", "<script>", "<b ", "&amp;", "&#x3c;", "-->"])
_TEXT = st.lists(
    _MARKUP | st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20
).map("".join)
#: A title is one line: the model refuses control characters and line separators.
_TITLE = st.lists(
    _MARKUP | st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1
).map("".join)


def _tags(elements: list[Element]) -> Counter[str]:
    return Counter(e.tag for e in elements)


@settings(max_examples=60, deadline=None)
@given(title=_TITLE, level=_TEXT, reason=_TEXT, cause=_TEXT)
@example(
    title="<script>alert(1)</script>",
    level='"><b onclick="x',
    reason="</td></tr></table><p>",
    cause="&lt;&amp;<!--",
)
def test_user_text_stays_text(
    published: Shown, title: str, level: str, reason: str, cause: str
) -> None:
    """Whatever a title, a factor level, a tier's reason or a loss's cause holds (markup,
    quotes, ampersands, entities), the page has the same elements as with plain text, and each
    reads back exactly where it belongs."""
    fp = published.protocol
    tiers = published.tiers
    # c01 has no published figure, so a new level leaves the figures' matching as it was.
    first, second, *rest = published.aggregates.conditions
    changed = attrs.evolve(
        published,
        protocol=attrs.evolve(fp, protocol=attrs.evolve(fp.protocol, title=title)),
        aggregates=attrs.evolve(
            published.aggregates,
            conditions=(first, attrs.evolve(second, factors={"env_id": level}), *rest),
        ),
        tiers=attrs.evolve(
            tiers, tiers=(attrs.evolve(tiers.tiers[0], reason=reason), *tiers.tiers[1:])
        ),
        ledger=attrs.evolve(
            published.ledger,
            losses=tuple(attrs.evolve(loss, cause=cause) for loss in published.ledger.losses),
        ),
    )
    elements = parse(_render(changed))
    assert _tags(elements) == _tags(parse(_render(published)))
    head = next(e for e in elements if e.tag == "head")
    assert [e.text for e in head.children if e.tag == "title"] == [title]
    assert [e.text for e in elements if e.tag == "h1"] == [title]
    labels = [e.text for e in elements if e.tag == "td" and e.attrs.get("class") == "label"]
    assert labels[1] == f"env_id={level} / {second.participant}"
    tier_rows = [e for e in elements if e.attrs.get("data-tier") == tiers.tiers[0].name]
    assert tier_rows[0].children[2].text == reason
    loss_rows = [
        e for e in elements if e.tag == "tr" and e.children and "data-slot" in e.children[-1].attrs
    ]
    assert [row.children[2].text for row in loss_rows] == [cause] * len(published.ledger.losses)


# --------------------------------------------------------------------------- the plot


def test_marks_stand_where_their_values_say(published: Shown) -> None:
    """In each condition's row the interval's ends frame the mean, and the published cross
    stands on the side of the mean its value is on; a published half-width spans the cross."""
    elements = parse(_render(published))
    figures = {f.figure: f for f in published.tiers.reproduction.figures}
    for c in published.aggregates.conditions:
        assert c.mean is not None and c.interval is not None
        marks = _marks(elements, c.condition)
        assert _x(marks["low"]) <= _x(marks["mean"]) <= _x(marks["high"])
        f = figures.get(f"{c.condition} mean")
        if f is None:
            assert "published" not in marks
            continue
        side = _x(marks["published"]) - _x(marks["mean"])
        assert math.copysign(1, side) == math.copysign(1, f.published - c.mean) or side == 0
        if "published_halfwidth" in marks:
            line = marks["published_halfwidth"]
            assert float(line.attrs["x1"]) < _x(marks["published"]) < float(line.attrs["x2"])
    assert "published_halfwidth" in _marks(elements, "c00")


def test_conditions_comparable_share_one_scale(scored: Shown) -> None:
    """When the conditions' intervals are a visible share of their spread (the scored example's
    rates), they share one scale: a larger mean stands further right."""
    elements = parse(_render(scored))
    assert any(e.text == "conditions on one scale; the estimand on its own" for e in elements)
    means = sorted(
        (c.mean, _x(_marks(elements, c.condition)["mean"]))
        for c in scored.aggregates.conditions
        if c.mean is not None
    )
    assert [x for _, x in means] == sorted(x for _, x in means)
    assert means[0][1] < means[-1][1]


def _condition(name: str, mean: float | None, low: float, high: float) -> ConditionAggregate:
    interval = (
        None if mean is None else IntervalValue("normal", 0.95, low, high, high / 2 - low / 2)
    )
    return ConditionAggregate(
        name, {"arm": name}, "p", 10, 0 if mean is None else 10, 0, 0, mean, 1.0, interval
    )


@pytest.mark.parametrize(
    ("spread", "share"),
    [(1000.0, "each row on its own scale"), (1.0, "conditions on one scale")],
)
def test_intervals_too_narrow_to_see_get_a_scale_each(
    published: Shown, spread: float, share: str
) -> None:
    """Means far apart next to narrow intervals (CAGE-2's) get a scale each, so that each
    interval stays visible; means close together share one."""
    conditions = (
        _condition("a", 0.0, -0.5, 0.5),
        _condition("b", spread, spread - 0.5, spread + 0.5),
    )
    agg = attrs.evolve(published.aggregates, conditions=conditions)
    tiers = attrs.evolve(
        published.tiers,
        reproduction=attrs.evolve(published.tiers.reproduction, figures=()),
    )
    elements = parse(render(published.protocol, agg, tiers, published.ledger))
    assert any(e.tag == "text" and e.text.startswith(share) for e in elements)


_FINITE = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=80, deadline=None)
@example(
    values=[(-1.7e308, -1.7e308, 1.7e308), (None, 0.0, 0.0)],
    published_value=-1.7e308,
    half=1.7e308,
)
@given(
    values=st.lists(st.tuples(st.none() | _FINITE, _FINITE, _FINITE), min_size=1, max_size=4),
    published_value=_FINITE,
    half=_FINITE.map(abs),
)
def test_any_finite_figures_plot_inside_the_frame(
    published: Shown,
    values: list[tuple[float | None, float, float]],
    published_value: float,
    half: float,
) -> None:
    """Whatever finite figures a bundle holds (up to the largest floats, a mean left undefined),
    every mark has finite coordinates inside the plot, and an undefined mean shows as n/a."""
    conditions = tuple(_condition(f"c{i:02d}", m, lo, hi) for i, (m, lo, hi) in enumerate(values))
    agg = attrs.evolve(published.aggregates, conditions=conditions)
    fp = published.protocol
    assert fp.protocol.published is not None
    pc = attrs.evolve(
        fp.protocol.published.conditions[0],
        factors={"arm": "c00"},
        participant=None,
        mean=published_value,
        halfwidth=half,
    )
    fp = attrs.evolve(
        fp,
        protocol=attrs.evolve(
            fp.protocol, published=attrs.evolve(fp.protocol.published, conditions=(pc,))
        ),
    )
    figure = attrs.evolve(
        published.tiers.reproduction.figures[0], figure="c00 mean", published=published_value
    )
    tiers = attrs.evolve(
        published.tiers, reproduction=attrs.evolve(published.tiers.reproduction, figures=(figure,))
    )
    elements = parse(render(fp, agg, tiers, published.ledger))
    svg = next(e for e in elements if e.tag == "svg")
    # html.parser lowers attribute names.
    width = float(svg.attrs["viewbox"].split()[2])
    for mark in _svg(elements):
        for name in ("cx", "x1", "x2", "d"):
            # A path is "M x y L x y ...": every token between its commands is a number.
            for number in re.split(r"[ML ]", mark.attrs.get(name, "")):
                if number:
                    assert math.isfinite(float(number)) and 0 <= float(number) <= width, mark
    for i, (mean, _, _) in enumerate(values):
        cells = [
            e for e in elements if e.tag == "td" and e.attrs.get("data-condition") == f"c{i:02d}"
        ]
        shown_mean = next(e for e in cells if e.attrs["data-field"] == "mean")
        assert shown_mean.text == ("n/a" if mean is None else f"{mean:.4f}")
        assert shown_mean.attrs["data-value"] == ("null" if mean is None else repr(mean))
