"""Scoring of a scored study: the checks, the taxonomy, Wilson intervals, cells, publish gates and
the protocol problems that make the scoring functions' assumptions hold."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from pathlib import Path
from statistics import NormalDist
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repro._derive import scoring
from repro._json.serde import structure
from repro._plan.sealing import conditions_of
from repro._protocol import scoring_rules
from repro._protocol.load import strip_comments
from repro.errors import PROBLEM_CODES
from repro.models import Check, Loss, Protocol, Rule, Taxonomy

RAW: dict[str, Any] = {
    "schema": "repro.protocol/1",
    "id": "scored",
    "title": "Scored test study",
    "adapter": {"name": "command", "options": {}},
    "matrix": [
        {"name": "scenario", "levels": ["s1", "s2"]},
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
                "domains": ["auth"],
                "min_questions": 2,
                "verdict": "block",
            },
        },
        {
            "id": "s2",
            "version": 3,
            "stratum": "holdout",
            "expect": {
                "concepts": ["quota overflow"],
                "domains": ["quota"],
                "min_questions": 1,
                "verdict": "block",
            },
        },
    ],
    "scoring": {
        "checks": [
            {
                "name": "concepts",
                "kind": "concept-coverage",
                "keys": ["summary", "findings"],
                "expect": "concepts",
            },
            {"name": "domains", "kind": "includes-all", "key": "domains", "expect": "domains"},
            {
                "name": "questions",
                "kind": "at-least",
                "key": "questions",
                "expect": "min_questions",
            },
            {"name": "verdict", "kind": "equals", "key": "verdict", "expect": "verdict"},
        ],
        "taxonomy": {
            "name": "review",
            "categories": ["catch", "abstain", "lucky_pass", "knowing_pass", "miss"],
            "rules": [
                {"category": "catch", "checks": {"verdict": True, "concepts": True}},
                {"category": "abstain", "values": {"verdict": "unsure"}},
                {"category": "lucky_pass", "checks": {"verdict": True}},
                {"category": "knowing_pass", "checks": {"concepts": True}},
                {"category": "miss"},
            ],
        },
    },
    "gates": {
        "breadth": {"minimum": 2, "maximum": 10, "holdout_fraction": 0.5},
        "control_floor": {"factor": "arm", "control": "raw", "check": "verdict", "fraction": 0.5},
        "versions": True,
        "completeness": True,
    },
}

#: An outcome of scenario s1 that passes every check.
GOOD: dict[str, Any] = {
    "summary": "Token expiry is never checked.",
    "findings": ["No refresh-token rotation"],
    "domains": ["auth", "sessions"],
    "questions": ["who rotates?", "when?"],
    "verdict": "block",
}
#: An outcome of scenario s1 that fails every check.
BAD: dict[str, Any] = {
    "summary": "Looks fine",
    "findings": [],
    "domains": [],
    "questions": [],
    "verdict": "pass",
}


def protocol(change: Callable[[dict[str, Any]], object] | None = None) -> Protocol:
    """The test protocol, after ``change`` has edited a copy of its JSON (no consistency check:
    :func:`scoring_rules.scoring_problems` is what is tested on it)."""
    raw = copy.deepcopy(RAW)
    if change is not None:
        change(raw)
    return structure(raw, Protocol, what="protocol")


P = protocol()
CHECKS = {c.name: c for c in P.scoring.checks} if P.scoring else {}
S1 = P.scenarios[0]


def run(check: str, outcome: dict[str, Any], expect: dict[str, Any] | None = None) -> Any:
    """The result of check ``check`` on ``outcome`` against s1's expectations (or ``expect``)."""
    return scoring.check_run(CHECKS[check], outcome, expect if expect is not None else S1.expect)


# --------------------------------------------------------------------------- tokens, JSON values


class TestTokens:
    """Tokens and JSON equality."""

    def test_case_and_punctuation(self) -> None:
        """Tokens are lower-cased runs of ASCII letters and digits; anything else separates."""
        assert scoring.tokens("Token-Expiry, v2!  é_x") == {"token", "expiry", "v2", "x"}
        assert scoring.tokens("") == frozenset()

    @given(st.text())
    def test_tokens_are_lower_alphanumeric(self, text: str) -> None:
        """Every token is a non-empty run of [a-z0-9] found in the lower-cased text."""
        for token in scoring.tokens(text):
            assert token and all(c in "abcdefghijklmnopqrstuvwxyz0123456789" for c in token)
            assert token in text.lower()

    def test_json_equal(self) -> None:
        """Booleans equal only booleans, numbers compare by value, arrays and objects deeply."""
        assert not scoring.json_equal(True, 1)
        assert not scoring.json_equal(0, False)
        assert scoring.json_equal(1, 1.0)
        assert scoring.json_equal([1, {"a": True}], (1.0, {"a": True}))
        assert not scoring.json_equal([1, {"a": True}], [1, {"a": 1}])
        assert not scoring.json_equal({"a": 1}, {"a": 1, "b": 2})
        assert not scoring.json_equal("1", 1)
        assert not scoring.json_equal(None, 0)
        assert scoring.json_equal(None, None)

    def test_json_type(self) -> None:
        """JSON type names, a boolean never named a number."""
        names = [scoring.json_type(v) for v in (None, True, 1, 1.5, "x", [], {})]
        assert names == ["null", "boolean", "number", "number", "string", "array", "object"]


# --------------------------------------------------------------------------- checks


class TestConceptCoverage:
    """concept-coverage: at least half of each concept's tokens in the outcome's text."""

    def test_all_covered(self) -> None:
        """Every concept covered across the text keys (case and punctuation ignored): passed."""
        r = run("concepts", GOOD)
        assert r.passed
        assert r.detail == {"covered": ["token expiry", "refresh rotation"], "missing": []}

    def test_missing_in_expectation_order(self) -> None:
        """An uncovered concept fails the check; both lists keep the expectation's order."""
        expect = {"concepts": ["gamma ray", "alpha beta", "delta"]}
        r = run("concepts", {"summary": "alpha and gamma"}, expect)
        assert not r.passed
        assert r.detail == {"covered": ["gamma ray", "alpha beta"], "missing": ["delta"]}

    def test_half_exactly_covers(self) -> None:
        """Two of four tokens (exactly half) cover a concept; one of three does not."""
        expect = {"concepts": ["one two three four", "five six seven"]}
        r = run("concepts", {"summary": "two four five"}, expect)
        assert r.detail == {"covered": ["one two three four"], "missing": ["five six seven"]}

    def test_just_below_half(self) -> None:
        """One of four tokens is below half; two of three is above it."""
        expect = {"concepts": ["one two three four", "five six seven"]}
        r = run("concepts", {"summary": "four six seven"}, expect)
        assert r.detail == {"covered": ["five six seven"], "missing": ["one two three four"]}

    def test_distinct_tokens(self) -> None:
        """A repeated token counts once: "very very fast" has two tokens, "very" is half."""
        r = run("concepts", {"summary": "VERY!"}, {"concepts": ["very very fast"]})
        assert r.passed

    def test_missing_key_and_non_strings_are_empty(self) -> None:
        """An absent key, a number, or non-string array items give no text."""
        expect = {"concepts": ["alpha"]}
        assert not run("concepts", {}, expect).passed
        assert not run("concepts", {"summary": 12, "findings": None}, expect).passed
        assert not run("concepts", {"findings": [1, {"alpha": "alpha"}, ["alpha"]]}, expect).passed
        assert run("concepts", {"findings": [1, "Alpha"]}, expect).passed

    def test_pieces_do_not_join(self) -> None:
        """Array items are separate texts: "tok" and "en" never make "token"."""
        assert not run("concepts", {"findings": ["tok", "en"]}, {"concepts": ["token"]}).passed

    def test_only_declared_keys(self) -> None:
        """Text at keys the check does not name does not count."""
        assert not run("concepts", {"verdict": "alpha"}, {"concepts": ["alpha"]}).passed

    @given(st.text(min_size=1), st.sampled_from([str.upper, str.lower, str.title]))
    def test_verbatim_text_covers(self, concept: str, case: Callable[[str], str]) -> None:
        """An outcome that contains a concept's text, in any case, covers it."""
        r = run("concepts", {"summary": case(concept)}, {"concepts": [concept]})
        assert r.passed or not scoring.tokens(case(concept)) >= scoring.tokens(concept)


class TestIncludesAll:
    """includes-all: every expected item in the outcome's array."""

    def test_pass(self) -> None:
        """All expected items present (others allowed): passed, nothing missing."""
        r = run("domains", GOOD)
        assert (r.passed, r.detail) == (True, {"missing": []})

    def test_fail_names_missing(self) -> None:
        """Items not in the array are named in the expectation's order."""
        r = run("domains", {"domains": ["b"]}, {"domains": ["c", "b", "a"]})
        assert (r.passed, r.detail) == (False, {"missing": ["c", "a"]})

    def test_json_equality(self) -> None:
        """Items compare as JSON: true is not 1, objects compare deeply, 2 equals 2.0."""
        expect = {"domains": [True, {"k": [1]}, 2]}
        r = run("domains", {"domains": [1, {"k": [1.0]}, 2.0]}, expect)
        assert r.detail == {"missing": [True]}

    def test_absent(self) -> None:
        """No value at the key: failed, every item missing, found "absent"."""
        r = run("domains", {}, {"domains": ["a", "b"]})
        assert (r.passed, r.detail) == (False, {"missing": ["a", "b"], "found": "absent"})

    @pytest.mark.parametrize(
        ("value", "found"),
        [("auth", "string"), ({"auth": True}, "object"), (None, "null"), (3, "number")],
    )
    def test_not_an_array(self, value: Any, found: str) -> None:
        """A value that is not an array: failed, every item missing, its JSON type named."""
        r = run("domains", {"domains": value}, {"domains": ["auth"]})
        assert (r.passed, r.detail) == (False, {"missing": ["auth"], "found": found})

    def test_empty_expectation(self) -> None:
        """Nothing expected: any array passes."""
        assert run("domains", {"domains": []}, {"domains": []}).passed


class TestAtLeast:
    """at-least: the outcome's number, or its array's length, at least the expected number."""

    @pytest.mark.parametrize(
        ("value", "count", "passed"),
        [
            (["a", "b"], 2, True),
            (["a", "b", "c"], 3, True),
            (["a"], 1, False),
            (2, 2, True),
            (1.5, 1.5, False),
            (7, 7, True),
        ],
    )
    def test_counts(self, value: Any, count: float, passed: bool) -> None:
        """An array counts its items, a number itself; exactly the minimum passes."""
        r = run("questions", {"questions": value})
        assert (r.passed, r.detail) == (passed, {"count": count, "minimum": 2})

    @pytest.mark.parametrize("outcome", [{}, {"questions": True}, {"questions": "2"}])
    def test_unusable(self, outcome: dict[str, Any]) -> None:
        """Absent, a boolean or a string: no count (null), failed."""
        r = run("questions", outcome)
        assert (r.passed, r.detail) == (False, {"count": None, "minimum": 2})

    def test_zero_minimum(self) -> None:
        """A minimum of 0 is met by an empty array but not by an absent value."""
        assert run("questions", {"questions": []}, {"min_questions": 0}).passed
        assert not run("questions", {}, {"min_questions": 0}).passed


class TestEquals:
    """equals: the outcome's value equals the expected one as JSON."""

    def test_pass_and_fail(self) -> None:
        """The same string passes; another fails; the detail shows both."""
        r = run("verdict", GOOD)
        assert (r.passed, r.detail) == (True, {"found": "block", "expected": "block"})
        r = run("verdict", BAD)
        assert (r.passed, r.detail) == (False, {"found": "pass", "expected": "block"})

    def test_boolean_is_not_a_number(self) -> None:
        """true does not equal 1, 1 equals 1.0."""
        assert not run("verdict", {"verdict": True}, {"verdict": 1}).passed
        assert run("verdict", {"verdict": 1.0}, {"verdict": 1}).passed

    def test_absent_reads_null(self) -> None:
        """An absent key reads as null: found null, and equal to an expected null."""
        r = run("verdict", {}, {"verdict": "block"})
        assert (r.passed, r.detail) == (False, {"found": None, "expected": "block"})
        assert run("verdict", {}, {"verdict": None}).passed

    def test_structured(self) -> None:
        """Arrays and objects compare deeply and in order."""
        assert run("verdict", {"verdict": [1, {"a": "b"}]}, {"verdict": [1, {"a": "b"}]}).passed
        assert not run("verdict", {"verdict": [2, 1]}, {"verdict": [1, 2]}).passed

    def test_no_key_is_refused(self) -> None:
        """A keyed check without a key (a protocol scoring_problems refuses) raises."""
        check = Check(name="v", kind="equals", expect="verdict")
        with pytest.raises(ValueError, match="no key"):
            scoring.check_run(check, GOOD, S1.expect)


# --------------------------------------------------------------------------- taxonomy, run


class TestClassify:
    """The taxonomy: the first matching rule wins."""

    taxonomy = P.scoring.taxonomy if P.scoring else None

    def categorise(self, outcome: dict[str, Any], **results: bool) -> str:
        assert self.taxonomy is not None
        return scoring.classify(self.taxonomy, outcome, results)

    def test_first_match_wins(self) -> None:
        """Both catch and lucky_pass match a verdict-and-concepts run: catch comes first."""
        assert self.categorise({}, verdict=True, concepts=True) == "catch"
        assert self.categorise({}, verdict=True, concepts=False) == "lucky_pass"
        assert self.categorise({}, verdict=False, concepts=True) == "knowing_pass"

    def test_values_rule(self) -> None:
        """A rule on outcome values matches the value as JSON, before later rules."""
        assert self.categorise({"verdict": "unsure"}, verdict=False, concepts=True) == "abstain"
        assert self.categorise({"verdict": "UNSURE"}, verdict=False, concepts=False) == "miss"

    def test_values_are_json_typed(self) -> None:
        """A rule value true does not match an outcome value 1."""
        taxonomy = Taxonomy(
            name="t",
            categories=("yes", "no"),
            rules=(Rule(category="yes", values={"flag": True}), Rule(category="no")),
        )
        assert scoring.classify(taxonomy, {"flag": True}, {}) == "yes"
        assert scoring.classify(taxonomy, {"flag": 1}, {}) == "no"
        assert scoring.classify(taxonomy, {}, {}) == "no"

    def test_last_rule_catches_all(self) -> None:
        """Nothing matches but the unconditional last rule: its category."""
        assert self.categorise({}, verdict=False, concepts=False) == "miss"

    def test_no_match_raises(self) -> None:
        """A table without a catch-all (refused by scoring_problems) raises when none match."""
        taxonomy = Taxonomy(name="t", categories=("a",), rules=(Rule("a", checks={"x": True}),))
        with pytest.raises(ValueError, match="no rule matches"):
            scoring.classify(taxonomy, {}, {"x": False})


class TestScoreRun:
    """One run's scores."""

    def test_checks_in_order_and_category(self) -> None:
        """Every check in the protocol's order, and the category from their results."""
        assert P.scoring is not None
        score = scoring.score_run(P.scoring, S1, "c00-r0000-a1", "c00", GOOD)
        assert [c.name for c in score.checks] == ["concepts", "domains", "questions", "verdict"]
        assert all(c.passed for c in score.checks)
        assert (score.attempt_id, score.condition, score.category) == (
            "c00-r0000-a1",
            "c00",
            "catch",
        )

    def test_without_taxonomy(self) -> None:
        """Without a taxonomy the category is null."""
        p = protocol(lambda raw: raw["scoring"].pop("taxonomy"))
        assert p.scoring is not None
        assert scoring.score_run(p.scoring, S1, "a", "c00", BAD).category is None


# --------------------------------------------------------------------------- Wilson


def independent_wilson(k: int, n: int, level: float) -> tuple[float, float]:
    """The Wilson interval in its textbook form, with z from the standard library."""
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = k / n
    center = (k + z * z / 2) / (n + z * z)
    half = z * math.sqrt(n) / (n + z * z) * math.sqrt(p * (1 - p) + z * z / (4 * n))
    return center - half, center + half


class TestWilson:
    """The Wilson score interval."""

    @pytest.mark.parametrize("k", range(7))
    def test_n6_matches_textbook_form(self, k: int) -> None:
        """For 0..6 of 6 at 95 %, the interval matches the textbook formula."""
        low, high = scoring.wilson(k, 6, 0.95)
        want_low, want_high = independent_wilson(k, 6, 0.95)
        assert low == pytest.approx(max(0.0, want_low), abs=1e-12)
        assert high == pytest.approx(min(1.0, want_high), abs=1e-12)

    def test_published_values(self) -> None:
        """Tabulated values: 0/6 gives (0, 0.390), 3/6 gives (0.188, 0.812), 6/6 (0.610, 1)."""
        assert [round(x, 3) for x in scoring.wilson(0, 6, 0.95)] == [0.0, 0.39]
        assert [round(x, 3) for x in scoring.wilson(3, 6, 0.95)] == [0.188, 0.812]
        assert [round(x, 3) for x in scoring.wilson(6, 6, 0.95)] == [0.61, 1.0]

    def test_ends_exact(self) -> None:
        """No successes: the low bound is exactly 0; all successes: the high bound exactly 1."""
        assert scoring.wilson(0, 9, 0.9)[0] == 0.0
        assert scoring.wilson(9, 9, 0.9)[1] == 1.0

    def test_wider_at_higher_level(self) -> None:
        """A higher confidence level gives a wider interval."""
        low90, high90 = scoring.wilson(4, 10, 0.9)
        low99, high99 = scoring.wilson(4, 10, 0.99)
        assert low99 < low90 and high99 > high90

    # No deadline: a busy machine can take longer than the default for one example.
    @settings(deadline=None)
    @given(st.integers(1, 10_000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
    def test_contains_rate(self, kn: tuple[int, int]) -> None:
        """0 <= low <= k/n <= high <= 1."""
        k, n = kn
        low, high = scoring.wilson(k, n, 0.95)
        assert 0.0 <= low <= k / n <= high <= 1.0

    @settings(deadline=None)
    @given(
        st.integers(1, 10_000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
        st.floats(0.5, 0.999),
    )
    def test_symmetric(self, kn: tuple[int, int], level: float) -> None:
        """The interval of n-k successes mirrors that of k."""
        k, n = kn
        low, high = scoring.wilson(k, n, level)
        mirror_low, mirror_high = scoring.wilson(n - k, n, level)
        assert low == pytest.approx(1 - mirror_high, abs=1e-12)
        assert high == pytest.approx(1 - mirror_low, abs=1e-12)

    @pytest.mark.parametrize(("k", "n", "level"), [(0, 0, 0.95), (3, 2, 0.95), (1, 2, 1.0)])
    def test_refused(self, k: int, n: int, level: float) -> None:
        """No trials, more successes than trials, or a level of 1 are refused."""
        with pytest.raises(ValueError, match="wilson needs"):
            scoring.wilson(k, n, level)


# --------------------------------------------------------------------------- cells

CONDITIONS = conditions_of(P)
#: c0: s1/raw, c1: s1/gated, c2: s2/raw, c3: s2/gated.
C = [c.id for c in CONDITIONS]
#: Passes every check on scenario s2.
GOOD2: dict[str, Any] = {
    "summary": "quota overflow",
    "domains": ["quota"],
    "questions": 1,
    "verdict": "block",
}


def runs_of(
    condition: str, outcomes: list[dict[str, Any]], measures: list[float | None] | None = None
) -> list[tuple[str, str, dict[str, Any], float | None]]:
    """Scored slots of ``condition``: one per outcome, with its measure (2.0 unless given)."""
    ms = measures if measures is not None else [2.0] * len(outcomes)
    return [
        (f"{condition}-r{i:04d}-a1", condition, o, m)
        for i, (o, m) in enumerate(zip(outcomes, ms, strict=True))
    ]


def cells_of(
    runs: list[tuple[str, str, dict[str, Any], float | None]],
    superseded: dict[str, int] | None = None,
    p: Protocol = P,
) -> dict[str, Any]:
    """The cells of ``runs`` by condition ID, scored at 95 %."""
    _, cells = scoring.score_cells(p, conditions_of(p), runs, superseded or {}, 0.95)
    return {c.condition: c for c in cells}


class TestScoreCells:
    """Cells: per-check passes, rates and intervals, categories, agreement, median."""

    def test_run_scores_in_given_order(self) -> None:
        """Run scores come in the order of the runs given; cells in the conditions' order."""
        runs = runs_of(C[2], [GOOD2]) + runs_of(C[0], [BAD, GOOD])
        run_scores, cells = scoring.score_cells(P, CONDITIONS, runs, {}, 0.95)
        assert [r.attempt_id for r in run_scores] == [r[0] for r in runs]
        assert [r.category for r in run_scores] == ["catch", "miss", "catch"]
        assert [c.condition for c in cells] == C

    def test_no_runs(self) -> None:
        """A cell without valid runs: zero counts, nulls, agreement none, not unanimous, note."""
        cell = cells_of([])[C[0]]
        assert cell.valid_runs == 0
        assert all(
            (c.passed, c.runs, c.rate, c.low, c.high, c.unanimous)
            == (0, 0, None, None, None, False)
            for c in cell.checks
        )
        assert cell.categories == dict.fromkeys(
            ["catch", "abstain", "lucky_pass", "knowing_pass", "miss"], 0
        )
        assert (cell.agreement, cell.median_measure) == ("none", None)
        assert cell.note == scoring.FEW_RUNS_NOTE

    def test_one_run(self) -> None:
        """One valid run: passes counted, unanimous, but no rate, interval or median, and the
        note says why."""
        cell = cells_of(runs_of(C[0], [GOOD], [3.0]))[C[0]]
        assert cell.valid_runs == 1
        assert [(c.passed, c.runs, c.rate, c.unanimous) for c in cell.checks] == [
            (1, 1, None, True)
        ] * 4
        assert (cell.agreement, cell.median_measure) == ("unanimous", None)
        assert cell.note == "fewer than 2 valid runs: no rate, interval or median"

    def test_two_runs(self) -> None:
        """Two valid runs: rates, Wilson intervals and the median, and no note."""
        cell = cells_of(runs_of(C[0], [GOOD, BAD], [1.0, 4.0]))[C[0]]
        verdict = cell.checks[3]
        assert (verdict.passed, verdict.runs, verdict.rate) == (1, 2, 0.5)
        assert (verdict.low, verdict.high) == scoring.wilson(1, 2, 0.95)
        assert not verdict.unanimous
        assert (cell.agreement, cell.median_measure, cell.note) == ("split", 2.5, None)
        assert cell.categories == {
            "catch": 1,
            "abstain": 0,
            "lucky_pass": 0,
            "knowing_pass": 0,
            "miss": 1,
        }

    def test_six_runs(self) -> None:
        """Six runs, four passing one check: 4/6, its Wilson interval, the median measure."""
        lucky = {**BAD, "verdict": "block"}
        outcomes = [GOOD, GOOD, GOOD, lucky, BAD, lucky]
        cell = cells_of(runs_of(C[1], outcomes, [1.0, 2.0, 9.0, 3.0, None, 5.0]))[C[1]]
        by_name = {c.name: c for c in cell.checks}
        assert (by_name["verdict"].passed, by_name["verdict"].rate) == (5, 5 / 6)
        assert (by_name["concepts"].passed, by_name["concepts"].rate) == (3, 0.5)
        assert (by_name["concepts"].low, by_name["concepts"].high) == scoring.wilson(3, 6, 0.95)
        assert cell.categories == {
            "catch": 3,
            "abstain": 0,
            "lucky_pass": 2,
            "knowing_pass": 0,
            "miss": 1,
        }
        assert cell.median_measure == 3.0  # of the five non-null measures
        assert (cell.valid_runs, cell.agreement, cell.note) == (6, "split", None)

    def test_unanimous(self) -> None:
        """Every run with the same results and category: every check unanimous, cell unanimous."""
        cell = cells_of(runs_of(C[0], [BAD] * 3))[C[0]]
        assert all(c.unanimous and c.passed == 0 for c in cell.checks)
        assert cell.agreement == "unanimous"

    def test_split_on_category_alone(self) -> None:
        """Same check results but different categories (a values rule): split."""
        unsure = {**BAD, "verdict": "unsure"}
        cell = cells_of(runs_of(C[0], [BAD, unsure]))[C[0]]
        assert all(c.unanimous for c in cell.checks)
        assert cell.categories["abstain"] == cell.categories["miss"] == 1
        assert cell.agreement == "split"

    def test_median_needs_two_measures(self) -> None:
        """Two runs but one measure: no median."""
        assert cells_of(runs_of(C[0], [GOOD, GOOD], [1.0, None]))[C[0]].median_measure is None

    def test_stratum_and_superseded(self) -> None:
        """Each cell has its scenario's stratum and its superseded count."""
        cells = cells_of([], {C[2]: 3})
        assert [cells[c].stratum for c in C] == ["training", "training", "holdout", "holdout"]
        assert [cells[c].superseded_runs for c in C] == [0, 0, 3, 0]

    def test_no_taxonomy_no_categories(self) -> None:
        """Without a taxonomy: no categories, and agreement from the checks alone."""
        p = protocol(lambda raw: raw["scoring"].pop("taxonomy"))
        cell = cells_of(runs_of(C[0], [BAD, {**BAD, "verdict": "unsure"}]), p=p)[C[0]]
        assert cell.categories == {}
        assert cell.agreement == "unanimous"

    def test_no_scoring_refused(self) -> None:
        """A protocol without scoring has no cells to score."""
        p = protocol(lambda raw: raw.pop("scoring"))
        with pytest.raises(ValueError, match="no scoring"):
            scoring.score_cells(p, conditions_of(p), [], {}, 0.95)


# --------------------------------------------------------------------------- gates


def gate(
    name: str,
    runs: list[tuple[str, str, dict[str, Any], float | None]] | None = None,
    p: Protocol = P,
    losses: tuple[Loss, ...] = (),
    superseded: dict[str, int] | None = None,
) -> Any:
    """The gate ``name`` judged on ``runs`` (default: every control run failing the verdict
    check) of 24 slots."""
    if runs is None:
        runs = runs_of(C[0], [BAD] * 6) + runs_of(C[2], [BAD] * 6)
    _, cells = scoring.score_cells(p, conditions_of(p), runs, superseded or {}, 0.95)
    results = {g.name: g for g in scoring.gates(p, cells, losses, 24)}
    return results.get(name)


class TestGates:
    """Publish gates: only those declared, in order, each with its figures."""

    def test_order_and_selection(self) -> None:
        """Every declared gate in the order breadth, holdout, control-floor, versions,
        completeness; none without gates; only those declared."""
        _, cells = scoring.score_cells(P, CONDITIONS, [], {}, 0.95)
        names = [g.name for g in scoring.gates(P, cells, (), 24)]
        assert names == ["breadth", "holdout", "control-floor", "versions", "completeness"]
        assert scoring.gates(protocol(lambda raw: raw.pop("gates")), cells, (), 24) == ()

        def fewer(raw: dict[str, Any]) -> None:
            raw["gates"] = {"versions": False, "completeness": True}

        assert [g.name for g in scoring.gates(protocol(fewer), cells, (), 24)] == ["completeness"]

    def test_breadth_holds(self) -> None:
        """2 scenarios within [2, 10]: holds."""
        g = gate("breadth")
        assert (g.holds, g.detail) == (True, "2 scenario(s); between 2 and 10 required")

    def test_breadth_fails(self) -> None:
        """2 scenarios below a minimum of 3: fails, saying so."""
        p = protocol(lambda raw: raw["gates"]["breadth"].update(minimum=3))
        g = gate("breadth", p=p)
        assert (g.holds, g.detail) == (False, "2 scenario(s); between 3 and 10 required")

    def test_holdout_holds(self) -> None:
        """1 of 2 scenarios holdout meets a fraction of 0.5 exactly."""
        g = gate("holdout")
        assert (g.holds, g.detail) == (
            True,
            "1 of 2 scenario(s) holdout (0.5); at least 0.5 required",
        )

    def test_holdout_fails(self) -> None:
        """1 of 2 holdout is short of 0.6."""
        p = protocol(lambda raw: raw["gates"]["breadth"].update(holdout_fraction=0.6))
        g = gate("holdout", p=p)
        assert (g.holds, g.detail) == (
            False,
            "1 of 2 scenario(s) holdout (0.5); at least 0.6 required",
        )

    def test_control_floor_holds(self) -> None:
        """Every scenario's control runs fail the check often enough: holds; the detail gives
        the lowest scenario's figures. Runs of other arms do not count."""
        runs = runs_of(C[0], [BAD] * 5 + [GOOD]) + runs_of(C[2], [BAD] * 6)
        runs += runs_of(C[1], [GOOD] * 6) + runs_of(C[3], [GOOD2] * 6)
        g = gate("control-floor", runs)
        assert g.holds
        assert g.detail == (
            "control arm=raw fails check 'verdict' in at least 0.5 of its valid runs in all 2 "
            "scenario(s) (lowest: s1, 5 of 6)"
        )

    def test_control_floor_at_fraction(self) -> None:
        """Exactly the fraction failing is enough."""
        runs = runs_of(C[0], [BAD] * 3 + [GOOD] * 3) + runs_of(C[2], [BAD] * 6)
        assert gate("control-floor", runs).holds

    def test_control_floor_fails(self) -> None:
        """A scenario whose control mostly passes, and one without valid control runs, fail the
        gate; each is named with its figures."""
        runs = runs_of(C[0], [BAD] * 2 + [GOOD] * 4) + runs_of(C[3], [BAD] * 6)
        g = gate("control-floor", runs)
        assert not g.holds
        assert g.detail == (
            "control arm=raw must fail check 'verdict' in at least 0.5 of its valid runs in "
            "every scenario; s1: 2 of 6 control runs fail (0.3333); s2: no valid control runs"
        )

    def test_control_floor_pools_other_factors(self) -> None:
        """The control's cells are pooled over the other factors (here two models)."""

        def models(raw: dict[str, Any]) -> None:
            raw["matrix"].append({"name": "model", "levels": ["m1", "m2"]})

        p = protocol(models)
        ids = {
            (c.factors["scenario"], c.factors["arm"], c.factors["model"]): c.id
            for c in conditions_of(p)
        }
        runs = runs_of(ids["s1", "raw", "m1"], [BAD] * 6)
        runs += runs_of(ids["s1", "raw", "m2"], [GOOD] * 6)
        runs += runs_of(ids["s2", "raw", "m1"], [BAD] * 2)
        g = gate("control-floor", runs, p=p)
        assert g.holds
        assert "(lowest: s1, 6 of 12)" in g.detail

    def test_versions(self) -> None:
        """Always holds; the detail counts the superseded runs left out, by scenario."""
        g = gate("versions", superseded={C[0]: 2, C[1]: 1, C[3]: 4})
        assert (g.holds, g.detail) == (
            True,
            "no run of a superseded scenario version counted; 7 superseded run(s) excluded "
            "(s1: 3, s2: 4)",
        )
        g = gate("versions")
        assert g.detail == "no run of a superseded scenario version counted; none excluded"

    def test_completeness_holds(self) -> None:
        """Excluded slots (declared or superseded) do not fail completeness."""
        losses = (
            Loss("c00-r0001", "excluded", "declared", 0),
            Loss("c00-r0002", "excluded", "superseded-scenario-version:1", 1),
        )
        g = gate("completeness", losses=losses)
        assert (g.holds, g.detail) == (True, "0 of 24 slots failed")

    def test_completeness_fails(self) -> None:
        """Failed slots fail it; the detail groups them by cause, causes sorted."""
        losses = (
            Loss("c00-r0001", "failed", "timeout", 1),
            Loss("c00-r0002", "failed", "harness-exit:2", 1),
            Loss("c00-r0003", "excluded", "declared", 0),
            Loss("c01-r0001", "failed", "harness-exit:2", 2),
        )
        g = gate("completeness", losses=losses)
        assert (g.holds, g.detail) == (
            False,
            "3 of 24 slots failed: harness-exit:2 (2), timeout (1)",
        )


# --------------------------------------------------------------------------- protocol problems


def problems(change: Callable[[dict[str, Any]], object]) -> list[str]:
    """scoring_problems of the test protocol after ``change``, each as its text (``message @
    path``); every one's code is of the documented vocabulary."""
    found = scoring_rules.scoring_problems(protocol(change))
    assert all(p.code in PROBLEM_CODES for p in found), found
    return [str(p) for p in found]


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(raw: dict[str, Any]) -> None:
        target: Any = raw
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value

    return change


def _drop(path: list[Any]) -> Callable[[dict[str, Any]], None]:
    def change(raw: dict[str, Any]) -> None:
        target: Any = raw
        for step in path[:-1]:
            target = target[step]
        del target[path[-1]]

    return change


def _both(*changes: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def change(raw: dict[str, Any]) -> None:
        for c in changes:
            c(raw)

    return change


CHECK = ["scoring", "checks"]
EXPECT = ["scenarios", 0, "expect"]
RULES = ["scoring", "taxonomy", "rules"]
FLOOR = ["gates", "control_floor"]

PROBLEMS: list[tuple[str, Callable[[dict[str, Any]], None], list[str]]] = [
    (
        "duplicate scenario",
        _both(_set(["scenarios", 1, "id"], "s1"), _set(["matrix", 0, "levels"], ["s1"])),
        ["duplicate scenario id 's1' @ $.scenarios[1].id"],
    ),
    (
        "scoring without scenarios",
        _set(["scenarios"], []),
        ["scoring declared without scenarios @ $.scoring"],
    ),
    (
        "scenarios without scoring",
        _both(_drop(["scoring"]), _drop(["gates"])),
        ["scenarios declared without scoring @ $.scenarios"],
    ),
    (
        "gates without scoring",
        _both(_drop(["scoring"]), _set(["scenarios"], [])),
        ["gates judge scores: declared without scoring @ $.gates"],
    ),
    (
        "scenario factor not in matrix",
        _set(["scoring", "scenario_factor"], "task"),
        ["scenario factor 'task' is not a matrix factor @ $.scoring.scenario_factor"],
    ),
    (
        "level naming no scenario",
        _set(["matrix", 0, "levels"], ["s1", "s2", "s3", 4]),
        [
            "level 's3' of scenario factor 'scenario' names no scenario @ $.matrix[0].levels[2]",
            "level 4 of scenario factor 'scenario' names no scenario @ $.matrix[0].levels[3]",
        ],
    ),
    (
        "scenario not a level",
        _set(["matrix", 0, "levels"], ["s2"]),
        ["scenario 's1' is not a level of scenario factor 'scenario' @ $.scenarios[0].id"],
    ),
    (
        "duplicate check",
        _set([*CHECK, 1, "name"], "concepts"),
        ["duplicate check name 'concepts' @ $.scoring.checks[1].name"],
    ),
    (
        "concept coverage without keys",
        _set([*CHECK, 0, "keys"], []),
        ["a concept-coverage check needs keys @ $.scoring.checks[0].keys"],
    ),
    (
        "concept coverage with key",
        _set([*CHECK, 0, "key"], "summary"),
        ["a concept-coverage check takes keys, not key @ $.scoring.checks[0].key"],
    ),
    (
        "keyed check without key",
        _drop([*CHECK, 2, "key"]),
        ["an at-least check needs key @ $.scoring.checks[2].key"],
    ),
    (
        "keyed check with keys",
        _set([*CHECK, 1, "keys"], ["domains"]),
        ["an includes-all check takes key, not keys @ $.scoring.checks[1].keys"],
    ),
    (
        "missing expectation",
        _drop([*EXPECT, "verdict"]),
        ["scenario 's1' has no expectation 'verdict' for check 'verdict' @ $.scenarios[0].expect"],
    ),
    (
        "concepts not strings",
        _set([*EXPECT, "concepts"], ["alpha", 3]),
        [
            "expectation 'concepts' of check 'concepts' must be an array of strings (concepts), "
            "found array @ $.scenarios[0].expect.concepts"
        ],
    ),
    (
        "concepts not an array",
        _set([*EXPECT, "concepts"], "alpha"),
        [
            "expectation 'concepts' of check 'concepts' must be an array of strings (concepts), "
            "found string @ $.scenarios[0].expect.concepts"
        ],
    ),
    (
        "concept without tokens",
        _set([*EXPECT, "concepts"], ["alpha", "--", ""]),
        [
            "concept '--' has no letters or digits to match @ $.scenarios[0].expect.concepts[1]",
            "concept '' has no letters or digits to match @ $.scenarios[0].expect.concepts[2]",
        ],
    ),
    (
        "includes-all not an array",
        _set([*EXPECT, "domains"], {"auth": True}),
        [
            "expectation 'domains' of check 'domains' must be an array, found object "
            "@ $.scenarios[0].expect.domains"
        ],
    ),
    (
        "at-least a boolean",
        _set([*EXPECT, "min_questions"], True),
        [
            "expectation 'min_questions' of check 'questions' must be a number, found boolean "
            "@ $.scenarios[0].expect.min_questions"
        ],
    ),
    (
        "at-least a string",
        _set([*EXPECT, "min_questions"], "2"),
        [
            "expectation 'min_questions' of check 'questions' must be a number, found string "
            "@ $.scenarios[0].expect.min_questions"
        ],
    ),
    (
        "expectation key that is no identifier",
        _both(
            _set([*CHECK, 2, "expect"], "min questions"),
            _set([*EXPECT, "min questions"], None),
            _set(["scenarios", 1, "expect", "min questions"], 1),
        ),
        [
            "expectation 'min questions' of check 'questions' must be a number, found null "
            '@ $.scenarios[0].expect["min questions"]'
        ],
    ),
    (
        "duplicate category",
        _set(
            ["scoring", "taxonomy", "categories"],
            ["catch", "abstain", "lucky_pass", "knowing_pass", "miss", "catch"],
        ),
        ["duplicate category 'catch' @ $.scoring.taxonomy.categories[5]"],
    ),
    (
        "undeclared category",
        _set([*RULES, 1, "category"], "unsure"),
        ["category 'unsure' is not declared @ $.scoring.taxonomy.rules[1].category"],
    ),
    (
        "rule naming an unknown check",
        _set([*RULES, 2, "checks"], {"verdict": True, "tone": False}),
        ["unknown check 'tone' @ $.scoring.taxonomy.rules[2].checks.tone"],
    ),
    (
        "last rule with conditions",
        _set([*RULES, 4, "values"], {"verdict": "pass"}),
        [
            "the last rule must have no conditions, so that every run gets a category "
            "@ $.scoring.taxonomy.rules[4]"
        ],
    ),
    (
        "another rule without conditions",
        _drop([*RULES, 1, "values"]),
        [
            "only the last rule may have no conditions (the rules after it never apply) "
            "@ $.scoring.taxonomy.rules[1]"
        ],
    ),
    (
        "breadth minimum above maximum",
        _set(["gates", "breadth", "minimum"], 11),
        ["minimum is greater than maximum @ $.gates.breadth"],
    ),
    (
        "control floor factor not in matrix",
        _set([*FLOOR, "factor"], "model"),
        ["factor 'model' is not a matrix factor @ $.gates.control_floor.factor"],
    ),
    (
        "control level not in factor",
        _set([*FLOOR, "control"], "none"),
        ["control 'none' is not a level of factor 'arm' @ $.gates.control_floor.control"],
    ),
    (
        "control floor check not declared",
        _set([*FLOOR, "check"], "tone"),
        ["check 'tone' is not a declared check @ $.gates.control_floor.check"],
    ),
    (
        "outcome_value without key",
        _drop(["measure", "key"]),
        ["an outcome_value measure needs key @ $.measure.key"],
    ),
    (
        "episode_return with key",
        _set(["measure", "name"], "episode_return"),
        ["an episode_return measure takes no key @ $.measure.key"],
    ),
]


class TestScoringProblems:
    """Protocol problems of scenarios, scoring, gates and the measure key."""

    def test_consistent(self) -> None:
        """The test protocol and the shipped example protocol have no problems."""
        assert scoring_rules.scoring_problems(P) == []
        example = Path(__file__).resolve().parents[1] / "protocols" / "agent-gate-eval.json"
        raw = strip_comments(orjson.loads(example.read_bytes()))
        assert scoring_rules.scoring_problems(structure(raw, Protocol, what="protocol")) == []

    def test_unscored_protocol(self) -> None:
        """A protocol without scenarios, scoring or gates, measuring episode returns: none."""

        def plain(raw: dict[str, Any]) -> None:
            for key in ("scenarios", "scoring", "gates"):
                del raw[key]
            raw["measure"] = {"name": "episode_return", "description": "return"}

        assert problems(plain) == []

    @pytest.mark.parametrize(
        ("change", "expected"), [(c, e) for _, c, e in PROBLEMS], ids=[n for n, _, _ in PROBLEMS]
    )
    def test_problem(self, change: Callable[[dict[str, Any]], None], expected: list[str]) -> None:
        """Each inconsistency gives its message, ending in the JSON path, and nothing else."""
        assert problems(change) == expected

    def test_equals_takes_anything(self) -> None:
        """An equals check's expectation may be any JSON value."""
        for value in (None, True, 1, "x", [1], {"a": []}):
            assert problems(_set([*EXPECT, "verdict"], value)) == []
