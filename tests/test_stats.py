"""Estimators and intervals: exact, order-invariant, and in agreement with SciPy."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from repro._stats import estimators as stats
from repro._stats.figures import same_figure
from repro._stats.resampling import percentile_ends

samples = st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=2, max_size=60)


class TestSummary:
    """n, mean and sd."""

    @pytest.mark.slow
    @given(samples, st.randoms())
    def test_order_invariant_bit_exact(self, values: list[float], rnd: random.Random) -> None:
        """Shuffling the sample leaves mean and variance bit-identical (fsum, two-pass)."""
        shuffled = values[:]
        rnd.shuffle(shuffled)
        a, b = stats.summarize(values), stats.summarize(shuffled)
        assert (a.mean, a.var) == (b.mean, b.var)

    def test_matches_numpy(self) -> None:
        """Mean and sd (n-1) agree with NumPy on ordinary data."""
        values = [float(x) for x in np.random.default_rng(1).normal(3, 2, size=500)]
        s = stats.summarize(values)
        assert s.mean == pytest.approx(np.mean(values), rel=1e-12)
        assert s.sd == pytest.approx(np.std(values, ddof=1), rel=1e-12)

    def test_undefined_below_two(self) -> None:
        """With one value there is a mean but no sd and no interval."""
        s = stats.summarize([4.0])
        assert (s.mean, s.sd) == (4.0, None)
        assert stats.mean_interval(s, "normal", 0.95, 100, 0) is None


class TestIntervals:
    """Normal, t and bootstrap intervals."""

    def test_normal_uses_exact_z(self) -> None:
        """The normal half-width is z(0.975) * sd / sqrt(n)."""
        s = stats.summarize([1.0, 2.0, 3.0, 4.0])
        iv = stats.mean_interval(s, "normal", 0.95, 100, 0)
        assert iv is not None
        assert iv.halfwidth == pytest.approx(1.959963984540054 * s.sd / 2, rel=1e-15)

    def test_t_matches_scipy(self) -> None:
        """The t interval matches scipy.stats.t.interval."""
        values = [1.0, 2.5, 2.0, 4.0, 3.5]
        s = stats.summarize(values)
        iv = stats.mean_interval(s, "t", 0.9, 100, 0)
        low, high = sps.t.interval(0.9, 4, loc=np.mean(values), scale=sps.sem(values))
        assert iv is not None
        assert (iv.low, iv.high) == pytest.approx((low, high), rel=1e-12)

    def test_bootstrap_is_seeded(self) -> None:
        """The same seed gives the same bootstrap interval; another seed another one."""
        s = stats.summarize([float(x) for x in range(30)])
        a = stats.mean_interval(s, "bootstrap", 0.95, 999, 5)
        b = stats.mean_interval(s, "bootstrap", 0.95, 999, 5)
        c = stats.mean_interval(s, "bootstrap", 0.95, 999, 6)
        assert a == b
        assert a != c

    @pytest.mark.slow
    @settings(max_examples=40, deadline=None)
    @given(
        st.lists(samples, min_size=1, max_size=9),
        st.sampled_from(["sum", "mean"]),
        st.integers(100, 1200),
        st.sampled_from([1, 7, 1 << 20]),
        st.integers(0, 2**32 - 1),
    )
    def test_bootstrap_is_scipys_call(
        self,
        groups: list[list[float]],
        combine: str,
        resamples: int,
        batch: int,
        seed: int,
    ) -> None:
        """The bootstrap made a batch of resamples at a time, in bounded memory, by repro's own
        draws, is SciPy's own call (every resample of every sample at once): its ends are the
        linear percentiles of exactly SciPy's replicates, to the float, and within the numeric
        policy's tolerance of SciPy's own ends (SciPy's quantile formula differs from NumPy's
        in the last bits), for one sample and for the estimand's several, whatever the batch."""
        arrays = [np.asarray(g, dtype=np.float64) for g in groups]

        def statistic(*xs: np.ndarray, axis: int = -1) -> np.ndarray:
            total = np.sum([x.mean(axis=axis) for x in xs], axis=0)
            return total if combine == "sum" else total / len(xs)

        result = sps.bootstrap(
            arrays,
            statistic,
            confidence_level=0.9,
            n_resamples=resamples,
            method="percentile",
            paired=False,
            vectorized=True,
            rng=np.random.default_rng(seed),
        )
        theirs = result.confidence_interval
        saved = stats._BATCH_VALUES
        stats._BATCH_VALUES = batch
        try:
            ours = stats._bootstrap(groups, combine, 0.9, resamples, seed)
        finally:
            stats._BATCH_VALUES = saved
        assert (ours.low, ours.high) == percentile_ends(result.bootstrap_distribution, 0.9)
        assert same_figure(float(theirs.low), ours.low)
        assert same_figure(float(theirs.high), ours.high)

    def test_sum_of_means_se(self) -> None:
        """Sum of condition means: SE = sqrt(sum(var_i / n_i))."""
        groups = [[1.0, 2.0, 3.0], [10.0, 12.0, 14.0, 16.0]]
        summaries = [stats.summarize(g) for g in groups]
        value, se, iv = stats.estimand_interval(
            summaries, "sum-of-condition-means", "normal", 0.95, 100, 0
        )
        expected_se = math.sqrt(1.0 / 3 + (20.0 / 3) / 4)
        assert value == 2.0 + 13.0
        assert se == pytest.approx(expected_se, rel=1e-15)
        assert iv is not None and iv.halfwidth == pytest.approx(1.959963984540054 * expected_se)

    def test_mean_of_means(self) -> None:
        """Mean of condition means divides value and SE by the number of conditions."""
        summaries = [stats.summarize(g) for g in ([1.0, 3.0], [5.0, 9.0])]
        value, se, _ = stats.estimand_interval(
            summaries, "mean-of-condition-means", "normal", 0.95, 100, 0
        )
        s_value, s_se, _ = stats.estimand_interval(
            summaries, "sum-of-condition-means", "normal", 0.95, 100, 0
        )
        assert value == s_value / 2 and se == s_se / 2

    @settings(max_examples=20, deadline=None)
    @given(st.lists(samples, min_size=1, max_size=4), st.sampled_from(["normal", "t"]))
    def test_estimand_interval_contains_value(self, groups: list[list[float]], method: str) -> None:
        """The estimand lies inside its own symmetric interval."""
        summaries = [stats.summarize(g) for g in groups]
        value, _, iv = stats.estimand_interval(
            summaries, "sum-of-condition-means", method, 0.95, 100, 0
        )
        assert iv is not None and value is not None
        assert iv.low <= value <= iv.high

    def test_zero_variance_conditions(self) -> None:
        """Conditions whose every run scores the same (as CAGE-2's Sleep red agent) give a
        zero-width contribution, not an error."""
        summaries = [stats.summarize([0.0] * 10), stats.summarize([1.0, 2.0, 3.0])]
        for method in ("normal", "t"):
            value, _se, iv = stats.estimand_interval(
                summaries, "sum-of-condition-means", method, 0.95, 100, 0
            )
            assert value == 2.0 and iv is not None and math.isfinite(iv.halfwidth)
