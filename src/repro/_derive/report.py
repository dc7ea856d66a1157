"""validation-report.md, a pure function of bundle data. Its conditions table and the labels
of its published figures read the figures model (:mod:`repro._figures`), as every other
view of the bundle does.

Two versions are made, and verify re-derives the one a stored report declares
(:func:`version_of`), as it does the crate's:

- version 1 (no marker): every string from the bundle (a title, a factor level, a reason, a
  piece of evidence) written as it is, so that one holding Markdown or HTML is markup there.
- ``repro.report/2`` (what a study writes): the first line is the marker, an HTML comment
  (:data:`MARKERS`), which a Markdown renderer shows as nothing; every string from the bundle
  is written as Markdown text (:func:`repro._escape.markdown_text`) or a code span
  (:func:`repro._escape.markdown_code`), so that it renders as itself and nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from attrs import frozen

from repro._derive.facts import recorded_reading
from repro._escape import markdown_code, markdown_text
from repro._figures import FigureRow, figures
from repro.models import (
    Aggregates,
    Continuation,
    ContrastsFile,
    FamilywiseLevels,
    FigureComparison,
    FrozenProtocol,
    Ledger,
    RLAggregates,
    Scores,
    Tiers,
)

__all__ = ["MARKERS", "MARKER_BYTES", "REPORT_VERSION", "validation_report", "version_of"]

#: The version a study writes.
REPORT_VERSION = 2
#: Each version's first line, by version: version 1 has none (its first line is its title).
MARKERS = {2: "<!-- repro.report/2 -->"}
#: A first line that is a marker's shape (an HTML comment naming a report version).
_MARKER = re.compile(rb"<!-- repro\.report/[^\n]* -->")
#: How many bytes of a report are read for its marker: a first line longer than that is none.
MARKER_BYTES = 64


@frozen
class _Markdown:
    """How a version writes a string from the bundle: as text, and as a code span."""

    text: Callable[[str], str]
    code: Callable[[str], str]


_WRITERS = {
    1: _Markdown(text=str, code=lambda value: f"`{value}`"),
    2: _Markdown(text=markdown_text, code=markdown_code),
}


def version_of(report: bytes) -> int | None:
    """The version a stored report declares by its first line (read from its first
    :data:`MARKER_BYTES` bytes alone): 1 for a report without a marker, None for a marker of a
    version verify does not know."""
    first, newline, _ = report[:MARKER_BYTES].partition(b"\n")
    if not newline or _MARKER.fullmatch(first) is None:
        return 1
    known = {marker.encode(): version for version, marker in MARKERS.items()}
    return known.get(first)


def _num(value: float | None, places: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{places}f}"


def _head(fp: FrozenProtocol, ledger: Ledger, md: _Markdown) -> list[str]:
    """The title, the protocol's identity and the adapter's."""
    p = fp.protocol
    adapter = ledger.adapter
    return [
        f"# Validation report: {md.text(p.title)}",
        "",
        f"Protocol {md.code(p.id)}, sha256 {md.code(fp.sha256)}.",
        f"Adapter {md.code(adapter.name)} {md.text(adapter.version)}.",
        "",
    ]


def _continued(continuation: Continuation, partitions: int, md: _Markdown) -> list[str]:
    """That the study was continued from an interrupted one, and how many partitions it
    carried whole from it (the continuation tier says which, and whether the account holds)."""
    how = continuation.interruption
    stopped = f" ({md.text(how)})" if how is not None else ""
    return [
        f"Continued from an interrupted study{stopped}: {len(continuation.carried)} of "
        f"{partitions} partitions carried whole from it, the rest run here "
        "(continuation.json; the continuation tier).",
        "",
    ]


def _recorded(recorded_from: str, md: _Markdown) -> list[str]:
    """That the runs were made elsewhere and read, not executed (the recorded adapter's
    ``recorded_from``): what follows recomputes them (:func:`recorded_reading`)."""
    return [md.text(recorded_reading(recorded_from)), ""]


def _claim(agg: Aggregates, tiers: Tiers, rows: Sequence[FigureRow], md: _Markdown) -> list[str]:
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
            f"{md.text(e.kind.replace('-', ' '))} of {md.code(agg.measure)} is {e.value:.6f} "
            f"with a {e.interval.level:.0%} {md.text(e.interval.method)} interval "
            f"[{e.interval.low:.6f}, "
            f"{e.interval.high:.6f}] (half-width {e.interval.halfwidth:.6f})."
        )
    else:
        lines.append(f"{valid} of {total} scheduled runs ended valid; the estimand is undefined.")
    lines += ["", f"Reproduction class: **{md.text(rep.verdict)}** ({md.text(rep.reason)})."]
    if rep.figures:
        lines += ["", *_figures(rep.figures, rows, rep.familywise, md)]
    return lines


def _figures(
    compared: Sequence[FigureComparison],
    rows: Sequence[FigureRow],
    familywise: FamilywiseLevels | None,
    md: _Markdown,
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
            f"| {md.text(labels.get(f.figure, f.figure))} | {f.published} | "
            f"{_num(f.observed, 6)} | "
            f"{f.observed_rounded or 'n/a'} | {'yes' if f.equal_at_precision else 'no'} | "
            f"{gap} | {'; '.join(checks) or 'n/a'} |"
        )
    return lines


def _conditions(rows: Sequence[FigureRow], md: _Markdown) -> list[str]:
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
        lines.append(
            f"| {md.text(r.key)} | {md.text(r.label)} | {r.n} | {_num(r.mean)} | {_num(r.sd)} "
            f"| {iv} |"
        )
    return lines


def _scores(scores: Scores, md: _Markdown) -> list[str]:
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
        f"- gate {md.text(g.name)}: {'holds' if g.holds else 'fails'} ({md.text(g.detail)})"
        for g in scores.gates
    ]
    return lines


def _tiers(tiers: Tiers, md: _Markdown) -> list[str]:
    """Each tier's verdict, its reason and its evidence."""
    lines = ["", "## Tiers", ""]
    for t in tiers.tiers:
        reason = f": {md.text(t.reason)}" if t.reason else ""
        lines.append(f"- **{md.text(t.name)}**: {md.text(t.verdict)}{reason}")
        lines += [f"  - {md.text(item)}" for item in t.evidence]
    return lines


def _not_claimed(tiers: Tiers, ledger: Ledger, md: _Markdown) -> list[str]:
    """What the bundle does not claim: each tier short of pass, anything outside the protocol,
    fitness to share when it discloses, the losses, and the sources' disagreements."""
    lines = ["", "## Not claimed", ""]
    lines.append("- Agreement of scores upgrades no tier: each tier stands on its own evidence.")
    lines += [
        f"- {md.text(t.name)} equivalence is not claimed ({md.text(t.verdict)})."
        for t in tiers.tiers
        if t.verdict != "pass"
    ]
    lines.append("- Nothing about conditions, seeds or episode counts outside this protocol.")
    if ledger.adapter.recorded_from is not None:
        lines.append(
            "- That the runs were made as their recorder says: they were read from a file, not "
            "executed under this seal (the execution-control tier's reason)."
        )
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
        f"- Source disagreement on {md.text(d.topic)}: published: {md.text(d.published)}; "
        f"source: {md.text(d.source)}; followed: {md.text(d.resolution)}."
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


def _contrasts(compared: ContrastsFile, md: _Markdown) -> list[str]:
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
        claim = md.text(c.direction) + (f" (margin {c.margin:g})" if c.margin else "")
        claim += f" on {md.text(c.outcome)}, {md.text(c.test)}"
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
            f"| {md.text(c.id)}{' (primary)' if c.primary else ''} | {claim} | "
            f"**{md.text(c.verdict)}** ({md.text(c.reason)}) | {n} | {_num(c.estimate, 6)} | "
            f"{interval} | {p} | {adjusted} |"
        )
    return lines


def _estimate(value: float | None, low: float | None, high: float | None) -> str:
    if value is None or low is None or high is None:
        return "n/a"
    return f"{value:.4f} [{low:.4f}, {high:.4f}]"


def _rl(rl: RLAggregates, md: _Markdown) -> list[str]:
    """rliable's aggregates: each participant's statistics, and each improvement."""
    scores = "normalised scores" if rl.normalized else "scores"
    lines = [
        "",
        f"rliable's aggregates of {md.code(rl.measure)} over the tasks of "
        f"{md.code(rl.task_factor)} ({scores}; {rl.level:.0%} stratified bootstrap intervals, "
        f"{rl.resamples} resamples, sampler {md.text(rl.sampler)}; rl-aggregates.json):",
    ]
    names = [md.text(s.statistic) for s in rl.participants[0].statistics] if rl.participants else []
    if names:
        lines += [
            "",
            "| participant | runs | " + " | ".join(names) + " |",
            "|---|---|" + "---|" * len(names),
        ]
        for q in rl.participants:
            runs = f"{q.runs}" + (f" ({q.incomplete} incomplete)" if q.incomplete else "")
            cells = [_estimate(s.value, s.low, s.high) for s in q.statistics]
            lines.append(f"| {md.text(q.participant)} | {runs} | " + " | ".join(cells) + " |")
    if rl.improvements:
        lines.append("")
        lines += [
            f"- P({md.text(d.x)} > {md.text(d.y)}) = {_estimate(d.value, d.low, d.high)} "
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
    version: int = REPORT_VERSION,
    continuation: Continuation | None = None,
    partitions: int = 0,
) -> str:
    """What was claimed, what was not, and the one command that re-checks it, as ``version``
    writes it (one of :data:`MARKERS`' or 1). The report of a study continued from an
    interrupted one (``continuation``, of a plan of ``partitions`` partitions) says so below its
    head, in either version, as does one of runs made elsewhere (the ledger's
    ``recorded_from``); any other report is what it was."""
    md = _WRITERS[version]
    rows = figures(fp, agg, tiers).conditions
    lines = [
        *([MARKERS[version]] if version in MARKERS else []),
        *_head(fp, ledger, md),
        *(_continued(continuation, partitions, md) if continuation is not None else []),
        *(_recorded(recorded, md) if (recorded := ledger.adapter.recorded_from) else []),
        *_claim(agg, tiers, rows, md),
        *(_contrasts(contrasts, md) if contrasts is not None else []),
        *(_rl(rl, md) if rl is not None else []),
        *_conditions(rows, md),
        *(_scores(scores, md) if scores is not None else []),
        *_tiers(tiers, md),
        *_not_claimed(tiers, ledger, md),
        *_RECHECK,
    ]
    return "\n".join(lines)
