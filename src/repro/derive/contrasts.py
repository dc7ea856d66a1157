"""contrasts.json: every pre-registered contrast of the protocol decided from the runs, one pure
function per rule, shared by ``repro study`` and ``repro verify``.

The rules, in order:

1. **The sample.** Paired (:func:`paired_sample`): for each pair of matched conditions
   (:func:`repro.protocol.contrasts.matched_conditions`) and each replicate, the difference of
   the two runs' measures, when both slots ended valid with a measure; a pair with a side that
   did not is counted as incomplete and left out, never imputed. Unpaired: the valid measures of
   every condition of each group, pooled. Differences are ``a - b``, or ``b - a`` when the
   contrast says lower is better: positive always favours ``a``.
2. **The estimate** (:func:`paired_t`, :func:`welch_t`): the mean difference (``math.fsum``,
   two-pass variance, so no figure depends on the order runs are read), its standard error, the
   degrees of freedom (``n - 1``; Welch-Satterthwaite for unpaired), the two-sided t interval at
   the contrast's level, the t statistic against the null boundary (0, or ``-margin`` for
   non-inferiority) and its p-value: one-sided (``a`` better, or not worse by the margin) for
   superiority and non-inferiority, two-sided for two-sided. With a standard error of 0 (every
   difference equal) the p-value is 0 when the estimate lies beyond the null boundary in the
   claimed direction, else 1. Quantiles and tails come from SciPy's t distribution.
3. **Multiplicity** (:func:`holm`): Holm's step-down adjustment over the family's p-values, or
   none (a family of one primary contrast).
4. **The verdict** (:func:`verdict`): ``holds`` when the adjusted p-value is below
   ``1 - level``; ``does-not-hold`` when the interval lies wholly on the wrong side of the null
   boundary (its high end at or below it: the runs show ``a`` not better, or worse by more than
   the margin; never for a two-sided contrast, which claims a difference and does not test
   equivalence); ``inconclusive`` otherwise, or when there are fewer than two runs or pairs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from attrs import frozen

from repro.derive.tally import ConditionTally, RunTally
from repro.models import (
    Condition,
    Contrast,
    ContrastResult,
    ContrastsFile,
    ContrastVerdict,
    FrozenProtocol,
    IntervalValue,
    Seal,
)
from repro.protocol.contrasts import matched_conditions, selected

__all__ = [
    "Difference",
    "contrasts",
    "holm",
    "paired_sample",
    "paired_t",
    "verdict",
    "welch_t",
]

_NONE = ConditionTally(scheduled=0, valid=0, failed=0, excluded=0, measures=())


@frozen
class Difference:
    """A difference of means with its standard error, degrees of freedom, two-sided interval,
    t statistic and p-value; each None when undefined."""

    estimate: float | None
    se: float | None
    df: float | None
    interval: IntervalValue | None
    statistic: float | None
    p_value: float | None


_UNDEFINED = Difference(None, None, None, None, None, None)


def _sign(contrast: Contrast) -> float:
    return 1.0 if contrast.better == "higher" else -1.0


def _null(contrast: Contrast) -> float:
    """The null boundary of the difference: 0, or ``-margin`` for non-inferiority."""
    return -contrast.margin if contrast.direction == "non-inferiority" else 0.0


def _by_replicate(runs: ConditionTally) -> dict[int, float]:
    return dict(zip(runs.replicates, runs.measures, strict=True))


def paired_sample(
    contrast: Contrast,
    pairs: Sequence[tuple[Condition, Condition]],
    runs: RunTally,
    replicates: int,
) -> tuple[list[float], int]:
    """The paired differences (positive favours ``a``) and how many pairs were incomplete."""
    sign = _sign(contrast)
    differences: list[float] = []
    incomplete = 0
    for ca, cb in pairs:
        a = _by_replicate(runs.conditions.get(ca.id, _NONE))
        b = _by_replicate(runs.conditions.get(cb.id, _NONE))
        for r in range(replicates):
            if r in a and r in b:
                differences.append(sign * (a[r] - b[r]))
            else:
                incomplete += 1
    return differences, incomplete


def _mean_var(values: Sequence[float]) -> tuple[float, float]:
    mean = math.fsum(values) / len(values)
    return mean, math.fsum((x - mean) ** 2 for x in values) / (len(values) - 1)


def _test(
    contrast: Contrast, estimate: float, se: float, df: float
) -> tuple[IntervalValue, float | None, float]:
    """The interval, t statistic and p-value of ``estimate`` with ``se`` on ``df``."""
    from scipy import stats as sps

    level = contrast.level
    null = _null(contrast)
    half = float(sps.t.ppf(0.5 + level / 2, df)) * se
    interval = IntervalValue(
        method="t", level=level, low=estimate - half, high=estimate + half, halfwidth=half
    )
    if se == 0:
        beyond = estimate != null if contrast.direction == "two-sided" else estimate > null
        return interval, None, 0.0 if beyond else 1.0
    statistic = (estimate - null) / se
    if contrast.direction == "two-sided":
        p = 2.0 * float(sps.t.sf(abs(statistic), df))
    else:
        p = float(sps.t.sf(statistic, df))
    return interval, statistic, min(1.0, p)


def paired_t(contrast: Contrast, differences: Sequence[float]) -> Difference:
    """The paired t of the differences (rule 2)."""
    n = len(differences)
    if n < 2:
        return _UNDEFINED
    mean, var = _mean_var(differences)
    se = math.sqrt(var / n)
    interval, statistic, p = _test(contrast, mean, se, n - 1)
    return Difference(mean, se, float(n - 1), interval, statistic, p)


def welch_t(contrast: Contrast, a: Sequence[float], b: Sequence[float]) -> Difference:
    """Welch's t of the difference of the groups' means, ``a``'s less ``b``'s (the other way
    round when lower is better; rule 2)."""
    if len(a) < 2 or len(b) < 2:
        return _UNDEFINED
    (ma, va), (mb, vb) = _mean_var(a), _mean_var(b)
    pa, pb = va / len(a), vb / len(b)
    se = math.sqrt(pa + pb)
    denominator = pa * pa / (len(a) - 1) + pb * pb / (len(b) - 1)
    df = (pa + pb) ** 2 / denominator if denominator > 0 else math.inf
    estimate = _sign(contrast) * (ma - mb)
    interval, statistic, p = _test(contrast, estimate, se, df)
    # Both variances 0: the degrees of freedom are unbounded (JSON holds no infinity).
    return Difference(estimate, se, None if math.isinf(df) else df, interval, statistic, p)


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


def verdict(
    contrast: Contrast, d: Difference, adjusted: float | None
) -> tuple[ContrastVerdict, str]:
    """The verdict on ``contrast`` and the reason that decided it (rule 4)."""
    alpha = 1.0 - contrast.level
    if d.estimate is None or d.interval is None or adjusted is None:
        return "inconclusive", "fewer than two runs or pairs on a side: nothing is estimated"
    if adjusted < alpha:
        return "holds", f"adjusted p-value {adjusted:.6g} is below {alpha:.6g}"
    null = _null(contrast)
    if contrast.direction != "two-sided" and d.interval.high <= null:
        return (
            "does-not-hold",
            f"the interval's high end {d.interval.high:.6g} is at or below {null:.6g}",
        )
    return "inconclusive", f"adjusted p-value {adjusted:.6g} is not below {alpha:.6g}"


def _pooled(group: Sequence[Condition], runs: RunTally) -> list[float]:
    return [m for c in group for m in runs.conditions.get(c.id, _NONE).measures]


def _decide(
    contrast: Contrast, conditions: Sequence[Condition], runs: RunTally, replicates: int
) -> tuple[list[Condition], list[Condition], int, int, int | None, int | None, Difference]:
    a, b = selected(contrast.a, conditions), selected(contrast.b, conditions)
    n_a, n_b = len(_pooled(a, runs)), len(_pooled(b, runs))
    if contrast.pairing == "unpaired":
        return a, b, n_a, n_b, None, None, welch_t(contrast, _pooled(a, runs), _pooled(b, runs))
    matched = matched_conditions(contrast, conditions)
    assert not isinstance(matched, str), matched  # the protocol's rules refused it
    differences, incomplete = paired_sample(contrast, matched, runs, replicates)
    return a, b, n_a, n_b, len(differences), incomplete, paired_t(contrast, differences)


def contrasts(fp: FrozenProtocol, seal: Seal, runs: RunTally) -> ContrastsFile | None:
    """contrasts.json from the tally of the runs (None for a protocol without contrasts)."""
    p = fp.protocol
    if p.contrasts is None:
        return None
    decided = [_decide(c, seal.conditions, runs, p.runs_per_condition) for c in p.contrasts.family]
    raw = [d.p_value for *_, d in decided]
    adjusted = holm(raw) if p.contrasts.multiplicity == "holm" else raw
    results = []
    for contrast, (a, b, n_a, n_b, pairs, incomplete, d), p_adj in zip(
        p.contrasts.family, decided, adjusted, strict=True
    ):
        outcome, reason = verdict(contrast, d, p_adj)
        results.append(
            ContrastResult(
                id=contrast.id,
                direction=contrast.direction,
                pairing=contrast.pairing,
                better=contrast.better,
                margin=contrast.margin,
                level=contrast.level,
                primary=contrast.primary,
                a=tuple(c.id for c in a),
                b=tuple(c.id for c in b),
                n_a=n_a,
                n_b=n_b,
                pairs=pairs,
                incomplete_pairs=incomplete,
                estimate=d.estimate,
                se=d.se,
                df=d.df,
                interval=d.interval,
                statistic=d.statistic,
                p_value=d.p_value,
                p_adjusted=p_adj,
                verdict=outcome,
                reason=reason,
            )
        )
    return ContrastsFile(
        schema="repro.contrasts/1",
        protocol_sha256=fp.sha256,
        multiplicity=p.contrasts.multiplicity,
        contrasts=tuple(results),
    )
