"""The family-wise reproduction criterion (``criteria.bounded: familywise-interval-containment``):
the rule on hand-made aggregates, its levels against SciPy's quantiles, the default criterion
left as it was, and a real published study that declares it and verifies."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from typer.testing import CliRunner

from conftest import PUBLISHED, SMALL
from repro._cli.app import app
from repro._derive.reproduction import (
    FAMILYWISE,
    familywise_level,
    reproduction,
    rescaled_halfwidth,
)
from repro._json import canonical
from repro._json.serde import structure, to_bytes
from repro._protocol.freeze import freeze
from repro._protocol.rules import check_consistency
from repro._stats import estimators as stats
from repro.errors import BadInput
from repro.models import (
    Aggregates,
    ConditionAggregate,
    EstimandValue,
    FrozenProtocol,
    IntervalMethod,
    Protocol,
    Reproduction,
    Tiers,
)

runner = CliRunner()

MUTUAL = "mutual-interval-containment"


def _frozen(
    cells: int,
    published: dict[str, Any],
    bounded: str,
    method: IntervalMethod = "normal",
    level: float = 0.95,
) -> FrozenProtocol:
    """A protocol of ``cells`` conditions (factor ``cell``, one participant) with ``published``
    figures and the ``bounded`` criterion, checked by the consistency rules and frozen."""
    data = copy.deepcopy(SMALL)
    data["matrix"] = [{"name": "cell", "levels": list(range(cells))}]
    data["participants"] = [{"id": "random", "kind": "random"}]
    data["interval"] = {"method": method, "level": level}
    data["published"] = published
    data["criteria"] = {"bounded": bounded}
    protocol = structure(data, Protocol, what="protocol")
    check_consistency(protocol)
    return freeze(protocol)


def _published(
    means: list[float],
    halves: list[float | None] | None = None,
    estimand: dict[str, float] | None = None,
    level: float = 0.95,
) -> dict[str, Any]:
    halves = halves or [None] * len(means)
    conditions = []
    for i, (mean, half) in enumerate(zip(means, halves, strict=True)):
        figure: dict[str, Any] = {"factors": {"cell": i}, "mean": mean}
        if half is not None:
            figure["halfwidth"] = half
        conditions.append(figure)
    published: dict[str, Any] = {
        "citation": {"title": "t", "url": "https://example.org"},
        "decimals": 2,
        "level": level,
        "conditions": conditions,
    }
    if estimand is not None:
        published["estimand"] = estimand
    return published


def _agg(
    rows: list[tuple[float, float | None, int]], method: IntervalMethod = "normal"
) -> Aggregates:
    """Aggregates of conditions given as (mean, sd, valid n), their intervals at 0.95 by
    ``method``, and the sum of their means with its interval (where every sd is given)."""
    conditions = []
    for i, (mean, sd, n) in enumerate(rows):
        iv = None if sd is None else stats.mean_interval_at(mean, sd, n, method, 0.95)
        conditions.append(
            ConditionAggregate(f"c{i:02d}", {"cell": i}, "random", n, n, 0, 0, mean, sd, iv)
        )
    kind = "sum-of-condition-means"
    means, ns = [m for m, _, _ in rows], [n for _, _, n in rows]
    sds = [sd for _, sd, _ in rows if sd is not None]
    estimand = EstimandValue(kind, None, None, None)
    if len(sds) == len(rows):
        iv = stats.estimand_interval_at(means, sds, ns, kind, method, 0.95)
        se = math.sqrt(math.fsum(sd * sd / n for sd, n in zip(sds, ns, strict=True)))
        estimand = EstimandValue(kind, math.fsum(means), se, iv)
    return Aggregates("repro.aggregates/1", "0" * 64, "episode_return", tuple(conditions), estimand)


#: Five cells of 100 runs with sd 10 (each mean's SE is 1); the sum's SE is sqrt(5).
FIVE = [(10.0 * i, 10.0, 100) for i in range(5)]


def _five_published(offset: float) -> dict[str, Any]:
    """The five cells published at their observed means but the first, ``offset`` SEs away;
    the sum published one SE away with a 95% normal half-width: 7 containment checks."""
    means = [m for m, _, _ in FIVE]
    total = math.fsum(means)
    se = math.sqrt(5)
    estimand = {"value": total + se, "halfwidth": stats.normal_quantile(0.95) * se}
    return _published([means[0] + offset, *means[1:]], estimand=estimand)


def _classes(published: dict[str, Any], agg: Aggregates, cells: int) -> tuple[str, str]:
    """The class under the default criterion and under the family-wise one."""
    return (
        reproduction(_frozen(cells, published, MUTUAL), agg, 0).verdict,
        reproduction(_frozen(cells, published, FAMILYWISE), agg, 0).verdict,
    )


class TestRule:
    """The rule on hand-made aggregates."""

    def test_per_figure_fails_familywise_holds(self) -> None:
        """One cell 2.2 SEs from its published mean (outside 1.96, inside the family-wise z of
        7 checks, 2.69): failed under the default criterion, bounded under the family-wise
        one, whose reason names the level and the number of checks."""
        agg = _agg(FIVE)
        published = _five_published(2.2)
        assert _classes(published, agg, 5) == ("failed", "bounded")
        rep = reproduction(_frozen(5, published, FAMILYWISE), agg, 0)
        assert rep.familywise is not None
        assert rep.familywise.checks == 7
        assert "at the family-wise level 0.992857 (7 checks) contains" in rep.reason

    def test_both_fail(self) -> None:
        """A cell 4 SEs away is outside even the family-wise interval: failed either way."""
        assert _classes(_five_published(4.0), _agg(FIVE), 5) == ("failed", "failed")

    def test_both_bounded(self) -> None:
        """A cell 1 SE away is inside both: bounded either way."""
        assert _classes(_five_published(1.0), _agg(FIVE), 5) == ("bounded", "bounded")

    def test_k_counts_only_available_checks(self) -> None:
        """K counts a published interval where a half-width is given and an observed interval
        where one is defined: a cell with both (2), one without a published half-width (1), one
        with a single valid run and so no interval (1); the estimand is not published. Each
        figure records only the rescaled intervals its checks used."""
        agg = _agg([(5.0, 2.0, 10), (7.0, 3.0, 10), (9.0, None, 1)])
        published = _published([5.5, 7.5, 9.5], halves=[1.0, None, 1.0])
        rep = reproduction(_frozen(3, published, FAMILYWISE), agg, 0)
        assert rep.familywise is not None
        assert rep.familywise.checks == 4
        both, observed_only, published_only = rep.figures
        assert both.familywise_observed_interval is not None
        assert both.familywise_published_halfwidth is not None
        assert observed_only.familywise_published_halfwidth is None
        assert observed_only.published_interval_contains_observed is None
        assert published_only.familywise_observed_interval is None
        assert published_only.observed_interval_contains_published is None
        assert published_only.published_interval_contains_observed is not None

    def test_the_estimand_half_width_is_no_check(self) -> None:
        """The published estimand half-width is compared at the published precision only:
        it adds no containment check (5 cells + the estimand value's 2 = 7), and its observed
        value is the interval's at the protocol's level, not the family-wise one."""
        agg = _agg(FIVE)
        rep = reproduction(_frozen(5, _five_published(0.0), FAMILYWISE), agg, 0)
        half = next(f for f in rep.figures if f.figure == "estimand half-width")
        assert agg.estimand.interval is not None
        assert half.observed == agg.estimand.interval.halfwidth
        assert (half.familywise_observed_interval, half.familywise_published_halfwidth) == (
            None,
            None,
        )

    def test_no_check_available(self) -> None:
        """No containment check at all (a single valid run, no published half-width): no
        levels are recorded, and the class is failed, as under the default criterion."""
        agg = _agg([(5.0, None, 1)])
        published = _published([5.5])
        rep = reproduction(_frozen(1, published, FAMILYWISE), agg, 0)
        assert rep.familywise is None
        assert rep == reproduction(_frozen(1, published, MUTUAL), agg, 0)
        assert rep.verdict == "failed"

    def test_exact_stays_exact(self) -> None:
        """Figures equal at the published precision are exact under either criterion (the
        family-wise levels are recorded all the same)."""
        agg = _agg(FIVE)
        means = [m for m, _, _ in FIVE]
        published = _published(means, estimand={"value": math.fsum(means)})
        assert _classes(published, agg, 5) == ("exact", "exact")

    def test_unavailable_stays_unavailable(self) -> None:
        """An incomplete plan is unavailable under the family-wise criterion too."""
        rep = reproduction(_frozen(5, _five_published(0.0), FAMILYWISE), _agg(FIVE), 2)
        assert rep.verdict == "unavailable"

    @pytest.mark.slow
    @settings(max_examples=60, deadline=None)
    @given(
        st.lists(
            st.tuples(
                st.floats(-1e3, 1e3),
                st.floats(0.1, 100.0),
                st.integers(2, 500),
                st.floats(-5.0, 5.0),
                st.one_of(st.none(), st.floats(0.01, 50.0)),
            ),
            min_size=2,
            max_size=6,
        ),
        st.sampled_from(["normal", "t"]),
    )
    def test_never_stricter_than_the_default(
        self,
        cells: list[tuple[float, float, int, float, float | None]],
        method: IntervalMethod,
    ) -> None:
        """With two checks or more every family-wise interval contains its per-figure one:
        whatever the figures, a class bounded under the default criterion is bounded under
        the family-wise one."""
        agg = _agg([(m, sd, n) for m, sd, n, _, _ in cells], method)
        published = _published(
            [m + z * sd / math.sqrt(n) for m, sd, n, z, _ in cells],
            halves=[h for *_, h in cells],
        )
        mutual = reproduction(_frozen(len(cells), published, MUTUAL, method), agg, 0)
        familywise = reproduction(_frozen(len(cells), published, FAMILYWISE, method), agg, 0)
        if mutual.verdict == "bounded":
            assert familywise.verdict == "bounded"


class TestLevels:
    """The level arithmetic, against SciPy's quantiles."""

    @pytest.mark.parametrize(("level", "k"), [(0.95, 1), (0.95, 10), (0.9, 7), (0.99, 3)])
    def test_bonferroni_level(self, level: float, k: int) -> None:
        """Each of K intervals at 1 - (1 - L) / K."""
        assert familywise_level(level, k) == pytest.approx(1 - (1 - level) / k, rel=1e-15)

    @pytest.mark.parametrize(("level", "new"), [(0.95, 0.995), (0.9, 0.98), (0.95, 0.95)])
    def test_published_half_width_rescaled_as_normal(self, level: float, new: float) -> None:
        """A published half-width is rescaled by the ratio of the normal quantiles,
        z(1 - a'/2) / z(1 - a/2)."""
        expected = 1.03 * sps.norm.ppf(1 - (1 - new) / 2) / sps.norm.ppf(1 - (1 - level) / 2)
        assert rescaled_halfwidth(1.03, level, new) == pytest.approx(expected, rel=1e-12)

    def test_observed_and_published_at_their_own_levels(self) -> None:
        """With the observed intervals at 0.95 and the published ones at 0.9, each is taken at
        its own family-wise level: the recorded t interval is SciPy's t at 1 - 0.05/K on n - 1
        degrees of freedom, the published half-width the normal rescaling to 1 - 0.1/K, and
        the reason names both levels."""
        agg = _agg([(5.0, 2.0, 10), (7.0, 3.0, 12)], "t")
        published = _published([5.5, 7.5], halves=[1.0, 2.0], level=0.9)
        rep = reproduction(_frozen(2, published, FAMILYWISE, "t"), agg, 0)
        assert rep.familywise is not None
        k = rep.familywise.checks
        assert k == 4
        assert rep.familywise.observed_level == pytest.approx(1 - 0.05 / 4, rel=1e-15)
        assert rep.familywise.published_level == pytest.approx(1 - 0.1 / 4, rel=1e-15)
        first = rep.figures[0]
        iv = first.familywise_observed_interval
        assert iv is not None
        assert (iv.method, iv.level) == ("t", rep.familywise.observed_level)
        t = sps.t.ppf(1 - 0.05 / 4 / 2, 9)
        assert iv.halfwidth == pytest.approx(t * 2.0 / math.sqrt(10), rel=1e-12)
        z_ratio = sps.norm.ppf(1 - 0.1 / 4 / 2) / sps.norm.ppf(1 - 0.1 / 2)
        assert first.familywise_published_halfwidth == pytest.approx(z_ratio, rel=1e-12)
        assert "0.9875 (observed) and 0.975 (published) (4 checks)" in rep.reason

    def test_estimand_t_on_welch_degrees_of_freedom(self) -> None:
        """The estimand's t interval is recomputed on Welch-Satterthwaite degrees of freedom,
        as SciPy's t quantile gives it."""
        means, sds, ns = [1.0, 4.0, -2.0], [1.5, 3.0, 0.5], [5, 9, 4]
        iv = stats.estimand_interval_at(means, sds, ns, "sum-of-condition-means", "t", 0.99)
        parts = [sd * sd / n for sd, n in zip(sds, ns, strict=True)]
        df = sum(parts) ** 2 / sum(p * p / (n - 1) for p, n in zip(parts, ns, strict=True))
        half = sps.t.ppf(0.995, df) * math.sqrt(sum(parts))
        assert iv.halfwidth == pytest.approx(half, rel=1e-12)
        assert (iv.low + iv.high) / 2 == pytest.approx(3.0, rel=1e-15)

    def test_a_bootstrap_is_not_recomputed(self) -> None:
        """A bootstrap interval has no quantile to recompute it at another level by: the
        recomputation refuses it (the consistency rules refuse the protocol before that)."""
        with pytest.raises(ValueError, match="bootstrap"):
            stats.mean_interval_at(1.0, 1.0, 10, "bootstrap", 0.99)
        with pytest.raises(ValueError, match="bootstrap"):
            stats.estimand_interval_at(
                [1.0], [1.0], [10], "sum-of-condition-means", "bootstrap", 0.99
            )

    @settings(max_examples=40, deadline=None)
    @given(
        st.lists(st.lists(st.floats(-1e4, 1e4), min_size=2, max_size=40), min_size=1, max_size=4),
        st.sampled_from(["normal", "t"]),
        st.sampled_from(["sum-of-condition-means", "mean-of-condition-means"]),
        st.floats(0.5, 0.999),
    )
    def test_recomputed_as_aggregates_computes(
        self, samples: list[list[float]], method: IntervalMethod, kind: Any, level: float
    ) -> None:
        """From a sample's mean, sd and n, the intervals recomputed at a level are the ones
        aggregates.json computes from the values at that level (to rounding: the sd is stored,
        not the variance)."""
        summaries = [stats.summarize(s) for s in samples]
        for s in summaries:
            at = stats.mean_interval_at(s.mean, s.sd, s.n, method, level)
            direct = stats.mean_interval(s, method, level, 100, 0)
            assert direct is not None
            assert at.halfwidth == pytest.approx(direct.halfwidth, rel=1e-9, abs=1e-9)
        _, _, direct = stats.estimand_interval(summaries, kind, method, level, 100, 0)
        at = stats.estimand_interval_at(
            [s.mean for s in summaries],
            [s.sd for s in summaries],
            [s.n for s in summaries],
            kind,
            method,
            level,
        )
        assert direct is not None
        assert at.halfwidth == pytest.approx(direct.halfwidth, rel=1e-9, abs=1e-9)
        assert at.low == pytest.approx(direct.low, rel=1e-12, abs=1e-9)


class TestDefaultUnchanged:
    """A protocol that does not name the criterion keeps its rule and its bytes."""

    def test_default_records_nothing_new(self) -> None:
        """Under the default criterion the checks are at each interval's own level and the
        reproduction's bytes hold no family-wise field."""
        agg = _agg(FIVE)
        rep = reproduction(_frozen(5, _five_published(2.2), MUTUAL), agg, 0)
        assert rep.familywise is None
        assert b"familywise" not in to_bytes(rep)
        assert rep.figures[0].observed_interval_contains_published is False

    @pytest.mark.slow
    def test_published_bundle_holds_no_familywise_field(self, published_bundle: Path) -> None:
        """A real bundle of a protocol with published figures and the default criterion: its
        tiers.json and report name nothing family-wise."""
        data = published_bundle / "data"
        assert b"familywise" not in (data / "tiers.json").read_bytes()
        assert b"family-wise" not in (data / "validation-report.md").read_bytes()


def _load(path: Path, cls: type[Any]) -> Any:
    return structure(canonical.loads(path.read_bytes(), what=path.name), cls, what=path.name)


class TestPublishedStudy:
    """A small published Gymnasium study declaring the criterion, end to end."""

    @pytest.mark.slow
    def test_study_and_verify(
        self, published_bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The published protocol with the estimand published between the observed sum's 95%
        and family-wise (0.99, 5 checks) upper ends (placed from a default run of the same
        seeds, so the runs are the same): the study writes a bundle that `repro verify`
        passes (exit 0), classified bounded with its levels, where the same aggregates under
        the default criterion are failed; the report names the checks' levels."""
        agg = _load(published_bundle / "data/aggregates.json", Aggregates)
        rows = agg.conditions
        e = agg.estimand
        wide = stats.estimand_interval_at(
            [c.mean for c in rows], [c.sd for c in rows], [c.valid for c in rows],
            e.kind, "normal", 0.99,
        )  # fmt: skip
        value = round((e.interval.high + wide.high) / 2, 2)
        assert e.interval.high < value < wide.high
        protocol = copy.deepcopy(PUBLISHED)
        protocol["criteria"] = {"bounded": FAMILYWISE}
        protocol["published"]["estimand"]["value"] = value
        path = tmp_path / "protocol.json"
        path.write_text(json.dumps(protocol), "utf-8")
        monkeypatch.chdir(tmp_path)
        out = tmp_path / "bundle"
        study = runner.invoke(app, ["study", str(path), "--out", str(out)])
        assert study.exit_code == 0, study.output
        verified = runner.invoke(app, ["verify", str(out)])
        assert verified.exit_code == 0, verified.output

        tiers = _load(out / "data/tiers.json", Tiers)
        rep: Reproduction = tiers.reproduction
        assert rep.verdict == "bounded", rep.reason
        assert rep.familywise is not None
        assert (rep.familywise.checks, rep.familywise.observed_level) == (5, 0.99)
        assert "at the family-wise level 0.99 (5 checks)" in rep.reason
        fp = _load(out / "data/protocol.json", FrozenProtocol)
        stored = _load(out / "data/aggregates.json", Aggregates)
        default = copy.deepcopy(protocol)
        default["criteria"] = {"bounded": MUTUAL}
        mutual = freeze(structure(default, Protocol, what="protocol"))
        assert reproduction(mutual, stored, 0).verdict == "failed"
        assert reproduction(fp, stored, 0) == rep
        report = (out / "data/validation-report.md").read_text("utf-8")
        assert "observed at 0.99 contains published: yes" in report


def test_bootstrap_refused_with_the_criterion() -> None:
    """With the criterion, a bootstrap interval (which cannot be recomputed at another level
    from the aggregates) is refused by the consistency rules at $.interval.method; without
    it, the same interval is accepted."""
    published = _published([1.0])
    with pytest.raises(BadInput, match=r"@ \$\.interval\.method$"):
        _frozen(1, published, FAMILYWISE, "bootstrap")
    assert _frozen(1, published, MUTUAL, "bootstrap").protocol.interval.method == "bootstrap"
