"""``repro show --plot``: the comparison plot of a verified bundle as a PNG (needs the ``plot``
extra, matplotlib).

It draws the figures model (:mod:`repro.derive.figures`) that the HTML page's plot draws too, so
both show the same figures: each condition's observed mean and interval, and its published value
with its published half-width where there is one. :func:`panels` says what each panel holds;
:func:`plot` only draws that."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attrs import frozen

from repro.derive.figures import FigureRow, Figures

__all__ = ["Panel", "panels", "plot"]


@frozen
class Panel:
    """What one panel draws: the observed mean with its interval's reach below and above it,
    the published value with its half-width, the x range that holds them all, and the note
    beside the panel. Any of them is None when there is nothing to draw."""

    label: str
    observed: float | None
    observed_reach: tuple[float, float] | None
    published: float | None
    published_halfwidth: float | None
    xlim: tuple[float, float] | None
    note: str


def _panel(row: FigureRow) -> Panel:
    """The panel of one row of the figures."""
    mean, interval, published, half = row.mean, row.interval, row.published, row.published_halfwidth
    points = []
    reach = None
    if mean is not None:
        if interval is not None:
            reach = (mean - interval.low, interval.high - mean)
            points += [interval.low, interval.high]
        points.append(mean)
    if published is not None:
        points += [published - (half or 0), published + (half or 0)]
    xlim = None
    if points:
        low, high = min(points), max(points)
        # Padded so that the marks stay clear of the frame, and never a zero-width range.
        pad = max((high - low) * 0.6, abs(high) * 1e-3, 0.05)
        xlim = (low - pad, high + pad)
    note = "observed " + ("n/a" if mean is None else f"{mean:.2f}")
    if published is not None:
        note += f"; published {published}" + (f" ± {half}" if half is not None else "")
    return Panel(row.label, mean, reach, published, half, xlim, note)


def panels(model: Figures) -> list[Panel]:
    """One panel per condition, each on its own scale, and a last one for the estimand."""
    return [_panel(row) for row in model.rows]


def _draw(ax: Any, panel: Panel) -> None:
    """Draw ``panel`` on the matplotlib axes ``ax``: observed in blue above, published in red
    below."""
    if panel.observed is not None:
        reach = panel.observed_reach
        err = None if reach is None else [[reach[0]], [reach[1]]]
        ax.errorbar([panel.observed], [0.15], xerr=err, fmt="o", color="tab:blue", capsize=5)
    if panel.published is not None:
        half = panel.published_halfwidth
        err = None if half is None else [[half], [half]]
        ax.errorbar([panel.published], [-0.15], xerr=err, fmt="x", color="tab:red", capsize=5, ms=9)
    if panel.xlim is not None:
        ax.set_xlim(*panel.xlim)
    ax.text(1.01, 0.5, panel.note, transform=ax.transAxes, va="center", fontsize=7)
    ax.set_ylim(-0.6, 0.6)
    ax.set_yticks([])
    ax.set_ylabel(panel.label, rotation=0, ha="right", va="center", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.grid(axis="x", alpha=0.3)


def plot(model: Figures, out: Path) -> None:
    """The panels of ``model`` stacked, written to ``out`` as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    drawn = panels(model)
    fig, axes = plt.subplots(len(drawn), 1, figsize=(9, 0.9 * len(drawn) + 1.2), squeeze=False)
    for ax, panel in zip(axes[:, 0], drawn, strict=True):
        _draw(ax, panel)
    fig.suptitle(
        f"{model.measure}: observed mean with {model.level:.0%} interval (blue dot), "
        "published value and interval where given (red x)\n"
        f"reproduction: {model.verdict}",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
