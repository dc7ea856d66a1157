"""contrasts.json: every pre-registered contrast of the protocol decided from the runs, one pure
function per rule, shared by ``repro study`` and ``repro verify``.

The rules, in order:

1. **The sample.** Paired (:func:`paired_sample`): for each pair of matched conditions
   (:func:`repro._protocol.contrasts.matched_conditions`) and each replicate, the two runs'
   values, when both slots ended valid (with a measure, or scored, for a check or a category);
   a pair with a side that did not is counted as incomplete and left out, never imputed.
   Unpaired: the valid values of every condition of each group, pooled. A value is the run's
   measure, or whether it passed the contrast's check, or fell in its category. Either sample
   is in sealed order (pairs of conditions in ``a``'s order, then replicates; conditions, then
   replicates), a function of the seal and the runs' replicates, never of the order the runs
   are read: a bootstrap resamples it in that order.
2. **Which way is better.** Differences are ``a - b``, or ``b - a`` when the contrast says
   lower is better: a positive difference always favours ``a``, and superiority is the
   alternative that it is positive.
3. **The test** (:func:`paired_t`, :func:`welch_t`, and for checks, categories and clusters
   :mod:`repro._stats.inference`): the measure's mean difference (``math.fsum``, two-pass
   variance, so no figure depends on the order runs are read) with a paired t (``n - 1``
   degrees of freedom) or Welch's t (Welch-Satterthwaite), or, with a ``cluster`` factor, a
   cluster-robust CR1 standard error on ``clusters - 1`` degrees of freedom; a rate's
   difference with McNemar's exact test and Newcombe's paired score interval (paired) or
   Fisher's exact test and Newcombe's hybrid score interval (unpaired). The p-value is
   one-sided (``a`` better, or not worse by the margin) for superiority and non-inferiority,
   two-sided for two-sided; the interval is two-sided at the contrast's level. With a standard
   error of 0 (every difference equal) a t test's p-value is 0 when the estimate lies beyond
   the null boundary (0, or ``-margin``) in the claimed direction, else 1; a clustered one has
   none. Quantiles and tails come from SciPy. With the contrast's ``interval`` a ``bootstrap``
   (:func:`paired_bootstrap`, :func:`unpaired_bootstrap`; measure contrasts, not clustered),
   the estimate is the same exact mean difference, and the interval is
   ``scipy.stats.bootstrap``'s percentile interval at the contrast's level over the declared
   resamples, drawn by ``numpy.random.default_rng(seed)``: of the differences (paired), or of
   each group's runs on their own (unpaired). The p-value is read from the same replicates
   (:func:`bootstrap_p_value`): ``(1 + k) / (resamples + 1)`` with ``k`` replicates at or
   beyond the null boundary on the null's side, one-sided as the direction says, two-sided
   twice the smaller side's, at most 1; the standard error is the replicates' sd, and the
   statistic and degrees of freedom are null. Percentile, not BCa: the p-value counted from
   the replicates agrees with the percentile interval's ends, which are plain quantiles of the
   same replicates (BCa's ends are other, bias-corrected quantiles that the count would not
   match); and it stays defined when every replicate is equal, where BCa's is NaN. The
   resamples are drawn and the ends taken by repro's own algorithms from PCG64's raw stream
   (:mod:`repro._stats`): the draws ``scipy.stats.bootstrap`` made through
   ``Generator.integers`` when repro adopted it, and NumPy's ``linear`` percentiles, which
   NumPy and SciPy may change but repro does not; a re-derivation under another NumPy or SciPy
   differs at most in the last bits of NumPy's means, within verify's tolerance.
4. **Multiplicity** (:func:`repro._stats.inference.holm`): Holm's step-down adjustment over the
   family's p-values, or none (a family of one primary contrast).
5. **The verdict** (:func:`verdict`): ``holds`` when the adjusted p-value is below
   ``1 - level``; ``does-not-hold`` when the interval lies wholly at or below the null boundary
   (the runs show ``a`` not better, or worse by more than the margin; never for a two-sided
   contrast, which claims a difference and does not test equivalence); ``inconclusive``
   otherwise, or when there is no p-value.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from attrs import evolve, frozen

from repro._derive.tally import ConditionTally, RunTally
from repro._protocol.contrasts import matched_conditions, selected
from repro._stats import inference
from repro._stats.estimators import summarize, t_quantile
from repro._stats.inference import holm
from repro.models import (
    Condition,
    Contrast,
    ContrastInterval,
    ContrastResult,
    ContrastsFile,
    ContrastVerdict,
    FrozenProtocol,
    RunScore,
    Scores,
    Seal,
)

__all__ = [
    "Difference",
    "better_sign",
    "bootstrap_p_value",
    "contrasts",
    "judged",
    "measure_values",
    "null_boundary",
    "outcome_name",
    "paired_bootstrap",
    "paired_sample",
    "paired_t",
    "pooled",
    "unpaired_bootstrap",
    "verdict",
    "welch_t",
]

_NONE = ConditionTally(scheduled=0, valid=0, failed=0, excluded=0, measures=())

Value = float | bool
#: One side's values by replicate, for one condition.
Values = Callable[[Condition], dict[int, Value]]


@frozen
class Difference:
    """What a contrast's test gives: the difference, its standard error, degrees of freedom,
    two-sided interval, statistic and p-value (each None when undefined), the test's name, the
    clusters of a clustered one and the counts of a binary one."""

    estimate: float | None
    se: float | None
    df: float | None
    interval: ContrastInterval | None
    statistic: float | None
    p_value: float | None
    test: str = "paired-t"
    clusters: int | None = None
    counts: dict[str, int] | None = None


def _undefined(test: str) -> Difference:
    return Difference(None, None, None, None, None, None, test)


def better_sign(contrast: Contrast) -> float:
    """1 when higher is better, -1 when lower is: what ``a - b`` is multiplied by so that a
    positive difference favours ``a`` (rule 2)."""
    return 1.0 if contrast.better == "higher" else -1.0


def null_boundary(contrast: Contrast) -> float:
    """The null boundary of the difference: 0, or ``-margin`` for non-inferiority."""
    return -contrast.margin if contrast.direction == "non-inferiority" else 0.0


def _alternative(contrast: Contrast) -> inference.Alternative:
    return "two-sided" if contrast.direction == "two-sided" else "greater"


def paired_sample(
    pairs: Sequence[tuple[Condition, Condition]], values: Values, replicates: int
) -> tuple[list[tuple[Condition, Value, Value]], int]:
    """Each complete pair's condition of ``a`` and both values, and how many pairs were
    incomplete (rule 1)."""
    sample: list[tuple[Condition, Value, Value]] = []
    incomplete = 0
    for ca, cb in pairs:
        a, b = values(ca), values(cb)
        for r in range(replicates):
            if r in a and r in b:
                sample.append((ca, a[r], b[r]))
            else:
                incomplete += 1
    return sample, incomplete


def _mean_var(values: Sequence[float]) -> tuple[float, float]:
    """The mean and unbiased variance of two values or more (:func:`repro._stats.estimators.
    summarize`'s: ``math.fsum``, two-pass)."""
    s = summarize(values)
    assert s.mean is not None and s.var is not None
    return s.mean, s.var


def _test(
    contrast: Contrast, estimate: float, se: float, df: float
) -> tuple[ContrastInterval, float | None, float]:
    """The t interval, statistic and p-value of ``estimate`` with ``se`` on ``df``."""
    # Lazy: SciPy only for a t interval; verify of a normal one loads none.
    from scipy import stats as sps

    level = contrast.level
    null = null_boundary(contrast)
    half = t_quantile(level, df) * se
    interval = ContrastInterval(method="t", level=level, low=estimate - half, high=estimate + half)
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
    """The paired t of the differences, already signed by rule 2 (rule 3)."""
    n = len(differences)
    if n < 2:
        return _undefined("paired-t")
    mean, var = _mean_var(differences)
    se = math.sqrt(var / n)
    interval, statistic, p = _test(contrast, mean, se, n - 1)
    return Difference(mean, se, float(n - 1), interval, statistic, p, "paired-t")


def welch_t(contrast: Contrast, a: Sequence[float], b: Sequence[float]) -> Difference:
    """Welch's t of the difference of the groups' means, ``a``'s less ``b``'s (the other way
    round when lower is better; rules 2 and 3)."""
    if len(a) < 2 or len(b) < 2:
        return _undefined("welch-t")
    (ma, va), (mb, vb) = _mean_var(a), _mean_var(b)
    pa, pb = va / len(a), vb / len(b)
    se = math.sqrt(pa + pb)
    denominator = pa * pa / (len(a) - 1) + pb * pb / (len(b) - 1)
    df = (pa + pb) ** 2 / denominator if denominator > 0 else math.inf
    estimate = better_sign(contrast) * (ma - mb)
    interval, statistic, p = _test(contrast, estimate, se, df)
    # Both variances 0: the degrees of freedom are unbounded (JSON holds no infinity).
    df_kept = None if math.isinf(df) else df
    return Difference(estimate, se, df_kept, interval, statistic, p, "welch-t")


#: Values one batch of a bootstrap's resamples holds at most (resamples x runs): the batch
#: bounds the memory a bootstrap takes, and changes none of its figures, since SciPy draws
#: every batch from the one Generator in turn (a test holds it to SciPy's unbatched call).
_BATCH_VALUES = 1 << 22


def _mean(x: Any, axis: int = -1) -> Any:
    # Lazy: NumPy only for bootstrap arrays; verify of a normal interval loads none.
    import numpy as np

    return np.mean(x, axis=axis)


def _difference_of_means(a: Any, b: Any, axis: int = -1) -> Any:
    # Lazy: NumPy only for bootstrap arrays; verify of a normal interval loads none.
    import numpy as np

    return np.mean(a, axis=axis) - np.mean(b, axis=axis)


def bootstrap_p_value(contrast: Contrast, replicates: Iterable[float]) -> float:
    """The bootstrap p-value of the null boundary from the resampled differences (rule 3):
    ``(1 + k) / (B + 1)`` of ``B`` replicates, ``k`` of them at or below the boundary for
    superiority and non-inferiority; two-sided, twice the smaller of that and its mirror
    (``k`` at or above the boundary), at most 1. As a t's p-value does, one below
    ``1 - level`` (two-sided) or ``(1 - level) / 2`` (one-sided) puts the percentile interval
    strictly past the boundary: fewer than ``(1 - level) / 2 * (B + 1) - 1`` replicates lie on
    the null's side, and the interval's end is read at position ``(1 - level) / 2 * (B - 1)``
    of the sorted replicates."""
    # The engine (and NumPy with it) is imported only where a bootstrap runs.
    from repro._stats.bootstrap import p_value

    return p_value(replicates, null_boundary(contrast), contrast.direction == "two-sided")


def _bootstrap(
    contrast: Contrast,
    samples: Sequence[Sequence[float]],
    statistic: Callable[..., Any],
    estimate: float,
    test: str,
) -> Difference:
    """The percentile bootstrap of ``statistic`` over ``samples`` (each resampled on its own, in
    the order given), seeded as the contrast declares, with its p-value; ``estimate`` is the
    difference computed exactly, which the bootstrap does not replace.

    The resamples are those ``scipy.stats.bootstrap(..., rng=numpy.random.default_rng(seed))``
    drew, which repro took the bootstrap from: batches of resamples, each batch every sample's
    in turn, by ``Generator.integers``' draws, here made by repro's one bootstrap engine
    (:class:`repro._stats.bootstrap.Draws`, :func:`repro._stats.bootstrap.replicates`); the
    replicates are ``statistic`` of them (NumPy's means), the interval's ends their ``linear``
    percentiles (:func:`repro._stats.resampling.percentile_ends`) and the standard error their
    sd (n - 1)."""
    # NumPy and the engine are imported here only, as SciPy is: a study without a bootstrap
    # should not pay for them.
    import numpy as np

    # Lazy: the bootstrap brings NumPy; only a bootstrap interval needs it.
    from repro._stats.bootstrap import Draws, replicates
    from repro._stats.resampling import percentile_ends

    spec = contrast.interval
    assert spec is not None and spec.resamples is not None and spec.seed is not None
    arrays = [np.asarray(sample, dtype=np.float64) for sample in samples]
    step = _BATCH_VALUES // sum(len(x) for x in arrays)
    draw = functools.partial(Draws(spec.seed).iid, arrays)
    theta = replicates(draw, statistic, spec.resamples, step)[:, 0]
    low, high = percentile_ends(theta, contrast.level)
    interval = ContrastInterval(
        method="percentile-bootstrap", level=contrast.level, low=low, high=high
    )
    p = bootstrap_p_value(contrast, theta)
    return Difference(estimate, float(np.std(theta, ddof=1)), None, interval, None, p, test)


def paired_bootstrap(contrast: Contrast, differences: Sequence[float]) -> Difference:
    """The seeded percentile bootstrap of the mean of the differences, already signed by rule
    2 and in the paired sample's order (rule 3)."""
    n = len(differences)
    if n < 2:
        return _undefined("paired-bootstrap")
    estimate = math.fsum(differences) / n
    return _bootstrap(contrast, [differences], _mean, estimate, "paired-bootstrap")


def unpaired_bootstrap(contrast: Contrast, a: Sequence[float], b: Sequence[float]) -> Difference:
    """The seeded percentile bootstrap of the difference of the groups' means, each group's
    runs resampled on their own, ``a``'s less ``b``'s (the other way round when lower is
    better; rules 2 and 3)."""
    if len(a) < 2 or len(b) < 2:
        return _undefined("unpaired-bootstrap")
    sign = better_sign(contrast)
    # Negating is exact: the estimate is welch_t's, and the replicates are of the signed runs.
    xa, xb = [sign * v for v in a], [sign * v for v in b]
    estimate = math.fsum(xa) / len(xa) - math.fsum(xb) / len(xb)
    return _bootstrap(contrast, [xa, xb], _difference_of_means, estimate, "unpaired-bootstrap")


def _bootstrapped(contrast: Contrast) -> bool:
    return contrast.interval is not None and contrast.interval.method == "bootstrap"


def _from_inference(
    interval: inference.Interval | None, shift: float, level: float
) -> ContrastInterval | None:
    if interval is None:
        return None
    return ContrastInterval(
        method=interval.method, level=level, low=interval.low + shift, high=interval.high + shift
    )


def _clustered(
    contrast: Contrast,
    paired: list[tuple[str, float, float]] | None,
    runs: list[tuple[str, inference.Group, float]],
) -> Difference:
    """The measure's difference with a cluster-robust standard error (rule 3). For
    non-inferiority ``b``'s values are shifted down by the margin, so that the test against 0
    is the test against ``-margin``; the estimate and interval are shifted back."""
    m = contrast.margin if contrast.direction == "non-inferiority" else 0.0
    alt, level = _alternative(contrast), contrast.level
    r: inference.ClusteredPairedDifference | inference.ClusteredDifference
    if paired is not None:
        r = inference.clustered_paired_difference([(c, a, b - m) for c, a, b in paired], alt, level)
        test = "cluster-paired-t"
    else:
        r = inference.clustered_difference(
            [(c, g, v - m if g == "B" else v) for c, g, v in runs], alt, level
        )
        test = "cluster-t"
    estimate = None if r.difference is None else r.difference - m
    df = None if r.df is None else float(r.df)
    interval = _from_inference(r.interval, -m, level)
    return Difference(estimate, r.se, df, interval, r.statistic, r.p_value, test, r.clusters)


def _binary(
    contrast: Contrast, paired: list[tuple[bool, bool]] | None, a: list[bool], b: list[bool]
) -> Difference:
    """A rate's difference: McNemar's exact test (paired) or Fisher's (unpaired; rule 3)."""
    alt, level = _alternative(contrast), contrast.level
    if paired is not None:
        r = inference.mcnemar_exact(paired, alt, level)
        counts = {"both": r.both, "a_only": r.a_only, "b_only": r.b_only, "neither": r.neither}
        interval = _from_inference(r.interval, 0.0, level)
        return Difference(
            r.difference, None, None, interval, None, r.p_value, "mcnemar-exact", None, counts
        )
    u = inference.independent_proportions(a, b, alt, level)
    counts = {"passed_a": u.passed_a, "n_a": u.n_a, "passed_b": u.passed_b, "n_b": u.n_b}
    interval = _from_inference(u.interval, 0.0, level)
    return Difference(
        u.difference, None, None, interval, None, u.p_value, "fisher-exact", None, counts
    )


def verdict(
    contrast: Contrast, d: Difference, adjusted: float | None
) -> tuple[ContrastVerdict, str]:
    """The verdict on ``contrast`` and the reason that decided it (rule 5)."""
    alpha = 1.0 - contrast.level
    if d.estimate is None or d.interval is None or adjusted is None:
        return "inconclusive", (
            "no test: fewer than two runs or pairs on a side, fewer than two clusters, or no "
            "spread among clusters"
        )
    if adjusted < alpha:
        return "holds", f"adjusted p-value {adjusted:.6g} is below {alpha:.6g}"
    null = null_boundary(contrast)
    if contrast.direction != "two-sided" and d.interval.high <= null:
        return (
            "does-not-hold",
            f"the interval's high end {d.interval.high:.6g} is at or below {null:.6g}",
        )
    return "inconclusive", f"adjusted p-value {adjusted:.6g} is not below {alpha:.6g}"


def judged(fp: FrozenProtocol, file: ContrastsFile) -> ContrastsFile:
    """``file`` with each contrast's adjusted p-value, verdict and reason derived again from its
    own figures (rules 4 and 5): what follows from the figures, which verify derives from the
    stored ones once they are accepted (:mod:`repro._stats.figures`), so that a figure within the
    tolerance of a threshold decides no verdict otherwise than the study did."""
    p = fp.protocol
    if p.contrasts is None or len(p.contrasts.family) != len(file.contrasts):
        return file
    raw = [r.p_value for r in file.contrasts]
    adjusted = holm(raw) if p.contrasts.multiplicity == "holm" else raw
    results = []
    for contrast, result, p_adj in zip(p.contrasts.family, file.contrasts, adjusted, strict=True):
        figures = Difference(
            result.estimate, result.se, result.df, result.interval, result.statistic, None
        )
        outcome, reason = verdict(contrast, figures, p_adj)
        results.append(evolve(result, p_adjusted=p_adj, verdict=outcome, reason=reason))
    return evolve(file, contrasts=tuple(results))


def measure_values(runs: RunTally) -> Values:
    """Each condition's valid measures by replicate (rule 1, for the measure)."""

    def measures(c: Condition) -> dict[int, Value]:
        t = runs.conditions.get(c.id, _NONE)
        return dict(zip(t.replicates, t.measures, strict=True))

    return measures


def _values(contrast: Contrast, runs: RunTally, scores: Mapping[str, RunScore]) -> Values:
    """A condition's values by replicate (rule 1): its measures, or whether each scored run
    passed the check or fell in the category."""
    measures = measure_values(runs)

    def binary(c: Condition) -> dict[int, Value]:
        t = runs.conditions.get(c.id, _NONE)
        out: dict[int, Value] = {}
        for (attempt, _, _), r in zip(t.scored, t.scored_replicates, strict=True):
            score = scores.get(attempt)
            if score is None:
                continue
            if contrast.check is not None:
                out[r] = any(x.name == contrast.check and x.passed for x in score.checks)
            else:
                out[r] = score.category == contrast.category
        return out

    return measures if outcome_name(contrast) == "measure" else binary


def _once(values: Values) -> Values:
    """``values``, each condition's computed once: a contrast reads a side for its counts and
    again for its test."""
    seen: dict[str, dict[int, Value]] = {}

    def cached(c: Condition) -> dict[int, Value]:
        if c.id not in seen:
            seen[c.id] = values(c)
        return seen[c.id]

    return cached


def _cluster_of(contrast: Contrast, condition: Condition) -> str:
    assert contrast.cluster is not None
    return json.dumps(condition.factors[contrast.cluster])


def _paired(
    contrast: Contrast, conditions: Sequence[Condition], values: Values, replicates: int
) -> tuple[int, int, Difference]:
    """The pairs used, the pairs left out, and the test of a paired contrast."""
    matched = matched_conditions(contrast, conditions)
    assert not isinstance(matched, str), matched  # the protocol's rules refused it
    sample, incomplete = paired_sample(matched, values, replicates)
    sign = better_sign(contrast)
    if outcome_name(contrast) != "measure":
        rows = [(bool(a), bool(b)) for _, a, b in sample]
        # Lower is better: a passing less often is a doing better, so b's rate comes first.
        rows = rows if sign > 0 else [(b, a) for a, b in rows]
        return len(sample), incomplete, _binary(contrast, rows, [], [])
    if contrast.cluster is not None:
        clustered = [(_cluster_of(contrast, c), sign * a, sign * b) for c, a, b in sample]
        return len(sample), incomplete, _clustered(contrast, clustered, [])
    differences = [sign * (float(a) - float(b)) for _, a, b in sample]
    test = paired_bootstrap if _bootstrapped(contrast) else paired_t
    return len(sample), incomplete, test(contrast, differences)


def pooled(group: Sequence[Condition], values: Values) -> list[tuple[Condition, Value]]:
    """The valid values of every condition of ``group``, in sealed order (conditions, then
    replicates), each with its condition: an unpaired side (rule 1)."""
    return [(c, v) for c in group for _, v in sorted(values(c).items())]


def _unpaired(
    contrast: Contrast, a: Sequence[Condition], b: Sequence[Condition], values: Values
) -> Difference:
    """The test of an unpaired contrast on the pooled runs of each group."""
    side_a, side_b = pooled(a, values), pooled(b, values)
    sign = better_sign(contrast)
    if outcome_name(contrast) != "measure":
        xa, xb = [bool(v) for _, v in side_a], [bool(v) for _, v in side_b]
        return _binary(contrast, None, *((xa, xb) if sign > 0 else (xb, xa)))
    if contrast.cluster is not None:
        runs: list[tuple[str, inference.Group, float]] = [
            (_cluster_of(contrast, c), "A", sign * v) for c, v in side_a
        ] + [(_cluster_of(contrast, c), "B", sign * v) for c, v in side_b]
        return _clustered(contrast, None, runs)
    test = unpaired_bootstrap if _bootstrapped(contrast) else welch_t
    return test(contrast, [float(v) for _, v in side_a], [float(v) for _, v in side_b])


def outcome_name(contrast: Contrast) -> str:
    """What a contrast compares, as contrasts.json names it: ``measure``, ``check:ID`` or
    ``category:NAME``."""
    if contrast.check is not None:
        return f"check:{contrast.check}"
    if contrast.category is not None:
        return f"category:{contrast.category}"
    return "measure"


def _result(
    contrast: Contrast,
    sides: tuple[Sequence[Condition], Sequence[Condition]],
    counts: tuple[int, int, int | None, int | None],
    d: Difference,
    adjusted: float | None,
) -> ContrastResult:
    (a, b), (n_a, n_b, pairs, incomplete) = sides, counts
    outcome, reason = verdict(contrast, d, adjusted)
    return ContrastResult(
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
        p_adjusted=adjusted,
        verdict=outcome,
        reason=reason,
        outcome=outcome_name(contrast),
        test=d.test,
        clusters=d.clusters,
        counts=d.counts,
    )


def _decide(
    contrast: Contrast,
    conditions: Sequence[Condition],
    values: Values,
    replicates: int,
) -> tuple[
    tuple[list[Condition], list[Condition]], tuple[int, int, int | None, int | None], Difference
]:
    a, b = selected(contrast.a, conditions), selected(contrast.b, conditions)
    n_a, n_b = len(pooled(a, values)), len(pooled(b, values))
    if contrast.pairing == "unpaired":
        return (a, b), (n_a, n_b, None, None), _unpaired(contrast, a, b, values)
    pairs, incomplete, d = _paired(contrast, conditions, values, replicates)
    return (a, b), (n_a, n_b, pairs, incomplete), d


def contrasts(
    fp: FrozenProtocol, seal: Seal, runs: RunTally, scores: Scores | None = None
) -> ContrastsFile | None:
    """contrasts.json from the tally of the runs and, for checks and categories, the runs'
    scores (None for a protocol without contrasts)."""
    p = fp.protocol
    if p.contrasts is None:
        return None
    by_attempt = {} if scores is None else {s.attempt_id: s for s in scores.runs}
    decided = [
        _decide(c, seal.conditions, _once(_values(c, runs, by_attempt)), p.runs_per_condition)
        for c in p.contrasts.family
    ]
    raw = [d.p_value for *_, d in decided]
    adjusted = holm(raw) if p.contrasts.multiplicity == "holm" else raw
    results = tuple(
        _result(contrast, sides, counts, d, p_adj)
        for contrast, (sides, counts, d), p_adj in zip(
            p.contrasts.family, decided, adjusted, strict=True
        )
    )
    return ContrastsFile(
        schema="repro.contrasts/1",
        protocol_sha256=fp.sha256,
        multiplicity=p.contrasts.multiplicity,
        contrasts=results,
    )
