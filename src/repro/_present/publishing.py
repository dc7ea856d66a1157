"""``repro publish``: a results table from a scored bundle, written only when the bundle verifies
and every publish gate its protocol declares holds.

The gates are judged on scores.json, which ``repro verify`` has just re-derived from the
protocol and the retained runs and found equal to what the bundle stores: nothing is taken on
trust. Holdout and training scenarios are reported in separate tables. Every string the table
takes from the bundle (a title, a factor level, a check's name, a gate's detail) is written as
Markdown text or a code span (:mod:`repro._escape`), so that it renders as itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import get_args

from repro._escape import markdown_code, markdown_text
from repro.errors import BadInput, NotVerified, Refused
from repro.models import CellScore, CheckSummary, FrozenProtocol, GateResult, Scores, Stratum
from repro.verify import VerifiedBundle, open_verified

__all__ = ["Refused", "load_verified", "publish", "table"]


def load_verified(bundle: Path) -> VerifiedBundle:
    """Verify ``bundle`` and read it (:func:`repro.verify.open_verified`); raise
    :class:`Refused` naming every finding when it does not verify."""
    try:
        return open_verified(bundle)
    except NotVerified as exc:
        raise Refused(
            [f"{bundle} does not verify: {f.file}: {f.what}" for f in exc.findings]
        ) from None


def _rate(check: CheckSummary) -> str:
    if check.rate is None or check.low is None or check.high is None:
        return f"{check.passed}/{check.runs}"
    return f"{check.passed}/{check.runs} ({check.rate:.2f}; {check.low:.2f}-{check.high:.2f})"


def _cells_table(cells: Sequence[CellScore], factor_names: Sequence[str]) -> list[str]:
    checks = [c.name for c in cells[0].checks]
    categories = list(cells[0].categories)
    head = [*factor_names, "participant", "valid", "superseded", *checks, *categories]
    head += ["agreement", "median measure"]
    lines = ["| " + " | ".join(map(markdown_text, head)) + " |", "|" + "---|" * len(head)]
    for cell in cells:
        median = "n/a" if cell.median_measure is None else f"{cell.median_measure:g}"
        row = [markdown_text(str(cell.factors[f])) for f in factor_names]
        row += [markdown_text(cell.participant), str(cell.valid_runs), str(cell.superseded_runs)]
        row += [_rate(c) for c in cell.checks]
        row += [str(cell.categories[c]) for c in categories]
        row += [markdown_text(cell.agreement), median]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def table(fp: FrozenProtocol, scores: Scores) -> str:
    """The results table (Markdown): per stratum, every cell with each check's passes, rate and
    Wilson interval, the category counts, agreement and median measure; then the gates, or
    "None declared" where the protocol declares none (never an empty section)."""
    p = fp.protocol
    lines = [
        f"# {markdown_text(p.title)}",
        "",
        f"Protocol {markdown_code(p.id)} (sha256 {markdown_code(fp.sha256)}). Check cells "
        f"show passes/valid runs (rate; Wilson {scores.level:.0%} interval); rates and "
        "medians need 2 valid runs.",
    ]
    for stratum in get_args(Stratum):
        cells = [c for c in scores.cells if c.stratum == stratum]
        if not cells:
            continue
        lines += [
            "",
            f"## {stratum.capitalize()} scenarios",
            "",
            *_cells_table(cells, [f.name for f in p.matrix]),
        ]
    lines += ["", "## Gates", ""]
    lines += [
        f"- {markdown_text(g.name)}: {'holds' if g.holds else 'FAILS'} ({markdown_text(g.detail)})"
        for g in scores.gates
    ] or ["None declared: the protocol declares no publish gate."]
    return "\n".join(lines) + "\n"


def publish(bundle: Path, out: Path) -> list[GateResult]:
    """Write the results table of ``bundle`` to ``out`` (a new file) and return the gates; raise
    :class:`Refused` naming every finding or failed gate, with nothing written."""
    if out.exists() or out.is_symlink():
        raise BadInput(f"--out {out}: already exists; publish never overwrites")
    verified = load_verified(bundle)
    fp, scores = verified.protocol, verified.scores
    if scores is None:
        raise BadInput(f"{bundle}: its protocol declares no scoring; nothing to publish")
    failed = [g for g in scores.gates if not g.holds]
    if failed:
        raise Refused([f"gate {g.name} fails: {g.detail}" for g in failed])
    try:
        with open(out, "x", encoding="utf-8") as fh:
            fh.write(table(fp, scores))
    except OSError as exc:
        raise BadInput(f"--out {out}: {exc.strerror}") from None
    return list(scores.gates)
