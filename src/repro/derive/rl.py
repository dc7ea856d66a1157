"""The aggregates of rliable (Agarwal et al. 2021, "Deep RL at the Edge of the Statistical
Precipice"), written for bit-exact recomputation, without rliable.

A score matrix has shape ``(runs, tasks)``: ``scores[n][m]`` is run ``n`` on task ``m``, the layout
of rliable 1.2.0. It may be a NumPy array or nested sequences of floats; it is read as float64 and
must be two-dimensional and finite (else :class:`ValueError`). A matrix with no score (no run or no
task) has no aggregate: every value is None, never NaN.

Point estimates sum with :func:`math.fsum` and sort before they trim or take a median, so each is
the correctly rounded value of its definition (up to one final subtraction or halving) and is
bit-identical under any permutation of the runs within a task or of the tasks. rliable computes
the same definitions with NumPy's pairwise sums; the two agree to a few units in the last place of
the scores' magnitude, not always bit for bit.

Intervals come from a stratified bootstrap: each replicate resamples, with replacement and
independently for each task, as many runs as the task has, and recomputes the statistic; the
interval is the percentile interval of the replicates, as rliable's ``get_interval_estimates``
with its default ``method='percentile'``. Two samplers draw the replicates' run indices:

``"default"``
    ``numpy.random.default_rng(seed)``; replicate ``r`` draws ``rng.integers(0, N, size=(N, M))``
    (then, with ``task_bootstrap``, ``rng.integers(0, M, size=(1, M))``); for two matrices X then
    Y. The replicates' statistics use the fsum arithmetic of the point estimates, so an interval
    is a function of (scores, seed, reps, level) alone, wherever ``Generator.integers`` draws the
    same integers (NEP 19 lets a NumPy release change Generator streams, as it does not
    RandomState's). With several algorithms, each gets its own ``default_rng(seed)``, so one
    algorithm's interval does not depend on the others.

``"rliable"``
    Reproduces rliable 1.2.0's intervals exactly. rliable's ``StratifiedBootstrap.update_indices``
    (rliable/library.py) draws ``np.random.choice(self._num_items, self._args_shape,
    replace=True)`` from NumPy's *global* legacy generator, not from the ``random_state`` that
    ``get_interval_estimates`` passes to arch's ``IIDBootstrap`` (which seeds only arch's own
    ``self._generator``, never read by that override). So rliable's intervals are fixed by
    ``np.random.seed(seed)`` before the call, whatever ``random_state`` is. This sampler makes the
    same calls on ``numpy.random.RandomState(seed)``, one stream through all replicates (and
    through the algorithms, in mapping order, as rliable's loop over ``score_dict``), and computes
    each replicate with rliable's own NumPy/SciPy expressions (``np.mean``, ``np.median``,
    ``scipy.stats.trim_mean``), so the replicates and hence the percentiles are the same floats.
    The point estimates stay the fsum ones. Its bits are those of NumPy's reductions: as stable
    across NumPy versions as rliable's own.

In both, the interval at ``level`` is ``np.percentile(replicates, [100 * a, 100 * (1.0 - a)])``
with ``a = (1.0 - level) / 2``: arch's ``IIDBootstrap.conf_int`` percentile step, to the float.

SciPy and NumPy are imported inside the functions (house style of :mod:`repro.derive.stats`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from attrs import frozen

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    Matrix = NDArray[np.float64]

__all__ = [
    "AggregateEstimates",
    "Distribution",
    "Estimate",
    "Interval",
    "Sampler",
    "aggregate_estimates",
    "aggregate_estimates_by_algorithm",
    "improvement_estimate",
    "improvement_estimates",
    "iqm",
    "mean",
    "median",
    "optimality_gap",
    "percentile_interval",
    "performance_profile",
    "probability_of_improvement",
    "profile_estimates",
    "profile_estimates_by_algorithm",
]

Sampler = Literal["default", "rliable"]
Distribution = Literal["runs", "tasks"]


@frozen
class Interval:
    """A two-sided percentile interval at ``level``."""

    level: float
    low: float
    high: float


@frozen
class Estimate:
    """A point estimate and its bootstrap interval; both None when the estimate is undefined."""

    value: float | None
    interval: Interval | None


@frozen
class AggregateEstimates:
    """The four aggregates of rliable's figures, each with its interval from the same replicates
    (one bootstrap, as rliable's ``func`` returning all four)."""

    median: Estimate
    iqm: Estimate
    mean: Estimate
    optimality_gap: Estimate


# ----------------------------------------------------------------------------------------------
# Input


def _matrix(scores: ArrayLike, name: str = "scores") -> Matrix | None:
    """The scores as a float64 (runs, tasks) array, or None when there is no score."""
    import numpy as np

    x = np.array(scores, dtype=np.float64)  # a copy: callers' arrays are never aliased
    if x.size == 0:
        if x.ndim > 2:
            raise ValueError(f"{name} must be a (runs, tasks) matrix, not {x.ndim}-dimensional")
        return None
    if x.ndim != 2:
        raise ValueError(f"{name} must be a (runs, tasks) matrix, not {x.ndim}-dimensional")
    if not np.isfinite(x).all():
        raise ValueError(f"{name} must be finite")
    return np.ascontiguousarray(x)


def _pair(scores_x: ArrayLike, scores_y: ArrayLike) -> tuple[Matrix, Matrix] | None:
    x, y = _matrix(scores_x, "scores_x"), _matrix(scores_y, "scores_y")
    if x is not None and y is not None and x.shape[1] != y.shape[1]:
        raise ValueError(f"scores_x has {x.shape[1]} tasks and scores_y {y.shape[1]}")
    if x is None or y is None:
        return None
    return x, y


def _finite(value: float, name: str) -> float:
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite")
    return v


def _distribution(distribution: Distribution) -> Distribution:
    if distribution not in ("runs", "tasks"):
        raise ValueError(f"unknown distribution {distribution!r}")
    return distribution


def _taus(taus: Sequence[float] | ArrayLike) -> tuple[float, ...]:
    import numpy as np

    values = tuple(float(t) for t in np.asarray(taus, dtype=np.float64).ravel())
    if any(math.isnan(t) for t in values):
        raise ValueError("taus must not be NaN")
    return values


def _check(reps: int, seed: int, level: float, sampler: Sampler) -> None:
    if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
        raise ValueError("reps must be a positive integer")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError("seed must be a non-negative integer")
    if sampler == "rliable" and seed >= 2**32:
        raise ValueError("the rliable sampler's RandomState takes a seed below 2**32")
    if sampler not in ("default", "rliable"):
        raise ValueError(f"unknown sampler {sampler!r}")
    if not 0.0 < level < 1.0:
        raise ValueError("level must be strictly between 0 and 1")


# ----------------------------------------------------------------------------------------------
# Point estimates (fsum arithmetic)


def _task_means(x: Matrix) -> list[float]:
    n = x.shape[0]
    return [math.fsum(column) / n for column in x.T.tolist()]


def _middle(ordered: Sequence[float]) -> float:
    k, odd = divmod(len(ordered), 2)
    if odd:
        return ordered[k]
    a, b = ordered[k - 1], ordered[k]
    half = (a + b) / 2  # np.median's mean of the two middle values, to the float
    return half if math.isfinite(half) else a / 2 + b / 2


def _fsum_median(x: Matrix) -> float:
    return _middle(sorted(_task_means(x)))


def _fsum_mean(x: Matrix) -> float:
    return math.fsum(x.ravel().tolist()) / x.size


def _fsum_iqm(x: Matrix) -> float:
    import numpy as np

    size = x.size
    cut = size // 4  # scipy.stats.trim_mean: int(0.25 * size)
    ordered = np.sort(x, axis=None).tolist()
    return math.fsum(ordered[cut : size - cut]) / (size - 2 * cut)


def _fsum_gap(x: Matrix, gamma: float) -> float:
    import numpy as np

    return gamma - math.fsum(np.minimum(x, gamma).ravel().tolist()) / x.size


def _task_improvements(x: Matrix, y: Matrix) -> list[float]:
    """Per task, U / (m n): the pairs with x > y, and half the ties, over all pairs."""
    import numpy as np

    # Counted by binary search in each task's sorted y rather than by comparing all m x n
    # pairs, so that time and memory grow with m + n: the same integer counts.
    above, ties = [], []
    for xs, ys in zip(x.T, np.sort(y, axis=0).T, strict=True):
        below = np.searchsorted(ys, xs, side="left")  # the y < x
        at_most = np.searchsorted(ys, xs, side="right")  # the y <= x
        above.append(int(below.sum()))
        ties.append(int((at_most - below).sum()))
    pairs = x.shape[0] * y.shape[0]
    # Counts and half counts are exact floats, so each is one correctly rounded division, the
    # same float as scipy.stats.mannwhitneyu's U (from exact half-integer rank sums) / (m n).
    return [(a + t / 2) / pairs for a, t in zip(above, ties, strict=True)]


def _fsum_improvement(x: Matrix, y: Matrix) -> float:
    parts = _task_improvements(x, y)
    return math.fsum(parts) / len(parts)


def _fractions_above(values: Sequence[float] | Matrix, taus: Sequence[float]) -> list[float]:
    """For each tau, the fraction of ``values`` greater than tau (an exact count over the size)."""
    import numpy as np

    ordered = np.sort(np.asarray(values, dtype=np.float64), axis=None)
    size = ordered.size
    at_most = np.searchsorted(ordered, np.asarray(taus, dtype=np.float64), side="right").tolist()
    return [(size - k) / size for k in at_most]


def median(scores: ArrayLike) -> float | None:
    """The median over tasks of the per-task mean score (rliable ``aggregate_median``).

    With an even number of tasks, the mean of the two middle task means. None without scores.
    """
    x = _matrix(scores)
    return None if x is None else _fsum_median(x)


def mean(scores: ArrayLike) -> float | None:
    """The mean over tasks of the per-task mean score (rliable ``aggregate_mean``).

    Every task has the same number of runs, so this is the mean of all runs x tasks scores, and it
    is computed as that: the correctly rounded mean. None without scores.
    """
    x = _matrix(scores)
    return None if x is None else _fsum_mean(x)


def iqm(scores: ArrayLike) -> float | None:
    """The interquartile mean of all runs x tasks scores (rliable ``aggregate_iqm``).

    As ``scipy.stats.trim_mean(scores, proportiontocut=0.25, axis=None)``: of the S scores sorted,
    drop the lowest and the highest ``floor(S / 4)`` and average the rest. None without scores.
    """
    x = _matrix(scores)
    return None if x is None else _fsum_iqm(x)


def optimality_gap(scores: ArrayLike, gamma: float = 1.0) -> float | None:
    """``gamma`` less the mean of all scores clipped above at ``gamma`` (rliable
    ``aggregate_optimality_gap``, gamma=1 by default). None without scores."""
    g = _finite(gamma, "gamma")
    x = _matrix(scores)
    return None if x is None else _fsum_gap(x, g)


def probability_of_improvement(scores_x: ArrayLike, scores_y: ArrayLike) -> float | None:
    """P(X > Y), averaged over tasks (rliable ``probability_of_improvement``).

    ``scores_x`` is (m runs, tasks) and ``scores_y`` (n runs, tasks), the same tasks in the same
    order; m and n may differ. On each task, the Mann-Whitney U statistic of X over Y divided by
    m n: the fraction of the m n pairs in which X's score exceeds Y's, a tie counting one half.
    The mean of these over tasks. None when either has no score.
    """
    pair = _pair(scores_x, scores_y)
    return None if pair is None else _fsum_improvement(*pair)


def performance_profile(
    scores: ArrayLike, taus: Sequence[float] | ArrayLike, distribution: Distribution = "runs"
) -> tuple[float, ...] | None:
    """The performance profile at each tau (rliable ``create_performance_profile``'s profiles).

    ``distribution="runs"`` (rliable's default ``use_score_distribution=True``, its
    ``run_score_deviation``): the fraction of all runs x tasks scores greater than tau.
    ``"tasks"`` (``use_score_distribution=False``, ``mean_score_deviation``): the fraction of tasks
    whose mean score is greater than tau. None without scores.
    """
    ts, d = _taus(taus), _distribution(distribution)
    x = _matrix(scores)
    return None if x is None else tuple(_profile(x, ts, d))


def _profile(x: Matrix, taus: Sequence[float], distribution: Distribution) -> list[float]:
    if distribution == "runs":
        return _fractions_above(x, taus)
    return _fractions_above(_task_means(x), taus)


# ----------------------------------------------------------------------------------------------
# rliable's arithmetic, for the "rliable" sampler's replicates


def _numpy_aggregates(x: Matrix, gamma: float) -> list[float]:
    """rliable/metrics.py's aggregate_median, _iqm, _mean and _optimality_gap, expression for
    expression."""
    import numpy as np
    from scipy import stats as sps

    task_means = np.mean(x, axis=0, keepdims=False)
    return [
        float(np.median(task_means, axis=0)),
        float(sps.trim_mean(x, proportiontocut=0.25, axis=None)),
        float(np.mean(task_means, axis=0)),
        float(gamma - np.mean(np.minimum(x, gamma))),
    ]


def _numpy_improvement(x: Matrix, y: Matrix) -> float:
    """rliable's probability_of_improvement: its per-task values are the floats of
    :func:`_task_improvements`; their mean is NumPy's."""
    import numpy as np

    return float(np.mean(np.asarray(_task_improvements(x, y), dtype=np.float64)))


def _numpy_profile(x: Matrix, taus: Sequence[float], distribution: Distribution) -> list[float]:
    """rliable's run_score_deviation / mean_score_deviation at each tau."""
    import numpy as np

    if distribution == "runs":
        return [float(np.mean(x > t)) for t in taus]
    task_means = np.mean(x, axis=0)
    return [float(np.mean(task_means > t)) for t in taus]


# ----------------------------------------------------------------------------------------------
# The stratified bootstrap


class _Draws:
    """The run (and task) indices of successive replicates, from one stream."""

    def __init__(self, sampler: Sampler, seed: int) -> None:
        import numpy as np

        self._legacy = sampler == "rliable"
        if self._legacy:
            self._state = np.random.RandomState(seed)
        else:
            self._rng = np.random.default_rng(seed)

    def integers(self, high: int, shape: tuple[int, int]) -> NDArray[np.int64]:
        if self._legacy:
            # rliable: np.random.choice(self._num_items, self._args_shape, replace=True)
            out: NDArray[np.int64] = self._state.choice(high, shape, replace=True)
            return out
        return self._rng.integers(0, high, size=shape)

    def resample(self, x: Matrix, task_bootstrap: bool) -> Matrix:
        """One replicate of x: per task, N runs drawn with replacement (arch's ``_resample`` of
        rliable's indices: ``x[(runs, *strata)]``)."""
        import numpy as np

        n, m = x.shape
        runs = self.integers(n, (n, m))
        if task_bootstrap:
            tasks = self.integers(m, (1, m))
            return x[runs, tasks]
        return x[runs, np.arange(m)[None, :]]


def percentile_interval(replicates: Sequence[float] | ArrayLike, level: float = 0.95) -> Interval:
    """The percentile interval of bootstrap ``replicates`` at ``level``.

    arch's ``IIDBootstrap.conf_int(method='percentile')``, which rliable's intervals use: with
    ``a = (1.0 - level) / 2``, the low and high ends are ``np.percentile(replicates, [100 * a,
    100 * (1.0 - a)])`` (linear interpolation between order statistics, so independent of the
    replicates' order).
    """
    import numpy as np

    values = np.asarray(replicates, dtype=np.float64).ravel()
    if values.size == 0:
        raise ValueError("no replicates")
    if not 0.0 < level < 1.0:
        raise ValueError("level must be strictly between 0 and 1")
    alpha = (1.0 - level) / 2
    low, high = np.percentile(values, [100 * alpha, 100 * (1.0 - alpha)], method="linear")
    return Interval(level=level, low=float(low), high=float(high))


def _replicates(
    arrays: Sequence[Matrix],
    statistic: Callable[..., Sequence[float]],
    width: int,
    draws: _Draws,
    reps: int,
    task_bootstrap: bool,
) -> NDArray[np.float64]:
    import numpy as np

    results = np.zeros((reps, width))
    for r in range(reps):
        results[r] = statistic(*(draws.resample(a, task_bootstrap) for a in arrays))
    return results


def _intervals(results: NDArray[np.float64], level: float) -> list[Interval]:
    return [percentile_interval(results[:, i], level) for i in range(results.shape[1])]


def _streams(sampler: Sampler, seed: int) -> Callable[[], _Draws]:
    """The stream of each next matrix (or pair): one shared legacy stream for rliable, a fresh
    default one for each otherwise."""
    if sampler == "rliable":
        shared = _Draws(sampler, seed)
        return lambda: shared
    return lambda: _Draws(sampler, seed)


_NO_ESTIMATE = Estimate(value=None, interval=None)


def _aggregates_of(
    x: Matrix | None,
    draws: Callable[[], _Draws],
    reps: int,
    level: float,
    gamma: float,
    sampler: Sampler,
    task_bootstrap: bool,
) -> AggregateEstimates:
    if x is None:
        return AggregateEstimates(_NO_ESTIMATE, _NO_ESTIMATE, _NO_ESTIMATE, _NO_ESTIMATE)
    values = [_fsum_median(x), _fsum_iqm(x), _fsum_mean(x), _fsum_gap(x, gamma)]

    def statistic(r: Matrix) -> Sequence[float]:
        if sampler == "rliable":
            return _numpy_aggregates(r, gamma)
        return [_fsum_median(r), _fsum_iqm(r), _fsum_mean(r), _fsum_gap(r, gamma)]

    results = _replicates([x], statistic, 4, draws(), reps, task_bootstrap)
    found = [Estimate(v, i) for v, i in zip(values, _intervals(results, level), strict=True)]
    return AggregateEstimates(*found)


def aggregate_estimates(
    scores: ArrayLike,
    *,
    seed: int,
    reps: int = 50_000,
    level: float = 0.95,
    gamma: float = 1.0,
    task_bootstrap: bool = False,
    sampler: Sampler = "default",
) -> AggregateEstimates:
    """Median, IQM, mean and optimality gap of one (runs, tasks) matrix, with stratified bootstrap
    percentile intervals from ``reps`` replicates (rliable ``get_interval_estimates`` of a
    ``func`` returning the four ``aggregate_*``).

    ``task_bootstrap`` also resamples the tasks (rliable's option of that name). With
    ``sampler="rliable"`` the intervals are those of ``np.random.seed(seed)`` then
    ``get_interval_estimates({key: scores}, func, reps=reps, confidence_interval_size=level,
    task_bootstrap=task_bootstrap)``. All four None without scores.
    """
    _check(reps, seed, level, sampler)
    g = _finite(gamma, "gamma")
    x = _matrix(scores)
    return _aggregates_of(x, _streams(sampler, seed), reps, level, g, sampler, task_bootstrap)


def aggregate_estimates_by_algorithm(
    scores_by_algorithm: Mapping[str, ArrayLike],
    *,
    seed: int,
    reps: int = 50_000,
    level: float = 0.95,
    gamma: float = 1.0,
    task_bootstrap: bool = False,
    sampler: Sampler = "default",
) -> dict[str, AggregateEstimates]:
    """:func:`aggregate_estimates` of each algorithm's matrix, keyed as given.

    With the default sampler each algorithm's result is exactly its own
    ``aggregate_estimates(scores, seed=seed, ...)``. With ``sampler="rliable"`` one stream runs
    through the algorithms in the mapping's order, as rliable's ``get_interval_estimates`` over a
    ``score_dict`` after ``np.random.seed(seed)`` (a matrix without scores, which rliable refuses,
    draws nothing).
    """
    _check(reps, seed, level, sampler)
    g = _finite(gamma, "gamma")
    matrices = {k: _matrix(v, f"scores of {k!r}") for k, v in scores_by_algorithm.items()}
    draws = _streams(sampler, seed)
    return {
        k: _aggregates_of(x, draws, reps, level, g, sampler, task_bootstrap)
        for k, x in matrices.items()
    }


def _improvement_of(
    pair: tuple[Matrix, Matrix] | None,
    draws: Callable[[], _Draws],
    reps: int,
    level: float,
    sampler: Sampler,
) -> Estimate:
    if pair is None:
        return _NO_ESTIMATE
    value = _fsum_improvement(*pair)
    one = _numpy_improvement if sampler == "rliable" else _fsum_improvement

    def statistic(x: Matrix, y: Matrix) -> Sequence[float]:
        return [one(x, y)]

    results = _replicates(pair, statistic, 1, draws(), reps, False)
    return Estimate(value, _intervals(results, level)[0])


def improvement_estimate(
    scores_x: ArrayLike,
    scores_y: ArrayLike,
    *,
    seed: int,
    reps: int = 50_000,
    level: float = 0.95,
    sampler: Sampler = "default",
) -> Estimate:
    """:func:`probability_of_improvement` of X over Y with a stratified bootstrap interval: each
    replicate resamples X's runs, then Y's, within each task, independently (rliable
    ``get_interval_estimates`` of ``{key: (scores_x, scores_y)}``, whose
    ``StratifiedIndependentBootstrap`` draws X's indices then Y's). None without scores."""
    _check(reps, seed, level, sampler)
    pair = _pair(scores_x, scores_y)
    return _improvement_of(pair, _streams(sampler, seed), reps, level, sampler)


def improvement_estimates(
    pairs: Mapping[str, tuple[ArrayLike, ArrayLike]],
    *,
    seed: int,
    reps: int = 50_000,
    level: float = 0.95,
    sampler: Sampler = "default",
) -> dict[str, Estimate]:
    """:func:`improvement_estimate` of each (scores_x, scores_y) pair, keyed as given; streams as
    in :func:`aggregate_estimates_by_algorithm`."""
    _check(reps, seed, level, sampler)
    checked = {k: _pair(x, y) for k, (x, y) in pairs.items()}
    draws = _streams(sampler, seed)
    return {k: _improvement_of(p, draws, reps, level, sampler) for k, p in checked.items()}


def _profile_of(
    x: Matrix | None,
    taus: tuple[float, ...],
    distribution: Distribution,
    draws: Callable[[], _Draws],
    reps: int,
    level: float,
    sampler: Sampler,
    task_bootstrap: bool,
) -> tuple[Estimate, ...]:
    if x is None:
        return tuple(_NO_ESTIMATE for _ in taus)
    values = _profile(x, taus, distribution)
    if not taus:
        return ()
    one = _numpy_profile if sampler == "rliable" else _profile

    def statistic(r: Matrix) -> Sequence[float]:
        return one(r, taus, distribution)

    results = _replicates([x], statistic, len(taus), draws(), reps, task_bootstrap)
    return tuple(Estimate(v, i) for v, i in zip(values, _intervals(results, level), strict=True))


def profile_estimates(
    scores: ArrayLike,
    taus: Sequence[float] | ArrayLike,
    *,
    seed: int,
    distribution: Distribution = "runs",
    reps: int = 2_000,
    level: float = 0.95,
    task_bootstrap: bool = False,
    sampler: Sampler = "default",
) -> tuple[Estimate, ...]:
    """:func:`performance_profile` at each tau, with stratified bootstrap percentile intervals
    (rliable ``create_performance_profile``, whose default is 2,000 replicates). With
    ``sampler="rliable"``, the intervals of ``np.random.seed(seed)`` then
    ``create_performance_profile({key: scores}, taus, use_score_distribution=(distribution ==
    "runs"), reps=reps, ...)``. One Estimate per tau, all None without scores."""
    _check(reps, seed, level, sampler)
    ts, distribution = _taus(taus), _distribution(distribution)
    x = _matrix(scores)
    return _profile_of(
        x, ts, distribution, _streams(sampler, seed), reps, level, sampler, task_bootstrap
    )


def profile_estimates_by_algorithm(
    scores_by_algorithm: Mapping[str, ArrayLike],
    taus: Sequence[float] | ArrayLike,
    *,
    seed: int,
    distribution: Distribution = "runs",
    reps: int = 2_000,
    level: float = 0.95,
    task_bootstrap: bool = False,
    sampler: Sampler = "default",
) -> dict[str, tuple[Estimate, ...]]:
    """:func:`profile_estimates` of each algorithm's matrix, keyed as given; streams as in
    :func:`aggregate_estimates_by_algorithm`."""
    _check(reps, seed, level, sampler)
    ts, distribution = _taus(taus), _distribution(distribution)
    matrices = {k: _matrix(v, f"scores of {k!r}") for k, v in scores_by_algorithm.items()}
    draws = _streams(sampler, seed)
    return {
        k: _profile_of(x, ts, distribution, draws, reps, level, sampler, task_bootstrap)
        for k, x in matrices.items()
    }
