"""``repro protocol power`` for contrasts of a rate (a check or a category): the exact power of
McNemar's test (paired) and of Fisher's (unpaired) against a brute-force enumeration written
here on SciPy's own tests, the regions the walks find against the test at every outcome, the
MDE and the runs needed (a discrete test's sawtooth), the pilot's counts against the contrasts
derivation's, and the command on a pilot of protocols/agent-gate-eval.json with its refusals."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from conftest import ROOT
from repro._cli.app import app
from repro._json.serde import structure
from repro._power import (
    FISHER_EXACT_RUNS,
    MCNEMAR_EXACT_PAIRS,
    PowerPlan,
    RateDesign,
    Sidedness,
    fisher_power,
    fisher_rejects,
    mcnemar_power,
    mcnemar_rejects,
    pilot_tally,
    power_plan,
    rate_mde,
    rate_power,
    rate_runs_needed,
)
from repro._protocol.freeze import freeze
from repro._protocol.load import strip_comments
from repro.errors import PROBLEM_CODES, BadInput, Problem
from repro.models import Protocol
from repro.verify import VerifiedBundle, open_verified

runner = CliRunner()

SIDES = st.sampled_from(["one-sided", "two-sided"])
ALPHAS = st.floats(0.005, 0.2)
POWERS = st.floats(0.5, 0.95)

#: protocols/agent-gate-eval.json as data, its comments stripped.
GATE: dict[str, Any] = strip_comments(
    json.loads((ROOT / "protocols" / "agent-gate-eval.json").read_text("utf-8"))
)
_GATED, _RAW, _STATIC = ({"factors": {"arm": arm}} for arm in ("gated", "raw", "static"))


def _gate(*family: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """The gate protocol with another family of contrasts (and other top-level fields)."""
    return {**GATE, **changes, "contrasts": {"family": list(family)}}


def _rate(id_: str, a: dict[str, Any], b: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"id": id_, "a": a, "b": b, **fields}


# --------------------------------------------------------------------------- the references


def _trinomial(n: int, a: int, b: int, p10: float, p01: float) -> float:
    rest = 1.0 - p10 - p01
    return math.comb(n, a) * math.comb(n - a, b) * p10**a * p01**b * max(rest, 0.0) ** (n - a - b)


def _mcnemar_brute(
    n: int, discordance: float, effect: float, alpha: float, sided: Sidedness
) -> float:
    """The exact McNemar power by enumerating every outcome of ``n`` pairs (pairs favouring a,
    pairs favouring b, concordant ones) with its trinomial probability, rejected where SciPy's
    binomial test of the discordant pairs has a p-value below alpha."""
    from scipy import stats as sps

    p10, p01 = (discordance + effect) / 2, (discordance - effect) / 2
    alternative = "greater" if sided == "one-sided" else "two-sided"
    hits = []
    for a in range(n + 1):
        for b in range(n + 1 - a):
            if a + b == 0:
                continue
            if sps.binomtest(a, a + b, 0.5, alternative=alternative).pvalue < alpha:
                hits.append(_trinomial(n, a, b, p10, p01))
    return math.fsum(hits)


def _fisher_brute(
    n_a: int, n_b: int, rate_a: float, rate_b: float, alpha: float, sided: Sidedness
) -> float:
    """The exact Fisher power by enumerating every table of the two groups' passes, rejected
    where SciPy's Fisher test has a p-value below alpha."""
    from scipy import stats as sps

    alternative = "greater" if sided == "one-sided" else "two-sided"
    hits = []
    for x in range(n_a + 1):
        for y in range(n_b + 1):
            table = [[x, n_a - x], [y, n_b - y]]
            if sps.fisher_exact(table, alternative=alternative).pvalue < alpha:
                # logpmf: SciPy's binom.pmf raises at p = 2.2250738585072014e-308.
                pmf_x = math.exp(sps.binom.logpmf(x, n_a, rate_a))
                hits.append(pmf_x * math.exp(sps.binom.logpmf(y, n_b, rate_b)))
    return math.fsum(hits)


# --------------------------------------------------------------------------- the statistics


class TestExactPower:
    """The exact power is the brute-force enumeration's, to 1e-10."""

    @pytest.mark.slow
    @settings(max_examples=30, deadline=None)
    @given(st.integers(0, 30), st.floats(0.02, 1.0), st.floats(-1.0, 1.0), ALPHAS, SIDES)
    def test_mcnemar_is_the_enumeration_of_every_outcome(
        self, n: int, discordance: float, share: float, alpha: float, sided: Sidedness
    ) -> None:
        effect = share * discordance
        ours = mcnemar_power(n, discordance, effect, alpha, sided)
        reference = _mcnemar_brute(n, discordance, effect, alpha, sided)
        assert ours == pytest.approx(reference, rel=1e-10, abs=1e-13)

    @pytest.mark.slow
    @settings(max_examples=30, deadline=None)
    @given(st.integers(0, 16), st.integers(0, 16), st.floats(0, 1), st.floats(0, 1), ALPHAS, SIDES)
    # The smallest normal float, where SciPy's binom.pmf raises OverflowError.
    @example(0, 4, 0.0, 2.2250738585072014e-308, 0.125, "one-sided")
    def test_fisher_is_the_enumeration_of_every_table(
        self, n_a: int, n_b: int, rate_a: float, rate_b: float, alpha: float, sided: Sidedness
    ) -> None:
        ours = fisher_power(n_a, n_b, rate_a, rate_b, alpha, sided)
        reference = _fisher_brute(n_a, n_b, rate_a, rate_b, alpha, sided)
        assert ours == pytest.approx(reference, rel=1e-10, abs=1e-13)

    def test_a_discordance_of_the_smallest_normal_float(self) -> None:
        """McNemar's power at a discordance of 2.2250738585072014e-308 (where SciPy's
        binom.pmf raises) is computed: almost no pair is discordant, so the test almost never
        rejects."""
        tiny = 2.2250738585072014e-308
        assert 0.0 <= mcnemar_power(10, tiny, 0.0, 0.05, "one-sided") < 1e-300

    @pytest.mark.slow
    def test_the_size_is_at_most_alpha(self) -> None:
        """With no effect an exact test rejects at most at its level (McNemar: q = 1/2 at
        every discordance; Fisher: equal rates)."""
        sides: tuple[Sidedness, ...] = ("one-sided", "two-sided")
        for sided in sides:
            for n in (5, 40, 200):
                for discordance in (0.1, 0.5, 1.0):
                    assert mcnemar_power(n, discordance, 0.0, 0.05, sided) <= 0.05
            for rate in (0.1, 0.5, 0.9):
                assert fisher_power(30, 45, rate, rate, 0.05, sided) <= 0.05

    def test_beyond_the_exact_limits_nothing_is_computed(self) -> None:
        """Past the stated limits no power is computed (no approximation in its place)."""
        with pytest.raises(ValueError, match="enumerated up to"):
            mcnemar_power(MCNEMAR_EXACT_PAIRS + 1, 0.5, 0.1, 0.05, "one-sided")
        with pytest.raises(ValueError, match="enumerated up to"):
            fisher_power(FISHER_EXACT_RUNS, 1, 0.5, 0.4, 0.05, "one-sided")
        with pytest.raises(ValueError, match="no rates"):
            mcnemar_power(10, 0.3, 0.4, 0.05, "one-sided")


@pytest.mark.slow
class TestRegionsWalked:
    """The regions the walks find hold exactly the outcomes the contrasts' tests reject: a
    white-box check of the monotonicity the walks rely on, outcome by outcome."""

    def test_mcnemar_critical_counts(self) -> None:
        from repro._power.rates import _mcnemar_criticals

        sides: tuple[Sidedness, ...] = ("one-sided", "two-sided")
        for sided in sides:
            for alpha in (0.05, 0.01, 0.2):
                critical = _mcnemar_criticals(alpha, sided).upto(80)
                for d, c in enumerate(critical):
                    for k in range(d + 1):
                        region = k >= c or (sided == "two-sided" and k <= d - c)
                        assert region == mcnemar_rejects(k, d - k, alpha, sided), (d, k)

    def test_fisher_regions(self) -> None:
        from repro._power.rates import _fisher_region

        sides: tuple[Sidedness, ...] = ("one-sided", "two-sided")
        for sided in sides:
            for alpha in (0.05, 0.01):
                for n_a, n_b in ((20, 20), (6, 23), (23, 6), (1, 12), (0, 5)):
                    region = _fisher_region(n_a, n_b, alpha, sided)
                    for x in range(n_a + 1):
                        for y in range(n_b + 1):
                            expected = fisher_rejects(x, n_a, y, n_b, alpha, sided)
                            assert bool(region[x, y]) == expected, (n_a, n_b, x, y)


def _designs() -> st.SearchStrategy[RateDesign]:
    mcnemar = st.builds(
        lambda n, held: RateDesign("mcnemar-exact", n, n, held),
        st.integers(1, 150),
        st.floats(0.05, 1.0),
    )
    fisher = st.builds(
        RateDesign,
        st.just("fisher-exact"),
        n_a=st.integers(1, 40),
        n_b=st.integers(1, 40),
        held=st.floats(0.05, 0.95),
    )
    return st.one_of(mcnemar, fisher)


def _either(design: RateDesign, effect: float, alpha: float, sided: Sidedness) -> float:
    power = rate_power(design, effect, alpha, sided)
    if sided == "two-sided":
        power = min(power, rate_power(design, -effect, alpha, sided))
    return power


class TestMde:
    """A rate's MDE reaches the target and a step below it does not; None only when even the
    largest effect falls short."""

    @pytest.mark.slow
    @settings(max_examples=40, deadline=None)
    @given(_designs(), ALPHAS, POWERS, SIDES)
    def test_the_mde_is_the_least_effect_reaching_the_target(
        self, design: RateDesign, alpha: float, power: float, sided: Sidedness
    ) -> None:
        assume(power > alpha + 0.01)
        found = rate_mde(design, alpha, power, sided)
        if found is None:
            assert _either(design, design.largest, alpha, sided) < power
            return
        assert 0 < found <= design.largest
        assert _either(design, found, alpha, sided) >= power
        assert _either(design, found * (1 - 1e-9), alpha, sided) < power

    def test_the_mde_shrinks_with_the_pairs(self) -> None:
        """More pairs at the same discordance detect a smaller difference (checked where the
        sawtooth cannot reverse it: pairs doubled)."""
        found = [
            rate_mde(RateDesign("mcnemar-exact", n, n, 0.5), 0.05, 0.8, "one-sided")
            for n in (25, 50, 100, 200, 400)
        ]
        assert all(x is not None for x in found)
        assert found == sorted(found, reverse=True)


class TestRunsNeeded:
    """A rate's runs needed are the first runs per condition whose exact power reaches the
    target, scanned upward; the power is a sawtooth, so a later run may fall short again."""

    @staticmethod
    def _design_at(per_run: int, held: float) -> Any:
        def design_at(r: int) -> RateDesign | None:
            n = r * per_run
            return RateDesign("mcnemar-exact", n, n, held) if n >= 1 else None

        return design_at

    @pytest.mark.slow
    @settings(max_examples=25, deadline=None)
    @given(st.integers(1, 4), st.floats(0.2, 1.0), st.floats(0.3, 0.9), ALPHAS, SIDES)
    def test_the_first_runs_that_reach_the_target(
        self, per_run: int, held: float, share: float, alpha: float, sided: Sidedness
    ) -> None:
        design_at = self._design_at(per_run, held)
        effect = share * held
        most = MCNEMAR_EXACT_PAIRS // per_run
        found = rate_runs_needed(effect, design_at, alpha, 0.8, sided, most)
        assert found is not None
        assert rate_power(design_at(found), effect, alpha, sided) >= 0.8
        assert all(rate_power(design_at(r), effect, alpha, sided) < 0.8 for r in range(1, found))

    def test_the_mde_at_some_runs_needs_at_most_those_runs(self) -> None:
        """The MDE at r runs, asked as an effect, is reached by r runs or fewer (fewer: a
        smaller sample of a discrete test may have more power)."""
        for runs in (3, 7, 12, 20):
            design_at = self._design_at(4, 0.6)
            found = rate_mde(design_at(runs), 0.05, 0.8, "one-sided")
            assert found is not None
            needed = rate_runs_needed(found, design_at, 0.05, 0.8, "one-sided", 250)
            assert needed is not None and needed <= runs

    def test_the_sawtooth(self) -> None:
        """Every pair discordant (d = n, McNemar's binomial test unmixed): the exact power falls
        at some added pairs, and the runs needed are the first that reach the target, though
        the next run falls short of it again."""
        design_at = self._design_at(1, 1.0)
        powers = [rate_power(design_at(n), 0.4, 0.05, "one-sided") for n in range(1, 121)]
        dips = [n for n in range(1, 120) if powers[n] < powers[n - 1]]
        # A target between a peak and the dip after it: reached first at or before the peak.
        peak = next(n for n in dips if powers[n - 1] >= 0.5)
        target = (powers[peak - 1] + powers[peak]) / 2
        first = rate_runs_needed(0.4, design_at, 0.05, target, "one-sided", 120)
        assert first is not None and first <= peak
        assert first == min(n for n in range(1, 121) if powers[n - 1] >= target)
        assert powers[peak] < target  # one more run than the peak falls short again

    def test_none_within_the_runs_searched(self) -> None:
        """An effect no searched run reaches needs None."""
        assert rate_runs_needed(0.01, self._design_at(1, 0.5), 0.05, 0.8, "one-sided", 50) is None
        with pytest.raises(ValueError, match="above 0"):
            rate_runs_needed(-0.1, self._design_at(1, 0.5), 0.05, 0.8, "one-sided", 50)


# --------------------------------------------------------------------------- the pilot


@pytest.fixture(scope="module")
def gate(scored_bundle: Path) -> Iterator[VerifiedBundle]:
    """The verified bundle of the gate example, the pilot of the plans below."""
    yield open_verified(scored_bundle)


def _plan(pilot: VerifiedBundle, protocol: dict[str, Any], **options: Any) -> PowerPlan:
    """The plan of ``protocol`` from ``pilot``, through the pure functions."""
    runs = pilot_tally(
        pilot.protocol, pilot.ledger, ((p, pilot.records(p.id)) for p in pilot.partitions())
    )
    fp = freeze(structure(protocol, Protocol, what="protocol"))
    return power_plan(
        fp,
        pilot.protocol,
        pilot.seal,
        pilot.bundle_sha256,
        runs,
        pilot_scores=pilot.scores,
        **options,
    )


def _refusal(
    pilot: VerifiedBundle, protocol: dict[str, Any], **options: Any
) -> tuple[Problem, ...]:
    """The problems the plan of ``protocol`` from ``pilot`` is refused for, each a known code."""
    with pytest.raises(BadInput) as caught:
        _plan(pilot, protocol, **options)
    assert caught.value.problems and all(p.code in PROBLEM_CODES for p in caught.value.problems)
    return caught.value.problems


def _scored(pilot: VerifiedBundle) -> dict[tuple[str, ...], dict[str, Any]]:
    """Each scored run of the pilot by (scenario, model, replicate, arm), from scores.json and
    the sealed conditions (not through the contrasts)."""
    assert pilot.scores is not None
    factors = {c.id: c.factors for c in pilot.seal.conditions}
    out = {}
    for run in pilot.scores.runs:
        f = factors[run.condition]
        replicate = run.attempt_id.split("-r")[1][:4]
        key = (str(f["scenario"]), str(f["model"]), replicate, str(f["arm"]))
        out[key] = {"category": run.category, **{c.name: c.passed for c in run.checks}}
    return out


class TestPilot:
    """The pilot's counts are the contrasts derivation's, and each MDE is the exact design's
    at the planned pairs."""

    @pytest.mark.slow
    def test_the_counts_are_the_contrasts_own(self, gate: VerifiedBundle) -> None:
        plan = _plan(gate, GATE)
        assert gate.contrasts is not None
        stored = {c.id: c for c in gate.contrasts.contrasts}
        for c in plan.contrasts:
            s, e = stored[c.id], c.pilot
            assert (c.test, c.outcome) == ("mcnemar-exact", "category:catch")
            assert e.counts == s.counts and (e.pairs, e.incomplete_pairs) == (48, 0)
            assert e.difference == s.estimate
            assert e.counts is not None
            assert e.discordance == (e.counts["a_only"] + e.counts["b_only"]) / 48
            assert c.largest_effect == e.discordance

    def test_each_mde_is_the_exact_designs(self, gate: VerifiedBundle) -> None:
        """At 6 runs x 8 matched pairs, 48 pairs: the MDE at alpha 0.05 and at Bonferroni's
        0.025, each with its exact power at or above 0.8."""
        plan = _plan(gate, GATE)
        for c in plan.contrasts:
            assert c.planned.pairs == 48 and c.pilot.discordance is not None
            design = RateDesign("mcnemar-exact", 48, 48, c.pilot.discordance)
            u, b = c.unadjusted, c.bonferroni
            assert b is not None and b.alpha == pytest.approx(u.alpha / 2, rel=1e-15)
            assert u.mde == rate_mde(design, u.alpha, 0.8, "one-sided")
            assert b.mde == rate_mde(design, b.alpha, 0.8, "one-sided")
            assert u.mde is not None and b.mde is not None and u.mde < b.mde
            assert u.power_at_mde is not None and u.power_at_mde >= 0.8
            assert (u.se, u.df, u.noncentrality, u.method) == (None, None, None, "exact")

    def test_the_figures_the_docs_give(self, gate: VerifiedBundle) -> None:
        """The MDEs docs/statistics.md gives for the gate example, planned from its own
        bundle."""
        plan = _plan(gate, GATE)
        found = [
            (round(c.unadjusted.mde or 0, 3), round(c.bonferroni.mde or 0, 3))
            for c in plan.contrasts
            if c.bonferroni is not None
        ]
        assert found == [(0.319, 0.358), (0.251, 0.279)]
        assert [c.pilot.discordance for c in plan.contrasts] == [0.75, 22 / 48]

    @pytest.mark.slow
    def test_lower_is_better_unpaired_and_checks(self, gate: VerifiedBundle) -> None:
        """With lower better the discordant pairs favouring a are those where a's run does not
        pass and b's does; unpaired, the test's groups are b's and a's, and the mean rate is
        the same either way: each counted here from scores.json alone."""
        plan = _plan(
            gate,
            _gate(
                _rate("verdict", _GATED, _STATIC, check="verdict", better="lower"),
                _rate("miss", _GATED, _STATIC, category="miss", pairing="unpaired"),
                _rate(
                    "miss-lower",
                    _GATED,
                    _STATIC,
                    category="miss",
                    pairing="unpaired",
                    better="lower",
                    direction="two-sided",
                ),
            ),
        )
        runs = _scored(gate)
        keys = {k[:3] for k in runs}
        a_fails_b_passes = sum(
            not runs[(*k, "gated")]["verdict"] and runs[(*k, "static")]["verdict"] for k in keys
        )
        a_passes_b_fails = sum(
            runs[(*k, "gated")]["verdict"] and not runs[(*k, "static")]["verdict"] for k in keys
        )
        verdict, miss, lower = plan.contrasts
        assert verdict.pilot.counts is not None
        assert (verdict.pilot.counts["a_only"], verdict.pilot.counts["b_only"]) == (
            a_fails_b_passes,
            a_passes_b_fails,
        )
        assert verdict.pilot.difference == pytest.approx((a_fails_b_passes - a_passes_b_fails) / 48)
        gated_misses = sum(runs[(*k, "gated")]["category"] == "miss" for k in keys)
        static_misses = sum(runs[(*k, "static")]["category"] == "miss" for k in keys)
        assert miss.pilot.counts == {
            "passed_a": gated_misses,
            "n_a": 48,
            "passed_b": static_misses,
            "n_b": 48,
        }
        assert lower.pilot.counts == {
            "passed_a": static_misses,
            "n_a": 48,
            "passed_b": gated_misses,
            "n_b": 48,
        }
        mean = (gated_misses + static_misses) / 96
        assert miss.pilot.mean_rate == pytest.approx(mean) == lower.pilot.mean_rate
        assert lower.largest_effect == pytest.approx(2 * min(mean, 1 - mean))
        assert (miss.test, lower.sided) == ("fisher-exact", "two-sided")
        design = RateDesign("fisher-exact", 48, 48, miss.pilot.mean_rate)
        assert miss.unadjusted.mde == rate_mde(design, miss.unadjusted.alpha, 0.8, "one-sided")

    def test_a_family_of_rates_and_the_measure(self, gate: VerifiedBundle) -> None:
        """A measure's contrast beside a rate's: each planned by its own test, and the
        assumptions of both said."""
        plan = _plan(
            gate,
            _gate(
                _rate("catch", _GATED, _RAW, category="catch"),
                _rate("blocking", _GATED, _RAW),
            ),
        )
        rate, measure = plan.contrasts
        assert (rate.test, rate.unadjusted.method) == ("mcnemar-exact", "exact")
        assert (measure.test, measure.unadjusted.method) == ("paired-t", "noncentral-t")
        said = " ".join(plan.assumptions)
        assert "the pilot's variances are taken as the true ones" in said
        assert "the pilot's rates are taken as the true ones" in said
        assert "noncentral t on n - 1 df" in said and "held fixed" in said


# --------------------------------------------------------------------------- the command


def _power(tmp_path: Path, protocol: dict[str, Any], pilot: Path, *args: str) -> Any:
    path = tmp_path / "protocol.json"
    path.write_text(json.dumps(protocol), "utf-8")
    return runner.invoke(app, ["protocol", "power", str(path), "--pilot", str(pilot), *args])


class TestCommand:
    """``repro protocol power`` on the gate example: each contrast's MDE, what it held and
    how its power is computed, one fact a line."""

    @pytest.mark.slow
    def test_text(self, scored_bundle: Path, tmp_path: Path) -> None:
        from repro.verify import bundle_sha256

        result = _power(tmp_path, GATE, scored_bundle)
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        data = json.loads(_power(tmp_path, GATE, scored_bundle, "--json").stdout)
        for c in data["contrasts"]:
            mine = [line for line in lines if line.startswith(f"{c['id']} ")]
            facts = {line.split(":")[0].removeprefix(c["id"]).strip() for line in mine}
            assert facts == {
                "a",
                "b",
                "pilot",
                "planned",
                "test",
                "mde",
                "mde at Bonferroni alpha 0.05 / 2 = 0.025",
            }, facts
            mde_line = next(line for line in mine if line.startswith(f"{c['id']} mde: "))
            u = c["unadjusted"]
            assert f"{u['mde']:.6g} beyond 0 at power 0.8" in mde_line
            assert f"exact power {u['power_at_mde']:.6g}" in mde_line
            assert f"a true difference of rates a - b of {u['difference']:.6g}" in mde_line
            pilot = next(line for line in mine if line.startswith(f"{c['id']} pilot: "))
            counts = c["pilot"]["counts"]
            assert f"{counts['a_only']} discordant favour a, {counts['b_only']} favour b" in pilot
            assert f"discordance {c['pilot']['discordance']:.6g} (p10 + p01, held)" in pilot
        text = "\n".join(lines)
        digest = bundle_sha256(scored_bundle)
        for said in (
            "the rate of runs that fall in category 'catch'",
            "one-sided McNemar exact",
            "d ~ Binomial(48, 0.75) discordant pairs",
            f"assumed: the pilot's rates are taken as the true ones: every discordance and mean "
            f"rate is the estimate of the pilot (bundle sha256 {digest})",
            "scoring and scenario expectations",
            "held fixed as the effect p10 - p01 varies",
            f"enumerated up to {MCNEMAR_EXACT_PAIRS} pairs",
            "Holm's lies between",
        ):
            assert said in text, said

    @pytest.mark.slow
    def test_the_effect_at_the_mde(self, scored_bundle: Path, tmp_path: Path) -> None:
        """--effect the MDE at 6 runs: reached at 6 runs or fewer, said to be the first
        reaching the target."""
        plain = json.loads(_power(tmp_path, GATE, scored_bundle, "--json").stdout)
        found = plain["contrasts"][0]["unadjusted"]["mde"]
        result = _power(tmp_path, GATE, scored_bundle, "--effect", repr(found), "--json")
        assert result.exit_code == 0, result.output
        at = json.loads(result.stdout)["contrasts"][0]["unadjusted"]
        assert at["power_at_effect"] >= 0.8 and 1 <= at["runs_needed"] <= 6
        assert at["runs_searched"] == MCNEMAR_EXACT_PAIRS // 8
        text = _power(tmp_path, GATE, scored_bundle, "--effect", "0.2").stdout
        line = next(x for x in text.splitlines() if x.startswith("gated-catches-more-than-raw eff"))
        assert "are the first to reach power 0.8" in line and "sawtooth" in line

    @pytest.mark.slow
    def test_a_refusal_exits_2(self, scored_bundle: Path, tmp_path: Path) -> None:
        """A pilot that cannot plan a rate: exit 2, nothing printed, the JSON path named."""
        lucky = _gate(_rate("lucky", _GATED, _RAW, category="lucky_pass"))
        result = _power(tmp_path, lucky, scored_bundle)
        assert result.exit_code == 2 and result.stdout == ""
        assert "all concordant" in result.stderr
        assert "@ $.contrasts.family[0]" in result.stderr


class TestRefusals:
    """Each refusal names the contrast and the JSON path; nothing is planned."""

    def test_no_discordant_pair_or_no_room(self, gate: VerifiedBundle) -> None:
        """No run of any arm is a lucky pass: paired, no discordant pair; unpaired, a mean rate
        of 0."""
        said = _refusal(
            gate,
            _gate(
                _rate("paired", _GATED, _RAW, category="lucky_pass"),
                _rate("unpaired", _GATED, _RAW, category="lucky_pass", pairing="unpaired"),
            ),
        )
        assert any(
            p.message.startswith("contrast 'paired': the pilot's 48 pairs are all concordant")
            and p.path == "$.contrasts.family[0]"
            for p in said
        ), said
        assert any(
            p.message.startswith(
                "contrast 'unpaired': in the pilot, no run of either group falls in category "
                "'lucky_pass' (mean rate 0)"
            )
            and p.path == "$.contrasts.family[1]"
            for p in said
        ), said

    def test_another_scoring_or_expectation(self, gate: VerifiedBundle) -> None:
        """A protocol whose checks or scenario expectations differ from the pilot's counts
        other rates."""
        scoring = json.loads(json.dumps(GATE["scoring"]))
        scoring["checks"][2]["expect"] = "verdict"
        said = _refusal(gate, {**GATE, "scoring": scoring})
        assert said[-1].path == "$.scoring", said
        assert said[-1].message.endswith("a rate needs the protocol's own scoring"), said
        scenarios = json.loads(json.dumps(GATE["scenarios"]))
        scenarios[1]["expect"]["min_blocking"] = 2
        said = _refusal(gate, {**GATE, "scenarios": scenarios})
        assert said[-1] == Problem(
            "$.scenarios[1].expect",
            "the pilot's scenario 'billing-retry' expects otherwise: its rates are of other checks",
            "inconsistent",
        ), said

    def test_an_effect_beyond_the_held_discordance(self, gate: VerifiedBundle) -> None:
        said = _refusal(gate, GATE, effect=0.8)
        assert (
            "$.contrasts.family[0]",
            "contrast 'gated-catches-more-than-raw': a rate's effect is a difference of rates: "
            "with the pilot's discordance held, at most 0.75, not --effect 0.8",
        ) in [(p.path, p.message) for p in said], said

    def test_a_planned_sample_beyond_the_exact_limit(self, gate: VerifiedBundle) -> None:
        runs = MCNEMAR_EXACT_PAIRS // 8 + 1
        said = _refusal(gate, {**GATE, "runs_per_condition": runs})
        assert any(
            f"give {runs * 8} pairs, more than the {MCNEMAR_EXACT_PAIRS} its exact power is "
            "enumerated for"
            in p.message
            and (p.path, p.code) == ("$.runs_per_condition", "over-limit")
            for p in said
        ), said

    def test_a_clustered_contrast(self, gate: VerifiedBundle) -> None:
        """A clustered contrast is not planned: its test's df are set by the clusters."""
        said = _refusal(gate, _gate(_rate("clustered", _GATED, _RAW, cluster="scenario")))
        assert [(p.path, p.message) for p in said] == [
            (
                "$.contrasts.family[0].cluster",
                "contrast 'clustered' is clustered by 'scenario': its CR1 test's power needs the "
                "between-cluster variance and the number of clusters (its clusters - 1 df, "
                "which more runs do not raise), which power does not plan yet",
            )
        ]
