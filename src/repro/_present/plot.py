"""``repro show --plot``: the plot of a verified bundle as a PNG (needs the ``plot`` extra,
matplotlib).

It draws the plot model (:func:`repro._figures.plot_model`) that the HTML page's SVG draws
too, so both show the same thing: every condition on one axis with the same ticks, each
condition's valid runs (points, or bins past :data:`repro._figures.POINTS_LIMIT`) with its
mean and interval, the estimand on an axis of its own, and published values with their
half-widths only where there are some. :func:`repro._figures.plot_model` decides what is
drawn and where; this module only draws it."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from repro._figures import Axis, Figures, Plot, PlotPanel, PlotRow, plot_model, ties_to_name

__all__ = ["OBSERVED", "PUBLISHED", "RUNS", "plot"]

#: The colours of the marks: the runs, the observed mean and interval, the published value.
RUNS = "#4f7fb8"
OBSERVED = "#1f4f8a"
PUBLISHED = "tab:red"

#: Where a row's marks stand, up from its centre (rows are one unit apart, the first at 0):
#: the runs' band and its half-height, the mean with its interval, the published value.
_RUNS_Y, _RUNS_HALF = 0.2, 0.14
_OBSERVED_Y = -0.12
_PUBLISHED_Y = -0.32
#: The height a row's fullest bin reaches.
_BIN_HEIGHT = 0.34


def _draw_runs(ax: Any, row: PlotRow, y: float, axis: Axis) -> None:
    """A row's valid runs: a dot each at its offset, or a bar per bin; beside each spot where
    runs share a value, how many (``x10 at 500``), as the page names them."""
    for t in ties_to_name(row.ties, axis):
        ax.annotate(
            t.text(axis),
            (t.value, y + _RUNS_Y),
            xytext=(5, 0),
            textcoords="offset points",
            fontsize=6.5,
            fontweight="bold",
            color=OBSERVED,
            va="center",
            zorder=4,
            gid=f"tie {row.row.key}",
        )
    if row.points:
        ax.scatter(
            [p.value for p in row.points],
            [y + _RUNS_Y + _RUNS_HALF * p.offset for p in row.points],
            s=8,
            color=RUNS,
            alpha=0.75,
            edgecolors="white",
            linewidths=0.4,
            clip_on=False,
            zorder=2,
            gid=f"runs {row.row.key}",
        )
    fullest = max((b.count for b in row.bins), default=0)
    if row.bins:
        ax.bar(
            [b.low for b in row.bins],
            [_BIN_HEIGHT * b.count / fullest for b in row.bins],
            width=[b.high - b.low for b in row.bins],
            bottom=y + _RUNS_Y - _RUNS_HALF,
            align="edge",
            color=RUNS,
            alpha=0.7,
            linewidth=0,
            zorder=2,
            gid=f"bins {row.row.key}",
        )


def _draw_row(ax: Any, row: PlotRow, y: float, axis: Axis) -> None:
    """A row at ``y``: its runs, its mean with its interval, its published value with its
    half-width."""
    _draw_runs(ax, row, y, axis)
    r = row.row
    if r.mean is not None:
        iv = r.interval
        err = None if iv is None else [[r.mean - iv.low], [iv.high - r.mean]]
        ax.errorbar(
            [r.mean],
            [y + _OBSERVED_Y],
            xerr=err,
            fmt="o",
            color=OBSERVED,
            ms=5,
            capsize=4,
            lw=2,
            clip_on=False,
            zorder=3,
        )
    if r.published is not None:
        half = r.published_halfwidth
        err = None if half is None else [[half], [half]]
        ax.errorbar(
            [r.published],
            [y + _PUBLISHED_Y],
            xerr=err,
            fmt="x",
            color=PUBLISHED,
            ms=7,
            mew=2,
            capsize=4,
            clip_on=False,
            zorder=3,
        )


def _draw_panel(ax: Any, panel: PlotPanel) -> None:
    """A panel's rows top to bottom on its axis, with its ticks, labels and title."""
    axis = panel.axis
    for i, row in enumerate(panel.rows):
        _draw_row(ax, row, -i, axis)
    ax.set_xlim(axis.low, axis.high)
    ax.set_xticks(list(axis.ticks), list(axis.labels))
    ax.set_xlabel(f"{axis.title}\n{axis.detail}", fontsize=9)
    ax.set_ylim(-len(panel.rows) + 0.5, 0.5)
    ax.set_yticks(
        [-i for i in range(len(panel.rows))],
        [f"{row.label}\n{row.note}" for row in panel.rows],
    )
    ax.tick_params(axis="y", labelsize=7.5, length=0)
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="x", color="#e4e4e4")
    ax.set_axisbelow(True)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)


def _legend(ax: Any, model: Plot) -> None:
    """What the marks mean, above the first panel: the runs where drawn, the mean with its
    interval, the published value only when some row has one."""
    # Lazy: matplotlib is the plot extra, maybe absent; only a plot needs it.
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    interval = f"{model.level:.0%} {model.method} interval" if model.method else "interval"
    handles: list[Any] = []
    if model.has_runs and model.binned:
        handles.append(Patch(color=RUNS, alpha=0.7, label="valid runs, counted in bins"))
    elif model.has_runs:
        handles.append(
            Line2D([], [], ls="", marker="o", ms=3, color=RUNS, alpha=0.6, label="a valid run")
        )
    handles.append(
        Line2D([], [], marker="o", ms=5, lw=2, color=OBSERVED, label=f"mean, {interval}")
    )
    if model.has_published:
        handles.append(
            Line2D(
                [],
                [],
                marker="x",
                ms=7,
                mew=2,
                color=PUBLISHED,
                label="published value \u00b1 published half-width",
            )
        )
    ax.legend(
        handles=handles,
        loc="lower left",
        bbox_to_anchor=(0, 1.0),
        ncol=len(handles),
        frameon=False,
        fontsize=8,
    )


def plot(model: Figures, out: Path) -> None:
    """The plot model of ``model`` (:func:`repro._figures.plot_model`) drawn, written to
    ``out`` as a PNG: the conditions' panel above, the estimand's below, the caption under
    both."""
    # Lazy: matplotlib is the plot extra, maybe absent; only a plot needs it.
    import matplotlib

    matplotlib.use("Agg")
    # pyplot after the backend is chosen: importing it picks one.
    import matplotlib.pyplot as plt

    drawn = plot_model(model)
    rows = len(drawn.conditions.rows)
    caption = textwrap.fill(" ".join(drawn.caption), 150)
    lines = caption.count("\n") + 1
    fig, (top, bottom) = plt.subplots(
        2,
        1,
        figsize=(11, 0.62 * rows + 3.4 + 0.16 * lines),
        height_ratios=[rows + 0.4, 1.4],
        layout="constrained",
    )
    fig.get_layout_engine().set(w_pad=0.15)
    _draw_panel(top, drawn.conditions)
    _draw_panel(bottom, drawn.estimand)
    _legend(top, drawn)
    fig.suptitle(f"{drawn.measure}: reproduction {drawn.verdict}", fontsize=10)
    fig.supxlabel(caption, fontsize=7.5, ha="left", x=0.01, color="#444")
    fig.savefig(out, dpi=120)
    plt.close(fig)
