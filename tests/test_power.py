"""``repro protocol power``: each contrast's minimum detectable effect and the runs it needs,
planned from a pilot bundle's variances. The power, MDE and sample-size functions against
statsmodels (and Welch's approximation against a noncentral t integrated directly), their round
trips and monotonicity, the pilot's estimates against the contrasts derivation's own figures,
and the command end to end with its refusals."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from conftest import SMALL, study_once
from repro._cli.app import app
from repro._derive.contrasts import paired_t, welch_t
from repro._power import (
    Design,
    PlannedSample,
    Sidedness,
    mde,
    noncentrality_needed,
    paired_design,
    runs_needed,
    t_power,
    welch_design,
)
from repro.models import Contrast, Group, Protocol
from test_contrasts import CONTRASTED

runner = CliRunner()

#: statsmodels' name of each sidedness.
_ALTERNATIVE = {"one-sided": "larger", "two-sided": "two-sided"}

SIDES = st.sampled_from(["one-sided", "two-sided"])
ALPHAS = st.floats(0.001, 0.2)
POWERS = st.floats(0.5, 0.99)
SDS = st.floats(0.01, 1e3)


def _statsmodels_power(d: float, n: int, alpha: float, sided: str) -> float:
    """statsmodels' TTestPower power; two-sided as its two one-sided tails at alpha / 2, the
    lower by symmetry (``d`` negated). statsmodels takes tails from SciPy's ``nctdtr``, which is
    NaN in parts of the far lower tail (its own two-sided power with it): there the lower tail,
    at most P(T < 0) = Phi(-d sqrt(n)), is taken as 0 when that bound is below 1e-15."""
    from scipy import stats as sps
    from statsmodels.stats.power import TTestPower

    solver = TTestPower()
    if sided == "one-sided":
        return float(solver.power(d, n, alpha, alternative="larger"))
    upper = float(solver.power(d, n, alpha / 2, alternative="larger"))
    lower = float(solver.power(-d, n, alpha / 2, alternative="larger"))
    if math.isnan(lower) and float(sps.norm.cdf(-d * math.sqrt(n))) < 1e-15:
        lower = 0.0
    return upper + lower


class _NoReference(Exception):
    """statsmodels' power is NaN here."""


def _flat(text: str) -> str:
    return " ".join(text.split())


# --------------------------------------------------------------------------- the statistics


class TestAgainstStatsmodels:
    """The power of the paired (one-sample) t is statsmodels' TTestPower's, Welch's with equal
    variances is TTestIndPower's, to 1e-12; the MDE is the root of statsmodels' power
    function and the runs needed the fewest whose statsmodels power reaches the target.

    statsmodels takes its tails from SciPy's ``nctdtr``, which is NaN where a tail is far below
    1e-30 (a power within that of 0 or 1, or a negligible lower tail): there it is no reference,
    and those cases are left out (repro's power, from SciPy's noncentral t survival function,
    stays finite there: :class:`TestEdges`)."""

    @pytest.mark.slow
    @settings(max_examples=150, deadline=None)
    @given(st.floats(0.0, 3.0), st.integers(2, 400), ALPHAS, SIDES)
    def test_paired_power_is_ttestpower(
        self, d: float, n: int, alpha: float, sided: Sidedness
    ) -> None:
        from statsmodels.stats.power import TTestPower

        design = paired_design(2.5, n)
        ours = t_power(d * 2.5 / design.se, design.df, alpha, sided)
        reference = _statsmodels_power(d, n, alpha, sided)
        assume(math.isfinite(reference))
        assert ours == pytest.approx(reference, rel=1e-12, abs=1e-14)
        theirs = float(TTestPower().power(d, n, alpha, alternative=_ALTERNATIVE[sided]))
        if math.isfinite(theirs):  # its own two-sided form, where its lower tail is not NaN
            assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-14)

    @pytest.mark.slow
    @settings(max_examples=150, deadline=None)
    @given(st.floats(0.0, 3.0), st.integers(2, 300), st.integers(2, 300), ALPHAS, SIDES)
    def test_welch_with_equal_variances_is_ttestindpower(
        self, d: float, n_a: int, n_b: int, alpha: float, sided: Sidedness
    ) -> None:
        """Equal variances: Welch's noncentrality is the pooled t's; its df equal the pooled
        t's n_a + n_b - 2 when the groups are of one size, else they are handed to
        TTestIndPower (Welch's df differ from the pooled t's there)."""
        from statsmodels.stats.power import TTestIndPower

        sd = 3.0
        design = welch_design(sd, sd, n_a, n_b)
        ours = t_power(d * sd / design.se, design.df, alpha, sided)
        theirs = float(
            TTestIndPower().power(
                d, n_a, alpha, ratio=n_b / n_a, df=design.df, alternative=_ALTERNATIVE[sided]
            )
        )
        assume(math.isfinite(theirs))  # see the class's docstring
        assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-14)
        if n_a == n_b:
            assert design.df == pytest.approx(n_a + n_b - 2, rel=1e-13)
            pooled = float(TTestIndPower().power(d, n_a, alpha, alternative=_ALTERNATIVE[sided]))
            if math.isfinite(pooled):  # NaN as above, here and there
                assert ours == pytest.approx(pooled, rel=1e-12, abs=1e-14)

    @pytest.mark.slow
    @settings(max_examples=40, deadline=None)
    @given(SDS, SDS, st.integers(2, 60), st.integers(2, 60), st.floats(0.0, 4.0), ALPHAS, SIDES)
    def test_welch_is_a_noncentral_t_integrated_directly(
        self,
        sd_a: float,
        sd_b: float,
        n_a: int,
        n_b: int,
        nc: float,
        alpha: float,
        sided: Sidedness,
    ) -> None:
        """Unequal variances (where TTestIndPower, a pooled t, does not fit): the power equals
        P(T > c) (and P(T < -c) two-sided) for T = (Z + nc) / (S / sqrt(df)), S chi on the
        Welch-Satterthwaite df, integrated over S with quad (split at the chi's mode): 1e-9."""
        from scipy import integrate
        from scipy import stats as sps

        df = welch_design(sd_a, sd_b, n_a, n_b).df
        tail = alpha if sided == "one-sided" else alpha / 2
        k = float(sps.t.isf(tail, df)) / math.sqrt(df)

        def density(s: float) -> float:
            upper = sps.norm.sf(k * s - nc)
            lower = sps.norm.cdf(-k * s - nc) if sided == "two-sided" else 0.0
            return float((upper + lower) * sps.chi.pdf(s, df))

        mode = math.sqrt(df - 1)  # df >= 1: at least 2 runs a group
        bounds = dict(epsabs=1e-15, epsrel=1e-13, limit=200)
        below, _ = integrate.quad(density, 0, mode, **bounds) if mode > 0 else (0.0, 0.0)
        above, _ = integrate.quad(density, mode, math.inf, **bounds)
        direct = below + above
        assert t_power(nc, df, alpha, sided) == pytest.approx(direct, rel=1e-9, abs=1e-14)

    @pytest.mark.slow
    @settings(max_examples=80, deadline=None)
    @given(SDS, st.integers(2, 300), ALPHAS, POWERS, SIDES)
    def test_the_mde_is_the_root_of_statsmodels_power(
        self, sd: float, n: int, alpha: float, power: float, sided: Sidedness
    ) -> None:
        """statsmodels' power at the MDE is the target to 1e-12, and the MDE equals the root
        of statsmodels' power function, solved here to machine precision, to 1e-9 (its own
        solve_power stops short, at about 1e-5)."""
        from scipy.optimize import brentq

        assume(power > alpha + 0.01)
        design = paired_design(sd, n)
        found = mde(design, alpha, power, sided)
        d = found / sd

        def short(x: float) -> float:
            found = _statsmodels_power(x, n, alpha, sided) - power
            if math.isnan(found):
                raise _NoReference
            return found

        try:
            assert short(d) == pytest.approx(0.0, abs=1e-12)
            root = brentq(short, d / 2, 2 * d, xtol=1e-300, rtol=1e-15)
        except _NoReference:
            assume(False)
        assert d == pytest.approx(root, rel=1e-9)

    @pytest.mark.slow
    @settings(max_examples=60, deadline=None)
    @given(st.floats(0.1, 2.0), ALPHAS, POWERS, SIDES)
    def test_the_runs_needed_are_the_fewest_statsmodels_says_reach_the_power(
        self, d: float, alpha: float, power: float, sided: Sidedness
    ) -> None:
        """One pair per run: the runs needed r have statsmodels power at or above the target,
        r - 1 below it (or too few for a t test). (statsmodels' solve_power for nobs is left
        alone: it stops short of 1e-9, and fails to converge near 2 observations.)"""
        assume(power > alpha + 0.01)
        sd = 1.7
        r = runs_needed(
            d * sd,
            lambda n: paired_design(sd, n) if n >= 2 else None,
            alpha,
            power,
            sided,
            10**6,
        )
        assert r is not None and r >= 2
        at, before = (
            _statsmodels_power(d, r, alpha, sided),
            _statsmodels_power(d, r - 1, alpha, sided),
        )
        assume(math.isfinite(at) and math.isfinite(before))
        assert at >= power - 1e-12
        if r > 2:
            assert before < power


class TestRoundTrips:
    """The MDE at n runs, asked for again as an effect, needs n runs; its power is never
    below the target."""

    @pytest.mark.slow
    @settings(max_examples=80, deadline=None)
    @given(SDS, st.integers(1, 300), st.integers(1, 5), st.integers(0, 3), ALPHAS, POWERS, SIDES)
    def test_paired(
        self,
        sd: float,
        runs: int,
        pairs_per_run: int,
        excluded: int,
        alpha: float,
        power: float,
        sided: Sidedness,
    ) -> None:
        assume(power > alpha + 0.01)
        planned = PlannedSample(runs, pairs_per_run, pairs_per_run, excluded, excluded, 0, 0, 0)

        def design_at(r: int) -> Design | None:
            n, _ = planned.at(r)
            return paired_design(sd, n) if n >= 2 else None

        design = design_at(runs)
        assume(design is not None)
        assert design is not None
        found = mde(design, alpha, power, sided)
        assert t_power(found / design.se, design.df, alpha, sided) >= power
        assert runs_needed(found, design_at, alpha, power, sided, 10**6) == runs
        if sided == "two-sided":
            assert runs_needed(-found, design_at, alpha, power, sided, 10**6) == runs

    @pytest.mark.slow
    @settings(max_examples=60, deadline=None)
    @given(SDS, SDS, st.integers(1, 200), st.integers(1, 4), st.integers(1, 4), ALPHAS, SIDES)
    def test_welch(
        self,
        sd_a: float,
        sd_b: float,
        runs: int,
        per_a: int,
        per_b: int,
        alpha: float,
        sided: Sidedness,
    ) -> None:
        planned = PlannedSample(runs, per_a, per_b, 0, 0, 0, 0, None)

        def design_at(r: int) -> Design | None:
            n_a, n_b = planned.at(r)
            return welch_design(sd_a, sd_b, n_a, n_b) if min(n_a, n_b) >= 2 else None

        design = design_at(runs)
        assume(design is not None)
        assert design is not None
        found = mde(design, alpha, 0.8, sided)
        assert runs_needed(found, design_at, alpha, 0.8, sided, 10**6) == runs


class TestMonotonicity:
    """More runs, a larger alpha or a larger effect never lower the power; the MDE grows with
    the sd (in proportion) and with the power asked, and shrinks with the runs."""

    @pytest.mark.slow
    @settings(max_examples=80, deadline=None)
    @given(st.floats(0, 6), st.floats(0, 6), st.floats(1, 500), ALPHAS, SIDES)
    def test_power_grows_with_the_noncentrality(
        self, x: float, y: float, df: float, alpha: float, sided: Sidedness
    ) -> None:
        low, high = sorted((x, y))
        assert t_power(low, df, alpha, sided) <= t_power(high, df, alpha, sided) + 1e-15

    @pytest.mark.slow
    @settings(max_examples=60, deadline=None)
    @given(SDS, st.integers(2, 200), st.integers(2, 200), ALPHAS, POWERS, SIDES)
    def test_the_mde_shrinks_with_the_runs(
        self, sd: float, m: int, n: int, alpha: float, power: float, sided: Sidedness
    ) -> None:
        assume(power > alpha + 0.01)
        few, many = sorted((m, n))
        assert mde(paired_design(sd, many), alpha, power, sided) <= mde(
            paired_design(sd, few), alpha, power, sided
        )

    @pytest.mark.slow
    @settings(max_examples=60, deadline=None)
    @given(SDS, st.floats(1.01, 100), st.integers(2, 200), POWERS, POWERS, SIDES)
    def test_the_mde_grows_with_the_sd_and_the_power(
        self, sd: float, factor: float, n: int, p: float, q: float, sided: Sidedness
    ) -> None:
        alpha = 0.05
        low, high = sorted((p, q))
        base = mde(paired_design(sd, n), alpha, low, sided)
        assert mde(paired_design(sd * factor, n), alpha, low, sided) == pytest.approx(
            base * factor, rel=1e-12
        )
        assert mde(paired_design(sd, n), alpha, high, sided) >= base

    @pytest.mark.slow
    @settings(max_examples=40, deadline=None)
    @given(st.floats(0.05, 5), st.floats(0.05, 5), ALPHAS, SIDES)
    def test_the_runs_needed_shrink_with_the_effect(
        self, x: float, y: float, alpha: float, sided: Sidedness
    ) -> None:
        small, large = sorted((x, y))

        def design_at(r: int) -> Design | None:
            return paired_design(1.0, 2 * r) if r >= 1 else None

        few = runs_needed(large, design_at, alpha, 0.8, sided, 10**6)
        many = runs_needed(small, design_at, alpha, 0.8, sided, 10**6)
        assert few is not None and many is not None and few <= many

    def test_a_one_sided_test_at_a_larger_alpha_has_more_power(self) -> None:
        for nc in (0.0, 0.5, 2.0):
            assert t_power(nc, 10, 0.1, "one-sided") > t_power(nc, 10, 0.05, "one-sided")


class TestEdges:
    def test_power_at_no_effect_is_alpha(self) -> None:
        """With no effect the test rejects at its level, both sidednesses."""
        sides: tuple[Sidedness, ...] = ("one-sided", "two-sided")
        for sided in sides:
            assert t_power(0.0, 17, 0.05, sided) == pytest.approx(0.05, rel=1e-12)

    def test_the_far_lower_tail_is_taken_by_symmetry(self) -> None:
        """Where statsmodels' two-sided power is NaN (SciPy's noncentral t cdf far in its lower
        tail), repro's is the upper tail plus a lower tail bounded by P(T < 0) = Phi(-nc)."""
        from scipy import stats as sps
        from statsmodels.stats.power import TTestPower

        d, n, alpha = 1.0, 155, 0.125
        assert math.isnan(float(TTestPower().power(d, n, alpha, alternative="two-sided")))
        nc = d * math.sqrt(n)
        two = t_power(nc, n - 1, alpha, "two-sided")
        one = float(sps.nct.sf(sps.t.isf(alpha / 2, n - 1), n - 1, nc))
        assert one <= two <= one + float(sps.norm.cdf(-nc))

    def test_undefined_designs_and_targets_are_refused(self) -> None:
        with pytest.raises(ValueError, match="sd > 0"):
            paired_design(0.0, 10)
        with pytest.raises(ValueError, match="n >= 2"):
            paired_design(1.0, 1)
        with pytest.raises(ValueError, match="an sd > 0"):
            welch_design(0.0, 0.0, 5, 5)
        with pytest.raises(ValueError, match="between alpha"):
            noncentrality_needed(10, 0.05, 0.05, "one-sided")
        with pytest.raises(ValueError, match="above 0"):
            runs_needed(-1.0, lambda r: paired_design(1.0, r + 1), 0.05, 0.8, "one-sided", 100)

    def test_past_the_most_runs_there_is_no_answer(self) -> None:
        """An effect too small for the most runs a protocol may seal needs None."""
        assert (
            runs_needed(1e-6, lambda r: paired_design(1.0, r + 1), 0.05, 0.8, "one-sided", 1000)
            is None
        )

    def test_the_designs_are_the_contrasts_own(self) -> None:
        """The se and df of a design at a sample's own size and sd are those the contrasts
        derivation computes from the sample (paired t and Welch's t)."""
        contrast = Contrast(id="c", a=Group(participant="a"), b=Group(participant="b"))
        a = [1.0, 4.0, 2.5, 7.0, 3.25]
        b = [0.5, 2.0, 2.0, 9.0, 1.0, 6.5, 3.0]
        from statistics import stdev

        w = welch_t(attrs.evolve(contrast, pairing="unpaired"), a, b)
        design = welch_design(stdev(a), stdev(b), len(a), len(b))
        assert (design.se, design.df) == (
            pytest.approx(w.se, rel=1e-14),
            pytest.approx(w.df, rel=1e-14),
        )
        differences = [x - y for x, y in zip(a, b[:5], strict=True)]
        p = paired_t(contrast, differences)
        design = paired_design(stdev(differences), len(differences))
        assert (design.se, design.df) == (pytest.approx(p.se, rel=1e-14), p.df)


# --------------------------------------------------------------------------- the pilot

#: A pilot too small to plan from: one run of each CartPole condition (one pair).
TINY: dict[str, Any] = {
    **SMALL,
    "id": "tiny",
    "matrix": [{"name": "env_id", "levels": ["CartPole-v1"]}],
    "runs_per_condition": 1,
}

#: The contrasts of the tiny protocol, to plan 20 runs per condition from one.
TINY_CONTRASTS: dict[str, Any] = {
    "family": [
        {"id": "paired", "a": {"participant": "random"}, "b": {"participant": "push-left"}},
        {
            "id": "unpaired",
            "a": {"participant": "random"},
            "b": {"participant": "push-left"},
            "pairing": "unpaired",
        },
    ]
}


@pytest.fixture(scope="module")
def pilot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real bundle of test_contrasts' CONTRASTED (12 runs of 4 conditions, one slot
    excluded), the pilot of the plans below; copy it before changing it."""
    return study_once(tmp_path_factory, "pilot", CONTRASTED)


def _protocol(tmp_path: Path, data: dict[str, Any], name: str = "protocol.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), "utf-8")
    return path


def _power(*args: str | Path) -> Any:
    return runner.invoke(app, ["protocol", "power", *map(str, args)])


def _planned(pilot: Path, protocol: dict[str, Any]) -> Any:
    """The plan of ``protocol`` from ``pilot``, through the pure functions."""
    from repro._json.serde import structure
    from repro._power import pilot_tally, power_plan
    from repro._protocol.freeze import freeze
    from repro.verify import open_verified

    bundle = open_verified(pilot)
    tally_ = pilot_tally(
        bundle.protocol, bundle.ledger, ((p, bundle.records(p.id)) for p in bundle.partitions())
    )
    fp = freeze(structure(protocol, Protocol, what="protocol"))
    return bundle, power_plan(fp, bundle.protocol, bundle.seal, bundle.bundle_sha256, tally_)


class TestPilotEstimates:
    """The pilot's estimates are those of the contrasts derivation: its pairs, its standard
    errors and degrees of freedom come back from the sds it reports."""

    @pytest.mark.slow
    def test_they_are_the_contrasts_own(self, pilot: Path) -> None:
        bundle, plan = _planned(pilot, CONTRASTED)
        assert bundle.contrasts is not None
        stored = {c.id: c for c in bundle.contrasts.contrasts}
        for c in plan.contrasts:
            s, e = stored[c.id], c.pilot
            if c.pairing == "paired":
                assert (e.pairs, e.incomplete_pairs) == (s.pairs, s.incomplete_pairs)
                assert e.sd_difference / math.sqrt(e.pairs) == pytest.approx(s.se, rel=1e-13)
                # var(a - b) = var(a) + var(b) - 2 r sd(a) sd(b), over the same pairs.
                assert e.sd_difference**2 == pytest.approx(
                    e.sd_a**2 + e.sd_b**2 - 2 * e.correlation * e.sd_a * e.sd_b, rel=1e-9
                )
            else:
                assert (e.n_a, e.n_b) == (s.n_a, s.n_b)
                assert math.sqrt(e.sd_a**2 / e.n_a + e.sd_b**2 / e.n_b) == pytest.approx(
                    s.se, rel=1e-13
                )
                assert welch_design(e.sd_a, e.sd_b, e.n_a, e.n_b).df == pytest.approx(
                    s.df, rel=1e-12
                )

    def test_the_planned_sample_counts_the_declared_exclusion(self, pilot: Path) -> None:
        """12 runs x 2 matched condition pairs, less the pair the excluded slot breaks: 23;
        unpaired, 12 and 11 runs; at 40 runs, 79 pairs, and a smaller MDE."""
        _, plan = _planned(pilot, CONTRASTED)
        by_id = {c.id: c for c in plan.contrasts}
        paired, unpaired = by_id["random-better"], by_id["random-differs-on-cartpole"]
        assert (paired.planned.pairs, paired.planned.excluded_a) == (23, 1)
        assert (unpaired.planned.n_a, unpaired.planned.n_b) == (12, 11)
        _, more = _planned(pilot, {**CONTRASTED, "runs_per_condition": 40})
        bigger = next(c for c in more.contrasts if c.id == "random-better")
        assert bigger.planned.pairs == 79
        assert bigger.unadjusted.mde < paired.unadjusted.mde
        design = paired_design(paired.pilot.sd_difference, 23)
        assert paired.unadjusted.mde == mde(design, 1 - 0.95, 0.8, "one-sided")
        assert paired.bonferroni is not None
        assert paired.bonferroni.alpha == pytest.approx((1 - 0.95) / 3, rel=1e-15)


# --------------------------------------------------------------------------- the command


class TestCommand:
    """``repro protocol power`` end to end: text one fact a line, --json a stable object."""

    @pytest.mark.slow
    def test_text(self, pilot: Path, tmp_path: Path) -> None:
        from repro.verify import bundle_sha256

        protocol = _protocol(tmp_path, CONTRASTED)
        result = _power(protocol, "--pilot", pilot)
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        emitted = json.loads(_power(protocol, "--pilot", pilot, "--json").stdout)
        digest = bundle_sha256(pilot)
        assert lines[0].startswith("protocol contrasted (sha256 ")
        assert lines[1].startswith(f"pilot: bundle sha256 {digest} (verified)")
        for c in emitted["contrasts"]:
            mine = [line for line in lines if line.startswith(f"{c['id']} ")]
            facts = {line.split(":")[0].removeprefix(c["id"]).strip() for line in mine}
            expected = {
                "a",
                "b",
                "pilot",
                "planned",
                "test",
                "mde",
                "mde at Bonferroni alpha 0.05 / 3 = 0.0166667",
            }
            assert facts == expected, facts
            mde_line = next(line for line in mine if line.startswith(f"{c['id']} mde: "))
            assert f"{c['unadjusted']['mde']:.6g} beyond {c['null']:.6g}" in mde_line
            assert f"a true difference a - b of {c['unadjusted']['difference']:.6g}" in mde_line
        text = "\n".join(lines)
        for said in (
            "sd of the differences 8.54123",
            "pairing correlation",
            "n = 23 pairs",
            "n_a = 12, n_b = 11",
            "one-sided paired t against 0 at alpha 0.05",
            "two-sided (alpha / 2 each tail) Welch t",
            "against -0.5",
            f"assumed: the pilot's variances are taken as the true ones: every sd and "
            f"correlation is the estimate of the pilot (bundle sha256 {digest})",
            "a pilot's variance is itself uncertain",
            "the differences are normal",
            "Welch-Satterthwaite df of the pilot's variances scaled to the planned sizes: an "
            "approximation",
            "Holm's lies between",
        ):
            assert said in text, said

    def test_lower_is_better_and_a_single_primary_contrast(
        self, pilot: Path, tmp_path: Path
    ) -> None:
        """With lower better the difference is b - a (the same sds: the sign changes none);
        a family of one primary contrast without multiplicity control has no Bonferroni line."""
        family = CONTRASTED["contrasts"]["family"]
        single = {
            **CONTRASTED,
            "contrasts": {
                "family": [{**family[0], "better": "lower"}],
                "multiplicity": "none",
            },
        }
        result = _power(_protocol(tmp_path, single), "--pilot", pilot)
        assert result.exit_code == 0, result.output
        text = result.stdout
        assert "lower is better" in text and "a true difference b - a (lower is better) of" in text
        assert "alpha 0.05 (multiplicity none)" in text and "Bonferroni" not in text
        assert "sd of the differences 8.54123" in text

    def test_json_is_a_stable_object(self, pilot: Path, tmp_path: Path) -> None:
        protocol = _protocol(tmp_path, CONTRASTED)
        result = _power(protocol, "--pilot", pilot, "--json", "--power", "0.9")
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert list(data) == [
            "schema",
            "protocol_id",
            "protocol_sha256",
            "runs_per_condition",
            "multiplicity",
            "family_size",
            "pilot_bundle_sha256",
            "pilot_protocol_sha256",
            "pilot_runs_per_condition",
            "power",
            "effect",
            "max_runs",
            "contrasts",
            "assumptions",
        ]
        assert (data["schema"], data["power"], data["effect"]) == ("repro.power/1", 0.9, None)
        first = data["contrasts"][0]
        assert list(first) == [
            "id",
            "direction",
            "pairing",
            "better",
            "margin",
            "level",
            "primary",
            "sided",
            "null",
            "a",
            "b",
            "pilot",
            "planned",
            "unadjusted",
            "bonferroni",
            "outcome",
            "test",
            "largest_effect",
            "decided_by",
        ]
        assert (first["outcome"], first["test"], first["largest_effect"]) == (
            "measure",
            "paired-t",
            None,
        )
        assert list(first["unadjusted"]) == [
            "alpha",
            "se",
            "df",
            "noncentrality",
            "mde",
            "difference",
            "power_at_effect",
            "runs_needed",
            "method",
            "power_at_mde",
            "largest_power",
            "runs_searched",
        ]
        assert first["unadjusted"]["method"] == "noncentral-t"
        assert first["unadjusted"]["power_at_mde"] >= 0.9
        assert [c["id"] for c in data["contrasts"]] == [
            "random-better",
            "random-differs-on-cartpole",
            "push-left-not-worse",
        ]
        inferior = data["contrasts"][2]
        assert inferior["null"] == -0.5
        assert inferior["unadjusted"]["difference"] == inferior["unadjusted"]["mde"] - 0.5

    @pytest.mark.slow
    def test_the_effect_at_the_mde_needs_the_declared_runs(
        self, pilot: Path, tmp_path: Path
    ) -> None:
        """--effect the MDE at 12 runs: 12 runs needed (and the power there reaches the
        target); --effect twice as large needs fewer, at Bonferroni's alpha more."""
        protocol = _protocol(tmp_path, CONTRASTED)
        plain = json.loads(_power(protocol, "--pilot", pilot, "--json").stdout)
        for c in plain["contrasts"]:
            found = c["unadjusted"]["mde"]
            again = json.loads(
                _power(protocol, "--pilot", pilot, "--json", "--effect", repr(found)).stdout
            )
            at = next(x for x in again["contrasts"] if x["id"] == c["id"])["unadjusted"]
            assert at["runs_needed"] == 12
            assert at["power_at_effect"] >= 0.8
        result = _power(protocol, "--pilot", pilot, "--effect", "20")
        assert result.exit_code == 0, result.output
        line = next(x for x in result.stdout.splitlines() if x.startswith("random-better effect"))
        assert "runs per condition reach power 0.8" in line and "at Bonferroni's alpha" in line


class TestRefusals:
    """Each refusal exits 2 and names what differs, with the contrast and its JSON path."""

    def _refused(self, *args: str | Path) -> str:
        result = _power(*args)
        assert result.exit_code == 2, result.output
        assert result.stdout == ""
        return _flat(result.stderr)

    def test_a_protocol_without_contrasts(self, pilot: Path, tmp_path: Path) -> None:
        said = self._refused(_protocol(tmp_path, SMALL), "--pilot", pilot)
        assert "declares no contrasts to plan @ $.contrasts" in said

    def test_a_pilot_that_does_not_verify(self, pilot: Path, tmp_path: Path) -> None:
        copy = tmp_path / "copy"
        shutil.copytree(pilot, copy)
        aggregates = copy / "data" / "aggregates.json"
        aggregates.write_bytes(aggregates.read_bytes().replace(b"12", b"13", 1))
        said = self._refused(_protocol(tmp_path, CONTRASTED), "--pilot", copy)
        assert "FAIL" in said and f"--pilot {copy}: the pilot does not verify" in said

    def test_not_a_bundle(self, tmp_path: Path) -> None:
        said = self._refused(_protocol(tmp_path, CONTRASTED), "--pilot", tmp_path)
        assert "error:" in said

    def test_a_pilot_of_another_protocol(self, pilot: Path, tmp_path: Path) -> None:
        other = {**CONTRASTED, "id": "other"}
        said = self._refused(_protocol(tmp_path, other), "--pilot", pilot)
        assert "the pilot is of protocol 'contrasted', not 'other' @ $.id" in said

    def test_a_pilot_of_other_conditions(self, pilot: Path, tmp_path: Path) -> None:
        """A protocol whose groups select a condition the pilot lacks (a third environment):
        named by its levels and participant, at the group's path; the contrast whose groups
        are the same in both is not named."""
        wider = {
            **CONTRASTED,
            "matrix": [
                {"name": "env_id", "levels": ["CartPole-v1", "MountainCar-v0", "Acrobot-v1"]}
            ],
        }
        said = self._refused(_protocol(tmp_path, wider), "--pilot", pilot)
        assert (
            "contrast 'random-better': the group selects other conditions: the pilot lacks "
            "env_id=Acrobot-v1 / random @ $.contrasts.family[0].a"
        ) in said
        assert "env_id=Acrobot-v1 / push-left @ $.contrasts.family[0].b" in said
        assert "random-differs-on-cartpole" not in said

    def test_a_pilot_of_another_measure(self, pilot: Path, tmp_path: Path) -> None:
        other = {
            **CONTRASTED,
            "measure": {"name": "outcome_value", "key": "score", "description": "a score"},
        }
        said = self._refused(_protocol(tmp_path, other), "--pilot", pilot)
        assert (
            "the pilot's measure is episode_return, not outcome_value at 'score' @ $.measure"
            in said
        )

    @pytest.mark.slow
    def test_too_few_pilot_pairs_or_runs(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        """A pilot of one run a condition: one pair, one run a group."""
        tiny = study_once(tmp_path_factory, "tiny", TINY)
        planned = {**TINY, "runs_per_condition": 20, "contrasts": TINY_CONTRASTS}
        said = self._refused(_protocol(tmp_path_factory.mktemp("p"), planned), "--pilot", tiny)
        assert (
            "contrast 'paired': the pilot has 1 complete pair(s) (0 incomplete): its sd needs "
            "at least 2 @ $.contrasts.family[0]"
        ) in said
        assert (
            "contrast 'unpaired': in the pilot, group a has 1 and b has 1 valid run(s): each "
            "needs at least 2 @ $.contrasts.family[1]"
        ) in said

    def test_an_sd_of_zero(self, pilot: Path, tmp_path: Path) -> None:
        """On MountainCar every episode of both participants is -200: no variance to plan
        from, paired or not (an MDE of 0 is not claimed)."""
        env = {"env_id": "MountainCar-v0"}
        flat = {
            **CONTRASTED,
            "contrasts": {
                "family": [
                    {
                        "id": "flat-paired",
                        "a": {"participant": "random", "factors": env},
                        "b": {"participant": "push-left", "factors": env},
                    },
                    {
                        "id": "flat-unpaired",
                        "a": {"participant": "random", "factors": env},
                        "b": {"participant": "push-left", "factors": env},
                        "pairing": "unpaired",
                    },
                ]
            },
        }
        said = self._refused(_protocol(tmp_path, flat), "--pilot", pilot)
        assert (
            "contrast 'flat-paired': the pilot's 12 paired differences are all equal (sd 0): no "
            "variance to plan from"
        ) in said
        assert "@ $.contrasts.family[0]" in said
        assert (
            "contrast 'flat-unpaired': in the pilot, every run of each group has the same" in said
        )
        assert "@ $.contrasts.family[1]" in said

    def test_a_power_or_effect_no_test_reaches(self, pilot: Path, tmp_path: Path) -> None:
        protocol = _protocol(tmp_path, CONTRASTED)
        said = self._refused(protocol, "--pilot", pilot, "--power", "1.5")
        assert "--power must lie strictly between 0 and 1, not 1.5" in said
        said = self._refused(protocol, "--pilot", pilot, "--power", "0.01")
        assert (
            "contrast 'random-better': --power 0.01 is not above its alpha 0.05 (1 - level) "
            "@ $.contrasts.family[0].level"
        ) in said
        said = self._refused(protocol, "--pilot", pilot, "--effect", "-1")
        assert "contrast 'random-better': a one-sided test detects only an effect above 0" in said
        assert "push-left-not-worse" in said and "random-differs-on-cartpole" not in said
        said = self._refused(protocol, "--pilot", pilot, "--effect", "nan")
        assert "--effect must be a finite number" in said


@pytest.mark.slow
def test_a_bootstrap_contrast_is_planned_as_its_t_analogue(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """A contrast that declares a seeded bootstrap is planned with its pairing's t, and the
    plan says so: its text names the bootstrap that will decide it, and --json keeps both the
    planned test and ``decided_by``; a t contrast has no ``decided_by``."""
    data = json.loads((Path(__file__).parent / "data" / "bootstrap-contrasts.json").read_text())
    pilot = study_once(tmp_path_factory, "bootstrap-pilot", data)
    protocol = _protocol(tmp_path, data)
    emitted = json.loads(_power(protocol, "--pilot", pilot, "--json").stdout)
    by_id = {c["id"]: c for c in emitted["contrasts"]}
    assert (
        by_id["random-better-bootstrap"]["test"],
        by_id["random-better-bootstrap"]["decided_by"],
    ) == (
        "paired-t",
        "paired-bootstrap",
    )
    assert by_id["random-differs-unpaired-bootstrap"]["decided_by"] == "unpaired-bootstrap"
    assert by_id["random-better-t"]["decided_by"] is None
    text = _power(protocol, "--pilot", pilot).stdout
    assert "random-better-bootstrap test: one-sided paired t" in text
    assert "decided by a seeded percentile bootstrap (paired-bootstrap)" in text
