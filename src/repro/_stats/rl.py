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

SciPy and NumPy are imported inside the functions (house style of :mod:`repro._stats.estimators`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from attrs import frozen

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

    from repro._stats.bootstrap import Draws

    Matrix = NDArray[np.float64]
    #: Replicates of a matrix: (replicates, runs, tasks).
    Batch = NDArray[np.float64]

__all__ = [
    "PAIRS_COMPARED",
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

#: Pairs of runs (an x's by a y's) up to which a task's pairs are compared one by one: up to it
#: that is the quicker way (some 6 ns a pair, against some 150 ns a score to sort), and what it
#: holds at once stays within a few times a batch. Also what the derivation work of a protocol
#: is counted by (:mod:`repro._protocol.work`).
PAIRS_COMPARED = 1024
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
    # Lazy: NumPy only for rliable's aggregates; verify imports this module for every bundle.
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
    # Lazy: NumPy only for rliable's aggregates; verify imports this module for every bundle.
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
# Statistics of a batch: an array of shape (replicates, runs, tasks), one value (or one per tau)
# for each replicate. A point estimate is the statistic of a batch of one, the matrix itself.


def _batch(x: Matrix) -> Batch:
    return x[None, :, :]


def _two_sum(
    a: NDArray[np.float64], b: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Knuth's TwoSum: ``a + b`` rounded, and its rounding error, exactly (``total + error`` is
    ``a + b``, whatever the operands, short of overflow)."""
    total = a + b
    b_part = total - a
    return total, (a - (total - b_part)) + (b - b_part)


def _fsums(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """``math.fsum`` along the last axis: the correctly rounded sum of each row.

    The rows are summed in pairs, level by level, each pair by :func:`_two_sum`, which keeps
    every rounding error: the exact sum is the last level's sum and the errors together. The
    errors' own sum is rounded, within a bound (any order of K additions errs by at most
    ``(K - 1) u`` times the sum of their magnitudes, u = 2**-53, which the bound doubles); the
    row's sum is that sum added to the last level's, rounded. Where the exact sum, anywhere
    within the bound, rounds to the same float, that float is fsum's; any other row (a sum
    within the bound of a tie between two floats, a zero, an overflow) is given to
    ``math.fsum`` itself. So each row is fsum's float, a thousand rows in a few NumPy calls."""
    # Lazy: NumPy only for rliable's aggregates; verify imports this module for every bundle.
    import numpy as np

    level, errors = values, []
    with np.errstate(over="ignore", invalid="ignore"):
        while level.shape[-1] > 1:
            even = level.shape[-1] // 2 * 2
            total, error = _two_sum(level[..., 0:even:2], level[..., 1:even:2])
            errors.append(error)
            level = np.concatenate([total, level[..., even:]], axis=-1)
        kept = np.concatenate(errors, axis=-1) if errors else values[..., :0]
        head = level[..., 0] if level.shape[-1] else np.zeros(values.shape[:-1])
        rest = kept.sum(axis=-1)
        bound = np.abs(kept).sum(axis=-1) * ((kept.shape[-1] + 1) * 2.0**-52)
        sums, error = _two_sum(head, rest)
        # The half gap to the next float on the error's side: a quarter of the spacing below a
        # power of two, toward zero, else half of it.
        spacing = np.spacing(np.abs(sums))
        narrow = (np.abs(np.frexp(sums)[0]) == 0.5) & (error * sums < 0)
        half_gap = np.where(narrow, spacing / 4, spacing / 2)
        certain = (half_gap - np.abs(error) > bound * 1.001) & (sums != 0) & np.isfinite(sums)
    for at in zip(*np.nonzero(~certain), strict=True):
        sums[at] = math.fsum(values[at].tolist())
    return sums


def _fsum_task_means(r: Batch) -> NDArray[np.float64]:
    # Lazy: NumPy only for rliable's aggregates; verify imports this module for every bundle.
    import numpy as np

    means: NDArray[np.float64] = _fsums(np.swapaxes(r, 1, 2)) / r.shape[1]
    return means


def _fsum_median(r: Batch) -> NDArray[np.float64]:
    # Lazy: NumPy only for rliable's aggregates; verify imports this module for every bundle.
    import numpy as np

    ordered = np.sort(_fsum_task_means(r), axis=1)
    k, odd = divmod(ordered.shape[1], 2)
    if odd:
        return ordered[:, k]
    a, b = ordered[:, k - 1], ordered[:, k]
    with np.errstate(over="ignore"):
        half = (a + b) / 2  # np.median's mean of the two middle values, to the float
    return np.where(np.isfinite(half), half, a / 2 + b / 2)


def _flat(r: Batch) -> Batch:
    """Each replicate's runs x tasks scores in one row."""
    return r.reshape(r.shape[0], -1)


def _fsum_mean(r: Batch) -> NDArray[np.float64]:
    means: NDArray[np.float64] = _fsums(_flat(r)) / (r.shape[1] * r.shape[2])
    return means


def _fsum_iqm(r: Batch) -> NDArray[np.float64]:
    # Lazy: NumPy only for rliable's aggregates; verify imports this module for every bundle.
    import numpy as np

    size = r.shape[1] * r.shape[2]
    cut = size // 4  # scipy.stats.trim_mean: int(0.25 * size)
    middle = np.sort(_flat(r), axis=1)[:, cut : size - cut]
    means: NDArray[np.float64] = _fsums(middle) / (size - 2 * cut)
    return means


def _fsum_gap(r: Batch, gamma: float) -> NDArray[np.float64]:
    # Lazy: NumPy only for rliable's aggregates; verify imports this module for every bundle.
    import numpy as np

    gaps: NDArray[np.float64] = gamma - _fsums(np.minimum(_flat(r), gamma)) / (
        r.shape[1] * r.shape[2]
    )
    return gaps


def _pairs_below(x: Batch, y: Batch, ties: bool) -> NDArray[np.int64]:
    """Per replicate and task, the pairs of an x and a y with y below x (``ties``: at or below).

    Both samples are sorted together, stably, the one that goes first among equal values put
    first: each x is then preceded by exactly the y counted with it. Time and memory grow with
    the runs of the two, not with their product."""
    # Lazy: NumPy only for rliable's aggregates; verify imports this module for every bundle.
    import numpy as np

    first, second = (y, x) if ties else (x, y)
    both = np.swapaxes(np.concatenate([first, second], axis=1), 1, 2)
    order = np.argsort(both, axis=2, kind="stable")
    is_x = order >= y.shape[1] if ties else order < x.shape[1]
    ys_before = np.cumsum(~is_x, axis=2)
    counts: NDArray[np.int64] = np.where(is_x, ys_before, 0).sum(axis=2)
    return counts


def _task_improvements(x: Batch, y: Batch) -> NDArray[np.float64]:
    """Per replicate and task, U / (m n): the pairs with x > y, and half the ties, over all
    pairs."""
    pairs = x.shape[1] * y.shape[1]
    if pairs <= PAIRS_COMPARED:
        xs, ys = x[:, :, None, :], y[:, None, :, :]
        above, ties = (xs > ys).sum(axis=(1, 2)), (xs == ys).sum(axis=(1, 2))
    else:
        above = _pairs_below(x, y, ties=False)
        ties = _pairs_below(x, y, ties=True) - above
    # Counts and half counts are exact floats, so each is one correctly rounded division, the
    # same float as scipy.stats.mannwhitneyu's U (from exact half-integer rank sums) / (m n).
    parts: NDArray[np.float64] = (above + ties / 2) / pairs
    return parts


def _fsum_improvement(x: Batch, y: Batch) -> NDArray[np.float64]:
    parts = _task_improvements(x, y)
    means: NDArray[np.float64] = _fsums(parts) / parts.shape[1]
    return means


def _counts_above(values: NDArray[np.float64], taus: Sequence[float]) -> NDArray[np.int64]:
    """For each row of ``values`` and each tau, how many values of the row are greater than it:
    the profile's fraction is that count over the row's size, exactly as NumPy's mean of
    ``values > tau`` is."""
    # Lazy: NumPy only for rliable's aggregates; verify imports this module for every bundle.
    import numpy as np

    ordered = np.array(sorted(set(taus)), dtype=np.float64)
    # Each value's place among the taus: the number of them it is greater than. Counted by row
    # and place, then summed from the top, these give how many values lie above each tau.
    places = np.searchsorted(ordered, values, side="left")
    rows = np.arange(values.shape[0])[:, None] * (ordered.size + 1)
    counts = np.bincount((rows + places).ravel(), minlength=values.shape[0] * (ordered.size + 1))
    above = np.cumsum(counts.reshape(values.shape[0], -1)[:, ::-1], axis=1)[:, ::-1]
    at = np.searchsorted(ordered, np.asarray(taus, dtype=np.float64), side="left")
    chosen: NDArray[np.int64] = above[:, at + 1]
    return chosen


def _profile_size(r: Batch, distribution: Distribution) -> int:
    """What a profile's counts are out of: every score, or every task's mean."""
    return int(r.shape[1] * r.shape[2] if distribution == "runs" else r.shape[2])


def _profile(r: Batch, taus: Sequence[float], distribution: Distribution) -> NDArray[np.int64]:
    """Each replicate's counts above each tau (:func:`_counts_above`), of its scores or of its
    task means in the fsum arithmetic."""
    if distribution == "runs":
        return _counts_above(_flat(r), taus)
    return _counts_above(_fsum_task_means(r), taus)


def median(scores: ArrayLike) -> float | None:
    """The median over tasks of the per-task mean score (rliable ``aggregate_median``).

    With an even number of tasks, the mean of the two middle task means. None without scores.
    """
    x = _matrix(scores)
    return None if x is None else float(_fsum_median(_batch(x))[0])


def mean(scores: ArrayLike) -> float | None:
    """The mean over tasks of the per-task mean score (rliable ``aggregate_mean``).

    Every task has the same number of runs, so this is the mean of all runs x tasks scores, and it
    is computed as that: the correctly rounded mean. None without scores.
    """
    x = _matrix(scores)
    return None if x is None else float(_fsum_mean(_batch(x))[0])


def iqm(scores: ArrayLike) -> float | None:
    """The interquartile mean of all runs x tasks scores (rliable ``aggregate_iqm``).

    As ``scipy.stats.trim_mean(scores, proportiontocut=0.25, axis=None)``: of the S scores sorted,
    drop the lowest and the highest ``floor(S / 4)`` and average the rest. None without scores.
    """
    x = _matrix(scores)
    return None if x is None else float(_fsum_iqm(_batch(x))[0])


def optimality_gap(scores: ArrayLike, gamma: float = 1.0) -> float | None:
    """``gamma`` less the mean of all scores clipped above at ``gamma`` (rliable
    ``aggregate_optimality_gap``, gamma=1 by default). None without scores."""
    g = _finite(gamma, "gamma")
    x = _matrix(scores)
    return None if x is None else float(_fsum_gap(_batch(x), g)[0])


def probability_of_improvement(scores_x: ArrayLike, scores_y: ArrayLike) -> float | None:
    """P(X > Y), averaged over tasks (rliable ``probability_of_improvement``).

    ``scores_x`` is (m runs, tasks) and ``scores_y`` (n runs, tasks), the same tasks in the same
    order; m and n may differ. On each task, the Mann-Whitney U statistic of X over Y divided by
    m n: the fraction of the m n pairs in which X's score exceeds Y's, a tie counting one half.
    The mean of these over tasks. None when either has no score.
    """
    pair = _pair(scores_x, scores_y)
    return None if pair is None else float(_fsum_improvement(*map(_batch, pair))[0])


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
    return (
        None
        if x is None
        else tuple((_profile(_batch(x), ts, d)[0] / _profile_size(_batch(x), d)).tolist())
    )


# ----------------------------------------------------------------------------------------------
# rliable's arithmetic, for the "rliable" sampler's replicates: NumPy's reductions of each
# replicate's own rows, so that a batch gives each replicate the floats it alone would give.


def _numpy_aggregates(r: Batch, gamma: float) -> NDArray[np.float64]:
    """rliable/metrics.py's aggregate_median, _iqm, _mean and _optimality_gap, expression for
    expression, of each replicate."""
    # Lazy: NumPy only for rliable's aggregates; verify imports this module for every bundle.
    import numpy as np
    from scipy import stats as sps

    task_means = np.mean(r, axis=1)
    return np.column_stack(
        [
            np.median(task_means, axis=1),
            sps.trim_mean(_flat(r), proportiontocut=0.25, axis=1),
            np.mean(task_means, axis=1),
            gamma - np.mean(np.minimum(_flat(r), gamma), axis=1),
        ]
    )


def _numpy_improvement(x: Batch, y: Batch) -> NDArray[np.float64]:
    """rliable's probability_of_improvement: its per-task values are the floats of
    :func:`_task_improvements`; their mean is NumPy's."""
    # Lazy: NumPy only for rliable's aggregates; verify imports this module for every bundle.
    import numpy as np

    means: NDArray[np.float64] = np.mean(_task_improvements(x, y), axis=1)
    return means


def _numpy_profile(
    r: Batch, taus: Sequence[float], distribution: Distribution
) -> NDArray[np.int64]:
    """rliable's run_score_deviation / mean_score_deviation at each tau: ``np.mean(x > tau)``
    is an exact count over the size, as :func:`_counts_above` counts; the task means are
    NumPy's."""
    # Lazy: NumPy only for rliable's aggregates; verify imports this module for every bundle.
    import numpy as np

    if distribution == "runs":
        return _counts_above(_flat(r), taus)
    return _counts_above(np.mean(r, axis=1), taus)


# ----------------------------------------------------------------------------------------------
# The stratified bootstrap

#: Scores one batch of replicates holds at most (replicates x runs x tasks of every matrix it
#: resamples, or replicates x taus of a profile if more): it bounds the memory a batch takes,
#: and changes none of the figures.
_BATCH_SCORES = 1 << 16


def percentile_interval(replicates: Sequence[float] | ArrayLike, level: float = 0.95) -> Interval:
    """The percentile interval of bootstrap ``replicates`` at ``level``.

    arch's ``IIDBootstrap.conf_int(method='percentile')``, which rliable's intervals use: with
    ``a = (1.0 - level) / 2``, the low and high ends are ``np.percentile(replicates, [100 * a,
    100 * (1.0 - a)])`` (linear interpolation between order statistics, so independent of the
    replicates' order), by repro's own copy of that formula
    (:func:`repro._stats.resampling.percentile_ends`).
    """
    # Lazy: resampling brings NumPy; only rliable's intervals need it.
    from repro._stats.resampling import percentile_ends

    low, high = percentile_ends(replicates, level)
    return Interval(level=level, low=low, high=high)


def _replicates(
    arrays: Sequence[Matrix],
    statistic: Callable[..., ArrayLike],
    width: int,
    draws: Draws,
    reps: int,
    task_bootstrap: bool,
    kind: type = float,
) -> NDArray[Any]:
    """``statistic`` of ``reps`` stratified replicates, ``width`` values each (of type
    ``kind``), a batch at a time (:func:`repro._stats.bootstrap.replicates`)."""
    # Lazy: NumPy only for rliable's aggregates; verify imports this module for every bundle.
    import numpy as np

    # The engine imports NumPy, which importing this module does not.
    from repro._stats.bootstrap import replicates

    # A profile's counts are held as 32-bit integers: half its floats' memory.
    dtype = np.float64 if kind is float else np.int32
    # A batch holds its scores and, for a profile, a count per tau and replicate.
    step = _BATCH_SCORES // max(sum(a.size for a in arrays), width)
    draw = functools.partial(draws.stratified_batch, arrays, task_bootstrap=task_bootstrap)
    return replicates(draw, statistic, reps, step, width, dtype)


def _intervals(results: NDArray[np.float64], level: float) -> list[Interval]:
    return [percentile_interval(results[:, i], level) for i in range(results.shape[1])]


def _streams(sampler: Sampler, seed: int) -> Callable[[], Draws]:
    """The stream of each next matrix (or pair): one shared legacy stream for rliable, a fresh
    default one for each otherwise."""
    # The engine imports NumPy, which importing this module does not.
    from repro._stats.bootstrap import Draws

    if sampler == "rliable":
        shared = Draws(seed, legacy=True)
        return lambda: shared
    return lambda: Draws(seed)


_NO_ESTIMATE = Estimate(value=None, interval=None)


def _fsum_aggregates(r: Batch, gamma: float) -> NDArray[np.float64]:
    """The four aggregates of each replicate, in the fsum arithmetic of the point estimates."""
    # Lazy: NumPy only for rliable's aggregates; verify imports this module for every bundle.
    import numpy as np

    return np.column_stack([_fsum_median(r), _fsum_iqm(r), _fsum_mean(r), _fsum_gap(r, gamma)])


def _aggregates_of(
    x: Matrix | None,
    draws: Callable[[], Draws],
    reps: int,
    level: float,
    gamma: float,
    sampler: Sampler,
    task_bootstrap: bool,
) -> AggregateEstimates:
    if x is None:
        return AggregateEstimates(_NO_ESTIMATE, _NO_ESTIMATE, _NO_ESTIMATE, _NO_ESTIMATE)
    values = _fsum_aggregates(_batch(x), gamma)[0].tolist()

    def statistic(r: Batch) -> NDArray[np.float64]:
        if sampler == "rliable":
            return _numpy_aggregates(r, gamma)
        return _fsum_aggregates(r, gamma)

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
    draws: Callable[[], Draws],
    reps: int,
    level: float,
    sampler: Sampler,
) -> Estimate:
    if pair is None:
        return _NO_ESTIMATE
    x, y = pair
    value = float(_fsum_improvement(_batch(x), _batch(y))[0])
    statistic = _numpy_improvement if sampler == "rliable" else _fsum_improvement
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
    draws: Callable[[], Draws],
    reps: int,
    level: float,
    sampler: Sampler,
    task_bootstrap: bool,
) -> tuple[Estimate, ...]:
    if x is None:
        return tuple(_NO_ESTIMATE for _ in taus)
    if not taus:
        return ()
    size = _profile_size(_batch(x), distribution)
    values = (_profile(_batch(x), taus, distribution)[0] / size).tolist()
    one = _numpy_profile if sampler == "rliable" else _profile

    def statistic(r: Batch) -> NDArray[np.int64]:
        return one(r, taus, distribution)

    counts = _replicates([x], statistic, len(taus), draws(), reps, task_bootstrap, int)
    intervals = [percentile_interval(counts[:, i] / size, level) for i in range(len(taus))]
    return tuple(Estimate(v, i) for v, i in zip(values, intervals, strict=True))


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
