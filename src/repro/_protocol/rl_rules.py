"""What an ``rl`` section may ask of a protocol, and which condition is each participant's run on
each task: one definition, read by the protocol's consistency rules (a section that does not fit
the matrix is refused before anything is written) and by the derivation of rl-aggregates.json,
in the study and in verify.

The tasks are the levels of ``rl.task_factor``; the algorithms are the participants. Every
other factor of the matrix must have one level, so that each (task, participant) is exactly one
condition (:func:`task_conditions`): a factor of several levels would be neither a task nor an
algorithm, and grouping or averaging over it would be a choice the protocol did not make.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from repro.errors import Problem

if TYPE_CHECKING:  # annotations alone: the verifier's limits import this module
    from repro.models import RL, Condition, Level, Protocol

__all__ = ["rl_problems", "task_conditions", "tasks_of"]

#: The seeds NumPy's legacy RandomState takes, which the ``rliable`` sampler draws from.
_LEGACY_SEEDS = 2**32


def tasks_of(p: Protocol, rl: RL) -> tuple[Level, ...]:
    """The tasks: the levels of the task factor, in the matrix's order (none if it is not a
    factor of the matrix, which the rules refuse)."""
    return next((f.levels for f in p.matrix if f.name == rl.task_factor), ())


def task_conditions(
    rl: RL, tasks: Sequence[Level], participant: str, conditions: Sequence[Condition]
) -> tuple[Condition, ...]:
    """``participant``'s condition on each task, in the order of ``tasks``: the one condition of
    the sealed ``conditions`` with that participant and that level of the task factor."""
    by_task = {
        c.factors[rl.task_factor]: c
        for c in conditions
        if c.participant == participant and rl.task_factor in c.factors
    }
    return tuple(by_task[task] for task in tasks)


def _matrix_problems(p: Protocol, rl: RL) -> list[Problem]:
    """The task factor is a factor of the matrix; every other factor has one level."""
    names = [f.name for f in p.matrix]
    if rl.task_factor not in names:
        return [Problem("$.rl.task_factor", f"unknown factor {rl.task_factor!r}", "unknown-name")]
    return [
        Problem(
            f"$.matrix[{i}].levels",
            f"factor {f.name!r} has {len(f.levels)} levels: the tasks are the levels of "
            f"{rl.task_factor!r} and the algorithms the participants, so every other factor must "
            f"have one level",
            "inconsistent",
        )
        for i, f in enumerate(p.matrix)
        if f.name != rl.task_factor and len(f.levels) != 1
    ]


def _normalization_problems(rl: RL, tasks: Sequence[Level]) -> list[Problem]:
    """None, or one scale per task, each with its low below its high."""
    problems: list[Problem] = []
    levels, seen = set(tasks), set()
    for i, scale in enumerate(rl.normalization):
        where = f"$.rl.normalization[{i}]"
        if scale.task not in levels:
            problems.append(
                Problem(
                    f"{where}.task",
                    f"{scale.task!r} is not a level of {rl.task_factor!r}",
                    "unknown-name",
                )
            )
        elif scale.task in seen:
            problems.append(
                Problem(f"{where}.task", f"task {scale.task!r} scaled twice", "duplicate")
            )
        seen.add(scale.task)
        if not scale.low < scale.high:
            problems.append(Problem(where, "low must be below high", "inconsistent"))
    missing = [t for t in tasks if t not in seen]
    if rl.normalization and missing:
        named = ", ".join(repr(t) for t in missing)
        problems.append(
            Problem(
                "$.rl.normalization",
                f"no scale for task(s) {named}: scale every task or none",
                "inconsistent",
            )
        )
    return problems


def _estimate_problems(p: Protocol, rl: RL) -> list[Problem]:
    """Each statistic asked once, gamma for the optimality gap only, each improvement of two
    different participants asked once, finite taus, and something to derive."""
    problems: list[Problem] = []
    for i, name in enumerate(rl.statistics):
        if rl.statistics.index(name) != i:
            problems.append(
                Problem(f"$.rl.statistics[{i}]", f"statistic {name!r} asked twice", "duplicate")
            )
    if rl.gamma != 1.0 and "optimality-gap" not in rl.statistics:
        problems.append(
            Problem(
                "$.rl.gamma",
                "gamma is the optimality gap's, which is not asked for",
                "inconsistent",
            )
        )
    participants = {q.id for q in p.participants}
    first: dict[tuple[str, str], int] = {}
    for i, (x, y) in enumerate((pair.x, pair.y) for pair in rl.improvements):
        where = f"$.rl.improvements[{i}]"
        for side, who in (("x", x), ("y", y)):
            if who not in participants:
                problems.append(
                    Problem(f"{where}.{side}", f"unknown participant {who!r}", "unknown-name")
                )
        if x == y:
            problems.append(
                Problem(where, "an improvement compares two participants, not one", "inconsistent")
            )
        elif first.setdefault((x, y), i) != i:
            problems.append(
                Problem(where, f"improvement of {x!r} over {y!r} asked twice", "duplicate")
            )
    for i, tau in enumerate(rl.taus):
        if not math.isfinite(tau):
            problems.append(Problem(f"$.rl.taus[{i}]", "a tau must be finite", "not-allowed"))
    if not (rl.statistics or rl.improvements or rl.taus):
        problems.append(
            Problem("$.rl", "asks for no statistic, improvement or profile", "missing-field")
        )
    return problems


def rl_problems(p: Protocol) -> list[Problem]:
    """Every way the protocol's ``rl`` section does not fit its matrix and participants, each
    with its JSON path."""
    rl = p.rl
    if rl is None:
        return []
    problems = _matrix_problems(p, rl)
    problems += _normalization_problems(rl, tasks_of(p, rl))
    problems += _estimate_problems(p, rl)
    if rl.bootstrap.sampler == "rliable" and rl.bootstrap.seed >= _LEGACY_SEEDS:
        problems.append(
            Problem(
                "$.rl.bootstrap.seed",
                "the rliable sampler's RandomState takes a seed below 2**32",
                "inconsistent",
            )
        )
    return problems
