"""Scores of a scored study: pure functions from the protocol and the valid runs' outcomes.

Every function here is deterministic (no I/O, no clock, no randomness): ``repro study`` and
``repro verify`` both derive scores.json with them, and the verifier compares the bytes it
re-derives with what the bundle stores. Checks are reported one by one and never collapsed into
one number: a single score would hide which expectation a run missed.

Values from outcomes and expectations are compared as JSON values (:func:`json_equal`): in
Python ``True == 1``, but a harness that reports ``true`` where ``1`` is expected has not
reported the expected value.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from repro._derive.scenarios import by_condition
from repro._stats.estimators import normal_quantile
from repro.models import (
    Agreement,
    CellScore,
    Check,
    CheckResult,
    CheckSummary,
    Condition,
    ControlFloorGate,
    GateResult,
    Loss,
    Protocol,
    RunScore,
    Scenario,
    Scoring,
    Taxonomy,
)
from repro.models._outcome import is_number, json_type, tokens

__all__ = [
    "FEW_RUNS_NOTE",
    "check_run",
    "classify",
    "gates",
    "is_number",
    "json_equal",
    "json_type",
    "score_cells",
    "score_run",
    "tokens",
    "wilson",
]

#: The note of a cell with too few valid runs for a rate, an interval or a median to mean much.
FEW_RUNS_NOTE = "fewer than 2 valid runs: no rate, interval or median"

_KEYED = ("includes-all", "at-least", "equals")


# --------------------------------------------------------------------------- JSON values


def json_equal(a: Any, b: Any) -> bool:
    """Whether two JSON values are equal as JSON values: a boolean equals only the same
    boolean (Python's ``True == 1`` does not carry over), numbers compare by value whether
    written as integers or not (JSON has one number type), arrays element by element (a tuple
    counts as an array), objects key by key."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and bool(a == b)


# --------------------------------------------------------------------------- one run


def _text_tokens(outcome: Mapping[str, Any], keys: Sequence[str]) -> frozenset[str]:
    # Each piece is tokenised alone, so two pieces never run together into one token.
    found: set[str] = set()
    for key in keys:
        value = outcome.get(key)
        pieces = value if isinstance(value, list) else [value]
        for piece in pieces:
            if isinstance(piece, str):
                found |= tokens(piece)
    return frozenset(found)


def _required_key(check: Check) -> str:
    if check.key is None:
        raise ValueError(f"check {check.name!r} ({check.kind}) has no key")
    return check.key


def _concept_coverage(check: Check, outcome: Mapping[str, Any], concepts: Any) -> CheckResult:
    seen = _text_tokens(outcome, check.keys)
    covered: list[str] = []
    missing: list[str] = []
    for concept in concepts:
        wanted = tokens(concept)
        hits = len(wanted & seen)
        (covered if 2 * hits >= len(wanted) else missing).append(concept)
    return CheckResult(
        name=check.name,
        passed=not missing,
        detail={"covered": covered, "missing": missing},
    )


def _includes_all(check: Check, outcome: Mapping[str, Any], items: Any) -> CheckResult:
    key = _required_key(check)
    if key not in outcome or not isinstance(outcome[key], list):
        found = json_type(outcome[key]) if key in outcome else "absent"
        return CheckResult(
            name=check.name, passed=False, detail={"missing": list(items), "found": found}
        )
    have = outcome[key]
    missing = [item for item in items if not any(json_equal(item, x) for x in have)]
    return CheckResult(name=check.name, passed=not missing, detail={"missing": missing})


def _at_least(check: Check, outcome: Mapping[str, Any], minimum: Any) -> CheckResult:
    value = outcome.get(_required_key(check))
    count = len(value) if isinstance(value, list) else value if is_number(value) else None
    return CheckResult(
        name=check.name,
        passed=count is not None and count >= minimum,
        detail={"count": count, "minimum": minimum},
    )


def _equals(check: Check, outcome: Mapping[str, Any], expected: Any) -> CheckResult:
    found = outcome.get(_required_key(check))
    return CheckResult(
        name=check.name,
        passed=json_equal(found, expected),
        detail={"found": found, "expected": expected},
    )


_KINDS = {
    "concept-coverage": _concept_coverage,
    "includes-all": _includes_all,
    "at-least": _at_least,
    "equals": _equals,
}


def check_run(check: Check, outcome: dict[str, Any], expect: dict[str, Any]) -> CheckResult:
    """One check of one run's ``outcome`` against its scenario's expectation
    ``expect[check.expect]`` (which :func:`repro._protocol.scoring_rules.scoring_problems` makes
    sure is there, of the right type):

    - ``concept-coverage``: a concept is covered when at least half of its distinct tokens
      (``2 * hits >= n``) are among the tokens of the outcome's strings at ``check.keys`` (a
      string, or the strings of an array; anything else is no text). Half, not all: a summary
      that says "token expires" has the concept "token expiry" in mind. Detail: the concepts
      covered and missing, in the expectation's order.
    - ``includes-all``: every expected item is in the outcome's array at ``check.key``. Detail:
      the items missing, and what was found when there is no array (its JSON type, or
      ``absent``).
    - ``at-least``: the outcome's number at ``check.key`` (an array's length) is at least the
      expected number. Detail: the count (null when there is no number or array) and the
      minimum.
    - ``equals``: the outcome's value at ``check.key`` equals the expected value as JSON (an
      absent key reads as null). Detail: what was found and what was expected.
    """
    return _KINDS[check.kind](check, outcome, expect[check.expect])


def classify(taxonomy: Taxonomy, outcome: dict[str, Any], results: Mapping[str, bool]) -> str:
    """The category of a run: that of the first rule whose named checks all had the given
    result (``results``: check name to passed) and whose named outcome keys all hold the given
    value as JSON (an absent key reads as null). First match wins, so a rule table reads top
    down like the decision it records; :func:`repro._protocol.scoring_rules.scoring_problems`
    makes sure the last rule has no conditions, so every run gets a category."""
    for rule in taxonomy.rules:
        if all(results.get(name) is want for name, want in rule.checks.items()) and all(
            json_equal(outcome.get(key), value) for key, value in rule.values.items()
        ):
            return rule.category
    raise ValueError(f"taxonomy {taxonomy.name!r}: no rule matches (the last must match all)")


def score_run(
    scoring: Scoring, scenario: Scenario, attempt_id: str, condition: str, outcome: dict[str, Any]
) -> RunScore:
    """The scores of one valid run: every check in the protocol's order and, with a taxonomy,
    the run's category."""
    results = tuple(check_run(c, outcome, scenario.expect) for c in scoring.checks)
    category = None
    if scoring.taxonomy is not None:
        passed = {r.name: r.passed for r in results}
        category = classify(scoring.taxonomy, outcome, passed)
    return RunScore(attempt_id=attempt_id, condition=condition, checks=results, category=category)


# --------------------------------------------------------------------------- intervals


def wilson(k: int, n: int, level: float) -> tuple[float, float]:
    """The Wilson score interval of ``k`` successes in ``n`` trials at confidence ``level``.

    Wilson rather than the normal approximation: with the few runs a cell has, and rates at or
    near 0 and 1, the normal interval collapses to a point or leaves [0, 1]; Wilson's stays
    inside and keeps some width. The bounds at ``k == 0`` and ``k == n`` are exactly 0 and 1.
    """
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"wilson needs 0 <= k <= n and n >= 1, not k={k}, n={n}")
    if not 0 < level < 1:
        raise ValueError(f"wilson needs a level in (0, 1), not {level}")
    z = normal_quantile(level)
    p = k / n
    z2n = z * z / n
    center = (p + z2n / 2) / (1 + z2n)
    half = z * math.sqrt(p * (1 - p) / n + z2n / (4 * n)) / (1 + z2n)
    low = 0.0 if k == 0 else max(0.0, center - half)
    high = 1.0 if k == n else min(1.0, center + half)
    return low, high


# --------------------------------------------------------------------------- cells


def _summary(name: str, results: Sequence[bool], level: float) -> CheckSummary:
    n = len(results)
    passed = sum(results)
    rate = low = high = None
    if n >= 2:
        rate = passed / n
        low, high = wilson(passed, n, level)
    return CheckSummary(
        name=name,
        passed=passed,
        runs=n,
        rate=rate,
        low=low,
        high=high,
        unanimous=n > 0 and len(set(results)) == 1,
    )


def _cell(
    scoring: Scoring,
    condition: Condition,
    scenario: Scenario,
    scored: Sequence[tuple[RunScore, float | None]],
    superseded: int,
    level: float,
) -> CellScore:
    n = len(scored)
    checks = tuple(
        _summary(c.name, [s.checks[i].passed for s, _ in scored], level)
        for i, c in enumerate(scoring.checks)
    )
    categories: dict[str, int] = {}
    if scoring.taxonomy is not None:
        counts = Counter(s.category for s, _ in scored)
        categories = {c: counts[c] for c in scoring.taxonomy.categories}
    agreement: Agreement = "none"
    if n:
        same = all(c.unanimous for c in checks) and len({s.category for s, _ in scored}) == 1
        agreement = "unanimous" if same else "split"
    measures = [m for _, m in scored if m is not None]
    return CellScore(
        condition=condition.id,
        factors=condition.factors,
        participant=condition.participant,
        stratum=scenario.stratum,
        valid_runs=n,
        superseded_runs=superseded,
        checks=checks,
        categories=categories,
        agreement=agreement,
        median_measure=float(statistics.median(measures)) if len(measures) >= 2 else None,
        note=FEW_RUNS_NOTE if n < 2 else None,
    )


def score_cells(
    protocol: Protocol,
    conditions: Sequence[Condition],
    runs: Sequence[tuple[str, str, dict[str, Any], float | None]],
    superseded: Mapping[str, int],
    level: float,
) -> tuple[tuple[RunScore, ...], tuple[CellScore, ...]]:
    """Every valid run scored, and the cells, for scores.json.

    ``runs`` are the slots that ended valid with an outcome, in sealed order, as (attempt ID,
    condition ID, outcome, measure); ``superseded`` counts each condition's runs excluded for a
    superseded scenario version. The run scores come in the order of ``runs``, the cells in
    the order of ``conditions``, one per condition whether it has runs or not: a cell without
    runs is reported, not dropped. Each cell gets its scenario's stratum, every check's passes
    (with the rate and its Wilson interval at ``level`` from 2 valid runs on), every taxonomy
    category's count (zeros included, so every cell has the same columns), its agreement, and
    the median of its measures (from 2 on)."""
    scoring = protocol.scoring
    if scoring is None:
        raise ValueError(f"protocol {protocol.id!r} declares no scoring")
    scenarios = by_condition(protocol, conditions)
    run_scores: list[RunScore] = []
    per_cell: dict[str, list[tuple[RunScore, float | None]]] = defaultdict(list)
    for attempt, condition, outcome, measure in runs:
        score = score_run(scoring, scenarios[condition], attempt, condition, outcome)
        run_scores.append(score)
        per_cell[condition].append((score, measure))
    cells = tuple(
        _cell(
            scoring,
            c,
            scenarios[c.id],
            per_cell.get(c.id, []),
            superseded.get(c.id, 0),
            level,
        )
        for c in conditions
    )
    return tuple(run_scores), cells


# --------------------------------------------------------------------------- gates


def _scenario_level(protocol: Protocol, cell: CellScore) -> Any:
    factor = protocol.scoring.scenario_factor if protocol.scoring is not None else "scenario"
    return cell.factors.get(factor)


def _breadth(protocol: Protocol, minimum: int, maximum: int, fraction: float) -> list[GateResult]:
    n = len(protocol.scenarios)
    held = sum(s.stratum == "holdout" for s in protocol.scenarios)
    share = held / n if n else 0.0
    return [
        GateResult(
            name="breadth",
            holds=minimum <= n <= maximum,
            detail=f"{n} scenario(s); between {minimum} and {maximum} required",
        ),
        GateResult(
            name="holdout",
            holds=n > 0 and share >= fraction,
            detail=f"{held} of {n} scenario(s) holdout ({share:.4g}); "
            f"at least {fraction:.4g} required",
        ),
    ]


def _control_floor(
    protocol: Protocol, floor: ControlFloorGate, cells: Sequence[CellScore]
) -> GateResult:
    runs: Counter[Any] = Counter()
    failing: Counter[Any] = Counter()
    for cell in cells:
        if cell.factors.get(floor.factor) != floor.control:
            continue
        summary = next(c for c in cell.checks if c.name == floor.check)
        scenario = _scenario_level(protocol, cell)
        runs[scenario] += summary.runs
        failing[scenario] += summary.runs - summary.passed
    figures: list[tuple[str, int, int]] = [
        (s.id, failing[s.id], runs[s.id]) for s in protocol.scenarios
    ]
    short = [(sid, f, n) for sid, f, n in figures if n == 0 or f / n < floor.fraction]
    control = f"control {floor.factor}={floor.control}"
    if short:
        named = "; ".join(
            f"{sid}: no valid control runs"
            if n == 0
            else f"{sid}: {f} of {n} control runs fail ({f / n:.4g})"
            for sid, f, n in short
        )
        detail = (
            f"{control} must fail check {floor.check!r} in at least {floor.fraction:.4g} "
            f"of its valid runs in every scenario; {named}"
        )
    else:
        sid, f, n = min(figures, key=lambda x: x[1] / x[2])
        detail = (
            f"{control} fails check {floor.check!r} in at least {floor.fraction:.4g} of its "
            f"valid runs in all {len(figures)} scenario(s) (lowest: {sid}, {f} of {n})"
        )
    return GateResult(name="control-floor", holds=not short, detail=detail)


def _versions(protocol: Protocol, cells: Sequence[CellScore]) -> GateResult:
    per_scenario: Counter[Any] = Counter()
    for cell in cells:
        per_scenario[_scenario_level(protocol, cell)] += cell.superseded_runs
    total = sum(per_scenario.values())
    detail = "no run of a superseded scenario version counted"
    if total:
        named = ", ".join(
            f"{s.id}: {per_scenario[s.id]}" for s in protocol.scenarios if per_scenario[s.id]
        )
        detail += f"; {total} superseded run(s) excluded ({named})"
    else:
        detail += "; none excluded"
    return GateResult(name="versions", holds=True, detail=detail)


def _completeness(losses: Sequence[Loss], slots: int) -> GateResult:
    causes = Counter(loss.cause for loss in losses if loss.outcome == "failed")
    failed = sum(causes.values())
    detail = f"{failed} of {slots} slots failed"
    if failed:
        detail += ": " + ", ".join(f"{cause} ({causes[cause]})" for cause in sorted(causes))
    return GateResult(name="completeness", holds=not failed, detail=detail)


def gates(
    protocol: Protocol, cells: Sequence[CellScore], losses: Sequence[Loss], slots: int
) -> tuple[GateResult, ...]:
    """The publish gates ``protocol`` declares, judged on the cells of its scores, the losses
    of its slots and their number, in the order breadth, holdout, control-floor, versions,
    completeness. Each result carries the figures it was judged on, so a refusal says what
    to fix.

    - breadth: the number of scenarios is between the minimum and the maximum;
    - holdout: holdout scenarios make up at least ``holdout_fraction`` of all;
    - control-floor: in every scenario, the control level's cells (pooled over the other
      factors) fail the check in at least ``fraction`` of their valid runs; a scenario
      without valid control runs shows nothing, and fails;
    - versions: no run of a superseded scenario version counted, which holds by construction
      (such runs are recorded excluded); the detail says how many were left out, by scenario;
    - completeness: no slot failed; the detail groups failed slots by cause.
    """
    declared = protocol.gates
    if declared is None:
        return ()
    out: list[GateResult] = []
    if declared.breadth is not None:
        b = declared.breadth
        out += _breadth(protocol, b.minimum, b.maximum, b.holdout_fraction)
    if declared.control_floor is not None:
        out.append(_control_floor(protocol, declared.control_floor, cells))
    if declared.versions:
        out.append(_versions(protocol, cells))
    if declared.completeness:
        out.append(_completeness(losses, slots))
    return tuple(out)
