"""Comparisons of two groups of runs, A and B, written for bit-exact recomputation, and Holm's
adjustment of a family's p-values (:func:`holm`).

Four pure functions, each returning a small frozen result whose floats are ``None`` where the
quantity is undefined (never NaN):

- :func:`mcnemar_exact`: paired pass/fail outcomes. Exact McNemar test and the difference of the
  two pass rates with Newcombe's paired score interval.
- :func:`independent_proportions`: pass/fail outcomes of two groups that do not pair. Fisher's
  exact test and the difference of the pass rates with Newcombe's hybrid score interval.
- :func:`clustered_difference`: values of runs that share clusters (scenarios, say). Difference
  of the two group means with a cluster-robust (CR1) standard error and a t interval.
- :func:`clustered_paired_difference`: pairs of values in clusters. Mean of the paired
  differences with a CR1 standard error and a t interval.

Conventions. The difference is always A minus B. ``alternative`` names the hypothesis about that
difference: ``"greater"`` says A's parameter exceeds B's, ``"less"`` the opposite, ``"two-sided"``
that they differ. Intervals are always two-sided at ``level``, whatever the alternative.

Determinism. Counts are integers; sums of floats use :func:`math.fsum`, which rounds correctly
and so does not depend on the order of the runs; normal quantiles come from
:class:`statistics.NormalDist`. Where SciPy computes a p-value, the arguments are first put in
a canonical form, so that swapping A and B (and mirroring the alternative) calls SciPy with the
very same arguments: the difference is then negated, the interval mirrored and the p-value kept,
bit for bit. SciPy is imported inside the functions that need it (importing ``scipy.stats`` costs
over a second).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, get_args

from attrs import frozen

from repro._stats.estimators import normal_quantile, t_quantile

__all__ = [
    "Alternative",
    "ClusteredDifference",
    "ClusteredPairedDifference",
    "Group",
    "IndependentProportions",
    "Interval",
    "IntervalMethod",
    "PairedProportions",
    "clustered_difference",
    "clustered_paired_difference",
    "holm",
    "independent_proportions",
    "mcnemar_exact",
]

Alternative = Literal["two-sided", "greater", "less"]
"""The hypothesis about the difference A minus B: nonzero, positive or negative."""

Group = Literal["A", "B"]
"""The group a run belongs to."""

IntervalMethod = Literal["newcombe-paired-score", "newcombe-hybrid-score", "cluster-t"]
"""How an :class:`Interval` was computed: Newcombe (1998b) method 10 for paired proportions,
Newcombe (1998a) method 10 for independent proportions, or a t interval on a cluster-robust
standard error with G-1 degrees of freedom."""

_MIRROR: dict[Alternative, Alternative] = {
    "two-sided": "two-sided",
    "greater": "less",
    "less": "greater",
}


@frozen
class Interval:
    """A two-sided confidence interval at ``level`` for a difference A minus B."""

    method: IntervalMethod
    level: float
    low: float
    high: float


@frozen
class PairedProportions:
    """Paired pass/fail outcomes (:func:`mcnemar_exact`).

    ``both``, ``a_only``, ``b_only`` and ``neither`` count the pairs in which both runs passed,
    only A's, only B's, and neither; ``n`` is their total. ``difference`` is p_A - p_B =
    (a_only - b_only) / n and ``interval`` its Newcombe paired score interval; both are None
    when there is no pair. ``p_value`` is the exact McNemar p-value, 1.0 when no pair is
    discordant (including when there is no pair).
    """

    n: int
    both: int
    a_only: int
    b_only: int
    neither: int
    alternative: Alternative
    p_value: float
    difference: float | None
    interval: Interval | None


@frozen
class IndependentProportions:
    """Pass/fail outcomes of two groups that do not pair (:func:`independent_proportions`).

    ``passed_a`` of ``n_a`` runs of A passed, ``passed_b`` of ``n_b`` of B. The proportions,
    their ``difference`` p_A - p_B and its Newcombe hybrid score ``interval`` are None when a
    group is empty. ``p_value`` is Fisher's exact p-value, 1.0 when a group is empty or when
    every run passed or every run failed.
    """

    n_a: int
    passed_a: int
    n_b: int
    passed_b: int
    alternative: Alternative
    p_value: float
    proportion_a: float | None
    proportion_b: float | None
    difference: float | None
    interval: Interval | None


@frozen
class ClusteredDifference:
    """Difference of two group means with a cluster-robust standard error
    (:func:`clustered_difference`).

    ``n_a`` and ``n_b`` runs of A and B in ``clusters`` distinct clusters. ``mean_a``,
    ``mean_b`` and ``difference`` (mean_a - mean_b) are None when a group is empty. ``se`` is
    the CR1 standard error, None with fewer than two clusters or fewer than three runs; ``df``
    (clusters - 1), ``statistic`` (difference / se), ``p_value`` and ``interval`` follow it.
    With ``se`` 0 (every residual 0) the interval is the point and ``statistic`` and
    ``p_value`` are None.
    """

    n_a: int
    n_b: int
    clusters: int
    alternative: Alternative
    mean_a: float | None
    mean_b: float | None
    difference: float | None
    se: float | None
    df: int | None
    statistic: float | None
    p_value: float | None
    interval: Interval | None


@frozen
class ClusteredPairedDifference:
    """Mean of paired differences with a cluster-robust standard error
    (:func:`clustered_paired_difference`).

    ``n`` pairs in ``clusters`` distinct clusters; ``difference`` is the mean of a - b over the
    pairs, None when there is no pair. ``se`` is the CR1 standard error, None with fewer than
    two clusters; ``df`` (clusters - 1), ``statistic``, ``p_value`` and ``interval`` follow it
    as in :class:`ClusteredDifference`.
    """

    n: int
    clusters: int
    alternative: Alternative
    difference: float | None
    se: float | None
    df: int | None
    statistic: float | None
    p_value: float | None
    interval: Interval | None


# --- checks ------------------------------------------------------------------------------------


def _check(alternative: str, level: float) -> None:
    if alternative not in get_args(Alternative):
        raise ValueError(f"alternative must be one of {get_args(Alternative)}, not {alternative!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie strictly between 0 and 1, not {level!r}")


def _outcome(x: object) -> bool:
    if not isinstance(x, bool):
        raise TypeError(f"an outcome must be a bool, not {type(x).__name__}")
    return x


def _value(x: float) -> float:
    v = float(x)
    if not math.isfinite(v):
        raise ValueError(f"a value must be finite, not {v!r}")
    return v


# --- proportions -------------------------------------------------------------------------------


def _wilson(passed: int, n: int, z: float) -> tuple[float, float]:
    """Wilson score interval for passed/n (n > 0), clamped to [0, 1] and exact at the ends:
    the lower limit is 0 when nothing passed, the upper 1 when everything did."""
    z2 = z * z
    denominator = n + z2
    center = (passed + z2 / 2) / denominator
    half = z * math.sqrt(passed * (n - passed) / n + z2 / 4) / denominator
    low = 0.0 if passed == 0 else max(0.0, center - half)
    high = 1.0 if passed == n else min(1.0, center + half)
    return low, high


def _square_add(dx: float, dy: float, phi: float) -> float:
    # dx^2 - 2 phi dx dy + dy^2 >= (dx - dy)^2 >= 0 for |phi| <= 1; max() absorbs rounding.
    return math.sqrt(max(0.0, dx * dx - 2.0 * phi * dx * dy + dy * dy))


def _newcombe(
    d: float,
    pa: float,
    pb: float,
    wa: tuple[float, float],
    wb: tuple[float, float],
    phi: float,
    method: IntervalMethod,
    level: float,
) -> Interval:
    """Newcombe's square-and-add interval for d = pa - pb from the Wilson limits of each
    proportion and the correlation ``phi`` between them (0 for independent groups)."""
    (la, ua), (lb, ub) = wa, wb
    low = d - _square_add(pa - la, ub - pb, phi)
    high = d + _square_add(pb - lb, ua - pa, phi)
    return Interval(method=method, level=level, low=max(-1.0, low), high=min(1.0, high))


def _paired_phi(both: int, a_only: int, b_only: int, neither: int) -> float:
    """Newcombe's (1998b) shrunken phi coefficient of the paired 2x2 table."""
    n = both + a_only + b_only + neither
    product = (both + a_only) * (b_only + neither) * (both + b_only) * (a_only + neither)
    if product == 0:
        return 0.0
    cross = both * neither - a_only * b_only
    if cross > n / 2:
        shrunk = cross - n / 2
    elif cross >= 0:
        shrunk = 0.0
    else:
        shrunk = float(cross)
    return shrunk / math.sqrt(product)


def _paired_table(pairs: Sequence[tuple[bool, bool]]) -> tuple[int, int, int, int]:
    """The pairs in which both runs passed, only A's, only B's, and neither."""
    both = a_only = b_only = neither = 0
    for a, b in pairs:
        pa, pb = _outcome(a), _outcome(b)
        if pa and pb:
            both += 1
        elif pa:
            a_only += 1
        elif pb:
            b_only += 1
        else:
            neither += 1
    return both, a_only, b_only, neither


def _mcnemar_p(a_only: int, b_only: int, alternative: Alternative) -> float:
    discordant = a_only + b_only
    if discordant == 0:
        return 1.0
    # Lazy: SciPy only for an exact test; verify of a normal interval loads none.
    from scipy import stats as sps

    if alternative == "two-sided":
        # Bin(d, 1/2) is symmetric: the p-value of k equals that of d - k; ask with the smaller.
        k = min(a_only, b_only)
        return float(sps.binomtest(k, discordant, 0.5, alternative="two-sided").pvalue)
    # P(X >= a_only) = P(Y <= b_only) with Y = d - X ~ Bin(d, 1/2): always ask for a lower tail.
    k = b_only if alternative == "greater" else a_only
    return float(sps.binomtest(k, discordant, 0.5, alternative="less").pvalue)


def mcnemar_exact(
    pairs: Sequence[tuple[bool, bool]],
    alternative: Alternative = "two-sided",
    level: float = 0.95,
) -> PairedProportions:
    """Compare paired pass/fail outcomes: each pair is (A's run passed, B's run passed).

    The p-value is the exact (conditional) McNemar test: the binomial test of ``a_only``
    successes in ``a_only + b_only`` discordant pairs with probability 1/2, as
    ``scipy.stats.binomtest(a_only, a_only + b_only, 0.5, alternative)`` computes it; 1.0 when
    no pair is discordant. ``"greater"`` says A passes more often than B.

    The interval for p_A - p_B is Newcombe's method 10 for paired data (Newcombe 1998,
    *Statistics in Medicine* 17:2635-2650): the Wilson score intervals (l_A, u_A), (l_B, u_B) of
    the two marginal pass rates are combined by square-and-add,

        low  = d - sqrt((p_A - l_A)^2 - 2 phi (p_A - l_A)(u_B - p_B) + (u_B - p_B)^2)
        high = d + sqrt((p_B - l_B)^2 - 2 phi (p_B - l_B)(u_A - p_A) + (u_A - p_A)^2)

    with d = (a_only - b_only)/n and phi the phi coefficient of the 2x2 table shrunk towards 0:
    with c = both*neither - a_only*b_only and m the product of the four margins, phi = (c -
    n/2)/sqrt(m) if c > n/2, 0 if 0 <= c <= n/2, c/sqrt(m) if c < 0, and 0 when a margin is
    empty. It needs no iteration, stays within [-1, 1], and is defined for every n > 0: with
    every pair concordant the difference is 0 and the interval is the square-and-add of the
    Wilson half-widths. With no pair the difference and interval are None and the p-value 1.0.
    """
    _check(alternative, level)
    both, a_only, b_only, neither = _paired_table(pairs)
    n = both + a_only + b_only + neither
    p_value = _mcnemar_p(a_only, b_only, alternative)
    difference: float | None = None
    interval: Interval | None = None
    if n:
        difference = (a_only - b_only) / n
        z = normal_quantile(level)
        phi = _paired_phi(both, a_only, b_only, neither)
        wa = _wilson(both + a_only, n, z)
        wb = _wilson(both + b_only, n, z)
        pa_, pb_ = (both + a_only) / n, (both + b_only) / n
        interval = _newcombe(difference, pa_, pb_, wa, wb, phi, "newcombe-paired-score", level)
    return PairedProportions(
        n=n,
        both=both,
        a_only=a_only,
        b_only=b_only,
        neither=neither,
        alternative=alternative,
        p_value=p_value,
        difference=difference,
        interval=interval,
    )


def _fisher_p(passed_a: int, n_a: int, passed_b: int, n_b: int, alternative: Alternative) -> float:
    if n_a == 0 or n_b == 0:
        return 1.0
    # The test does not depend on which row is which (with the alternative mirrored): ask with
    # the smaller (passed, n) first, so that swapping A and B asks the very same question.
    if (passed_b, n_b) < (passed_a, n_a):
        passed_a, n_a, passed_b, n_b = passed_b, n_b, passed_a, n_a
        alternative = _MIRROR[alternative]
    elif (passed_b, n_b) == (passed_a, n_a) and alternative == "greater":
        # Two equal rows: the hypergeometric law of the first cell is symmetric about its
        # mean, so both one-sided p-values are the same number; ask for one of them.
        alternative = "less"
    # Lazy: SciPy only for an exact test; verify of a normal interval loads none.
    from scipy import stats as sps

    table = [[passed_a, n_a - passed_a], [passed_b, n_b - passed_b]]
    return float(sps.fisher_exact(table, alternative=alternative).pvalue)


def independent_proportions(
    a: Sequence[bool],
    b: Sequence[bool],
    alternative: Alternative = "two-sided",
    level: float = 0.95,
) -> IndependentProportions:
    """Compare the pass rates of two groups of runs that do not pair (``a`` and ``b`` are the
    outcomes of their runs).

    The p-value is Fisher's exact test of the 2x2 table [[passed_a, failed_a], [passed_b,
    failed_b]] (``scipy.stats.fisher_exact``; ``"greater"`` says A passes more often, an odds
    ratio above 1). Fisher's test conditions on both margins, as the exact McNemar test of
    :func:`mcnemar_exact` conditions on the discordant pairs; it is exact (never above its
    level) and a finite sum of hypergeometric terms with no numerical search. Boschloo's test
    is more powerful, but SciPy computes its p-value as a maximum over a nuisance parameter on
    a finite grid, a value that depends on the grid, on the optimizer and so on the SciPy
    version; a figure that ``repro verify`` recomputes should not.

    The interval for p_A - p_B is Newcombe's hybrid score interval (method 10 of Newcombe 1998,
    *Statistics in Medicine* 17:873-890), the square-and-add of the two Wilson score
    intervals: low = d - sqrt((p_A - l_A)^2 + (u_B - p_B)^2), high = d + sqrt((p_B - l_B)^2 +
    (u_A - p_A)^2). It is what ``statsmodels.stats.proportion.confint_proportions_2indep(...,
    method="newcomb")`` computes, closed-form, within [-1, 1], and defined whenever both groups
    have a run (0/n and n/n included). With an empty group the proportions, difference and
    interval are None and the p-value 1.0.
    """
    _check(alternative, level)
    n_a, n_b = len(a), len(b)
    passed_a = sum(_outcome(x) for x in a)
    passed_b = sum(_outcome(x) for x in b)
    p_value = _fisher_p(passed_a, n_a, passed_b, n_b, alternative)
    pa = passed_a / n_a if n_a else None
    pb = passed_b / n_b if n_b else None
    difference: float | None = None
    interval: Interval | None = None
    if pa is not None and pb is not None:
        difference = pa - pb
        z = normal_quantile(level)
        wa, wb = _wilson(passed_a, n_a, z), _wilson(passed_b, n_b, z)
        interval = _newcombe(difference, pa, pb, wa, wb, 0.0, "newcombe-hybrid-score", level)
    return IndependentProportions(
        n_a=n_a,
        passed_a=passed_a,
        n_b=n_b,
        passed_b=passed_b,
        alternative=alternative,
        p_value=p_value,
        proportion_a=pa,
        proportion_b=pb,
        difference=difference,
        interval=interval,
    )


# --- clustered means ---------------------------------------------------------------------------


def _t_inference(
    estimate: float, se: float, df: int, alternative: Alternative, level: float
) -> tuple[float | None, float | None, Interval]:
    """Statistic, p-value and t interval of ``estimate`` with standard error ``se``."""
    # Lazy: SciPy only for a t interval; verify of a normal one loads none.
    from scipy import stats as sps

    half = t_quantile(level, df) * se
    if not math.isfinite(half):
        raise ValueError("the values are too large: the interval's half-width overflows")
    interval = Interval(method="cluster-t", level=level, low=estimate - half, high=estimate + half)
    t = estimate / se if se > 0.0 else math.inf
    if not math.isfinite(t):
        # A zero standard error (or one so small that the statistic overflows): no test.
        return None, None, interval
    # Only the lower tail is asked for, so that -t under a swap of A and B gives the same call.
    if alternative == "two-sided":
        p = min(1.0, 2.0 * float(sps.t.cdf(-abs(t), df)))
    elif alternative == "greater":
        p = float(sps.t.cdf(-t, df))
    else:
        p = float(sps.t.cdf(t, df))
    return t, p, interval


def _follow(
    estimate: float | None,
    se: float | None,
    clusters: int,
    alternative: Alternative,
    level: float,
) -> tuple[int | None, float | None, float | None, Interval | None]:
    """Degrees of freedom, statistic, p-value and interval; all None without an estimate or a
    standard error."""
    if estimate is None or se is None:
        return None, None, None, None
    df = clusters - 1
    statistic, p_value, interval = _t_inference(estimate, se, df, alternative, level)
    return df, statistic, p_value, interval


def _cr1_se(scores: dict[str, list[float]], n: int, k: int) -> float | None:
    """CR1 standard error of an estimate whose influence on each run is listed per cluster:
    sqrt(G/(G-1) * (N-1)/(N-K) * sum over clusters of (sum of the cluster's influences)^2)."""
    g = len(scores)
    if g < 2 or n <= k:
        return None
    meat = math.fsum(math.fsum(s) ** 2 for s in scores.values())
    se = math.sqrt(meat * (g / (g - 1)) * ((n - 1) / (n - k)))
    if not math.isfinite(se):
        raise ValueError("the values are too large: their squared deviations overflow")
    return se


def _difference_se(
    runs: Sequence[tuple[str, Group, float]], a: tuple[float, int], b: tuple[float, int]
) -> float | None:
    """The CR1 standard error of mean_A - mean_B, from each group's (mean, n): each run's
    influence is its residual over its group's n, negated for B."""
    (mean_a, n_a), (mean_b, n_b) = a, b
    scores: dict[str, list[float]] = {}
    for cluster, group, value in runs:
        v = float(value)
        score = (v - mean_a) / n_a if group == "A" else -((v - mean_b) / n_b)
        scores.setdefault(str(cluster), []).append(score)
    return _cr1_se(scores, n_a + n_b, 2)


def clustered_difference(
    runs: Sequence[tuple[str, Group, float]],
    alternative: Alternative = "two-sided",
    level: float = 0.95,
) -> ClusteredDifference:
    """Difference of the mean values of groups A and B when runs share clusters; each run is
    (cluster label, group, value).

    The estimand is mean_A - mean_B, the coefficient of the group indicator (1 for A) in the
    least-squares regression of value on an intercept and that indicator. Its standard error
    is the cluster-robust sandwich of that regression with the CR1 small-sample factor
    (Liang-Zeger; Stata's ``regress, vce(cluster)``, statsmodels' ``cov_type="cluster"``): with
    residuals e_i = value_i - mean of the run's group, N runs, K = 2 coefficients and G
    clusters,

        se^2 = G/(G-1) * (N-1)/(N-K) * sum_g s_g^2,
        s_g  = sum_{i in g, i in A} e_i / n_A - sum_{i in g, i in B} e_i / n_B

    which is the [1, 1] element of (X'X)^-1 (sum_g X_g' e_g e_g' X_g) (X'X)^-1 times the factor.
    For one group this is the clustered standard error of a mean in Miller (2024), "Adding
    Error Bars to Evals" (arXiv 2411.00640), there without the small-sample factor. The interval
    is difference +/- t_{G-1} * se and the p-value that of t = difference / se on G-1 degrees of
    freedom (as statsmodels does with ``use_t=True``), with ``"greater"`` saying mean_A > mean_B.
    Undefined parts are None: the means with an empty group, the standard error with fewer
    than two clusters or fewer than three runs.
    """
    _check(alternative, level)
    values: dict[Group, list[float]] = {"A": [], "B": []}
    labels: set[str] = set()
    for cluster, group, value in runs:
        if group not in values:
            raise ValueError(f"a run's group must be 'A' or 'B', not {group!r}")
        values[group].append(_value(value))
        labels.add(str(cluster))
    clusters = len(labels)
    n_a, n_b = len(values["A"]), len(values["B"])
    mean_a = math.fsum(values["A"]) / n_a if n_a else None
    mean_b = math.fsum(values["B"]) / n_b if n_b else None
    difference: float | None = None
    se: float | None = None
    if mean_a is not None and mean_b is not None:
        difference = mean_a - mean_b
        se = _difference_se(runs, (mean_a, n_a), (mean_b, n_b))
    df, statistic, p_value, interval = _follow(difference, se, clusters, alternative, level)
    return ClusteredDifference(
        n_a=n_a,
        n_b=n_b,
        clusters=clusters,
        alternative=alternative,
        mean_a=mean_a,
        mean_b=mean_b,
        difference=difference,
        se=se,
        df=df,
        statistic=statistic,
        p_value=p_value,
        interval=interval,
    )


def clustered_paired_difference(
    pairs: Sequence[tuple[str, float, float]],
    alternative: Alternative = "two-sided",
    level: float = 0.95,
) -> ClusteredPairedDifference:
    """Mean of paired differences when pairs share clusters; each pair is (cluster label, A's
    value, B's value).

    The estimand is the mean of d_i = a_i - b_i, the intercept of the regression of d on a
    constant. Its standard error is that regression's CR1 cluster-robust one, clustering pairs:
    with e_i = d_i - mean(d), N pairs, K = 1 and G clusters,

        se^2 = G/(G-1) * (N-1)/(N-K) * sum_g (sum_{i in g} e_i / N)^2     ((N-1)/(N-K) = 1)

    Miller (2024) recommends clustered standard errors for such paired differences; this is his
    clustered standard error of a mean applied to d, times G/(G-1). The interval, statistic and
    p-value are as in :func:`clustered_difference` (t on G-1 degrees of freedom; ``"greater"``
    says the mean difference is positive). With no pair everything but the counts is None; with
    fewer than two clusters the standard error and what follows from it.
    """
    _check(alternative, level)
    diffs = [(str(cluster), _value(_value(a) - _value(b))) for cluster, a, b in pairs]
    n = len(diffs)
    clusters = len({cluster for cluster, _ in diffs})
    mean: float | None = None
    se: float | None = None
    if n:
        mean = math.fsum(d for _, d in diffs) / n
        scores: dict[str, list[float]] = {}
        for cluster, d in diffs:
            scores.setdefault(cluster, []).append((d - mean) / n)
        se = _cr1_se(scores, n, 1)
    df, statistic, p_value, interval = _follow(mean, se, clusters, alternative, level)
    return ClusteredPairedDifference(
        n=n,
        clusters=clusters,
        alternative=alternative,
        difference=mean,
        se=se,
        df=df,
        statistic=statistic,
        p_value=p_value,
        interval=interval,
    )


# --- multiplicity ------------------------------------------------------------------------------


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values, in the given order (None stays None and does not
    count in the family's size): the i-th smallest of m p-values becomes the largest of
    ``min(1, (m - j) * p_(j))`` over ``j <= i`` (counting from 0)."""
    known = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(known)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for j, (p, i) in enumerate(known):
        running = max(running, min(1.0, (m - j) * p))
        out[i] = running
    return out
