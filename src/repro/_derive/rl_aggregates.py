"""rl-aggregates.json: rliable's aggregates (:mod:`repro._stats.rl`) of the runs of a protocol
that declares ``rl``, one pure function per rule, shared by ``repro study`` and ``repro verify``.

The rules, in order:

1. **Tasks and algorithms.** The tasks are the levels of ``rl.task_factor`` in the matrix's
   order, the algorithms the participants in the protocol's order, and each (task,
   participant) is one condition (:func:`repro._protocol.rl_rules.task_conditions`; the
   protocol's rules refuse any other factor of more than one level).
2. **The score** (:func:`scale_of`): a valid run's measure ``x``, or, with a normalization,
   ``(x - low) / (high - low)`` with its task's ``low`` and ``high``, not clipped.
3. **The score matrix** (:func:`score_matrix`): rliable's (runs x tasks) layout needs as many
   runs on every task, so a participant's rows are its complete replicates, in replicate order:
   those whose slot on every task ended valid with a measure, each row its scores on the tasks
   in task order. A replicate with a task that did not is left out whole and counted
   (``incomplete``), never imputed; the valid runs on each task are counted too (``valid``).
   A participant without a complete replicate has no estimate: its figures are null.
4. **The estimates** (:func:`rl_aggregates`): the statistics the protocol asks (median, IQM,
   mean, optimality gap below ``gamma``) of each participant's matrix, the probability of
   improvement of each declared pair, and the performance profile at each tau, each with its
   stratified-bootstrap percentile interval
   (:func:`repro._stats.rl.aggregate_estimates_by_algorithm`,
   :func:`~repro._stats.rl.improvement_estimates`,
   :func:`~repro._stats.rl.profile_estimates_by_algorithm`). The three bootstraps each start
   from ``bootstrap.seed``: with the ``default`` sampler each participant (each pair) draws
   from its own ``default_rng(seed)``; with ``rliable``, one legacy stream runs through the
   participants (the pairs) in the protocol's order, a participant without a complete replicate
   drawing nothing, so that every interval is rliable 1.2.0's after ``np.random.seed(seed)``.

Every figure is a function of each condition's valid measures by replicate, which the tally
keeps in sealed order, so none depends on the order the runs are read in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from attrs import frozen

from repro._derive.contrasts import measure_values
from repro._derive.tally import RunTally
from repro._protocol.rl_rules import task_conditions, tasks_of
from repro._stats import rl as rliable
from repro.models import (
    RL,
    Condition,
    FrozenProtocol,
    Level,
    RLAggregates,
    RLImprovementEstimate,
    RLParticipant,
    RLProfilePoint,
    RLStatistic,
    RLStatisticEstimate,
    Seal,
)

__all__ = ["ScoreMatrix", "rl_aggregates", "scale_of", "score_matrix"]

#: A condition's valid values by replicate (:func:`repro._derive.contrasts.measure_values`).
Values = Callable[[Condition], dict[int, float | bool]]
Scale = Callable[[float], float]


@frozen
class ScoreMatrix:
    """One participant's (runs x tasks) scores (rule 3): a row per complete replicate, in
    replicate order, and the counts behind it."""

    rows: tuple[tuple[float, ...], ...]
    #: The replicate of each row.
    replicates: tuple[int, ...]
    #: Valid runs with a measure on each task, in task order.
    valid: tuple[int, ...]
    #: Replicates left out because a task's slot did not end valid with a measure.
    incomplete: int


def scale_of(rl: RL, task: Level) -> Scale:
    """How a run's measure on ``task`` becomes its score (rule 2)."""
    scale = next((s for s in rl.normalization if s.task == task), None)
    if scale is None:
        return float
    low, span = scale.low, scale.high - scale.low
    return lambda x: (x - low) / span


def score_matrix(
    conditions: Sequence[Condition], values: Values, replicates: int, scales: Sequence[Scale]
) -> ScoreMatrix:
    """The score matrix of one participant from its condition on each task (rule 3)."""
    by_task = [values(c) for c in conditions]
    rows, kept = [], []
    for r in range(replicates):
        if all(r in v for v in by_task):
            rows.append(tuple(s(float(v[r])) for v, s in zip(by_task, scales, strict=True)))
            kept.append(r)
    return ScoreMatrix(
        rows=tuple(rows),
        replicates=tuple(kept),
        valid=tuple(len(v) for v in by_task),
        incomplete=replicates - len(rows),
    )


def _figures(e: rliable.Estimate) -> tuple[float | None, float | None, float | None]:
    """An estimate's value, low and high end."""
    i = e.interval
    return e.value, None if i is None else i.low, None if i is None else i.high


@frozen
class _Estimates:
    """What the three bootstraps give (rule 4): by participant its four aggregates and its
    profile, and each declared improvement."""

    aggregates: dict[str, rliable.AggregateEstimates]
    profiles: dict[str, tuple[rliable.Estimate, ...]]
    improvements: tuple[RLImprovementEstimate, ...]


def _estimates(rl: RL, scores: dict[str, tuple[tuple[float, ...], ...]]) -> _Estimates:
    """Every estimate rl-aggregates.json holds, of the participants' score matrices (rule 4)."""
    b = rl.bootstrap
    seed, reps, level, sampler = b.seed, b.resamples, b.level, b.sampler
    aggregates = (
        rliable.aggregate_estimates_by_algorithm(
            scores, seed=seed, reps=reps, level=level, gamma=rl.gamma, sampler=sampler
        )
        if rl.statistics
        else {}
    )
    profiles = (
        rliable.profile_estimates_by_algorithm(
            scores,
            rl.taus,
            seed=seed,
            distribution=rl.distribution,
            reps=reps,
            level=level,
            sampler=sampler,
        )
        if rl.taus
        else {}
    )
    asked = {str(i): (scores[d.x], scores[d.y]) for i, d in enumerate(rl.improvements)}
    duels = (
        rliable.improvement_estimates(asked, seed=seed, reps=reps, level=level, sampler=sampler)
        if asked
        else {}
    )
    improvements = tuple(
        RLImprovementEstimate(
            d.x, d.y, len(scores[d.x]), len(scores[d.y]), *_figures(duels[str(i)])
        )
        for i, d in enumerate(rl.improvements)
    )
    return _Estimates(aggregates, profiles, improvements)


def _participant(
    rl: RL, participant: str, conditions: Sequence[Condition], m: ScoreMatrix, e: _Estimates
) -> RLParticipant:
    """One participant's entry: its counts, and its statistics and profile as asked."""
    found = e.aggregates.get(participant)
    by_name: dict[RLStatistic, rliable.Estimate] = (
        {}
        if found is None
        else {
            "median": found.median,
            "iqm": found.iqm,
            "mean": found.mean,
            "optimality-gap": found.optimality_gap,
        }
    )
    profile = e.profiles.get(participant, ())
    return RLParticipant(
        participant=participant,
        conditions=tuple(c.id for c in conditions),
        valid=m.valid,
        runs=len(m.rows),
        incomplete=m.incomplete,
        statistics=tuple(RLStatisticEstimate(n, *_figures(by_name[n])) for n in rl.statistics),
        profile=tuple(
            RLProfilePoint(tau, *_figures(p)) for tau, p in zip(rl.taus, profile, strict=True)
        ),
    )


def rl_aggregates(fp: FrozenProtocol, seal: Seal, runs: RunTally) -> RLAggregates | None:
    """rl-aggregates.json from the tally of the runs (None for a protocol without ``rl``)."""
    p = fp.protocol
    rl = p.rl
    if rl is None:
        return None
    tasks = tasks_of(p, rl)
    chosen = {q.id: task_conditions(rl, tasks, q.id, seal.conditions) for q in p.participants}
    scales = [scale_of(rl, t) for t in tasks]
    values = measure_values(runs)
    matrices = {
        q: score_matrix(cs, values, p.runs_per_condition, scales) for q, cs in chosen.items()
    }
    estimates = _estimates(rl, {q: m.rows for q, m in matrices.items()})
    b = rl.bootstrap
    return RLAggregates(
        schema="repro.rl-aggregates/1",
        protocol_sha256=fp.sha256,
        measure=p.measure.name,
        task_factor=rl.task_factor,
        tasks=tasks,
        normalized=bool(rl.normalization),
        level=b.level,
        resamples=b.resamples,
        seed=b.seed,
        sampler=b.sampler,
        gamma=rl.gamma,
        distribution=rl.distribution,
        participants=tuple(_participant(rl, q, chosen[q], matrices[q], estimates) for q in chosen),
        improvements=estimates.improvements,
    )
