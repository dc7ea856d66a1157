"""``repro protocol power``: how large a difference each pre-registered contrast of a protocol
can detect before it runs, from the variances of a pilot bundle of the same family. One pure
function per rule; the command line only reads the files and prints.

The rules, in order:

1. **The family** (:func:`family_problems`). A pilot plans a protocol when both have the same
   protocol ``id`` and measure (name and key), and each group of every contrast the protocol
   declares selects, in the pilot's sealed conditions, the same conditions (the same levels of
   every factor, the same participant) as in the protocol's. The condition IDs may differ (a
   pilot may have a smaller matrix), the pilot's own contrasts do not matter (it may declare
   none), and so do not its runs per condition.
2. **The pilot's estimates** (:func:`pilot_estimate`), from the tally of its runs that every
   derivation reads (:func:`pilot_tally`, partition by partition as verify tallies them).
   Paired: the differences of :func:`repro.derive.contrasts.paired_sample` (the contrasts'
   own pairing and sign: positive favours ``a``), their sd, the sd of each side over the same
   complete pairs and the pairing correlation between the sides. Unpaired: each group's
   pooled valid measures and their sd. Every sd is :func:`repro.derive.stats.summarize`'s (n - 1).
3. **The planned sample** (:func:`planned_sample`): the same sample functions applied to the
   protocol's plan as if every slot that runs ended valid (:func:`planned_tally`): ``n`` pairs
   (runs per condition x matched condition pairs) or each group's pooled runs, less what the
   protocol's own declared exclusions remove.
4. **The test's design** (:func:`paired_design`, :func:`welch_design`): the standard error of
   the difference and the degrees of freedom at the planned sizes, with the pilot's sds taken
   as the true ones. Paired: ``sd / sqrt(n)`` on ``n - 1``. Unpaired: ``sqrt(sd_a^2 / n_a +
   sd_b^2 / n_b)`` on the Welch-Satterthwaite degrees of freedom of the pilot's variances scaled
   to the planned sizes, an approximation: the test estimates its degrees of freedom, this
   takes them as fixed.
5. **The power** (:func:`t_power`): the probability that the test rejects when the true
   difference lies ``effect`` beyond the null boundary (0, or ``-margin`` for non-inferiority):
   its statistic is noncentral t with the design's df and noncentrality ``effect / se``
   (normal differences). One-sided (superiority, non-inferiority) at ``alpha = 1 - level``;
   two-sided at ``alpha / 2`` in each tail, both tails counted.
6. **The minimum detectable effect** (:func:`noncentrality_needed`, :func:`mde`): the smallest
   effect whose power reaches the target, solved with :func:`scipy.optimize.brentq` and then
   raised by the last ulps that rounding leaves it short, so that its power is never below the
   target. Under Holm's adjustment (a family of m > 1) the MDE is given at the unadjusted
   alpha and at Bonferroni's ``alpha / m``: Holm rejects everything Bonferroni rejects and
   nothing the unadjusted test does not, so its MDE lies between the two.
7. **The runs needed** (:func:`runs_needed`): the fewest runs per condition whose planned
   sample's power reaches the target for a given effect (the sizes grow by the matched pairs,
   or the group's conditions, per run, less the exclusions the protocol declares), found by
   doubling and bisection (power grows with the runs), or None past ``max_runs``.

A pilot's variance is itself uncertain: every figure here is as good as the pilot's estimates
and claims nothing beyond them. A pilot whose standard error would be 0 (every paired difference
equal; both groups constant) is refused: a t test has no variance to plan from, and an MDE of 0
would claim that any difference is detected.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Literal

from attrs import frozen

from repro.derive.contrasts import (
    better_sign,
    measure_values,
    null_boundary,
    paired_sample,
    pooled,
)
from repro.derive.figures import condition_label
from repro.derive.scenarios import by_condition
from repro.derive.stats import summarize
from repro.derive.tally import Attempt, RunTally, attempt_id, declared_exclusion, merge, runs, tally
from repro.derive.tiers import contract_digests
from repro.errors import BadInput
from repro.models import (
    Condition,
    Contrast,
    FrozenProtocol,
    Group,
    Ledger,
    Measure,
    Partition,
    Protocol,
    RunRecord,
    Seal,
)
from repro.plan.sealing import conditions_of, partitions
from repro.protocol.contrasts import matched_conditions, selected
from repro.protocol.rules import MAX_SLOTS

__all__ = [
    "AtLevel",
    "ConditionRef",
    "ContrastPower",
    "Design",
    "PilotEstimate",
    "PlannedSample",
    "PowerPlan",
    "Sidedness",
    "family_problems",
    "lines",
    "mde",
    "noncentrality_needed",
    "paired_design",
    "pilot_estimate",
    "pilot_tally",
    "planned_sample",
    "planned_tally",
    "power_plan",
    "runs_needed",
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
    values."""

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
    factor levels and participant) in the pilot's sealed conditions than in the protocol's."""
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
    """The test of one contrast at one alpha, at the protocol's runs per condition: its design,
    the noncentrality and MDE at the target power (``difference``: the true ``a - b``, positive
    favouring ``a``, at the MDE: the null boundary plus the MDE), and with an effect its power
    here and the runs per condition needed (None: more than ``PowerPlan.max_runs``)."""

    alpha: float
    se: float
    df: float
    noncentrality: float
    mde: float
    difference: float
    power_at_effect: float | None = None
    runs_needed: int | None = None


@frozen
class ConditionRef:
    """A condition of the protocol, by its ID and as a reader names it."""

    id: str
    label: str


@frozen
class ContrastPower:
    """One contrast's power plan: as declared (``sided`` and ``null``, the null boundary, as
    its test takes them), its conditions in the protocol, the pilot's estimates, the planned
    sample, and the test at the contrast's alpha (``unadjusted``) and, under Holm over a family
    of m > 1, at Bonferroni's ``alpha / m`` (``bonferroni``, the conservative bound)."""

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


def _at_level(
    contrast: Contrast,
    pilot: PilotEstimate,
    planned: PlannedSample,
    alpha: float,
    power: float,
    effect: float | None,
    max_runs: int,
) -> AtLevel:
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
    )


def _assumptions(
    plan_pairings: set[str], holm: bool, effect: float | None, max_runs: int, pilot_sha: str
) -> tuple[str, ...]:
    out = [
        f"the pilot's variances are taken as the true ones: every sd and correlation is the "
        f"estimate of the pilot (bundle sha256 {pilot_sha}) from the n it names; a pilot's "
        "variance is itself uncertain, and these figures claim nothing beyond it",
        "the pilot's runs are of the study's population: same protocol id, measure and "
        "conditions of each group",
    ]
    if "paired" in plan_pairings:
        out.append(
            "paired: the differences are normal and independent, so the paired t statistic is "
            "noncentral t on n - 1 df with noncentrality effect / (sd / sqrt(n))"
        )
    if "unpaired" in plan_pairings:
        out.append(
            "unpaired: each group's runs are normal and independent, and Welch's t statistic is "
            "taken as noncentral t with noncentrality effect / sqrt(sd_a^2 / n_a + sd_b^2 / n_b) "
            "on the Welch-Satterthwaite df of the pilot's variances scaled to the planned sizes: "
            "an approximation (the test estimates its df from its own runs)"
        )
    out += [
        "the effect is the true difference (positive favours a) beyond the null boundary: 0, "
        "or -margin for non-inferiority (whose detectable true difference is the MDE less the "
        "margin); one-sided tests at alpha = 1 - level, two-sided at alpha / 2 in each tail",
        "every planned slot ends valid: a slot lost at run time makes n smaller and the MDE "
        "larger; the protocol's declared exclusions are counted",
    ]
    if holm:
        out.append(
            "under Holm's adjustment the MDE at the unadjusted alpha is the optimistic bound and "
            "at Bonferroni's alpha / m the conservative one: Holm's lies between"
        )
    if effect is not None:
        out.append(
            "runs needed: the fewest runs per condition whose power reaches the target, the "
            "declared exclusions removing as many pairs or runs as in the plan; none past "
            f"{max_runs} (the most a protocol of these conditions may seal)"
        )
    return tuple(out)


def power_plan(
    protocol: FrozenProtocol,
    pilot: FrozenProtocol,
    pilot_seal: Seal,
    pilot_bundle_sha256: str,
    pilot_runs: RunTally,
    power: float = 0.8,
    effect: float | None = None,
) -> PowerPlan:
    """Every contrast of ``protocol`` planned from the tally of a verified pilot's runs
    (rules 1 to 7). Raises :class:`repro.errors.BadInput` naming every problem with its JSON
    path: no contrasts, a pilot of another family, too few pilot pairs or runs, a standard
    error of 0, a power or effect no test reaches."""
    p = protocol.protocol
    if p.contrasts is None:
        raise BadInput("power: the protocol declares no contrasts to plan @ $.contrasts")
    if not 0 < power < 1:
        raise BadInput(f"power: --power must lie strictly between 0 and 1, not {power}")
    if effect is not None and not math.isfinite(effect):
        raise BadInput(f"power: --effect must be a finite number, not {effect}")
    unplanned = [
        f"contrast {c.id!r} compares a rate or is clustered: power is planned for the "
        f"measure's paired and Welch t tests only @ $.contrasts.family[{i}]"
        for i, c in enumerate(p.contrasts.family)
        if c.check is not None or c.category is not None or c.cluster is not None
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
    estimates, samples = [], []
    for i, contrast in enumerate(family):
        where = f"$.contrasts.family[{i}]"
        estimate = pilot_estimate(
            contrast, pilot_seal.conditions, pilot_runs, pilot.protocol.runs_per_condition
        )
        sample = planned_sample(contrast, p, planned)
        problems += _estimate_problems(contrast, estimate, where)
        if min(sample.n_a, sample.n_b) < 2:
            problems.append(
                f"contrast {contrast.id!r}: the protocol's {p.runs_per_condition} run(s) per "
                f"condition give {min(sample.n_a, sample.n_b)} "
                f"{'pair(s)' if contrast.pairing == 'paired' else 'run(s) on a side'}: "
                "a t test needs at least 2 @ $.runs_per_condition"
            )
        alpha = 1.0 - contrast.level
        if not power > alpha:
            problems.append(
                f"contrast {contrast.id!r}: --power {power} is not above its alpha {alpha:.6g} "
                f"(1 - level) @ {where}.level"
            )
        if effect is not None and _sided(contrast) == "one-sided" and not effect > 0:
            problems.append(
                f"contrast {contrast.id!r}: a one-sided test detects only an effect above 0 "
                f"beyond its null boundary, not --effect {effect} @ {where}.direction"
            )
        if effect == 0 and _sided(contrast) == "two-sided":
            problems.append(
                f"contrast {contrast.id!r}: a two-sided test detects no effect of 0 "
                f"@ {where}.direction"
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
            {c.pairing for c in family}, holm, effect, max_runs, pilot_bundle_sha256
        ),
    )


# --------------------------------------------------------------------------- the text


def _g(x: float) -> str:
    return f"{x:.6g}"


def _sd(x: float | None) -> str:
    return "n/a" if x is None else _g(x)


def _runs(n: int | None, plan: PowerPlan) -> str:
    return f"more than {plan.max_runs}" if n is None else str(n)


def _contrast_lines(plan: PowerPlan, c: ContrastPower) -> list[str]:
    claim = {
        "superiority": "a better than b",
        "non-inferiority": f"a at most {_g(c.margin)} worse than b",
        "two-sided": "a and b differ",
    }.get(c.direction, c.direction)
    head = f"contrast {c.id}: {c.direction} ({claim}), {c.pairing}, {c.better} is better, "
    head += f"level {_g(c.level)}" + (", primary" if c.primary else "")
    out = [head]
    out += [
        f"{c.id} {side}: " + "; ".join(f"{r.id} {r.label}" for r in refs)
        for side, refs in (("a", c.a), ("b", c.b))
    ]
    e, s, u = c.pilot, c.planned, c.unadjusted
    corr = "undefined (a side is constant)" if e.correlation is None else _g(e.correlation)
    if c.pairing == "paired":
        out.append(
            f"{c.id} pilot: {e.pairs} complete pairs ({e.incomplete_pairs} incomplete): "
            f"sd of the differences {_sd(e.sd_difference)}, sd of a {_sd(e.sd_a)}, "
            f"sd of b {_sd(e.sd_b)}, pairing correlation {corr} (over the same pairs, across "
            f"{len(e.a)} matched condition pair(s))"
        )
        out.append(
            f"{c.id} planned: {s.runs_per_condition} runs per condition x {s.per_run_a} "
            f"matched condition pair(s), less {s.excluded_a} pair(s) the protocol excludes: "
            f"n = {s.pairs} pairs"
        )
        test = "paired t"
    else:
        out.append(
            f"{c.id} pilot: a {e.n_a} valid runs, sd {_sd(e.sd_a)}; b {e.n_b} valid runs, "
            f"sd {_sd(e.sd_b)}"
        )
        out.append(
            f"{c.id} planned: {s.runs_per_condition} runs per condition x {s.per_run_a} and "
            f"{s.per_run_b} condition(s), less {s.excluded_a} and {s.excluded_b} run(s) the "
            f"protocol excludes: n_a = {s.n_a}, n_b = {s.n_b}"
        )
        test = "Welch t"
    tails = "one-sided" if c.sided == "one-sided" else "two-sided (alpha / 2 each tail)"
    out.append(
        f"{c.id} test: {tails} {test} against {_g(c.null)} at alpha {_g(u.alpha)} "
        f"(1 - level), df {_g(u.df)}, se {_g(u.se)}"
    )
    if c.bonferroni is not None:
        level = f"the unadjusted alpha {_g(u.alpha)}"
    elif plan.multiplicity == "holm":
        level = f"alpha {_g(u.alpha)} (Holm over one contrast adjusts nothing)"
    else:
        level = f"alpha {_g(u.alpha)} (multiplicity none)"
    # The difference is a - b, or b - a when lower is better: positive favours a.
    diff = "a - b" if c.better == "higher" else "b - a (lower is better)"

    def either(x: float) -> str:  # a two-sided test detects -x as it does x
        return f"{_g(x)} or {_g(-x)}" if c.sided == "two-sided" else _g(x)

    out.append(
        f"{c.id} mde: {_g(u.mde)} beyond {_g(c.null)} at power {_g(plan.power)} and {level}, "
        f"noncentrality {_g(u.noncentrality)}: a true difference {diff} of {either(u.difference)}"
    )
    b = c.bonferroni
    if b is not None:
        out.append(
            f"{c.id} mde at Bonferroni alpha {_g(u.alpha)} / {plan.family_size} = {_g(b.alpha)}: "
            f"{_g(b.mde)}, noncentrality {_g(b.noncentrality)}: a true difference {diff} of "
            f"{either(b.difference)}; the conservative bound, Holm's MDE lies between"
        )
    if plan.effect is not None and u.power_at_effect is not None:
        line = (
            f"{c.id} effect {_g(plan.effect)} beyond {_g(c.null)}: power {_g(u.power_at_effect)} "
            f"at {plan.runs_per_condition} runs per condition; {_runs(u.runs_needed, plan)} runs "
            f"per condition reach power {_g(plan.power)}"
        )
        if b is not None and b.power_at_effect is not None:
            line += (
                f" (at Bonferroni's alpha: power {_g(b.power_at_effect)}, "
                f"{_runs(b.runs_needed, plan)} runs per condition)"
            )
        out.append(line)
    return out


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
