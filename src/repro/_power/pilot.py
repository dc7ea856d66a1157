"""The samples (rules 2 and 3): the pilot's tally and its estimates (a measure's sds and
correlation, a rate's discordance or mean rate), and the protocol's planned sample."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence

from attrs import evolve, frozen

from repro._derive.contrasts import better_sign, contrasts, measure_values, paired_sample, pooled
from repro._derive.scenarios import by_condition
from repro._derive.tally import (
    Attempt,
    RunTally,
    attempt_id,
    declared_exclusion,
    merge,
    runs,
    tally,
)
from repro._derive.tiers import contract_digests
from repro._plan.sealing import conditions_of, partitions
from repro._protocol.contrasts import matched_conditions, selected
from repro._stats.estimators import summarize
from repro.models import (
    Condition,
    Contrast,
    ContrastResult,
    Contrasts,
    FrozenProtocol,
    Ledger,
    Partition,
    Protocol,
    RunRecord,
    Scores,
    Seal,
)


def pilot_tally(
    fp: FrozenProtocol,
    ledger: Ledger,
    parts: Iterable[tuple[Partition, Iterable[RunRecord]]],
) -> RunTally:
    """The tally of a pilot's runs that the derivations read (rule 2): each sealed partition's
    records tallied against it, with the contract digests and scenarios verify tallies with,
    one partition at a time, and merged (:func:`repro._derive.tally.merge`)."""
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
    of each complete pair are those :func:`repro._derive.contrasts.paired_sample` pairs, in its
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
    pilot's runs (rule 2), by contrast ID: :func:`repro._derive.contrasts.contrasts` applied
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
