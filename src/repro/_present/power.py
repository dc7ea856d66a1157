"""``repro protocol power``'s text: the plan (:mod:`repro._power`), one fact a line."""

from __future__ import annotations

from repro._power.model import AtLevel, ContrastPower, PowerPlan, figure, test_sides, what_counts


def _sd(x: float | None) -> str:
    return "n/a" if x is None else figure(x)


def _runs(n: int | None, plan: PowerPlan) -> str:
    return f"more than {plan.max_runs}" if n is None else str(n)


def _head(c: ContrastPower) -> list[str]:
    claim = {
        "superiority": "a better than b",
        "non-inferiority": f"a at most {figure(c.margin)} worse than b",
        "two-sided": "a and b differ",
    }.get(c.direction, c.direction)
    head = f"contrast {c.id}: {c.direction} ({claim}), {c.pairing}, {c.better} is better, "
    head += f"level {figure(c.level)}" + (", primary" if c.primary else "")
    if c.outcome != "measure":
        head += f", the rate of runs that {what_counts(c.outcome, plural=True)}"
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
        corr = "undefined (a side is constant)" if e.correlation is None else figure(e.correlation)
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
            test_sides(c.better, counts.get("passed_a", 0), counts.get("passed_b", 0)),
            test_sides(c.better, counts.get("n_a", 0), counts.get("n_b", 0)),
        )
        pilot = (
            f"{c.id} pilot: in a {passed_a} of {n_a} valid scored runs "
            f"{what_counts(c.outcome, plural=True)}, in b {passed_b} of {n_b}: mean rate "
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
    where = f"against {figure(c.null)} at alpha {figure(u.alpha)} (1 - level)"
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
        level = f"the unadjusted alpha {figure(u.alpha)}"
    elif plan.multiplicity == "holm":
        level = f"alpha {figure(u.alpha)} (Holm over one contrast adjusts nothing)"
    else:
        level = f"alpha {figure(u.alpha)} (multiplicity none)"
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
            f"{_sd(at.largest_power)}, short of {figure(plan.power)}"
        )

    if u.mde is None:
        out = [f"{c.id} mde: {none(u)} at {level}"]
    else:
        out = [
            f"{c.id} mde: {figure(u.mde)} beyond {figure(c.null)} at power "
            f"{figure(plan.power)} and {level}, {how(u)}: a true difference {diff} of "
            f"{either(u.difference)}"
        ]
    if b is not None:
        head = (
            f"{c.id} mde at Bonferroni alpha {figure(u.alpha)} / {plan.family_size} = "
            f"{figure(b.alpha)}"
        )
        if b.mde is None:
            out.append(f"{head}: {none(b)}; the conservative bound, Holm's MDE lies between")
        else:
            out.append(
                f"{head}: {figure(b.mde)}, {how(b)}: a true difference {diff} of "
                f"{either(b.difference)}; the conservative bound, Holm's MDE lies between"
            )
    return out


def _needed(at: AtLevel, plan: PowerPlan) -> str:
    if at.method != "exact":
        return f"{_runs(at.runs_needed, plan)} runs per condition reach power {figure(plan.power)}"
    if at.runs_needed is None:
        return (
            f"no runs per condition up to {at.runs_searched} (the exact enumeration's limit) "
            f"reach power {figure(plan.power)}"
        )
    return (
        f"{at.runs_needed} runs per condition are the first to reach power {figure(plan.power)} "
        "(scanned upward: a discrete test's power is a sawtooth in the runs)"
    )


def _effect_line(plan: PowerPlan, c: ContrastPower) -> list[str]:
    u, b = c.unadjusted, c.bonferroni
    if plan.effect is None or u.power_at_effect is None:
        return []
    exact = "exact " if u.method == "exact" else ""
    line = (
        f"{c.id} effect {figure(plan.effect)} beyond {figure(c.null)}: {exact}power "
        f"{figure(u.power_at_effect)} at {plan.runs_per_condition} runs per condition; "
        f"{_needed(u, plan)}"
    )
    if b is not None and b.power_at_effect is not None:
        if b.method != "exact":
            runs_ = _runs(b.runs_needed, plan)
        else:
            runs_ = f"none up to {b.runs_searched}" if b.runs_needed is None else str(b.runs_needed)
        line += (
            f" (at Bonferroni's alpha: power {figure(b.power_at_effect)}, "
            f"{runs_} runs per condition)"
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
        f"target power: {figure(plan.power)}"
        + ("" if plan.effect is None else f", effect {figure(plan.effect)}"),
    ]
    for c in plan.contrasts:
        out += _contrast_lines(plan, c)
    out += [f"assumed: {a}" for a in plan.assumptions]
    return out
