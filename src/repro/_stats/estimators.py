"""Estimators and intervals of the measure, written for bit-exact recomputation: each
condition's mean, sd and interval and the estimand's over them (aggregates.json builds its
figures from them, and the family-wise reproduction criterion recomputes the intervals at
another level).

Sums use :func:`math.fsum` (correctly rounded, so independent of order), variances are two-pass,
normal quantiles come from :class:`statistics.NormalDist`. The t quantile comes from SciPy (a
figure verify compares within :data:`repro._stats.figures.REL_TOLERANCE`); the bootstrap is
seeded, reads its samples in sealed order, and draws and takes its percentiles by repro's one
bootstrap engine (:mod:`repro._stats.bootstrap`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import Any, Literal

from attrs import frozen

__all__ = [
    "Estimand",
    "Interval",
    "Method",
    "Summary",
    "estimand_interval",
    "estimand_interval_at",
    "mean_interval",
    "mean_interval_at",
    "normal_quantile",
    "summarize",
    "t_quantile",
]

Method = Literal["normal", "t", "bootstrap"]
"""How an interval is computed: the protocol's ``interval.method``."""

Estimand = Literal["sum-of-condition-means", "mean-of-condition-means"]
"""What the estimand is over the conditions' means: the protocol's ``estimand``."""


@frozen
class Interval:
    """A two-sided interval at ``level``, by ``method``; aggregates.json holds its figures."""

    method: Method
    level: float
    low: float
    high: float
    halfwidth: float


class Summary:
    """n, mean and unbiased variance (n-1) of one sample; mean and variance are None when
    undefined."""

    __slots__ = ("mean", "n", "values", "var")

    def __init__(self, values: Sequence[float]) -> None:
        self.values = tuple(values)
        self.n = len(self.values)
        self.mean = math.fsum(self.values) / self.n if self.n else None
        if self.n >= 2 and self.mean is not None:
            m = self.mean
            self.var: float | None = math.fsum((x - m) ** 2 for x in self.values) / (self.n - 1)
        else:
            self.var = None

    @property
    def sd(self) -> float | None:
        """Sample standard deviation."""
        return math.sqrt(self.var) if self.var is not None else None


def summarize(values: Sequence[float]) -> Summary:
    """Summary of ``values`` (already in sealed order)."""
    return Summary(values)


def normal_quantile(level: float) -> float:
    """z of a two-sided interval at ``level``, from the standard library (bit-exact anywhere)."""
    return NormalDist().inv_cdf(0.5 + level / 2)


def t_quantile(level: float, df: float) -> float:
    """t of a two-sided interval at ``level`` on ``df`` degrees of freedom, from SciPy (a figure
    verify compares within the tolerance)."""
    # SciPy is imported only where it is needed: importing scipy.stats costs over a second,
    # which a study or a verification with normal intervals should not pay.
    from scipy import stats as sps

    return float(sps.t.ppf(0.5 + level / 2, df))


def _quantile(method: Method, level: float, df: float) -> float:
    """The normal or t quantile of a two-sided interval at ``level`` (t on ``df`` degrees of
    freedom; infinitely many are the normal's)."""
    if method == "bootstrap":
        # The consistency rules refuse what would ask for this (repro._protocol.rules).
        raise ValueError("a bootstrap interval has no quantile to recompute it by")
    return normal_quantile(level) if method == "normal" or math.isinf(df) else t_quantile(level, df)


def _symmetric(method: Method, level: float, center: float, half: float) -> Interval:
    return Interval(
        method=method, level=level, low=center - half, high=center + half, halfwidth=half
    )


def _estimand_moments(
    means: Sequence[float], variances: Sequence[float], ns: Sequence[int], kind: Estimand
) -> tuple[float, float, float]:
    """Value, standard error and Welch-Satterthwaite degrees of freedom of the estimand, from
    each condition's mean, variance and n (each n at least 2)."""
    parts = [v / n for v, n in zip(variances, ns, strict=True)]
    total = math.fsum(means)
    se = math.sqrt(math.fsum(parts))
    if kind == "mean-of-condition-means":
        total, se = total / len(means), se / len(means)
    denominator = math.fsum(p * p / (n - 1) for p, n in zip(parts, ns, strict=True))
    df = math.fsum(parts) ** 2 / denominator if denominator > 0 else math.inf
    return total, se, df


def _means(resampled: Any) -> Any:
    """Each resample's mean (NumPy's), one a row."""
    return resampled.mean(axis=-1)


#: Values one batch of a bootstrap's resamples holds at most (resamples x runs): it bounds the
#: memory a bootstrap takes, and changes none of its figures (see :func:`_bootstrap`).
_BATCH_VALUES = 1 << 20


def _bootstrap(
    samples: Sequence[Sequence[float]],
    combine: Literal["sum", "mean"],
    level: float,
    resamples: int,
    seed: int,
) -> Interval:
    """The percentile bootstrap interval of the sum (or mean) of the samples' means, each sample
    resampled on its own: the draws ``numpy.random.default_rng(seed).integers`` made
    (:class:`repro._stats.bootstrap.Draws`), every resample of the first sample, then of the next,
    a batch of resamples at a time (which changes no draw); each resample's mean (NumPy's);
    the means added sample by sample (:func:`repro._stats.bootstrap.replicates`); the interval's
    ends the ``linear`` percentiles of those replicates
    (:func:`repro._stats.resampling.percentile_ends`). It is the interval
    ``scipy.stats.bootstrap(..., method="percentile")`` gave of the same draws, which repro
    took it from; its own draws and quantiles keep it the same floats whatever NumPy and SciPy
    re-derive it."""
    # NumPy and the engine are imported here only: a study or a verification with normal or t
    # intervals should not pay for them.
    import numpy as np

    # Lazy: the bootstrap brings NumPy; only a bootstrap interval needs it.
    from repro._stats.bootstrap import Draws, replicates
    from repro._stats.resampling import percentile_ends

    draws = Draws(seed)
    total: Any = None
    for sample in samples:
        x = np.asarray(sample, dtype=np.float64)
        step = _BATCH_VALUES // x.size
        means = replicates(functools.partial(draws.iid, [x]), _means, resamples, step)[:, 0]
        total = means if total is None else total + means
    theta = total if combine == "sum" else total / len(samples)
    low, high = percentile_ends(theta, level)
    return Interval(method="bootstrap", level=level, low=low, high=high, halfwidth=(high - low) / 2)


def mean_interval(
    s: Summary, method: Method, level: float, resamples: int, seed: int
) -> Interval | None:
    """Interval for one condition's mean; None with fewer than two values."""
    if s.var is None or s.mean is None:
        return None
    if method == "bootstrap":
        return _bootstrap([s.values], "sum", level, resamples, seed)
    se = math.sqrt(s.var / s.n)
    return _symmetric(method, level, s.mean, _quantile(method, level, s.n - 1) * se)


def mean_interval_at(mean: float, sd: float, n: int, method: Method, level: float) -> Interval:
    """A condition's interval at ``level`` from its figures in aggregates.json (mean, sd and
    valid n, at least 2), by :func:`mean_interval`'s normal or t rule: what the family-wise
    reproduction criterion checks. A bootstrap cannot be recomputed from them (ValueError)."""
    se = math.sqrt(sd * sd / n)
    return _symmetric(method, level, mean, _quantile(method, level, n - 1) * se)


def estimand_interval(
    summaries: Sequence[Summary],
    kind: Estimand,
    method: Method,
    level: float,
    resamples: int,
    seed: int,
) -> tuple[float | None, float | None, Interval | None]:
    """Value, standard error and interval of the primary estimand across conditions.

    Sum of means: SE = sqrt(sum(var_i / n_i)); mean of means: that SE divided by k. The t method
    uses Welch-Satterthwaite degrees of freedom. Undefined (None) when any condition lacks two
    valid values.
    """
    defined = [(s.mean, s.var) for s in summaries if s.mean is not None and s.var is not None]
    if not summaries or len(defined) < len(summaries):
        return None, None, None
    means, variances = [m for m, _ in defined], [v for _, v in defined]
    total, se, df = _estimand_moments(means, variances, [s.n for s in summaries], kind)
    if method == "bootstrap":
        combine: Literal["sum", "mean"] = "sum" if kind == "sum-of-condition-means" else "mean"
        interval = _bootstrap([s.values for s in summaries], combine, level, resamples, seed)
    else:
        interval = _symmetric(method, level, total, _quantile(method, level, df) * se)
    return total, se, interval


def estimand_interval_at(
    means: Sequence[float],
    sds: Sequence[float],
    ns: Sequence[int],
    kind: Estimand,
    method: Method,
    level: float,
) -> Interval:
    """The estimand's interval at ``level`` from every condition's figures in aggregates.json
    (mean, sd and valid n, each n at least 2), by :func:`estimand_interval`'s normal or t rule
    (the t on Welch-Satterthwaite degrees of freedom): what the family-wise reproduction
    criterion checks. A bootstrap cannot be recomputed from them (ValueError)."""
    total, se, df = _estimand_moments(means, [sd * sd for sd in sds], ns, kind)
    return _symmetric(method, level, total, _quantile(method, level, df) * se)
