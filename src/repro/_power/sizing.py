"""The t tests' power (rules 4 to 7 for a measure): a design's standard error and degrees
of freedom, the power of the noncentral t, the minimum detectable effect and the runs needed."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Literal

from attrs import frozen
from scipy import stats as sps
from scipy.optimize import brentq

Sidedness = Literal["one-sided", "two-sided"]

#: The most doublings of the noncentrality tried before the target power is given up on.
_MAX_DOUBLINGS = 64
#: The most ulps an MDE is raised by so that its power reaches the target.
_MAX_NUDGES = 10_000


# --------------------------------------------------------------------------- the statistics


@frozen
class Design:
    """A t test's design: the standard error of the difference and its degrees of freedom."""

    se: float
    df: float


def paired_design(sd: float, n: int) -> Design:
    """The paired t of ``n`` pairs whose differences have sd ``sd``: se ``sd / sqrt(n)`` on
    ``n - 1`` degrees of freedom (rule 4)."""
    if not (sd > 0 and math.isfinite(sd)) or n < 2:
        raise ValueError(f"a paired design needs sd > 0 and n >= 2, not sd={sd}, n={n}")
    return Design(sd / math.sqrt(n), float(n - 1))


def welch_design(sd_a: float, sd_b: float, n_a: int, n_b: int) -> Design:
    """Welch's t of groups of ``n_a`` and ``n_b`` runs with sds ``sd_a`` and ``sd_b``: se
    ``sqrt(sd_a^2 / n_a + sd_b^2 / n_b)`` on the Welch-Satterthwaite degrees of freedom of
    those variances (rule 4)."""
    if n_a < 2 or n_b < 2 or not (sd_a >= 0 and sd_b >= 0) or not (sd_a > 0 or sd_b > 0):
        raise ValueError(
            f"a Welch design needs n >= 2 per group and an sd > 0, not sd_a={sd_a}, "
            f"sd_b={sd_b}, n_a={n_a}, n_b={n_b}"
        )
    pa, pb = sd_a * sd_a / n_a, sd_b * sd_b / n_b
    df = (pa + pb) ** 2 / (pa * pa / (n_a - 1) + pb * pb / (n_b - 1))
    return Design(math.sqrt(pa + pb), df)


def t_power(noncentrality: float, df: float, alpha: float, sided: Sidedness) -> float:
    """The power of a t test on ``df`` degrees of freedom whose statistic is noncentral t with
    ``noncentrality`` (rule 5): one-sided, the chance it exceeds ``t_{1-alpha}``; two-sided, the
    chance it lies beyond ``±t_{1-alpha/2}``, both tails counted. The lower tail is taken by
    symmetry, ``P(T < -c; nc) = P(T > c; -nc)``, from the survival function: SciPy's noncentral
    t cdf is NaN in parts of its far lower tail, where its survival function is not."""
    tail = alpha if sided == "one-sided" else alpha / 2
    critical = float(sps.t.isf(tail, df))
    power = float(sps.nct.sf(critical, df, noncentrality))
    if sided == "two-sided":
        power += float(sps.nct.sf(critical, df, -noncentrality))
    if not math.isfinite(power):
        raise ValueError(f"no power computed for noncentrality {noncentrality} on {df} df")
    return power


def check_target(alpha: float, power: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie strictly between 0 and 1, not {alpha}")
    if not alpha < power < 1:
        raise ValueError(f"the power must lie strictly between alpha ({alpha}) and 1, not {power}")


def noncentrality_needed(df: float, alpha: float, power: float, sided: Sidedness) -> float:
    """The smallest noncentrality at or above 0 whose power (:func:`t_power`) reaches ``power``
    (rule 6): Brent's root of ``t_power(nc) - power``, bracketed by doubling, raised by the
    ulps rounding leaves it short."""
    check_target(alpha, power)

    def short(nc: float) -> float:
        return t_power(nc, df, alpha, sided) - power

    high = 1.0
    for _ in range(_MAX_DOUBLINGS):
        if short(high) >= 0:
            break
        high *= 2
    else:
        raise ValueError(f"no noncentrality up to {high} reaches power {power}")
    root = float(brentq(short, 0.0, high, xtol=1e-300, rtol=4 * sys.float_info.epsilon))
    return raised(root, lambda nc: short(nc) >= 0)


def raised(x: float, reached: Callable[[float], bool]) -> float:
    """``x``, raised ulp by ulp until ``reached``."""
    for _ in range(_MAX_NUDGES):
        if reached(x):
            return x
        x = math.nextafter(x, math.inf)
    raise ValueError(f"the target is not reached within {_MAX_NUDGES} ulps of {x}")


def mde(design: Design, alpha: float, power: float, sided: Sidedness) -> float:
    """The minimum detectable effect of ``design`` (rule 6): the smallest effect beyond the null
    boundary, in the measure's units, whose power reaches ``power``; never one whose power
    falls short of it."""
    nc = noncentrality_needed(design.df, alpha, power, sided)
    return raised(
        nc * design.se,
        lambda effect: t_power(effect / design.se, design.df, alpha, sided) >= power,
    )


def runs_needed(
    effect: float,
    design_at: Callable[[int], Design | None],
    alpha: float,
    power: float,
    sided: Sidedness,
    max_runs: int,
) -> int | None:
    """The fewest runs per condition, at most ``max_runs``, whose design
    (``design_at(runs)``; None when the sample is too small for a t test) detects ``effect``
    beyond the null boundary with ``power`` (rule 7); None when ``max_runs`` do not. A
    two-sided test detects ``-effect`` as it does ``effect``; a one-sided one needs an effect
    above 0."""
    check_target(alpha, power)
    if sided == "two-sided":
        effect = abs(effect)
    if not (effect > 0 and math.isfinite(effect)):
        raise ValueError(f"a test has power {power} only for an effect above 0, not {effect}")

    def reached(r: int) -> bool:
        design = design_at(r)
        return design is not None and t_power(effect / design.se, design.df, alpha, sided) >= power

    low, high = 0, 1  # low: known short (0 runs detect nothing), high: the next to try
    while not reached(high):
        if high >= max_runs:
            return None
        low, high = high, min(2 * high, max_runs)
    while high - low > 1:
        middle = (low + high) // 2
        if reached(middle):
            high = middle
        else:
            low = middle
    return high
