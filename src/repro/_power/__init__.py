"""Power planning, ``repro protocol power``: how large a difference each pre-registered contrast
of a protocol can detect before it runs, from the variances (or, for a rate, the counts) of a
pilot bundle of the same family. One pure function per rule; the command line only reads the
files and prints (the text is :mod:`repro._present.power`'s). By concern: which pilot plans a
protocol (:mod:`~repro._power.family`), the samples (:mod:`~repro._power.pilot`), a measure's t
tests (:mod:`~repro._power.sizing`), a rate's exact tests (:mod:`~repro._power.rates`), the plan
as data (:mod:`~repro._power.model`) and the plan itself (:mod:`~repro._power.plan`).

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
   Paired: the differences of :func:`repro._derive.contrasts.paired_sample` (the contrasts'
   own pairing and sign: positive favours ``a``), their sd, the sd of each side over the same
   complete pairs and the pairing correlation between the sides. Unpaired: each group's
   pooled valid measures and their sd. Every sd is
   :func:`repro._stats.estimators.summarize`'s (n - 1).
   A rate (:func:`pilot_rates`, :func:`rate_estimate`): the counts that
   :func:`repro._derive.contrasts.contrasts` itself makes of the pilot's runs and verified
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
   :mod:`repro._stats.inference`, has a p-value below alpha (as a verdict reads it): McNemar's
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

from repro._power.family import family_problems, scoring_problems
from repro._power.model import AtLevel, ConditionRef, ContrastPower, PowerPlan
from repro._power.pilot import (
    PilotEstimate,
    PlannedSample,
    compares_rate,
    pilot_estimate,
    pilot_rates,
    pilot_tally,
    planned_sample,
    planned_tally,
    rate_estimate,
)
from repro._power.plan import power_plan
from repro._power.rates import (
    FISHER_EXACT_RUNS,
    MCNEMAR_EXACT_PAIRS,
    RateDesign,
    RateTest,
    fisher_power,
    fisher_rejects,
    mcnemar_power,
    mcnemar_rejects,
    rate_mde,
    rate_power,
    rate_runs_needed,
)
from repro._power.sizing import (
    Design,
    Sidedness,
    mde,
    noncentrality_needed,
    paired_design,
    runs_needed,
    t_power,
    welch_design,
)

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
