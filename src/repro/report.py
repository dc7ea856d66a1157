"""validation-report.md (a pure function of bundle data) and the optional comparison plot."""

from __future__ import annotations

from pathlib import Path

from repro.models import Aggregates, FrozenProtocol, Ledger, Level, Tiers

__all__ = ["condition_label", "plot", "validation_report"]


def condition_label(factors: dict[str, Level], participant: str) -> str:
    """A condition as a reader names it: its factor levels and participant."""
    return ", ".join(f"{k}={v}" for k, v in factors.items()) + f" / {participant}"


def _num(value: float | None, places: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{places}f}"


def validation_report(fp: FrozenProtocol, agg: Aggregates, tiers: Tiers, ledger: Ledger) -> str:
    """What was claimed, what was not, and the one command that re-checks it."""
    p = fp.protocol
    rep = tiers.reproduction
    e = agg.estimand
    lines = [
        f"# Validation report: {p.title}",
        "",
        f"Protocol `{p.id}`, sha256 `{fp.sha256}`.",
        f"Adapter `{ledger.adapter.name}` {ledger.adapter.version}.",
        "",
        "## Claim",
        "",
    ]
    total = sum(c.scheduled for c in agg.conditions)
    valid = sum(c.valid for c in agg.conditions)
    if e.value is not None and e.interval is not None:
        lines.append(
            f"Under this sealed protocol, {valid} of {total} scheduled runs ended valid, and the "
            f"{e.kind.replace('-', ' ')} of `{agg.measure}` is {e.value:.6f} with a "
            f"{e.interval.level:.0%} {e.interval.method} interval [{e.interval.low:.6f}, "
            f"{e.interval.high:.6f}] (half-width {e.interval.halfwidth:.6f})."
        )
    else:
        lines.append(f"{valid} of {total} scheduled runs ended valid; the estimand is undefined.")
    lines += ["", f"Reproduction class: **{rep.verdict}** ({rep.reason})."]
    if rep.figures:
        lines += [
            "",
            "| figure | published | observed | observed, rounded | equal | intervals |",
            "|---|---|---|---|---|---|",
        ]
        for f in rep.figures:
            both = (f.published_interval_contains_observed, f.observed_interval_contains_published)
            cover = "; ".join(
                label
                for label, ok in zip(
                    ("published contains observed", "observed contains published"),
                    both,
                    strict=True,
                )
                if ok is not None
                for label in [f"{label}: {'yes' if ok else 'no'}"]
            )
            lines.append(
                f"| {f.figure} | {f.published} | {_num(f.observed, 6)} | "
                f"{f.observed_rounded or 'n/a'} | "
                f"{'yes' if f.equal_at_precision else 'no'} | {cover or 'n/a'} |"
            )
    lines += [
        "",
        "## Conditions",
        "",
        "| id | condition | n | mean | sd | interval |",
        "|---|---|---|---|---|---|",
    ]
    for c in agg.conditions:
        iv = f"[{c.interval.low:.4f}, {c.interval.high:.4f}]" if c.interval else "n/a"
        lines.append(
            f"| {c.condition} | {condition_label(c.factors, c.participant)} | {c.valid} | "
            f"{_num(c.mean)} | {_num(c.sd)} | {iv} |"
        )
    lines += ["", "## Tiers", ""]
    for t in tiers.tiers:
        lines.append(f"- **{t.name}**: {t.verdict}" + (f": {t.reason}" if t.reason else ""))
        lines += [f"  - {item}" for item in t.evidence]
    lines += ["", "## Not claimed", ""]
    lines.append("- Agreement of scores upgrades no tier: each tier stands on its own evidence.")
    for t in tiers.tiers:
        if t.verdict != "pass":
            lines.append(f"- {t.name} equivalence is not claimed ({t.verdict}).")
    lines.append("- Nothing about conditions, seeds or episode counts outside this protocol.")
    if ledger.losses:
        lines.append(
            f"- {len(ledger.losses)} slot(s) did not end valid and are not in the means "
            "(listed in source-ledger.json); nothing was imputed."
        )
    for d in ledger.disagreements:
        lines.append(
            f"- Source disagreement on {d.topic}: published: {d.published}; "
            f"source: {d.source}; followed: {d.resolution}."
        )
    lines += [
        "",
        "## Re-check",
        "",
        "Offline, with no simulator installed, from a copy of this bundle:",
        "",
        "    repro verify BUNDLE_DIR",
        "",
    ]
    return "\n".join(lines)


def plot(agg: Aggregates, tiers: Tiers, out: Path) -> None:
    """Each condition's observed mean and interval beside its published value, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    published = {
        f.figure.removesuffix(" mean"): f.published
        for f in tiers.reproduction.figures
        if f.figure.endswith(" mean")
    }
    rows = agg.conditions
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(rows) + 1.6))
    for y, c in enumerate(rows):
        if c.mean is not None:
            err = [[c.mean - c.interval.low], [c.interval.high - c.mean]] if c.interval else None
            ax.errorbar(
                c.mean,
                y,
                xerr=err,
                fmt="o",
                color="tab:blue",
                capsize=4,
                label="observed mean, interval" if y == 0 else None,
            )
        if c.condition in published:
            ax.plot(
                published[c.condition],
                y,
                "x",
                color="tab:red",
                markersize=9,
                label="published" if "published" not in ax.get_legend_handles_labels()[1] else None,
            )
    ax.set_yticks(range(len(rows)), [condition_label(c.factors, c.participant) for c in rows])
    ax.invert_yaxis()
    ax.set_xlabel(agg.measure)
    e = agg.estimand
    title = f"{e.kind}: {e.value:.2f}" if e.value is not None else e.kind
    if e.interval is not None:
        title += f" ± {e.interval.halfwidth:.2f}"
    ax.set_title(f"{title}\nreproduction: {tiers.reproduction.verdict}")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="best")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
