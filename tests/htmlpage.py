"""Reading an HTML report back: its elements (with the standard library's html.parser), and the
figures its ``data-*`` attributes claim, checked against the bundle's own JSON files.

One checker serves both the page as :func:`repro._present.html.render` returns it and the DOM that
headless Chromium dumps after rendering it, so a figure the browser shows is held to the same
rule as a figure the renderer wrote.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

__all__ = [
    "Element",
    "axis_range",
    "axis_ticks",
    "check_figures",
    "check_runs",
    "expected_contrasts",
    "expected_figures",
    "expected_rl",
    "expected_runs",
    "external_references",
    "figure_key",
    "legend",
    "parse",
    "plot_runs",
    "without_section",
]

#: Elements that never have content or an end tag.
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}
_VOID |= {"track", "wbr"}

Key = tuple[str, ...]


@dataclass
class Element:
    """One element: its tag, its attributes, and all the text inside it."""

    tag: str
    attrs: dict[str, str]
    text: str = ""
    children: list[Element] = field(default_factory=list)


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self._open: list[Element] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        if self._open:
            self._open[-1].children.append(element)
        self.elements.append(element)
        if tag not in _VOID:
            self._open.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        if self._open:
            self._open[-1].children.append(element)
        self.elements.append(element)

    def handle_endtag(self, tag: str) -> None:
        # An end tag closes its element and any left open inside it (as browsers do).
        for depth in range(len(self._open) - 1, -1, -1):
            if self._open[depth].tag == tag:
                del self._open[depth:]
                return

    def handle_data(self, data: str) -> None:
        for element in self._open:
            element.text += data


def parse(page: str) -> list[Element]:
    """Every element of ``page``, in document order."""
    parser = _Parser()
    parser.feed(page)
    parser.close()
    return parser.elements


def figure_key(attrs: dict[str, str]) -> Key:
    """What figure an element with ``data-value`` shows, as named by its attributes."""
    f = attrs.get("data-field", "")
    if "data-cause" in attrs:
        return ("loss", attrs["data-outcome"], attrs["data-cause"], f)
    if "data-cell" in attrs and "data-check" in attrs:
        return ("check", attrs["data-cell"], attrs["data-check"], f)
    if "data-cell" in attrs and "data-category" in attrs:
        return ("category", attrs["data-cell"], attrs["data-category"])
    if "data-rl-participant" in attrs and "data-statistic" in attrs:
        return ("rl-statistic", attrs["data-rl-participant"], attrs["data-statistic"], f)
    if "data-rl-participant" in attrs and "data-tau" in attrs:
        return ("rl-profile", attrs["data-rl-participant"], attrs["data-tau"], f)
    if "data-rl-participant" in attrs:
        return ("rl-participant", attrs["data-rl-participant"], f)
    if "data-improvement" in attrs:
        return ("rl-improvement", attrs["data-improvement"], f)
    for kind in ("condition", "estimand", "figure", "cell", "slot", "contrast", "family"):
        if f"data-{kind}" in attrs:
            return (kind, attrs[f"data-{kind}"], f)
    raise AssertionError(f"a data-value that names no figure: {attrs}")


def _json(bundle: Path, name: str) -> Any:
    return json.loads((bundle / "data" / name).read_text("utf-8"))


def expected_figures(bundle: Path) -> dict[Key, Any]:
    """Every figure the report of ``bundle`` must show, read from its JSON files with the
    standard library, by the key :func:`figure_key` gives."""
    agg, tiers = _json(bundle, "aggregates.json"), _json(bundle, "tiers.json")
    protocol = _json(bundle, "protocol.json")["protocol"]
    want: dict[Key, Any] = {}
    figures = {f["figure"]: f for f in tiers["reproduction"]["figures"]}
    for c in agg["conditions"]:
        interval = c["interval"] or {}
        key = c["condition"]
        want[("condition", key, "valid")] = c["valid"]
        want[("condition", key, "mean")] = c["mean"]
        want[("condition", key, "sd")] = c["sd"]
        want[("condition", key, "low")] = interval.get("low")
        want[("condition", key, "high")] = interval.get("high")
        f = figures.get(f"{key} mean")
        if f is not None:
            want[("condition", key, "published")] = f["published"]
            want[("condition", key, "equal_at_precision")] = f["equal_at_precision"]
            for pc in (protocol.get("published") or {}).get("conditions", []):
                same = pc["factors"] == c["factors"]
                same = same and pc.get("participant") in (None, c["participant"])
                if same and pc.get("halfwidth") is not None:
                    want[("condition", key, "published_halfwidth")] = pc["halfwidth"]
    e = agg["estimand"]
    if e["value"] is not None and e["interval"] is not None:
        for name in ("value", "se"):
            want[("estimand", e["kind"], name)] = e[name]
        for name in ("low", "high", "halfwidth"):
            want[("estimand", e["kind"], name)] = e["interval"][name]
    if "estimand value" in figures:
        want[("estimand", e["kind"], "published")] = figures["estimand value"]["published"]
    if "estimand half-width" in figures:
        half = figures["estimand half-width"]["published"]
        want[("estimand", e["kind"], "published_halfwidth")] = half
    for name, f in figures.items():
        for part in ("published", "observed", "equal_at_precision"):
            want[("figure", name, part)] = f[part]
    # The losses by outcome and cause: how many slots, and their attempts in all.
    for loss in _json(bundle, "source-ledger.json")["losses"]:
        slots = ("loss", loss["outcome"], loss["cause"], "slots")
        attempts = ("loss", loss["outcome"], loss["cause"], "attempts")
        want[slots] = want.get(slots, 0) + 1
        want[attempts] = want.get(attempts, 0) + loss["attempts"]
    if (bundle / "data" / "scores.json").is_file():
        for cell in _json(bundle, "scores.json")["cells"]:
            key = cell["condition"]
            for name in ("valid_runs", "superseded_runs", "median_measure"):
                want[("cell", key, name)] = cell[name]
            for check in cell["checks"]:
                for name in ("passed", "runs"):
                    want[("check", key, check["name"], name)] = check[name]
                if check["rate"] is not None:
                    for name in ("rate", "low", "high"):
                        want[("check", key, check["name"], name)] = check[name]
            for category, count in cell["categories"].items():
                want[("category", key, category)] = count
    if (bundle / "data" / "contrasts.json").is_file():
        want.update(expected_contrasts(bundle))
    if (bundle / "data" / "rl-aggregates.json").is_file():
        want.update(expected_rl(bundle))
    return want


def expected_rl(bundle: Path) -> dict[Key, Any]:
    """The figures of rl-aggregates.json the report must show, by the key :func:`figure_key`
    gives: each participant's runs and incomplete replicates, each statistic and profile point
    (value, low, high), and each improvement (its runs on either side too)."""
    rl = _json(bundle, "rl-aggregates.json")
    want: dict[Key, Any] = {}
    for q in rl["participants"]:
        who = q["participant"]
        for name in ("runs", "incomplete"):
            want[("rl-participant", who, name)] = q[name]
        for s in q["statistics"]:
            for name in ("value", "low", "high"):
                want[("rl-statistic", who, s["statistic"], name)] = s[name]
        for point in q["profile"]:
            for name in ("value", "low", "high"):
                want[("rl-profile", who, repr(point["tau"]), name)] = point[name]
    for d in rl["improvements"]:
        for name in ("value", "low", "high", "runs_x", "runs_y"):
            want[("rl-improvement", f"{d['x']} > {d['y']}", name)] = d[name]
    return want


def expected_contrasts(bundle: Path) -> dict[Key, Any]:
    """The figures of contrasts.json the report must show, by the key :func:`figure_key`
    gives: the family's multiplicity, and each contrast's figures (its sample as pairs and
    incomplete pairs when paired, as each side's runs when not; its margin when it is a
    non-inferiority contrast). Read by name, so that a field added later changes nothing."""
    family = _json(bundle, "contrasts.json")
    want: dict[Key, Any] = {("family", "contrasts", "multiplicity"): family["multiplicity"]}
    for c in family["contrasts"]:
        key = c["id"]
        for name in ("primary", "estimate", "p_value", "p_adjusted", "verdict"):
            want[("contrast", key, name)] = c[name]
        interval = c["interval"] or {}
        want[("contrast", key, "low")] = interval.get("low")
        want[("contrast", key, "high")] = interval.get("high")
        sample = ("pairs", "incomplete_pairs") if c["pairs"] is not None else ("n_a", "n_b")
        for name in sample:
            want[("contrast", key, name)] = c[name]
        if c["direction"] == "non-inferiority":
            want[("contrast", key, "margin")] = c["margin"]
    return want


#: The text that says a flag is true, by the field it is: a flag's text starts with it exactly
#: when the flag is true.
_TRUE_TEXT = {"equal_at_precision": "equal", "primary": "primary"}


def _matches_text(text: str, value: Any, name: str = "") -> bool:
    """Whether the rounded text people read says ``value`` (the figure ``name``): a float to
    the decimals shown (of its mantissa, in scientific notation)."""
    text = text.strip()
    if value is None:
        return text == "n/a"
    if isinstance(value, bool):
        return text.startswith(_TRUE_TEXT[name]) == value
    if isinstance(value, int):
        return text == str(value)
    if isinstance(value, str):
        return text == value
    mantissa, _, exponent = text.lower().partition("e")
    places = len(mantissa.partition(".")[2]) - int(exponent or 0)
    return math.isclose(float(text), value, rel_tol=1e-12, abs_tol=0.5 * 10**-places + 1e-12)


def check_figures(elements: list[Element], bundle: Path) -> set[Key]:
    """Assert that every ``data-value`` in the page is exactly the figure of the bundle it
    names (same JSON type, same float to the last bit), that each element's text rounds to it,
    and that every figure of the bundle is in the page; return the keys found in text elements
    (tables and prose, as opposed to the plot)."""
    want = expected_figures(bundle)
    seen: set[Key] = set()
    in_text: set[Key] = set()
    for element in elements:
        if "data-value" not in element.attrs:
            continue
        key = figure_key(element.attrs)
        assert key in want, f"the page shows {key}, which the bundle does not hold"
        found = json.loads(element.attrs["data-value"])
        expected = want[key]
        assert type(found) is type(expected) and repr(found) == repr(expected), (
            key,
            found,
            expected,
        )
        seen.add(key)
        if element.tag in ("td", "span", "strong"):
            in_text.add(key)
            assert _matches_text(element.text, expected, key[-1]), (key, element.text, expected)
    assert seen == set(want), f"figures missing from the page: {sorted(set(want) - seen)}"
    return in_text


def expected_runs(bundle: Path) -> dict[str, list[float]]:
    """Each condition's valid measures, read from the bundle's runs files with the standard
    library: the records that ended valid, in sealed order. Their count is aggregates.json's
    ``valid`` (every valid run here has a measure)."""
    seal = _json(bundle, "plans/seal.json")
    found: dict[str, list[float]] = {c["id"]: [] for c in seal["conditions"]}
    for part in seal["partitions"]:
        for line in (bundle / "data" / "runs" / f"{part['id']}.jsonl").read_text().splitlines():
            record = json.loads(line)
            if record["status"] == "valid" and record["measure"] is not None:
                found[record["condition"]].append(record["measure"])
    valid = {c["condition"]: c["valid"] for c in _json(bundle, "aggregates.json")["conditions"]}
    assert {c: len(v) for c, v in found.items()} == valid
    return found


@dataclass(frozen=True)
class Bin:
    """One bin the plot draws: runs from ``low`` to ``high``, ``count`` of them."""

    low: float
    high: float
    count: int


def plot_runs(elements: list[Element]) -> tuple[dict[str, list[float]], dict[str, list[Bin]]]:
    """The runs the plot draws: each condition's points (``data-run``, ``data-measure``) and
    its bins (``data-bin``: ``data-low``, ``data-high``, ``data-count``)."""
    points: dict[str, list[float]] = {}
    bins: dict[str, list[Bin]] = {}
    for e in elements:
        if "data-run" in e.attrs and "data-measure" in e.attrs:
            points.setdefault(e.attrs["data-run"], []).append(json.loads(e.attrs["data-measure"]))
        if "data-bin" in e.attrs:
            a = e.attrs
            b = Bin(float(a["data-low"]), float(a["data-high"]), int(a["data-count"]))
            bins.setdefault(a["data-bin"], []).append(b)
    return points, bins


def check_runs(elements: list[Element], bundle: Path) -> str:
    """Assert that the plot draws every condition's valid runs and nothing else: a point per
    run with the run's measure to the last bit, or bins whose counts add up to the runs with
    every run inside one of them; return how they are drawn, ``points`` or ``bins``."""
    want = expected_runs(bundle)
    points, bins = plot_runs(elements)
    assert not (points and bins), "a plot draws points or bins, not both"
    if points or not bins:
        assert set(points) <= set(want)
        for condition, values in want.items():
            shown = points.get(condition, [])
            assert sorted(map(repr, shown)) == sorted(map(repr, values)), condition
        return "points"
    for condition, values in want.items():
        drawn = bins.get(condition, [])
        assert sum(b.count for b in drawn) == len(values), condition
        assert all(any(b.low <= v <= b.high for b in drawn) for v in values), condition
    return "bins"


def axis_ticks(elements: list[Element], axis: str) -> list[tuple[float, str]]:
    """The ticks of the plot's axis ``axis`` (``conditions`` or ``estimand``): value and
    label."""
    group = next(e for e in elements if e.attrs.get("data-axis") == axis)
    found = []
    todo = list(group.children)
    while todo:
        e = todo.pop(0)
        todo[:0] = e.children
        if "data-tick" in e.attrs:
            found.append((float(e.attrs["data-tick"]), e.text.strip()))
    return found


def axis_range(elements: list[Element], axis: str) -> tuple[float, float]:
    """The values at the ends of the plot's axis ``axis``."""
    group = next(e for e in elements if e.attrs.get("data-axis") == axis)
    return float(group.attrs["data-low"]), float(group.attrs["data-high"])


def legend(elements: list[Element]) -> list[str]:
    """The plot's legend entries, in order (``runs``, ``bins``, ``observed``, ``published``)."""
    return [e.attrs["data-legend"] for e in elements if "data-legend" in e.attrs]


#: Attributes through which an element can make a browser fetch something.
_FETCHING = ("src", "href", "xlink:href", "srcset", "action", "poster", "data", "background")


def external_references(elements: list[Element], page_url: str) -> list[str]:
    """Every reference to an outside resource: a fetching attribute whose value starts with
    ``http``, ``//`` or ``file:`` (other than the page itself), and any ``url(`` in a style."""
    found = []
    for element in elements:
        for name, value in element.attrs.items():
            v = value.strip().lower()
            if name in _FETCHING and v.startswith(("http", "//", "file:")) and value != page_url:
                found.append(f"<{element.tag} {name}={value!r}>")
            if name == "style" and "url(" in v:
                found.append(f"<{element.tag} style={value!r}>")
        if element.tag == "style" and "url(" in element.text.lower():
            found.append("<style> with url(")
    return found


def without_section(elements: list[Element], name: str) -> list[Element]:
    """``elements`` but the section ``name`` and everything inside it (the contrasts' forest
    plot, say, when a test reads the conditions' plot)."""
    inside: set[int] = set()
    todo = [e for e in elements if e.tag == "section" and e.attrs.get("id") == name]
    while todo:
        element = todo.pop()
        inside.add(id(element))
        todo.extend(element.children)
    return [e for e in elements if id(e) not in inside]
