"""Estimators and intervals, written for bit-exact recomputation.

Sums use :func:`math.fsum` (correctly rounded, so independent of order), variances are two-pass,
normal quantiles come from :class:`statistics.NormalDist`. The t quantile and the bootstrap use
SciPy; the bootstrap is seeded and reads its samples in sealed order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import Any, Literal

from repro.models import Estimand, IntervalMethod, IntervalValue

__all__ = ["Summary", "estimand_interval", "mean_interval", "normal_quantile", "summarize"]

Method = IntervalMethod


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


def _t(level: float, df: float) -> float:
    # SciPy is imported only where it is needed: importing scipy.stats costs over a second,
    # which a study or a verification with normal intervals should not pay.
    from scipy import stats as sps

    return float(sps.t.ppf(0.5 + level / 2, df))


def _symmetric(method: Method, level: float, center: float, half: float) -> IntervalValue:
    return IntervalValue(
        method=method, level=level, low=center - half, high=center + half, halfwidth=half
    )


def _bootstrap(
    samples: Sequence[Sequence[float]],
    combine: Literal["sum", "mean"],
    level: float,
    resamples: int,
    seed: int,
) -> IntervalValue:
    import numpy as np
    from scipy import stats as sps

    arrays = [np.asarray(s, dtype=np.float64) for s in samples]

    def statistic(*xs: Any, axis: int = -1) -> Any:
        means = [x.mean(axis=axis) for x in xs]
        total = np.sum(means, axis=0)
        return total if combine == "sum" else total / len(means)

    result = sps.bootstrap(
        arrays,
        statistic,
        confidence_level=level,
        n_resamples=resamples,
        method="percentile",
        paired=False,
        vectorized=True,
        rng=np.random.default_rng(seed),
    )
    low = float(result.confidence_interval.low)
    high = float(result.confidence_interval.high)
    return IntervalValue(
        method="bootstrap", level=level, low=low, high=high, halfwidth=(high - low) / 2
    )


def mean_interval(
    s: Summary, method: Method, level: float, resamples: int, seed: int
) -> IntervalValue | None:
    """Interval for one condition's mean; None with fewer than two values."""
    if s.var is None or s.mean is None:
        return None
    se = math.sqrt(s.var / s.n)
    if method == "normal":
        return _symmetric(method, level, s.mean, normal_quantile(level) * se)
    if method == "t":
        return _symmetric(method, level, s.mean, _t(level, s.n - 1) * se)
    return _bootstrap([s.values], "sum", level, resamples, seed)


def estimand_interval(
    summaries: Sequence[Summary],
    kind: Estimand,
    method: Method,
    level: float,
    resamples: int,
    seed: int,
) -> tuple[float | None, float | None, IntervalValue | None]:
    """Value, standard error and interval of the primary estimand across conditions.

    Sum of means: SE = sqrt(sum(var_i / n_i)); mean of means: that SE divided by k. The t method
    uses Welch-Satterthwaite degrees of freedom. Undefined (None) when any condition lacks two
    valid values.
    """
    if not summaries or any(s.var is None or s.mean is None for s in summaries):
        return None, None, None
    k = len(summaries)
    parts = [s.var / s.n for s in summaries]  # type: ignore[operator]
    total = math.fsum(s.mean for s in summaries)  # type: ignore[misc]
    se = math.sqrt(math.fsum(parts))
    if kind == "mean-of-condition-means":
        total, se = total / k, se / k
    if method == "normal":
        interval = _symmetric(method, level, total, normal_quantile(level) * se)
    elif method == "t":
        denominator = math.fsum(p * p / (s.n - 1) for p, s in zip(parts, summaries, strict=True))
        df = math.fsum(parts) ** 2 / denominator if denominator > 0 else math.inf
        half = (normal_quantile(level) if math.isinf(df) else _t(level, df)) * se
        interval = _symmetric(method, level, total, half)
    else:
        combine: Literal["sum", "mean"] = "sum" if kind == "sum-of-condition-means" else "mean"
        interval = _bootstrap([s.values for s in summaries], combine, level, resamples, seed)
    return total, se, interval
