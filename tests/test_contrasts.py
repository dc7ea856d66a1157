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
from repro.derive.contrasts import contrasts, holm, paired_t, welch_t
from repro.derive.tally import Attempt, tally
from repro.derive.tiers import contract_digests
from repro.errors import BadInput
from repro.json.serde import structure, to_bytes
from repro.models import Contrast, Group, Protocol
from repro.protocol.rules import check_consistency
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
    @given(seed=st.integers(0, 2**32 - 1), which=st.sampled_from(["contrasted", "scored_bundle"]))
    def test_every_figure_is_independent_of_the_order_runs_are_read(
        self, request: pytest.FixtureRequest, seed: int, which: str
    ) -> None:
        """The contrasts derived from the runs' records read in any order (measures, paired
        and unpaired, and the gate example's rates) are the same bytes as the bundle's
        contrasts.json."""
        from repro.derive.derivation import scores
        from repro.derive.scenarios import by_condition

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
        root = tmp_path / "forged"
        shutil.copytree(contrasted, root)
        target = root / "data" / "contrasts.json"
        data = json.loads(target.read_bytes())
        node = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        from repro.json import canonical

        target.write_bytes(canonical.dumps(data))
        reseal(root)
        findings = verify(root)
        assert any(
            f.code == "rederived-differs" and f.file == "data/contrasts.json" for f in findings
        ), [f.as_dict() for f in findings]

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
    problems = str(caught.value).removeprefix("protocol: ").split("; ")
    assert any(expected in p and p.endswith(f"@ {path}") for p in problems), problems


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
    from repro.bundle import layout
    from repro.protocol.freeze import freeze

    fp = freeze(structure(SMALL, Protocol, what="protocol"))
    assert "contrasts" not in json.loads(to_bytes(fp))["protocol"]
    assert layout.CONTRASTS not in layout.payload_files(fp, ["c00"])


def test_show_prints_and_emits_the_contrasts(contrasted: Path) -> None:
    """repro show prints a contrasts table (each contrast with its verdict) after verifying,
    and --json holds contrasts.json's content under "contrasts" (null without contrasts)."""
    from typer.testing import CliRunner

    from repro.cli.app import app

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
        """A paired contrast clustered by env_id gives repro.derive.inference's clustered
        paired difference of the same pairs; an unpaired one its clustered difference; with
        lower better every sign flips and so does the direction of the test."""
        from repro.derive import inference

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
    from repro.protocol.load import strip_comments

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
    problems = str(caught.value).removeprefix("protocol: ").split("; ")
    assert any(expected in p and p.endswith(f"@ {path}") for p in problems), problems


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
    from repro.json import canonical

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
