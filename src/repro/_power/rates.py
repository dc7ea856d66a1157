"""A rate's exact power (rules 4 to 7 for a rate): where McNemar's and Fisher's exact tests, as the
contrasts ask them, reject, the power summed over those regions, the minimum detectable
difference of rates and the runs needed."""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from attrs import frozen
from scipy import stats as sps
from scipy.optimize import brentq

from repro._power.sizing import Sidedness, check_target, raised
from repro._stats import inference

if TYPE_CHECKING:
    from numpy.typing import NDArray


#: The most pairs a paired rate's exact power is enumerated at: it needs McNemar's critical
#: count for every number of discordant pairs up to the pairs, each found by asking
#: :func:`repro._stats.inference.mcnemar_exact`, whose work grows with the pairs.
MCNEMAR_EXACT_PAIRS = 1_000
#: The most runs in all (``n_a + n_b``) an unpaired rate's exact power is enumerated at: it
#: needs Fisher's critical counts for every margin of the two groups' passes, each found by
#: asking :func:`repro._stats.inference.independent_proportions`.
FISHER_EXACT_RUNS = 200

RateTest = Literal["mcnemar-exact", "fisher-exact"]


def _alternative(sided: Sidedness) -> inference.Alternative:
    """The contrasts' alternative for a test of ``sided``: a one-sided rate test claims that
    ``a`` does better (rates are never non-inferiority contrasts)."""
    return "two-sided" if sided == "two-sided" else "greater"


def mcnemar_rejects(favouring_a: int, favouring_b: int, alpha: float, sided: Sidedness) -> bool:
    """Whether the contrasts' McNemar test rejects at ``alpha`` with ``favouring_a`` and
    ``favouring_b`` discordant pairs: :func:`repro._stats.inference.mcnemar_exact`'s p-value
    below ``alpha``, as a contrast's verdict reads it (the concordant pairs change no p-value)."""
    pairs = [(True, False)] * favouring_a + [(False, True)] * favouring_b
    return inference.mcnemar_exact(pairs, _alternative(sided)).p_value < alpha


def fisher_rejects(
    passed_a: int, n_a: int, passed_b: int, n_b: int, alpha: float, sided: Sidedness
) -> bool:
    """Whether the contrasts' Fisher test rejects at ``alpha`` when ``passed_a`` of ``n_a``
    runs of the test's first group pass and ``passed_b`` of ``n_b`` of its second:
    :func:`repro._stats.inference.independent_proportions`' p-value below ``alpha``."""
    a = [True] * passed_a + [False] * (n_a - passed_a)
    b = [True] * passed_b + [False] * (n_b - passed_b)
    return inference.independent_proportions(a, b, _alternative(sided)).p_value < alpha


def _least(rejects: Callable[[int], bool], low: int, high: int, start: int) -> int:
    """The least ``k`` in ``[low, high]`` at which ``rejects`` holds (``high + 1``: none), for a
    ``rejects`` that is False and then True over the range, walked to from ``start``."""
    if low > high:
        return high + 1
    k = min(max(start, low), high)
    if rejects(k):
        while k > low and rejects(k - 1):
            k -= 1
        return k
    k += 1
    while k <= high and not rejects(k):
        k += 1
    return k


def _most(rejects: Callable[[int], bool], low: int, high: int, start: int) -> int:
    """The most ``k`` in ``[low, high]`` at which ``rejects`` holds (``low - 1``: none), for a
    ``rejects`` that is True and then False over the range, walked to from ``start``."""
    if low > high:
        return low - 1
    k = min(max(start, low), high)
    if rejects(k):
        while k < high and rejects(k + 1):
            k += 1
        return k
    k -= 1
    while k >= low and not rejects(k):
        k -= 1
    return k


class _McNemarCriticals:
    """McNemar's critical counts at one alpha, for every number ``d`` of discordant pairs up to
    the most asked so far (a memo, extended as asked): the fewest pairs favouring ``a`` whose
    test rejects (``d + 1``: none). Given ``d`` the exact test is the binomial test of those
    pairs with probability 1/2: its one-sided p-value falls as they grow, and its two-sided one
    is that of the smaller side, falling as it shrinks, so the test rejects at ``k >= c_d`` (and
    two-sided at ``k <= d - c_d``), each ``c_d`` walked to from the last one."""

    def __init__(self, alpha: float, sided: Sidedness) -> None:
        self._alpha, self._sided = alpha, sided
        self._critical: list[int] = []

    def upto(self, most: int) -> list[int]:
        """``c_d`` for every ``d`` from 0 to ``most``."""
        c = self._critical
        while len(c) <= most:
            c.append(self._next(len(c), c[-1] if c else 0))
        return c[: most + 1]

    def _next(self, d: int, start: int) -> int:
        def rejects(k: int) -> bool:
            return mcnemar_rejects(k, d - k, self._alpha, self._sided)

        # Two-sided, the test is that of the smaller side: its critical count lies above d / 2.
        floor = (d + 1) // 2 if self._sided == "two-sided" else 0
        return _least(rejects, floor, d, start)


@functools.lru_cache(maxsize=16)
def _mcnemar_criticals(alpha: float, sided: Sidedness) -> _McNemarCriticals:
    return _McNemarCriticals(alpha, sided)


def mcnemar_power(
    pairs: int, discordance: float, effect: float, alpha: float, sided: Sidedness
) -> float:
    """The exact power of the contrasts' McNemar test of ``pairs`` independent pairs, a pair
    discordant with probability ``discordance`` (p10 + p01) and the difference of the two
    rates p10 - p01 being ``effect`` (rule 5): ``d ~ Binomial(pairs, discordance)`` pairs are
    discordant, of which ``k ~ Binomial(d, q)`` favour ``a``, ``q = (1 + effect /
    discordance) / 2``; the power is the sum over ``d`` of ``P(d) P(k in the test's rejection
    region at d)``, the region being what :func:`mcnemar_rejects` says (at most
    :data:`MCNEMAR_EXACT_PAIRS` pairs)."""
    if not 0 <= pairs <= MCNEMAR_EXACT_PAIRS:
        raise ValueError(f"McNemar's exact power is enumerated up to {MCNEMAR_EXACT_PAIRS} pairs")
    if not (0 < discordance <= 1 and abs(effect) <= discordance):
        raise ValueError(f"no rates have discordance {discordance} and difference {effect}")
    q = min(1.0, max(0.0, (1.0 + effect / discordance) / 2))
    c = np.asarray(_mcnemar_criticals(alpha, sided).upto(pairs))
    d = np.arange(pairs + 1)
    rejected = sps.binom.sf(c - 1, d, q)
    if sided == "two-sided":
        rejected = rejected + sps.binom.cdf(d - c, d, q)
    weights = _binomial_pmf(d, pairs, discordance)
    return min(1.0, math.fsum((weights * rejected).tolist()))


@functools.lru_cache(maxsize=64)
def _fisher_region(n_a: int, n_b: int, alpha: float, sided: Sidedness) -> NDArray[np.bool_]:
    """Whether the contrasts' Fisher test rejects each table: ``[x, y]`` for ``x`` of ``n_a``
    runs passing in the test's first group and ``y`` of ``n_b`` in its second. Fisher's test
    conditions on the margin ``m = x + y``, given which ``x`` is hypergeometric, and its p-value
    falls as ``x`` grows (one-sided) or moves away from that law's mode (two-sided, the sum of
    the tables no likelier than it): each margin's region is a tail above (and two-sided one
    below) the mode, its edge walked to from the last margin's."""
    region = np.zeros((n_a + 1, n_b + 1), dtype=bool)
    upper = lower = 0
    for m in range(n_a + n_b + 1):
        low, high = max(0, m - n_b), min(n_a, m)

        def rejects(x: int, m: int = m) -> bool:
            return fisher_rejects(x, n_a, m - x, n_b, alpha, sided)

        if sided == "one-sided":
            upper = _least(rejects, low, high, upper)
        else:
            mode = min(max((m + 1) * (n_a + 1) // (n_a + n_b + 2), low), high)
            upper = _least(rejects, mode, high, upper)
            lower = _most(rejects, low, mode, lower)
            xs = np.arange(low, lower + 1)
            region[xs, m - xs] = True
        xs = np.arange(upper, high + 1)
        region[xs, m - xs] = True
    region.setflags(write=False)
    return region


def _binomial_pmf(k: Any, n: Any, p: float) -> Any:
    """Binomial probabilities, ``exp`` of SciPy's ``binom.logpmf``: SciPy 1.17's ``binom.pmf``
    raises OverflowError at ``p`` = 2.2250738585072014e-308 (the smallest normal float; Boost's
    ``ibeta_derivative`` overflows there), and its ``logpmf`` does not. Elsewhere the two agree
    to a few units in the last place."""
    return np.exp(sps.binom.logpmf(k, n, p))


def fisher_power(
    n_a: int, n_b: int, rate_a: float, rate_b: float, alpha: float, sided: Sidedness
) -> float:
    """The exact power of the contrasts' Fisher test of ``n_a`` and ``n_b`` independent runs
    passing with probabilities ``rate_a`` and ``rate_b`` (the test's first group and its
    second; rule 5): the sum, over every table the test rejects (:func:`fisher_rejects`), of
    the product of the two binomial probabilities (at most :data:`FISHER_EXACT_RUNS` runs in
    all)."""
    if not (n_a >= 0 and n_b >= 0 and n_a + n_b <= FISHER_EXACT_RUNS):
        raise ValueError(f"Fisher's exact power is enumerated up to {FISHER_EXACT_RUNS} runs")
    if not (0 <= rate_a <= 1 and 0 <= rate_b <= 1):
        raise ValueError(f"rates lie between 0 and 1, not {rate_a} and {rate_b}")
    region = _fisher_region(n_a, n_b, alpha, sided)
    pa = _binomial_pmf(np.arange(n_a + 1), n_a, rate_a)
    pb = _binomial_pmf(np.arange(n_b + 1), n_b, rate_b)
    return min(1.0, math.fsum(np.outer(pa, pb)[region].tolist()))


@frozen
class RateDesign:
    """A rate test's design at the planned sizes (rule 4): McNemar's exact test of ``n_a =
    n_b`` pairs whose discordance (p10 + p01) is held at ``held``, or Fisher's exact test of
    groups of ``n_a`` and ``n_b`` runs whose mean rate ((p_a + p_b) / 2) is held at ``held``,
    the test's first group being ``a``'s side (``b``'s when lower is better). The effect, the
    difference of the two rates, then reaches at most ``largest``: the discordance, or twice
    the distance of the mean rate from 0 or 1."""

    test: RateTest
    n_a: int
    n_b: int
    held: float

    @property
    def largest(self) -> float:
        """The largest effect the held value allows."""
        if self.test == "mcnemar-exact":
            return self.held
        return 2 * min(self.held, 1 - self.held)

    @property
    def exact(self) -> bool:
        """Whether the sizes lie within the exact enumeration's limit."""
        if self.test == "mcnemar-exact":
            return self.n_a <= MCNEMAR_EXACT_PAIRS
        return self.n_a + self.n_b <= FISHER_EXACT_RUNS


def rate_power(design: RateDesign, effect: float, alpha: float, sided: Sidedness) -> float:
    """The exact power of ``design``'s test for a difference of rates ``effect`` (positive
    favours ``a``), the held value held (rule 5)."""
    if not abs(effect) <= design.largest:
        raise ValueError(f"the effect {effect} exceeds the largest, {design.largest}")
    if design.test == "mcnemar-exact":
        return mcnemar_power(design.n_a, design.held, effect, alpha, sided)
    first = min(1.0, max(0.0, design.held + effect / 2))
    second = min(1.0, max(0.0, design.held - effect / 2))
    return fisher_power(design.n_a, design.n_b, first, second, alpha, sided)


def detected(design: RateDesign, effect: float, alpha: float, sided: Sidedness) -> float:
    """The power a rate's MDE must reach: a two-sided test's, the lower of ``effect``'s and
    ``-effect``'s (Fisher's is not symmetric when the groups' sizes differ)."""
    power = rate_power(design, effect, alpha, sided)
    if sided == "two-sided":
        power = min(power, rate_power(design, -effect, alpha, sided))
    return power


def rate_mde(design: RateDesign, alpha: float, power: float, sided: Sidedness) -> float | None:
    """The minimum detectable difference of rates of ``design`` (rule 6): the smallest effect
    in ``(0, largest]`` whose exact power reaches ``power`` (two-sided: either way), solved
    with :func:`scipy.optimize.brentq` (the power rises with the effect, from at most alpha
    at 0) and raised by the ulps rounding leaves it short; None when even the largest falls
    short."""
    check_target(alpha, power)

    def short(effect: float) -> float:
        return detected(design, effect, alpha, sided) - power

    top = design.largest
    if short(top) < 0:
        return None
    root = float(brentq(short, 0.0, top, xtol=1e-300, rtol=4 * sys.float_info.epsilon))
    return raised(min(root, top), lambda effect: short(effect) >= 0)


def rate_runs_needed(
    effect: float,
    design_at: Callable[[int], RateDesign | None],
    alpha: float,
    power: float,
    sided: Sidedness,
    most: int,
) -> int | None:
    """The first runs per condition, at most ``most``, whose exact power for ``effect``
    reaches ``power`` (rule 7), scanned upward from 1 (``design_at(runs)``: None when the
    sample is empty); None when none of them does. A discrete test's power is not monotone in
    the runs (a sawtooth): some more runs than these may fall short again."""
    check_target(alpha, power)
    if not (effect != 0 and (effect > 0 or sided == "two-sided") and math.isfinite(effect)):
        raise ValueError(f"a test has power {power} only for an effect above 0, not {effect}")
    for runs_ in range(1, most + 1):
        design = design_at(runs_)
        if design is not None and rate_power(design, effect, alpha, sided) >= power:
            return runs_
    return None
