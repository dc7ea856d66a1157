"""Comparing two bundles: a candidate's scores against a baseline's (regressions, cells that need
more runs, improvements, saturated checks) and two bundles' runs aspect by aspect."""

from __future__ import annotations

import copy
from typing import Any

import attrs
import orjson
import pytest

from repro._compare import scores as comparison
from repro._compare.scores import ASPECTS, Comparison, compare_runs, compare_scores
from repro._derive import scoring
from repro._json.serde import structure, unstructure
from repro._plan.sealing import conditions_of
from repro.models import Protocol, RunRecord, Scores

RAW: dict[str, Any] = {
    "schema": "repro.protocol/1",
    "id": "compared",
    "title": "Compared study",
    "adapter": {"name": "command", "options": {}},
    "matrix": [
        {"name": "scenario", "levels": ["s1"]},
        {"name": "arm", "levels": ["raw", "gated"]},
    ],
    "participants": [{"id": "agent", "kind": "agent", "params": {}}],
    "runs_per_condition": 6,
    "seeding": {"mode": "per-run", "seed": 1},
    "measure": {"name": "outcome_value", "key": "questions", "description": "questions"},
    "estimand": "mean-of-condition-means",
    "interval": {"method": "t", "level": 0.95},
    "scenarios": [
        {
            "id": "s1",
            "version": 1,
            "expect": {
                "concepts": ["token expiry", "refresh rotation"],
                "min_questions": 1,
                "verdict": "block",
                "domains": ["auth"],
            },
        }
    ],
    "scoring": {
        "checks": [
            {
                "name": "concepts",
                "kind": "concept-coverage",
                "keys": ["summary"],
                "expect": "concepts",
            },
            {"name": "verdict", "kind": "equals", "key": "verdict", "expect": "verdict"},
            {
                "name": "questions",
                "kind": "at-least",
                "key": "questions",
                "expect": "min_questions",
            },
            {"name": "domains", "kind": "includes-all", "key": "domains", "expect": "domains"},
        ]
    },
}
P = structure(copy.deepcopy(RAW), Protocol, what="protocol")
CONDITIONS = conditions_of(P)
RAW_ARM, GATED = CONDITIONS[0].id, CONDITIONS[1].id


def outcome(
    summary: str = "token expiry and refresh rotation",
    verdict: str = "block",
    questions: int = 2,
) -> dict[str, Any]:
    """An outcome of s1; by default it passes every check and asks two questions."""
    return {"summary": summary, "verdict": verdict, "questions": questions, "domains": ["auth"]}


GOOD = outcome()
#: Misses the concept "refresh rotation" (and so the concept check), passes the rest.
FORGETFUL = outcome(summary="token expiry")
#: Misses the verdict, passes the rest.
WRONG = outcome(verdict="pass")


def scores(
    cells: dict[str, list[dict[str, Any]]],
) -> tuple[Scores, dict[str, list[float]]]:
    """The scores of the given outcomes per condition, as a study derives them, and each
    condition's measures (the number of questions)."""
    runs = [
        (f"{condition}-r{i:04d}-a1", condition, o, float(o["questions"]))
        for condition, outcomes in cells.items()
        for i, o in enumerate(outcomes)
    ]
    run_scores, cell_scores = scoring.score_cells(P, CONDITIONS, runs, {}, 0.95)
    measures = {c: [float(o["questions"]) for o in os] for c, os in cells.items()}
    result = Scores(
        schema="repro.scores/1",
        protocol_sha256="0" * 64,
        level=0.95,
        runs=run_scores,
        cells=cell_scores,
        gates=(),
    )
    return result, measures


def compare(
    baseline: dict[str, list[dict[str, Any]]], candidate: dict[str, list[dict[str, Any]]]
) -> Comparison:
    """compare_scores of the scores and measures of the given outcomes."""
    base, base_measures = scores(baseline)
    cand, cand_measures = scores(candidate)
    return compare_scores(base, cand, P, base_measures, cand_measures)


def both(outcomes: list[dict[str, Any]], other: list[dict[str, Any]] | None = None) -> Any:
    """Cells: the raw arm with ``outcomes``, the gated arm with ``other`` (six good runs)."""
    return {RAW_ARM: outcomes, GATED: other if other is not None else [GOOD] * 6}


class TestCompareScores:
    """Regressions, needs-more-runs, improvements and saturation between two scores."""

    def test_identical(self) -> None:
        """The same scores on both sides: no finding, no regression; every check that always
        passed is saturated."""
        cells = both([GOOD, GOOD, FORGETFUL, GOOD, WRONG, GOOD])
        c = compare(cells, cells)
        assert c.findings == ()
        assert not c.regression
        assert c.cells == 2
        assert c.saturated == ("questions", "domains")
        assert c.summary() == (
            "no regression, improvement where there is headroom (0 improvement(s)); "
            "0 finding(s) need more runs (fewer than 6 valid runs on a side); "
            "2 saturated check(s)"
        )

    def test_concept_regression(self) -> None:
        """A concept covered in every baseline run but missed in one candidate run is a
        regression, with its figures; the concept check's rate alone is not a second one."""
        c = compare(both([GOOD] * 6), both([GOOD] * 5 + [FORGETFUL]))
        assert c.regression
        (finding,) = c.findings
        assert (finding.kind, finding.aspect, finding.check, finding.concept) == (
            "regression",
            "concept",
            "concepts",
            "refresh rotation",
        )
        assert finding.condition == RAW_ARM
        assert finding.factors == {"scenario": "s1", "arm": "raw"}
        assert (finding.baseline, finding.candidate) == (
            {"covered": 6, "runs": 6},
            {"covered": 5, "runs": 6},
        )
        assert c.summary().startswith("regression: 1 finding(s); ")

    def test_concept_not_always_covered_before(self) -> None:
        """A concept the baseline already missed sometimes is no concept regression."""
        c = compare(both([GOOD] * 5 + [FORGETFUL]), both([GOOD] * 3 + [FORGETFUL] * 3))
        assert [f.aspect for f in c.findings] == []
        assert not c.regression

    def test_rate_regression(self) -> None:
        """A check passing in fewer runs (no tolerance: one run of six) is reached less
        often."""
        c = compare(both([GOOD] * 6), both([GOOD] * 5 + [WRONG]))
        (finding,) = c.findings
        assert (finding.kind, finding.aspect, finding.check, finding.what) == (
            "regression",
            "rate",
            "verdict",
            "reached less often",
        )
        assert (finding.baseline, finding.candidate) == (
            {"passed": 6, "runs": 6},
            {"passed": 5, "runs": 6},
        )
        assert c.regression

    def test_rate_compares_shares(self) -> None:
        """Rates compare as shares of runs: 3 of 6 against 4 of 8 is no change, 3 of 6
        against 3 of 7 is lower."""
        base = both([GOOD] * 3 + [WRONG] * 3)
        assert compare(base, both([GOOD] * 4 + [WRONG] * 4)).findings == ()
        (finding,) = compare(base, both([GOOD] * 3 + [WRONG] * 4)).findings
        assert finding.what == "reached less often"

    def test_volume_regression(self) -> None:
        """The candidate's median measure below the baseline's lowest run is a regression."""
        base = both([outcome(questions=q) for q in (2, 3, 3, 4, 2, 3)])
        c = compare(base, both([outcome(questions=q) for q in (1, 1, 1, 5, 5, 1)]))
        (finding,) = c.findings
        assert (finding.kind, finding.aspect, finding.check) == ("regression", "volume", None)
        assert finding.baseline == {"lowest": 2.0, "median": 3.0, "runs": 6}
        assert finding.candidate == {"median": 1.0, "lowest": 1.0, "runs": 6}

    def test_volume_within_noise(self) -> None:
        """A candidate median equal to the baseline's lowest run is within its noise."""
        base = both([outcome(questions=q) for q in (2, 3, 3, 4, 2, 3)])
        assert compare(base, both([outcome(questions=2)] * 6)).findings == ()

    def test_needs_more_runs(self) -> None:
        """In a cell with 5 valid runs on a side, regressions of every kind are reported as
        needing more runs, and the candidate has not regressed."""
        base = both([outcome(questions=3)] * 5)
        cand = both([outcome(summary="token expiry", verdict="pass", questions=1)] * 6)
        c = compare(base, cand)
        assert sorted(f.aspect for f in c.findings) == ["concept", "rate", "volume"]
        assert all(f.kind == "needs-more-runs" for f in c.findings)
        assert not c.regression
        assert "3 finding(s) need more runs" in c.summary()
        assert c.summary().startswith("no regression")

    def test_six_runs_are_enough(self) -> None:
        """Six valid runs on each side are enough for a regression to count."""
        c = compare(both([GOOD] * 6), both([WRONG] * 6))
        assert [f.kind for f in c.findings] == ["regression"]

    def test_improvement(self) -> None:
        """A check passing more often than a baseline that did not always pass it is an
        improvement, not a regression."""
        c = compare(both([GOOD] * 3 + [WRONG] * 3), both([GOOD] * 5 + [WRONG]))
        (finding,) = c.findings
        assert (finding.kind, finding.check, finding.what) == (
            "improvement",
            "verdict",
            "reached more often",
        )
        assert not c.regression
        assert c.summary().startswith(
            "no regression, improvement where there is headroom (1 improvement(s))"
        )

    def test_improvement_of_concept_check(self) -> None:
        """A concept-coverage check passing more often is an improvement too."""
        c = compare(both([FORGETFUL] * 6), both([GOOD] * 6))
        assert [(f.kind, f.check) for f in c.findings] == [("improvement", "concepts")]

    def test_saturated(self) -> None:
        """A check that passed in every run of every cell on both sides is saturated; one
        failure anywhere, on either side, and it is not."""
        c = compare(both([GOOD] * 6), both([GOOD] * 6))
        assert c.saturated == ("concepts", "verdict", "questions", "domains")
        c = compare(both([GOOD] * 6), both([GOOD] * 6, [GOOD] * 5 + [WRONG]))
        assert "verdict" not in c.saturated
        assert "1 saturated" not in c.summary() and "3 saturated check(s)" in c.summary()

    def test_no_runs_no_findings(self) -> None:
        """Cells without runs on a side give no finding and saturate nothing."""
        c = compare({}, {})
        assert (c.findings, c.saturated, c.cells) == ((), (), 2)

    def test_cells_on_one_side(self) -> None:
        """Cells only one side has are listed, not compared."""
        base, base_measures = scores(both([GOOD] * 6))
        cand, cand_measures = scores(both([WRONG] * 6))
        extra = attrs.evolve(cand.cells[0], condition="c99")
        cand = attrs.evolve(cand, cells=(extra, cand.cells[1]))
        c = compare_scores(base, cand, P, base_measures, cand_measures)
        assert (c.only_baseline, c.only_candidate, c.cells) == ((RAW_ARM,), ("c99",), 1)
        assert c.findings == ()
        assert f"only in the baseline: {RAW_ARM}" in c.text()
        assert "only in the candidate: c99" in c.text()

    def test_text(self) -> None:
        """The text: the summary, then one line per finding with the cell's condition, factor
        levels, participant, check, concept and figures, then the saturated checks."""
        c = compare(both([GOOD] * 6), both([GOOD] * 5 + [FORGETFUL]))
        lines = c.text().splitlines()
        assert lines[0] == c.summary()
        assert lines[1] == "2 cell(s) compared"
        assert lines[2] == (
            f"regression: {RAW_ARM} (scenario=s1 arm=raw; agent) check concepts, concept "
            "'refresh rotation': no longer covered in every run (baseline covered 6, runs 6; "
            "candidate covered 5, runs 6)"
        )
        assert lines[3] == (
            "saturated: check verdict passed in every valid run of every cell on both sides "
            "(it cannot show an improvement)"
        )

    def test_json(self) -> None:
        """The comparison unstructures to plain JSON data."""
        c = compare(both([GOOD] * 6), both([outcome(summary="", questions=0)] * 6))
        data = orjson.loads(orjson.dumps(unstructure(c)))
        assert data["findings"][0]["kind"] == "regression"
        assert set(data) == {"cells", "findings", "saturated", "only_baseline", "only_candidate"}

    def test_no_scoring_refused(self) -> None:
        """A protocol without scoring has no scores to compare."""
        base, measures = scores({})
        with pytest.raises(ValueError, match="no scoring"):
            compare_scores(base, base, attrs.evolve(P, scoring=None), measures, measures)


def record(slot: str, **changes: Any) -> RunRecord:
    """A valid run record of ``slot``'s first attempt, with ``changes``."""
    fields: dict[str, Any] = {
        "attempt_id": f"{slot}-a1",
        "slot": slot,
        "condition": slot.split("-")[0],
        "attempt": 1,
        "predecessor": None,
        "status": "valid",
        "cause": None,
        "measure": 2.0,
        "steps": 3,
        "step_rewards": (1.0, 0.5, 0.5),
        "trace_sha256": "a" * 64,
        "contract_sha256": "b" * 64,
        "outcome": {"verdict": "block", "questions": ["a", "b"], "confident": 1},
    }
    return RunRecord(**{**fields, **changes})


SLOTS = [f"c{c:02d}-r{r:04d}" for c in range(2) for r in range(6)]


class TestCompareRuns:
    """Two bundles compared run by run."""

    def test_equal(self) -> None:
        """The same records (in any order): every aspect equal in every run, identical."""
        base = [record(s) for s in SLOTS]
        c = compare_runs(base, reversed(base))
        assert (c.matched, c.only_baseline, c.only_candidate) == (12, 0, 0)
        assert [(a.name, a.equal, a.differing) for a in c.aspects] == [
            (name, 12, ()) for name in comparison.ASPECTS
        ]
        assert c.identical
        assert c.summary() == (
            "12 run(s) in both bundles (0 only in the baseline, 0 only in the candidate); "
            "equal: status 12/12, measure 12/12, steps 12/12, step_rewards 12/12, "
            "trace_sha256 12/12, outcome 12/12; identical"
        )
        assert c.text() == c.summary()

    def test_differing(self) -> None:
        """Each aspect counts its equal runs and names those that differ; outcomes compare as
        JSON (true is not 1); unmatched attempts are counted on their side."""
        base = [record(s) for s in SLOTS] + [record("c05-r0000")]
        cand = [record(s) for s in SLOTS[:10]]
        cand[1] = record(SLOTS[1], measure=2.5, step_rewards=(1.0, 1.0, 0.5))
        cand[2] = record(
            SLOTS[2], outcome={"verdict": "block", "questions": ["a", "b"], "confident": True}
        )
        cand[3] = record(SLOTS[3], status="invalid", cause="bad", trace_sha256=None, steps=4)
        cand.append(record("c07-r0000"))
        c = compare_runs(base, cand)
        assert (c.matched, c.only_baseline, c.only_candidate) == (10, 3, 1)
        table = {a.name: (a.equal, a.differing) for a in c.aspects}
        assert table == {
            "status": (9, (f"{SLOTS[3]}-a1",)),
            "measure": (9, (f"{SLOTS[1]}-a1",)),
            "steps": (9, (f"{SLOTS[3]}-a1",)),
            "step_rewards": (9, (f"{SLOTS[1]}-a1",)),
            "trace_sha256": (9, (f"{SLOTS[3]}-a1",)),
            "outcome": (9, (f"{SLOTS[2]}-a1",)),
        }
        assert not c.identical
        assert f"outcome differs in 1 run(s): {SLOTS[2]}-a1" in c.text().splitlines()

    def test_first_ten_listed(self) -> None:
        """Of many differing runs the first ten (in the candidate's order) are named, and the
        text says there are more."""
        base = [record(s) for s in SLOTS]
        cand = [record(s, measure=9.0) for s in SLOTS]
        c = compare_runs(base, cand)
        measure = c.aspects[comparison.ASPECTS.index("measure")]
        assert measure.equal == 0
        assert measure.differing == tuple(f"{s}-a1" for s in SLOTS[:10])
        assert c.text().splitlines()[1].endswith(f"{SLOTS[9]}-a1 ...")

    def test_json(self) -> None:
        """The run comparison unstructures to plain JSON data."""
        c = compare_runs([record(SLOTS[0])], [record(SLOTS[0], steps=None)])
        data = orjson.loads(orjson.dumps(unstructure(c)))
        assert data["aspects"][2] == {
            "name": "steps",
            "equal": 0,
            "differing": [f"{SLOTS[0]}-a1"],
            "observed": 1,
        }

    def test_an_aspect_neither_bundle_holds_is_not_observed(self) -> None:
        """Runs that both lack an aspect (no trace digest on either side) are equal in it, and
        counted as not observed; one side holding it counts as observed."""
        none, some = record(SLOTS[0], trace_sha256=None), record(SLOTS[0], trace_sha256="a" * 64)
        trace = ASPECTS.index("trace_sha256")
        both_lack = compare_runs([none], [none]).aspects[trace]
        assert (both_lack.equal, both_lack.observed) == (1, 0)
        one_has = compare_runs([none], [some]).aspects[trace]
        assert (one_has.equal, one_has.observed) == (0, 1)
