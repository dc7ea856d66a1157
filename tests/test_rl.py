"""repro._stats.rl against rliable 1.2.0 itself: the same aggregates, and with the "rliable"
sampler the same bootstrap intervals, float for float."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from arch.bootstrap import IIDBootstrap
from hypothesis import given, settings
from hypothesis import strategies as st
from rliable import library as rly
from rliable import metrics

from repro._stats import rl
from repro._stats.bootstrap import Draws

# Scores from any finite range, and scores on a coarse grid: ties, and sums NumPy and fsum both
# compute exactly (so even the task means are the same floats).
CONTINUOUS = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
GRID = st.integers(-8, 8).map(lambda k: k / 4)


def matrices(elements: st.SearchStrategy[float], tasks: int | None = None) -> Any:
    """(runs, tasks) matrices, from one run or one task up."""
    task_counts = st.just(tasks) if tasks is not None else st.integers(1, 6)
    return st.tuples(st.integers(1, 8), task_counts).flatmap(
        lambda shape: st.lists(
            st.lists(elements, min_size=shape[1], max_size=shape[1]),
            min_size=shape[0],
            max_size=shape[0],
        ).map(lambda rows: np.array(rows, dtype=np.float64))
    )


def pairs(elements: st.SearchStrategy[float]) -> Any:
    """Two matrices on the same tasks, with their own numbers of runs."""
    return st.integers(1, 6).flatmap(
        lambda m: st.tuples(matrices(elements, m), matrices(elements, m))
    )


def close(ours: float | None, theirs: Any, scale: float) -> bool:
    """Agreement to 1e-12 of the scores' magnitude: NumPy's pairwise sums err by a few ulps of
    the sum of |scores|, not of the result (which may cancel to near zero)."""
    assert ours is not None
    return math.isclose(ours, float(theirs), rel_tol=1e-12, abs_tol=1e-12 * max(1.0, scale))


def four(x: np.ndarray) -> np.ndarray:
    """rliable's usual func: the four aggregates, in AggregateEstimates' order."""
    return np.array(
        [
            metrics.aggregate_median(x),
            metrics.aggregate_iqm(x),
            metrics.aggregate_mean(x),
            metrics.aggregate_optimality_gap(x),
        ]
    )


def bounds(estimates: rl.AggregateEstimates) -> np.ndarray:
    """Intervals as rliable returns them: row 0 the low ends, row 1 the high ends."""
    es = (estimates.median, estimates.iqm, estimates.mean, estimates.optimality_gap)
    intervals = [e.interval for e in es]
    assert all(i is not None for i in intervals)
    return np.array([[i.low for i in intervals], [i.high for i in intervals]])


def profile_bounds(estimates: tuple[rl.Estimate, ...]) -> np.ndarray:
    intervals = [e.interval for e in estimates]
    return np.array([[i.low for i in intervals], [i.high for i in intervals]])


def random_matrix(seed: int, runs: int = 10, tasks: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(0.6, 0.4, size=(runs, tasks)) * rng.uniform(0.5, 2.0, size=tasks)


class TestPointEstimates:
    """The aggregates equal rliable's metrics on the same scores."""

    @pytest.mark.slow
    @settings(max_examples=150, deadline=None)
    @given(st.one_of(matrices(CONTINUOUS), matrices(GRID)))
    def test_aggregates_match_rliable(self, x: np.ndarray) -> None:
        """Median, IQM, mean and optimality gap agree with rliable's to 1e-12 of the scale."""
        scale = float(np.max(np.abs(x)))
        assert close(rl.median(x), metrics.aggregate_median(x), scale)
        assert close(rl.iqm(x), metrics.aggregate_iqm(x), scale)
        assert close(rl.mean(x), metrics.aggregate_mean(x), scale)
        assert close(rl.optimality_gap(x), metrics.aggregate_optimality_gap(x), scale)
        gap = rl.optimality_gap(x, gamma=2.5)
        assert close(gap, metrics.aggregate_optimality_gap(x, gamma=2.5), max(scale, 2.5))

    @pytest.mark.slow
    @settings(max_examples=100, deadline=None)
    @given(matrices(GRID))
    def test_exact_where_sums_are_exact(self, x: np.ndarray) -> None:
        """On the grid every sum is exact in both arithmetics: the same floats."""
        assert rl.median(x) == metrics.aggregate_median(x)
        assert rl.iqm(x) == metrics.aggregate_iqm(x)
        assert rl.optimality_gap(x) == metrics.aggregate_optimality_gap(x)
        # rliable's mean divides twice (task means, then their mean); ours is the correctly
        # rounded mean of all scores, the same number before rounding.
        assert rl.mean(x) == float(Fraction(math.fsum(x.ravel())) / x.size)
        assert close(rl.mean(x), metrics.aggregate_mean(x), float(np.max(np.abs(x))))

    @pytest.mark.slow
    @settings(max_examples=150, deadline=None)
    @given(st.one_of(pairs(CONTINUOUS), pairs(GRID)))
    def test_probability_of_improvement_is_rliables(
        self, xy: tuple[np.ndarray, np.ndarray]
    ) -> None:
        """Per task U / (m n), ties counting one half, then the mean over tasks (to the float
        per task; the mean to 1e-15)."""
        x, y = xy
        theirs = metrics.probability_of_improvement(x, y)
        ours = rl.probability_of_improvement(x, y)
        assert ours is not None
        assert math.isclose(ours, theirs, rel_tol=1e-15, abs_tol=1e-15)
        assert 0.0 <= ours <= 1.0

    @pytest.mark.slow
    @settings(max_examples=100, deadline=None)
    @given(st.one_of(matrices(CONTINUOUS), matrices(GRID)), st.lists(CONTINUOUS, max_size=12))
    def test_run_score_profile_is_rliables(self, x: np.ndarray, taus: list[float]) -> None:
        """The fraction of all scores above each tau: an exact count, so the same float."""
        taus_all = [*taus, *x.ravel()[:4].tolist()]  # taus at scores too: > is strict
        theirs = rly.score_distributions(x, np.array(taus_all)).tolist()
        assert rl.performance_profile(x, taus_all) == tuple(theirs)

    @pytest.mark.slow
    @settings(max_examples=100, deadline=None)
    @given(matrices(GRID), st.lists(GRID, max_size=12))
    def test_task_mean_profile_is_rliables(self, x: np.ndarray, taus: list[float]) -> None:
        """The fraction of task means above each tau (exact task means on the grid, so ties at
        tau are decided alike)."""
        ours = rl.performance_profile(x, taus, distribution="tasks")
        if not taus:  # rliable's np.vectorize refuses no taus
            assert ours == ()
            return
        theirs = rly.average_score_distributions(x, np.array(taus, dtype=np.float64)).tolist()
        assert ours == tuple(theirs)

    def test_task_mean_profile_on_continuous_scores(self) -> None:
        x = random_matrix(3, runs=7, tasks=12)
        taus = np.linspace(-0.5, 2.0, 26)
        theirs = rly.average_score_distributions(x, taus).tolist()
        assert rl.performance_profile(x, taus, distribution="tasks") == tuple(theirs)

    def test_single_task_and_single_run(self) -> None:
        """One task: the median is that task's mean; one run: the IQM is that run's middle."""
        one_task = np.array([[0.1], [0.7], [0.3], [0.9], [0.5]])
        assert rl.median(one_task) == pytest.approx(0.5, abs=1e-15)
        assert rl.iqm(one_task) == pytest.approx(metrics.aggregate_iqm(one_task), rel=1e-15)
        one_run = np.array([[3.0, 1.0, 2.0, 4.0]])
        assert rl.iqm(one_run) == 2.5 == metrics.aggregate_iqm(one_run)
        assert rl.median(one_run) == 2.5 == metrics.aggregate_median(one_run)
        assert rl.probability_of_improvement(one_task, one_task) == 0.5

    def test_ties_count_half(self) -> None:
        """Equal scores: each tie is half an improvement; identical columns give exactly 1/2."""
        x = np.array([[1.0, 2.0], [1.0, 2.0]])
        y = np.array([[1.0, 1.0], [0.0, 3.0], [1.0, 2.0]])
        # task 0: x=1,1 vs y=1,0,1: 2 wins + 4 ties of 6 -> 4/6; task 1: 2,2 vs 1,3,2: 2 + 2/2 of 6
        assert rl.probability_of_improvement(x, y) == pytest.approx((4 / 6 + 3 / 6) / 2, abs=0)
        assert rl.probability_of_improvement(x, x) == 0.5

    def test_no_scores_is_none(self) -> None:
        """No run or no task: every aggregate and every estimate is None, never NaN."""
        for empty in ([], [[]], np.zeros((0, 3)), np.zeros((4, 0))):
            assert rl.median(empty) is None
            assert rl.iqm(empty) is None
            assert rl.mean(empty) is None
            assert rl.optimality_gap(empty) is None
            assert rl.performance_profile(empty, [0.0, 1.0]) is None
            assert rl.probability_of_improvement(empty, np.zeros((2, 3))) is None
            got = rl.aggregate_estimates(empty, seed=0, reps=10)
            assert got.median == got.iqm == rl.Estimate(None, None)
            assert rl.improvement_estimate(empty, empty, seed=0, reps=10) == rl.Estimate(None, None)
            assert rl.profile_estimates(empty, [0.0], seed=0, reps=5) == (rl.Estimate(None, None),)

    def test_bad_input_is_refused(self) -> None:
        with pytest.raises(ValueError, match="finite"):
            rl.mean([[1.0, math.nan]])
        with pytest.raises(ValueError, match="matrix"):
            rl.mean([1.0, 2.0])
        with pytest.raises(ValueError, match="tasks"):
            rl.probability_of_improvement(np.ones((2, 3)), np.ones((2, 4)))
        with pytest.raises(ValueError, match="NaN"):
            rl.performance_profile([[1.0]], [math.nan])
        with pytest.raises(ValueError, match="distribution"):
            rl.performance_profile([[1.0]], [0.0], distribution="episodes")
        with pytest.raises(ValueError, match="reps"):
            rl.aggregate_estimates([[1.0]], seed=0, reps=0)
        with pytest.raises(ValueError, match="seed"):
            rl.aggregate_estimates([[1.0]], seed=2**32, reps=5, sampler="rliable")
        with pytest.raises(ValueError, match="level"):
            rl.aggregate_estimates([[1.0]], seed=0, reps=5, level=1.0)


def permuted(x: np.ndarray, rng: np.random.Generator, tasks: np.ndarray) -> np.ndarray:
    """Each task's runs in their own random order, then the tasks reordered."""
    shuffled = np.column_stack([rng.permutation(x[:, m]) for m in range(x.shape[1])])
    return shuffled[:, tasks]


class TestOrderInvariance:
    """The point estimates are functions of each task's multiset of scores, to the bit."""

    @pytest.mark.slow
    @settings(max_examples=150, deadline=None)
    @given(st.one_of(pairs(CONTINUOUS), pairs(GRID)), st.integers(0, 2**32 - 1))
    def test_permuting_runs_and_tasks(self, xy: tuple[np.ndarray, np.ndarray], seed: int) -> None:
        x, y = xy
        rng = np.random.default_rng(seed)
        tasks = rng.permutation(x.shape[1])
        px, py = permuted(x, rng, tasks), permuted(y, rng, tasks)
        for f in (rl.median, rl.iqm, rl.mean, rl.optimality_gap):
            assert f(px) == f(x)
        assert rl.probability_of_improvement(px, py) == rl.probability_of_improvement(x, y)
        taus = np.linspace(-1e3, 1e3, 21)
        for d in ("runs", "tasks"):
            assert rl.performance_profile(px, taus, d) == rl.performance_profile(x, taus, d)
        a, b = rl.aggregate_estimates(px, seed=1, reps=3), rl.aggregate_estimates(x, seed=1, reps=3)
        assert (a.median.value, a.iqm.value, a.mean.value) == (
            b.median.value,
            b.iqm.value,
            b.mean.value,
        )


class TestSeededBootstrap:
    """The default sampler: a function of (scores, seed, reps, level)."""

    def test_deterministic(self) -> None:
        x, y = random_matrix(1), random_matrix(2, runs=6)
        state = np.random.get_state()[1].copy()
        first = rl.aggregate_estimates(x, seed=11, reps=400)
        assert rl.aggregate_estimates(x.tolist(), seed=11, reps=400) == first
        assert rl.aggregate_estimates(x, seed=12, reps=400) != first
        assert rl.improvement_estimate(x, y, seed=5, reps=300) == rl.improvement_estimate(
            x, y, seed=5, reps=300
        )
        taus = [0.0, 0.5, 1.0]
        assert rl.profile_estimates(x, taus, seed=2, reps=200) == rl.profile_estimates(
            x, taus, seed=2, reps=200
        )
        # NumPy's global generator (which rliable draws from) is left as it was.
        assert np.array_equal(np.random.get_state()[1], state)

    def test_intervals_hold_the_estimate(self) -> None:
        x = random_matrix(4)
        got = rl.aggregate_estimates(x, seed=0, reps=2000)
        for e in (got.median, got.iqm, got.mean, got.optimality_gap):
            assert e.interval is not None and e.value is not None
            assert e.interval.low <= e.value <= e.interval.high
            assert e.interval.level == 0.95

    def test_each_algorithm_its_own_stream(self) -> None:
        """By algorithm, the default sampler gives each matrix what it alone would get."""
        a, b = random_matrix(5), random_matrix(6, runs=4, tasks=5)
        both = rl.aggregate_estimates_by_algorithm({"a": a, "b": b}, seed=9, reps=300)
        assert both["a"] == rl.aggregate_estimates(a, seed=9, reps=300)
        assert both["b"] == rl.aggregate_estimates(b, seed=9, reps=300)
        profiles = rl.profile_estimates_by_algorithm({"b": b, "a": a}, [0.5], seed=9, reps=100)
        assert profiles["a"] == rl.profile_estimates(a, [0.5], seed=9, reps=100)
        duels = rl.improvement_estimates({"ab": (a, b), "ba": (b, a)}, seed=9, reps=100)
        assert duels["ba"] == rl.improvement_estimate(b, a, seed=9, reps=100)

    def test_one_run_has_a_point_interval(self) -> None:
        x = np.array([[0.2, 0.4, 0.9]])
        got = rl.aggregate_estimates(x, seed=0, reps=50, task_bootstrap=False)
        assert got.mean.interval == rl.Interval(0.95, got.mean.value, got.mean.value)


def global_seed(seed: int, call: Callable[[], Any]) -> Any:
    """rliable's call after np.random.seed(seed), leaving the global generator as it was."""
    saved = np.random.get_state()
    try:
        np.random.seed(seed)
        return call()
    finally:
        np.random.set_state(saved)


@pytest.mark.slow
class TestRliableSampler:
    """sampler="rliable" gives rliable's own intervals, to the float."""

    def test_rliable_ignores_its_random_state(self) -> None:
        """Why the sampler seeds a RandomState as np.random.seed does: rliable's
        StratifiedBootstrap.update_indices draws from np.random.choice (the global generator),
        so the random_state handed to arch does not change its intervals, and the global seed
        does."""
        x = random_matrix(7)

        def with_state(state: int) -> Any:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                rs = np.random.RandomState(state)
                return rly.get_interval_estimates({"x": x}, four, reps=50, random_state=rs)[1]["x"]

        assert np.array_equal(
            global_seed(1, lambda: with_state(0)), global_seed(1, lambda: with_state(99))
        )
        assert not np.array_equal(
            global_seed(1, lambda: with_state(0)), global_seed(2, lambda: with_state(0))
        )

    @pytest.mark.parametrize("task_bootstrap", [False, True])
    def test_aggregates_equal_rliables(self, task_bootstrap: bool) -> None:
        scores = {
            "a": random_matrix(10),
            "b": random_matrix(11, runs=3),
            "c": random_matrix(12, 1, 5),
        }
        points, intervals = global_seed(
            2021,
            lambda: rly.get_interval_estimates(
                scores, four, reps=500, task_bootstrap=task_bootstrap, confidence_interval_size=0.9
            ),
        )
        ours = rl.aggregate_estimates_by_algorithm(
            scores, seed=2021, reps=500, level=0.9, task_bootstrap=task_bootstrap, sampler="rliable"
        )
        assert list(ours) == ["a", "b", "c"]
        for key, x in scores.items():
            assert np.array_equal(bounds(ours[key]), intervals[key])
            values = [
                ours[key].median.value,
                ours[key].iqm.value,
                ours[key].mean.value,
                ours[key].optimality_gap.value,
            ]
            scale = float(np.max(np.abs(x)))
            assert all(close(v, p, scale) for v, p in zip(values, points[key], strict=True))
        # One matrix alone is the first key of a dict.
        assert (
            rl.aggregate_estimates(
                scores["a"],
                seed=2021,
                reps=500,
                level=0.9,
                task_bootstrap=task_bootstrap,
                sampler="rliable",
            )
            == ours["a"]
        )

    @settings(max_examples=25, deadline=None)
    @given(st.one_of(matrices(CONTINUOUS), matrices(GRID)), st.integers(0, 2**32 - 1))
    def test_aggregates_equal_rliables_on_any_matrix(self, x: np.ndarray, seed: int) -> None:
        _, intervals = global_seed(
            seed, lambda: rly.get_interval_estimates({"x": x}, four, reps=20)
        )
        ours = rl.aggregate_estimates(x, seed=seed, reps=20, sampler="rliable")
        assert np.array_equal(bounds(ours), intervals["x"])

    @settings(max_examples=20, deadline=None)
    @given(st.one_of(pairs(CONTINUOUS), pairs(GRID)), st.integers(0, 2**32 - 1))
    def test_improvement_equals_rliables(
        self, xy: tuple[np.ndarray, np.ndarray], seed: int
    ) -> None:
        """X's runs then Y's, as StratifiedIndependentBootstrap draws them; different run counts."""
        x, y = xy
        points, intervals = global_seed(
            seed,
            lambda: rly.get_interval_estimates(
                {"xy": (x, y), "yx": (y, x)}, metrics.probability_of_improvement, reps=20
            ),
        )
        ours = rl.improvement_estimates(
            {"xy": (x, y), "yx": (y, x)}, seed=seed, reps=20, sampler="rliable"
        )
        for key in ("xy", "yx"):
            i = ours[key].interval
            assert i is not None
            assert np.array_equal([[i.low], [i.high]], intervals[key])
            assert math.isclose(ours[key].value, points[key], rel_tol=1e-15, abs_tol=1e-15)

    @pytest.mark.parametrize("distribution", ["runs", "tasks"])
    def test_profiles_equal_rliables(self, distribution: rl.Distribution) -> None:
        scores = {"a": random_matrix(20, runs=5, tasks=8), "b": random_matrix(21, runs=8, tasks=3)}
        taus = np.linspace(0.0, 2.0, 11)
        profiles, cis = global_seed(
            77,
            lambda: rly.create_performance_profile(
                scores, taus, use_score_distribution=distribution == "runs", reps=300
            ),
        )
        ours = rl.profile_estimates_by_algorithm(
            scores, taus, seed=77, distribution=distribution, reps=300, sampler="rliable"
        )
        for key in scores:
            assert [e.value for e in ours[key]] == profiles[key].tolist()
            assert np.array_equal(profile_bounds(ours[key]), cis[key])


@pytest.mark.slow
class TestDefaultSamplerAgainstRliable:
    """The default sampler differs from rliable in its generator only."""

    def test_same_indices_give_rliables_intervals(self) -> None:
        """rliable's bootstrap fed the default sampler's index arrays (default_rng(seed), one
        integers(0, N, (N, M)) a replicate) gives the default sampler's intervals, to 1e-12 of
        the scale: the replicates differ only by NumPy's sums against fsum."""
        x = random_matrix(30, runs=9, tasks=6)
        seed, reps = 4, 1000

        class Indexed(rly.StratifiedBootstrap):
            def update_indices(self) -> tuple[np.ndarray, ...]:
                runs = self.rng.integers(0, self._num_items, size=self._args_shape)
                return (runs, *self._strata_indices)

        bs = Indexed(x)
        bs.rng = np.random.default_rng(seed)
        theirs = bs.conf_int(four, reps=reps, method="percentile")
        ours = bounds(rl.aggregate_estimates(x, seed=seed, reps=reps))
        scale = float(np.max(np.abs(x)))
        assert np.allclose(ours, theirs, rtol=1e-12, atol=1e-12 * scale)

    def test_percentile_step_is_archs(self) -> None:
        """percentile_interval of arch's own replicates is arch's percentile interval."""
        data = np.random.default_rng(5).normal(size=40)
        bs = IIDBootstrap(data, seed=3)
        for level in (0.95, 0.9, 0.5, 0.99):
            theirs = bs.conf_int(
                lambda v: np.array([v.mean(), np.median(v)]),
                reps=301,
                method="percentile",
                size=level,
            )
            for i in range(2):
                got = rl.percentile_interval(bs._results[:, i], level)
                assert (got.low, got.high) == (theirs[0, i], theirs[1, i])
                assert rl.percentile_interval(bs._results[::-1, i], level) == got

    def test_agree_within_monte_carlo_error(self) -> None:
        """Independent generators, same bootstrap distribution: each end agrees with rliable's
        within 5 standard errors of the difference of two R-replicate 2.5% quantiles. A p
        quantile's standard error is sqrt(p (1 - p) / R) / f(q), about 2.67 sd / sqrt(R) for
        p = 0.025 of a near-normal distribution (f(q) = 0.0584 / sd); two independent estimates
        differ with sqrt(2) times that, 3.78 sd / sqrt(R). The sd is read from the interval:
        width / (2 x 1.96)."""
        x = random_matrix(40, runs=10, tasks=5)
        reps = 8000
        _, theirs = global_seed(123, lambda: rly.get_interval_estimates({"x": x}, four, reps=reps))
        ours = bounds(rl.aggregate_estimates(x, seed=123, reps=reps))
        sd = (ours[1] - ours[0]) / (2 * 1.96)
        tolerance = 5 * 3.78 * sd / math.sqrt(reps)
        assert np.all(np.abs(ours - theirs["x"]) <= tolerance)
        assert not np.array_equal(ours, theirs["x"])  # different draws, really


def _reference_replicates(x: np.ndarray, seed: int, reps: int, gamma: float) -> np.ndarray:
    """The default sampler's replicates of the four aggregates as their definitions read, one
    replicate at a time: ``integers(0, N, (N, M))`` from ``default_rng(seed)``, then the fsum
    arithmetic of each statistic on that replicate's lists of floats."""
    rng = np.random.default_rng(seed)
    n, m = x.shape
    rows = []
    for _ in range(reps):
        r = x[rng.integers(0, n, size=(n, m)), np.arange(m)[None, :]]
        means = sorted(math.fsum(column) / n for column in r.T.tolist())
        k, odd = divmod(m, 2)
        median = means[k] if odd else (means[k - 1] + means[k]) / 2
        flat = sorted(r.ravel().tolist())
        cut = len(flat) // 4
        iqm = math.fsum(flat[cut : len(flat) - cut]) / (len(flat) - 2 * cut)
        mean = math.fsum(flat) / len(flat)
        gap = gamma - math.fsum(min(v, gamma) for v in flat) / len(flat)
        rows.append([median, iqm, mean, gap])
    return np.array(rows)


class TestBatches:
    """The replicates are drawn and computed a batch at a time, and each is the float it is
    one at a time: batching changes no figure of any bundle."""

    @pytest.mark.slow
    @settings(max_examples=60, deadline=None)
    @given(
        st.sampled_from(["default", "rliable"]),
        st.integers(1, 40),
        st.integers(1, 9),
        st.integers(1, 30),
        st.integers(0, 2**32 - 1),
    )
    def test_one_draw_for_many_replicates(
        self, sampler: rl.Sampler, n: int, m: int, count: int, seed: int
    ) -> None:
        """One call for the indices of ``count`` replicates draws what one call per replicate
        draws, and leaves the stream where they leave it, with either generator."""
        legacy = sampler == "rliable"
        many, one = Draws(seed, legacy), Draws(seed, legacy)
        batched = many.integers(n, (count, n, m))
        single = np.stack([one.integers(n, (n, m)) for _ in range(count)])
        assert np.array_equal(batched, single)
        assert np.array_equal(many.integers(1000, (7, 3)), one.integers(1000, (7, 3)))

    @pytest.mark.slow
    @settings(max_examples=300, deadline=None)
    @given(
        st.lists(
            st.one_of(
                st.floats(allow_nan=False, allow_infinity=False, width=64),
                st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.0**-53, -(2.0**-53), 2.0**-1074]),
                st.integers(-(2**20), 2**20).map(lambda k: k * 2.0**-60),
            ),
            max_size=40,
        )
    )
    def test_sums_are_fsums(self, values: list[float]) -> None:
        """Each row's sum is math.fsum's float, sign included: ties between two floats, exact
        cancellations, subnormals and sums past the largest float alike (fsum's
        OverflowError too)."""
        for row in (values, values[::-1], [*values, 1.0]):
            array = np.array(row, dtype=np.float64).reshape(1, len(row))
            try:
                expected = math.fsum(row)
            except OverflowError:
                with pytest.raises(OverflowError):
                    rl._fsums(array)
                continue
            got = float(rl._fsums(array)[0])
            assert got == expected and math.copysign(1.0, got) == math.copysign(1.0, expected)

    @pytest.mark.parametrize("shape", [(1, 1), (9, 1), (10, 26), (3, 130)])
    def test_default_replicates_are_their_definitions(
        self, shape: tuple[int, int], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The default sampler's intervals are the percentile intervals of replicates computed
        one at a time from their definitions, whatever the batch (a batch of a few replicates
        here, and the usual one)."""
        x = random_matrix(50 + shape[0], *shape)
        reference = _reference_replicates(x, 8, 120, 0.9)
        expected = [rl.percentile_interval(reference[:, i], 0.9) for i in range(4)]
        for batch in (shape[0] * shape[1] * 7, rl._BATCH_SCORES):
            monkeypatch.setattr(rl, "_BATCH_SCORES", batch)
            got = rl.aggregate_estimates(x, seed=8, reps=120, level=0.9, gamma=0.9)
            intervals = [got.median.interval, got.iqm.interval, got.mean.interval]
            assert [*intervals, got.optimality_gap.interval] == expected

    @pytest.mark.parametrize("sampler", ["default", "rliable"])
    def test_batches_change_nothing(
        self, sampler: rl.Sampler, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Every estimate (aggregates, profiles, improvements of pairs of equal and unequal
        runs, pairs compared one by one and by sorting) is the same with batches of one
        replicate as with the usual batches."""
        x, y, z = random_matrix(60, 6, 4), random_matrix(61, 9, 4), random_matrix(62, 40, 4)

        def estimates() -> tuple[object, ...]:
            kw: dict[str, Any] = {"seed": 3, "reps": 60, "sampler": sampler}
            return (
                rl.aggregate_estimates_by_algorithm({"x": x, "y": y}, **kw),
                rl.profile_estimates_by_algorithm({"x": x, "z": z}, [0.2, 0.6, 0.6, -1.0], **kw),
                rl.profile_estimates(y, [0.5], distribution="tasks", **kw),
                rl.improvement_estimates({"xy": (x, y), "yx": (y, x), "zz": (z, z)}, **kw),
            )

        usual = estimates()
        monkeypatch.setattr(rl, "_BATCH_SCORES", 1)
        assert estimates() == usual
