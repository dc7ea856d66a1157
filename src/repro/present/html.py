"""One self-contained HTML page for a verified bundle (``repro show DIR --html FILE``).

The page is evidence someone may open years later, offline, or archive next to the bundle, so
it depends on nothing outside itself: the style is inline, there is no script, and the plot is
an inline SVG drawn here (no matplotlib). A Content-Security-Policy of ``default-src 'none'``
makes a browser refuse any fetch the page might still attempt.

The conditions table and the plot read the figures model (:mod:`repro.figures`), and the
plot draws its plot model (:func:`repro.figures.plot_model`), the one the PNG of
:mod:`repro.present.plot` draws too, so that the page and the PNG show the same thing. The SVG
is as wide as the page's content column (every x a percentage of its width, its text the
page's size); every condition shares one axis with its ticks, the estimand has its own.

Every figure carries machine-readable attributes, so that a program (the tests, or a reviewer's
script) can read back from the rendered page exactly what it shows:

- ``data-value``: the figure as JSON, a float as its ``repr`` (the shortest text that reads back
  as the same float, as in the bundle's JSON), ``null`` when undefined;
- ``data-condition`` with ``data-field``: a condition's figure, ``data-field`` being its key in
  aggregates.json (``valid``, ``mean``, ``sd``; ``low``, ``high`` from its interval), or
  ``published``, ``equal_at_precision`` (from tiers.json's figure ``<id> mean``) and
  ``published_halfwidth`` (from the protocol);
- ``data-estimand`` (the estimand's kind) with ``data-field``: ``value``, ``se``, and ``low``,
  ``high``, ``halfwidth`` from its interval, or ``published`` and ``published_halfwidth``
  (tiers.json's figures ``estimand value`` and ``estimand half-width``);
- ``data-figure`` with ``data-field``: one of tiers.json's reproduction figures;
- ``data-outcome`` and ``data-cause`` with ``data-field`` ``slots`` or ``attempts``: how many of
  source-ledger.json's losses have that outcome and cause, and their attempts in all;
- ``data-cell`` with ``data-field`` (``valid_runs``, ``superseded_runs``, ``median_measure``),
  with ``data-check`` (``passed``, ``runs``, ``rate``, ``low``, ``high``) or with
  ``data-category``: a cell of scores.json;
- ``data-contrast`` (a contrast's id) with ``data-field``: a contrast of contrasts.json, by its
  key there (``primary``, ``estimate``, ``p_value``, ``p_adjusted``, ``verdict``; ``pairs`` and
  ``incomplete_pairs`` for a paired contrast, ``n_a`` and ``n_b`` for an unpaired one;
  ``margin`` for a non-inferiority one; ``low``, ``high`` from its interval); and
  ``data-family="contrasts"`` with ``data-field="multiplicity"``: the family's control. A
  verdict or the multiplicity is a JSON string in ``data-value``;
- ``data-rl-participant`` (a participant) with ``data-field``: a participant of
  rl-aggregates.json, ``runs`` and ``incomplete``, or, with ``data-statistic`` (its name),
  ``value``, ``low`` and ``high`` of that statistic, or, with ``data-tau`` (the tau as a float's
  ``repr``), those of its profile at tau; ``data-improvement`` (``X > Y``) with ``data-field``
  (``value``, ``low``, ``high``, ``runs_x``, ``runs_y``): one of its probabilities of
  improvement.

The plot's runs and axes are named too, outside ``data-value``: each valid run's point has
``data-run`` (its condition) and ``data-measure`` (its measure as a float's ``repr``); past
:data:`repro.figures.POINTS_LIMIT` runs, each bin has ``data-bin`` (its condition),
``data-low``, ``data-high`` and ``data-count``; each axis is a group with ``data-axis``
(``conditions``, ``estimand``), ``data-low`` and ``data-high``, its tick labels ``data-tick``;
the legend's entries ``data-legend`` (``runs`` or ``bins``, ``observed``, ``published``). The
forest plot of the contrasts (:func:`repro.figures.forest_model`) has its axis as
``data-axis="contrasts"``, its line at 0 ``data-zero``, each row a group with
``data-forest-row`` (the contrast's id), and each non-inferiority margin's mark, which stands at
``-margin``, ``data-at`` besides its ``data-value`` (the margin). A contract fact has
``data-contract`` (its condition, ``*`` when every condition has it) and ``data-fact``.

The text beside each value is rounded for people. All text from the bundle (titles, factor
levels, reasons, evidence, causes) is user data: in element content and in every attribute,
the SVG's too, it is escaped (:func:`_text`), so that no markup of it is active, and its control
characters, the bidirectional ones among them, are shown as text
(:func:`repro._escape.visible`), so that none reorders what a reader sees.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence

import repro
from repro._escape import visible
from repro.derive.tally import LOSS_STATUSES, LossStatus, loss_groups
from repro.figures import (
    Axis,
    FigureRow,
    Figures,
    Forest,
    ForestRow,
    Plot,
    PlotPanel,
    PlotRow,
    adjusted_name,
    condition_label,
    figures,
    forest_model,
    p_text,
    plot_model,
    ties_to_name,
)
from repro.models import (
    Aggregates,
    CellScore,
    ContrastResult,
    ContrastsFile,
    Environment,
    FigureComparison,
    FrozenProtocol,
    Ledger,
    Loss,
    RLAggregates,
    Scores,
    Tier,
    Tiers,
)

__all__ = ["MAX_SLOTS_LISTED", "contract_evidence", "render", "repro_version"]

Number = float | int | bool | str | None

#: A cause of losses lists at most this many of its slots (a range of consecutive runs of one
#: condition counting as one; up to three more rather than "and 2 more"), then says how many
#: more there are.
MAX_SLOTS_LISTED = 16
#: A contract fact longer than this shows its start, and the whole of it when opened.
_FACT_CHARS = 120

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 72rem;
  padding: 0 1rem; color: #1a1a1a; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid #ccc; }
code { font-size: 0.9em; word-break: break-all; }
.wide { overflow-x: auto; }
table { border-collapse: collapse; margin: 0.5rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.2rem 0.5rem; vertical-align: top; }
th { background: #f2f2f2; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.label { min-width: 16rem; }
td.check { white-space: normal; min-width: 7rem; }
td ul { margin: 0; padding-left: 1.1rem; }
.pass, .holds, .equal { color: #17643a; }
.fail, .fails, .differs { color: #a51d2d; }
.weakened { color: #8a5a00; }
.does-not-hold { color: #a51d2d; }
.inconclusive { color: #6b5a00; }
.primary { font-weight: 600; }
.secondary { color: #555; }
.class { font-size: 1.1rem; }
figure { margin: 0.5rem 0; }
figcaption { font-size: 0.9rem; color: #444; }
.plot { overflow: hidden; }
.plot svg { display: block; width: 100%; box-sizing: border-box; padding: 0 1.6rem;
  overflow: visible; }
svg text { font-family: system-ui, sans-serif; font-size: 12px; fill: #1a1a1a; }
svg .note { font-size: 11px; fill: #555; }
svg .axis { stroke: #888; }
svg .tick { stroke: #888; }
svg .grid { stroke: #e8e8e8; }
svg .tick-label { font-size: 11px; fill: #333; }
svg .axis-title { font-size: 13px; font-weight: 600; }
svg .axis-detail { font-size: 11px; fill: #444; }
svg .run { fill: #4f7fb8; fill-opacity: 0.75; stroke: #fff; stroke-width: 0.6; }
svg text.tie { font-size: 10.5px; fill: #1f4f8a; font-weight: 600; paint-order: stroke;
  stroke: #fff; stroke-width: 3px; }
svg .bin { fill: #7a9cc6; fill-opacity: 0.7; stroke: none; }
svg .obs { stroke: #1f4f8a; fill: #1f4f8a; stroke-width: 2.5; }
svg .pub { stroke: #b8321e; fill: none; stroke-width: 2; }
svg .pub-mark { fill: #b8321e; font-size: 17px; font-weight: 700; }
svg .zero { stroke: #333; stroke-width: 1.5; }
svg .margin { stroke: #8a5a00; stroke-width: 2; stroke-dasharray: 4 3; }
svg .ci { stroke-width: 2.5; }
svg .est { stroke-width: 2; }
svg .holds { stroke: #17643a; fill: #17643a; }
svg .does-not-hold { stroke: #a51d2d; fill: #a51d2d; }
svg .inconclusive { stroke: #6b5a00; fill: #fff; }
svg text.forest-label { paint-order: stroke; stroke: #fff; stroke-width: 4px;
  stroke-linejoin: round; }
svg tspan.verdict { font-weight: 600; stroke: #fff; }
svg tspan.inconclusive { fill: #6b5a00; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.1rem 1rem;
  font-size: 0.9rem; margin: 0.5rem 0; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; }
td.fact { min-width: 6rem; max-width: 28rem; }
td.fact code, dl.facts code { word-break: normal; overflow-wrap: anywhere; }
details > summary { cursor: pointer; }
td.slots { max-width: 36rem; }
td.slots .slot { white-space: nowrap; }
table.contrasts { font-size: 0.85rem; }
table.contrasts th, table.contrasts td { padding: 0.2rem 0.35rem; }
table.contrasts code { word-break: normal; }
table.contrasts td.group ul { list-style: none; padding: 0; }
table.contrasts td.reason { min-width: 10rem; }
table.contrasts td.reason strong { white-space: nowrap; }
"""


def _text(value: object) -> str:
    """Escaped text, safe in element content and in quoted attribute values, its control
    characters shown as text (:func:`repro._escape.visible`)."""
    return html.escape(visible(str(value)), quote=True)


def _json(value: Number) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def _data(**names: str) -> str:
    return "".join(f' data-{key.replace("_", "-")}="{_text(v)}"' for key, v in names.items())


def _figure(tag: str, value: Number, text: str, css: str = "", **names: str) -> str:
    """An element showing ``text`` for ``value``, with the attributes that name the figure."""
    cls = f' class="{css}"' if css else ""
    return f'<{tag}{cls}{_data(**names)} data-value="{_text(_json(value))}">{_text(text)}</{tag}>'


def _num(value: float | None, places: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{places}f}"


def _cell(value: float | int | None, field: str, **names: str) -> str:
    text = str(value) if isinstance(value, int) else _num(value)
    return _figure("td", value, text, "num", field=field, **names)


def _table(head: Sequence[str], rows: Sequence[str], css: str = "") -> str:
    header = "".join(f"<th>{_text(h)}</th>" for h in head)
    cls = f' class="{css}"' if css else ""
    # Wrapped so that a wide table (many checks) scrolls instead of overflowing the page.
    return (
        f'<div class="wide"><table{cls}><thead><tr>{header}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


# --------------------------------------------------------------------------- sections


def _claim(agg: Aggregates, tiers: Tiers, ledger: Ledger, forest: Forest | None) -> str:
    e = agg.estimand
    kind = {"estimand": e.kind}
    total = sum(c.scheduled for c in agg.conditions)
    valid = sum(c.valid for c in agg.conditions)
    runs = f"{valid} of {total} scheduled runs ended valid"
    if e.value is None or e.interval is None:
        claim = f"<p>{runs}; the estimand is undefined.</p>"
    else:
        iv = e.interval
        claim = (
            f"<p>Under this sealed protocol, {runs}, and the {_text(e.kind.replace('-', ' '))} "
            f"of <code>{_text(agg.measure)}</code> is "
            + _figure("strong", e.value, _num(e.value, 6), field="value", **kind)
            + f" with a {iv.level:.0%} {_text(iv.method)} interval ["
            + _figure("span", iv.low, _num(iv.low, 6), field="low", **kind)
            + ", "
            + _figure("span", iv.high, _num(iv.high, 6), field="high", **kind)
            + "] (half-width "
            + _figure("span", iv.halfwidth, _num(iv.halfwidth, 6), field="halfwidth", **kind)
            + "; standard error "
            + _figure("span", e.se, _num(e.se, 6), field="se", **kind)
            + ").</p>"
        )
    rep = tiers.reproduction
    parts = [
        "<section id=claim><h2>Claim</h2>",
        claim,
        "" if forest is None else _primary_sentences(forest),
        f'<p class="class">Reproduction class: <strong class="{_text(rep.verdict)}"'
        f"{_data(reproduction=rep.verdict)}>{_text(rep.verdict)}</strong> "
        f"({_text(rep.reason)})</p>",
    ]
    if rep.figures:
        parts.append(_figures(rep.figures))
    if ledger.citation is not None:
        c = ledger.citation
        where = f", {_text(c.locator)}" if c.locator else ""
        parts.append(
            f"<p>Published figures from: {_text(c.title)} (<code>{_text(c.url)}</code>{where})</p>"
        )
    parts.append("</section>")
    return "".join(parts)


def _figures(figures: Sequence[FigureComparison]) -> str:
    rows = []
    for f in figures:
        name = {"figure": f.figure}
        equal = "equal" if f.equal_at_precision else "differs"
        rows.append(
            f"<tr><td>{_text(f.figure)}</td>"
            + _figure("td", f.published, str(f.published), "num", field="published", **name)
            + _cell(f.observed, "observed", **name)
            + f'<td class="num">{_text(f.observed_rounded or "n/a")}</td>'
            + _figure("td", f.equal_at_precision, equal, equal, field="equal_at_precision", **name)
            + "</tr>"
        )
    return _table(["figure", "published", "observed", "observed, rounded", "at precision"], rows)


def _published_cells(row: FigureRow, names: dict[str, str]) -> str:
    """A condition's published value and whether the observed one equals it at precision."""
    equal = "equal" if row.equal_at_precision else "differs"
    text = equal if row.equal_at_precision else f"differs (observed {row.observed_rounded})"
    return _figure("td", row.published, str(row.published), "num", field="published", **names) + (
        _figure("td", row.equal_at_precision, text, equal, field="equal_at_precision", **names)
    )


def _conditions(model: Figures) -> str:
    has_published = any(r.published is not None for r in model.conditions)
    head = ["id", "condition", "n", "mean", "sd", "low", "high"]
    head += ["published", "agreement"] if has_published else []
    rows = []
    for r in model.conditions:
        names = {"condition": r.key}
        iv = r.interval
        row = (
            f"<tr><td>{_text(r.key)}</td>"
            f'<td class="label">{_text(r.label)}</td>'
            + _cell(r.n, "valid", **names)
            + _cell(r.mean, "mean", **names)
            + _cell(r.sd, "sd", **names)
            + _cell(None if iv is None else iv.low, "low", **names)
            + _cell(None if iv is None else iv.high, "high", **names)
        )
        if r.published is not None:
            row += _published_cells(r, names)
        elif has_published:
            row += "<td></td><td></td>"
        rows.append(row + "</tr>")
    level = next((r.interval.level for r in model.conditions if r.interval), None)
    level_text = "" if level is None else f" ({level:.0%} interval)"
    return (
        f"<section id=conditions><h2>Conditions</h2><p><code>{_text(model.measure)}</code> by "
        f"condition{level_text}; n is the number of valid runs.</p>"
        + _table(head, rows)
        + "</section>"
    )


# --------------------------------------------------------------------------- contrasts

#: The forest plot's vertical geometry, in pixels: a row (its text line, then its marks), and
#: where the first row starts.
_FOREST_ROW = 46
_FOREST_TOP = 6


def _primary_sentences(forest: Forest) -> str:
    """A sentence of the claim per primary contrast."""
    return "".join(_primary_sentence(r, forest) for r in forest.rows if r.contrast.primary)


def _primary_sentence(row: ForestRow, forest: Forest) -> str:
    """A primary contrast's verdict in one sentence of the claim, with its difference, interval
    and adjusted p-value."""
    c, axis = row.contrast, row.axis
    names = {"contrast": c.id}
    head = f"<p>Pre-registered primary contrast <code>{_text(c.id)}</code>: " + _figure(
        "strong", c.verdict, c.verdict, c.verdict, field="verdict", **names
    )
    iv = c.interval
    if c.estimate is None or iv is None:
        return head + f" ({_text(c.reason)}).</p>"
    return (
        head
        + " (difference "
        + _figure("span", c.estimate, axis.text(c.estimate), field="estimate", **names)
        + f", {iv.level:.0%} interval ["
        + _figure("span", iv.low, axis.text(iv.low), field="low", **names)
        + ", "
        + _figure("span", iv.high, axis.text(iv.high), field="high", **names)
        + f"], {_text(adjusted_name(forest.multiplicity))} "
        + _figure("span", c.p_adjusted, p_text(c.p_adjusted), field="p_adjusted", **names)
        + ").</p>"
    )


def _estimate_mark(c: ContrastResult, x: str, y: float) -> str:
    """The difference's mark, its shape saying the verdict as its text and colour do: a filled
    dot (holds), a filled square (does-not-hold), an open dot (inconclusive)."""
    names = _data(contrast=c.id, field="estimate") + f' data-value="{_json(c.estimate)}"'
    css = f"est {_text(c.verdict)}"
    if c.verdict == "does-not-hold":
        return (
            f'<rect class="{css}" x="{x}" y="{y - 4.5:.2f}" width="9" height="9" '
            f'transform="translate(-4.5 0)"{names}/>'
        )
    return f'<circle class="{css}" cx="{x}" cy="{y:.2f}" r="5"{names}/>'


def _forest_row(row: ForestRow, axis: Axis, top: float) -> str:
    """One contrast at ``top``: its id, verdict and figures in words on a line of their own,
    then, in the marks' band below it, 0 (the solid line, drawn in the band only so that it
    never crosses a label), its margin's mark (non-inferiority), its interval and its
    difference."""
    c = row.contrast
    names = {"contrast": c.id}
    y = top + 32
    zero = _at(axis, 0.0)
    out = [
        f"<g{_data(forest_row=c.id)}><title>{_text(row.label)}: {_text(c.verdict)} "
        f"({_text(c.reason)})</title>",
        f'<text class="forest-label" x="0" y="{top + 14:.2f}">'
        f'<tspan class="label">{_text(row.label)}</tspan>'
        f'<tspan class="verdict {_text(c.verdict)}" dx="10"{_data(field="verdict", **names)} '
        f'data-value="{_text(_json(c.verdict))}">{_text(c.verdict)}</tspan>'
        f'<tspan class="note" dx="10">{_text(row.note)}</tspan></text>',
        f'<line class="zero" x1="{zero}" x2="{zero}" y1="{y - _FOREST_BAND:.2f}" '
        f'y2="{y + _FOREST_BAND:.2f}" data-zero="0"/>',
    ]
    if c.direction == "non-inferiority":
        x = _at(axis, row.null)
        out.append(
            f'<line class="margin" x1="{x}" x2="{x}" y1="{y - 11:.2f}" y2="{y + 11:.2f}"'
            f'{_data(field="margin", **names)} data-value="{_json(c.margin)}" '
            f'data-at="{_json(row.null)}"/>'
        )
    iv = c.interval
    css = f"ci {_text(c.verdict)}"
    if iv is not None:
        low, high = _at(axis, iv.low), _at(axis, iv.high)
        out.append(f'<line class="{css}" x1="{low}" x2="{high}" y1="{y:.2f}" y2="{y:.2f}"/>')
        out.append(_bar_end(low, y, "low", iv.low, names, css))
        out.append(_bar_end(high, y, "high", iv.high, names, css))
    if c.estimate is not None:
        out.append(_estimate_mark(c, _at(axis, c.estimate), y))
    out.append("</g>")
    return "".join(out)


#: Half the height of a forest row's marks band, around its marks, in pixels: where its 0 line
#: and its grid lines are drawn (its label's line is above it).
_FOREST_BAND = 12
#: Each forest panel's axis name: the measure's keeps the plot's first name.
_FOREST_AXES = {"measure": "contrasts", "rate": "contrast-rates"}


def _forest_axis(axis: Axis, name: str, bands: Sequence[float], bottom: float) -> str:
    """A forest panel's axis under its rows: the axis line, ticks, labels and title as
    :func:`_axis` draws them, its grid lines only in the rows' marks bands (centred at
    ``bands``), clear of the labels."""
    drawn = _axis(axis, name, bottom, bottom)
    grid = "".join(
        f'<line class="grid" x1="{_at(axis, tick)}" x2="{_at(axis, tick)}" '
        f'y1="{y - _FOREST_BAND:.2f}" y2="{y + _FOREST_BAND:.2f}"/>'
        for tick in axis.ticks
        for y in bands
    )
    return drawn.replace(">", ">" + grid, 1)


def _forest(forest: Forest) -> str:
    """The forest plot: a panel per unit (the measure's differences, then the rates'), each
    with its contrasts on its own axis of differences and a line at 0 through each row's
    marks."""
    top, parts = _FOREST_TOP, []
    for panel in forest.panels:
        rows = [_forest_row(r, panel.axis, top + i * _FOREST_ROW) for i, r in enumerate(panel.rows)]
        bottom = top + _FOREST_ROW * len(panel.rows)
        bands = [top + i * _FOREST_ROW + 32 for i in range(len(panel.rows))]
        name = _FOREST_AXES[panel.unit]
        parts.append(
            f"<g{_data(forest_panel=panel.unit)}>"
            + _forest_axis(panel.axis, name, bands, bottom)
            + "".join(rows)
            + "</g>"
        )
        top = bottom + _AXIS + _GAP
    caption = " ".join(_text(line) for line in forest.caption)
    return (
        f'<figure><div class="plot"><svg width="100%" height="{top - _GAP:.0f}" role="img" '
        f'aria-label="{_text(forest.measure)}: the difference of each pre-registered contrast">'
        + "".join(parts)
        + f"</svg></div><figcaption>{caption}</figcaption></figure>"
    )


def _group(conditions: Sequence[str], labels: Mapping[str, str]) -> str:
    items = "".join(
        f"<li><code>{_text(c)}</code> {_text(labels.get(c, ''))}</li>" for c in conditions
    )
    return f'<td class="group"><ul>{items}</ul></td>'


def _claim_of(c: ContrastResult) -> str:
    """A contrast's claim: its direction (and margin), which way is better, its pairing."""
    names = {"contrast": c.id}
    margin = ""
    if c.direction == "non-inferiority":
        margin = ", margin " + _figure("span", c.margin, f"{c.margin:g}", field="margin", **names)
    return f"<td>{_text(c.direction)}{margin}; {_text(c.better)} is better; {_text(c.pairing)}</td>"


def _n_of(c: ContrastResult) -> str:
    """A contrast's sample: its pairs and incomplete pairs, or each side's runs."""
    names = {"contrast": c.id}
    if c.pairs is not None:
        incomplete = c.incomplete_pairs
        return (
            '<td class="num">'
            + _figure("span", c.pairs, str(c.pairs), field="pairs", **names)
            + " pairs<br>"
            + _figure(
                "span",
                incomplete,
                "n/a" if incomplete is None else str(incomplete),
                field="incomplete_pairs",
                **names,
            )
            + " incomplete</td>"
        )
    return (
        '<td class="num">'
        + _figure("span", c.n_a, str(c.n_a), field="n_a", **names)
        + " vs "
        + _figure("span", c.n_b, str(c.n_b), field="n_b", **names)
        + "<br>runs</td>"
    )


def _contrast_row(row: ForestRow, axis: Axis, labels: Mapping[str, str]) -> str:
    c = row.contrast
    names = {"contrast": c.id}
    iv = c.interval
    rank = "primary" if c.primary else "secondary"
    if iv is None:
        interval = (
            '<td class="num">'
            + _figure("span", None, "n/a", field="low", **names)
            + " to "
            + _figure("span", None, "n/a", field="high", **names)
            + "</td>"
        )
    else:
        interval = (
            '<td class="num">['
            + _figure("span", iv.low, axis.text(iv.low), field="low", **names)
            + ", "
            + _figure("span", iv.high, axis.text(iv.high), field="high", **names)
            + f"]<br>{iv.level:.0%} {_text(iv.method)}</td>"
        )
    return (
        f"<tr{_data(contrast_row=c.id)}><td><code>{_text(c.id)}</code><br>"
        + _figure("span", c.primary, rank, rank, field="primary", **names)
        + "</td>"
        + _claim_of(c)
        + _group(c.a, labels)
        + _group(c.b, labels)
        + _n_of(c)
        + _figure("td", c.estimate, axis.text(c.estimate), "num", field="estimate", **names)
        + interval
        + _figure("td", c.p_value, p_text(c.p_value), "num", field="p_value", **names)
        + _figure("td", c.p_adjusted, p_text(c.p_adjusted), "num", field="p_adjusted", **names)
        + '<td class="reason">'
        + _figure("strong", c.verdict, c.verdict, c.verdict, field="verdict", **names)
        + f"<br>{_text(c.reason)}</td></tr>"
    )


def _contrasts(forest: Forest, agg: Aggregates, order: Sequence[str]) -> str:
    """The pre-registered contrasts: a forest plot of their differences, then a table of each
    one's claim, groups, sample, figures and verdict."""
    labels = {c.condition: condition_label(c.factors, c.participant, order) for c in agg.conditions}
    control = (
        "Holm's step-down adjustment"
        if forest.multiplicity == "holm"
        else "no adjustment (a family of one primary contrast)"
    )
    family = _figure(
        "span", forest.multiplicity, forest.multiplicity, field="multiplicity", family="contrasts"
    )
    head = ["contrast", "claim", "a", "b", "n", "difference", "interval", "p"]
    head += [f"p adjusted ({forest.multiplicity})", "verdict and reason"]
    rows = [_contrast_row(r, r.axis, labels) for r in forest.rows]
    return (
        "<section id=contrasts><h2>Contrasts</h2>"
        f"<p>The protocol pre-registered {len(forest.rows)} contrast(s) of "
        f"<code>{_text(forest.measure)}</code>, each a difference a - b (positive favours a) "
        "with its two-sided interval at the contrast's level and its p-value (one-sided for "
        "superiority and non-inferiority). The family's error rate is controlled by "
        f"{control} (multiplicity {family}); a verdict holds when the adjusted p-value is below "
        "1 - level.</p>" + _forest(forest) + _table(head, rows, "contrasts") + "</section>"
    )


# --------------------------------------------------------------------------- plot

# The plot's vertical geometry, in pixels. Across, every position is a percentage of the SVG's
# width, which is the content column's (the padding of ``.plot svg`` keeps the outermost tick
# labels inside the page): the plot is as wide as the page it is on, its text as large.
_ROW = 50
_ROW_PUBLISHED = 60
_AXIS = 58
_GAP = 18
#: Labels longer than this are cut in the plot (the whole label is in the row's tooltip and in
#: the conditions table).
_LABEL_CHARS = 60


def _pc(share: float) -> str:
    """An x coordinate: ``share`` of the plot's width, as a percentage."""
    return f"{share * 100:.3f}%"


def _at(axis: Axis, value: float) -> str:
    return _pc(axis.share(value))


def _names(row: FigureRow) -> dict[str, str]:
    """The attributes that name a row's figures: its condition, or the estimand's kind."""
    return {"estimand": row.key} if row.is_estimand else {"condition": row.key}


def _runs(row: PlotRow, axis: Axis, centre: float) -> list[str]:
    """A row's valid runs: a small dot per run, or a bar per bin (heights relative to the
    row's fullest bin)."""
    key = {"run": row.row.key}
    out = [
        f'<circle class="run" cx="{_at(axis, p.value)}" cy="{centre + 7 * p.offset:.2f}" '
        f'r="2.6"{_data(**key)} data-measure="{_json(p.value)}"/>'
        for p in row.points
    ]
    fullest = max((b.count for b in row.bins), default=0)
    for b in row.bins:
        height = 16 * b.count / fullest
        left, right = axis.share(b.low), axis.share(b.high)
        out.append(
            f'<rect class="bin" x="{_pc(left)}" width="{_pc(right - left)}" '
            f'y="{centre + 8 - height:.2f}" height="{height:.2f}"{_data(bin=row.row.key)} '
            f'data-low="{_json(b.low)}" data-high="{_json(b.high)}" data-count="{b.count}"/>'
        )
    return out


def _ties(row: PlotRow, axis: Axis, centre: float) -> list[str]:
    """Beside each spot where runs share a value, how many (``x10 at 500``): the most runs
    first, at most :data:`repro.figures.MAX_TIES_NAMED` a row, none so near one already
    named that the two would overlap (:func:`repro.figures.ties_to_name`)."""
    return [
        f'<text class="tie" x="{_at(axis, t.value)}" dx="7" y="{centre + 4:.2f}"'
        f'{_data(tie=row.row.key)} data-count="{t.count}" data-at="{_json(t.value)}">'
        f"{_text(t.text(axis))}</text>"
        for t in ties_to_name(row.ties, axis)
    ]


def _bar_end(x: str, y: float, field: str, value: float, names: dict[str, str], css: str) -> str:
    return (
        f'<line class="{css}" x1="{x}" x2="{x}" y1="{y - 5:.2f}" y2="{y + 5:.2f}"'
        f'{_data(field=field, **names)} data-value="{_text(_json(value))}"/>'
    )


def _marks(row: FigureRow, axis: Axis, y: float, y_published: float) -> list[str]:
    """A row's mean with its interval at ``y``, its published value with its half-width at
    ``y_published``."""
    names, iv, out = _names(row), row.interval, []
    if iv is not None:
        low, high = _at(axis, iv.low), _at(axis, iv.high)
        out.append(f'<line class="obs" x1="{low}" x2="{high}" y1="{y:.2f}" y2="{y:.2f}"/>')
        out.append(_bar_end(low, y, "low", iv.low, names, "obs"))
        out.append(_bar_end(high, y, "high", iv.high, names, "obs"))
    if row.mean is not None:
        # aggregates.json calls the estimand's observed figure its value, a condition's its mean.
        mean_field = "value" if row.is_estimand else "mean"
        out.append(
            f'<circle class="obs" cx="{_at(axis, row.mean)}" cy="{y:.2f}" r="4.5"'
            f'{_data(field=mean_field, **names)} data-value="{_json(row.mean)}"/>'
        )
    if row.published is not None:
        half = row.published_halfwidth
        if half is not None:
            out.append(
                f'<line class="pub" x1="{_at(axis, row.published - half)}" '
                f'x2="{_at(axis, row.published + half)}" y1="{y_published:.2f}" '
                f'y2="{y_published:.2f}"'
                f'{_data(field="published_halfwidth", **names)} data-value="{_json(half)}"/>'
            )
        out.append(
            f'<text class="pub-mark" x="{_at(axis, row.published)}" y="{y_published:.2f}" '
            f'text-anchor="middle" dominant-baseline="central"'
            f'{_data(field="published", **names)} data-value="{_json(row.published)}">'
            "\u00d7</text>"
        )
    return out


def _plot_row(row: PlotRow, axis: Axis, top: float, height: int) -> str:
    """One row at ``top``: its label and note, its runs, its mean and interval, its published
    value."""
    label = row.label
    short = label if len(label) <= _LABEL_CHARS else label[: _LABEL_CHARS - 1] + "\u2026"
    out = [
        f"<g{_data(row=row.row.key)}><title>{_text(label)}</title>",
        f'<text x="0" y="{top + 13:.2f}"><tspan class="label">{_text(short)}</tspan>'
        f'<tspan class="note" dx="10">{_text(row.note)}</tspan></text>',
    ]
    out += _runs(row, axis, top + 27)
    out += _ties(row, axis, top + 27)
    out += _marks(row.row, axis, top + 42, top + 53)
    out.append("</g>")
    return "".join(out)


def _axis(axis: Axis, name: str, top: float, bottom: float) -> str:
    """The axis under rows from ``top`` to ``bottom``: a grid line per tick, the axis line, the
    ticks with their labels, and the title."""
    out = [f'<g{_data(axis=name)} data-low="{_json(axis.low)}" data-high="{_json(axis.high)}">']
    for tick, label in zip(axis.ticks, axis.labels, strict=True):
        x = _at(axis, tick)
        out.append(
            f'<line class="grid" x1="{x}" x2="{x}" y1="{top:.2f}" y2="{bottom:.2f}"/>'
            f'<line class="tick" x1="{x}" x2="{x}" y1="{bottom:.2f}" y2="{bottom + 5:.2f}"/>'
            f'<text class="tick-label" x="{x}" y="{bottom + 18:.2f}" text-anchor="middle"'
            f' data-tick="{_json(tick)}">{_text(label)}</text>'
        )
    out.append(
        f'<line class="axis" x1="0%" x2="100%" y1="{bottom:.2f}" y2="{bottom:.2f}"/>'
        f'<text class="axis-title" x="50%" y="{bottom + 34:.2f}" text-anchor="middle">'
        f"{_text(axis.title)}</text>"
        f'<text class="axis-detail" x="50%" y="{bottom + 49:.2f}" text-anchor="middle">'
        f"{_text(axis.detail)}</text></g>"
    )
    return "".join(out)


def _panel(panel: PlotPanel, name: str, top: float, height: int) -> tuple[str, float]:
    """A panel's rows and axis from ``top``, and where it ends."""
    bottom = top + height * len(panel.rows)
    rows = [_plot_row(r, panel.axis, top + i * height, height) for i, r in enumerate(panel.rows)]
    return _axis(panel.axis, name, top, bottom) + "".join(rows), bottom + _AXIS


def _legend_items(model: Plot) -> int:
    """How many lines the legend has."""
    return 1 + model.has_runs + model.has_published


def _legend(model: Plot) -> str:
    """What the marks mean: the runs (when drawn), the mean with its interval, and the
    published value only when some row has one."""
    interval = f"{model.level:.0%} {model.method} interval" if model.method else "interval"
    items: list[tuple[str, str, str]] = []
    if model.has_runs and model.binned:
        mark = '<rect class="bin" x="0" y="-8" width="10" height="10"/>'
        items.append(("bins", mark, "valid runs, counted in bins"))
    elif model.has_runs:
        items.append(("runs", '<circle class="run" cx="5" cy="-3" r="2.2"/>', "a valid run"))
    items.append(
        (
            "observed",
            '<line class="obs" x1="0" x2="22" y1="-4" y2="-4"/>'
            '<circle class="obs" cx="11" cy="-4" r="4.5"/>',
            f"mean, {interval}",
        )
    )
    if model.has_published:
        items.append(
            (
                "published",
                '<line class="pub" x1="0" x2="22" y1="-4" y2="-4"/>'
                '<text class="pub-mark" x="11" y="-4" text-anchor="middle" '
                'dominant-baseline="central">\u00d7</text>',
                "published value \u00b1 published half-width",
            )
        )
    out = [
        f'<g{_data(legend=key)} transform="translate(0 {16 + 18 * i})">{mark}'
        f'<text x="30" y="0">{_text(text)}</text></g>'
        for i, (key, mark, text) in enumerate(items)
    ]
    return '<g class="legend">' + "".join(out) + "</g>"


def _plot(model: Figures) -> str:
    """The plot of the plot model (:func:`repro.figures.plot_model`), the one the PNG
    draws (:mod:`repro.present.plot`): every condition on one axis with its runs, and the
    estimand on its own."""
    drawn = plot_model(model)
    height = _ROW_PUBLISHED if drawn.has_published else _ROW
    top = 18 * _legend_items(drawn) + 14
    conditions, bottom = _panel(drawn.conditions, "conditions", top, height)
    estimand, bottom = _panel(drawn.estimand, "estimand", bottom + _GAP, height)
    caption = " ".join(_text(line) for line in drawn.caption)
    return (
        "<section id=plot><h2>Plot</h2><figure>"
        f'<div class="plot"><svg width="100%" height="{bottom:.0f}" role="img" '
        f'aria-label="{_text(model.measure)}: observed and published figures by condition">'
        + _legend(drawn)
        + conditions
        + estimand
        + f"</svg></div><figcaption>{caption}</figcaption></figure></section>"
    )


# --------------------------------------------------------------------------- scores


def _check_cell(cell: str, check: str, passed: int, runs: int, rate: Sequence[Number]) -> str:
    names = {"cell": cell, "check": check}
    out = [
        _figure("span", passed, str(passed), field="passed", **names),
        "/",
        _figure("span", runs, str(runs), field="runs", **names),
    ]
    value, low, high = rate
    if value is not None and low is not None and high is not None:
        out += [
            " (",
            _figure("span", value, f"{value:.2f}", field="rate", **names),
            "; ",
            _figure("span", low, f"{low:.2f}", field="low", **names),
            "\u2013",
            _figure("span", high, f"{high:.2f}", field="high", **names),
            ")",
        ]
    return '<td class="num check">' + "".join(out) + "</td>"


def _cell_row(cell: CellScore, order: Sequence[str], categories: Sequence[str]) -> str:
    names = {"cell": cell.condition}
    row = [
        f"<tr><td>{_text(cell.condition)}</td>",
        f'<td class="label">{_text(condition_label(cell.factors, cell.participant, order))}</td>',
        f"<td>{_text(cell.stratum)}</td>",
        _cell(cell.valid_runs, "valid_runs", **names),
        _cell(cell.superseded_runs, "superseded_runs", **names),
    ]
    row += [
        _check_cell(cell.condition, c.name, c.passed, c.runs, (c.rate, c.low, c.high))
        for c in cell.checks
    ]
    for k in categories:
        count = cell.categories.get(k)
        row.append(
            _figure("td", count, "" if count is None else str(count), "num", category=k, **names)
        )
    median = None if cell.median_measure is None else f"{cell.median_measure:g}"
    row += [
        f"<td>{_text(cell.agreement)}</td>",
        _figure("td", cell.median_measure, median or "n/a", "num", field="median_measure", **names),
        f"<td>{_text(cell.note or '')}</td></tr>",
    ]
    return "".join(row)


def _scores(scores: Scores, order: Sequence[str]) -> str:
    checks = list(dict.fromkeys(c.name for cell in scores.cells for c in cell.checks))
    categories = list(dict.fromkeys(k for cell in scores.cells for k in cell.categories))
    head = ["id", "condition", "stratum", "valid runs", "superseded", *checks, *categories]
    head += ["agreement", "median measure", "note"]
    rows = [_cell_row(cell, order, categories) for cell in scores.cells]
    gates = "".join(
        f'<li class="{"holds" if g.holds else "fails"}"{_data(gate=g.name)} '
        f'data-holds="{_json(g.holds)}">{_text(g.name)}: '
        f"{'holds' if g.holds else 'fails'} ({_text(g.detail)})</li>"
        for g in scores.gates
    )
    return (
        "<section id=scores><h2>Scores</h2>"
        f"<p>Each check is reported on its own: passes/valid runs (rate; Wilson "
        f"{scores.level:.0%} interval); rates and medians need 2 valid runs.</p>"
        + _table(head, rows)
        + f"<h3>Publish gates</h3><ul>{gates}</ul></section>"
    )


# --------------------------------------------------------------------------- rliable


def _estimate_cell(value: float | None, low: float | None, high: float | None, **names: str) -> str:
    """A figure and its interval in one cell, each named (``n/a`` when undefined)."""
    return (
        '<td class="num">'
        + _figure("span", value, _num(value), field="value", **names)
        + " ["
        + _figure("span", low, _num(low), field="low", **names)
        + ", "
        + _figure("span", high, _num(high), field="high", **names)
        + "]</td>"
    )


def _rl(rl: RLAggregates) -> str:
    """rliable's aggregates: a table of each participant's statistics, its probabilities of
    improvement, and each participant's performance profile."""
    names = [s.statistic for s in rl.participants[0].statistics] if rl.participants else []
    taus = [p.tau for p in rl.participants[0].profile] if rl.participants else []
    rows = []
    for q in rl.participants:
        who = {"rl_participant": q.participant}
        rows.append(
            f"<tr><td><code>{_text(q.participant)}</code></td>"
            + _cell(q.runs, "runs", **who)
            + _cell(q.incomplete, "incomplete", **who)
            + "".join(
                _estimate_cell(s.value, s.low, s.high, statistic=s.statistic, **who)
                for s in q.statistics
            )
            + "".join(
                _estimate_cell(p.value, p.low, p.high, tau=repr(p.tau), **who) for p in q.profile
            )
            + "</tr>"
        )
    head = ["participant", "runs", "incomplete", *names, *(f"profile at {t:g}" for t in taus)]
    duels = [
        f"<tr><td><code>{_text(d.x)}</code> over <code>{_text(d.y)}</code></td>"
        + _cell(d.runs_x, "runs_x", improvement=f"{d.x} > {d.y}")
        + _cell(d.runs_y, "runs_y", improvement=f"{d.x} > {d.y}")
        + _estimate_cell(d.value, d.low, d.high, improvement=f"{d.x} > {d.y}")
        + "</tr>"
        for d in rl.improvements
    ]
    scores = "normalised scores" if rl.normalized else "scores"
    return (
        "<section id=rl-aggregates><h2>rliable aggregates</h2>"
        f"<p>Each participant's {scores} of <code>{_text(rl.measure)}</code> over the tasks of "
        f"<code>{_text(rl.task_factor)}</code>, from its complete replicates (runs; a replicate "
        f"with a task that did not end valid is left out, counted as incomplete), with "
        f"{rl.level:.0%} stratified bootstrap percentile intervals ({rl.resamples} resamples, "
        f"sampler {_text(rl.sampler)}); profiles count the fraction of "
        f"{_text(rl.distribution)} above each tau.</p>"
        + _table(head, rows)
        + (_table(["improvement", "runs x", "runs y", "P(x > y)"], duels) if duels else "")
        + "</section>"
    )


# --------------------------------------------------------------------------- tiers, contracts


def contract_evidence(ledger: Ledger) -> tuple[str, ...]:
    """The contract tier's evidence as :func:`repro.derive.tiers.contract` writes it from the
    ledger's contract facts: the page shows those facts as a table instead."""
    return tuple(
        f"{c}: " + ", ".join(f"{k}={v}" for k, v in sorted(f.items()))
        for c, f in sorted(ledger.contracts.items())
    )


def _evidence(t: Tier, ledger: Ledger) -> str:
    if t.name == "contract" and t.evidence and t.evidence == contract_evidence(ledger):
        return (
            f"The contract facts of {len(ledger.contracts)} condition(s): see "
            "<em>Contract facts</em> below."
        )
    return f"<ul>{''.join(f'<li>{_text(item)}</li>' for item in t.evidence)}</ul>"


def _tiers(tiers: Tiers, ledger: Ledger) -> str:
    """A row per tier: its verdict, its reason (a column only when some tier has one) and its
    evidence."""
    reasons = any(t.reason for t in tiers.tiers)
    rows = [
        f"<tr{_data(tier=t.name)}><td>{_text(t.name)}</td>"
        f'<td class="{_text(t.verdict)}"{_data(verdict=t.verdict)}>{_text(t.verdict)}</td>'
        + (f"<td>{_text(t.reason or '')}</td>" if reasons else "")
        + f"<td>{_evidence(t, ledger)}</td></tr>"
        for t in tiers.tiers
    ]
    head = ["tier", "verdict", *(["reason"] if reasons else []), "evidence"]
    return "<section id=tiers><h2>Tiers</h2>" + _table(head, rows) + "</section>"


def _fact(value: object) -> str:
    """A contract fact as text (as the tier's evidence writes it, each run of white space one
    space, as a browser shows it anyway), its start alone when it is long, the whole of it a
    click away."""
    text = " ".join(str(value).split())
    if len(text) <= _FACT_CHARS:
        return f"<code>{_text(text)}</code>"
    return (
        f"<details><summary><code>{_text(text[: _FACT_CHARS - 20])}</code>\u2026 "
        f"({len(text):,} characters)</summary><code>{_text(text)}</code></details>"
    )


def _contracts(ledger: Ledger) -> str:
    """Each condition's contract facts: those the same for every condition once, the others
    as a table of condition by fact."""
    contracts = dict(sorted(ledger.contracts.items()))
    if not contracts:
        return ""
    keys = sorted({k for facts in contracts.values() for k in facts})
    missing = object()
    shared = [
        k
        for k in keys
        if len({repr(f.get(k, missing)) for f in contracts.values()}) == 1
        and all(k in f for f in contracts.values())
    ]
    varying = [k for k in keys if k not in shared]
    first = next(iter(contracts.values()))
    parts = [
        "<section id=contracts><h2>Contract facts</h2><p>What the adapter recorded that every "
        "run of a condition sees; the contract tier holds each run to its condition's facts.</p>"
    ]
    if shared:
        parts.append(
            f'<p>The same for all {len(contracts)} condition(s):</p><dl class="facts">'
            + "".join(
                f"<dt>{_text(k)}</dt><dd{_data(contract='*', fact=k)}>{_fact(first[k])}</dd>"
                for k in shared
            )
            + "</dl>"
            + ("<p>By condition:</p>" if varying else "")
        )
    if varying:
        rows = [
            f"<tr><td>{_text(c)}</td>"
            + "".join(
                f'<td class="fact"{_data(contract=c, fact=k)}>'
                + (_fact(facts[k]) if k in facts else "")
                + "</td>"
                for k in varying
            )
            + "</tr>"
            for c, facts in contracts.items()
        ]
        parts.append(_table(["condition", *varying], rows))
    parts.append("</section>")
    return "".join(parts)


# --------------------------------------------------------------------------- losses

_SLOT = re.compile(r"(.*-r)([0-9]+)")


def _slot_items(slots: Sequence[str]) -> list[tuple[str, int]]:
    """Slots in order as items to list, each with how many slots it stands for: a run of
    consecutive slots of one condition (``c03-r0001`` to ``c03-r0004``) is one item,
    ``c03-r0001\u2013r0004``."""
    items: list[tuple[str, int]] = []
    run: tuple[str, str, str, int] | None = None  # prefix, first digits, last digits, count

    def close() -> None:
        if run is not None:
            prefix, first, last, count = run
            text = f"{prefix}{first}" + (f"\u2013r{last}" if count > 1 else "")
            items.append((text, count))

    for slot in slots:
        m = _SLOT.fullmatch(slot)
        if m is None:
            close()
            run = None
            items.append((slot, 1))
            continue
        prefix, digits = m.group(1), m.group(2)
        if (
            run is not None
            and run[0] == prefix
            and len(digits) == len(run[2])
            and int(digits) == int(run[2]) + 1
        ):
            run = (prefix, run[1], digits, run[3] + 1)
        else:
            close()
            run = (prefix, digits, digits, 1)
    close()
    return items


def _listed(slots: Sequence[str]) -> tuple[list[str], int]:
    """The slots' items to list (:func:`_slot_items`): at most :data:`MAX_SLOTS_LISTED` (or up
    to three more, rather than "and 2 more"), and how many slots the rest stand for."""
    items = _slot_items(slots)
    shown = items if len(items) <= MAX_SLOTS_LISTED + 3 else items[:MAX_SLOTS_LISTED]
    return [item for item, _ in shown], len(slots) - sum(count for _, count in shown)


def _slot_list(slots: Sequence[str]) -> str:
    """The slots compacted and cut, as the page lists them."""
    items, rest = _listed(slots)
    return ", ".join(items) + (f", and {rest:,} more slot(s)" if rest else "")


def _slot_cell(slots: Sequence[str]) -> str:
    """:func:`_slot_list` as a cell, each item kept on one line."""
    items, rest = _listed(slots)
    listed = ", ".join(f'<span class="slot">{_text(item)}</span>' for item in items)
    return (
        f'<td class="slots">{listed}' + (f", and {rest:,} more slot(s)" if rest else "") + "</td>"
    )


#: How the page words each way a slot did not end valid (docs/bundle-format.md).
_ENDED = {
    "invalid": "invalid (ran, but outside the protocol's validity rules)",
    "failed": "failed (attempts exhausted)",
    "excluded": "excluded",
}


def _losses(ledger: Ledger, lost_as: Mapping[str, LossStatus] | None = None) -> str:
    """The losses grouped by outcome and cause, the most frequent first: how each group's slots
    ended (``lost_as``, by their last attempt's status: invalid, failed or excluded; the
    ledger's outcome, which says failed for invalid slots too, where not given), how many
    slots, their attempts, and which slots."""
    if not ledger.losses:
        return (
            "<section id=losses><h2>Losses</h2><p>None: every admitted slot ended valid.</p>"
            "</section>"
        )
    ended = lost_as or {}
    groups: dict[tuple[str, str], list[Loss]] = {}
    for loss in ledger.losses:
        groups.setdefault((loss.outcome, loss.cause), []).append(loss)
    ordered = sorted(groups.items(), key=lambda item: -len(item[1]))
    rows = []
    for (outcome, cause), losses in ordered:
        names = {"outcome": outcome, "cause": cause}
        attempts = sum(loss.attempts for loss in losses)
        each = sorted({loss.attempts for loss in losses})
        per = f"{each[0]} each" if len(each) == 1 else f"{each[0]}\u2013{each[-1]} each"
        per_text = f" ({per})" if len(losses) > 1 else ""
        how = {ended.get(loss.slot, loss.outcome) for loss in losses}
        worded = "; ".join(_ENDED[status] for status in LOSS_STATUSES if status in how)
        rows.append(
            f"<tr><td>{_text(worded)}</td><td>{_text(cause)}</td>"
            + _figure("td", len(losses), f"{len(losses):,}", "num", field="slots", **names)
            + '<td class="num">'
            + _figure("span", attempts, f"{attempts:,}", field="attempts", **names)
            + f"{_text(per_text)}</td>"
            + _slot_cell([loss.slot for loss in losses])
            + "</tr>"
        )
    counts = ", ".join(
        f"{len(found):,} {status}" for status, found in loss_groups(ledger.losses, ended)
    )
    return (
        "<section id=losses><h2>Losses</h2>"
        f"<p>{len(ledger.losses):,} slot(s) did not end valid ({_text(counts)}) and are not in "
        "the means; nothing was imputed. By cause:</p>"
        + _table(["ended", "cause", "slots", "attempts", "which"], rows)
        + "</section>"
    )


# --------------------------------------------------------------------------- the page


def repro_version() -> str:
    """The version of repro making the page (:func:`repro.version`)."""
    return repro.version()


def _when(environment: Environment | None, version: str) -> str:
    """When the study ran and with which repro (environment.json, as the study recorded it),
    and which repro made the page."""
    made = f"This page was made by repro {_text(version)} from the verified bundle."
    if environment is None:
        return f"<p>{made}</p>"
    e = environment

    def utc(stamp: str) -> str:
        return f'<time datetime="{_text(stamp)}">{_text(stamp.replace("T", " ")[:-1])} UTC</time>'

    return (
        f"<p{_data(started=e.started_utc, finished=e.finished_utc)}>Study ran from "
        f"{utc(e.started_utc)} to {utc(e.finished_utc)} with repro "
        f"<span{_data(repro_version=e.repro_version)}>{_text(e.repro_version)}</span> on "
        f"{_text(e.implementation)} {_text(e.python)} (as its environment.json records). {made}</p>"
    )


def render(
    fp: FrozenProtocol,
    agg: Aggregates,
    tiers: Tiers,
    ledger: Ledger,
    scores: Scores | None = None,
    bundle_sha256: str | None = None,
    *,
    environment: Environment | None = None,
    values: Mapping[str, Sequence[float]] | None = None,
    version: str | None = None,
    contrasts: ContrastsFile | None = None,
    rl: RLAggregates | None = None,
    lost_as: Mapping[str, LossStatus] | None = None,
) -> str:
    """The page for a bundle's parsed files (the caller verified the bundle). A pure function:
    the same bundle gives the same bytes. ``bundle_sha256`` is the bundle's identity (the
    digest of its tag manifest) when known; ``environment`` says when the study ran;
    ``values`` are each condition's valid measures (:func:`repro.derive.derivation.run_measures`),
    which the plot draws run by run; ``version`` is repro's (:func:`repro_version` by
    default); ``contrasts`` is contrasts.json, whose section (a forest plot and a table) and
    primary contrasts' sentences in the claim are only on the page of a bundle that has it, as
    ``rl``'s section (rl-aggregates.json) is; ``lost_as`` is how each lost slot ended, by its
    last attempt's status (:meth:`repro.present.showing.Shown.lost_as`)."""
    p = fp.protocol
    order = [f.name for f in p.matrix]
    model = figures(fp, agg, tiers, values)
    forest = None if contrasts is None else forest_model(contrasts, agg.measure)
    identity = (
        ""
        if bundle_sha256 is None
        else f"<p>Bundle sha256 (of its tag manifest): <code>{_text(bundle_sha256)}</code></p>"
    )
    body = [
        f"<h1>{_text(p.title)}</h1>",
        f"<p>Protocol <code{_data(protocol=p.id)}>{_text(p.id)}</code>, sha256 "
        f"<code{_data(protocol_sha256=fp.sha256)}>{_text(fp.sha256)}</code>; adapter "
        f"<code>{_text(ledger.adapter.name)}</code> {_text(ledger.adapter.version)}.</p>",
        identity,
        _when(environment, version or repro_version()),
        _claim(agg, tiers, ledger, forest),
        _conditions(model),
        "" if forest is None else _contrasts(forest, agg, order),
        "" if rl is None else _rl(rl),
        _plot(model),
        _scores(scores, order) if scores is not None else "",
        _tiers(tiers, ledger),
        _contracts(ledger),
        _losses(ledger, lost_as),
        "<section id=recheck><h2>Re-check</h2><p>Offline, with no simulator installed, from a "
        "copy of the bundle: <code>repro verify BUNDLE_DIR</code></p></section>",
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_text(p.title)}</title><style>{_STYLE}</style></head>\n<body>\n"
        + "\n".join(part for part in body if part)
        + "\n</body></html>\n"
    )
