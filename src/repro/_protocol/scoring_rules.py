"""The consistency rules of a scored protocol: its scenario factor names scenarios, its checks and
expectations agree, its taxonomy and gates name checks that exist, its measure is an outcome's
number; each problem with its JSON path. Applied by
:func:`repro._protocol.rules.check_consistency` with every other rule."""

from __future__ import annotations

import re
from typing import Any

from repro.errors import Problem
from repro.models import (
    Check,
    Protocol,
    Scoring,
    Taxonomy,
)
from repro.models._outcome import VERSION_KEY, is_number, json_type, tokens

__all__ = ["outcome_reads", "outcome_schema_problems", "scoring_problems"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _member(key: str) -> str:
    """A JSON path step to member ``key`` of an object."""
    return f".{key}" if _NAME.fullmatch(key) else f"[{_quoted(key)}]"


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _expectation_problem(check: Check, value: Any) -> str | None:
    """What is wrong with a scenario's expectation for ``check``, if anything."""
    if check.kind == "concept-coverage":
        if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
            return f"must be an array of strings (concepts), found {json_type(value)}"
    elif check.kind == "includes-all":
        if not isinstance(value, list):
            return f"must be an array, found {json_type(value)}"
    elif check.kind == "at-least" and not is_number(value):
        return f"must be a number, found {json_type(value)}"
    return None


def _scenario_problems(p: Protocol, scoring: Scoring) -> list[Problem]:
    problems: list[Problem] = []
    name = scoring.scenario_factor
    ids = {s.id for s in p.scenarios}
    factor = next((i for i, f in enumerate(p.matrix) if f.name == name), None)
    if factor is None:
        problems.append(
            Problem(
                "$.scoring.scenario_factor",
                f"scenario factor {name!r} is not a matrix factor",
                "unknown-name",
            )
        )
        return problems
    levels = p.matrix[factor].levels
    for j, level in enumerate(levels):
        if level not in ids:
            problems.append(
                Problem(
                    f"$.matrix[{factor}].levels[{j}]",
                    f"level {level!r} of scenario factor {name!r} names no scenario",
                    "unknown-name",
                )
            )
    for k, scenario in enumerate(p.scenarios):
        if scenario.id not in levels:
            problems.append(
                Problem(
                    f"$.scenarios[{k}].id",
                    f"scenario {scenario.id!r} is not a level of scenario factor {name!r}",
                    "unknown-name",
                )
            )
    return problems


def _check_problems(scoring: Scoring) -> list[Problem]:
    problems: list[Problem] = []
    seen: set[str] = set()
    for i, check in enumerate(scoring.checks):
        where = f"$.scoring.checks[{i}]"
        if check.name in seen:
            problems.append(
                Problem(f"{where}.name", f"duplicate check name {check.name!r}", "duplicate")
            )
        seen.add(check.name)
        if check.kind == "concept-coverage":
            if not check.keys:
                problems.append(
                    Problem(f"{where}.keys", "a concept-coverage check needs keys", "missing-field")
                )
            if check.key is not None:
                problems.append(
                    Problem(
                        f"{where}.key",
                        "a concept-coverage check takes keys, not key",
                        "inconsistent",
                    )
                )
        else:
            if check.key is None:
                problems.append(
                    Problem(f"{where}.key", f"an {check.kind} check needs key", "missing-field")
                )
            if check.keys:
                problems.append(
                    Problem(
                        f"{where}.keys",
                        f"an {check.kind} check takes key, not keys",
                        "inconsistent",
                    )
                )
    return problems


def _expect_problems(p: Protocol, scoring: Scoring) -> list[Problem]:
    problems: list[Problem] = []
    for k, scenario in enumerate(p.scenarios):
        for check in scoring.checks:
            where = f"$.scenarios[{k}].expect"
            if check.expect not in scenario.expect:
                problems.append(
                    Problem(
                        where,
                        f"scenario {scenario.id!r} has no expectation {check.expect!r} "
                        f"for check {check.name!r}",
                        "inconsistent",
                    )
                )
                continue
            value = scenario.expect[check.expect]
            where += _member(check.expect)
            wrong = _expectation_problem(check, value)
            if wrong is not None:
                problems.append(
                    Problem(
                        where,
                        f"expectation {check.expect!r} of check {check.name!r} {wrong}",
                        "inconsistent",
                    )
                )
            elif check.kind == "concept-coverage":
                problems += [
                    Problem(
                        f"{where}[{j}]",
                        f"concept {concept!r} has no letters or digits to match",
                        "inconsistent",
                    )
                    for j, concept in enumerate(value)
                    if not tokens(concept)
                ]
    return problems


def _taxonomy_problems(taxonomy: Taxonomy, checks: set[str]) -> list[Problem]:
    problems: list[Problem] = []
    where = "$.scoring.taxonomy"
    seen: set[str] = set()
    for i, category in enumerate(taxonomy.categories):
        if category in seen:
            problems.append(
                Problem(f"{where}.categories[{i}]", f"duplicate category {category!r}", "duplicate")
            )
        seen.add(category)
    last = len(taxonomy.rules) - 1
    for i, rule in enumerate(taxonomy.rules):
        here = f"{where}.rules[{i}]"
        if rule.category not in seen:
            problems.append(
                Problem(
                    f"{here}.category",
                    f"category {rule.category!r} is not declared",
                    "unknown-name",
                )
            )
        problems += [
            Problem(f"{here}.checks{_member(name)}", f"unknown check {name!r}", "unknown-name")
            for name in rule.checks
            if name not in checks
        ]
        unconditional = not rule.checks and not rule.values
        if i == last and not unconditional:
            problems.append(
                Problem(
                    here,
                    "the last rule must have no conditions, so that every run gets a category",
                    "inconsistent",
                )
            )
        if i != last and unconditional:
            problems.append(
                Problem(
                    here,
                    "only the last rule may have no conditions (the rules after it never apply)",
                    "inconsistent",
                )
            )
    return problems


def _gate_problems(p: Protocol, checks: set[str]) -> list[Problem]:
    problems: list[Problem] = []
    if p.gates is None:
        return problems
    if p.scoring is None:
        problems.append(
            Problem("$.gates", "gates judge scores: declared without scoring", "inconsistent")
        )
    breadth = p.gates.breadth
    if breadth is not None and breadth.minimum > breadth.maximum:
        problems.append(
            Problem("$.gates.breadth", "minimum is greater than maximum", "inconsistent")
        )
    floor = p.gates.control_floor
    if floor is not None:
        where = "$.gates.control_floor"
        factor = next((f for f in p.matrix if f.name == floor.factor), None)
        if factor is None:
            problems.append(
                Problem(
                    f"{where}.factor",
                    f"factor {floor.factor!r} is not a matrix factor",
                    "unknown-name",
                )
            )
        elif floor.control not in factor.levels:
            problems.append(
                Problem(
                    f"{where}.control",
                    f"control {floor.control!r} is not a level of factor {floor.factor!r}",
                    "unknown-name",
                )
            )
        if p.scoring is not None and floor.check not in checks:
            problems.append(
                Problem(
                    f"{where}.check",
                    f"check {floor.check!r} is not a declared check",
                    "inconsistent",
                )
            )
    return problems


def _measure_problems(p: Protocol) -> list[Problem]:
    m = p.measure
    if m.name == "outcome_value" and m.key is None:
        return [Problem("$.measure.key", "an outcome_value measure needs key", "missing-field")]
    if m.name == "episode_return" and m.key is not None:
        return [Problem("$.measure.key", "an episode_return measure takes no key", "inconsistent")]
    return []


def scoring_problems(protocol: Protocol) -> list[Problem]:
    """Every inconsistency of ``protocol``'s scenarios, scoring, gates and measure key that
    each field allows alone, as problems (:class:`repro.errors.Problem`) like those of
    :func:`repro._protocol.rules.check_consistency`.

    Everything the scoring functions assume is checked here, before anything runs, so that a
    run is never scored against an expectation that is missing or of the wrong type, and no
    run goes without a category: duplicate scenario IDs; scoring without scenarios or
    scenarios without scoring; a scenario factor that is not a matrix factor or whose levels
    are not exactly the scenario IDs; duplicate check names, and ``key``/``keys`` as each
    check kind needs; every scenario's expectation for every check, of the type its kind
    needs (a concept without letters or digits could only be covered vacuously); the
    taxonomy's categories and rules (only the last rule, and it alone, without conditions);
    the gates (declared with scoring, breadth bounds in order, the control floor's factor,
    level and check declared); and the measure's key (``outcome_value`` needs one,
    ``episode_return`` takes none)."""
    p = protocol
    problems: list[Problem] = []
    seen: set[str] = set()
    for k, scenario in enumerate(p.scenarios):
        if scenario.id in seen:
            problems.append(
                Problem(
                    f"$.scenarios[{k}].id", f"duplicate scenario id {scenario.id!r}", "duplicate"
                )
            )
        seen.add(scenario.id)
    scoring = p.scoring
    if scoring is not None and not p.scenarios:
        problems.append(Problem("$.scoring", "scoring declared without scenarios", "inconsistent"))
    if scoring is None and p.scenarios:
        problems.append(
            Problem("$.scenarios", "scenarios declared without scoring", "inconsistent")
        )
    checks = {c.name for c in scoring.checks} if scoring is not None else set()
    if scoring is not None:
        if p.scenarios:
            problems += _scenario_problems(p, scoring)
        problems += _check_problems(scoring)
        problems += _expect_problems(p, scoring)
        if scoring.taxonomy is not None:
            problems += _taxonomy_problems(scoring.taxonomy, checks)
    problems += _gate_problems(p, checks)
    problems += _measure_problems(p)
    return problems


def outcome_reads(protocol: Protocol) -> list[tuple[str, str]]:
    """Every outcome key a scored protocol's rules read, each with the JSON path of the rule
    that reads it, in protocol order: the scenario version (``scenario_version``, read for
    every run of a protocol that declares scenarios), each check's ``key`` or ``keys``, each
    taxonomy rule's ``values``, and an ``outcome_value`` measure's ``key``. Empty for an
    unscored protocol. The control floor of ``gates`` reads a check's result, so the check's
    keys; the reproduction ``criteria`` read published figures, no outcome."""
    p = protocol
    if p.scoring is None:
        return []
    reads: list[tuple[str, str]] = []
    if p.scenarios:
        reads.append((VERSION_KEY, "$.scenarios"))
    for i, check in enumerate(p.scoring.checks):
        where = f"$.scoring.checks[{i}]"
        if check.key is not None:
            reads.append((check.key, f"{where}.key"))
        reads += [(key, f"{where}.keys[{j}]") for j, key in enumerate(check.keys)]
    if p.scoring.taxonomy is not None:
        for i, rule in enumerate(p.scoring.taxonomy.rules):
            where = f"$.scoring.taxonomy.rules[{i}].values"
            reads += [(key, f"{where}{_member(key)}") for key in rule.values]
    if p.measure.name == "outcome_value" and p.measure.key is not None:
        reads.append((p.measure.key, "$.measure.key"))
    return reads


def outcome_schema_problems(protocol: Protocol, schema: Any, where: str) -> list[Problem]:
    """Why ``schema`` (the JSON Schema every outcome must satisfy, at JSON path ``where``;
    None when the protocol gives none) cannot promise the outcome keys a scored ``protocol``'s
    rules read (:func:`outcome_reads`): a scored protocol needs a schema, and its top-level
    ``required`` must name every key read, or a harness could pass the check and then leave
    every run without a score (an outcome with no ``scenario_version`` is invalid:
    ``outcome-scenario-version-missing``). Each problem names the rule that reads the key, at
    the schema's JSON path (or its ``required``); an unscored protocol has none."""
    reads = outcome_reads(protocol)
    if not reads:
        return []
    if schema is None:
        keys = ", ".join(sorted({key for key, _ in reads}))
        return [
            Problem(
                where,
                f"a scored protocol needs an outcome_schema whose required names the outcome "
                f"keys its rules read ({keys}), so that a harness that leaves one out fails its "
                "runs as outcome-schema, not unscored",
                "missing-field",
            )
        ]
    required = schema.get("required", []) if isinstance(schema, dict) else []
    named = (
        {key for key in required if isinstance(key, str)} if isinstance(required, list) else set()
    )
    return [
        Problem(
            f"{where}.required",
            f"outcome_schema does not require {key!r}, which {rule} reads from every outcome",
            "inconsistent",
        )
        for key, rule in reads
        if key not in named
    ]
