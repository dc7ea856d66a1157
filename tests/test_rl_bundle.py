"""rl-aggregates.json: rliable's aggregates declared in the protocol's ``rl`` section, refused at
freeze when the section does not fit the matrix, derived from the runs by one derivation that
verify applies again to the bundle's bytes, shown by ``repro show``, and each figure of the
shipped example equal to rliable's own on the scores read back from the bundle."""

from __future__ import annotations

import json
import math
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, SMALL, run_study, study_once
from forge import reseal
from htmlpage import check_figures, expected_rl, parse
from repro import _layout as layout
from repro._derive.rl_aggregates import rl_aggregates, scale_of, score_matrix
from repro._derive.tally import Attempt, tally
from repro._derive.tiers import contract_digests
from repro._json import canonical
from repro._json.serde import structure, to_bytes
from repro._protocol.rules import check_consistency
from repro._stats import rl
from repro.errors import BadInput
from repro.models import RL, Condition, Protocol, RLTaskScale
from repro.verify import Limits, open_verified, verify

EXAMPLE = ROOT / "protocols" / "gymnasium-rl-aggregates.json"

#: CartPole and MountainCar x random and push-left, normalised; one push-left CartPole slot is
#: excluded, so push-left has one incomplete replicate. The default sampler, 200 resamples.
RL_SMALL: dict[str, Any] = {
    **SMALL,
    "id": "rl-small",
    "runs_per_condition": 6,
    "exclusions": [{"slot": "c01-r0002", "reason": "a replicate left incomplete"}],
    "rl": {
        "task_factor": "env_id",
        "normalization": [
            {"task": "CartPole-v1", "low": 0.0, "high": 500.0},
            {"task": "MountainCar-v0", "low": -200.0, "high": 0.0},
        ],
        "bootstrap": {"resamples": 200, "seed": 5},
        "improvements": [
            {"x": "random", "y": "push-left"},
            {"x": "push-left", "y": "random"},
        ],
        "taus": [0.0, 0.02, 0.05],
    },
}


@pytest.fixture(scope="module")
def rl_small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real bundle of :data:`RL_SMALL`, made once; copy it before changing it."""
    return study_once(tmp_path_factory, "rl-small", RL_SMALL)


@pytest.fixture(scope="module")
def rl_example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real bundle of protocols/gymnasium-rl-aggregates.json, made once."""
    return run_study(EXAMPLE, tmp_path_factory.mktemp("rl-example") / "bundle")


def _stored(bundle: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((bundle / layout.RL_AGGREGATES).read_bytes())
    return data


def _matrices(bundle: Path) -> dict[str, np.ndarray]:
    """Each participant's (runs x tasks) score matrix, read back from the bundle with no part of
    the derivation: the valid records' measures by condition and replicate, normalised as the
    protocol says (every bundle here normalises), the replicates valid on every task, in
    replicate order."""
    verified = open_verified(bundle)
    p = verified.protocol.protocol
    assert p.rl is not None
    tasks = next(f.levels for f in p.matrix if f.name == p.rl.task_factor)
    scales = {s.task: (s.low, s.high) for s in p.rl.normalization}
    measures: dict[tuple[str, int], float] = {}
    for r in verified.all_records():
        if r.status == "valid" and r.measure is not None:
            measures[(r.condition, int(r.slot.rsplit("-r", 1)[1]))] = r.measure
    out = {}
    for q in p.participants:
        of = {
            c.factors[p.rl.task_factor]: c.id
            for c in verified.seal.conditions
            if c.participant == q.id
        }
        rows = [
            [(measures[(of[t], r)] - scales[t][0]) / (scales[t][1] - scales[t][0]) for t in tasks]
            for r in range(p.runs_per_condition)
            if all((of[t], r) in measures for t in tasks)
        ]
        out[q.id] = np.array(rows, dtype=np.float64)
    return out


def _global_seed(seed: int, call: Callable[[], Any]) -> Any:
    """rliable's call after np.random.seed(seed), leaving the global generator as it was."""
    saved = np.random.get_state()
    try:
        np.random.seed(seed)
        return call()
    finally:
        np.random.set_state(saved)


def _close(ours: float, theirs: Any) -> bool:
    """Agreement to 1e-12: NumPy's pairwise sums against math.fsum."""
    return math.isclose(ours, float(theirs), rel_tol=1e-12, abs_tol=1e-12)


def figures_are_rliables(stored: dict[str, Any], scores: dict[str, np.ndarray]) -> None:
    """Every figure of ``stored`` (an rl-aggregates.json) is what rliable 1.2.0's own functions
    give on ``scores`` (each participant's runs x tasks matrix): every interval exactly (the
    rliable sampler, after np.random.seed(seed)), the aggregates' (get_interval_estimates), the
    improvements' (get_interval_estimates of probability_of_improvement) and the profiles'
    (create_performance_profile); the point estimates to 1e-12 (NumPy's pairwise sums against
    math.fsum) and the profiles exactly; each participant with all its runs, none incomplete."""
    from rliable import library as rly
    from rliable import metrics

    assert stored["sampler"] == "rliable"
    seed, reps, level = stored["seed"], stored["resamples"], stored["level"]
    aggregates = {
        "median": metrics.aggregate_median,
        "iqm": metrics.aggregate_iqm,
        "mean": metrics.aggregate_mean,
        "optimality-gap": metrics.aggregate_optimality_gap,
    }
    asked = [s["statistic"] for s in stored["participants"][0]["statistics"]]

    def func(x: np.ndarray) -> np.ndarray:
        return np.array([aggregates[name](x) for name in asked])

    points, intervals = _global_seed(
        seed,
        lambda: rly.get_interval_estimates(scores, func, reps=reps, confidence_interval_size=level),
    )
    taus = [p["tau"] for p in stored["participants"][0]["profile"]]
    profiles, profile_cis = _global_seed(
        seed,
        lambda: rly.create_performance_profile(
            scores, taus, reps=reps, confidence_interval_size=level
        ),
    )
    assert {q["participant"] for q in stored["participants"]} == set(scores)
    for q in stored["participants"]:
        key = q["participant"]
        assert (q["runs"], q["incomplete"]) == (len(scores[key]), 0)
        for i, s in enumerate(q["statistics"]):
            assert _close(s["value"], points[key][i]), (key, s)
            assert [s["low"], s["high"]] == intervals[key][:, i].tolist(), (key, s)
        assert [p["value"] for p in q["profile"]] == profiles[key].tolist()
        assert [[p["low"] for p in q["profile"]], [p["high"] for p in q["profile"]]] == (
            profile_cis[key].tolist()
        )
    pairs = {f"{d['x']} > {d['y']}": d for d in stored["improvements"]}
    duels, duel_cis = _global_seed(
        seed,
        lambda: rly.get_interval_estimates(
            {k: (scores[d["x"]], scores[d["y"]]) for k, d in pairs.items()},
            metrics.probability_of_improvement,
            reps=reps,
            confidence_interval_size=level,
        ),
    )
    for k, d in pairs.items():
        assert _close(d["value"], duels[k]), (k, d)
        assert [d["low"], d["high"]] == duel_cis[k][:, 0].tolist(), (k, d)
        assert (d["runs_x"], d["runs_y"]) == (len(scores[d["x"]]), len(scores[d["y"]]))


@pytest.mark.slow
class TestTheExample:
    """protocols/gymnasium-rl-aggregates.json, run end to end, against rliable 1.2.0."""

    def test_every_figure_is_rliables(self, rl_example: Path) -> None:
        """The bundle verifies; on the scores read back from its run records, rliable's own
        functions give every interval of rl-aggregates.json exactly (the rliable sampler, after
        np.random.seed(seed)): the four aggregates' (get_interval_estimates), the improvements'
        (get_interval_estimates of probability_of_improvement) and the profiles'
        (create_performance_profile); the point estimates equal rliable's metrics to 1e-12 and
        the profiles exactly."""
        assert verify(rl_example) == []
        scores = _matrices(rl_example)
        assert {k: v.shape for k, v in scores.items()} == {k: (10, 3) for k in scores}
        figures_are_rliables(_stored(rl_example), scores)
        assert all(q["valid"] == [10, 10, 10] for q in _stored(rl_example)["participants"])

    def test_the_hand_written_policy_beats_the_baselines(self, rl_example: Path) -> None:
        """The figures of these seeded runs: each setting of the pushing policy has a higher
        IQM than either baseline, the one with fewer random actions the highest, and both are
        more likely than not to improve on what they are compared with."""
        stored = _stored(rl_example)
        iqm = {
            q["participant"]: next(s["value"] for s in q["statistics"] if s["statistic"] == "iqm")
            for q in stored["participants"]
        }
        assert iqm["pump-0.1"] > iqm["pump-0.3"] > max(iqm["random"], iqm["action-0"])
        duels = {(d["x"], d["y"]): d for d in stored["improvements"]}
        assert duels[("pump-0.1", "pump-0.3")]["low"] > 0.5
        assert duels[("pump-0.3", "random")]["value"] == 1.0


class TestTheScoreMatrix:
    """The rule that makes rliable's (runs x tasks) matrix of the runs."""

    @pytest.mark.slow
    def test_incomplete_replicates_are_counted_never_imputed(self, rl_small: Path) -> None:
        """push-left's excluded CartPole slot leaves its replicate 2 out on both tasks: 5
        complete replicates and 1 incomplete (6 valid MountainCar runs, 5 CartPole); every
        figure is then repro._stats.rl's of the matrices read back from the bundle, bit for
        bit, and the improvements compare 6 runs with 5."""
        assert verify(rl_small) == []
        stored = _stored(rl_small)
        by = {q["participant"]: q for q in stored["participants"]}
        assert (by["random"]["runs"], by["random"]["incomplete"]) == (6, 0)
        assert (by["push-left"]["runs"], by["push-left"]["incomplete"]) == (5, 1)
        assert by["push-left"]["valid"] == [5, 6]
        assert by["push-left"]["conditions"] == ["c01", "c03"]
        scores = _matrices(rl_small)
        assert scores["push-left"].shape == (5, 2)
        found = rl.aggregate_estimates_by_algorithm(scores, seed=5, reps=200)
        for key, estimates in found.items():
            expected = {
                "median": estimates.median,
                "iqm": estimates.iqm,
                "mean": estimates.mean,
                "optimality-gap": estimates.optimality_gap,
            }
            for s in by[key]["statistics"]:
                e = expected[s["statistic"]]
                assert e.interval is not None
                assert (s["value"], s["low"], s["high"]) == (
                    e.value,
                    e.interval.low,
                    e.interval.high,
                )
        duels = rl.improvement_estimates(
            {
                "a": (scores["random"], scores["push-left"]),
                "b": (scores["push-left"], scores["random"]),
            },
            seed=5,
            reps=200,
        )
        for d, e in zip(stored["improvements"], duels.values(), strict=True):
            assert e.interval is not None
            assert (d["value"], d["low"], d["high"]) == (e.value, e.interval.low, e.interval.high)
        assert [(d["runs_x"], d["runs_y"]) for d in stored["improvements"]] == [(6, 5), (5, 6)]
        profiles = rl.profile_estimates_by_algorithm(scores, [0.0, 0.02, 0.05], seed=5, reps=200)
        for key, points in profiles.items():
            assert [p["value"] for p in by[key]["profile"]] == [e.value for e in points]

    def test_the_rule_on_its_own(self) -> None:
        """Rows are the replicates valid on every task, in replicate order, each score scaled
        by its task; a replicate missing on any task is left out whole and counted."""
        conditions = [
            Condition(id="c00", factors={"env": "a"}, participant="p"),
            Condition(id="c01", factors={"env": "b"}, participant="p"),
        ]
        values = {"c00": {0: 10.0, 1: 20.0, 3: 40.0}, "c01": {0: -1.0, 2: -3.0, 3: -4.0}}
        spec = RL(
            task_factor="env",
            normalization=(RLTaskScale("a", 0.0, 100.0), RLTaskScale("b", -5.0, 0.0)),
        )
        scales = [scale_of(spec, "a"), scale_of(spec, "b")]
        m = score_matrix(conditions, lambda c: dict(values[c.id]), 5, scales)
        assert m.rows == ((0.1, 0.8), (0.4, 0.2))
        assert (m.replicates, m.valid, m.incomplete) == ((0, 3), (3, 3), 3)
        raw = score_matrix(conditions, lambda c: dict(values[c.id]), 4, [float, float])
        assert raw.rows == ((10.0, -1.0), (40.0, -4.0))

    def test_the_section_s_settings_reach_rliable_s_functions(self, rl_small: Path) -> None:
        """Derived again under other settings (some statistics in another order, gamma, task
        mean profiles, the rliable sampler, another seed and level), every figure is what
        repro._stats.rl gives for those settings on the matrices read back from the bundle."""
        import attrs

        bundle = open_verified(rl_small)
        fp = bundle.protocol
        assert fp.protocol.rl is not None
        spec = attrs.evolve(
            fp.protocol.rl,
            statistics=("optimality-gap", "median"),
            gamma=0.01,
            distribution="tasks",
            bootstrap=attrs.evolve(fp.protocol.rl.bootstrap, sampler="rliable", seed=9, level=0.9),
        )
        changed = attrs.evolve(fp, protocol=attrs.evolve(fp.protocol, rl=spec))
        p = fp.protocol
        runs = tally(
            list(bundle.partitions()),
            (Attempt.of(r) for r in bundle.all_records()),
            p.retry.max_attempts,
            contract_digests(bundle.ledger),
        )
        derived = rl_aggregates(changed, bundle.seal, runs)
        assert derived is not None
        assert (derived.sampler, derived.seed, derived.level, derived.gamma) == (
            "rliable",
            9,
            0.9,
            0.01,
        )
        scores = _matrices(rl_small)
        common: dict[str, Any] = {"seed": 9, "reps": 200, "level": 0.9, "sampler": "rliable"}
        found = rl.aggregate_estimates_by_algorithm(scores, gamma=0.01, **common)
        profiles = rl.profile_estimates_by_algorithm(
            scores, p.rl.taus if p.rl else (), distribution="tasks", **common
        )
        for q in derived.participants:
            e = found[q.participant]
            assert [s.statistic for s in q.statistics] == ["optimality-gap", "median"]
            for s, expected in zip(q.statistics, (e.optimality_gap, e.median), strict=True):
                assert expected.interval is not None
                assert (s.value, s.low, s.high) == (
                    expected.value,
                    expected.interval.low,
                    expected.interval.high,
                )
            assert [(x.value, x.low, x.high) for x in q.profile] == [
                (
                    y.value,
                    y.interval.low if y.interval else None,
                    y.interval.high if y.interval else None,
                )
                for y in profiles[q.participant]
            ]

    @pytest.mark.slow
    def test_no_complete_replicate_has_no_figure(self, tmp_path: Path) -> None:
        """A participant whose every replicate misses a task has null figures, never NaN or
        an imputed value, and the bundle verifies."""
        excluded = [{"slot": f"c03-r{r:04d}", "reason": "none complete"} for r in range(3)]
        data = {**RL_SMALL, "id": "rl-none", "runs_per_condition": 3, "exclusions": excluded}
        path = tmp_path / "protocol.json"
        path.write_text(json.dumps(data), "utf-8")
        bundle = run_study(path, tmp_path / "bundle")
        assert verify(bundle) == []
        stored = _stored(bundle)
        push_left = stored["participants"][1]
        assert (push_left["runs"], push_left["incomplete"]) == (0, 3)
        assert all(
            (s["value"], s["low"], s["high"]) == (None, None, None)
            for s in push_left["statistics"] + push_left["profile"]
        )
        assert all(d["value"] is None for d in stored["improvements"])
        assert stored["participants"][0]["statistics"][0]["value"] is not None


class TestVerify:
    """verify re-derives rl-aggregates.json from the bundle's runs and names what differs."""

    @pytest.mark.slow
    @settings(max_examples=15, deadline=None)
    @given(seed=st.integers(0, 2**32 - 1))
    def test_every_figure_is_independent_of_the_order_runs_are_read(
        self, rl_small: Path, seed: int
    ) -> None:
        """rl-aggregates.json derived from the runs' records read in any order is the same
        bytes as the bundle's."""
        from repro._derive.scenarios import by_condition

        bundle = open_verified(rl_small)
        records = list(bundle.all_records())
        random.Random(seed).shuffle(records)
        p = bundle.protocol.protocol
        runs = tally(
            list(bundle.partitions()),
            (Attempt.of(r) for r in records),
            p.retry.max_attempts,
            contract_digests(bundle.ledger),
            by_condition(p, bundle.seal.conditions),
        )
        derived = rl_aggregates(bundle.protocol, bundle.seal, runs)
        assert to_bytes(derived) == (rl_small / layout.RL_AGGREGATES).read_bytes()

    @pytest.mark.parametrize(
        "path",
        [
            ("participants", 0, "statistics", 1, "value"),
            ("participants", 1, "statistics", 3, "low"),
            ("participants", 1, "runs"),
            ("participants", 1, "incomplete"),
            ("participants", 0, "profile", 2, "high"),
            ("improvements", 0, "value"),
            ("improvements", 1, "runs_y"),
        ],
    )
    def test_a_forged_figure_is_named(
        self, rl_small: Path, tmp_path: Path, path: tuple[Any, ...]
    ) -> None:
        """A figure or count edited in rl-aggregates.json, both manifests regenerated, is named
        by verify as a re-derived value that differs there."""
        root = tmp_path / "forged"
        shutil.copytree(rl_small, root)
        target = root / layout.RL_AGGREGATES
        data = json.loads(target.read_bytes())
        node = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = node[path[-1]] + 1 if isinstance(node[path[-1]], int) else 0.123
        target.write_bytes(canonical.dumps(data))
        reseal(root)
        findings = verify(root)
        assert any(
            f.code == "rederived-differs" and f.file == layout.RL_AGGREGATES for f in findings
        ), [f.as_dict() for f in findings]

    def test_a_file_without_its_section_is_named(
        self, small_bundle: Path, rl_small: Path, tmp_path: Path
    ) -> None:
        """rl-aggregates.json in a bundle whose protocol has no rl section is named; one
        missing from a bundle whose protocol has one is named too."""
        root = tmp_path / "extra"
        shutil.copytree(small_bundle, root)
        shutil.copy(rl_small / layout.RL_AGGREGATES, root / layout.RL_AGGREGATES)
        reseal(root)
        assert "rl-aggregates-without-rl" in {f.code for f in verify(root)}
        root = tmp_path / "missing"
        shutil.copytree(rl_small, root)
        (root / layout.RL_AGGREGATES).unlink()
        reseal(root)
        assert any(f.file == layout.RL_AGGREGATES for f in verify(root))

    def test_an_inconsistent_section_put_in_a_bundle_is_named(
        self, rl_small: Path, tmp_path: Path
    ) -> None:
        """A bundle's protocol edited so that an improvement compares a participant with
        itself, both manifests regenerated: verify applies the rl rules to the bundle's
        protocol again, names it, and derives nothing from it."""
        root = tmp_path / "forged"
        shutil.copytree(rl_small, root)
        target = root / layout.PROTOCOL
        data = json.loads(target.read_bytes())
        data["protocol"]["rl"]["improvements"][0]["y"] = "random"
        target.write_bytes(canonical.dumps(data))
        reseal(root)
        findings = verify(root)
        inconsistent = [f for f in findings if f.code == "protocol-inconsistent"]
        assert inconsistent and "@ $.rl.improvements[0]" in inconsistent[0].found
        assert not any(f.file == layout.RL_AGGREGATES for f in findings)

    def test_resamples_past_the_limit_are_named(self, rl_small: Path) -> None:
        """A verifier whose max_resamples is below the rl bootstrap's names the limit and
        re-derives nothing."""
        findings = verify(rl_small, Limits(max_resamples=199))
        assert [f.code for f in findings] == ["resamples-limit"]
        assert findings[0].found == "200"

    def test_the_crate_and_the_report_name_it(self, rl_small: Path) -> None:
        """The RO-Crate lists rl-aggregates.json among the root's parts, and the validation
        report has a row per participant (push-left's with its incomplete replicate) and a
        line per improvement."""
        crate = json.loads((rl_small / layout.CRATE).read_text("utf-8"))
        root = next(entity for entity in crate["@graph"] if entity["@id"] == "./")
        assert {"@id": "rl-aggregates.json"} in root["hasPart"]
        report = (rl_small / layout.REPORT).read_text("utf-8")
        assert "rliable's aggregates of `episode_return` over the tasks of `env_id`" in report
        assert any(
            line.startswith("| push-left | 5 (1 incomplete) |") for line in report.splitlines()
        )
        assert "- P(random > push-left) = " in report


class TestShow:
    """repro show presents rl-aggregates.json once the bundle verifies."""

    def test_terminal_and_json(self, rl_small: Path, small_bundle: Path) -> None:
        """The terminal has the aggregates, improvements and profiles tables (push-left's row
        with its incomplete replicate); --json holds rl-aggregates.json's content under
        rl_aggregates, null for a bundle without it."""
        from typer.testing import CliRunner

        from repro._cli.app import app

        runner = CliRunner()
        shown = runner.invoke(app, ["show", str(rl_small)])
        assert shown.exit_code == 0, shown.output
        lines = shown.stdout.splitlines()
        assert any("rliable aggregates of episode_return" in line for line in lines)
        assert any("probability of improvement" in line for line in lines)
        assert any("performance profiles" in line for line in lines)
        row = next(line for line in lines if "push-left" in line and "incomplete" in line)
        assert "5 (+1 incomplete)" in row
        emitted = json.loads(runner.invoke(app, ["show", str(rl_small), "--json"]).stdout)
        assert emitted["rl_aggregates"] == _stored(rl_small)
        plain = json.loads(runner.invoke(app, ["show", str(small_bundle), "--json"]).stdout)
        assert plain["rl_aggregates"] is None

    def test_the_page_shows_every_figure(self, rl_small: Path) -> None:
        """The HTML page's rliable section names every figure of rl-aggregates.json by its
        data attributes, each the file's float to the bit, and no other."""
        from repro._present.showing import load

        elements = parse(load(rl_small).html())
        in_text = check_figures(elements, rl_small)
        shown = {key for key in in_text if key[0].startswith("rl-")}
        assert shown == set(expected_rl(rl_small))


def _protocol(rl_section: dict[str, Any], **more: Any) -> Protocol:
    return structure({**SMALL, **more, "rl": rl_section}, Protocol, what="protocol")


_TASKS = {"task_factor": "env_id"}


@pytest.mark.parametrize(
    ("section", "more", "expected", "path"),
    [
        ({"task_factor": "env"}, {}, "unknown factor 'env'", "$.rl.task_factor"),
        (
            _TASKS,
            {
                "matrix": [
                    {"name": "env_id", "levels": ["CartPole-v1"]},
                    {"name": "max_episode_steps", "levels": [50, 100]},
                ]
            },
            "every other factor must have one level",
            "$.matrix[1].levels",
        ),
        (
            {**_TASKS, "normalization": [{"task": "CartPole-v1", "low": 0.0, "high": 500.0}]},
            {},
            "no scale for task(s) 'MountainCar-v0'",
            "$.rl.normalization",
        ),
        (
            {
                **_TASKS,
                "normalization": [
                    {"task": "CartPole-v1", "low": 0.0, "high": 500.0},
                    {"task": "Pong", "low": 0.0, "high": 1.0},
                ],
            },
            {},
            "'Pong' is not a level of 'env_id'",
            "$.rl.normalization[1].task",
        ),
        (
            {
                **_TASKS,
                "normalization": [
                    {"task": "CartPole-v1", "low": 0.0, "high": 500.0},
                    {"task": "CartPole-v1", "low": 0.0, "high": 500.0},
                    {"task": "MountainCar-v0", "low": -200.0, "high": 0.0},
                ],
            },
            {},
            "task 'CartPole-v1' scaled twice",
            "$.rl.normalization[1].task",
        ),
        (
            {
                **_TASKS,
                "normalization": [
                    {"task": "CartPole-v1", "low": 500.0, "high": 500.0},
                    {"task": "MountainCar-v0", "low": -200.0, "high": 0.0},
                ],
            },
            {},
            "low must be below high",
            "$.rl.normalization[0]",
        ),
        ({**_TASKS, "statistics": ["iqm", "iqm"]}, {}, "asked twice", "$.rl.statistics[1]"),
        (
            {**_TASKS, "statistics": ["iqm"], "gamma": 0.5},
            {},
            "gamma is the optimality gap's",
            "$.rl.gamma",
        ),
        (
            {**_TASKS, "improvements": [{"x": "random", "y": "nobody"}]},
            {},
            "unknown participant 'nobody'",
            "$.rl.improvements[0].y",
        ),
        (
            {**_TASKS, "improvements": [{"x": "random", "y": "random"}]},
            {},
            "compares two participants, not one",
            "$.rl.improvements[0]",
        ),
        (
            {
                **_TASKS,
                "improvements": [
                    {"x": "random", "y": "push-left"},
                    {"x": "random", "y": "push-left"},
                ],
            },
            {},
            "asked twice",
            "$.rl.improvements[1]",
        ),
        (
            {**_TASKS, "bootstrap": {"seed": 2**32, "sampler": "rliable"}},
            {},
            "takes a seed below 2**32",
            "$.rl.bootstrap.seed",
        ),
        ({**_TASKS, "statistics": []}, {}, "asks for no statistic", "$.rl"),
        (
            {**_TASKS, "bootstrap": {"resamples": 100000}, "taus": [t / 100 for t in range(100)]},
            {"runs_per_condition": 1000},
            "re-deriving its statistics would take 1648000000 units of work",
            "$.rl.bootstrap.resamples",
        ),
    ],
)
def test_a_section_that_does_not_fit_is_refused(
    section: dict[str, Any], more: dict[str, Any], expected: str, path: str
) -> None:
    """A task factor the matrix does not have, another factor of several levels, a partial,
    unknown, repeated or inverted normalisation, a statistic asked twice, gamma without the
    optimality gap, an improvement of an unknown participant, of one with itself or asked twice,
    a seed the rliable sampler cannot take, nothing asked, and bootstraps past the limit on the
    derivations' work are refused before anything is written, each with its JSON path."""
    with pytest.raises(BadInput) as caught:
        check_consistency(_protocol(section, **more))
    problems = caught.value.problems
    assert any(expected in p.message and p.path == path for p in problems), problems


@pytest.mark.parametrize(
    ("section", "path"),
    [
        ({**_TASKS, "bootstrap": {"resamples": 99}}, "$.rl.bootstrap.resamples"),
        ({**_TASKS, "taus": [0.5] * 257}, "$.rl.taus"),
        ({**_TASKS, "statistics": ["trimmed-mean"]}, "$.rl.statistics[0]"),
    ],
)
def test_the_model_refuses_what_no_section_may_hold(section: dict[str, Any], path: str) -> None:
    """Fewer than 100 resamples, more than 256 taus and a statistic rliable has no name for
    are refused when the protocol is read, each with its path."""
    with pytest.raises(BadInput) as caught:
        _protocol(section)
    assert f"@ {path}" in str(caught.value)


def test_repro_study_refuses_a_section_that_does_not_fit(tmp_path: Path) -> None:
    """repro study exits 2 on an rl section that does not fit, names its JSON path, and writes
    nothing."""
    from typer.testing import CliRunner

    from repro._cli.app import app

    path = tmp_path / "protocol.json"
    path.write_text(json.dumps({**SMALL, "rl": {"task_factor": "env"}}), "utf-8")
    out = tmp_path / "bundle"
    result = CliRunner().invoke(app, ["study", str(path), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "unknown factor 'env' @ $.rl.task_factor" in result.output
    assert not out.exists()


def test_the_shipped_example_and_a_plain_section_fit() -> None:
    """The example protocol, and a section that names its task factor alone (the defaults:
    raw scores, the four statistics), pass the rules."""
    from repro._protocol.load import load_protocol

    check_consistency(load_protocol(EXAMPLE))
    check_consistency(_protocol(_TASKS))


def test_protocols_without_the_section_freeze_as_before() -> None:
    """A protocol without an rl section holds no rl key when frozen (its bytes and sha256
    are those of earlier versions), and its bundle has no rl-aggregates.json."""
    from repro._protocol.freeze import freeze

    fp = freeze(structure(SMALL, Protocol, what="protocol"))
    assert "rl" not in json.loads(to_bytes(fp))["protocol"]
    assert layout.RL_AGGREGATES not in layout.payload_files(fp, ["c00"])
    with_rl = freeze(_protocol(_TASKS))
    assert layout.RL_AGGREGATES in layout.payload_files(with_rl, ["c00"])
