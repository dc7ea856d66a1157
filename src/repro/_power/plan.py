"""The plan of every contrast of a protocol from a verified pilot (:func:`power_plan`): what
refuses it, each contrast's test at its alpha (and Bonferroni's), and what was assumed."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from attrs import frozen

from repro._derive.contrasts import null_boundary, outcome_name
from repro._derive.tally import RunTally
from repro._figures import condition_label
from repro._plan.sealing import conditions_of
from repro._power.family import family_problems
from repro._power.model import (
    AtLevel,
    ConditionRef,
    ContrastPower,
    PowerPlan,
    figure,
    test_sides,
    what_counts,
)
from repro._power.pilot import (
    PilotEstimate,
    PlannedSample,
    compares_rate,
    pilot_estimate,
    pilot_rates,
    planned_sample,
    planned_tally,
    rate_estimate,
)
from repro._power.rates import (
    FISHER_EXACT_RUNS,
    MCNEMAR_EXACT_PAIRS,
    RateDesign,
    detected,
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
from repro._protocol.contrasts import selected
from repro._protocol.rules import MAX_SLOTS
from repro.errors import BadInput, Problem
from repro.models import Contrast, Contrasts, FrozenProtocol, Group, Protocol, Scores, Seal


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
    return RateDesign("fisher-exact", *test_sides(contrast.better, n_a, n_b), pilot.mean_rate)


def _short(where: str, message: str) -> Problem:
    """A problem of a pilot too short or too uniform to plan the contrast at ``where``."""
    return Problem(where, message, "inconsistent")


def _estimate_problems(contrast: Contrast, pilot: PilotEstimate, where: str) -> list[Problem]:
    """Why the pilot's estimates cannot plan ``contrast``: fewer than two pairs or runs on a
    side, or a standard error of 0."""
    name = f"contrast {contrast.id!r}"
    if contrast.pairing == "paired":
        if pilot.pairs is None or pilot.pairs < 2:
            return [
                _short(
                    where,
                    f"{name}: the pilot has {pilot.pairs or 0} complete pair(s) "
                    f"({pilot.incomplete_pairs or 0} incomplete): its sd needs at least 2",
                )
            ]
        if pilot.sd_difference == 0:
            return [
                _short(
                    where,
                    f"{name}: the pilot's {pilot.pairs} paired differences are all equal (sd 0): "
                    "no variance to plan from (an MDE of 0 would claim any difference is detected)",
                )
            ]
        return []
    short = [f"{side} has {n}" for side, n in (("a", pilot.n_a), ("b", pilot.n_b)) if n < 2]
    if short:
        return [
            _short(
                where,
                f"{name}: in the pilot, group {' and '.join(short)} valid run(s): each needs "
                "at least 2",
            )
        ]
    if pilot.sd_a == 0 and pilot.sd_b == 0:
        return [
            _short(
                where,
                f"{name}: in the pilot, every run of each group has the same measure (both sds 0): "
                "no variance to plan from (an MDE of 0 would claim any difference is detected)",
            )
        ]
    return []


def _rate_problems(contrast: Contrast, pilot: PilotEstimate, where: str) -> list[Problem]:
    """Why the pilot's counts cannot plan a rate ``contrast``: no complete pair, or no
    discordant one (McNemar's test reads only those); an empty group, or every run of both
    groups alike (a mean rate of 0 or 1 leaves no room for a difference)."""
    name, what = f"contrast {contrast.id!r}", what_counts(outcome_name(contrast))
    if contrast.pairing == "paired":
        if not pilot.pairs:
            return [
                _short(
                    where,
                    f"{name}: the pilot has no complete scored pair "
                    f"({pilot.incomplete_pairs or 0} incomplete): no discordance to plan from",
                )
            ]
        if not pilot.discordance:
            return [
                _short(
                    where,
                    f"{name}: the pilot's {pilot.pairs} pairs are all concordant (in none does "
                    f"exactly one run of the two {what}): McNemar's test reads only discordant "
                    "pairs, so there is no discordance to plan from",
                )
            ]
        return []
    empty = [f"{side} has none" for side, n in (("a", pilot.n_a), ("b", pilot.n_b)) if n < 1]
    if empty:
        return [
            _short(
                where,
                f"{name}: in the pilot, group {' and '.join(empty)} valid scored run: each needs "
                "at least 1",
            )
        ]
    if pilot.mean_rate in (0.0, 1.0):
        which = "no run of either group" if pilot.mean_rate == 0 else "every run of both groups"
        return [
            _short(
                where,
                f"{name}: in the pilot, {which} {what} (mean rate {figure(pilot.mean_rate)}): "
                "no room for a difference of rates to plan from",
            )
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
        power_at_mde=None if detectable is None else detected(design, detectable, alpha, sided),
        largest_power=(
            detected(design, design.largest, alpha, sided) if detectable is None else None
        ),
        runs_searched=searched,
    )


#: What each test assumes, in the order the plan says it.
_TEST_ASSUMPTIONS = {
    "paired-t": (
        "paired: the differences are normal and independent, so the paired t statistic is "
        "noncentral t on n - 1 df with noncentrality effect / (sd / sqrt(n))"
    ),
    "welch-t": (
        "unpaired: each group's runs are normal and independent, and Welch's t statistic is "
        "taken as noncentral t with noncentrality effect / sqrt(sd_a^2 / n_a + sd_b^2 / n_b) "
        "on the Welch-Satterthwaite df of the pilot's variances scaled to the planned sizes: "
        "an approximation (the test estimates its df from its own runs)"
    ),
    "mcnemar-exact": (
        "paired rates: the pairs are independent, each discordant with probability the "
        "pilot's discordance p10 + p01 (p10: a's run counts and b's does not, the other way "
        "round when lower is better; p01 the reverse), held fixed as the effect p10 - p01 "
        "varies, so no effect beyond it can be; the power is exact, McNemar's: d discordant "
        "pairs ~ Binomial(n, p10 + p01), of which those favouring a ~ Binomial(d, (1 + "
        "effect / (p10 + p01)) / 2), rejected where the contrasts' own exact p-value is "
        f"below alpha (enumerated up to {MCNEMAR_EXACT_PAIRS} pairs)"
    ),
    "fisher-exact": (
        "unpaired rates: each group's runs count independently, the two groups' rates "
        "p_a and p_b having the pilot's mean (p_a + p_b) / 2, held fixed as the effect "
        "p_a - p_b varies (b - a when lower is better), so no effect beyond twice its "
        "distance from 0 or 1 can be; the power is exact, Fisher's: every table of the two "
        "groups' binomial counts, rejected where the contrasts' own exact p-value is below "
        f"alpha (enumerated up to {FISHER_EXACT_RUNS} runs in all)"
    ),
}


def _pilot_assumptions(measure: bool, rates: bool, pilot_sha: str) -> list[str]:
    """What is assumed of the pilot: its variances or rates are the true ones, and its runs
    are of the study's population."""
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
    return out


def _effect_assumptions(measure: bool, rates: bool) -> list[str]:
    """What the effect is, and that every planned slot ends valid."""
    out = []
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
    return out


def _search_assumptions(
    measure: bool, rates: bool, holm: bool, effect: float | None, max_runs: int
) -> list[str]:
    """How Holm's MDE is bounded, and how the runs needed are searched."""
    out = []
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
    return out


def _assumptions(
    tests: set[str], holm: bool, effect: float | None, max_runs: int, pilot_sha: str
) -> tuple[str, ...]:
    """What the plan assumed, one statement each: of the pilot, of each test in the family,
    of the effect, and of the search."""
    measure = bool(tests & {"paired-t", "welch-t"})
    rates = bool(tests & {"mcnemar-exact", "fisher-exact"})
    return (
        *_pilot_assumptions(measure, rates, pilot_sha),
        *(text for test, text in _TEST_ASSUMPTIONS.items() if test in tests),
        *_effect_assumptions(measure, rates),
        *_search_assumptions(measure, rates, holm, effect, max_runs),
    )


def _sample_problems(
    contrast: Contrast,
    estimate: PilotEstimate,
    sample: PlannedSample,
    runs_per_condition: int,
    plannable: bool,
) -> list[Problem]:
    """Why the protocol's runs per condition cannot plan ``contrast``: too few pairs or runs
    for its test, or, for a rate the pilot can plan (``plannable``), more than its exact power
    is enumerated for."""
    rate = compares_rate(contrast)
    name = f"contrast {contrast.id!r}"
    least = 1 if rate else 2
    if min(sample.n_a, sample.n_b) < least:
        return [
            Problem(
                "$.runs_per_condition",
                f"{name}: the protocol's {runs_per_condition} run(s) per condition give "
                f"{min(sample.n_a, sample.n_b)} "
                f"{'pair(s)' if contrast.pairing == 'paired' else 'run(s) on a side'}: "
                f"{'an exact' if rate else 'a t'} test needs at least {least}",
                "not-allowed",
            )
        ]
    design = (
        _rate_design(contrast, estimate, sample.n_a, sample.n_b) if rate and plannable else None
    )
    if design is None or design.exact:
        return []
    return [
        Problem(
            "$.runs_per_condition",
            f"{name}: the protocol's {runs_per_condition} run(s) per condition give "
            + (
                f"{sample.n_a} pairs, more than the {MCNEMAR_EXACT_PAIRS}"
                if design.test == "mcnemar-exact"
                else f"{sample.n_a + sample.n_b} runs in all, more than the {FISHER_EXACT_RUNS}"
            )
            + " its exact power is enumerated for (no approximation is offered in its place)",
            "over-limit",
        )
    ]


def _asked_problems(
    contrast: Contrast, power: float, effect: float | None, where: str
) -> list[Problem]:
    """Why the power or the effect asked cannot be planned for ``contrast``: a power not above
    its alpha, or an effect its test's direction cannot detect."""
    name = f"contrast {contrast.id!r}"
    problems = []
    alpha = 1.0 - contrast.level
    if not power > alpha:
        problems.append(
            Problem(
                f"{where}.level",
                f"{name}: --power {power} is not above its alpha {alpha:.6g} (1 - level)",
                "inconsistent",
            )
        )
    if effect is not None and _sided(contrast) == "one-sided" and not effect > 0:
        problems.append(
            Problem(
                f"{where}.direction",
                f"{name}: a one-sided test detects only an effect above 0 beyond its null "
                f"boundary, not --effect {effect}",
                "inconsistent",
            )
        )
    if effect == 0 and _sided(contrast) == "two-sided":
        problems.append(
            Problem(
                f"{where}.direction",
                f"{name}: a two-sided test detects no effect of 0",
                "inconsistent",
            )
        )
    return problems


def _contrast_problems(
    contrast: Contrast,
    estimate: PilotEstimate,
    sample: PlannedSample,
    runs_per_condition: int,
    power: float,
    effect: float | None,
    where: str,
) -> list[Problem]:
    """Why ``contrast`` cannot be planned: the pilot's estimates, the planned sample, the
    power or the effect."""
    rate = compares_rate(contrast)
    name = f"contrast {contrast.id!r}"
    problems = (_rate_problems if rate else _estimate_problems)(contrast, estimate, where)
    problems += _sample_problems(contrast, estimate, sample, runs_per_condition, not problems)
    problems += _asked_problems(contrast, power, effect, where)
    largest = None if problems else _largest_effect(contrast, estimate)
    if effect is not None and largest is not None and not abs(effect) <= largest:
        held = "discordance" if contrast.pairing == "paired" else "mean rate"
        problems.append(
            Problem(
                where,
                f"{name}: a rate's effect is a difference of rates: with the pilot's {held} "
                f"held, at most {figure(largest)}, not --effect {effect}",
                "inconsistent",
            )
        )
    return problems


def _plannable(
    p: Protocol, pilot: Protocol, pilot_seal: Seal, power: float, effect: float | None
) -> Contrasts:
    """The contrasts of ``p`` once nothing refuses planning them as a whole: raises
    :class:`repro.errors.BadInput` for no contrasts, a power or effect out of range, a
    clustered contrast, or a pilot of another family."""
    if p.contrasts is None:
        raise BadInput.at(
            "$.contrasts", "the protocol declares no contrasts to plan", "missing-field", "power"
        )
    if not 0 < power < 1:
        raise BadInput(f"power: --power must lie strictly between 0 and 1, not {power}")
    if effect is not None and not math.isfinite(effect):
        raise BadInput(f"power: --effect must be a finite number, not {effect}")
    unplanned = [
        Problem(
            f"$.contrasts.family[{i}].cluster",
            f"contrast {c.id!r} is clustered by {c.cluster!r}: its CR1 test's power needs the "
            "between-cluster variance and the number of clusters (its clusters - 1 df, which "
            "more runs do not raise), which power does not plan yet",
            "not-allowed",
        )
        for i, c in enumerate(p.contrasts.family)
        if c.cluster is not None
    ]
    if unplanned:
        raise BadInput.of("power", unplanned)
    problems = family_problems(p, pilot, pilot_seal.conditions)
    if problems:
        raise BadInput.of("power: the pilot is not of the protocol's family", problems)
    return p.contrasts


def _samples(
    p: Protocol,
    family: Sequence[Contrast],
    pilot: FrozenProtocol,
    pilot_seal: Seal,
    pilot_runs: RunTally,
    pilot_scores: Scores | None,
    power: float,
    effect: float | None,
) -> list[tuple[PilotEstimate, PlannedSample]]:
    """Each contrast's pilot estimate and planned sample (rules 2 and 3); raises
    :class:`repro.errors.BadInput` naming every contrast they cannot plan."""
    planned = planned_tally(p)
    rates = pilot_rates(p, pilot, pilot_seal, pilot_runs, pilot_scores)
    problems: list[Problem] = []
    out = []
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
        out.append((estimate, sample))
    if problems:
        raise BadInput.of("power", problems)
    return out


@frozen
class _Asked:
    """What every contrast is planned for: the power, the effect, the most runs searched, and
    the Bonferroni divisor (None: no Holm family of m > 1)."""

    power: float
    effect: float | None
    max_runs: int
    bonferroni: int | None


def _contrast_power(
    contrast: Contrast,
    estimate: PilotEstimate,
    sample: PlannedSample,
    refs: Callable[[Group], tuple[ConditionRef, ...]],
    asked: _Asked,
) -> ContrastPower:
    """One contrast's plan (rules 4 to 7) at its alpha and, under Holm, Bonferroni's."""
    alpha = 1.0 - contrast.level

    def at(level_alpha: float) -> AtLevel:
        return _at_level(
            contrast, estimate, sample, level_alpha, asked.power, asked.effect, asked.max_runs
        )

    return ContrastPower(
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
        unadjusted=at(alpha),
        bonferroni=None if asked.bonferroni is None else at(alpha / asked.bonferroni),
        outcome=outcome_name(contrast),
        test=_test(contrast),
        decided_by=_decided_by(contrast),
        largest_effect=_largest_effect(contrast, estimate),
    )


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
    contrasts_ = _plannable(p, pilot.protocol, pilot_seal, power, effect)
    family = contrasts_.family
    m = len(family)
    holm = contrasts_.multiplicity == "holm" and m > 1
    conditions = conditions_of(p)
    max_runs = MAX_SLOTS // len(conditions)
    samples = _samples(p, family, pilot, pilot_seal, pilot_runs, pilot_scores, power, effect)
    order = [f.name for f in p.matrix]

    def refs(group: Group) -> tuple[ConditionRef, ...]:
        return tuple(
            ConditionRef(c.id, condition_label(c.factors, c.participant, order))
            for c in selected(group, conditions)
        )

    asked = _Asked(power, effect, max_runs, m if holm else None)
    return PowerPlan(
        schema="repro.power/1",
        protocol_id=p.id,
        protocol_sha256=protocol.sha256,
        runs_per_condition=p.runs_per_condition,
        multiplicity=contrasts_.multiplicity,
        family_size=m,
        pilot_bundle_sha256=pilot_bundle_sha256,
        pilot_protocol_sha256=pilot.sha256,
        pilot_runs_per_condition=pilot.protocol.runs_per_condition,
        power=power,
        effect=effect,
        max_runs=max_runs,
        contrasts=tuple(
            _contrast_power(contrast, estimate, sample, refs, asked)
            for contrast, (estimate, sample) in zip(family, samples, strict=True)
        ),
        assumptions=_assumptions(
            {_test(c) for c in family}, holm, effect, max_runs, pilot_bundle_sha256
        ),
    )
