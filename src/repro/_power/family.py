"""Which pilot plans a protocol (rule 1): the same protocol id and measure, each contrast's groups
selecting the same conditions, and for rates the same scoring."""

from __future__ import annotations

from collections.abc import Sequence

from repro._figures import condition_label
from repro._plan.sealing import conditions_of
from repro._power.pilot import compares_rate
from repro._protocol.contrasts import selected
from repro.errors import Problem
from repro.models import Condition, Group, Measure, Protocol


def _content(c: Condition) -> tuple[tuple[tuple[str, str | int], ...], str]:
    return tuple(sorted(c.factors.items())), c.participant


def _named(content: tuple[tuple[tuple[str, str | int], ...], str]) -> str:
    factors, participant = content
    return condition_label(dict(factors), participant)


def _measure(m: Measure) -> str:
    return m.name + (f" at {m.key!r}" if m.key is not None else "")


def family_problems(
    protocol: Protocol, pilot: Protocol, pilot_conditions: Sequence[Condition]
) -> list[Problem]:
    """Every way the pilot is not of the protocol's family (rule 1), each at the protocol's
    JSON path: another protocol id or measure, or a group that selects other conditions (by
    factor levels and participant) in the pilot's sealed conditions than in the protocol's;
    and when a contrast compares a rate, another scoring (:func:`scoring_problems`)."""
    problems = []
    if pilot.id != protocol.id:
        problems.append(
            Problem(
                "$.id",
                f"the pilot is of protocol {pilot.id!r}, not {protocol.id!r}",
                "inconsistent",
            )
        )
    mine, theirs = protocol.measure, pilot.measure
    if (mine.name, mine.key) != (theirs.name, theirs.key):
        problems.append(
            Problem(
                "$.measure",
                f"the pilot's measure is {_measure(theirs)}, not {_measure(mine)}",
                "inconsistent",
            )
        )
    if protocol.contrasts is None:
        return problems
    if any(compares_rate(c) for c in protocol.contrasts.family):
        problems += scoring_problems(protocol, pilot)
    conditions = conditions_of(protocol)
    for i, contrast in enumerate(protocol.contrasts.family):
        for side, group in (("a", contrast.a), ("b", contrast.b)):
            problems += _group_problem(
                group,
                conditions,
                pilot_conditions,
                f"{contrast.id!r}",
                f"$.contrasts.family[{i}].{side}",
            )
    return problems


def scoring_problems(protocol: Protocol, pilot: Protocol) -> list[Problem]:
    """Every way the pilot scores its runs otherwise than the protocol would (rule 1, for rate
    contrasts), each at the protocol's JSON path: a rate is the share of runs that pass a
    check or fall in a category, so the pilot must have the same scoring (checks, taxonomy and
    scenario factor) and, for each scenario both declare, the same expectations the checks
    compare outcomes with."""
    if pilot.scoring != protocol.scoring:
        said = "scores no runs" if pilot.scoring is None else "scores its runs otherwise"
        return [
            Problem(
                "$.scoring",
                f"the pilot {said}: a rate needs the protocol's own scoring",
                "inconsistent",
            )
        ]
    theirs = {s.id: s for s in pilot.scenarios}
    return [
        Problem(
            f"$.scenarios[{i}].expect",
            f"the pilot's scenario {s.id!r} expects otherwise: its rates are of other checks",
            "inconsistent",
        )
        for i, s in enumerate(protocol.scenarios)
        if s.id in theirs and theirs[s.id].expect != s.expect
    ]


def _group_problem(
    group: Group,
    conditions: Sequence[Condition],
    pilot_conditions: Sequence[Condition],
    contrast: str,
    where: str,
) -> list[Problem]:
    want = {_content(c) for c in selected(group, conditions)}
    have = {_content(c) for c in selected(group, pilot_conditions)}
    if want == have:
        return []
    parts = []
    if want - have:
        parts.append("the pilot lacks " + "; ".join(sorted(map(_named, want - have))))
    if have - want:
        parts.append("the pilot adds " + "; ".join(sorted(map(_named, have - want))))
    return [
        Problem(
            where,
            f"contrast {contrast}: the group selects other conditions: {', '.join(parts)}",
            "inconsistent",
        )
    ]
