"""``repro protocol power``: how large a difference each pre-registered contrast of a protocol
can detect before it runs, from the variances (or, for a rate, the counts) of a pilot bundle of
the same family. One pure function per rule; the command line only reads the files and prints.

The rules, in order:

1. **The family** (:func:`family_problems`). A pilot plans a protocol when both have the same
   protocol ``id`` and measure (name and key), and each group of every contrast the protocol
   declares selects, in the pilot's sealed conditions, the same conditions (the same levels of
   every factor, the same participant) as in the protocol's. The condition IDs may differ (a
   pilot may have a smaller matrix), the pilot's own contrasts do not matter (it may declare
   none), and so do not its runs per condition. When a contrast compares a rate (a check or a
   category), the pilot must also score as the protocol does (:func:`scoring_problems`: the
   same scoring, and the same expectations of every scenario both declare).
2. **The pilot's estimates** (:func:`pilot_estimate`), from the tally of its runs that every
   derivation reads (:func:`pilot_tally`, partition by partition as verify tallies them).
   Paired: the differences of :func:`repro.derive.contrasts.paired_sample` (the contrasts'
   own pairing and sign: positive favours ``a``), their sd, the sd of each side over the same
   complete pairs and the pairing correlation between the sides. Unpaired: each group's
   pooled valid measures and their sd. Every sd is :func:`repro.derive.stats.summarize`'s (n - 1).
   A rate (:func:`pilot_rates`, :func:`rate_estimate`): the counts that
   :func:`repro.derive.contrasts.contrasts` itself makes of the pilot's runs and verified
   scores, so that the pairs, the values and which way is better cannot drift from the test
   the study will run. Paired: the discordance ``p10 + p01``, the share of the complete pairs
   in which exactly one run counts (p10: the one favouring ``a``). Unpaired: the mean rate
   ``(p_a + p_b) / 2`` of the two groups.
3. **The planned sample** (:func:`planned_sample`): the same sample functions applied to the
   protocol's plan as if every slot that runs ended valid (:func:`planned_tally`): ``n`` pairs
   (runs per condition x matched condition pairs) or each group's pooled runs, less what the
   protocol's own declared exclusions remove.
4. **The test's design** (:func:`paired_design`, :func:`welch_design`): the standard error of
   the difference and the degrees of freedom at the planned sizes, with the pilot's sds taken
   as the true ones. Paired: ``sd / sqrt(n)`` on ``n - 1``. Unpaired: ``sqrt(sd_a^2 / n_a +
   sd_b^2 / n_b)`` on the Welch-Satterthwaite degrees of freedom of the pilot's variances scaled
   to the planned sizes, an approximation: the test estimates its degrees of freedom, this
   takes them as fixed. A rate (:class:`RateDesign`): the planned sizes and the pilot's held
   value, which stays fixed as the effect, the difference of the two rates, varies: the
   discordance (so that ``p10 = (discordance + effect) / 2``, and no effect beyond the
   discordance can be), or the mean rate (``p_a, p_b = mean +- effect / 2``: at most twice its
   distance from 0 or 1).
5. **The power** (:func:`t_power`): the probability that the test rejects when the true
   difference lies ``effect`` beyond the null boundary (0, or ``-margin`` for non-inferiority):
   its statistic is noncentral t with the design's df and noncentrality ``effect / se``
   (normal differences). One-sided (superiority, non-inferiority) at ``alpha = 1 - level``;
   two-sided at ``alpha / 2`` in each tail, both tails counted. A rate's power is exact
   (:func:`rate_power`), rejected where the contrasts' own test, asked through
   :mod:`repro.derive.inference`, has a p-value below alpha (as a verdict reads it): McNemar's
   (:func:`mcnemar_power`) sums over ``d ~ Binomial(n, discordance)`` discordant pairs the
   chance that those favouring ``a``, ``~ Binomial(d, (1 + effect / discordance) / 2)``, lie
   in the test's region at ``d`` (:func:`mcnemar_rejects`); Fisher's (:func:`fisher_power`)
   sums the binomial probabilities of every table the test rejects (:func:`fisher_rejects`).
   Each region is found by walking along a margin (the discordant pairs; the two groups'
   passes), on which the test's p-value is monotone in the split (a tail above, and two-sided
   one below, the centre), a few p-values a margin. The work grows with the sample, so it is
   bounded: at most :data:`MCNEMAR_EXACT_PAIRS` pairs and :data:`FISHER_EXACT_RUNS` runs in
   all; past them a rate is not planned (no approximation is offered in its place: the project
   has no library that computes one, and none is hand-rolled).
6. **The minimum detectable effect** (:func:`noncentrality_needed`, :func:`mde`,
   :func:`rate_mde`): the smallest effect whose power reaches the target, solved with
   :func:`scipy.optimize.brentq` and then raised by the last ulps that rounding leaves it
   short, so that its power is never below the target. A two-sided rate's is detected either
   way (the lower of the two directions' powers: Fisher's is not symmetric with groups of
   unequal sizes); a rate's MDE is None when even the largest effect its held value allows
   falls short. Under Holm's adjustment (a family of m > 1) the MDE is given at the
   unadjusted alpha and at Bonferroni's ``alpha / m``: Holm rejects everything Bonferroni
   rejects and nothing the unadjusted test does not, so its MDE lies between the two.
7. **The runs needed** (:func:`runs_needed`, :func:`rate_runs_needed`): the fewest runs per
   condition whose planned sample's power reaches the target for a given effect (the sizes
   grow by the matched pairs, or the group's conditions, per run, less the exclusions the
   protocol declares), found by doubling and bisection (power grows with the runs), or None
   past ``max_runs``. A rate's power is not monotone in the runs (a discrete test's sawtooth):
   its runs needed are the first, scanned upward from 1, whose exact power reaches the target,
   and a few more runs may fall short again; None when no run up to the exact enumeration's
   limit (or ``max_runs``) does.

A pilot's variance is itself uncertain: every figure here is as good as the pilot's estimates
and claims nothing beyond them. A pilot whose standard error would be 0 (every paired difference
equal; both groups constant) is refused: a t test has no variance to plan from, and an MDE of 0
would claim that any difference is detected. So is a rate's pilot with no discordant pair
(McNemar's test reads only those) or a mean rate of 0 or 1. A clustered contrast is refused: its
CR1 test's df are the clusters less one, which more runs do not raise, and its power needs a
between-cluster variance this module does not estimate yet.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

from attrs import evolve, frozen

from repro.derive.contrasts import (
    better_sign,
    contrasts,
    measure_values,
    null_boundary,
    outcome_name,
    paired_sample,
    pooled,
)
from repro.derive.figures import condition_label
from repro.derive.scenarios import by_condition
from repro.derive.tally import Attempt, RunTally, attempt_id, declared_exclusion, merge, runs, tally
from repro.derive.tiers import contract_digests
from repro.errors import BadInput
from repro.models import (
    Condition,
    Contrast,
    ContrastResult,
    Contrasts,
    FrozenProtocol,
    Group,
    Ledger,
    Measure,
    Partition,
    Protocol,
    RunRecord,
    Scores,
    Seal,
)
from repro.plan.sealing import conditions_of, partitions
from repro.protocol.contrasts import matched_conditions, selected
from repro.protocol.rules import MAX_SLOTS
from repro.stats import inference
from repro.stats.estimators import summarize

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "FISHER_EXACT_RUNS",
    "MCNEMAR_EXACT_PAIRS",
    "AtLevel",
    "ConditionRef",
    "ContrastPower",
    "Design",
    "PilotEstimate",
    "PlannedSample",
    "PowerPlan",
    "RateDesign",
    "RateTest",
    "Sidedness",
    "compares_rate",
    "family_problems",
    "fisher_power",
    "fisher_rejects",
    "lines",
    "mcnemar_power",
    "mcnemar_rejects",
    "mde",
    "noncentrality_needed",
    "paired_design",
    "pilot_estimate",
    "pilot_rates",
    "pilot_tally",
    "planned_sample",
    "planned_tally",
    "power_plan",
    "rate_estimate",
    "rate_mde",
    "rate_power",
    "rate_runs_needed",
    "runs_needed",
    "scoring_problems",
    "t_power",
    "welch_design",
]

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
    from scipy import stats as sps

    tail = alpha if sided == "one-sided" else alpha / 2
    critical = float(sps.t.isf(tail, df))
    power = float(sps.nct.sf(critical, df, noncentrality))
    if sided == "two-sided":
        power += float(sps.nct.sf(critical, df, -noncentrality))
    if not math.isfinite(power):
        raise ValueError(f"no power computed for noncentrality {noncentrality} on {df} df")
    return power


def _check_target(alpha: float, power: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie strictly between 0 and 1, not {alpha}")
    if not alpha < power < 1:
        raise ValueError(f"the power must lie strictly between alpha ({alpha}) and 1, not {power}")


def noncentrality_needed(df: float, alpha: float, power: float, sided: Sidedness) -> float:
    """The smallest noncentrality at or above 0 whose power (:func:`t_power`) reaches ``power``
    (rule 6): Brent's root of ``t_power(nc) - power``, bracketed by doubling, raised by the
    ulps rounding leaves it short."""
    from scipy.optimize import brentq

    _check_target(alpha, power)

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
    return _raised(root, lambda nc: short(nc) >= 0)


def _raised(x: float, reached: Callable[[float], bool]) -> float:
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
    return _raised(
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
    _check_target(alpha, power)
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


# --------------------------------------------------------------------------- the rates


#: The most pairs a paired rate's exact power is enumerated at: it needs McNemar's critical
#: count for every number of discordant pairs up to the pairs, each found by asking
#: :func:`repro.derive.inference.mcnemar_exact`, whose work grows with the pairs.
MCNEMAR_EXACT_PAIRS = 1_000
#: The most runs in all (``n_a + n_b``) an unpaired rate's exact power is enumerated at: it
#: needs Fisher's critical counts for every margin of the two groups' passes, each found by
#: asking :func:`repro.derive.inference.independent_proportions`.
FISHER_EXACT_RUNS = 200

RateTest = Literal["mcnemar-exact", "fisher-exact"]


def _alternative(sided: Sidedness) -> inference.Alternative:
    """The contrasts' alternative for a test of ``sided``: a one-sided rate test claims that
    ``a`` does better (rates are never non-inferiority contrasts)."""
    return "two-sided" if sided == "two-sided" else "greater"


def mcnemar_rejects(favouring_a: int, favouring_b: int, alpha: float, sided: Sidedness) -> bool:
    """Whether the contrasts' McNemar test rejects at ``alpha`` with ``favouring_a`` and
    ``favouring_b`` discordant pairs: :func:`repro.derive.inference.mcnemar_exact`'s p-value
    below ``alpha``, as a contrast's verdict reads it (the concordant pairs change no p-value)."""
    pairs = [(True, False)] * favouring_a + [(False, True)] * favouring_b
    return inference.mcnemar_exact(pairs, _alternative(sided)).p_value < alpha


def fisher_rejects(
    passed_a: int, n_a: int, passed_b: int, n_b: int, alpha: float, sided: Sidedness
) -> bool:
    """Whether the contrasts' Fisher test rejects at ``alpha`` when ``passed_a`` of ``n_a``
    runs of the test's first group pass and ``passed_b`` of ``n_b`` of its second:
    :func:`repro.derive.inference.independent_proportions`' p-value below ``alpha``."""
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
    import numpy as np
    from scipy import stats as sps

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
    import numpy as np

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
    import numpy as np
    from scipy import stats as sps

    return np.exp(sps.binom.logpmf(k, n, p))


def fisher_power(
    n_a: int, n_b: int, rate_a: float, rate_b: float, alpha: float, sided: Sidedness
) -> float:
    """The exact power of the contrasts' Fisher test of ``n_a`` and ``n_b`` independent runs
    passing with probabilities ``rate_a`` and ``rate_b`` (the test's first group and its
    second; rule 5): the sum, over every table the test rejects (:func:`fisher_rejects`), of
    the product of the two binomial probabilities (at most :data:`FISHER_EXACT_RUNS` runs in
    all)."""
    import numpy as np

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


def _detected(design: RateDesign, effect: float, alpha: float, sided: Sidedness) -> float:
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
    from scipy.optimize import brentq

    _check_target(alpha, power)

    def short(effect: float) -> float:
        return _detected(design, effect, alpha, sided) - power

    top = design.largest
    if short(top) < 0:
        return None
    root = float(brentq(short, 0.0, top, xtol=1e-300, rtol=4 * sys.float_info.epsilon))
    return _raised(min(root, top), lambda effect: short(effect) >= 0)


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
    _check_target(alpha, power)
    if not (effect != 0 and (effect > 0 or sided == "two-sided") and math.isfinite(effect)):
        raise ValueError(f"a test has power {power} only for an effect above 0, not {effect}")
    for runs_ in range(1, most + 1):
        design = design_at(runs_)
        if design is not None and rate_power(design, effect, alpha, sided) >= power:
            return runs_
    return None


# --------------------------------------------------------------------------- the samples


def pilot_tally(
    fp: FrozenProtocol,
    ledger: Ledger,
    parts: Iterable[tuple[Partition, Iterable[RunRecord]]],
) -> RunTally:
    """The tally of a pilot's runs that the derivations read (rule 2): each sealed partition's
    records tallied against it, with the contract digests and scenarios verify tallies with,
    one partition at a time, and merged (:func:`repro.derive.tally.merge`)."""
    p = fp.protocol
    contracts = contract_digests(ledger)
    scenarios = by_condition(p, conditions_of(p))
    return merge(
        [
            tally(
                [part], (Attempt.of(r) for r in records), p.retry.max_attempts, contracts, scenarios
            )
            for part, records in parts
        ]
    )


def _as_planned(part: Partition) -> Iterator[Attempt]:
    """One attempt per slot of ``part``: valid with measure 0 for a slot that runs, the
    declared exclusion for one the protocol excludes."""
    for e in part.entries:
        ran = runs(e)
        yield Attempt(
            attempt_id=attempt_id(e.slot, 1),
            slot=e.slot,
            condition=e.condition,
            attempt=1,
            predecessor=None,
            status="valid" if ran else "excluded",
            cause=None if ran else declared_exclusion(e.excluded or ""),
            measure=0.0 if ran else None,
            recomputed=None,
            traced=False,
            contract_sha256=None,
        )


def planned_tally(protocol: Protocol) -> RunTally:
    """The tally of the protocol's plan as if every slot that runs ended valid (measure 0) and
    every slot it excludes was excluded (rule 3), partition by partition: which replicates its
    contrasts' samples would hold with no run lost."""
    max_attempts = protocol.retry.max_attempts
    return merge(
        [tally([part], _as_planned(part), max_attempts, {}) for part in partitions(protocol)]
    )


def _pooled(conditions: Sequence[Condition], runs_: RunTally) -> list[float]:
    """An unpaired side's measures, as the contrasts pool them."""
    return [float(v) for _, v in pooled(conditions, measure_values(runs_))]


@frozen
class PilotEstimate:
    """What a pilot's runs say of one contrast's variances (rule 2). Paired: ``pairs``
    complete pairs (``incomplete_pairs`` left out), the sd of their differences, the sd of each
    side over the same pairs (``n_a = n_b = pairs``) and the correlation between the sides (None
    when a side is constant), all pooled across the matched conditions (whose own spread shows in
    each side's sd and the correlation; the test reads the sd of the differences alone).
    Unpaired: each group's pooled valid runs and their sd. An sd is None with fewer than two
    values.

    A rate (a check or a category) has no sd: ``counts`` are the contrasts derivation's on the
    pilot (contrasts.json's, the test's sides: ``a``'s first, ``b``'s when lower is better),
    ``difference`` its estimate (positive favours ``a``), and what the plan holds fixed:
    paired, the ``discordance`` (the share of the complete pairs that are discordant, p10 +
    p01); unpaired, the ``mean_rate`` of the two groups ((p_a + p_b) / 2)."""

    a: tuple[str, ...]
    b: tuple[str, ...]
    n_a: int
    n_b: int
    sd_a: float | None
    sd_b: float | None
    pairs: int | None = None
    incomplete_pairs: int | None = None
    sd_difference: float | None = None
    correlation: float | None = None
    counts: dict[str, int] | None = None
    difference: float | None = None
    discordance: float | None = None
    mean_rate: float | None = None


def _correlation(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's correlation (two-pass, correctly rounded sums); None when a side is
    constant or there are fewer than two pairs."""
    if len(x) < 2:
        return None
    sx, sy = summarize(x), summarize(y)
    if not sx.var or not sy.var or sx.mean is None or sy.mean is None:
        return None
    mx, my = sx.mean, sy.mean
    cov = math.fsum((a - mx) * (b - my) for a, b in zip(x, y, strict=True)) / (len(x) - 1)
    return max(-1.0, min(1.0, cov / math.sqrt(sx.var * sy.var)))


def pilot_estimate(
    contrast: Contrast, conditions: Sequence[Condition], runs_: RunTally, replicates: int
) -> PilotEstimate:
    """The pilot's estimates for ``contrast`` from the tally of its runs, ``conditions`` being
    the pilot's sealed conditions and ``replicates`` its runs per condition (rule 2). The sides
    of each complete pair are those :func:`repro.derive.contrasts.paired_sample` pairs, in its
    own order (``a``'s side is ``sign * a``, ``b``'s ``sign * b``; the sign changes no sd or
    correlation)."""
    a, b = selected(contrast.a, conditions), selected(contrast.b, conditions)
    ids_a, ids_b = tuple(c.id for c in a), tuple(c.id for c in b)
    if contrast.pairing == "unpaired":
        va, vb = _pooled(a, runs_), _pooled(b, runs_)
        return PilotEstimate(ids_a, ids_b, len(va), len(vb), summarize(va).sd, summarize(vb).sd)
    matched = matched_conditions(contrast, conditions)
    if isinstance(matched, str):
        raise ValueError(f"the pilot's conditions cannot pair: {matched}")
    sample, incomplete = paired_sample(matched, measure_values(runs_), replicates)
    sign = better_sign(contrast)
    side_a = [sign * float(x) for _, x, _ in sample]
    side_b = [sign * float(y) for _, _, y in sample]
    differences = [x - y for x, y in zip(side_a, side_b, strict=True)]
    n = len(differences)
    return PilotEstimate(
        ids_a,
        ids_b,
        n,
        n,
        summarize(side_a).sd,
        summarize(side_b).sd,
        pairs=n,
        incomplete_pairs=incomplete,
        sd_difference=summarize(differences).sd,
        correlation=_correlation(side_a, side_b),
    )


def compares_rate(contrast: Contrast) -> bool:
    """Whether ``contrast`` compares a rate (a check or a category) rather than the measure."""
    return contrast.check is not None or contrast.category is not None


def pilot_rates(
    protocol: Protocol,
    pilot: FrozenProtocol,
    seal: Seal,
    runs_: RunTally,
    scores: Scores | None,
) -> dict[str, ContrastResult]:
    """What the contrasts derivation says of each of ``protocol``'s rate contrasts on the
    pilot's runs (rule 2), by contrast ID: :func:`repro.derive.contrasts.contrasts` applied
    to the pilot's protocol with those contrasts, its seal, the tally of its runs and its
    verified scores, so that the pairs, the values and which way is better are the
    contrasts' own."""
    family = () if protocol.contrasts is None else protocol.contrasts.family
    rates = tuple(c for c in family if compares_rate(c))
    if not rates:
        return {}
    asked = evolve(pilot.protocol, contrasts=Contrasts(family=rates, multiplicity="holm"))
    decided = contrasts(evolve(pilot, protocol=asked), seal, runs_, scores)
    assert decided is not None
    return {r.id: r for r in decided.contrasts}


def rate_estimate(result: ContrastResult) -> PilotEstimate:
    """A rate contrast's pilot estimate from the contrasts derivation's result on the pilot
    (rule 2): its counts and difference, and the discordance (paired) or the mean rate
    (unpaired; None with an empty group or no complete pair)."""
    counts = dict(result.counts or {})
    if result.pairing == "paired":
        pairs = result.pairs or 0
        discordant = counts.get("a_only", 0) + counts.get("b_only", 0)
        return PilotEstimate(
            result.a,
            result.b,
            result.n_a,
            result.n_b,
            None,
            None,
            pairs=pairs,
            incomplete_pairs=result.incomplete_pairs,
            counts=counts,
            difference=result.estimate,
            discordance=discordant / pairs if pairs else None,
        )
    first, second = counts.get("n_a", 0), counts.get("n_b", 0)
    mean_rate = None
    if first and second:
        mean_rate = (counts["passed_a"] / first + counts["passed_b"] / second) / 2
    return PilotEstimate(
        result.a,
        result.b,
        result.n_a,
        result.n_b,
        None,
        None,
        counts=counts,
        difference=result.estimate,
        mean_rate=mean_rate,
    )


@frozen
class PlannedSample:
    """A contrast's sample in the protocol's plan (rule 3): per run, the matched condition
    pairs (paired; ``per_run_a = per_run_b``) or each group's conditions (unpaired); what the
    protocol's declared exclusions remove (pairs, or each group's runs); and, at its
    ``runs_per_condition``, the sizes: ``n_a = n_b = pairs`` paired, each group's runs
    unpaired."""

    runs_per_condition: int
    per_run_a: int
    per_run_b: int
    excluded_a: int
    excluded_b: int
    n_a: int
    n_b: int
    pairs: int | None

    def at(self, runs_per_condition: int) -> tuple[int, int]:
        """The sizes at ``runs_per_condition`` runs, the declared exclusions counted as
        removing as much as they do in the plan."""
        return (
            max(0, runs_per_condition * self.per_run_a - self.excluded_a),
            max(0, runs_per_condition * self.per_run_b - self.excluded_b),
        )


def planned_sample(contrast: Contrast, protocol: Protocol, planned: RunTally) -> PlannedSample:
    """The planned sample of ``contrast`` from :func:`planned_tally` of ``protocol`` (rule 3),
    by the same sample functions as the pilot's."""
    conditions = conditions_of(protocol)
    runs_ = protocol.runs_per_condition
    a, b = selected(contrast.a, conditions), selected(contrast.b, conditions)
    if contrast.pairing == "unpaired":
        n_a, n_b = len(_pooled(a, planned)), len(_pooled(b, planned))
        return PlannedSample(
            runs_, len(a), len(b), runs_ * len(a) - n_a, runs_ * len(b) - n_b, n_a, n_b, None
        )
    matched = matched_conditions(contrast, conditions)
    if isinstance(matched, str):  # the protocol's rules refuse it when it is loaded
        raise ValueError(matched)
    sample, incomplete = paired_sample(matched, measure_values(planned), runs_)
    k, n = len(matched), len(sample)
    return PlannedSample(runs_, k, k, incomplete, incomplete, n, n, n)


# --------------------------------------------------------------------------- the family


def _content(c: Condition) -> tuple[tuple[tuple[str, str | int], ...], str]:
    return tuple(sorted(c.factors.items())), c.participant


def _named(content: tuple[tuple[tuple[str, str | int], ...], str]) -> str:
    factors, participant = content
    return condition_label(dict(factors), participant)


def _measure(m: Measure) -> str:
    return m.name + (f" at {m.key!r}" if m.key is not None else "")


def family_problems(
    protocol: Protocol, pilot: Protocol, pilot_conditions: Sequence[Condition]
) -> list[str]:
    """Every way the pilot is not of the protocol's family (rule 1), each with the protocol's
    JSON path: another protocol id or measure, or a group that selects other conditions (by
    factor levels and participant) in the pilot's sealed conditions than in the protocol's;
    and when a contrast compares a rate, another scoring (:func:`scoring_problems`)."""
    problems = []
    if pilot.id != protocol.id:
        problems.append(f"the pilot is of protocol {pilot.id!r}, not {protocol.id!r} @ $.id")
    mine, theirs = protocol.measure, pilot.measure
    if (mine.name, mine.key) != (theirs.name, theirs.key):
        problems.append(
            f"the pilot's measure is {_measure(theirs)}, not {_measure(mine)} @ $.measure"
        )
    if protocol.contrasts is None:
        return problems
    if any(compares_rate(c) for c in protocol.contrasts.family):
        problems += scoring_problems(protocol, pilot)
    conditions = conditions_of(protocol)
    for i, contrast in enumerate(protocol.contrasts.family):
        for side, group in (("a", contrast.a), ("b", contrast.b)):
            problems += _group_problem(
                group,
                conditions,
                pilot_conditions,
                f"{contrast.id!r}",
                f"$.contrasts.family[{i}].{side}",
            )
    return problems


def scoring_problems(protocol: Protocol, pilot: Protocol) -> list[str]:
    """Every way the pilot scores its runs otherwise than the protocol would (rule 1, for rate
    contrasts), each with the protocol's JSON path: a rate is the share of runs that pass a
    check or fall in a category, so the pilot must have the same scoring (checks, taxonomy and
    scenario factor) and, for each scenario both declare, the same expectations the checks
    compare outcomes with."""
    if pilot.scoring != protocol.scoring:
        said = "scores no runs" if pilot.scoring is None else "scores its runs otherwise"
        return [f"the pilot {said}: a rate needs the protocol's own scoring @ $.scoring"]
    theirs = {s.id: s for s in pilot.scenarios}
    return [
        f"the pilot's scenario {s.id!r} expects otherwise: its rates are of other checks "
        f"@ $.scenarios[{i}].expect"
        for i, s in enumerate(protocol.scenarios)
        if s.id in theirs and theirs[s.id].expect != s.expect
    ]


def _group_problem(
    group: Group,
    conditions: Sequence[Condition],
    pilot_conditions: Sequence[Condition],
    contrast: str,
    where: str,
) -> list[str]:
    want = {_content(c) for c in selected(group, conditions)}
    have = {_content(c) for c in selected(group, pilot_conditions)}
    if want == have:
        return []
    parts = []
    if want - have:
        parts.append("the pilot lacks " + "; ".join(sorted(map(_named, want - have))))
    if have - want:
        parts.append("the pilot adds " + "; ".join(sorted(map(_named, have - want))))
    return [
        f"contrast {contrast}: the group selects other conditions: {', '.join(parts)} @ {where}"
    ]


# --------------------------------------------------------------------------- the plan


@frozen
class AtLevel:
    """The test of one contrast at one alpha, at the protocol's runs per condition. A t test's
    design (``se``, ``df``) and the noncentrality at the target power (None for a rate); the
    MDE at the target power, ``difference`` the true ``a - b`` (positive favouring ``a``) at
    the MDE (the null boundary plus the MDE), and ``power_at_mde``, at or above the target. A
    rate's MDE is None when even the largest effect its held value allows falls short: its
    power is then ``largest_power``. ``method`` says how each power is computed:
    ``noncentral-t``, or ``exact`` (a rate's, by enumeration). With an effect: its power here,
    and the runs per condition needed among those searched (``runs_searched``: up to
    ``PowerPlan.max_runs``, or for a rate up to the exact enumeration's limit; None: none of
    them reaches the target)."""

    alpha: float
    se: float | None
    df: float | None
    noncentrality: float | None
    mde: float | None
    difference: float | None
    power_at_effect: float | None = None
    runs_needed: int | None = None
    method: str = "noncentral-t"
    power_at_mde: float | None = None
    largest_power: float | None = None
    runs_searched: int | None = None


@frozen
class ConditionRef:
    """A condition of the protocol, by its ID and as a reader names it."""

    id: str
    label: str


@frozen
class ContrastPower:
    """One contrast's power plan: as declared (``sided`` and ``null``, the null boundary, as
    its test takes them; ``outcome`` what it compares, as contrasts.json names it, and
    ``test`` the test that will decide it), its conditions in the protocol, the pilot's
    estimates, the planned sample, and the test at the contrast's alpha (``unadjusted``) and,
    under Holm over a family of m > 1, at Bonferroni's ``alpha / m`` (``bonferroni``, the
    conservative bound). A rate's ``largest_effect`` is the largest difference of rates the
    pilot's held value allows."""

    id: str
    direction: str
    pairing: str
    better: str
    margin: float
    level: float
    primary: bool
    sided: Sidedness
    null: float
    a: tuple[ConditionRef, ...]
    b: tuple[ConditionRef, ...]
    pilot: PilotEstimate
    planned: PlannedSample
    unadjusted: AtLevel
    bonferroni: AtLevel | None
    outcome: str = "measure"
    test: str = "paired-t"
    largest_effect: float | None = None
    #: The test contrasts.json will name when it is not ``test``: a contrast that declares a
    #: seeded bootstrap (``paired-bootstrap``, ``unpaired-bootstrap``) is planned as its t
    #: analogue, ``test``.
    decided_by: str | None = None


@frozen
class PowerPlan:
    """``repro protocol power``'s answer (``schema`` names its form): the protocol (its frozen
    sha256, runs per condition and family), the pilot (its bundle sha256, protocol sha256 and
    runs per condition), the power asked, the effect (None without ``--effect``), the most runs
    per condition a protocol of these conditions may seal, every contrast's plan, and what was
    assumed."""

    schema: Literal["repro.power/1"]
    protocol_id: str
    protocol_sha256: str
    runs_per_condition: int
    multiplicity: str
    family_size: int
    pilot_bundle_sha256: str
    pilot_protocol_sha256: str
    pilot_runs_per_condition: int
    power: float
    effect: float | None
    max_runs: int
    contrasts: tuple[ContrastPower, ...]
    assumptions: tuple[str, ...]


def _sided(contrast: Contrast) -> Sidedness:
    return "two-sided" if contrast.direction == "two-sided" else "one-sided"


def _test(contrast: Contrast) -> str:
    """The test that decides ``contrast``, as contrasts.json names it."""
    if compares_rate(contrast):
        return "mcnemar-exact" if contrast.pairing == "paired" else "fisher-exact"
    return "paired-t" if contrast.pairing == "paired" else "welch-t"


def _decided_by(contrast: Contrast) -> str | None:
    """The bootstrap that decides ``contrast``, as contrasts.json names it, or None."""
    spec = contrast.interval
    if spec is None or spec.method != "bootstrap":
        return None
    return "paired-bootstrap" if contrast.pairing == "paired" else "unpaired-bootstrap"


def _test_sides(better: str, a: int, b: int) -> tuple[int, int]:
    """``a``'s and ``b``'s figures in the order a rate's test takes its groups, and back:
    ``b``'s first when lower is better (a passing less often is a doing better; the contrasts'
    rule 2)."""
    return (a, b) if better == "higher" else (b, a)


def _design(contrast: Contrast, pilot: PilotEstimate, n_a: int, n_b: int) -> Design | None:
    """The test's design at the sizes ``n_a``, ``n_b`` (pairs: both the same), None when they
    are too small for a t test."""
    if n_a < 2 or n_b < 2:
        return None
    if contrast.pairing == "paired":
        assert pilot.sd_difference is not None
        return paired_design(pilot.sd_difference, n_a)
    assert pilot.sd_a is not None and pilot.sd_b is not None
    return welch_design(pilot.sd_a, pilot.sd_b, n_a, n_b)


def _rate_design(contrast: Contrast, pilot: PilotEstimate, n_a: int, n_b: int) -> RateDesign | None:
    """A rate test's design at the sizes ``n_a``, ``n_b`` of groups ``a`` and ``b`` (pairs:
    both the same) with the pilot's held value, None when a side is empty."""
    if n_a < 1 or n_b < 1:
        return None
    if contrast.pairing == "paired":
        assert pilot.discordance is not None
        return RateDesign("mcnemar-exact", n_a, n_a, pilot.discordance)
    assert pilot.mean_rate is not None
    return RateDesign("fisher-exact", *_test_sides(contrast.better, n_a, n_b), pilot.mean_rate)


def _estimate_problems(contrast: Contrast, pilot: PilotEstimate, where: str) -> list[str]:
    """Why the pilot's estimates cannot plan ``contrast``: fewer than two pairs or runs on a
    side, or a standard error of 0."""
    name = f"contrast {contrast.id!r}"
    if contrast.pairing == "paired":
        if pilot.pairs is None or pilot.pairs < 2:
            return [
                f"{name}: the pilot has {pilot.pairs or 0} complete pair(s) "
                f"({pilot.incomplete_pairs or 0} incomplete): its sd needs at least 2 @ {where}"
            ]
        if pilot.sd_difference == 0:
            return [
                f"{name}: the pilot's {pilot.pairs} paired differences are all equal (sd 0): "
                "no variance to plan from (an MDE of 0 would claim any difference is detected) "
                f"@ {where}"
            ]
        return []
    short = [f"{side} has {n}" for side, n in (("a", pilot.n_a), ("b", pilot.n_b)) if n < 2]
    if short:
        return [
            f"{name}: in the pilot, group {' and '.join(short)} valid run(s): each needs "
            f"at least 2 @ {where}"
        ]
    if pilot.sd_a == 0 and pilot.sd_b == 0:
        return [
            f"{name}: in the pilot, every run of each group has the same measure (both sds 0): "
            "no variance to plan from (an MDE of 0 would claim any difference is detected) "
            f"@ {where}"
        ]
    return []


def _what(outcome: str, plural: bool = False) -> str:
    """What a run does to count, for a rate contrast's ``outcome`` (contrasts.json's name):
    pass the check, or fall in the category."""
    kind, name = outcome.split(":", 1)
    if kind == "check":
        return f"{'pass' if plural else 'passes'} check {name!r}"
    return f"{'fall' if plural else 'falls'} in category {name!r}"


def _rate_problems(contrast: Contrast, pilot: PilotEstimate, where: str) -> list[str]:
    """Why the pilot's counts cannot plan a rate ``contrast``: no complete pair, or no
    discordant one (McNemar's test reads only those); an empty group, or every run of both
    groups alike (a mean rate of 0 or 1 leaves no room for a difference)."""
    name, what = f"contrast {contrast.id!r}", _what(outcome_name(contrast))
    if contrast.pairing == "paired":
        if not pilot.pairs:
            return [
                f"{name}: the pilot has no complete scored pair ({pilot.incomplete_pairs or 0} "
                f"incomplete): no discordance to plan from @ {where}"
            ]
        if not pilot.discordance:
            return [
                f"{name}: the pilot's {pilot.pairs} pairs are all concordant (in none does "
                f"exactly one run of the two {what}): McNemar's test reads only discordant "
                f"pairs, so there is no discordance to plan from @ {where}"
            ]
        return []
    empty = [f"{side} has none" for side, n in (("a", pilot.n_a), ("b", pilot.n_b)) if n < 1]
    if empty:
        return [
            f"{name}: in the pilot, group {' and '.join(empty)} valid scored run: each needs "
            f"at least 1 @ {where}"
        ]
    if pilot.mean_rate in (0.0, 1.0):
        which = "no run of either group" if pilot.mean_rate == 0 else "every run of both groups"
        return [
            f"{name}: in the pilot, {which} {what} (mean rate {_g(pilot.mean_rate)}): no room "
            f"for a difference of rates to plan from @ {where}"
        ]
    return []


def _largest_effect(contrast: Contrast, pilot: PilotEstimate) -> float | None:
    design = _rate_design(contrast, pilot, 1, 1) if compares_rate(contrast) else None
    return None if design is None else design.largest


def _at_level(
    contrast: Contrast,
    pilot: PilotEstimate,
    planned: PlannedSample,
    alpha: float,
    power: float,
    effect: float | None,
    max_runs: int,
) -> AtLevel:
    if compares_rate(contrast):
        return _rate_at_level(contrast, pilot, planned, alpha, power, effect, max_runs)
    sided = _sided(contrast)
    design = _design(contrast, pilot, planned.n_a, planned.n_b)
    assert design is not None
    nc = noncentrality_needed(design.df, alpha, power, sided)
    detectable = mde(design, alpha, power, sided)
    power_here = needed = None
    if effect is not None:
        size = abs(effect) if sided == "two-sided" else effect
        power_here = t_power(size / design.se, design.df, alpha, sided)
        needed = runs_needed(
            effect,
            lambda r: _design(contrast, pilot, *planned.at(r)),
            alpha,
            power,
            sided,
            max_runs,
        )
    return AtLevel(
        alpha=alpha,
        se=design.se,
        df=design.df,
        noncentrality=nc,
        mde=detectable,
        difference=null_boundary(contrast) + detectable,
        power_at_effect=power_here,
        runs_needed=needed,
        power_at_mde=t_power(detectable / design.se, design.df, alpha, sided),
        runs_searched=None if effect is None else max_runs,
    )


def _exact_runs(
    contrast: Contrast, pilot: PilotEstimate, planned: PlannedSample, max_runs: int
) -> int:
    """The most runs per condition, at most ``max_runs``, whose rate design lies within the
    exact enumeration's limit (0: none), found by bisection (the sizes grow with the runs)."""

    def within(r: int) -> bool:
        design = _rate_design(contrast, pilot, *planned.at(r))
        return design is None or design.exact

    low, high = 0, max_runs  # low: within (0 runs: nothing to enumerate), high + 1: beyond
    if within(high):
        return high
    while high - low > 1:
        middle = (low + high) // 2
        if within(middle):
            low = middle
        else:
            high = middle
    return low


def _rate_at_level(
    contrast: Contrast,
    pilot: PilotEstimate,
    planned: PlannedSample,
    alpha: float,
    power: float,
    effect: float | None,
    max_runs: int,
) -> AtLevel:
    sided = _sided(contrast)
    design = _rate_design(contrast, pilot, planned.n_a, planned.n_b)
    assert design is not None and design.exact
    detectable = rate_mde(design, alpha, power, sided)
    power_here = needed = searched = None
    if effect is not None:
        power_here = rate_power(design, effect, alpha, sided)
        searched = _exact_runs(contrast, pilot, planned, max_runs)
        needed = rate_runs_needed(
            effect,
            lambda r: _rate_design(contrast, pilot, *planned.at(r)),
            alpha,
            power,
            sided,
            searched,
        )
    return AtLevel(
        alpha=alpha,
        se=None,
        df=None,
        noncentrality=None,
        mde=detectable,
        difference=None if detectable is None else null_boundary(contrast) + detectable,
        power_at_effect=power_here,
        runs_needed=needed,
        method="exact",
        power_at_mde=None if detectable is None else _detected(design, detectable, alpha, sided),
        largest_power=(
            _detected(design, design.largest, alpha, sided) if detectable is None else None
        ),
        runs_searched=searched,
    )


def _assumptions(
    tests: set[str], holm: bool, effect: float | None, max_runs: int, pilot_sha: str
) -> tuple[str, ...]:
    measure = bool(tests & {"paired-t", "welch-t"})
    rates = bool(tests & {"mcnemar-exact", "fisher-exact"})
    out = []
    if measure:
        out.append(
            f"the pilot's variances are taken as the true ones: every sd and correlation is the "
            f"estimate of the pilot (bundle sha256 {pilot_sha}) from the n it names; a pilot's "
            "variance is itself uncertain, and these figures claim nothing beyond it"
        )
    if rates:
        out.append(
            f"the pilot's rates are taken as the true ones: every discordance and mean rate is "
            f"the estimate of the pilot (bundle sha256 {pilot_sha}) from the pairs or runs it "
            "names, counted by the contrasts' own derivation on its verified scores; a pilot's "
            "rates are themselves uncertain, and these figures claim nothing beyond them"
        )
    out.append(
        "the pilot's runs are of the study's population: same protocol id, measure and "
        "conditions of each group" + (", scoring and scenario expectations" if rates else "")
    )
    if "paired-t" in tests:
        out.append(
            "paired: the differences are normal and independent, so the paired t statistic is "
            "noncentral t on n - 1 df with noncentrality effect / (sd / sqrt(n))"
        )
    if "welch-t" in tests:
        out.append(
            "unpaired: each group's runs are normal and independent, and Welch's t statistic is "
            "taken as noncentral t with noncentrality effect / sqrt(sd_a^2 / n_a + sd_b^2 / n_b) "
            "on the Welch-Satterthwaite df of the pilot's variances scaled to the planned sizes: "
            "an approximation (the test estimates its df from its own runs)"
        )
    if "mcnemar-exact" in tests:
        out.append(
            "paired rates: the pairs are independent, each discordant with probability the "
            "pilot's discordance p10 + p01 (p10: a's run counts and b's does not, the other way "
            "round when lower is better; p01 the reverse), held fixed as the effect p10 - p01 "
            "varies, so no effect beyond it can be; the power is exact, McNemar's: d discordant "
            "pairs ~ Binomial(n, p10 + p01), of which those favouring a ~ Binomial(d, (1 + "
            "effect / (p10 + p01)) / 2), rejected where the contrasts' own exact p-value is "
            f"below alpha (enumerated up to {MCNEMAR_EXACT_PAIRS} pairs)"
        )
    if "fisher-exact" in tests:
        out.append(
            "unpaired rates: each group's runs count independently, the two groups' rates "
            "p_a and p_b having the pilot's mean (p_a + p_b) / 2, held fixed as the effect "
            "p_a - p_b varies (b - a when lower is better), so no effect beyond twice its "
            "distance from 0 or 1 can be; the power is exact, Fisher's: every table of the two "
            "groups' binomial counts, rejected where the contrasts' own exact p-value is below "
            f"alpha (enumerated up to {FISHER_EXACT_RUNS} runs in all)"
        )
    if measure:
        out.append(
            "the effect is the true difference (positive favours a) beyond the null boundary: "
            "0, or -margin for non-inferiority (whose detectable true difference is the MDE "
            "less the margin); one-sided tests at alpha = 1 - level, two-sided at alpha / 2 in "
            "each tail"
        )
    if rates:
        out.append(
            "a rate's effect is the true difference of the two rates (positive favours a): "
            "one-sided tests at alpha = 1 - level; a two-sided MDE is detected either way (the "
            "lower of the two directions' powers)"
        )
    out.append(
        "every planned slot ends valid: a slot lost at run time makes n smaller and the MDE "
        "larger; the protocol's declared exclusions are counted"
        + (" (and every valid run of a scored protocol is scored)" if rates else "")
    )
    if holm:
        out.append(
            "under Holm's adjustment the MDE at the unadjusted alpha is the optimistic bound and "
            "at Bonferroni's alpha / m the conservative one: Holm's lies between"
        )
    if effect is not None and measure:
        out.append(
            "runs needed: the fewest runs per condition whose power reaches the target, the "
            "declared exclusions removing as many pairs or runs as in the plan; none past "
            f"{max_runs} (the most a protocol of these conditions may seal)"
        )
    if effect is not None and rates:
        out.append(
            "a rate's runs needed: the first runs per condition, scanned upward, whose exact "
            "power reaches the target, none past the exact enumeration's limit; a discrete "
            "test's power is not monotone in the runs (a sawtooth), so a few more runs may fall "
            "short of the target again"
        )
    return tuple(out)


def _contrast_problems(
    contrast: Contrast,
    estimate: PilotEstimate,
    sample: PlannedSample,
    runs_per_condition: int,
    power: float,
    effect: float | None,
    where: str,
) -> list[str]:
    """Why ``contrast`` cannot be planned: the pilot's estimates, the planned sample, the
    power or the effect."""
    rate = compares_rate(contrast)
    name = f"contrast {contrast.id!r}"
    problems = (_rate_problems if rate else _estimate_problems)(contrast, estimate, where)
    least = 1 if rate else 2
    if min(sample.n_a, sample.n_b) < least:
        problems.append(
            f"{name}: the protocol's {runs_per_condition} run(s) per condition give "
            f"{min(sample.n_a, sample.n_b)} "
            f"{'pair(s)' if contrast.pairing == 'paired' else 'run(s) on a side'}: "
            f"{'an exact' if rate else 'a t'} test needs at least {least} @ $.runs_per_condition"
        )
    elif rate and not problems:
        design = _rate_design(contrast, estimate, sample.n_a, sample.n_b)
        if design is not None and not design.exact:
            problems.append(
                f"{name}: the protocol's {runs_per_condition} run(s) per condition give "
                + (
                    f"{sample.n_a} pairs, more than the {MCNEMAR_EXACT_PAIRS}"
                    if design.test == "mcnemar-exact"
                    else f"{sample.n_a + sample.n_b} runs in all, more than the {FISHER_EXACT_RUNS}"
                )
                + " its exact power is enumerated for (no approximation is offered in its "
                "place) @ $.runs_per_condition"
            )
    alpha = 1.0 - contrast.level
    if not power > alpha:
        problems.append(
            f"{name}: --power {power} is not above its alpha {alpha:.6g} (1 - level) "
            f"@ {where}.level"
        )
    if effect is not None and _sided(contrast) == "one-sided" and not effect > 0:
        problems.append(
            f"{name}: a one-sided test detects only an effect above 0 beyond its null "
            f"boundary, not --effect {effect} @ {where}.direction"
        )
    if effect == 0 and _sided(contrast) == "two-sided":
        problems.append(f"{name}: a two-sided test detects no effect of 0 @ {where}.direction")
    largest = None if problems else _largest_effect(contrast, estimate)
    if effect is not None and largest is not None and not abs(effect) <= largest:
        held = "discordance" if contrast.pairing == "paired" else "mean rate"
        problems.append(
            f"{name}: a rate's effect is a difference of rates: with the pilot's {held} held, "
            f"at most {_g(largest)}, not --effect {effect} @ {where}"
        )
    return problems


def power_plan(
    protocol: FrozenProtocol,
    pilot: FrozenProtocol,
    pilot_seal: Seal,
    pilot_bundle_sha256: str,
    pilot_runs: RunTally,
    power: float = 0.8,
    effect: float | None = None,
    pilot_scores: Scores | None = None,
) -> PowerPlan:
    """Every contrast of ``protocol`` planned from the tally of a verified pilot's runs and,
    for rates, its verified scores (rules 1 to 7). Raises :class:`repro.errors.BadInput`
    naming every problem with its JSON path: no contrasts, a clustered contrast, a pilot of
    another family, too few pilot pairs or runs, a standard error of 0, no discordant pair,
    a planned sample beyond the exact enumeration's limit, a power or effect no test
    reaches."""
    p = protocol.protocol
    if p.contrasts is None:
        raise BadInput("power: the protocol declares no contrasts to plan @ $.contrasts")
    if not 0 < power < 1:
        raise BadInput(f"power: --power must lie strictly between 0 and 1, not {power}")
    if effect is not None and not math.isfinite(effect):
        raise BadInput(f"power: --effect must be a finite number, not {effect}")
    unplanned = [
        f"contrast {c.id!r} is clustered by {c.cluster!r}: its CR1 test's power needs the "
        "between-cluster variance and the number of clusters (its clusters - 1 df, which more "
        "runs do not raise), which power does not plan yet @ "
        f"$.contrasts.family[{i}].cluster"
        for i, c in enumerate(p.contrasts.family)
        if c.cluster is not None
    ]
    if unplanned:
        raise BadInput("power: " + "; ".join(unplanned))
    problems = family_problems(p, pilot.protocol, pilot_seal.conditions)
    if problems:
        raise BadInput("power: the pilot is not of the protocol's family: " + "; ".join(problems))
    family = p.contrasts.family
    m = len(family)
    holm = p.contrasts.multiplicity == "holm" and m > 1
    conditions = conditions_of(p)
    max_runs = MAX_SLOTS // len(conditions)
    planned = planned_tally(p)
    order = [f.name for f in p.matrix]
    rates = pilot_rates(p, pilot, pilot_seal, pilot_runs, pilot_scores)
    estimates, samples = [], []
    for i, contrast in enumerate(family):
        estimate = (
            rate_estimate(rates[contrast.id])
            if compares_rate(contrast)
            else pilot_estimate(
                contrast, pilot_seal.conditions, pilot_runs, pilot.protocol.runs_per_condition
            )
        )
        sample = planned_sample(contrast, p, planned)
        problems += _contrast_problems(
            contrast,
            estimate,
            sample,
            p.runs_per_condition,
            power,
            effect,
            f"$.contrasts.family[{i}]",
        )
        estimates.append(estimate)
        samples.append(sample)
    if problems:
        raise BadInput("power: " + "; ".join(problems))

    def refs(group: Group) -> tuple[ConditionRef, ...]:
        return tuple(
            ConditionRef(c.id, condition_label(c.factors, c.participant, order))
            for c in selected(group, conditions)
        )

    planned_contrasts = []
    for contrast, estimate, sample in zip(family, estimates, samples, strict=True):
        alpha = 1.0 - contrast.level
        planned_contrasts.append(
            ContrastPower(
                id=contrast.id,
                direction=contrast.direction,
                pairing=contrast.pairing,
                better=contrast.better,
                margin=contrast.margin,
                level=contrast.level,
                primary=contrast.primary,
                sided=_sided(contrast),
                null=null_boundary(contrast),
                a=refs(contrast.a),
                b=refs(contrast.b),
                pilot=estimate,
                planned=sample,
                unadjusted=_at_level(contrast, estimate, sample, alpha, power, effect, max_runs),
                bonferroni=(
                    _at_level(contrast, estimate, sample, alpha / m, power, effect, max_runs)
                    if holm
                    else None
                ),
                outcome=outcome_name(contrast),
                test=_test(contrast),
                decided_by=_decided_by(contrast),
                largest_effect=_largest_effect(contrast, estimate),
            )
        )
    return PowerPlan(
        schema="repro.power/1",
        protocol_id=p.id,
        protocol_sha256=protocol.sha256,
        runs_per_condition=p.runs_per_condition,
        multiplicity=p.contrasts.multiplicity,
        family_size=m,
        pilot_bundle_sha256=pilot_bundle_sha256,
        pilot_protocol_sha256=pilot.sha256,
        pilot_runs_per_condition=pilot.protocol.runs_per_condition,
        power=power,
        effect=effect,
        max_runs=max_runs,
        contrasts=tuple(planned_contrasts),
        assumptions=_assumptions(
            {_test(c) for c in family}, holm, effect, max_runs, pilot_bundle_sha256
        ),
    )


# --------------------------------------------------------------------------- the text


def _g(x: float) -> str:
    return f"{x:.6g}"


def _sd(x: float | None) -> str:
    return "n/a" if x is None else _g(x)


def _runs(n: int | None, plan: PowerPlan) -> str:
    return f"more than {plan.max_runs}" if n is None else str(n)


def _head(c: ContrastPower) -> list[str]:
    claim = {
        "superiority": "a better than b",
        "non-inferiority": f"a at most {_g(c.margin)} worse than b",
        "two-sided": "a and b differ",
    }.get(c.direction, c.direction)
    head = f"contrast {c.id}: {c.direction} ({claim}), {c.pairing}, {c.better} is better, "
    head += f"level {_g(c.level)}" + (", primary" if c.primary else "")
    if c.outcome != "measure":
        head += f", the rate of runs that {_what(c.outcome, plural=True)}"
    return [head] + [
        f"{c.id} {side}: " + "; ".join(f"{r.id} {r.label}" for r in refs)
        for side, refs in (("a", c.a), ("b", c.b))
    ]


def _sample_lines(c: ContrastPower) -> list[str]:
    """The pilot's estimates and the planned sample."""
    e, s = c.pilot, c.planned
    if c.pairing == "paired" and c.outcome != "measure":
        counts = e.counts or {}
        favour_a, favour_b = counts.get("a_only", 0), counts.get("b_only", 0)
        pilot = (
            f"{c.id} pilot: {e.pairs} complete pairs ({e.incomplete_pairs} incomplete): "
            f"{favour_a} discordant favour a, {favour_b} favour b, "
            f"{counts.get('both', 0) + counts.get('neither', 0)} concordant: discordance "
            f"{_sd(e.discordance)} (p10 + p01, held), difference of rates {_sd(e.difference)}"
        )
    elif c.pairing == "paired":
        corr = "undefined (a side is constant)" if e.correlation is None else _g(e.correlation)
        pilot = (
            f"{c.id} pilot: {e.pairs} complete pairs ({e.incomplete_pairs} incomplete): "
            f"sd of the differences {_sd(e.sd_difference)}, sd of a {_sd(e.sd_a)}, "
            f"sd of b {_sd(e.sd_b)}, pairing correlation {corr} (over the same pairs, across "
            f"{len(e.a)} matched condition pair(s))"
        )
    elif c.outcome != "measure":
        counts = e.counts or {}
        # contrasts.json's counts are the test's sides: b's first when lower is better.
        (passed_a, passed_b), (n_a, n_b) = (
            _test_sides(c.better, counts.get("passed_a", 0), counts.get("passed_b", 0)),
            _test_sides(c.better, counts.get("n_a", 0), counts.get("n_b", 0)),
        )
        pilot = (
            f"{c.id} pilot: in a {passed_a} of {n_a} valid scored runs "
            f"{_what(c.outcome, plural=True)}, in b {passed_b} of {n_b}: mean rate "
            f"{_sd(e.mean_rate)} ((p_a + p_b) / 2, held), difference of rates "
            f"{_sd(e.difference)}"
        )
    else:
        pilot = (
            f"{c.id} pilot: a {e.n_a} valid runs, sd {_sd(e.sd_a)}; b {e.n_b} valid runs, "
            f"sd {_sd(e.sd_b)}"
        )
    if c.pairing == "paired":
        planned = (
            f"{c.id} planned: {s.runs_per_condition} runs per condition x {s.per_run_a} "
            f"matched condition pair(s), less {s.excluded_a} pair(s) the protocol excludes: "
            f"n = {s.pairs} pairs"
        )
    else:
        planned = (
            f"{c.id} planned: {s.runs_per_condition} runs per condition x {s.per_run_a} and "
            f"{s.per_run_b} condition(s), less {s.excluded_a} and {s.excluded_b} run(s) the "
            f"protocol excludes: n_a = {s.n_a}, n_b = {s.n_b}"
        )
    return [pilot, planned]


def _test_line(c: ContrastPower) -> str:
    u = c.unadjusted
    tails = "one-sided" if c.sided == "one-sided" else "two-sided (alpha / 2 each tail)"
    where = f"against {_g(c.null)} at alpha {_g(u.alpha)} (1 - level)"
    if c.test == "mcnemar-exact":
        e, n = c.pilot, c.planned.pairs
        return (
            f"{c.id} test: {'one-sided' if c.sided == 'one-sided' else 'two-sided'} McNemar "
            f"exact (the binomial test of the discordant pairs) {where}; exact power: d ~ "
            f"Binomial({n}, {_sd(e.discordance)}) discordant pairs, of which those favouring "
            f"a ~ Binomial(d, (1 + effect / {_sd(e.discordance)}) / 2); the effect p10 - p01 "
            f"is at most {_sd(c.largest_effect)} (the discordance held)"
        )
    if c.test == "fisher-exact":
        m = c.pilot.mean_rate
        return (
            f"{c.id} test: {'one-sided' if c.sided == 'one-sided' else 'two-sided'} Fisher "
            f"exact {where}; exact power over every table of the groups' binomial counts, "
            f"their rates {_sd(m)} + effect / 2 and {_sd(m)} - effect / 2; the effect is at "
            f"most {_sd(c.largest_effect)} (the mean rate held)"
        )
    test = "paired t" if c.test == "paired-t" else "Welch t"
    line = f"{c.id} test: {tails} {test} {where}, df {_sd(u.df)}, se {_sd(u.se)}"
    if c.decided_by is not None:
        line += (
            f"; the contrast is decided by a seeded percentile bootstrap ({c.decided_by}), "
            "planned here as its t analogue"
        )
    return line


def _mde_lines(plan: PowerPlan, c: ContrastPower) -> list[str]:
    u, b = c.unadjusted, c.bonferroni
    if b is not None:
        level = f"the unadjusted alpha {_g(u.alpha)}"
    elif plan.multiplicity == "holm":
        level = f"alpha {_g(u.alpha)} (Holm over one contrast adjusts nothing)"
    else:
        level = f"alpha {_g(u.alpha)} (multiplicity none)"
    # The difference is a - b, or b - a when lower is better: positive favours a.
    diff = "a - b" if c.better == "higher" else "b - a (lower is better)"
    diff = ("of rates " if c.outcome != "measure" else "") + diff

    def either(x: float | None) -> str:  # a two-sided test detects -x as it does x
        return f"{_sd(x)} or {_sd(None if x is None else -x)}" if c.sided == "two-sided" else _sd(x)

    def how(at: AtLevel) -> str:
        if at.method == "exact":
            return f"exact power {_sd(at.power_at_mde)}"
        return f"noncentrality {_sd(at.noncentrality)}"

    def none(at: AtLevel) -> str:
        return (
            f"none: even the largest effect, {_sd(c.largest_effect)}, has exact power "
            f"{_sd(at.largest_power)}, short of {_g(plan.power)}"
        )

    if u.mde is None:
        out = [f"{c.id} mde: {none(u)} at {level}"]
    else:
        out = [
            f"{c.id} mde: {_g(u.mde)} beyond {_g(c.null)} at power {_g(plan.power)} and "
            f"{level}, {how(u)}: a true difference {diff} of {either(u.difference)}"
        ]
    if b is not None:
        head = f"{c.id} mde at Bonferroni alpha {_g(u.alpha)} / {plan.family_size} = {_g(b.alpha)}"
        if b.mde is None:
            out.append(f"{head}: {none(b)}; the conservative bound, Holm's MDE lies between")
        else:
            out.append(
                f"{head}: {_g(b.mde)}, {how(b)}: a true difference {diff} of "
                f"{either(b.difference)}; the conservative bound, Holm's MDE lies between"
            )
    return out


def _needed(at: AtLevel, plan: PowerPlan) -> str:
    if at.method != "exact":
        return f"{_runs(at.runs_needed, plan)} runs per condition reach power {_g(plan.power)}"
    if at.runs_needed is None:
        return (
            f"no runs per condition up to {at.runs_searched} (the exact enumeration's limit) "
            f"reach power {_g(plan.power)}"
        )
    return (
        f"{at.runs_needed} runs per condition are the first to reach power {_g(plan.power)} "
        "(scanned upward: a discrete test's power is a sawtooth in the runs)"
    )


def _effect_line(plan: PowerPlan, c: ContrastPower) -> list[str]:
    u, b = c.unadjusted, c.bonferroni
    if plan.effect is None or u.power_at_effect is None:
        return []
    exact = "exact " if u.method == "exact" else ""
    line = (
        f"{c.id} effect {_g(plan.effect)} beyond {_g(c.null)}: {exact}power "
        f"{_g(u.power_at_effect)} at {plan.runs_per_condition} runs per condition; "
        f"{_needed(u, plan)}"
    )
    if b is not None and b.power_at_effect is not None:
        if b.method != "exact":
            runs_ = _runs(b.runs_needed, plan)
        else:
            runs_ = f"none up to {b.runs_searched}" if b.runs_needed is None else str(b.runs_needed)
        line += (
            f" (at Bonferroni's alpha: power {_g(b.power_at_effect)}, {runs_} runs per condition)"
        )
    return [line]


def _contrast_lines(plan: PowerPlan, c: ContrastPower) -> list[str]:
    return [
        *_head(c),
        *_sample_lines(c),
        _test_line(c),
        *_mde_lines(plan, c),
        *_effect_line(plan, c),
    ]


def lines(plan: PowerPlan) -> list[str]:
    """``repro protocol power``'s text: one fact a line."""
    out = [
        f"protocol {plan.protocol_id} (sha256 {plan.protocol_sha256}): "
        f"{plan.runs_per_condition} runs per condition, {plan.family_size} contrast(s), "
        f"multiplicity {plan.multiplicity}",
        f"pilot: bundle sha256 {plan.pilot_bundle_sha256} (verified), protocol sha256 "
        f"{plan.pilot_protocol_sha256}, {plan.pilot_runs_per_condition} runs per condition",
        f"target power: {_g(plan.power)}"
        + ("" if plan.effect is None else f", effect {_g(plan.effect)}"),
    ]
    for c in plan.contrasts:
        out += _contrast_lines(plan, c)
    out += [f"assumed: {a}" for a in plan.assumptions]
    return out
