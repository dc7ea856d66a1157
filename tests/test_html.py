"""The HTML report (repro._present.html.render), read back with html.parser: every figure it
carries is the bundle's to the last bit, it needs nothing outside itself, user text cannot break
out of its place, and the plot draws each figure where its value says, every valid run, on one
axis with nice ticks, the estimand on its own; losses are grouped by cause, the tiers table has
no empty column, contract facts are a table, and the page says when the study ran and which
repro made it. A bundle with contrasts (and only such a bundle) has a Contrasts section: a
forest plot of every contrast on one axis of differences, a table of their claims, groups,
samples, figures and verdicts, and a sentence of the claim per primary contrast."""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from pathlib import Path

import attrs
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import SMALL, study_once
from htmlpage import (
    Element,
    axis_range,
    axis_ticks,
    check_figures,
    check_runs,
    expected_contrasts,
    expected_runs,
    external_references,
    legend,
    parse,
    plot_runs,
    without_section,
)
from repro._escape import visible
from repro._figures import POINTS_LIMIT, condition_label, forest_model
from repro._present.html import render, repro_version
from repro._present.losses import MAX_SLOTS_LISTED, slot_list
from repro._present.showing import Shown, load
from repro.models import ConditionAggregate, ContrastResult, IntervalValue
from synthetic import synthetic_bundle


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


@pytest.fixture(scope="module")
def contrasted(contrasted_bundle: Path) -> Shown:
    """The parsed files of the bundle with three pre-registered contrasts."""
    return load(contrasted_bundle)


def _svg(elements: list[Element]) -> list[Element]:
    """Everything inside the conditions' plot (the one SVG outside the contrasts' section)."""
    svgs = [e for e in without_section(elements, "contrasts") if e.tag == "svg"]
    assert len(svgs) == 1
    inside: list[Element] = []
    todo = list(svgs[0].children)
    while todo:
        element = todo.pop(0)
        inside.append(element)
        todo[:0] = element.children
    return inside


def _pc(text: str) -> float:
    """An x coordinate of the plot: a percentage of its width."""
    assert text.endswith("%"), text
    return float(text[:-1])


def _x(element: Element) -> float:
    """Where a plot mark stands, in percent of the plot's width: a circle's centre, a line's
    middle, a text's anchor (the published cross)."""
    if element.tag == "circle":
        return _pc(element.attrs["cx"])
    if element.tag == "line":
        return (_pc(element.attrs["x1"]) + _pc(element.attrs["x2"])) / 2
    return _pc(element.attrs["x"])


def _marks(elements: list[Element], condition: str) -> dict[str, Element]:
    return {
        e.attrs["data-field"]: e
        for e in _svg(elements)
        if e.attrs.get("data-condition") == condition
    }


# --------------------------------------------------------------------------- figures


@pytest.mark.slow
@pytest.mark.parametrize("which", ["published_bundle", "scored_bundle", "contrasted_bundle"])
def test_every_figure_is_the_bundles(which: str, request: pytest.FixtureRequest) -> None:
    """Each data-value in the page is the figure of aggregates.json, tiers.json, the ledger or
    scores.json it names, with the same JSON type and the same float; each table cell's text
    rounds to it; every figure is there, and each condition's n, mean, sd and interval are in
    the conditions table, not only in the plot; the plot draws every valid run's measure."""
    bundle: Path = request.getfixturevalue(which)
    shown = load(bundle)
    elements = parse(_render(shown))
    in_text = check_figures(elements, bundle)
    for c in shown.aggregates.conditions:
        for field in ("valid", "mean", "sd", "low", "high"):
            assert ("condition", c.condition, field) in in_text
    assert check_runs(elements, bundle) == "points"


def test_the_page_says_what_the_bundle_says(published: Shown) -> None:
    """Title, protocol id and sha256, the bundle's identity, when the study ran and with which
    repro, the repro that made the page, the reproduction class, every tier's verdict with its
    evidence (the contract's as a table of facts), and every loss's cause and slot."""
    elements = parse(_render(published))
    text = "".join(e.text for e in elements if e.tag == "body")
    p = published.protocol
    assert [e.text for e in elements if e.tag == "h1"] == [p.protocol.title]
    assert any(e.attrs.get("data-protocol") == p.protocol.id for e in elements)
    assert any(e.attrs.get("data-protocol-sha256") == p.sha256 for e in elements)
    assert published.bundle_sha256 in text
    env = published.environment
    assert env is not None
    when = next(e for e in elements if "data-started" in e.attrs)
    assert (when.attrs["data-started"], when.attrs["data-finished"]) == (
        env.started_utc,
        env.finished_utc,
    )
    times = [e.attrs["datetime"] for e in when.children if e.tag == "time"]
    assert times == [env.started_utc, env.finished_utc]
    assert f"made by repro {repro_version()}" in text
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
        if tier.name != "contract":
            assert all(item in text for item in tier.evidence)
    _assert_contract_facts(elements, published)
    assert published.ledger.losses
    for loss in published.ledger.losses:
        assert loss.slot in text and loss.cause in text


def _assert_contract_facts(elements: list[Element], shown: Shown) -> None:
    """Every condition's every contract fact is on the page: in its cell of the table, or once
    among those every condition shares."""
    cells = {
        (e.attrs["data-contract"], e.attrs["data-fact"]): " ".join(e.text.split())
        for e in elements
        if "data-contract" in e.attrs
    }
    assert cells
    for condition, facts in shown.ledger.contracts.items():
        for key, value in facts.items():
            shown_value = cells.get((condition, key), cells.get(("*", key)))
            assert shown_value is not None, (condition, key)
            assert " ".join(str(value).split()) in shown_value, (condition, key)


def test_contract_facts_are_a_table(published: Shown) -> None:
    """The contract tier's evidence (a long ``key=value, ...`` line per condition) is shown as
    facts: those every condition shares once, the rest a table of condition by fact; a long
    fact shows its start and opens to the whole of it."""
    elements = parse(_render(published))
    contract_row = next(e for e in elements if e.attrs.get("data-tier") == "contract")
    assert "=" not in contract_row.text
    section = next(e for e in elements if e.attrs.get("id") == "contracts")
    head = [e.text for e in section_elements(section) if e.tag == "th"]
    shared = [e.text for e in section_elements(section) if e.tag == "dt"]
    facts = {k for f in published.ledger.contracts.values() for k in f}
    assert set(head[1:]) | set(shared) == facts and head[:1] == ["condition"]
    # The small protocol's conditions share their observation space per environment only.
    assert "observation_space" in head and "max_episode_steps" in head
    long = "x" * 500
    contracts = {c: {**f, "long": long} for c, f in published.ledger.contracts.items()}
    changed = attrs.evolve(published, ledger=attrs.evolve(published.ledger, contracts=contracts))
    elements = parse(_render(changed))
    _assert_contract_facts(elements, changed)
    details = [e for e in elements if e.tag == "details"]
    assert len(details) == 1 and "(500 characters)" in details[0].children[0].text


def section_elements(section: Element) -> list[Element]:
    """Every element inside ``section``."""
    found, todo = [], list(section.children)
    while todo:
        e = todo.pop(0)
        found.append(e)
        todo[:0] = e.children
    return found


@pytest.mark.slow
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


@pytest.mark.parametrize("which", ["published_bundle", "contrasted_bundle"])
def test_the_same_bundle_gives_the_same_page(which: str, request: pytest.FixtureRequest) -> None:
    """Rendered twice, from two loads of the bundle: the same bytes (no random jitter, no
    clock)."""
    bundle: Path = request.getfixturevalue(which)
    assert load(bundle).html() == load(bundle).html()


# --------------------------------------------------------------------------- tiers, losses


def test_the_tiers_table_has_no_empty_column(published: Shown) -> None:
    """Without any tier's reason there is no reason column; with one there is, in place."""
    tiers = published.tiers
    plain = attrs.evolve(
        published,
        tiers=attrs.evolve(tiers, tiers=tuple(attrs.evolve(t, reason=None) for t in tiers.tiers)),
    )
    head = _tier_head(parse(_render(plain)))
    assert head == ["tier", "verdict", "evidence"]
    reasoned = attrs.evolve(
        published,
        tiers=attrs.evolve(
            tiers, tiers=(attrs.evolve(tiers.tiers[0], reason="why"), *tiers.tiers[1:])
        ),
    )
    elements = parse(_render(reasoned))
    assert _tier_head(elements) == ["tier", "verdict", "reason", "evidence"]
    row = next(e for e in elements if e.attrs.get("data-tier") == tiers.tiers[0].name)
    assert row.children[2].text == "why"


def _tier_head(elements: list[Element]) -> list[str]:
    section = next(e for e in elements if e.attrs.get("id") == "tiers")
    return [e.text for e in section_elements(section) if e.tag == "th"]


#: The small protocol on CartPole, with a policy that fails some episodes (two causes), and a
#: slot excluded before sealing.
FAILING = {
    **SMALL,
    "id": "report-failures",
    "matrix": [{"name": "env_id", "levels": ["CartPole-v1"]}],
    "participants": [
        {"id": "random", "kind": "random", "params": {}},
        {
            "id": "flaky",
            "kind": "callable",
            "params": {"target": "report_policies:sometimes_fails"},
        },
    ],
    "runs_per_condition": 40,
    "retry": {"max_attempts": 1},
    "exclusions": [{"slot": "c00-r0003", "reason": "declared before sealing"}],
}


@pytest.fixture(scope="module")
def failing_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real bundle of :data:`FAILING`."""
    return study_once(tmp_path_factory, "failing", FAILING)


@pytest.mark.slow
def test_losses_are_grouped_by_cause(failing_bundle: Path) -> None:
    """A row per outcome and cause, the most frequent first: how its slots ended (by their last
    attempt's status, as the runs files hold it: an invalid slot is not called failed), its
    number of slots and their attempts (data-value, checked against the ledger), and which
    slots, consecutive ones as a range; every figure is still the bundle's and every valid run
    drawn."""
    shown = load(failing_bundle)
    elements = parse(shown.html())
    check_figures(elements, failing_bundle)
    assert check_runs(elements, failing_bundle) == "points"
    causes = Counter((loss.outcome, loss.cause) for loss in shown.ledger.losses)
    assert len(causes) >= 3
    rows = [
        e for e in elements if e.tag == "tr" and any("data-cause" in c.attrs for c in e.children)
    ]
    shown_rows = [
        (r.children[2].attrs["data-outcome"], r.children[1].text, int(r.children[2].text))
        for r in rows
    ]
    assert sorted(shown_rows, key=lambda r: -r[2]) == shown_rows
    assert sorted(shown_rows) == sorted((o, c, n) for (o, c), n in causes.items())
    statuses = _statuses(failing_bundle)
    for row in rows:
        outcome, cause = row.children[2].attrs["data-outcome"], row.children[1].text
        slots = [
            loss.slot
            for loss in shown.ledger.losses
            if (loss.outcome, loss.cause) == (outcome, cause)
        ]
        assert row.children[-1].text == slot_list(slots)
        ended = {statuses[slot] for slot in slots}
        assert len(ended) == 1
        assert row.children[0].text.split(" ")[0] == ended.pop()
    excluded = next(r for r in rows if r.children[0].text == "excluded")
    assert excluded.children[-1].text == "c00-r0003"


def _statuses(bundle: Path) -> dict[str, str]:
    """Each slot's last attempt's status, read from the runs files with the standard library."""
    last: dict[str, tuple[int, str]] = {}
    for path in sorted((bundle / "data" / "runs").glob("*.jsonl")):
        for line in path.read_text("utf-8").splitlines():
            r = json.loads(line)
            if r["attempt"] >= last.get(r["slot"], (0, ""))[0]:
                last[r["slot"]] = (r["attempt"], r["status"])
    return {slot: status for slot, (_, status) in last.items()}


@pytest.mark.slow
def test_a_long_slot_list_is_compacted_and_cut() -> None:
    """Consecutive slots of a condition make a range; past :data:`MAX_SLOTS_LISTED` items the
    list ends with how many slots it leaves out, so a million losses of one cause take a line."""
    assert slot_list(["c00-r0001", "c00-r0002", "c00-r0003", "c00-r0005", "c01-r0006"]) == (
        "c00-r0001\u2013r0003, c00-r0005, c01-r0006"
    )
    assert slot_list(["odd", "c00-r0009", "c00-r0010"]) == "odd, c00-r0009\u2013r0010"
    every_other = [f"c00-r{i:07d}" for i in range(0, 2_000_000, 2)]
    text = slot_list(every_other)
    assert len(text) < 400
    assert text.endswith(f", and {len(every_other) - MAX_SLOTS_LISTED:,} more slot(s)")
    assert slot_list([f"c00-r{i:07d}" for i in range(1_000_000)]) == "c00-r0000000\u2013r0999999"
    few = [f"c00-r{i:04d}" for i in range(0, 2 * (MAX_SLOTS_LISTED + 2), 2)]
    assert slot_list(few) == ", ".join(few)


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


def _with_text(shown: Shown, title: str, level: str, reason: str, cause: str) -> Shown:
    """``shown`` with a new title, a second condition's factor level, the first tier's reason
    and every loss's cause."""
    fp = shown.protocol
    tiers = shown.tiers
    # c01 has no published figure, so a new level leaves the figures' matching as it was.
    first, second, *rest = shown.aggregates.conditions
    return attrs.evolve(
        shown,
        protocol=attrs.evolve(fp, protocol=attrs.evolve(fp.protocol, title=title)),
        aggregates=attrs.evolve(
            shown.aggregates,
            conditions=(first, attrs.evolve(second, factors={"env_id": level}), *rest),
        ),
        tiers=attrs.evolve(
            tiers, tiers=(attrs.evolve(tiers.tiers[0], reason=reason), *tiers.tiers[1:])
        ),
        ledger=attrs.evolve(
            shown.ledger,
            losses=tuple(attrs.evolve(loss, cause=cause) for loss in shown.ledger.losses),
        ),
    )


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(title=_TITLE, level=_TEXT, reason=_TEXT, cause=_TEXT)
@example(
    title="<script>alert(1)</script>",
    level='"><b onclick="x',
    reason="</td></tr></table><p>",
    cause="&lt;&amp;<!--",
)
@example(title="\u202egnp.exe", level="\x1b[2J", reason="\u009b2J\r", cause="\x1b]0;t\x07")
def test_user_text_stays_text(
    published: Shown, title: str, level: str, reason: str, cause: str
) -> None:
    """Whatever a title, a factor level, a tier's reason or a loss's cause holds (markup,
    quotes, ampersands, entities, control characters), the page has the same elements as with
    plain text, and each reads back exactly where it belongs, its control characters (the
    bidirectional ones too) shown as their escapes."""
    changed = _with_text(published, title, level, reason, cause)
    elements = parse(_render(changed))
    plain = parse(_render(_with_text(published, "t", "l", "r", "c")))
    assert _tags(elements) == _tags(plain)
    head = next(e for e in elements if e.tag == "head")
    assert [e.text for e in head.children if e.tag == "title"] == [visible(title)]
    assert [e.text for e in elements if e.tag == "h1"] == [visible(title)]
    labels = [e.text for e in elements if e.tag == "td" and e.attrs.get("class") == "label"]
    second = published.aggregates.conditions[1]
    assert labels[1] == f"env_id={visible(level)} / {second.participant}"
    tier_rows = [e for e in elements if e.attrs.get("data-tier") == published.tiers.tiers[0].name]
    assert tier_rows[0].children[2].text == visible(reason)
    causes = [e.attrs["data-cause"] for e in elements if e.attrs.get("data-field") == "slots"]
    assert causes == [visible(cause)]
    loss_rows = [
        e for e in elements if e.tag == "tr" and any("data-cause" in c.attrs for c in e.children)
    ]
    assert [row.children[1].text for row in loss_rows] == [visible(cause)]


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
            assert _pc(line.attrs["x1"]) < _x(marks["published"]) < _pc(line.attrs["x2"])
    assert "published_halfwidth" in _marks(elements, "c00")


@pytest.mark.slow
@pytest.mark.parametrize("which", ["published_bundle", "scored_bundle"])
def test_conditions_share_one_axis_with_nice_ticks(
    which: str, request: pytest.FixtureRequest
) -> None:
    """Every condition on one axis: a larger mean stands further right, a run's point stands
    where its value is on the same ticks; the ticks are a step of 1, 2 or 5 times a power of ten
    apart, labelled as their values, not as the extremes to four decimals; the axis is titled
    with the measure, the estimand's with its kind and the interval's level and method."""
    shown = load(request.getfixturevalue(which))
    elements = parse(_render(shown))
    ticks = axis_ticks(elements, "conditions")
    _assert_nice(ticks)
    low, high = axis_range(elements, "conditions")
    assert low <= ticks[0][0] < ticks[-1][0] <= high
    means = sorted(
        (c.mean, _x(_marks(elements, c.condition)["mean"]))
        for c in shown.aggregates.conditions
        if c.mean is not None
    )
    assert [x for _, x in means] == sorted(x for _, x in means)
    assert means[0][1] < means[-1][1]
    for mean, x in means:
        assert x == pytest.approx(100 * (mean - low) / (high - low), abs=1e-3)
    for e in _svg(elements):
        if "data-measure" in e.attrs:
            value = float(e.attrs["data-measure"])
            assert low <= value <= high
            assert _x(e) == pytest.approx(100 * (value - low) / (high - low), abs=1e-3)
    titles = [e.text for e in _svg(elements) if e.attrs.get("class") == "axis-title"]
    details = [e.text for e in _svg(elements) if e.attrs.get("class") == "axis-detail"]
    measure, kind = shown.aggregates.measure, shown.aggregates.estimand.kind
    iv = shown.aggregates.estimand.interval
    assert iv is not None
    assert titles == [measure, f"{kind} of {measure}"]
    assert all(f"{iv.level:.0%} {iv.method} interval" in d for d in details)
    assert "each valid run" in details[0]
    _assert_nice(axis_ticks(elements, "estimand"))


def _assert_nice(ticks: list[tuple[float, str]]) -> None:
    """At least two ticks, evenly spaced by 1, 2 or 5 times a power of ten, each labelled with
    its value and no more decimals than the step needs."""
    assert 2 <= len(ticks) <= 7
    values = [v for v, _ in ticks]
    step = (values[-1] - values[0]) / (len(values) - 1)
    assert all(b - a == pytest.approx(step, rel=1e-9) for a, b in itertools.pairwise(values))
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert any(mantissa == pytest.approx(m, rel=1e-9) for m in (1, 2, 5))
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    for value, label in ticks:
        assert float(label) == pytest.approx(value, abs=10**-decimals / 2)
        assert len(label.partition(".")[2]) == decimals, (label, step)


def test_the_published_legend_and_marks_only_where_published(published: Shown) -> None:
    """With published figures the legend names them and each published value has its mark;
    without any, neither the legend entry nor a published mark is drawn."""
    elements = parse(_render(published))
    assert legend(elements) == ["runs", "observed", "published"]
    assert any(e.attrs.get("data-field") == "published" for e in _svg(elements))
    fp = published.protocol
    bare = attrs.evolve(
        published,
        protocol=attrs.evolve(fp, protocol=attrs.evolve(fp.protocol, published=None)),
        tiers=attrs.evolve(
            published.tiers,
            reproduction=attrs.evolve(published.tiers.reproduction, figures=()),
        ),
    )
    elements = parse(_render(bare))
    assert legend(elements) == ["runs", "observed"]
    drawn = _svg(elements)
    assert not [e for e in drawn if e.attrs.get("class") in ("pub", "pub-mark")]
    assert "published" not in " ".join(e.text for e in elements if e.tag == "figcaption")


def test_the_estimand_has_its_own_axis(published: Shown) -> None:
    """The estimand (a sum of condition means, far from any condition's) is drawn on its own
    axis, whose ticks frame its interval, not on the conditions' axis."""
    elements = parse(_render(published))
    e = published.aggregates.estimand
    assert e.interval is not None and e.value is not None
    low, high = axis_range(elements, "estimand")
    assert low <= e.interval.low < e.interval.high <= high
    # Its interval takes a good share of its axis.
    assert (e.interval.high - e.interval.low) / (high - low) > 0.1
    marks = {
        m.attrs["data-field"]: m for m in _svg(elements) if m.attrs.get("data-estimand") == e.kind
    }
    assert marks["value"].attrs["cx"].endswith("%")
    assert _x(marks["value"]) == pytest.approx(100 * (e.value - low) / (high - low), abs=1e-3)
    # The sum of the condition means is outside the conditions' axis: it could not be drawn on it.
    conditions = axis_range(elements, "conditions")
    assert not conditions[0] <= e.value <= conditions[1]


def _condition(name: str, mean: float | None, low: float, high: float) -> ConditionAggregate:
    interval = (
        None if mean is None else IntervalValue("normal", 0.95, low, high, high / 2 - low / 2)
    )
    return ConditionAggregate(
        name, {"arm": name}, "p", 10, 0 if mean is None else 10, 0, 0, mean, 1.0, interval
    )


def test_far_apart_conditions_still_share_one_axis(published: Shown) -> None:
    """Means a thousand apart with narrow intervals (CAGE-2's) share one axis all the same,
    so that conditions are compared by eye; their runs show each one's spread."""
    conditions = (
        _condition("a", 0.0, -0.5, 0.5),
        _condition("b", 1000.0, 999.5, 1000.5),
    )
    agg = attrs.evolve(published.aggregates, conditions=conditions)
    tiers = attrs.evolve(
        published.tiers,
        reproduction=attrs.evolve(published.tiers.reproduction, figures=()),
    )
    elements = parse(render(published.protocol, agg, tiers, published.ledger))
    assert [v for v, _ in axis_ticks(elements, "conditions")] == [0, 200, 400, 600, 800, 1000]
    a, b = _x(_marks(elements, "a")["mean"]), _x(_marks(elements, "b")["mean"])
    assert 0 < a < 5 and 95 < b < 100


@pytest.mark.slow
def test_big_bundles_are_binned_and_say_so(tmp_path: Path) -> None:
    """Past :data:`POINTS_LIMIT` valid runs in all, each condition's runs are counted in bins
    (every run in one, the counts adding up to its valid runs), the caption says so and names
    the limit, and the page stays small."""
    per = POINTS_LIMIT // 2 + 1
    bundle = synthetic_bundle(tmp_path / "big", 2, per, 3)
    shown = load(bundle)
    page = shown.html()
    elements = parse(page)
    check_figures(elements, bundle)
    assert check_runs(elements, bundle) == "bins"
    points, bins = plot_runs(elements)
    assert not points and set(bins) == {"c00", "c01"}
    assert legend(elements) == ["bins", "observed"]
    caption = " ".join(e.text for e in elements if e.tag == "figcaption")
    assert f"{2 * per:,} valid runs, more than the {POINTS_LIMIT:,} drawn one by one" in caption
    assert len(page) < 200_000
    assert sum(len(v) for v in expected_runs(bundle).values()) == 2 * per


_FINITE = st.floats(allow_nan=False, allow_infinity=False)


@pytest.mark.slow
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
    every mark stands inside the plot (0 to 100% across, finite down), and an undefined mean
    shows as n/a."""
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
    for mark in _svg(elements):
        for name in ("cx", "x1", "x2", "x", "width"):
            if name in mark.attrs and mark.attrs[name].endswith("%"):
                assert 0 <= _pc(mark.attrs[name]) <= 100, mark
        for name in ("cy", "y1", "y2", "y"):
            if name in mark.attrs and not mark.attrs[name].endswith("%"):
                assert math.isfinite(float(mark.attrs[name])), mark
    for i, (mean, _, _) in enumerate(values):
        cells = [
            e for e in elements if e.tag == "td" and e.attrs.get("data-condition") == f"c{i:02d}"
        ]
        shown_mean = next(e for e in cells if e.attrs["data-field"] == "mean")
        assert shown_mean.text == ("n/a" if mean is None else f"{mean:.4f}")
        assert shown_mean.attrs["data-value"] == ("null" if mean is None else repr(mean))


# --------------------------------------------------------------------------- the contrasts


def _section(elements: list[Element], name: str) -> list[Element]:
    """Every element inside the section ``name``, in document order."""
    section = next(e for e in elements if e.tag == "section" and e.attrs.get("id") == name)
    inside: list[Element] = []
    todo = list(section.children)
    while todo:
        element = todo.pop(0)
        inside.append(element)
        todo[:0] = element.children
    return inside


def _forest(elements: list[Element]) -> list[Element]:
    """Every element of the forest plot's SVG."""
    svg = [e for e in _section(elements, "contrasts") if e.tag == "svg"]
    assert len(svg) == 1
    return _descendants(svg[0])


def _descendants(element: Element) -> list[Element]:
    found: list[Element] = []
    for child in element.children:
        found += [child, *_descendants(child)]
    return found


def _contrast_marks(elements: list[Element], contrast: str) -> dict[str, Element]:
    return {
        e.attrs["data-field"]: e
        for e in _forest(elements)
        if e.attrs.get("data-contrast") == contrast and "data-value" in e.attrs
    }


def _with_contrasts(shown: Shown, *changed: ContrastResult, multiplicity: str = "") -> Shown:
    """``shown`` with the contrasts of the same ids replaced by ``changed``."""
    assert shown.contrasts is not None
    by_id = {c.id: c for c in changed}
    family = attrs.evolve(
        shown.contrasts,
        contrasts=tuple(by_id.get(c.id, c) for c in shown.contrasts.contrasts),
        multiplicity=multiplicity or shown.contrasts.multiplicity,
    )
    return attrs.evolve(shown, contrasts=family)


def _contrast(shown: Shown, contrast: str) -> ContrastResult:
    assert shown.contrasts is not None
    return next(c for c in shown.contrasts.contrasts if c.id == contrast)


def test_the_contrasts_section_only_with_contrasts(published: Shown, contrasted: Shown) -> None:
    """A bundle with contrasts.json has a Contrasts section right after the conditions, with one
    forest plot and one table; a bundle without has neither the section nor a contrast's figure
    nor a sentence of the claim about one. The page still needs nothing outside itself."""
    assert published.contrasts is None and contrasted.contrasts is not None
    plain = parse(_render(published))
    assert "contrasts" not in [e.attrs.get("id") for e in plain if e.tag == "section"]
    assert not [e for e in plain if "data-contrast" in e.attrs or "data-family" in e.attrs]
    assert "Pre-registered" not in "".join(e.text for e in plain if e.tag == "body")
    assert len([e for e in plain if e.tag == "svg"]) == 1
    elements = parse(_render(contrasted))
    sections = [e.attrs["id"] for e in elements if e.tag == "section"]
    assert sections[:4] == ["claim", "conditions", "contrasts", "plot"]
    inside = _section(elements, "contrasts")
    assert [e.text for e in inside if e.tag == "h2"] == ["Contrasts"]
    assert [e.tag for e in inside].count("svg") == 1
    assert [e.tag for e in inside].count("table") == 1
    assert external_references(elements, "") == []
    assert not [e for e in elements if {"src", "href"} & set(e.attrs) or e.tag == "script"]


def test_every_contrast_figure_is_in_the_table(contrasted_bundle: Path) -> None:
    """Each contrast's figures of contrasts.json (and the family's multiplicity) are in the
    section's text, each rounding to its exact value in data-value."""
    elements = parse(load(contrasted_bundle).html())
    in_text = check_figures(elements, contrasted_bundle)
    want = expected_contrasts(contrasted_bundle)
    assert set(want) <= in_text
    ids = {k[1] for k in want if k[0] == "contrast"}
    assert ids == {"random-better", "random-differs-on-cartpole", "push-left-not-worse"}


def test_a_row_per_contrast(contrasted: Shown) -> None:
    """The table has a row per contrast in the family's order: its id (primary or secondary),
    its claim (direction, margin for non-inferiority, which way is better, pairing), each
    group's condition ids with their labels, its sample (pairs and incomplete pairs, or each
    side's runs), difference, interval, p-values, verdict and reason; the adjusted p's column
    names the family's multiplicity."""
    assert contrasted.contrasts is not None
    elements = parse(_render(contrasted))
    inside = _section(elements, "contrasts")
    rows = [e for e in inside if e.tag == "tr" and "data-contrast-row" in e.attrs]
    decided = contrasted.contrasts.contrasts
    assert [r.attrs["data-contrast-row"] for r in rows] == [c.id for c in decided]
    head = [e.text for e in inside if e.tag == "th"]
    assert head[-2:] == ["p adjusted (holm)", "verdict and reason"]
    order = [f.name for f in contrasted.protocol.protocol.matrix]
    labels = {
        c.condition: condition_label(c.factors, c.participant, order)
        for c in contrasted.aggregates.conditions
    }
    for row, c in zip(rows, decided, strict=True):
        cells = [e.text.strip() for e in row.children if e.tag == "td"]
        assert len(cells) == len(head)
        assert cells[0] == f"{c.id}{'primary' if c.primary else 'secondary'}"
        assert cells[1].startswith(c.direction) and c.pairing in cells[1]
        assert ("margin 0.5" in cells[1]) == (c.direction == "non-inferiority")
        for cell, group in ((cells[2], c.a), (cells[3], c.b)):
            assert cell == "".join(f"{g} {labels[g]}" for g in group)
        if c.pairs is None:
            assert cells[4] == f"{c.n_a} vs {c.n_b}runs"
        else:
            assert cells[4] == f"{c.pairs} pairs{c.incomplete_pairs} incomplete"
        assert cells[-1] == c.verdict + c.reason
        verdict = next(e for e in row.children[-1].children if e.tag == "strong")
        assert verdict.attrs["class"] == c.verdict
    assert [c.verdict for c in decided] == ["holds", "holds", "does-not-hold"]
    assert [c.pairs is None for c in decided] == [False, True, False]


def test_the_claim_names_each_primary_contrast(contrasted: Shown) -> None:
    """The claim gains a sentence per primary contrast, none for the others: its verdict,
    difference, interval and adjusted p-value, named by the family's multiplicity."""
    assert contrasted.contrasts is not None
    axis = forest_model(contrasted.contrasts, contrasted.aggregates.measure).panels[0].axis

    def sentences(shown: Shown) -> list[str]:
        claim = _section(parse(_render(shown)), "claim")
        return [e.text for e in claim if e.tag == "p" and e.text.startswith("Pre-registered")]

    def said(c: ContrastResult, adjusted: str) -> str:
        assert c.estimate is not None and c.interval is not None and c.p_adjusted is not None
        iv = c.interval
        return (
            f"Pre-registered primary contrast {c.id}: {c.verdict} (difference "
            f"{axis.text(c.estimate)}, 95% interval [{axis.text(iv.low)}, {axis.text(iv.high)}], "
            f"{adjusted} {c.p_adjusted:.3g})."
        )

    primary = _contrast(contrasted, "random-better")
    assert sentences(contrasted) == [said(primary, "Holm-adjusted p")]
    assert sentences(contrasted)[0].startswith(
        "Pre-registered primary contrast random-better: holds (difference 5.04, 95% interval "
        "[1.35, 8.74], Holm-adjusted p 0.00971)"
    )
    other = attrs.evolve(_contrast(contrasted, "push-left-not-worse"), primary=True)
    both = _with_contrasts(contrasted, other)
    assert sentences(both) == [said(primary, "Holm-adjusted p"), said(other, "Holm-adjusted p")]
    alone = _with_contrasts(contrasted, multiplicity="none")
    assert sentences(alone) == [said(primary, "p (no multiplicity control)")]


def test_the_forest_plot_draws_each_contrast_where_its_values_say(contrasted: Shown) -> None:
    """One axis of differences with nice ticks that holds 0 and every interval, titled with
    the measure and "difference a - b (positive favours a)"; per contrast, in order, a row
    naming its verdict in words (and in the mark's shape and colour), its difference's mark
    between its interval's ends, each where its value is on the axis; a line at 0 through each
    row's marks; and a mark at -margin for the non-inferiority contrast only."""
    assert contrasted.contrasts is not None
    elements = parse(_render(contrasted))
    forest = _forest(elements)
    ticks = axis_ticks(elements, "contrasts")
    _assert_nice(ticks)
    low, high = axis_range(elements, "contrasts")
    assert low <= ticks[0][0] < ticks[-1][0] <= high and low < 0 < high

    def at(value: float) -> float:
        return 100 * (value - low) / (high - low)

    titles = [e.text for e in forest if e.attrs.get("class") == "axis-title"]
    measure = contrasted.aggregates.measure
    assert titles == [f"{measure}: difference a - b (positive favours a)"]
    # 0 is drawn through each row's marks, a line per row.
    zero = [e for e in forest if "data-zero" in e.attrs]
    assert len(zero) == len(contrasted.contrasts.contrasts)
    assert all(_x(z) == pytest.approx(at(0.0), abs=1e-3) for z in zero)
    rows = [e for e in forest if "data-forest-row" in e.attrs]
    assert [r.attrs["data-forest-row"] for r in rows] == [
        c.id for c in contrasted.contrasts.contrasts
    ]
    for c in contrasted.contrasts.contrasts:
        assert c.estimate is not None and c.interval is not None
        marks = _contrast_marks(elements, c.id)
        assert _x(marks["low"]) < _x(marks["estimate"]) < _x(marks["high"])
        for name, value in (
            ("estimate", c.estimate),
            ("low", c.interval.low),
            ("high", c.interval.high),
        ):
            assert _x(marks[name]) == pytest.approx(at(value), abs=1e-3)
            assert marks[name].attrs["data-value"] == repr(value)
        assert marks["verdict"].text == c.verdict
        assert c.verdict in marks["verdict"].attrs["class"].split()
        shape = {"holds": "circle", "does-not-hold": "rect"}[c.verdict]
        assert marks["estimate"].tag == shape
        if c.direction == "non-inferiority":
            assert marks["margin"].attrs["data-value"] == repr(c.margin)
            assert marks["margin"].attrs["data-at"] == repr(-c.margin)
            assert _x(marks["margin"]) == pytest.approx(at(-c.margin), abs=1e-3)
        else:
            assert "margin" not in marks
    caption = "".join(e.text for e in _section(elements, "contrasts") if e.tag == "figcaption")
    assert "positive favours a" in caption and "-margin" in caption


def test_an_undecided_contrast_shows_as_inconclusive(contrasted: Shown) -> None:
    """A contrast with nothing estimated shows n/a and no mark in its row (its verdict and
    reason in words, in the table and the claim); an inconclusive one with an estimate is an
    open dot."""
    empty = attrs.evolve(
        _contrast(contrasted, "random-better"),
        estimate=None,
        se=None,
        df=None,
        interval=None,
        statistic=None,
        p_value=None,
        p_adjusted=None,
        verdict="inconclusive",
        reason="fewer than two runs or pairs on a side: nothing is estimated",
    )
    open_dot = attrs.evolve(
        _contrast(contrasted, "random-differs-on-cartpole"),
        verdict="inconclusive",
        reason="adjusted p-value 0.2 is not below 0.05",
    )
    shown = _with_contrasts(contrasted, empty, open_dot)
    elements = parse(_render(shown))
    marks = _contrast_marks(elements, empty.id)
    assert set(marks) == {"verdict"} and marks["verdict"].text == "inconclusive"
    row = next(e for e in elements if e.attrs.get("data-contrast-row") == empty.id)
    cells = {
        e.attrs["data-field"]: e
        for e in _descendants(row)
        if "data-field" in e.attrs and e.attrs.get("data-contrast") == empty.id
    }
    for name in ("estimate", "low", "high", "p_value", "p_adjusted"):
        assert (cells[name].text, cells[name].attrs["data-value"]) == ("n/a", "null")
    assert cells["verdict"].attrs["data-value"] == '"inconclusive"'
    claim = [e.text for e in _section(elements, "claim") if e.tag == "p"]
    assert f"Pre-registered primary contrast {empty.id}: inconclusive ({empty.reason})." in claim
    dot = _contrast_marks(elements, open_dot.id)["estimate"]
    assert dot.tag == "circle" and dot.attrs["class"] == "est inconclusive"


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    figures=st.lists(st.tuples(_FINITE, _FINITE, _FINITE, _FINITE.map(abs)), min_size=1, max_size=4)
)
def test_any_finite_contrasts_plot_inside_the_frame(
    contrasted: Shown, figures: list[tuple[float, float, float, float]]
) -> None:
    """Whatever finite differences, intervals and margins contrasts.json holds (up to the
    largest floats), every mark of the forest plot stands inside it (0 to 100% across)."""
    base = _contrast(contrasted, "push-left-not-worse")
    family = tuple(
        attrs.evolve(
            base,
            id=f"k{i}",
            estimate=e,
            margin=m,
            interval=IntervalValue("t", 0.95, min(lo, hi), max(lo, hi), 0.0),
        )
        for i, (e, lo, hi, m) in enumerate(figures)
    )
    assert contrasted.contrasts is not None
    shown = attrs.evolve(contrasted, contrasts=attrs.evolve(contrasted.contrasts, contrasts=family))
    elements = parse(_render(shown))
    forest = _forest(elements)
    for mark in forest:
        for name in ("cx", "x1", "x2", "x"):
            if name in mark.attrs and mark.attrs[name].endswith("%"):
                assert 0 <= _pc(mark.attrs[name]) <= 100, mark
    assert len([e for e in forest if "data-forest-row" in e.attrs]) == len(figures)


def _mixed(contrasted: Shown) -> Shown:
    """``contrasted`` with one contrast a difference of rates (a check's passes): a family of
    two units, the measure's and a rate's."""
    rate = attrs.evolve(
        _contrast(contrasted, "random-differs-on-cartpole"),
        outcome="check:upright",
        estimate=0.25,
        interval=IntervalValue("newcombe-score", 0.95, 0.125, 0.375, 0.0),
    )
    return _with_contrasts(contrasted, rate)


def test_contrasts_of_two_units_get_a_panel_each(contrasted: Shown) -> None:
    """A family with a difference of rates beside differences of the measure: the forest plot
    has a panel per unit, the measure's first, each on an axis of its own titled with its
    unit; each contrast's marks are in its unit's panel, where its values are on that axis;
    the rows in words still follow contrasts.json; a family of one unit has one panel."""
    shown = _mixed(contrasted)
    assert shown.contrasts is not None
    elements = parse(_render(shown))
    forest = _forest(elements)
    panels = [e for e in forest if "data-forest-panel" in e.attrs]
    assert [p.attrs["data-forest-panel"] for p in panels] == ["measure", "rate"]
    titles = [e.text for e in forest if e.attrs.get("class") == "axis-title"]
    measure = shown.aggregates.measure
    assert titles == [
        f"{measure}: difference a - b (positive favours a)",
        "rate (check:upright): difference a - b (positive favours a)",
    ]
    for panel, axis, unit in zip(
        panels, ("contrasts", "contrast-rates"), ("measure", "rate"), strict=True
    ):
        inside = _descendants(panel)
        low, high = axis_range(inside, axis)
        assert low <= 0 <= high
        rows = [e.attrs["data-forest-row"] for e in inside if "data-forest-row" in e.attrs]
        want = [
            c for c in shown.contrasts.contrasts if (c.outcome == "measure") == (unit == "measure")
        ]
        assert rows == [c.id for c in want]
        for c in want:
            assert c.estimate is not None
            mark = next(
                e
                for e in inside
                if e.attrs.get("data-contrast") == c.id and e.attrs.get("data-field") == "estimate"
            )
            assert _x(mark) == pytest.approx(100 * (c.estimate - low) / (high - low), abs=1e-3)
    rate_low, rate_high = axis_range(elements, "contrast-rates")
    assert rate_high - rate_low < 1  # a rate's axis, not the measure's (CartPole's returns)
    table = [e.attrs["data-contrast-row"] for e in elements if "data-contrast-row" in e.attrs]
    assert table == [c.id for c in shown.contrasts.contrasts]
    one = [e for e in _forest(parse(_render(contrasted))) if "data-forest-panel" in e.attrs]
    assert [p.attrs["data-forest-panel"] for p in one] == ["measure"]


def test_tied_runs_are_named_with_their_count(contrasted: Shown) -> None:
    """Where runs of a condition share a value (push-left on MountainCar: -200 every run), the
    plot names the tie beside it, ``xN at V`` (x the multiplication sign) with N the runs at V,
    placed at V on the axis; every tie a row names is a real one."""
    elements = parse(_render(contrasted))
    values = contrasted.values()
    assert values is not None
    named = [e for e in _svg(elements) if "data-tie" in e.attrs]
    assert named
    low, high = axis_range(elements, "conditions")
    for e in named:
        count, at = int(e.attrs["data-count"]), float(e.attrs["data-at"])
        assert list(values[e.attrs["data-tie"]]).count(at) == count >= 2
        assert e.text == f"\u00d7{count} at {at:g}"
        assert _x(e) == pytest.approx(100 * (at - low) / (high - low), abs=1e-3)
    push_left = next(
        c
        for c in contrasted.aggregates.conditions
        if c.participant == "push-left" and c.factors["env_id"] == "MountainCar-v0"
    )
    runs = values[push_left.condition]
    assert [e.text for e in named if e.attrs["data-tie"] == push_left.condition] == [
        f"\u00d7{len(runs)} at -200"
    ]
