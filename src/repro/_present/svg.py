"""The page's inline SVG (:mod:`repro._present.html`): the plot of the figures and the forest
plot of the contrasts, as markup made by construction (:mod:`repro._present.markup`).

The plot draws its plot model (:func:`repro._figures.plot_model`), the one the PNG of
:mod:`repro._present.plot` draws too, so that the page and the PNG show the same thing; the
forest plot draws :func:`repro._figures.forest_model`. Each SVG is as wide as the page's
content column: every x is a percentage of its width (the padding of ``.plot svg`` keeps the
outermost tick labels inside the page), its text the page's size; its vertical geometry is in
pixels. The attributes that name what is drawn are listed in :mod:`repro._present.html`."""

from __future__ import annotations

from collections.abc import Sequence

from repro._figures import (
    Axis,
    FigureRow,
    Figures,
    Forest,
    ForestRow,
    Plot,
    PlotPanel,
    PlotRow,
    plot_model,
    ties_to_name,
)
from repro._present.markup import EMPTY, Html, data, json_value
from repro.models import ContrastResult

__all__ = ["forest_figure", "plot_figure"]

# The plot's vertical geometry, in pixels.
_ROW = 50
_ROW_PUBLISHED = 60
_AXIS = 58
_GAP = 18
#: Labels longer than this are cut in the plot (the whole label is in the row's tooltip and in
#: the conditions table).
_LABEL_CHARS = 60

#: The forest plot's vertical geometry, in pixels: a row (its text line, then its marks), and
#: where the first row starts.
_FOREST_ROW = 46
_FOREST_TOP = 6
#: Half the height of a forest row's marks band, around its marks, in pixels: where its 0 line
#: and its grid lines are drawn (its label's line is above it).
_FOREST_BAND = 12
#: Each forest panel's axis name: the measure's keeps the plot's first name.
_FOREST_AXES = {"measure": "contrasts", "rate": "contrast-rates"}


def _pc(share: float) -> str:
    """An x coordinate: ``share`` of the plot's width, as a percentage."""
    return f"{share * 100:.3f}%"


def _at(axis: Axis, value: float) -> str:
    return _pc(axis.share(value))


def _y(value: float) -> str:
    """A y coordinate, in pixels."""
    return f"{value:.2f}"


# --------------------------------------------------------------------------- the plot


def _names(row: FigureRow) -> dict[str, str]:
    """The attributes that name a row's figures: its condition, or the estimand's kind."""
    return {"estimand": row.key} if row.is_estimand else {"condition": row.key}


def _runs(row: PlotRow, axis: Axis, centre: float) -> list[Html]:
    """A row's valid runs: a small dot per run, or a bar per bin (heights relative to the
    row's fullest bin)."""
    point = Html('<circle class="run" cx="{}" cy="{}" r="2.6"{} data-measure="{}"/>')
    out = [
        point.format(
            _at(axis, p.value),
            _y(centre + 7 * p.offset),
            data(run=row.row.key),
            json_value(p.value),
        )
        for p in row.points
    ]
    fullest = max((b.count for b in row.bins), default=0)
    bar = Html(
        '<rect class="bin" x="{x}" width="{width}" y="{y}" height="{height}"{data} '
        'data-low="{low}" data-high="{high}" data-count="{count}"/>'
    )
    for b in row.bins:
        height = 16 * b.count / fullest
        left, right = axis.share(b.low), axis.share(b.high)
        out.append(
            bar.format(
                x=_pc(left),
                width=_pc(right - left),
                y=_y(centre + 8 - height),
                height=_y(height),
                data=data(bin=row.row.key),
                low=json_value(b.low),
                high=json_value(b.high),
                count=b.count,
            )
        )
    return out


def _ties(row: PlotRow, axis: Axis, centre: float) -> list[Html]:
    """Beside each spot where runs share a value, how many (``x10 at 500``): the most runs
    first, at most :data:`repro._figures.MAX_TIES_NAMED` a row, none so near one already
    named that the two would overlap (:func:`repro._figures.ties_to_name`)."""
    tie = Html('<text class="tie" x="{}" dx="7" y="{}"{} data-count="{}" data-at="{}">{}</text>')
    return [
        tie.format(
            _at(axis, t.value),
            _y(centre + 4),
            data(tie=row.row.key),
            t.count,
            json_value(t.value),
            t.text(axis),
        )
        for t in ties_to_name(row.ties, axis)
    ]


def _bar_end(x: str, y: float, field: str, value: float, names: dict[str, str], css: str) -> Html:
    return Html('<line class="{}" x1="{}" x2="{}" y1="{}" y2="{}"{} data-value="{}"/>').format(
        css, x, x, _y(y - 5), _y(y + 5), data(field=field, **names), json_value(value)
    )


def _interval(
    axis: Axis, low: float, high: float, y: float, names: dict[str, str], css: str
) -> list[Html]:
    """An interval's line at ``y`` with a bar at each end, each end naming its value."""
    x_low, x_high = _at(axis, low), _at(axis, high)
    line = Html('<line class="{}" x1="{}" x2="{}" y1="{y}" y2="{y}"/>')
    return [
        line.format(css, x_low, x_high, y=_y(y)),
        _bar_end(x_low, y, "low", low, names, css),
        _bar_end(x_high, y, "high", high, names, css),
    ]


def _published(row: FigureRow, published: float, axis: Axis, y: float) -> list[Html]:
    """A row's published value (a cross) with its half-width (a line) at ``y``."""
    names, half, out = _names(row), row.published_halfwidth, []
    if half is not None:
        out.append(
            Html('<line class="pub" x1="{}" x2="{}" y1="{y}" y2="{y}"{} data-value="{}"/>').format(
                _at(axis, published - half),
                _at(axis, published + half),
                data(field="published_halfwidth", **names),
                json_value(half),
                y=_y(y),
            )
        )
    cross = Html(
        '<text class="pub-mark" x="{}" y="{}" text-anchor="middle" '
        'dominant-baseline="central"{} data-value="{}">\u00d7</text>'
    )
    out.append(
        cross.format(
            _at(axis, published), _y(y), data(field="published", **names), json_value(published)
        )
    )
    return out


def _marks(row: FigureRow, axis: Axis, y: float, y_published: float) -> list[Html]:
    """A row's mean with its interval at ``y``, its published value with its half-width at
    ``y_published``."""
    names, iv = _names(row), row.interval
    out = [] if iv is None else _interval(axis, iv.low, iv.high, y, names, "obs")
    if row.mean is not None:
        # aggregates.json calls the estimand's observed figure its value, a condition's its mean.
        mean_field = "value" if row.is_estimand else "mean"
        out.append(
            Html('<circle class="obs" cx="{}" cy="{}" r="4.5"{} data-value="{}"/>').format(
                _at(axis, row.mean),
                _y(y),
                data(field=mean_field, **names),
                json_value(row.mean),
            )
        )
    if row.published is not None:
        out += _published(row, row.published, axis, y_published)
    return out


def _plot_row(row: PlotRow, axis: Axis, top: float) -> Html:
    """One row at ``top``: its label and note, its runs, its mean and interval, its published
    value."""
    label = row.label
    short = label if len(label) <= _LABEL_CHARS else label[: _LABEL_CHARS - 1] + "\u2026"
    head = Html(
        '<g{}><title>{}</title><text x="0" y="{}"><tspan class="label">{}</tspan>'
        '<tspan class="note" dx="10">{}</tspan></text>'
    ).format(data(row=row.row.key), label, _y(top + 13), short, row.note)
    out = [head, *_runs(row, axis, top + 27), *_ties(row, axis, top + 27)]
    out += _marks(row.row, axis, top + 42, top + 53)
    return EMPTY.join(out) + Html("</g>")


def _axis(axis: Axis, name: str, top: float, bottom: float, grid: Html = EMPTY) -> Html:
    """The axis under rows from ``top`` to ``bottom``: a grid line per tick (or ``grid``
    first, when given), the axis line, the ticks with their labels, and the title."""
    tick = Html(
        '<line class="grid" x1="{x}" x2="{x}" y1="{top}" y2="{bottom}"/>'
        '<line class="tick" x1="{x}" x2="{x}" y1="{bottom}" y2="{end}"/>'
        '<text class="tick-label" x="{x}" y="{label}" text-anchor="middle"'
        ' data-tick="{value}">{text}</text>'
    )
    ticks = [
        tick.format(
            x=_at(axis, value),
            top=_y(top),
            bottom=_y(bottom),
            end=_y(bottom + 5),
            label=_y(bottom + 18),
            value=json_value(value),
            text=text,
        )
        for value, text in zip(axis.ticks, axis.labels, strict=True)
    ]
    return Html(
        '<g{} data-low="{}" data-high="{}">{}{}<line class="axis" x1="0%" x2="100%" '
        'y1="{bottom}" y2="{bottom}"/><text class="axis-title" x="50%" y="{title}" '
        'text-anchor="middle">{}</text><text class="axis-detail" x="50%" y="{detail}" '
        'text-anchor="middle">{}</text></g>'
    ).format(
        data(axis=name),
        json_value(axis.low),
        json_value(axis.high),
        grid,
        EMPTY.join(ticks),
        axis.title,
        axis.detail,
        bottom=_y(bottom),
        title=_y(bottom + 34),
        detail=_y(bottom + 49),
    )


def _panel(panel: PlotPanel, name: str, top: float, height: int) -> tuple[Html, float]:
    """A panel's rows and axis from ``top``, and where it ends."""
    bottom = top + height * len(panel.rows)
    rows = [_plot_row(r, panel.axis, top + i * height) for i, r in enumerate(panel.rows)]
    return _axis(panel.axis, name, top, bottom) + EMPTY.join(rows), bottom + _AXIS


def _legend(model: Plot) -> Html:
    """What the marks mean: the runs (when drawn), the mean with its interval, and the
    published value only when some row has one."""
    interval = f"{model.level:.0%} {model.method} interval" if model.method else "interval"
    items: list[tuple[str, Html, str]] = []
    if model.has_runs and model.binned:
        mark = Html('<rect class="bin" x="0" y="-8" width="10" height="10"/>')
        items.append(("bins", mark, "valid runs, counted in bins"))
    elif model.has_runs:
        items.append(("runs", Html('<circle class="run" cx="5" cy="-3" r="2.2"/>'), "a valid run"))
    observed = Html(
        '<line class="obs" x1="0" x2="22" y1="-4" y2="-4"/>'
        '<circle class="obs" cx="11" cy="-4" r="4.5"/>'
    )
    items.append(("observed", observed, f"mean, {interval}"))
    if model.has_published:
        published = Html(
            '<line class="pub" x1="0" x2="22" y1="-4" y2="-4"/>'
            '<text class="pub-mark" x="11" y="-4" text-anchor="middle" '
            'dominant-baseline="central">\u00d7</text>'
        )
        items.append(("published", published, "published value \u00b1 published half-width"))
    entry = Html('<g{} transform="translate(0 {})">{}<text x="30" y="0">{}</text></g>')
    out = [
        entry.format(data(legend=key), 16 + 18 * i, mark, text)
        for i, (key, mark, text) in enumerate(items)
    ]
    return Html('<g class="legend">') + EMPTY.join(out) + Html("</g>")


def _figure(height: float, label: str, parts: Sequence[Html], caption: Sequence[str]) -> Html:
    """An SVG of ``parts``, ``height`` pixels high, as a figure with its caption."""
    return Html(
        '<figure><div class="plot"><svg width="100%" height="{}" role="img" aria-label="{}">'
        "{}</svg></div><figcaption>{}</figcaption></figure>"
    ).format(f"{height:.0f}", label, EMPTY.join(parts), Html(" ").join(caption))


def plot_figure(model: Figures) -> Html:
    """The plot of the plot model (:func:`repro._figures.plot_model`), the one the PNG
    draws (:mod:`repro._present.plot`): every condition on one axis with its runs, and the
    estimand on its own."""
    drawn = plot_model(model)
    height = _ROW_PUBLISHED if drawn.has_published else _ROW
    top = 18 * (1 + drawn.has_runs + drawn.has_published) + 14  # below the legend's lines
    conditions, bottom = _panel(drawn.conditions, "conditions", top, height)
    estimand, bottom = _panel(drawn.estimand, "estimand", bottom + _GAP, height)
    label = f"{model.measure}: observed and published figures by condition"
    return _figure(bottom, label, [_legend(drawn), conditions, estimand], drawn.caption)


# --------------------------------------------------------------------------- the forest plot


def _estimate_mark(c: ContrastResult, x: str, y: float) -> Html:
    """The difference's mark, its shape saying the verdict as its text and colour do: a filled
    dot (holds), a filled square (does-not-hold), an open dot (inconclusive)."""
    names = data(contrast=c.id, field="estimate")
    if c.verdict == "does-not-hold":
        mark = Html(
            '<rect class="est {}" x="{}" y="{}" width="9" height="9" '
            'transform="translate(-4.5 0)"{} data-value="{}"/>'
        )
        return mark.format(c.verdict, x, _y(y - 4.5), names, json_value(c.estimate))
    mark = Html('<circle class="est {}" cx="{}" cy="{}" r="5"{} data-value="{}"/>')
    return mark.format(c.verdict, x, _y(y), names, json_value(c.estimate))


def _forest_row(row: ForestRow, axis: Axis, top: float) -> Html:
    """One contrast at ``top``: its id, verdict and figures in words on a line of their own,
    then, in the marks' band below it, 0 (the solid line, drawn in the band only so that it
    never crosses a label), its margin's mark (non-inferiority), its interval and its
    difference."""
    c = row.contrast
    names = {"contrast": c.id}
    y = top + 32
    zero = _at(axis, 0.0)
    head = Html(
        '<g{}><title>{label}: {verdict} ({})</title><text class="forest-label" x="0" y="{}">'
        '<tspan class="label">{label}</tspan><tspan class="verdict {verdict}" dx="10"{} '
        'data-value="{}">{verdict}</tspan><tspan class="note" dx="10">{}</tspan></text>'
        '<line class="zero" x1="{zero}" x2="{zero}" y1="{}" y2="{}" data-zero="0"/>'
    )
    out = [
        head.format(
            data(forest_row=c.id),
            c.reason,
            _y(top + 14),
            data(field="verdict", **names),
            json_value(c.verdict),
            row.note,
            _y(y - _FOREST_BAND),
            _y(y + _FOREST_BAND),
            label=row.label,
            verdict=c.verdict,
            zero=zero,
        )
    ]
    if c.direction == "non-inferiority":
        margin = Html(
            '<line class="margin" x1="{x}" x2="{x}" y1="{}" y2="{}"{} data-value="{}" '
            'data-at="{}"/>'
        )
        out.append(
            margin.format(
                _y(y - 11),
                _y(y + 11),
                data(field="margin", **names),
                json_value(c.margin),
                json_value(row.null),
                x=_at(axis, row.null),
            )
        )
    if c.interval is not None:
        out += _interval(axis, c.interval.low, c.interval.high, y, names, f"ci {c.verdict}")
    if c.estimate is not None:
        out.append(_estimate_mark(c, _at(axis, c.estimate), y))
    return EMPTY.join(out) + Html("</g>")


def _forest_axis(axis: Axis, name: str, bands: Sequence[float], bottom: float) -> Html:
    """A forest panel's axis under its rows: the axis line, ticks, labels and title as
    :func:`_axis` draws them, its grid lines only in the rows' marks bands (centred at
    ``bands``), clear of the labels."""
    line = Html('<line class="grid" x1="{x}" x2="{x}" y1="{}" y2="{}"/>')
    grid = EMPTY.join(
        line.format(_y(y - _FOREST_BAND), _y(y + _FOREST_BAND), x=_at(axis, tick))
        for tick in axis.ticks
        for y in bands
    )
    return _axis(axis, name, bottom, bottom, grid)


def forest_figure(forest: Forest) -> Html:
    """The forest plot: a panel per unit (the measure's differences, then the rates'), each
    with its contrasts on its own axis of differences and a line at 0 through each row's
    marks."""
    top, parts = _FOREST_TOP, []
    for panel in forest.panels:
        rows = [_forest_row(r, panel.axis, top + i * _FOREST_ROW) for i, r in enumerate(panel.rows)]
        bottom = top + _FOREST_ROW * len(panel.rows)
        bands = [top + i * _FOREST_ROW + 32 for i in range(len(panel.rows))]
        axis = _forest_axis(panel.axis, _FOREST_AXES[panel.unit], bands, bottom)
        parts.append(
            Html("<g{}>{}{}</g>").format(data(forest_panel=panel.unit), axis, EMPTY.join(rows))
        )
        top = bottom + _AXIS + _GAP
    label = f"{forest.measure}: the difference of each pre-registered contrast"
    return _figure(top - _GAP, label, parts, forest.caption)
