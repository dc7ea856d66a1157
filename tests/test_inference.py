"""Comparisons of two groups: each figure agrees with an independent computation (SciPy,
statsmodels, or a published worked example), does not depend on the order of the runs (bit for
bit), is antisymmetric in A and B, and is defined (None, never NaN) on degenerate input."""

from __future__ import annotations

import math
import random
from fractions import Fraction
from typing import Any

import attrs
import numpy as np
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from repro._stats import inference
from repro._stats.inference import Interval

ALTERNATIVES = ("two-sided", "greater", "less")
MIRROR = {"two-sided": "two-sided", "greater": "less", "less": "greater"}
REL = 1e-12


def approx(expected: Any) -> Any:
    """Equal to 1e-12 relative, with no absolute slack (pytest's default abs=1e-12 would let
    any two small p-values pass)."""
    return pytest.approx(expected, rel=REL, abs=0)


alternatives = st.sampled_from(ALTERNATIVES)
levels = st.sampled_from([0.5, 0.8, 0.9, 0.95, 0.99])
counts = st.integers(0, 40)


def pairs_of(both: int, a_only: int, b_only: int, neither: int) -> list[tuple[bool, bool]]:
    """Pairs making the paired 2x2 table (both passed, only A, only B, neither)."""
    return (
        [(True, True)] * both
        + [(True, False)] * a_only
        + [(False, True)] * b_only
        + [(False, False)] * neither
    )


def outcomes(passed: int, n: int) -> list[bool]:
    """n outcomes of which ``passed`` passed."""
    return [True] * passed + [False] * (n - passed)


def mirrored(iv: Interval | None) -> tuple[float, float] | None:
    """The interval's limits reflected through 0."""
    return None if iv is None else (-iv.high, -iv.low)


def limits(iv: Interval | None) -> tuple[float, float] | None:
    return None if iv is None else (iv.low, iv.high)


def no_nan(result: Any) -> None:
    """Every float in a result (and in its interval) is finite or None."""
    for value in attrs.asdict(result, recurse=True).values():
        items = value.values() if isinstance(value, dict) else [value]
        for item in items:
            if isinstance(item, float):
                assert math.isfinite(item)


# --- paired binary -----------------------------------------------------------------------------


def newcombe_paired_reference(
    both: int, a_only: int, b_only: int, neither: int, level: float
) -> tuple[float, float]:
    """Newcombe (1998b) method 10 as published, with statsmodels' Wilson intervals."""
    n = both + a_only + b_only + neither
    x1, x2 = both + a_only, both + b_only
    p1, p2 = x1 / n, x2 / n
    l1, u1 = proportion_confint(x1, n, alpha=1 - level, method="wilson")
    l2, u2 = proportion_confint(x2, n, alpha=1 - level, method="wilson")
    product = x1 * (n - x1) * x2 * (n - x2)
    cross = both * neither - a_only * b_only
    if product == 0:
        phi = 0.0
    elif cross > n / 2:
        phi = (cross - n / 2) / math.sqrt(product)
    elif cross >= 0:
        phi = 0.0
    else:
        phi = cross / math.sqrt(product)
    d = p1 - p2
    low = d - math.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    high = d + math.sqrt((p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2)
    return low, high


class TestMcNemar:
    """Exact McNemar test and Newcombe's paired score interval."""

    def test_counts_and_difference(self) -> None:
        """The four cells are counted and the difference is (a_only - b_only) / n."""
        pairs = [(True, True), (True, False), (True, False), (False, True), (False, False)]
        r = inference.mcnemar_exact(pairs)
        assert (r.n, r.both, r.a_only, r.b_only, r.neither) == (5, 1, 2, 1, 1)
        assert r.difference == 1 / 5

    @pytest.mark.parametrize(
        ("table", "expected"),
        [
            # Newcombe (1998b), Table II: Armitage and Berry's two culture media, method 10
            # (the limits ratesci's tests check against the paper, too).
            ((20, 12, 2, 16), (0.0562, 0.3292)),
            # Fagerland, Lydersen and Laake (2017), ch. 8: Cavo et al. (2012), the Newcombe
            # square-and-add interval (contingencytables' tests).
            ((59, 6, 16, 80), (-0.1186, -0.0046)),
            # Tang, Ling and Tian (2010), as ratesci reproduces it.
            ((8, 3, 1, 2), (-0.1574, 0.4136)),
        ],
    )
    def test_published_examples(
        self, table: tuple[int, int, int, int], expected: tuple[float, float]
    ) -> None:
        """Newcombe's method 10 reproduces published intervals to their four decimals."""
        r = inference.mcnemar_exact(pairs_of(*table))
        assert r.interval is not None
        assert (round(r.interval.low, 4), round(r.interval.high, 4)) == expected

    def test_bentur_example(self) -> None:
        """Fagerland, Lydersen and Laake (2014), Bentur et al.: -0.507 to -0.026 (3 decimals)."""
        r = inference.mcnemar_exact(pairs_of(1, 1, 7, 12))
        assert r.interval is not None
        assert (round(r.interval.low, 3), round(r.interval.high, 3)) == (-0.507, -0.026)
        assert r.difference == pytest.approx(-0.2857, abs=5e-5)

    @pytest.mark.slow
    @settings(max_examples=200, deadline=None)
    @given(counts, counts, counts, counts, levels)
    def test_interval_matches_reference(
        self, both: int, a_only: int, b_only: int, neither: int, level: float
    ) -> None:
        """The interval is Newcombe's published formula on statsmodels' Wilson limits."""
        if both + a_only + b_only + neither == 0:
            return
        r = inference.mcnemar_exact(pairs_of(both, a_only, b_only, neither), level=level)
        expected = newcombe_paired_reference(both, a_only, b_only, neither, level)
        assert r.interval is not None
        assert limits(r.interval) == pytest.approx(expected, rel=REL, abs=1e-15)

    @pytest.mark.slow
    @settings(max_examples=200, deadline=None)
    @given(counts, counts, counts, counts, alternatives)
    def test_p_value_matches_binomtest(
        self, both: int, a_only: int, b_only: int, neither: int, alternative: str
    ) -> None:
        """The p-value is scipy.stats.binomtest(a_only, a_only + b_only, 0.5, alternative)."""
        r = inference.mcnemar_exact(pairs_of(both, a_only, b_only, neither), alternative)  # type: ignore[arg-type]
        if a_only + b_only == 0:
            assert r.p_value == 1.0
            return
        expected = sps.binomtest(a_only, a_only + b_only, 0.5, alternative=alternative).pvalue
        assert r.p_value == approx(expected)

    @pytest.mark.parametrize(
        "table", [(20, 12, 2, 16), (1, 1, 7, 12), (59, 6, 16, 80), (3, 9, 9, 3)]
    )
    def test_two_sided_p_matches_statsmodels(self, table: tuple[int, int, int, int]) -> None:
        """The two-sided p-value is statsmodels' exact McNemar test."""
        both, a_only, b_only, neither = table
        r = inference.mcnemar_exact(pairs_of(*table))
        expected = sm_mcnemar([[both, a_only], [b_only, neither]], exact=True).pvalue
        assert r.p_value == approx(expected)

    @pytest.mark.slow
    @settings(max_examples=100, deadline=None)
    @given(counts, counts, counts, counts, alternatives, st.randoms(use_true_random=False))
    def test_order_invariant(
        self, both: int, a_only: int, b_only: int, neither: int, alt: str, rnd: random.Random
    ) -> None:
        """Shuffling the pairs changes nothing."""
        pairs = pairs_of(both, a_only, b_only, neither)
        shuffled = pairs[:]
        rnd.shuffle(shuffled)
        assert inference.mcnemar_exact(pairs, alt) == inference.mcnemar_exact(shuffled, alt)  # type: ignore[arg-type]

    @pytest.mark.slow
    @settings(max_examples=200, deadline=None)
    @given(counts, counts, counts, counts, alternatives, levels)
    def test_swapping_a_and_b(
        self, both: int, a_only: int, b_only: int, neither: int, alt: str, level: float
    ) -> None:
        """Swapping A and B negates the difference and mirrors the interval exactly; the
        p-value of the mirrored alternative is the same, bit for bit."""
        pairs = pairs_of(both, a_only, b_only, neither)
        r = inference.mcnemar_exact(pairs, alt, level)  # type: ignore[arg-type]
        s = inference.mcnemar_exact([(b, a) for a, b in pairs], MIRROR[alt], level)  # type: ignore[arg-type]
        assert (s.a_only, s.b_only) == (r.a_only, r.b_only)[::-1]
        assert s.difference == (None if r.difference is None else -r.difference)
        assert limits(s.interval) == mirrored(r.interval)
        assert s.p_value == r.p_value

    @pytest.mark.slow
    @settings(max_examples=200, deadline=None)
    @given(counts, counts, counts, counts, alternatives, levels)
    def test_always_defined(
        self, both: int, a_only: int, b_only: int, neither: int, alt: str, level: float
    ) -> None:
        """No NaN; the p-value is a probability; the interval lies in [-1, 1] and holds the
        difference."""
        r = inference.mcnemar_exact(pairs_of(both, a_only, b_only, neither), alt, level)  # type: ignore[arg-type]
        no_nan(r)
        assert 0.0 <= r.p_value <= 1.0
        if r.interval is not None and r.difference is not None:
            assert -1.0 <= r.interval.low <= r.difference <= r.interval.high <= 1.0

    def test_no_pairs(self) -> None:
        """Without pairs: no difference, no interval, p-value 1."""
        r = inference.mcnemar_exact([])
        assert (r.n, r.difference, r.interval, r.p_value) == (0, None, None, 1.0)

    @pytest.mark.parametrize("table", [(5, 0, 0, 0), (0, 0, 0, 5), (3, 0, 0, 4)])
    def test_all_concordant(self, table: tuple[int, int, int, int]) -> None:
        """Every pair concordant: difference 0, p-value 1, an interval symmetric about 0."""
        r = inference.mcnemar_exact(pairs_of(*table))
        assert (r.difference, r.p_value) == (0.0, 1.0)
        assert r.interval is not None and r.interval.low == -r.interval.high < 0

    def test_refuses_bad_arguments(self) -> None:
        """Unknown alternatives, levels outside (0, 1) and non-bool outcomes are refused."""
        with pytest.raises(ValueError, match="alternative"):
            inference.mcnemar_exact([], "bigger")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="level"):
            inference.mcnemar_exact([], level=1.0)
        with pytest.raises(TypeError, match="bool"):
            inference.mcnemar_exact([(1, 0)])  # type: ignore[list-item]


# --- independent binary ------------------------------------------------------------------------


class TestIndependentProportions:
    """Fisher's exact test and Newcombe's hybrid score interval."""

    @pytest.mark.parametrize(
        ("table", "expected"),
        [
            # Newcombe (1998a), example (d) (ratesci's tests check against the paper, too).
            ((5, 56, 0, 29), (-0.0381, 0.1926)),
            # Fagerland, Lydersen and Laake (2017), ch. 4: Perondi et al. (2004).
            ((7, 34, 1, 34), (0.0189, 0.3404)),
        ],
    )
    def test_published_examples(
        self, table: tuple[int, int, int, int], expected: tuple[float, float]
    ) -> None:
        """The hybrid score interval reproduces published intervals to four decimals."""
        xa, na, xb, nb = table
        r = inference.independent_proportions(outcomes(xa, na), outcomes(xb, nb))
        assert r.interval is not None
        assert (round(r.interval.low, 4), round(r.interval.high, 4)) == expected

    @pytest.mark.slow
    @settings(max_examples=200, deadline=None)
    @given(st.integers(1, 60), st.integers(1, 60), st.data(), levels)
    def test_interval_matches_statsmodels(
        self, na: int, nb: int, data: st.DataObject, level: float
    ) -> None:
        """The interval is statsmodels' confint_proportions_2indep(method="newcomb")."""
        xa, xb = data.draw(st.integers(0, na)), data.draw(st.integers(0, nb))
        r = inference.independent_proportions(outcomes(xa, na), outcomes(xb, nb), level=level)
        low, high = confint_proportions_2indep(xa, na, xb, nb, method="newcomb", alpha=1 - level)
        assert r.interval is not None
        assert limits(r.interval) == pytest.approx((low, high), rel=REL, abs=1e-15)
        assert r.difference == xa / na - xb / nb

    @pytest.mark.slow
    @settings(max_examples=200, deadline=None)
    @given(st.integers(0, 60), st.integers(0, 60), st.data(), alternatives)
    def test_p_value_matches_fisher(
        self, na: int, nb: int, data: st.DataObject, alternative: str
    ) -> None:
        """The p-value is scipy.stats.fisher_exact of [[passed_a, failed_a], [passed_b,
        failed_b]] with the same alternative."""
        xa, xb = data.draw(st.integers(0, na)), data.draw(st.integers(0, nb))
        r = inference.independent_proportions(outcomes(xa, na), outcomes(xb, nb), alternative)  # type: ignore[arg-type]
        table = [[xa, na - xa], [xb, nb - xb]]
        expected = sps.fisher_exact(table, alternative=alternative).pvalue
        assert r.p_value == approx(expected)

    @pytest.mark.slow
    @settings(max_examples=100, deadline=None)
    @given(st.integers(0, 30), st.integers(0, 30), st.data(), alternatives, st.randoms())
    def test_order_invariant(
        self, na: int, nb: int, data: st.DataObject, alt: str, rnd: random.Random
    ) -> None:
        """Shuffling either group's runs changes nothing."""
        a = outcomes(data.draw(st.integers(0, na)), na)
        b = outcomes(data.draw(st.integers(0, nb)), nb)
        r = inference.independent_proportions(a, b, alt)  # type: ignore[arg-type]
        rnd.shuffle(a)
        rnd.shuffle(b)
        assert inference.independent_proportions(a, b, alt) == r  # type: ignore[arg-type]

    @pytest.mark.slow
    @settings(max_examples=200, deadline=None)
    @given(st.integers(0, 40), st.integers(0, 40), st.data(), alternatives, levels)
    def test_swapping_a_and_b(
        self, na: int, nb: int, data: st.DataObject, alt: str, level: float
    ) -> None:
        """Swapping the groups negates the difference and mirrors the interval exactly; the
        p-value of the mirrored alternative is the same, bit for bit."""
        a = outcomes(data.draw(st.integers(0, na)), na)
        b = outcomes(data.draw(st.integers(0, nb)), nb)
        r = inference.independent_proportions(a, b, alt, level)  # type: ignore[arg-type]
        s = inference.independent_proportions(b, a, MIRROR[alt], level)  # type: ignore[arg-type]
        assert s.difference == (None if r.difference is None else -r.difference)
        assert limits(s.interval) == mirrored(r.interval)
        assert s.p_value == r.p_value
        no_nan(r)
        assert 0.0 <= r.p_value <= 1.0
        if r.interval is not None and r.difference is not None:
            assert -1.0 <= r.interval.low <= r.difference <= r.interval.high <= 1.0

    def test_empty_group(self) -> None:
        """An empty group: no proportion for it, no difference, no interval, p-value 1."""
        r = inference.independent_proportions([True, False], [])
        assert (r.proportion_a, r.proportion_b, r.difference, r.interval) == (0.5, None, None, None)
        assert r.p_value == 1.0
        assert inference.independent_proportions([], []).difference is None

    def test_all_pass(self) -> None:
        """Every run passed in both groups: difference 0, p-value 1, an interval about 0."""
        r = inference.independent_proportions([True] * 4, [True] * 9)
        assert (r.difference, r.p_value) == (0.0, 1.0)
        assert r.interval is not None and r.interval.low < 0 < r.interval.high


# --- clustered means ---------------------------------------------------------------------------


def clustered_data(seed: int, clusters: int, binary: bool) -> list[tuple[str, str, float]]:
    """Runs of A and B in clusters of uneven size with a shared cluster effect; some clusters
    hold only one group."""
    rng = np.random.default_rng(seed)
    runs: list[tuple[str, str, float]] = []
    for g in range(clusters):
        effect = rng.normal(0, 1)
        groups = ["A", "B"] if g % 4 else [["A", "B"][g % 8 // 4]]
        for group in groups:
            for _ in range(int(rng.integers(1, 7))):
                shift = 0.3 if group == "A" else 0.0
                if binary:
                    value = float(rng.random() < 1 / (1 + math.exp(-(effect + shift))))
                else:
                    value = float(effect + shift + rng.normal(0, 0.5))
                runs.append((f"s{g:02d}", group, value))
    return runs


def statsmodels_cluster(y: list[float], x: np.ndarray, cluster: list[str], level: float) -> Any:
    """OLS with CR1 cluster-robust covariance and t inference on G-1 degrees of freedom."""
    _, codes = np.unique(cluster, return_inverse=True)
    fit = sm.OLS(np.asarray(y), x).fit(cov_type="cluster", cov_kwds={"groups": codes}, use_t=True)
    assert fit.df_resid_inference == len(set(cluster)) - 1
    return fit


cluster_labels = st.sampled_from([f"c{i}" for i in range(6)])
values = st.floats(-1e3, 1e3, allow_nan=False)
runs_strategy = st.lists(
    st.tuples(cluster_labels, st.sampled_from(["A", "B"]), values), max_size=40
)
pairs_strategy = st.lists(st.tuples(cluster_labels, values, values), max_size=40)


class TestClusteredDifference:
    """Difference of group means with a CR1 cluster-robust standard error."""

    @pytest.mark.parametrize("seed", range(6))
    @pytest.mark.parametrize("binary", [False, True])
    def test_matches_statsmodels(self, seed: int, binary: bool) -> None:
        """Difference, SE, interval and two-sided p-value are those of statsmodels' OLS of the
        value on an intercept and an A indicator with cov_type="cluster"."""
        runs = clustered_data(seed, 5 + 3 * seed, binary)
        level = 0.9 if seed % 2 else 0.95
        r = inference.clustered_difference(runs, level=level)  # type: ignore[arg-type]
        x = sm.add_constant(np.array([1.0 if g == "A" else 0.0 for _, g, _ in runs]))
        fit = statsmodels_cluster([v for *_, v in runs], x, [c for c, _, _ in runs], level)
        assert r.difference == approx(fit.params[1])
        assert r.se == approx(fit.bse[1])
        assert r.df == fit.df_resid_inference
        assert r.statistic == approx(fit.tvalues[1])
        assert r.p_value == approx(fit.pvalues[1])
        assert limits(r.interval) == approx(tuple(fit.conf_int(1 - level)[1]))

    def test_se_matches_exact_arithmetic(self) -> None:
        """The SE agrees with the CR1 formula evaluated in exact rational arithmetic to a few
        units in the last place (on these 17 runs in 3 clusters statsmodels' own rounding
        error is near 7e-13)."""
        runs = clustered_data(0, 3, True)
        r = inference.clustered_difference(runs)  # type: ignore[arg-type]
        a = [Fraction(v) for _, g, v in runs if g == "A"]
        b = [Fraction(v) for _, g, v in runs if g == "B"]
        mean_a, mean_b = sum(a) / len(a), sum(b) / len(b)
        scores: dict[str, Fraction] = {}
        for c, g, v in runs:
            e = (Fraction(v) - mean_a) / len(a) if g == "A" else -(Fraction(v) - mean_b) / len(b)
            scores[c] = scores.get(c, Fraction(0)) + e
        n, k = len(runs), len(scores)
        variance = sum(s * s for s in scores.values()) * Fraction(k, k - 1) * Fraction(n - 1, n - 2)
        assert r.difference == pytest.approx(float(mean_a - mean_b), rel=1e-15, abs=0)
        assert r.se == pytest.approx(math.sqrt(variance), rel=1e-15, abs=0)

    @pytest.mark.parametrize("alternative", ["greater", "less"])
    def test_one_sided_p(self, alternative: str) -> None:
        """One-sided p-values are the t tails on G-1 degrees of freedom."""
        r = inference.clustered_difference(clustered_data(3, 12, False), alternative)  # type: ignore[arg-type]
        assert r.statistic is not None and r.df is not None
        tail = sps.t.sf if alternative == "greater" else sps.t.cdf
        assert r.p_value == approx(tail(r.statistic, r.df))

    def test_singleton_clusters_are_hc1(self) -> None:
        """With every run its own cluster the CR1 SE is statsmodels' HC1 SE."""
        runs = [(str(i), g, v) for i, (_, g, v) in enumerate(clustered_data(1, 8, False))]
        r = inference.clustered_difference(runs)  # type: ignore[arg-type]
        x = sm.add_constant(np.array([1.0 if g == "A" else 0.0 for _, g, _ in runs]))
        fit = sm.OLS(np.array([v for *_, v in runs]), x).fit(cov_type="HC1")
        assert r.se == approx(fit.bse[1])

    @pytest.mark.slow
    @settings(max_examples=100, deadline=None)
    @given(runs_strategy, alternatives, st.randoms())
    def test_order_invariant(self, runs: list[Any], alt: str, rnd: random.Random) -> None:
        """Shuffling the runs changes nothing, bit for bit."""
        shuffled = runs[:]
        rnd.shuffle(shuffled)
        r = inference.clustered_difference(runs, alt)  # type: ignore[arg-type]
        assert inference.clustered_difference(shuffled, alt) == r  # type: ignore[arg-type]

    @pytest.mark.slow
    @settings(max_examples=100, deadline=None)
    @given(runs_strategy, alternatives, levels)
    def test_swapping_a_and_b(self, runs: list[Any], alt: str, level: float) -> None:
        """Relabelling A as B and B as A negates the difference and the statistic, mirrors the
        interval and keeps the SE and the mirrored alternative's p-value, bit for bit."""
        r = inference.clustered_difference(runs, alt, level)  # type: ignore[arg-type]
        swapped = [(c, "B" if g == "A" else "A", v) for c, g, v in runs]
        s = inference.clustered_difference(swapped, MIRROR[alt], level)  # type: ignore[arg-type]
        assert (s.mean_a, s.mean_b, s.se, s.df) == (r.mean_b, r.mean_a, r.se, r.df)
        assert s.difference == (None if r.difference is None else -r.difference)
        assert s.statistic == (None if r.statistic is None else -r.statistic)
        assert limits(s.interval) == mirrored(r.interval)
        assert s.p_value == r.p_value
        no_nan(r)
        if r.p_value is not None:
            assert 0.0 <= r.p_value <= 1.0

    def test_degenerate(self) -> None:
        """Undefined parts are None: an empty group, one cluster, two runs; zero spread gives a
        zero SE, a point interval and no statistic or p-value."""
        empty = inference.clustered_difference([("c", "A", 1.0), ("d", "A", 2.0)])
        assert (empty.mean_a, empty.mean_b, empty.difference, empty.se) == (1.5, None, None, None)
        one = inference.clustered_difference([("c", "A", 1.0), ("c", "B", 2.0), ("c", "B", 4.0)])
        assert (one.difference, one.se, one.interval, one.p_value) == (-2.0, None, None, None)
        two = inference.clustered_difference([("c", "A", 1.0), ("d", "B", 2.0)])
        assert (two.difference, two.se) == (-1.0, None)
        flat = [("c", "A", 1.0), ("d", "A", 1.0), ("c", "B", 3.0), ("d", "B", 3.0)]
        zero = inference.clustered_difference(flat)  # type: ignore[arg-type]
        assert (zero.difference, zero.se, zero.df, zero.statistic, zero.p_value) == (
            -2.0,
            0.0,
            1,
            None,
            None,
        )
        assert limits(zero.interval) == (-2.0, -2.0)
        assert inference.clustered_difference([]).clusters == 0

    def test_refuses_bad_runs(self) -> None:
        """A group other than A or B, and a value that is not finite, are refused."""
        with pytest.raises(ValueError, match="group"):
            inference.clustered_difference([("c", "C", 1.0)])  # type: ignore[list-item]
        with pytest.raises(ValueError, match="finite"):
            inference.clustered_difference([("c", "A", math.nan)])


class TestClusteredPairedDifference:
    """Mean of paired differences with a CR1 cluster-robust standard error."""

    @pytest.mark.parametrize("seed", range(6))
    def test_matches_statsmodels(self, seed: int) -> None:
        """Mean, SE, interval and p-value are those of statsmodels' OLS of the paired
        difference on a constant with cov_type="cluster"."""
        rng = np.random.default_rng(seed)
        clusters = [f"q{int(c)}" for c in rng.integers(0, 4 + 2 * seed, size=20 + 10 * seed)]
        effect = {c: rng.normal(0, 1) for c in set(clusters)}
        pairs = [(c, effect[c] + 0.2 + rng.normal(0, 0.3), effect[c]) for c in clusters]
        level = 0.99 if seed % 2 else 0.95
        r = inference.clustered_paired_difference(pairs, level=level)
        d = [a - b for _, a, b in pairs]
        fit = statsmodels_cluster(d, np.ones((len(d), 1)), clusters, level)
        assert r.difference == approx(fit.params[0])
        assert r.se == approx(fit.bse[0])
        assert r.df == len(set(clusters)) - 1
        assert r.p_value == approx(fit.pvalues[0])
        assert limits(r.interval) == approx(tuple(fit.conf_int(1 - level)[0]))

    @pytest.mark.parametrize("alternative", ALTERNATIVES)
    def test_singleton_clusters_are_the_paired_t_test(self, alternative: str) -> None:
        """With every pair its own cluster, CR1 is the ordinary paired t test (scipy's
        ttest_rel): G/(G-1) * sum(e^2)/N^2 = var(d)/N."""
        rng = np.random.default_rng(7)
        a, b = rng.normal(1, 1, size=25), rng.normal(0.6, 1, size=25)
        pairs = [(str(i), float(x), float(y)) for i, (x, y) in enumerate(zip(a, b, strict=True))]
        r = inference.clustered_paired_difference(pairs, alternative)  # type: ignore[arg-type]
        expected = sps.ttest_rel(a, b, alternative=alternative)
        assert r.statistic == approx(expected.statistic)
        assert r.p_value == approx(expected.pvalue)
        if alternative == "two-sided":
            low, high = expected.confidence_interval(0.95)
            assert limits(r.interval) == approx((low, high))

    @pytest.mark.slow
    @settings(max_examples=100, deadline=None)
    @given(pairs_strategy, alternatives, st.randoms())
    def test_order_invariant(self, pairs: list[Any], alt: str, rnd: random.Random) -> None:
        """Shuffling the pairs changes nothing, bit for bit."""
        shuffled = pairs[:]
        rnd.shuffle(shuffled)
        r = inference.clustered_paired_difference(pairs, alt)  # type: ignore[arg-type]
        assert inference.clustered_paired_difference(shuffled, alt) == r  # type: ignore[arg-type]

    @pytest.mark.slow
    @settings(max_examples=100, deadline=None)
    @given(pairs_strategy, alternatives, levels)
    def test_swapping_a_and_b(self, pairs: list[Any], alt: str, level: float) -> None:
        """Swapping each pair's values negates the mean and mirrors the interval; the SE and
        the mirrored alternative's p-value stay, bit for bit."""
        r = inference.clustered_paired_difference(pairs, alt, level)  # type: ignore[arg-type]
        swapped = [(c, b, a) for c, a, b in pairs]
        s = inference.clustered_paired_difference(swapped, MIRROR[alt], level)  # type: ignore[arg-type]
        assert s.difference == (None if r.difference is None else -r.difference)
        assert (s.se, s.df) == (r.se, r.df)
        assert limits(s.interval) == mirrored(r.interval)
        assert s.p_value == r.p_value
        no_nan(r)

    def test_degenerate(self) -> None:
        """No pair: only counts; one cluster: a mean without SE; equal differences: SE 0."""
        none = inference.clustered_paired_difference([])
        assert (none.n, none.difference, none.se, none.p_value) == (0, None, None, None)
        one = inference.clustered_paired_difference([("c", 1.0, 0.0), ("c", 3.0, 0.0)])
        assert (one.difference, one.se, one.interval) == (2.0, None, None)
        flat = inference.clustered_paired_difference([("c", 2.0, 1.0), ("d", 3.0, 2.0)])
        assert (flat.difference, flat.se, flat.p_value) == (1.0, 0.0, None)
        assert limits(flat.interval) == (1.0, 1.0)
