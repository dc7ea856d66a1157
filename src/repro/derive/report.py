"""validation-report.md, a pure function of bundle data. Its conditions table and the labels
of its published figures read the figures model (:mod:`repro.derive.figures`), as every other
view of the bundle does."""

from __future__ import annotations

from collections.abc import Sequence

from repro.derive.figures import FigureRow, figures
from repro.models import (
    Aggregates,
    ContrastsFile,
    FamilywiseLevels,
    FigureComparison,
    FrozenProtocol,
    Ledger,
    RLAggregates,
    Scores,
    Tiers,
)

__all__ = ["validation_report"]


def _num(value: float | None, places: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{places}f}"


def _head(fp: FrozenProtocol, ledger: Ledger) -> list[str]:
    """The title, the protocol's identity and the adapter's."""
    p = fp.protocol
    return [
        f"# Validation report: {p.title}",
        "",
        f"Protocol `{p.id}`, sha256 `{fp.sha256}`.",
        f"Adapter `{ledger.adapter.name}` {ledger.adapter.version}.",
        "",
    ]


def _claim(agg: Aggregates, tiers: Tiers, rows: Sequence[FigureRow]) -> list[str]:
    """The claim: the valid runs and the estimand with its interval, the reproduction class,
    and the published figures against the observed ones."""
    e = agg.estimand
    rep = tiers.reproduction
    lines = ["## Claim", ""]
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
        lines += ["", *_figures(rep.figures, rows, rep.familywise)]
    return lines


def _figures(
    compared: Sequence[FigureComparison],
    rows: Sequence[FigureRow],
    familywise: FamilywiseLevels | None,
) -> list[str]:
    """The table of published figures against the observed ones; a condition's mean is named
    with its label, and each check with its interval's level under the family-wise
    criterion."""
    lines = [
        "| figure | published | observed | observed, rounded | equal "
        "| observed - published | intervals |",
        "|---|---|---|---|---|---|---|",
    ]
    labels = {f"{r.key} mean": f"{r.key} mean ({r.label})" for r in rows}
    published, observed = "published", "observed"
    if familywise is not None:
        published = f"published at {familywise.published_level:.6g}"
        observed = f"observed at {familywise.observed_level:.6g}"
    for f in compared:
        checks = [
            f"{label}: {'yes' if ok else 'no'}"
            for label, ok in (
                (f"{published} contains observed", f.published_interval_contains_observed),
                (f"{observed} contains published", f.observed_interval_contains_published),
            )
            if ok is not None
        ]
        gap = "n/a" if f.observed is None else f"{f.observed - f.published:+.6f}"
        lines.append(
            f"| {labels.get(f.figure, f.figure)} | {f.published} | {_num(f.observed, 6)} | "
            f"{f.observed_rounded or 'n/a'} | {'yes' if f.equal_at_precision else 'no'} | "
            f"{gap} | {'; '.join(checks) or 'n/a'} |"
        )
    return lines


def _conditions(rows: Sequence[FigureRow]) -> list[str]:
    """Each condition's n, mean, sd and interval."""
    lines = [
        "",
        "## Conditions",
        "",
        "| id | condition | n | mean | sd | interval |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        iv = f"[{r.interval.low:.4f}, {r.interval.high:.4f}]" if r.interval else "n/a"
        lines.append(f"| {r.key} | {r.label} | {r.n} | {_num(r.mean)} | {_num(r.sd)} | {iv} |")
    return lines


def _scores(scores: Scores) -> list[str]:
    """How many runs the checks scored, and whether each publish gate holds."""
    runs = sum(c.valid_runs for c in scores.cells)
    superseded = sum(c.superseded_runs for c in scores.cells)
    split = sum(c.agreement == "split" for c in scores.cells)
    checks = len(scores.cells[0].checks) if scores.cells else 0
    lines = [
        "",
        "## Scores",
        "",
        f"{runs} valid runs scored in {len(scores.cells)} cells by {checks} checks, each "
        f"reported on its own (scores.json); {split} cell(s) split; {superseded} run(s) on a "
        "superseded scenario version excluded.",
    ]
    lines += [
        f"- gate {g.name}: {'holds' if g.holds else 'fails'} ({g.detail})" for g in scores.gates
    ]
    return lines


def _tiers(tiers: Tiers) -> list[str]:
    """Each tier's verdict, its reason and its evidence."""
    lines = ["", "## Tiers", ""]
    for t in tiers.tiers:
        lines.append(f"- **{t.name}**: {t.verdict}" + (f": {t.reason}" if t.reason else ""))
        lines += [f"  - {item}" for item in t.evidence]
    return lines


def _not_claimed(tiers: Tiers, ledger: Ledger) -> list[str]:
    """What the bundle does not claim: each tier short of pass, anything outside the protocol,
    fitness to share when it discloses, the losses, and the sources' disagreements."""
    lines = ["", "## Not claimed", ""]
    lines.append("- Agreement of scores upgrades no tier: each tier stands on its own evidence.")
    lines += [
        f"- {t.name} equivalence is not claimed ({t.verdict})."
        for t in tiers.tiers
        if t.verdict != "pass"
    ]
    lines.append("- Nothing about conditions, seeds or episode counts outside this protocol.")
    if any(t.name == "disclosure" and t.verdict == "fail" for t in tiers.tiers):
        lines.append(
            "- That this bundle is fit to share: its inputs hold host paths, tracebacks or "
            "credential-looking strings (where: the disclosure tier's evidence)."
        )
    if ledger.losses:
        lines.append(
            f"- {len(ledger.losses)} slot(s) did not end valid and are not in the means "
            "(listed in source-ledger.json); nothing was imputed."
        )
    lines += [
        f"- Source disagreement on {d.topic}: published: {d.published}; "
        f"source: {d.source}; followed: {d.resolution}."
        for d in ledger.disagreements
    ]
    return lines


#: The last section: how to re-check the bundle.
_RECHECK = [
    "",
    "## Re-check",
    "",
    "Offline, with no simulator installed, from a copy of this bundle:",
    "",
    "    repro verify BUNDLE_DIR",
    "",
]


def _contrasts(compared: ContrastsFile) -> list[str]:
    """Each pre-registered contrast's verdict, with the figures that decided it."""
    control = "Holm" if compared.multiplicity == "holm" else "no"
    lines = [
        "",
        f"Pre-registered contrasts ({len(compared.contrasts)}, {control} multiplicity "
        "control; difference a - b, positive favours a):",
        "",
        "| contrast | claim | verdict | n | difference | interval | p | p adjusted |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in compared.contrasts:
        claim = f"{c.direction}" + (f" (margin {c.margin:g})" if c.margin else "")
        claim += f" on {c.outcome}, {c.test}"
        n = f"{c.pairs} pairs" if c.pairs is not None else f"{c.n_a} vs {c.n_b}"
        if c.incomplete_pairs:
            n += f" ({c.incomplete_pairs} incomplete)"
        interval = (
            "n/a"
            if c.interval is None
            else f"[{c.interval.low:.6f}, {c.interval.high:.6f}] ({c.interval.level:.0%})"
        )
        p = "n/a" if c.p_value is None else f"{c.p_value:.6g}"
        adjusted = "n/a" if c.p_adjusted is None else f"{c.p_adjusted:.6g}"
        lines.append(
            f"| {c.id}{' (primary)' if c.primary else ''} | {claim} | **{c.verdict}** "
            f"({c.reason}) | {n} | {_num(c.estimate, 6)} | {interval} | {p} | {adjusted} |"
        )
    return lines


def _estimate(value: float | None, low: float | None, high: float | None) -> str:
    if value is None or low is None or high is None:
        return "n/a"
    return f"{value:.4f} [{low:.4f}, {high:.4f}]"


def _rl(rl: RLAggregates) -> list[str]:
    """rliable's aggregates: each participant's statistics, and each improvement."""
    scores = "normalised scores" if rl.normalized else "scores"
    lines = [
        "",
        f"rliable's aggregates of `{rl.measure}` over the tasks of `{rl.task_factor}` "
        f"({scores}; {rl.level:.0%} stratified bootstrap intervals, {rl.resamples} resamples, "
        f"sampler {rl.sampler}; rl-aggregates.json):",
    ]
    names = [s.statistic for s in rl.participants[0].statistics] if rl.participants else []
    if names:
        lines += [
            "",
            "| participant | runs | " + " | ".join(names) + " |",
            "|---|---|" + "---|" * len(names),
        ]
        for q in rl.participants:
            runs = f"{q.runs}" + (f" ({q.incomplete} incomplete)" if q.incomplete else "")
            cells = [_estimate(s.value, s.low, s.high) for s in q.statistics]
            lines.append(f"| {q.participant} | {runs} | " + " | ".join(cells) + " |")
    if rl.improvements:
        lines.append("")
        lines += [
            f"- P({d.x} > {d.y}) = {_estimate(d.value, d.low, d.high)} "
            f"({d.runs_x} vs {d.runs_y} runs)"
            for d in rl.improvements
        ]
    return lines


def validation_report(
    fp: FrozenProtocol,
    agg: Aggregates,
    tiers: Tiers,
    ledger: Ledger,
    scores: Scores | None = None,
    contrasts: ContrastsFile | None = None,
    rl: RLAggregates | None = None,
) -> str:
    """What was claimed, what was not, and the one command that re-checks it."""
    rows = figures(fp, agg, tiers).conditions
    lines = [
        *_head(fp, ledger),
        *_claim(agg, tiers, rows),
        *(_contrasts(contrasts) if contrasts is not None else []),
        *(_rl(rl) if rl is not None else []),
        *_conditions(rows),
        *(_scores(scores) if scores is not None else []),
        *_tiers(tiers),
        *_not_claimed(tiers, ledger),
        *_RECHECK,
    ]
    return "\n".join(lines)
