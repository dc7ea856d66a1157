"""Pre-registered contrasts: frozen with the protocol, refused when they do not fit its matrix,
decided from the runs by one derivation that verify applies again to the bundle's bytes, and
each statistic equal to SciPy's own computation."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SMALL, study_once
from forge import reseal
from repro._derive.contrasts import (
    bootstrap_p_value,
    contrasts,
    paired_bootstrap,
    paired_t,
    unpaired_bootstrap,
    welch_t,
)
from repro._derive.tally import Attempt, tally
from repro._derive.tiers import contract_digests
from repro._json.serde import structure, to_bytes
from repro._protocol.rules import check_consistency
from repro._stats.figures import same_figure
from repro._stats.inference import holm
from repro._stats.resampling import percentile_ends
from repro.errors import BadInput
from repro.models import Contrast, ContrastIntervalSpec, Group, Protocol
from repro.verify import open_verified, verify

#: CartPole and MountainCar x random and push-left: random beats push-left on CartPole, and
#: on MountainCar every episode of both is -200. One push-left CartPole slot is excluded.
CONTRASTED: dict[str, Any] = {
    **SMALL,
    "id": "contrasted",
    "runs_per_condition": 12,
    # One slot of a pair excluded: the pair is counted incomplete, never imputed.
    "exclusions": [{"slot": "c01-r0003", "reason": "a pair with one side missing"}],
    "contrasts": {
        "family": [
            {
                "id": "random-better",
                "a": {"participant": "random"},
                "b": {"participant": "push-left"},
                "primary": True,
            },
            {
                "id": "random-differs-on-cartpole",
                "a": {"participant": "random", "factors": {"env_id": "CartPole-v1"}},
                "b": {"participant": "push-left", "factors": {"env_id": "CartPole-v1"}},
                "direction": "two-sided",
                "pairing": "unpaired",
            },
            {
                "id": "push-left-not-worse",
                "a": {"participant": "push-left"},
                "b": {"participant": "random"},
                "direction": "non-inferiority",
                "margin": 0.5,
            },
        ]
    },
}


@pytest.fixture(scope="module")
def contrasted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real bundle of :data:`CONTRASTED`, made once; copy it before changing it."""
    return study_once(tmp_path_factory, "contrasted", CONTRASTED)


#: A small CartPole study whose contrasts take the seeded bootstrap (paired, unpaired,
#: non-inferiority), with the paired t of the same pairs beside them.
BOOTSTRAPPED = Path(__file__).resolve().parent / "data" / "bootstrap-contrasts.json"


@pytest.fixture(scope="module")
def bootstrapped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real bundle of :data:`BOOTSTRAPPED`, made once; copy it before changing it."""
    from conftest import run_study

    return run_study(BOOTSTRAPPED, tmp_path_factory.mktemp("bootstrapped") / "bundle")


def _contrast(**fields: Any) -> Contrast:
    return Contrast(
        id="c",
        a=Group(participant="a"),
        b=Group(participant="b"),
        **fields,
    )


class TestStatistics:
    """Each figure equals SciPy's own computation of the same test."""

    @settings(max_examples=60, deadline=None)
    @given(
        st.lists(
            st.tuples(st.floats(-1e3, 1e3, allow_nan=False), st.floats(-1e3, 1e3, allow_nan=False)),
            min_size=2,
            max_size=40,
        ),
        st.sampled_from(["superiority", "two-sided"]),
    )
    def test_paired_t_is_scipys_ttest_rel(
        self, pairs: list[tuple[float, float]], direction: str
    ) -> None:
        """Estimate, interval and p-value of the paired t equal scipy.stats.ttest_rel's (its
        one-sided 'greater' alternative for superiority) to 1e-12 relative."""
        from scipy import stats as sps

        a, b = [x for x, _ in pairs], [y for _, y in pairs]
        differences = [x - y for x, y in pairs]
        if len(set(differences)) < 2:
            return  # a zero standard error: SciPy gives NaN, repro a stated rule (below)
        d = paired_t(_contrast(direction=direction), differences)
        if d.se == 0:
            return  # the spread underflows (differences near 1e-170): the same stated rule
        alternative = "greater" if direction == "superiority" else "two-sided"
        reference = sps.ttest_rel(a, b, alternative=alternative)
        assert d.p_value == pytest.approx(float(reference.pvalue), rel=1e-12, abs=1e-300)
        assert d.statistic == pytest.approx(float(reference.statistic), rel=1e-12)
        ci = sps.ttest_rel(a, b).confidence_interval(0.95)
        assert d.interval is not None
        assert d.interval.low == pytest.approx(float(ci.low), rel=1e-12, abs=1e-12)
        assert d.interval.high == pytest.approx(float(ci.high), rel=1e-12, abs=1e-12)

    @settings(max_examples=60, deadline=None)
    @given(
        st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=2, max_size=30),
        st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=2, max_size=30),
    )
    def test_welch_t_is_scipys_ttest_ind(self, a: list[float], b: list[float]) -> None:
        """Welch's t (estimate, df, interval, two-sided p) equals
        scipy.stats.ttest_ind(equal_var=False)'s."""
        from scipy import stats as sps

        if len(set(a)) < 2 or len(set(b)) < 2:
            return
        d = welch_t(_contrast(direction="two-sided", pairing="unpaired"), a, b)
        if d.df is None or d.se == 0:
            return  # the spread underflows: the same stated rule
        reference = sps.ttest_ind(a, b, equal_var=False)
        assert d.p_value == pytest.approx(float(reference.pvalue), rel=1e-12, abs=1e-300)
        assert d.df == pytest.approx(float(reference.df), rel=1e-12)
        ci = reference.confidence_interval(0.95)
        assert d.interval is not None
        assert d.interval.low == pytest.approx(float(ci.low), rel=1e-12, abs=1e-12)
        assert d.interval.high == pytest.approx(float(ci.high), rel=1e-12, abs=1e-12)

    def test_lower_is_better_flips_the_difference(self) -> None:
        """With lower better, the difference is b - a: a lower a is a positive difference."""
        assert welch_t(_contrast(better="lower"), [1.0, 2.0], [3.0, 5.0]).estimate == 2.5
        assert welch_t(_contrast(better="higher"), [1.0, 2.0], [3.0, 5.0]).estimate == -2.5

    def test_zero_standard_error_has_a_stated_p_value(self) -> None:
        """Every difference equal: p is 0 beyond the null boundary in the claimed direction, 1
        otherwise; the statistic is undefined."""
        assert paired_t(_contrast(), [2.0, 2.0, 2.0]).p_value == 0.0
        assert paired_t(_contrast(), [0.0, 0.0]).p_value == 1.0
        assert paired_t(_contrast(), [-1.0, -1.0]).p_value == 1.0
        assert paired_t(_contrast(), [2.0, 2.0]).statistic is None
        ni = _contrast(direction="non-inferiority", margin=1.0)
        assert paired_t(ni, [-0.5, -0.5]).p_value == 0.0

    def test_fewer_than_two_is_undefined(self) -> None:
        """One pair estimates nothing: every figure is None."""
        d = paired_t(_contrast(), [1.0])
        assert (d.estimate, d.se, d.interval, d.p_value) == (None, None, None, None)

    @settings(max_examples=100, deadline=None)
    @given(st.lists(st.one_of(st.none(), st.floats(0.0, 1.0)), max_size=12), st.randoms())
    def test_holm_is_its_definition_and_order_free(
        self, p_values: list[float | None], rnd: random.Random
    ) -> None:
        """Holm's adjusted p-values equal the definition (max over j <= i of
        min(1, (m - j) p_(j))), None stays None, and they do not depend on the order the
        contrasts come in."""
        adjusted = holm(p_values)
        known = [p for p in p_values if p is not None]
        m = len(known)
        for p, adj in zip(p_values, adjusted, strict=True):
            if p is None:
                assert adj is None
                continue
            ranked = sorted(known)
            i = max(k for k, q in enumerate(ranked) if q == p)
            expected = max(min(1.0, (m - j) * ranked[j]) for j in range(i + 1))
            assert adj == expected
        order = list(range(len(p_values)))
        rnd.shuffle(order)
        shuffled = holm([p_values[i] for i in order])
        assert [shuffled[order.index(i)] for i in range(len(p_values))] == adjusted


def _assert_forgery_named(bundle: Path, tmp_path: Path, path: tuple[Any, ...], value: Any) -> None:
    """Edit contrasts.json of a copy of ``bundle`` at ``path`` to ``value``, regenerate both
    manifests, and assert that verify names the file as a re-derived value that differs."""
    from repro._json import canonical

    root = tmp_path / "forged"
    shutil.copytree(bundle, root)
    target = root / "data" / "contrasts.json"
    data = json.loads(target.read_bytes())
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    target.write_bytes(canonical.dumps(data))
    reseal(root)
    findings = verify(root)
    assert any(
        f.code == "rederived-differs" and f.file == "data/contrasts.json" for f in findings
    ), [f.as_dict() for f in findings]


@pytest.mark.slow
class TestTheBundle:
    """contrasts.json in a real study: written, decided as the runs say, re-derived by verify."""

    def test_verdicts(self, contrasted: Path) -> None:
        """The bundle verifies; random beats push-left on the CartPole and MountainCar pairs
        (MountainCar ties at -200 on both sides; the pair whose push-left slot is excluded is
        counted incomplete and left out), differs on CartPole alone (11 push-left runs), and
        push-left is shown worse than random by more than the margin."""
        assert verify(contrasted) == []
        decided = {c.id: c for c in open_verified(contrasted).contrasts.contrasts}
        better = decided["random-better"]
        assert (better.verdict, better.pairs, better.incomplete_pairs) == ("holds", 23, 1)
        assert better.a == ("c00", "c02") and better.b == ("c01", "c03")
        assert decided["random-differs-on-cartpole"].verdict == "holds"
        assert decided["random-differs-on-cartpole"].pairs is None
        assert (
            decided["random-differs-on-cartpole"].n_a,
            decided["random-differs-on-cartpole"].n_b,
        ) == (12, 11)
        assert decided["push-left-not-worse"].verdict == "does-not-hold"
        report = (contrasted / "data" / "validation-report.md").read_text("utf-8")
        assert "| random-better (primary) | superiority on measure, paired-t | **holds**" in report

    @settings(max_examples=10, deadline=None)
    @given(
        seed=st.integers(0, 2**32 - 1),
        which=st.sampled_from(["contrasted", "scored_bundle", "bootstrapped"]),
    )
    def test_every_figure_is_independent_of_the_order_runs_are_read(
        self, request: pytest.FixtureRequest, seed: int, which: str
    ) -> None:
        """The contrasts derived from the runs' records read in any order (measures, paired
        and unpaired, the gate example's rates, and bootstrap intervals, whose resamples are
        drawn from the sample in its canonical order) are the same bytes as the bundle's
        contrasts.json."""
        from repro._derive.derivation import scores
        from repro._derive.scenarios import by_condition

        root: Path = request.getfixturevalue(which)
        bundle = open_verified(root)
        partitions = list(bundle.partitions())
        records = list(bundle.all_records())
        random.Random(seed).shuffle(records)
        p = bundle.protocol.protocol
        runs = tally(
            partitions,
            (Attempt.of(r) for r in records),
            p.retry.max_attempts,
            contract_digests(bundle.ledger),
            by_condition(p, bundle.seal.conditions),
        )
        derived = contrasts(
            bundle.protocol, bundle.seal, runs, scores(bundle.protocol, bundle.seal, runs)
        )
        assert to_bytes(derived) == (root / "data" / "contrasts.json").read_bytes()

    @pytest.mark.parametrize(
        ("path", "value"),
        [
            (("contrasts", 0, "verdict"), "does-not-hold"),
            (("contrasts", 2, "verdict"), "holds"),
            (("contrasts", 0, "p_value"), 0.5),
            (("contrasts", 0, "p_adjusted"), 0.01),
            (("contrasts", 1, "interval", "low"), -1.0),
            (("contrasts", 0, "estimate"), 100.0),
        ],
    )
    def test_a_forged_figure_is_named(
        self, contrasted: Path, tmp_path: Path, path: tuple[Any, ...], value: Any
    ) -> None:
        """A verdict, p-value or interval edited in contrasts.json, with both manifests
        regenerated, is named by verify as a re-derived value that differs there."""
        _assert_forgery_named(contrasted, tmp_path, path, value)

    def test_contrasts_without_declared_contrasts_are_named(
        self, small_bundle: Path, contrasted: Path, tmp_path: Path
    ) -> None:
        """A contrasts.json in a bundle whose protocol declares none is named; one missing from
        a bundle whose protocol declares contrasts is named too."""
        root = tmp_path / "extra"
        shutil.copytree(small_bundle, root)
        shutil.copy(contrasted / "data" / "contrasts.json", root / "data" / "contrasts.json")
        reseal(root)
        assert "contrasts-without-contrasts" in {f.code for f in verify(root)}
        root = tmp_path / "missing"
        shutil.copytree(contrasted, root)
        (root / "data" / "contrasts.json").unlink()
        reseal(root)
        assert any(f.file == "data/contrasts.json" for f in verify(root))


def _protocol(contrasts: dict[str, Any]) -> Protocol:
    return structure({**SMALL, "contrasts": contrasts}, Protocol, what="protocol")


_A = {"participant": "random"}
_B = {"participant": "push-left"}


@pytest.mark.parametrize(
    ("family", "multiplicity", "expected", "path"),
    [
        (
            [{"id": "x", "a": {"factors": {"env_id": "Pong"}}, "b": _B}],
            "holm",
            "is not a level of factor 'env_id'",
            "$.contrasts.family[0].a.factors",
        ),
        (
            [{"id": "x", "a": {"factors": {"env": "x"}}, "b": _B}],
            "holm",
            "unknown factor 'env'",
            "$.contrasts.family[0].a.factors",
        ),
        (
            [{"id": "x", "a": _A, "b": {"participant": "nobody"}}],
            "holm",
            "unknown participant 'nobody'",
            "$.contrasts.family[0].b.participant",
        ),
        (
            [{"id": "x", "a": _A, "b": _A}],
            "holm",
            "groups overlap in c00, c02",
            "$.contrasts.family[0]",
        ),
        (
            [{"id": "x", "a": _A, "b": {"factors": {"env_id": "CartPole-v1"}}}],
            "holm",
            "groups overlap in c00",
            "$.contrasts.family[0]",
        ),
        (
            [
                {
                    "id": "x",
                    "a": {"participant": "random", "factors": {"env_id": "CartPole-v1"}},
                    "b": _B,
                }
            ],
            "holm",
            "cannot pair",
            "$.contrasts.family[0].pairing",
        ),
        (
            [{"id": "x", "a": _A, "b": _B, "direction": "non-inferiority"}],
            "holm",
            "needs a margin above 0",
            "$.contrasts.family[0].margin",
        ),
        (
            [{"id": "x", "a": _A, "b": _B, "margin": 1.0}],
            "holm",
            "a margin is for non-inferiority contrasts only",
            "$.contrasts.family[0].margin",
        ),
        (
            [{"id": "x", "a": _A, "b": _B}, {"id": "x", "a": _B, "b": _A}],
            "holm",
            "duplicate contrast id 'x'",
            "$.contrasts.family[1].id",
        ),
        (
            [{"id": "x", "a": _A, "b": _B}, {"id": "y", "a": _B, "b": _A, "level": 0.9}],
            "holm",
            "every contrast of the family takes the same level",
            "$.contrasts.family",
        ),
        (
            [{"id": "x", "a": _A, "b": _B}],
            "none",
            "only for a family of one contrast declared primary",
            "$.contrasts.multiplicity",
        ),
        (
            [{"id": "x", "a": _A, "b": _B, "primary": True}, {"id": "y", "a": _B, "b": _A}],
            "none",
            "only for a family of one contrast declared primary",
            "$.contrasts.multiplicity",
        ),
    ],
)
def test_inconsistent_contrasts_are_refused(
    family: list[dict[str, Any]], multiplicity: str, expected: str, path: str
) -> None:
    """Groups that name what the matrix does not have, match nothing, overlap or cannot pair, a
    margin where it does not belong or missing where it does, repeated IDs, levels that Holm
    cannot control together, and 'none' beyond one primary contrast are refused before
    anything is written, each with its JSON path."""
    with pytest.raises(BadInput) as caught:
        check_consistency(_protocol({"family": family, "multiplicity": multiplicity}))
    problems = caught.value.problems
    assert any(expected in p.message and p.path == path for p in problems), problems


def test_a_single_primary_contrast_may_go_without_multiplicity_control() -> None:
    """'none' is accepted for a family of one primary contrast, and Holm for any family."""
    check_consistency(
        _protocol(
            {"family": [{"id": "x", "a": _A, "b": _B, "primary": True}], "multiplicity": "none"}
        )
    )
    check_consistency(_protocol({"family": [{"id": "x", "a": _A, "b": _B}]}))


def test_protocols_without_contrasts_freeze_as_before() -> None:
    """A protocol without contrasts holds no contrasts key when frozen (its bytes and sha256
    are those of earlier versions), and its bundle has no contrasts.json."""
    from repro import _layout as layout
    from repro._protocol.freeze import freeze

    fp = freeze(structure(SMALL, Protocol, what="protocol"))
    assert "contrasts" not in json.loads(to_bytes(fp))["protocol"]
    assert layout.CONTRASTS not in layout.payload_files(fp, ["c00"])


@pytest.mark.slow
def test_show_prints_and_emits_the_contrasts(contrasted: Path) -> None:
    """repro show prints a contrasts table (each contrast with its verdict) after verifying,
    and --json holds contrasts.json's content under "contrasts" (null without contrasts)."""
    from typer.testing import CliRunner

    from repro._cli.app import app

    runner = CliRunner()
    shown = runner.invoke(app, ["show", str(contrasted)])
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert any(line.startswith("contrasts (a - b") or "contrasts (a - b" in line for line in lines)
    row = next(line for line in lines if "random-better *" in line)
    assert "holds" in row and "23 pairs (+1 incomplete)" in row
    emitted = runner.invoke(app, ["show", str(contrasted), "--json"])
    data = json.loads(emitted.stdout)
    stored = json.loads((contrasted / "data" / "contrasts.json").read_bytes())
    assert data["contrasts"] == stored


@pytest.mark.slow
class TestRatesAndClusters:
    """Contrasts of a check's or a category's rate (McNemar, Fisher) and clustered ones."""

    def test_the_shipped_gate_example(self, scored_bundle: Path) -> None:
        """protocols/agent-gate-eval.json's two pre-registered contrasts of the catch rate,
        paired by scenario, model and replicate: the counts add up to the pairs, the difference
        is (a_only - b_only) / pairs, the p-value is SciPy's one-sided binomial test of the
        discordant pairs, Holm adjusts the pair, and both hold."""
        from scipy import stats as sps

        verified = open_verified(scored_bundle)
        assert verified.contrasts is not None
        decided = {c.id: c for c in verified.contrasts.contrasts}
        assert set(decided) == {"gated-catches-more-than-raw", "gate-not-data-is-active"}
        p_values = []
        for c in decided.values():
            assert (c.outcome, c.test, c.verdict) == ("category:catch", "mcnemar-exact", "holds")
            counts = c.counts
            assert counts is not None and c.pairs is not None
            assert sum(counts.values()) == c.pairs == 48
            assert c.estimate == (counts["a_only"] - counts["b_only"]) / c.pairs
            discordant = counts["a_only"] + counts["b_only"]
            expected = sps.binomtest(counts["a_only"], discordant, 0.5, alternative="greater")
            assert c.p_value == pytest.approx(float(expected.pvalue), rel=1e-12)
            assert c.interval is not None and c.interval.method == "newcombe-paired-score"
            p_values.append(c.p_value)
        assert [c.p_adjusted for c in decided.values()] == holm(p_values)

    def test_clustered_and_lower_is_better(self, tmp_path: Path) -> None:
        """A paired contrast clustered by env_id gives repro._stats.inference's clustered
        paired difference of the same pairs; an unpaired one its clustered difference; with
        lower better every sign flips and so does the direction of the test."""
        from repro._stats import inference

        family = [
            {"id": "paired", "a": _A, "b": _B, "cluster": "env_id"},
            {"id": "unpaired", "a": _A, "b": _B, "cluster": "env_id", "pairing": "unpaired"},
            {"id": "lower", "a": _A, "b": _B, "cluster": "env_id", "better": "lower"},
        ]
        data = {**SMALL, "id": "clustered", "contrasts": {"family": family}}
        bundle = study_once_in(tmp_path, data)
        verified = open_verified(bundle)
        assert verify(bundle) == []
        assert verified.contrasts is not None
        decided = {c.id: c for c in verified.contrasts.contrasts}
        records = {r.slot: r for r in verified.all_records() if r.status == "valid"}
        pairs = []
        for env, (ca, cb) in {
            '"CartPole-v1"': ("c00", "c01"),
            '"MountainCar-v0"': ("c02", "c03"),
        }.items():
            for r in range(SMALL["runs_per_condition"]):
                a, b = records.get(f"{ca}-r{r:04d}"), records.get(f"{cb}-r{r:04d}")
                if a is not None and b is not None:
                    pairs.append((env, a.measure, b.measure))
        expected = inference.clustered_paired_difference(pairs, "greater", 0.95)
        got = decided["paired"]
        assert (got.test, got.clusters, got.se, got.p_value) == (
            "cluster-paired-t",
            2,
            expected.se,
            expected.p_value,
        )
        assert got.estimate == expected.difference
        runs = [(e, "A", a) for e, a, _ in pairs] + [(e, "B", b) for e, _, b in pairs]
        unpaired = inference.clustered_difference(runs, "greater", 0.95)
        assert (decided["unpaired"].test, decided["unpaired"].se) == ("cluster-t", unpaired.se)
        lower = decided["lower"]
        assert lower.estimate == -got.estimate
        flipped = inference.clustered_paired_difference(
            [(e, -a, -b) for e, a, b in pairs], "greater", 0.95
        )
        assert lower.p_value == flipped.p_value


def study_once_in(tmp_path: Path, data: dict[str, Any]) -> Path:
    """Run a protocol dict into a bundle under ``tmp_path``."""
    from conftest import run_study

    path = tmp_path / "protocol.json"
    path.write_text(json.dumps(data), "utf-8")
    return run_study(path, tmp_path / "bundle")


_SCORED = json.loads(
    (Path(__file__).resolve().parents[1] / "protocols" / "agent-gate-eval.json").read_text()
)


@pytest.mark.parametrize(
    ("contrast", "expected", "path"),
    [
        ({"check": "nope"}, "unknown check 'nope'", "$.contrasts.family[0].check"),
        ({"category": "nope"}, "unknown category 'nope'", "$.contrasts.family[0].category"),
        (
            {"check": "verdict", "category": "catch"},
            "a check or a category, not both",
            "$.contrasts.family[0]",
        ),
        (
            {"category": "catch", "direction": "non-inferiority", "margin": 0.1},
            "non-inferiority compares the measure only",
            "$.contrasts.family[0].direction",
        ),
        ({"cluster": "nope"}, "unknown factor 'nope'", "$.contrasts.family[0].cluster"),
        (
            {"cluster": "arm"},
            "clusters by a factor its groups do not name",
            "$.contrasts.family[0].cluster",
        ),
        (
            {"category": "catch", "cluster": "scenario"},
            "clusters are for the measure only",
            "$.contrasts.family[0].cluster",
        ),
    ],
)
def test_inconsistent_rate_and_cluster_contrasts_are_refused(
    contrast: dict[str, Any], expected: str, path: str
) -> None:
    """A check or category the scoring does not have, both at once, a non-inferiority margin on
    a rate, and a cluster that is no factor, is named by the groups, or is asked of a rate are
    refused with their JSON path."""
    from repro._protocol.load import strip_comments

    raw = strip_comments(_SCORED)
    raw["contrasts"] = {
        "family": [
            {
                "id": "x",
                "a": {"factors": {"arm": "gated"}},
                "b": {"factors": {"arm": "raw"}},
                **contrast,
            }
        ]
    }
    with pytest.raises(BadInput) as caught:
        check_consistency(structure(raw, Protocol, what="protocol"))
    problems = caught.value.problems
    assert any(expected in p.message and p.path == path for p in problems), problems


def test_a_rate_needs_scoring() -> None:
    """A check or a category in a protocol without scoring is refused."""
    with pytest.raises(BadInput) as caught:
        check_consistency(_protocol({"family": [{"id": "x", "a": _A, "b": _B, "check": "c"}]}))
    assert "checks and categories need the protocol's scoring @ $.contrasts.family[0]" in str(
        caught.value
    )


def test_an_inconsistent_contrast_put_in_a_bundle_is_named(
    contrasted: Path, tmp_path: Path
) -> None:
    """A bundle's protocol edited so that a contrast's groups overlap, both manifests
    regenerated: verify applies the contrasts' consistency rules to the bundle's protocol
    again, names it, and derives nothing from it."""
    from repro._json import canonical

    root = tmp_path / "forged"
    shutil.copytree(contrasted, root)
    target = root / "data" / "protocol.json"
    data = json.loads(target.read_bytes())
    family = data["protocol"]["contrasts"]["family"]
    family[0]["b"] = family[0]["a"]
    target.write_bytes(canonical.dumps(data))
    reseal(root)
    findings = verify(root)
    inconsistent = [f for f in findings if f.code == "protocol-inconsistent"]
    assert inconsistent and "@ $.contrasts.family[0]" in inconsistent[0].found
    assert not any(f.file == "data/contrasts.json" for f in findings)


def _bootstrap(resamples: int = 999, seed: int = 0, **fields: Any) -> Contrast:
    spec = ContrastIntervalSpec(method="bootstrap", resamples=resamples, seed=seed)
    return _contrast(interval=spec, **fields)


def _scipy_bootstrap(
    samples: list[list[float]], resamples: int, seed: int, level: float = 0.95
) -> Any:
    """SciPy's own percentile bootstrap of the mean (one sample) or of the difference of means
    (two), unbatched."""
    import numpy as np
    from scipy import stats as sps

    def statistic(*xs: Any, axis: int = -1) -> Any:
        means = [np.mean(x, axis=axis) for x in xs]
        return means[0] if len(means) == 1 else means[0] - means[1]

    return sps.bootstrap(
        [np.asarray(x, dtype=np.float64) for x in samples],
        statistic,
        n_resamples=resamples,
        confidence_level=level,
        method="percentile",
        rng=np.random.default_rng(seed),
    )


def _counted_p(replicates: list[float], null: float, two_sided: bool) -> float:
    """The bootstrap p-value by its definition, counted in plain Python."""
    below = 1 + sum(1 for x in replicates if x <= null)
    above = 1 + sum(1 for x in replicates if x >= null)
    b = len(replicates)
    return min(1.0, 2 * min(below, above) / (b + 1)) if two_sided else below / (b + 1)


_VALUES = st.floats(-1e3, 1e3, allow_nan=False)


def _same_ends(d: Any, reference: Any, level: float) -> None:
    """``d``'s interval is the linear percentiles of exactly SciPy's replicates, within the
    numeric policy's tolerance of SciPy's own ends; its standard error is SciPy's."""
    assert d.interval is not None
    ends = (d.interval.low, d.interval.high)
    assert ends == percentile_ends(reference.bootstrap_distribution, level)
    assert same_figure(float(reference.confidence_interval.low), d.interval.low)
    assert same_figure(float(reference.confidence_interval.high), d.interval.high)
    assert d.se == float(reference.standard_error)


class TestBootstrap:
    """A contrast's seeded bootstrap interval: SciPy's, with the p-value its rule states."""

    @settings(max_examples=40, deadline=None)
    @given(
        st.lists(_VALUES, min_size=2, max_size=40),
        st.integers(0, 2**63 - 1),
        st.sampled_from(["superiority", "two-sided", "non-inferiority"]),
        st.sampled_from([0.9, 0.95]),
    )
    def test_paired_is_scipys_bootstrap_of_the_differences(
        self, differences: list[float], seed: int, direction: str, level: float
    ) -> None:
        """The paired bootstrap draws exactly scipy.stats.bootstrap's replicates of the mean of
        the same differences with the same seed (repro's own draws): its interval is their
        linear percentiles, to the float, within the numeric policy's tolerance of SciPy's own
        ends; its standard error is SciPy's; its estimate is their fsum mean, and its p-value
        is the rule counted on SciPy's replicates."""
        import math

        margin = 2.0 if direction == "non-inferiority" else 0.0
        contrast = _bootstrap(1999, seed, direction=direction, margin=margin, level=level)
        d = paired_bootstrap(contrast, differences)
        reference = _scipy_bootstrap([differences], 1999, seed, level)
        assert d.interval is not None
        assert (d.interval.method, d.interval.level) == ("percentile-bootstrap", level)
        _same_ends(d, reference, level)
        assert d.estimate == math.fsum(differences) / len(differences)
        replicates = [float(x) for x in reference.bootstrap_distribution]
        assert d.p_value == _counted_p(replicates, -margin, direction == "two-sided")
        assert (d.test, d.df, d.statistic) == ("paired-bootstrap", None, None)

    @settings(max_examples=40, deadline=None)
    @given(
        st.lists(_VALUES, min_size=2, max_size=30),
        st.lists(_VALUES, min_size=2, max_size=30),
        st.integers(0, 2**63 - 1),
        st.sampled_from(["higher", "lower"]),
    )
    def test_unpaired_is_scipys_bootstrap_of_each_group(
        self, a: list[float], b: list[float], seed: int, better: str
    ) -> None:
        """The unpaired bootstrap resamples each group on its own: its replicates are exactly
        scipy.stats.bootstrap's of the difference of the means of the signed groups (negated
        where lower is better) with the same seed, its interval and standard error as in the
        paired case, and its estimate is Welch's t's, bit for bit."""
        contrast = _bootstrap(999, seed, direction="two-sided", pairing="unpaired", better=better)
        d = unpaired_bootstrap(contrast, a, b)
        sign = 1.0 if better == "higher" else -1.0
        reference = _scipy_bootstrap([[sign * x for x in a], [sign * x for x in b]], 999, seed)
        _same_ends(d, reference, 0.95)
        replicates = [float(x) for x in reference.bootstrap_distribution]
        assert d.p_value == _counted_p(replicates, 0.0, True)
        t = welch_t(_contrast(direction="two-sided", pairing="unpaired", better=better), a, b)
        assert d.estimate == t.estimate
        assert d.test == "unpaired-bootstrap"

    def test_batches_change_nothing(self) -> None:
        """A sample large enough that the resamples are drawn in two batches (6000 values:
        699 resamples a batch, memory bounded) gives exactly SciPy's unbatched bootstrap's
        replicates."""
        import random as stdlib_random

        rnd = stdlib_random.Random(5)
        differences = [rnd.gauss(1.0, 3.0) for _ in range(6000)]
        d = paired_bootstrap(_bootstrap(999, 42), differences)
        reference = _scipy_bootstrap([differences], 999, 42)
        _same_ends(d, reference, 0.95)

    @pytest.mark.parametrize(
        ("replicates", "fields", "expected"),
        [
            # superiority: 2 of 4 at or below 0 -> (1 + 2) / 5
            ([-1.0, 0.0, 1.0, 2.0], {}, 0.6),
            # every replicate above 0: the smallest p-value, 1 / (B + 1)
            ([1.0, 1.0, 1.0], {}, 0.25),
            # every replicate at 0: at the boundary counts as the null's side
            ([0.0, 0.0, 0.0], {}, 1.0),
            # non-inferiority, margin 1: the boundary is -1, two of four at or below it
            ([-2.0, -1.0, 0.0, 3.0], {"direction": "non-inferiority", "margin": 1.0}, 0.6),
            ([-0.5, 0.0, 3.0, 4.0], {"direction": "non-inferiority", "margin": 1.0}, 0.2),
            # two-sided: twice the smaller side, (1 + 0) and (1 + 4) of 5 -> 0.4
            ([1.0, 2.0, 3.0, 4.0], {"direction": "two-sided"}, 0.4),
            ([-4.0, -3.0, -2.0, -1.0], {"direction": "two-sided"}, 0.4),
            # two-sided, capped: 2 * (1 + 2) / 5 = 1.2 -> 1
            ([-1.0, 0.0, 1.0, 2.0], {"direction": "two-sided"}, 1.0),
        ],
    )
    def test_the_p_value_rule_on_hand_cases(
        self, replicates: list[float], fields: dict[str, Any], expected: float
    ) -> None:
        """(1 + replicates at or beyond the null boundary on the null's side) / (B + 1),
        one-sided as the direction says; two-sided twice the smaller side, at most 1."""
        assert bootstrap_p_value(_contrast(**fields), replicates) == pytest.approx(
            expected, rel=1e-15
        )

    @settings(max_examples=40, deadline=None)
    @given(
        st.lists(st.floats(-5.0, 5.0, allow_nan=False), min_size=2, max_size=25),
        st.integers(0, 2**32 - 1),
        st.sampled_from(["superiority", "two-sided"]),
    )
    def test_a_small_p_value_puts_the_interval_past_the_boundary(
        self, differences: list[float], seed: int, direction: str
    ) -> None:
        """As the module's rule 3 states: a two-sided p-value below 1 - level, or a one-sided
        one below (1 - level) / 2, comes with an interval strictly past 0."""
        d = paired_bootstrap(_bootstrap(999, seed, direction=direction), differences)
        assert d.p_value is not None and d.interval is not None
        alpha = 1 - 0.95
        if direction == "two-sided" and d.p_value < alpha:
            assert d.interval.low > 0 or d.interval.high < 0
        if direction == "superiority" and d.p_value < alpha / 2:
            assert d.interval.low > 0

    def test_fewer_than_two_is_undefined(self) -> None:
        """One pair, or one run on a side, estimates nothing: every figure is None, and the
        test is still named."""
        d = paired_bootstrap(_bootstrap(), [1.0])
        assert (d.estimate, d.se, d.interval, d.p_value, d.test) == (
            None,
            None,
            None,
            None,
            "paired-bootstrap",
        )
        u = unpaired_bootstrap(_bootstrap(pairing="unpaired"), [1.0, 2.0], [3.0])
        assert (u.estimate, u.interval, u.test) == (None, None, "unpaired-bootstrap")

    @pytest.mark.slow
    def test_the_bundle(self, bootstrapped: Path) -> None:
        """The bundle verifies; each bootstrap contrast names its test and interval method,
        its estimate is the paired t's of the same pairs, its interval is exactly SciPy's
        bootstrap of the pairs' differences in sealed order (replicates 0.., the excluded
        slot's pair left out) with the declared seed, and the verdicts are as the runs say."""
        assert verify(bootstrapped) == []
        verified = open_verified(bootstrapped)
        assert verified.contrasts is not None
        decided = {c.id: c for c in verified.contrasts.contrasts}
        boot, t = decided["random-better-bootstrap"], decided["random-better-t"]
        assert (boot.test, t.test) == ("paired-bootstrap", "paired-t")
        assert (boot.pairs, boot.incomplete_pairs) == (t.pairs, t.incomplete_pairs) == (11, 1)
        assert boot.estimate == t.estimate
        records = {r.slot: r for r in verified.all_records() if r.status == "valid"}
        differences = []
        for r in range(12):
            a, b = records.get(f"c00-r{r:04d}"), records.get(f"c01-r{r:04d}")
            if a is not None and b is not None:
                assert a.measure is not None and b.measure is not None
                differences.append(a.measure - b.measure)
        reference = _scipy_bootstrap([differences], 9999, 7)
        assert boot.interval is not None and boot.interval.method == "percentile-bootstrap"
        assert boot.interval.low == float(reference.confidence_interval.low)
        assert boot.interval.high == float(reference.confidence_interval.high)
        assert boot.p_value == _counted_p(
            [float(x) for x in reference.bootstrap_distribution], 0.0, False
        )
        assert boot.verdict == "holds"
        unpaired = decided["random-differs-unpaired-bootstrap"]
        assert (unpaired.test, unpaired.verdict, unpaired.n_a, unpaired.n_b) == (
            "unpaired-bootstrap",
            "holds",
            12,
            11,
        )
        assert decided["push-left-not-worse-bootstrap"].verdict == "does-not-hold"
        report = (bootstrapped / "data" / "validation-report.md").read_text("utf-8")
        assert "| random-better-bootstrap (primary) | superiority on measure, paired-bootstrap" in (
            report
        )

    @pytest.mark.parametrize(
        ("index", "key", "value"),
        [
            (0, ("interval", "low"), 0.0),
            (0, ("interval", "high"), 1000.0),
            (0, ("interval", "method"), "t"),
            (1, ("p_value",), 0.5),
            (0, ("se",), 1.0),
            (0, ("test",), "paired-t"),
        ],
    )
    def test_a_forged_bootstrap_figure_is_named(
        self, bootstrapped: Path, tmp_path: Path, index: int, key: tuple[str, ...], value: Any
    ) -> None:
        """A bootstrap contrast's interval, method, p-value, standard error or test edited in
        contrasts.json, both manifests regenerated, is named by verify as a re-derived value
        that differs."""
        _assert_forgery_named(bootstrapped, tmp_path, ("contrasts", index, *key), value)

    def test_resamples_past_verify_s_limit_are_named(self, bootstrapped: Path) -> None:
        """A contrast asking for more bootstrap resamples than verify's max_resamples is named
        with its JSON path and nothing is re-derived; within the limit the bundle verifies."""
        from repro.verify import Limits

        findings = verify(bootstrapped, Limits(max_resamples=5000))
        assert [(f.code, f.expected, f.found) for f in findings] == [
            ("resamples-limit", "<= 5000", "9999")
        ]
        assert "$.protocol.contrasts.family[0].interval.resamples" in findings[0].what
        assert verify(bootstrapped, Limits(max_resamples=9999)) == []


def test_a_contrast_without_interval_freezes_as_before() -> None:
    """A contrast that declares no interval holds no interval key when frozen, so protocols
    from before the option keep their bytes and digest."""
    from repro._protocol.freeze import freeze

    fp = freeze(structure(CONTRASTED, Protocol, what="protocol"))
    family = json.loads(to_bytes(fp))["protocol"]["contrasts"]["family"]
    assert all("interval" not in c for c in family)


_BOOT = {"method": "bootstrap", "resamples": 9999, "seed": 7}


@pytest.mark.parametrize(
    ("interval", "fields", "expected", "path"),
    [
        ({"method": "bootstrap", "seed": 7}, {}, "needs its resamples", "interval.resamples"),
        ({"method": "bootstrap", "resamples": 9999}, {}, "needs its seed", "interval.seed"),
        (
            {"method": "bootstrap", "resamples": 998, "seed": 7},
            {},
            "resamples must be between 999 and 100000, not 998",
            "interval.resamples",
        ),
        (
            {"method": "bootstrap", "resamples": 100_001, "seed": 7},
            {},
            "resamples must be between 999 and 100000",
            "interval.resamples",
        ),
        (
            {"method": "bootstrap", "resamples": 9999, "seed": -1},
            {},
            "seed must be in [0, 2**63)",
            "interval.seed",
        ),
        (
            {"method": "bootstrap", "resamples": 9999, "seed": 1.5},
            {},
            "expected an integer",
            "interval.seed",
        ),
        (
            {"method": "bootstrap", "resamples": 9999, "seed": True},
            {},
            "expected an integer",
            "interval.seed",
        ),
        ({"method": "t", "seed": 7}, {}, "seed is for a bootstrap interval only", "interval.seed"),
        (
            {"method": "t", "resamples": 9999},
            {},
            "resamples is for a bootstrap interval only",
            "interval.resamples",
        ),
        ({"method": "jackknife"}, {}, 'expected one of "t", "bootstrap"', "interval.method"),
        (_BOOT, {"cluster": "env_id"}, "its cluster-robust t", "interval.method"),
        (
            {"method": "bootstrap", "resamples": 999, "seed": 7},
            {"level": 0.999, "direction": "two-sided"},
            "the smallest p-value of 999 resamples, 0.002, times 1 contrast(s) is not below",
            "interval.resamples",
        ),
    ],
)
def test_inconsistent_bootstrap_intervals_are_refused(
    interval: dict[str, Any], fields: dict[str, Any], expected: str, path: str
) -> None:
    """A bootstrap without its resamples or seed, too few or too many resamples, a seed that is
    no non-negative integer, a t given a seed or resamples, an unknown method, a bootstrap of
    a clustered contrast, and one whose smallest p-value cannot be below 1 - level are refused,
    each with its JSON path."""
    contrast = {"id": "x", "a": _A, "b": _B, "interval": interval, **fields}
    with pytest.raises(BadInput) as caught:
        check_consistency(_protocol({"family": [contrast]}))
    problems = caught.value.problems
    where = f"$.contrasts.family[0].{path}"
    assert any(expected in p.message and p.path == where for p in problems), problems


def test_a_family_too_large_for_its_bootstrap_is_refused() -> None:
    """Holm multiplies the smallest p-value by the family's size: 999 resamples (two-sided p
    at least 0.002) in a family of 26 two-sided contrasts can never hold (0.052 is not below
    0.05) and are refused; in a family of 24 (0.048) they can and are accepted."""

    def family(size: int) -> dict[str, Any]:
        spec = {"method": "bootstrap", "resamples": 999, "seed": 7}
        return {
            "family": [
                {"id": f"c{i}", "a": _A, "b": _B, "direction": "two-sided", "interval": spec}
                for i in range(size)
            ]
        }

    check_consistency(_protocol(family(24)))
    with pytest.raises(BadInput) as caught:
        check_consistency(_protocol(family(26)))
    assert "times 26 contrast(s) is not below 1 - level (0.05)" in str(caught.value)
    assert "@ $.contrasts.family[25].interval.resamples" in str(caught.value)


@pytest.mark.parametrize(
    ("interval", "expected"),
    [
        (_BOOT, "a bootstrap interval is for the measure only"),
        ({"method": "t"}, "a rate's interval is Newcombe's score interval"),
    ],
)
def test_an_interval_on_a_rate_is_refused(interval: dict[str, Any], expected: str) -> None:
    """A check's or a category's rate takes its exact test and score interval: a bootstrap or
    a t declared for it is refused with its JSON path."""
    from repro._protocol.load import strip_comments

    raw = strip_comments(_SCORED)
    raw["contrasts"] = {
        "family": [
            {
                "id": "x",
                "a": {"factors": {"arm": "gated"}},
                "b": {"factors": {"arm": "raw"}},
                "category": "catch",
                "interval": interval,
            }
        ]
    }
    with pytest.raises(BadInput) as caught:
        check_consistency(structure(raw, Protocol, what="protocol"))
    problems = caught.value.problems
    where = "$.contrasts.family[0].interval.method"
    assert any(expected in p.message and p.path == where for p in problems), problems


def test_a_refused_bootstrap_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    """repro study of a protocol whose bootstrap contrast has too few resamples exits 2 with
    the JSON path, and writes no bundle."""
    from typer.testing import CliRunner

    from repro._cli.app import app

    data = json.loads(BOOTSTRAPPED.read_text("utf-8"))
    data["contrasts"]["family"][0]["interval"]["resamples"] = 100
    path = tmp_path / "protocol.json"
    path.write_text(json.dumps(data), "utf-8")
    out = tmp_path / "bundle"
    result = CliRunner().invoke(app, ["study", str(path), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "@ $.contrasts.family[0].interval.resamples" in result.stderr
    assert not out.exists()
