"""Comparisons of two bundles of one protocol family: pure functions of their scores and runs.

:func:`compare_scores` tells whether a candidate regressed against a baseline, cell by cell: a
concept the baseline always covered and the candidate sometimes misses, a check reached less
often, a volume measure whose median fell below every baseline run. Rates are compared without
tolerance, because a cell's runs are few and each miss is a run someone can read; the evidence
a cell needs is asked for instead: a cell with fewer than :data:`MIN_RUNS` valid runs on either
side reports its findings as needing more runs rather than as regressions.

:func:`compare_runs` compares two bundles run by run, as two backends of one protocol (two
simulator implementations, say) should agree slot by slot.

Every result is a frozen attrs class of plain fields, so
:func:`repro._json.serde.unstructure` turns it into JSON for ``repro compare --json``.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from attrs import frozen

from repro._derive.scenarios import scenario_of
from repro._derive.scoring import json_equal
from repro.models import (
    CellScore,
    CheckSummary,
    Condition,
    Level,
    Protocol,
    RunRecord,
    RunScore,
    Scores,
)

__all__ = [
    "ASPECTS",
    "MAX_LISTED",
    "MIN_RUNS",
    "AspectComparison",
    "Comparison",
    "Finding",
    "RunComparison",
    "compare_runs",
    "compare_scores",
]

#: Valid runs a cell needs on each side before a finding in it counts as a regression.
MIN_RUNS = 6
#: Differing attempt IDs listed per aspect of a run comparison.
MAX_LISTED = 10

Aspect = Literal["status", "measure", "steps", "step_rewards", "trace_sha256", "outcome"]
#: What :func:`compare_runs` compares of two records of one attempt, in this order.
ASPECTS: tuple[Aspect, ...] = (
    "status",
    "measure",
    "steps",
    "step_rewards",
    "trace_sha256",
    "outcome",
)


@frozen
class Finding:
    """One difference between a baseline cell and the candidate's.

    ``kind``: a regression; a regression in a cell with fewer than :data:`MIN_RUNS` valid runs
    on a side (``needs-more-runs``: too few runs to tell it from chance); or an improvement.
    ``aspect``: ``concept`` (a concept of a concept-coverage check), ``rate`` (a check's pass
    rate) or ``volume`` (the measure). ``baseline`` and ``candidate`` hold the figures it was
    judged on, ``what`` says in words what changed."""

    kind: Literal["regression", "needs-more-runs", "improvement"]
    aspect: Literal["concept", "rate", "volume"]
    condition: str
    factors: dict[str, Level]
    participant: str
    check: str | None
    concept: str | None
    what: str
    baseline: dict[str, float]
    candidate: dict[str, float]

    def line(self) -> str:
        """The finding on one line: kind, cell, check and concept, what changed, figures."""
        levels = " ".join(f"{k}={v}" for k, v in self.factors.items())
        subject = "measure" if self.check is None else f"check {self.check}"
        if self.concept is not None:
            subject += f", concept {self.concept!r}"
        return (
            f"{self.kind}: {self.condition} ({levels}; {self.participant}) {subject}: "
            f"{self.what} (baseline {_figures(self.baseline)}; "
            f"candidate {_figures(self.candidate)})"
        )


def _figures(figures: Mapping[str, float]) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in figures.items())


@frozen
class Comparison:
    """A candidate's scores against a baseline's: the findings in the cells both have (in the
    baseline's cell order), the checks saturated on both sides, the cells only one side has."""

    cells: int
    findings: tuple[Finding, ...]
    saturated: tuple[str, ...]
    only_baseline: tuple[str, ...]
    only_candidate: tuple[str, ...]

    def count(self, kind: Literal["regression", "needs-more-runs", "improvement"]) -> int:
        """The number of findings of ``kind``."""
        return sum(f.kind == kind for f in self.findings)

    @property
    def regression(self) -> bool:
        """Whether the candidate regressed: any regression finding (those in cells that need
        more runs are not regressions until the runs show it)."""
        return self.count("regression") > 0

    def summary(self) -> str:
        """One line: regressions, or improvements where there is headroom; then the findings
        that need more runs and the saturated checks."""
        if self.regression:
            head = f"regression: {self.count('regression')} finding(s)"
        else:
            head = (
                "no regression, improvement where there is headroom "
                f"({self.count('improvement')} improvement(s))"
            )
        return (
            f"{head}; {self.count('needs-more-runs')} finding(s) need more runs "
            f"(fewer than {MIN_RUNS} valid runs on a side); "
            f"{len(self.saturated)} saturated check(s)"
        )

    def text(self) -> str:
        """The report for people: the summary, the cells compared, then every finding, every
        saturated check and every cell only one side has, each on its own line."""
        lines = [self.summary(), f"{self.cells} cell(s) compared"]
        lines += [f.line() for f in self.findings]
        lines += [
            f"saturated: check {name} passed in every valid run of every cell on both sides "
            "(it cannot show an improvement)"
            for name in self.saturated
        ]
        if self.only_baseline:
            lines.append(f"only in the baseline: {', '.join(self.only_baseline)}")
        if self.only_candidate:
            lines.append(f"only in the candidate: {', '.join(self.only_candidate)}")
        return "\n".join(lines)


def _runs_by_condition(scores: Scores) -> dict[str, list[RunScore]]:
    runs: dict[str, list[RunScore]] = defaultdict(list)
    for run in scores.runs:
        runs[run.condition].append(run)
    return runs


def _covered(runs: Sequence[RunScore], check: str, concept: str) -> int:
    """In how many of ``runs`` check ``check`` covered ``concept``."""
    return sum(
        concept in result.detail.get("covered", ())
        for run in runs
        for result in run.checks
        if result.name == check
    )


def _summary(cell: CellScore, check: str) -> CheckSummary | None:
    return next((c for c in cell.checks if c.name == check), None)


class _Cell:
    """The findings of one cell both sides have."""

    def __init__(self, base: CellScore, cand: CellScore) -> None:
        self.base = base
        self.cand = cand
        few = base.valid_runs < MIN_RUNS or cand.valid_runs < MIN_RUNS
        self.regression_kind: Literal["regression", "needs-more-runs"] = (
            "needs-more-runs" if few else "regression"
        )
        self.findings: list[Finding] = []

    def add(
        self,
        kind: Literal["regression", "needs-more-runs", "improvement"],
        aspect: Literal["concept", "rate", "volume"],
        check: str | None,
        concept: str | None,
        what: str,
        baseline: dict[str, float],
        candidate: dict[str, float],
    ) -> None:
        self.findings.append(
            Finding(
                kind=kind,
                aspect=aspect,
                condition=self.base.condition,
                factors=self.base.factors,
                participant=self.base.participant,
                check=check,
                concept=concept,
                what=what,
                baseline=baseline,
                candidate=candidate,
            )
        )

    def concepts(
        self,
        check: str,
        concepts: Sequence[str],
        base_runs: Sequence[RunScore],
        cand_runs: Sequence[RunScore],
    ) -> None:
        """(a) A concept covered in every valid baseline run but not in every candidate run."""
        if not base_runs or not cand_runs:
            return
        for concept in concepts:
            before = _covered(base_runs, check, concept)
            after = _covered(cand_runs, check, concept)
            if before == len(base_runs) and after < len(cand_runs):
                self.add(
                    self.regression_kind,
                    "concept",
                    check,
                    concept,
                    "no longer covered in every run",
                    {"covered": before, "runs": len(base_runs)},
                    {"covered": after, "runs": len(cand_runs)},
                )

    def rate(self, check: str, regressions: bool) -> None:
        """(b) A pass rate lower than the baseline's (when ``regressions``), and (e) a pass rate
        higher than the baseline's (which is then below 1: where the baseline always passed
        there is no headroom). Rates compare as exact fractions."""
        base, cand = _summary(self.base, check), _summary(self.cand, check)
        if base is None or cand is None or not base.runs or not cand.runs:
            return
        figures: tuple[dict[str, float], dict[str, float]] = (
            {"passed": base.passed, "runs": base.runs},
            {"passed": cand.passed, "runs": cand.runs},
        )
        lower = cand.passed * base.runs < base.passed * cand.runs
        higher = cand.passed * base.runs > base.passed * cand.runs
        if regressions and lower:
            self.add(self.regression_kind, "rate", check, None, "reached less often", *figures)
        if higher:
            self.add("improvement", "rate", check, None, "reached more often", *figures)

    def volume(self, base: Sequence[float], cand: Sequence[float]) -> None:
        """(c) The candidate's median measure below the baseline's lowest run: a shift that
        run-to-run noise within the baseline does not reach."""
        if not base or not cand:
            return
        lowest, median = min(base), statistics.median(cand)
        if median < lowest:
            self.add(
                self.regression_kind,
                "volume",
                None,
                None,
                "median below the baseline's lowest run",
                {"lowest": lowest, "median": statistics.median(base), "runs": len(base)},
                {"median": median, "lowest": min(cand), "runs": len(cand)},
            )


def _saturated(checks: Sequence[str], baseline: Scores, candidate: Scores) -> tuple[str, ...]:
    """(f) The checks that passed in every valid run of every cell on both sides (with at least
    one run on each): they have no headroom to show an improvement in."""

    def full(scores: Scores, check: str) -> bool:
        summaries = [_summary(cell, check) for cell in scores.cells]
        return (
            all(s is not None and s.passed == s.runs for s in summaries)
            and sum(s.runs for s in summaries if s is not None) > 0
        )

    return tuple(c for c in checks if full(baseline, c) and full(candidate, c))


def compare_scores(
    baseline: Scores,
    candidate: Scores,
    protocol: Protocol,
    baseline_measures: Mapping[str, Sequence[float]],
    candidate_measures: Mapping[str, Sequence[float]],
) -> Comparison:
    """The candidate's scores against the baseline's, for the cells both have (matched by
    condition ID; the others are listed). ``protocol`` (the baseline's) names the checks and
    each scenario's concepts; the measure mappings give each condition's valid runs' measures.

    Regressions: (a) a concept of a concept-coverage check covered in every valid baseline run
    of the cell but not in every candidate run; (b) any other check passing in a smaller share
    of the cell's valid runs; (c) the candidate's median measure below the baseline's lowest
    run. (d) In a cell with fewer than :data:`MIN_RUNS` valid runs on either side these are
    reported as needing more runs instead. Improvements: (e) a check passing in a larger share
    of runs than a baseline that did not always pass it. (f) Checks that passed in every run of
    every cell on both sides are listed as saturated: they cannot show an improvement."""
    scoring = protocol.scoring
    if scoring is None:
        raise ValueError(f"protocol {protocol.id!r} declares no scoring")
    candidate_cells = {c.condition: c for c in candidate.cells}
    baseline_ids = {c.condition for c in baseline.cells}
    base_runs, cand_runs = _runs_by_condition(baseline), _runs_by_condition(candidate)
    findings: list[Finding] = []
    compared = 0
    for base in baseline.cells:
        cand = candidate_cells.get(base.condition)
        if cand is None:
            continue
        compared += 1
        cell = _Cell(base, cand)
        condition = Condition(id=base.condition, factors=base.factors, participant=base.participant)
        scenario = scenario_of(protocol, condition)
        for check in scoring.checks:
            concept_check = check.kind == "concept-coverage"
            if concept_check and scenario is not None:
                cell.concepts(
                    check.name,
                    scenario.expect.get(check.expect, ()),
                    base_runs[base.condition],
                    cand_runs[base.condition],
                )
            cell.rate(check.name, regressions=not concept_check)
        cell.volume(
            baseline_measures.get(base.condition, ()), candidate_measures.get(base.condition, ())
        )
        findings += cell.findings
    return Comparison(
        cells=compared,
        findings=tuple(findings),
        saturated=_saturated([c.name for c in scoring.checks], baseline, candidate),
        only_baseline=tuple(
            c.condition for c in baseline.cells if c.condition not in candidate_cells
        ),
        only_candidate=tuple(
            c.condition for c in candidate.cells if c.condition not in baseline_ids
        ),
    )


# --------------------------------------------------------------------------- runs


@frozen
class AspectComparison:
    """One aspect of the runs both bundles have: in how many it is equal, in how many either
    bundle holds it at all (a trace digest, say, which a black-box adapter never has: two runs
    that both lack it are equal without anything having been compared), and the first
    :data:`MAX_LISTED` attempt IDs (in the candidate's order) in which it differs."""

    name: Aspect
    equal: int
    differing: tuple[str, ...]
    observed: int = 0


@frozen
class RunComparison:
    """Two bundles compared run by run: the attempts both have (matched by attempt ID, which
    names the slot), those only one has, and per aspect how many of the matched agree."""

    matched: int
    only_baseline: int
    only_candidate: int
    aspects: tuple[AspectComparison, ...]

    @property
    def identical(self) -> bool:
        """Whether both bundles have the same attempts, equal in every aspect."""
        return (
            self.only_baseline == 0
            and self.only_candidate == 0
            and all(a.equal == self.matched for a in self.aspects)
        )

    def summary(self) -> str:
        """One line: the runs matched and unmatched, and each aspect's agreement."""
        counts = ", ".join(f"{a.name} {a.equal}/{self.matched}" for a in self.aspects)
        line = (
            f"{self.matched} run(s) in both bundles ({self.only_baseline} only in the baseline, "
            f"{self.only_candidate} only in the candidate); equal: {counts}"
        )
        return line + ("; identical" if self.identical else "")

    def text(self) -> str:
        """The report for people: the summary, then each aspect that differs anywhere with the
        first attempt IDs in which it does."""
        lines = [self.summary()]
        for a in self.aspects:
            if a.equal < self.matched:
                more = " ..." if self.matched - a.equal > len(a.differing) else ""
                lines.append(
                    f"{a.name} differs in {self.matched - a.equal} run(s): "
                    f"{', '.join(a.differing)}{more}"
                )
        return "\n".join(lines)


def _aspects(record: RunRecord) -> tuple[Any, ...]:
    return (
        record.status,
        record.measure,
        record.steps,
        record.step_rewards,
        record.trace_sha256,
        record.outcome,
    )


def compare_runs(
    baseline_records: Iterable[RunRecord], candidate_records: Iterable[RunRecord]
) -> RunComparison:
    """Two bundles of one protocol compared run by run: records are matched by attempt ID
    (the slot and the attempt's number), and for the matched ones each aspect (status, measure,
    steps, step rewards, trace digest, outcome) is compared as JSON. Two backends of one
    protocol with per-run seeds should agree in every aspect they both observe; the comparison
    says which they do. Only the baseline's aspects are held, never its whole records."""
    held = {r.attempt_id: _aspects(r) for r in baseline_records}
    equal = [0] * len(ASPECTS)
    observed = [0] * len(ASPECTS)
    differing: list[list[str]] = [[] for _ in ASPECTS]
    matched = only_candidate = 0
    for record in candidate_records:
        base = held.get(record.attempt_id)
        if base is None:
            only_candidate += 1
            continue
        matched += 1
        for i, (a, b) in enumerate(zip(base, _aspects(record), strict=True)):
            observed[i] += a is not None or b is not None
            if json_equal(a, b):
                equal[i] += 1
            elif len(differing[i]) < MAX_LISTED:
                differing[i].append(record.attempt_id)
    aspects = tuple(
        AspectComparison(
            name=name, equal=equal[i], differing=tuple(differing[i]), observed=observed[i]
        )
        for i, name in enumerate(ASPECTS)
    )
    return RunComparison(
        matched=matched,
        only_baseline=len(held) - matched,
        only_candidate=only_candidate,
        aspects=aspects,
    )
