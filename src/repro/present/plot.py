"""``repro show --plot``: the comparison plot of a verified bundle as a PNG (needs the ``plot``
extra, matplotlib)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from repro.derive.figures import condition_label
from repro.models import Aggregates, IntervalValue, Tiers

__all__ = ["plot"]


def plot(agg: Aggregates, tiers: Tiers, out: Path, order: Sequence[str] = ()) -> None:
    """One panel per condition, each on its own scale: the observed mean with its interval, and
    the published value where there is one; a last panel for the estimand. Written as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures = {f.figure: f for f in tiers.reproduction.figures}
    e = agg.estimand
    Panel = tuple[str, float | None, IntervalValue | None, float | None, float | None]
    panels: list[Panel] = []
    for c in agg.conditions:
        f = figures.get(f"{c.condition} mean")
        label = condition_label(c.factors, c.participant, order)
        panels.append((label, c.mean, c.interval, f.published if f else None, None))
    total, half = figures.get("estimand value"), figures.get("estimand half-width")
    panels.append(
        (
            e.kind,
            e.value,
            e.interval,
            total.published if total else None,
            half.published if half else None,
        )
    )
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 0.9 * len(panels) + 1.2), squeeze=False)
    for ax, (label, mean, interval, published, published_half) in zip(
        axes[:, 0], panels, strict=True
    ):
        points = []
        if mean is not None:
            err = [[mean - interval.low], [interval.high - mean]] if interval else None
            ax.errorbar([mean], [0.15], xerr=err, fmt="o", color="tab:blue", capsize=5)
            points += [mean] + ([interval.low, interval.high] if interval else [])
        if published is not None:
            err = [[published_half], [published_half]] if published_half is not None else None
            ax.errorbar([published], [-0.15], xerr=err, fmt="x", color="tab:red", capsize=5, ms=9)
            points += [published - (published_half or 0), published + (published_half or 0)]
        if points:
            low, high = min(points), max(points)
            pad = max((high - low) * 0.6, abs(high) * 1e-3, 0.05)
            ax.set_xlim(low - pad, high + pad)
        note = "observed " + ("n/a" if mean is None else f"{mean:.2f}")
        if published is not None:
            note += f"; published {published}" + (
                f" ± {published_half}" if published_half is not None else ""
            )
        ax.text(1.01, 0.5, note, transform=ax.transAxes, va="center", fontsize=7)
        ax.set_ylim(-0.6, 0.6)
        ax.set_yticks([])
        ax.set_ylabel(label, rotation=0, ha="right", va="center", fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(axis="x", alpha=0.3)
    level = e.interval.level if e.interval else 0.95
    fig.suptitle(
        f"{agg.measure}: observed mean with {level:.0%} interval (blue dot), "
        "published value and interval where given (red x)\n"
        f"reproduction: {tiers.reproduction.verdict}",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
