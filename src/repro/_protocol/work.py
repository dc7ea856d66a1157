"""What re-deriving a protocol's statistics costs, counted from the protocol alone before anything
runs: one pure function, :func:`derivation_work`, read by the protocol's consistency rules (a
protocol that asks more than :data:`MAX_DERIVATION_WORK` is refused before anything is written)
and by verify (a bundle whose protocol asks more than its limit ``max_derivation_work`` is named,
and nothing is re-derived), so that a study never writes a bundle its own verify refuses.

What it counts is what grows with a protocol's few lines rather than with its runs: the
bootstraps (the protocol's interval, each contrast's, rliable's aggregates'), each contrast, and
each contrast's scan of the conditions. The unit is about what one score of one replicate of a
performance profile costs to re-derive (some 25 ns, measured on a 2-core machine); each kind of
work is counted at what it was measured to cost in that unit, or more, so that the count bounds
verify's time (docs/guarantees.md states the bound and its measured time).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from repro._protocol.rl_rules import tasks_of
from repro._stats.rl import PAIRS_COMPARED
from repro.errors import Problem

if TYPE_CHECKING:  # annotations alone: the verifier's limits import this module
    from repro.models import RL, Contrast, Group, Protocol

__all__ = [
    "MAX_DERIVATION_WORK",
    "PAIRS_COMPARED",
    "derivation_work",
    "planned_conditions",
    "work_over",
    "work_problems",
]

#: The most work a protocol may ask of its derivations (:func:`derivation_work`): about twelve
#: seconds of re-derivation by verify on one core, measured on a 2-core machine. rliable's
#: statistics, profiles of 81 taus and four improvements of five algorithms on 26 tasks of 10
#: runs (Atari 100k) take 4.8 x 10^8 at 50,000 resamples.
MAX_DERIVATION_WORK = 5 * 10**8


#: One call of SciPy's bootstrap (a contrast's, an interval's), beyond its resamples.
_SCIPY_CALL = 40_000
#: One resample of SciPy's bootstrap, beyond its values, counted in values (three values cost
#: about two units).
_SCIPY_RESAMPLE = 8
#: One contrast, whatever its test: its figures, its Holm step, its lines of the report.
_CONTRAST = 20_000
#: Each condition a contrast scans, in the rules and in the derivation: its groups' selections
#: and its pairing.
_CONDITION_SCAN = 400
#: A score of a replicate of rliable's statistics (median, IQM, mean and optimality gap): three
#: units. A score of a profile's replicate is one.
_STATISTICS = 3
#: One replicate of one of rliable's bootstraps (a participant's statistics or profile, a pair),
#: beyond its scores.
_REPLICATE = 20
#: A tau of a profile, in each replicate: its count and its percentile interval.
_TAU = 2


def _scipy_bootstrap(resamples: int, values: int, samples: int = 1) -> int:
    """SciPy's bootstrap of ``values`` values in all, in ``samples`` samples."""
    return _SCIPY_CALL + resamples * (values + _SCIPY_RESAMPLE * samples) * 2 // 3


def planned_conditions(p: Protocol) -> int:
    """The conditions of the plan, counted without making them: matrix cells x participants
    (one sealed partition each)."""
    return math.prod(len(f.levels) for f in p.matrix) * len(p.participants)


def _selected(p: Protocol, group: Group) -> int:
    """How many conditions ``group`` selects (as :func:`repro._protocol.contrasts.selected`
    does), counted from the matrix without making them: of each factor the levels it names, or
    all of them, times the participant it names, or all of them."""
    if not set(group.factors) <= {f.name for f in p.matrix}:
        return 0
    cells = math.prod(
        f.levels.count(group.factors[f.name]) if f.name in group.factors else len(f.levels)
        for f in p.matrix
    )
    ids = [q.id for q in p.participants]
    return cells * (len(ids) if group.participant is None else ids.count(group.participant))


def _interval_work(p: Protocol) -> int:
    """A bootstrap interval of every condition's mean, and of the estimand over them all."""
    if p.interval.method != "bootstrap":
        return 0
    conditions = planned_conditions(p)
    runs, resamples = p.runs_per_condition, p.interval.resamples
    each = _scipy_bootstrap(resamples, runs)
    return conditions * each + _scipy_bootstrap(resamples, conditions * runs, conditions)


def _contrast_work(p: Protocol, contrast: Contrast, conditions: int, compared: int) -> int:
    """One contrast: its scans of the ``conditions``, and its bootstrap of the runs of the
    ``compared`` conditions its groups select (at most; pairing leaves fewer)."""
    work = _CONTRAST + _CONDITION_SCAN * conditions
    spec = contrast.interval
    if spec is not None and spec.method == "bootstrap" and spec.resamples is not None:
        work += _scipy_bootstrap(spec.resamples, compared * p.runs_per_condition, 2)
    return work


def _improvement_replicate(runs: int, tasks: int) -> int:
    """One replicate of a probability of improvement of two participants' (runs x tasks)
    scores: both resampled, then their pairs compared one by one (eight pairs cost about one
    unit), or past :data:`PAIRS_COMPARED` pairs a task, their runs sorted (about
    three units a score)."""
    scores = 2 * runs * tasks
    if runs * runs <= PAIRS_COMPARED:
        return scores + runs * runs * tasks // 8 + _REPLICATE
    return 3 * scores + _REPLICATE


def _rl_work(p: Protocol, rl: RL) -> int:
    """rliable's three bootstraps: in each replicate, every participant's (runs x tasks) scores
    for its statistics and for its profile, each of its taus, and each improvement's pair. (The
    runs are the protocol's runs per condition: the complete replicates are at most that.)"""
    runs, tasks = p.runs_per_condition, len(tasks_of(p, rl))
    scores = runs * tasks
    participant = (_STATISTICS * scores + _REPLICATE) if rl.statistics else 0
    participant += (scores + _TAU * len(rl.taus) + _REPLICATE) if rl.taus else 0
    pairs = len(rl.improvements) * _improvement_replicate(runs, tasks)
    return rl.bootstrap.resamples * (len(p.participants) * participant + pairs)


def derivation_work(p: Protocol) -> dict[str, int]:
    """The work each part of the protocol asks of the derivations, by the JSON path of what
    asks it (only parts that ask some): the interval's bootstraps (``$.interval.resamples``),
    each contrast (``$.contrasts.family[i]``) and rliable's bootstraps
    (``$.rl.bootstrap.resamples``). Its total is bounded by :data:`MAX_DERIVATION_WORK` at
    freeze, and by ``max_derivation_work`` in verify."""
    work = {"$.interval.resamples": _interval_work(p)}
    if p.contrasts is not None:
        conditions = planned_conditions(p)
        for i, contrast in enumerate(p.contrasts.family):
            compared = _selected(p, contrast.a) + _selected(p, contrast.b)
            work[f"$.contrasts.family[{i}]"] = _contrast_work(p, contrast, conditions, compared)
    if p.rl is not None:
        work["$.rl.bootstrap.resamples"] = _rl_work(p, p.rl)
    return {path: units for path, units in work.items() if units}


def work_over(p: Protocol, limit: int) -> tuple[int, str] | None:
    """The protocol's :func:`derivation_work` in all and the JSON path of the part that asks
    the most, when the total is over ``limit``; None within it."""
    work = derivation_work(p)
    total = sum(work.values())
    if total <= limit:
        return None
    return total, max(work, key=lambda path: work[path])


def work_problems(p: Protocol, limit: int = MAX_DERIVATION_WORK) -> list[Problem]:
    """The problem of a protocol whose :func:`derivation_work` is over ``limit`` in all, at the
    part that asks the most; none within it."""
    over = work_over(p, limit)
    if over is None:
        return []
    total, largest = over
    return [
        Problem(
            largest,
            f"re-deriving its statistics would take {total} units of work (a bootstrap counts its "
            f"resamples times its values, a contrast the conditions it scans), over the limit of "
            f"{limit}, most of it asked here: ask for fewer resamples, contrasts, taus or "
            f"improvements",
            "over-limit",
        )
    ]
