"""One self-contained HTML page for a verified bundle (``repro show DIR --html FILE``).

The page is evidence someone may open years later, offline, or archive next to the bundle, so
it depends on nothing outside itself: the style is inline, there is no script, and the plot is
an inline SVG drawn here (no matplotlib). A Content-Security-Policy of ``default-src 'none'``
makes a browser refuse any fetch the page might still attempt.

The conditions table and the plot read the figures model (:mod:`repro.derive.figures`), the one
the PNG of :mod:`repro.present.plot` draws too, so that the page and the PNG show the same
figures.

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
- ``data-slot`` with ``data-field`` ``attempts``: a loss of source-ledger.json;
- ``data-cell`` with ``data-field`` (``valid_runs``, ``superseded_runs``, ``median_measure``),
  with ``data-check`` (``passed``, ``runs``, ``rate``, ``low``, ``high``) or with
  ``data-category``: a cell of scores.json.

The text beside each value is rounded for people. All text from the bundle (titles, factor
levels, reasons, evidence, causes) is user data and is escaped.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from repro.derive.figures import FigureRow, Figures, condition_label, figures
from repro.models import (
    Aggregates,
    CellScore,
    FigureComparison,
    FrozenProtocol,
    Ledger,
    Scores,
    Tiers,
)

__all__ = ["render"]

Number = float | int | bool | None

# The plot's geometry, in SVG user units: labels left of the plot area, notes right of it.
_WIDTH = 1160
_PLOT_X = 420
_PLOT_WIDTH = 360
_NOTE_X = _PLOT_X + _PLOT_WIDTH + 16
_ROW = 34
_TOP = 40
#: Labels longer than this are cut in the plot (the whole label is in the row's tooltip and in
#: the conditions table).
_LABEL_CHARS = 60

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
.class { font-size: 1.1rem; }
svg { max-width: 100%; height: auto; }
svg text { font-family: system-ui, sans-serif; font-size: 12px; fill: #1a1a1a; }
svg .note { font-size: 11px; fill: #444; }
svg .axis { stroke: #ddd; }
svg .obs { stroke: #1f5fa8; fill: #1f5fa8; stroke-width: 2; }
svg .pub { stroke: #b8321e; fill: none; stroke-width: 2; }
"""


def _text(value: object) -> str:
    """Escaped text, safe in element content and in quoted attribute values."""
    return html.escape(str(value), quote=True)


def _json(value: Number) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def _data(**names: str) -> str:
    return "".join(f' data-{key.replace("_", "-")}="{_text(v)}"' for key, v in names.items())


def _figure(tag: str, value: Number, text: str, css: str = "", **names: str) -> str:
    """An element showing ``text`` for ``value``, with the attributes that name the figure."""
    cls = f' class="{css}"' if css else ""
    return f'<{tag}{cls}{_data(**names)} data-value="{_json(value)}">{_text(text)}</{tag}>'


def _num(value: float | None, places: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{places}f}"


def _cell(value: float | int | None, field: str, **names: str) -> str:
    text = str(value) if isinstance(value, int) else _num(value)
    return _figure("td", value, text, "num", field=field, **names)


def _table(head: Sequence[str], rows: Sequence[str]) -> str:
    header = "".join(f"<th>{_text(h)}</th>" for h in head)
    # Wrapped so that a wide table (many checks) scrolls instead of overflowing the page.
    return (
        f'<div class="wide"><table><thead><tr>{header}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


# --------------------------------------------------------------------------- sections


def _claim(agg: Aggregates, tiers: Tiers, ledger: Ledger) -> str:
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


# --------------------------------------------------------------------------- plot


#: Conditions share one scale unless the widest of them would then take less than this share
#: of the axis: intervals a few pixels wide (CAGE-2's, next to means a thousand apart) show
#: nothing, and each row then gets its own scale.
_SHARED_MIN_SHARE = 1 / 20


class _Scale:
    """A plot scale that spans every ``(centre, half-width)`` given, padded a tenth each side.

    It works on an eighth of every value (exact, but for subnormals): a centre plus a half-width
    and the padded spread of the largest finite floats then stay finite, where they would
    overflow to infinity and put every mark at NaN."""

    def __init__(self, spans: Sequence[tuple[float, float]]) -> None:
        low = min(c / 8 - h / 8 for c, h in spans)
        high = max(c / 8 + h / 8 for c, h in spans)
        #: An eighth of the spread of the spans.
        self.extent = high - low
        pad = self.extent / 10 if high > low else max(abs(high) / 100, 0.5)
        self._low, self._high = low - pad, high + pad

    def __call__(self, value: float, offset: float = 0.0) -> float:
        """The x coordinate of ``value + offset``."""
        share = (value / 8 + offset / 8 - self._low) / (self._high - self._low)
        return _PLOT_X + share * _PLOT_WIDTH


def _values(row: FigureRow) -> list[float]:
    """The figures of a row drawn as points: mean, interval bounds, published value."""
    found = [row.mean, row.published]
    if row.interval is not None:
        found += [row.interval.low, row.interval.high]
    return [v for v in found if v is not None]


def _spans(row: FigureRow) -> list[tuple[float, float]]:
    """What a row's scale must span, as (centre, half-width)."""
    found = [(v, 0.0) for v in _values(row)]
    if row.published is not None and row.published_halfwidth is not None:
        found.append((row.published, row.published_halfwidth))
    return found


def _names(row: FigureRow) -> dict[str, str]:
    """The attributes that name a row's figures: its condition, or the estimand's kind."""
    return {"estimand": row.key} if row.is_estimand else {"condition": row.key}


def _cross(x: float, y: float) -> str:
    """The path of the x that marks a published value."""
    a, b, c, d = (f"{v:.2f}" for v in (x - 4, x + 4, y - 4, y + 4))
    return f"M{a} {c}L{b} {d}M{a} {d}L{b} {c}"


def _tick(x: float, y: float, field: str, value: float, names: dict[str, str], css: str) -> str:
    return (
        f'<line class="{css}" x1="{x:.2f}" x2="{x:.2f}" y1="{y - 5:.2f}" y2="{y + 5:.2f}"'
        f'{_data(field=field, **names)} data-value="{_json(value)}"/>'
    )


def _marks(row: FigureRow, x: _Scale, y: float) -> list[str]:
    names, iv, out = _names(row), row.interval, []
    if iv is not None:
        yo = y - 6
        out.append(
            f'<line class="obs" x1="{x(iv.low):.2f}" x2="{x(iv.high):.2f}" '
            f'y1="{yo:.2f}" y2="{yo:.2f}"/>'
        )
        out.append(_tick(x(iv.low), yo, "low", iv.low, names, "obs"))
        out.append(_tick(x(iv.high), yo, "high", iv.high, names, "obs"))
    if row.mean is not None:
        # aggregates.json calls the estimand's observed figure its value, a condition's its mean.
        mean_field = "value" if row.is_estimand else "mean"
        out.append(
            f'<circle class="obs" cx="{x(row.mean):.2f}" cy="{y - 6:.2f}" r="4"'
            f'{_data(field=mean_field, **names)} data-value="{_json(row.mean)}"/>'
        )
    if row.published is not None:
        yp, half = y + 7, row.published_halfwidth
        if half is not None:
            out.append(
                f'<line class="pub" x1="{x(row.published, -half):.2f}" '
                f'x2="{x(row.published, half):.2f}" y1="{yp:.2f}" y2="{yp:.2f}"'
                f'{_data(field="published_halfwidth", **names)} data-value="{_json(half)}"/>'
            )
        out.append(
            f'<path class="pub" d="{_cross(x(row.published), yp)}"'
            f'{_data(field="published", **names)} data-value="{_json(row.published)}"/>'
        )
    return out


def _plot_row(index: int, row: FigureRow, scale: _Scale | None) -> str:
    """The row's label (a condition's ID and label), its axis, its marks on ``scale`` (its own
    scale if None) and a note of its figures."""
    y = _TOP + index * _ROW + _ROW / 2
    label = row.label if row.is_estimand else f"{row.key} {row.label}"
    short = label if len(label) <= _LABEL_CHARS else label[: _LABEL_CHARS - 1] + "\u2026"
    out = [
        f"<g><title>{_text(label)}</title>",
        f'<text x="{_PLOT_X - 12}" y="{y + 4:.2f}" text-anchor="end">{_text(short)}</text>',
        f'<line class="axis" x1="{_PLOT_X}" x2="{_PLOT_X + _PLOT_WIDTH}" '
        f'y1="{y:.2f}" y2="{y:.2f}"/>',
    ]
    if _spans(row):
        out += _marks(row, scale or _Scale(_spans(row)), y)
    if row.mean is None:
        note = "observed mean n/a (fewer than two valid runs)"
    else:
        note = f"observed {_num(row.mean)}"
        if row.interval is not None:
            note += f" [{_num(row.interval.low)}, {_num(row.interval.high)}]"
    if row.published is not None:
        note += f"; published {row.published}"
        if row.published_halfwidth is not None:
            note += f" \u00b1 {row.published_halfwidth}"
    out.append(f'<text class="note" x="{_NOTE_X}" y="{y + 4:.2f}">{_text(note)}</text></g>')
    return "".join(out)


def _shared_scale(rows: Sequence[FigureRow]) -> _Scale | None:
    """One scale for every condition, when it leaves the widest of them a visible share of the
    axis; None when each row is better on its own."""
    spans = [s for row in rows for s in _spans(row)]
    if not spans:
        return None
    whole = _Scale(spans)
    widest = max(_Scale(_spans(row)).extent for row in rows if _spans(row))
    return whole if widest >= whole.extent * _SHARED_MIN_SHARE else None


def _scale_note(rows: Sequence[FigureRow], shared: _Scale | None) -> str:
    """Whether the conditions share one scale and, if so, where their lowest and highest
    figures stand on it."""
    if shared is None:
        return '<text x="12" y="20">each row on its own scale</text>'
    values = [v for row in rows for v in _values(row)]
    low, high = min(values), max(values)
    y = _TOP + _ROW * len(rows)
    return (
        '<text x="12" y="20">conditions on one scale; the estimand on its own</text>'
        f'<line class="axis" x1="{shared(low):.2f}" x2="{shared(low):.2f}" y1="{_TOP}" '
        f'y2="{y}"/><line class="axis" x1="{shared(high):.2f}" x2="{shared(high):.2f}" '
        f'y1="{_TOP}" y2="{y}"/>'
        f'<text class="note" x="{shared(low):.2f}" y="{_TOP - 2}" text-anchor="middle">'
        f"{_text(_num(low))}</text>"
        f'<text class="note" x="{shared(high):.2f}" y="{_TOP - 2}" text-anchor="middle">'
        f"{_text(_num(high))}</text>"
    )


def _plot(model: Figures) -> str:
    """The plot of the figures model, the one the PNG draws (:mod:`repro.present.plot`): a row
    per condition, on one scale when they are comparable, and the estimand's row."""
    rows = model.conditions
    shared = _shared_scale(rows)
    drawn = [_plot_row(i, row, shared) for i, row in enumerate(rows)]
    # The estimand (a sum, perhaps) is no condition's peer: always on its own scale.
    drawn.append(_plot_row(len(rows), model.estimand, None))
    height = _TOP + _ROW * len(drawn) + 8
    legend = (
        f'<circle class="obs" cx="{_PLOT_X}" cy="16" r="4"/>'
        f'<text x="{_PLOT_X + 10}" y="20">observed mean, {model.level:.0%} interval</text>'
        f'<path class="pub" d="{_cross(_NOTE_X, 16)}"/>'
        f'<text x="{_NOTE_X + 10}" y="20">published value (and interval, where published)</text>'
    )
    return (
        "<section id=plot><h2>Plot</h2>"
        f'<svg viewBox="0 0 {_WIDTH} {height}" '
        f'width="{_WIDTH}" height="{height}" role="img" '
        f'aria-label="{_text(model.measure)}: observed and published figures by condition">'
        + legend
        + _scale_note(rows, shared)
        + "".join(drawn)
        + "</svg></section>"
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


# --------------------------------------------------------------------------- tiers, losses


def _tiers(tiers: Tiers) -> str:
    rows = [
        f"<tr{_data(tier=t.name)}><td>{_text(t.name)}</td>"
        f'<td class="{_text(t.verdict)}"{_data(verdict=t.verdict)}>{_text(t.verdict)}</td>'
        f"<td>{_text(t.reason or '')}</td>"
        f"<td><ul>{''.join(f'<li>{_text(item)}</li>' for item in t.evidence)}</ul></td></tr>"
        for t in tiers.tiers
    ]
    return (
        "<section id=tiers><h2>Tiers</h2>"
        + _table(["tier", "verdict", "reason", "evidence"], rows)
        + "</section>"
    )


def _losses(ledger: Ledger) -> str:
    if not ledger.losses:
        return (
            "<section id=losses><h2>Losses</h2><p>None: every admitted slot ended valid.</p>"
            "</section>"
        )
    rows = [
        f"<tr><td>{_text(loss.slot)}</td><td>{_text(loss.outcome)}</td>"
        f"<td>{_text(loss.cause)}</td>"
        + _figure("td", loss.attempts, str(loss.attempts), "num", field="attempts", slot=loss.slot)
        + "</tr>"
        for loss in ledger.losses
    ]
    return (
        "<section id=losses><h2>Losses</h2>"
        f"<p>{len(ledger.losses)} slot(s) did not end valid and are not in the means; nothing "
        "was imputed.</p>" + _table(["slot", "outcome", "cause", "attempts"], rows) + "</section>"
    )


# --------------------------------------------------------------------------- the page


def render(
    fp: FrozenProtocol,
    agg: Aggregates,
    tiers: Tiers,
    ledger: Ledger,
    scores: Scores | None = None,
    bundle_sha256: str | None = None,
) -> str:
    """The page for a bundle's parsed files (the caller verified the bundle). A pure function:
    the same bundle gives the same bytes. ``bundle_sha256`` is the bundle's identity (the
    digest of its tag manifest) when known."""
    p = fp.protocol
    order = [f.name for f in p.matrix]
    model = figures(fp, agg, tiers)
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
        _claim(agg, tiers, ledger),
        _conditions(model),
        _plot(model),
        _scores(scores, order) if scores is not None else "",
        _tiers(tiers),
        _losses(ledger),
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
