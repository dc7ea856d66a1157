"""The reproduction class against published figures."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from conftest import SMALL
from repro._derive.reproduction import reproduction, rounded
from repro._json.serde import structure
from repro._protocol.freeze import freeze
from repro.models import (
    Aggregates,
    ConditionAggregate,
    EstimandValue,
    IntervalValue,
    Protocol,
)


def _protocol(published: dict[str, Any] | None) -> Any:
    data = copy.deepcopy(SMALL)
    data["matrix"] = [{"name": "env_id", "levels": ["CartPole-v1"]}]
    data["participants"] = [{"id": "random", "kind": "random"}]
    if published is not None:
        data["published"] = published
    return freeze(structure(data, Protocol, what="protocol"))


def _agg(mean: float, half: float, total_half: float) -> Aggregates:
    iv = IntervalValue("normal", 0.95, mean - half, mean + half, half)
    row = ConditionAggregate("c00", {"env_id": "CartPole-v1"}, "random", 8, 8, 0, 0, mean, 1.0, iv)
    est = EstimandValue(
        "sum-of-condition-means",
        mean,
        total_half / 1.96,
        IntervalValue("normal", 0.95, mean - total_half, mean + total_half, total_half),
    )
    return Aggregates("repro.aggregates/1", "0" * 64, "episode_return", (row,), est)


PUBLISHED = {
    "citation": {"title": "t", "url": "https://example.org", "locator": "row 1"},
    "decimals": 2,
    "conditions": [{"factors": {"env_id": "CartPole-v1"}, "mean": 20.0}],
    "estimand": {"value": 20.0, "halfwidth": 0.5},
}


class TestReproductionClass:
    """exact, bounded, failed, unavailable."""

    def test_exact(self) -> None:
        """Every published figure equal at the published precision is exact."""
        r = reproduction(_protocol(PUBLISHED), _agg(20.004, 1.0, 0.499), 0)
        assert r.verdict == "exact"

    def test_bounded(self) -> None:
        """Unequal figures whose intervals contain each other's point estimates are bounded."""
        r = reproduction(_protocol(PUBLISHED), _agg(20.3, 1.0, 0.5), 0)
        assert r.verdict == "bounded"
        assert "differ at 2 decimals" in r.reason

    def test_failed(self) -> None:
        """An interval that excludes the other point estimate fails."""
        r = reproduction(_protocol(PUBLISHED), _agg(25.0, 1.0, 0.5), 0)
        assert r.verdict == "failed"

    def test_unavailable_without_published(self) -> None:
        """No published figures: unavailable."""
        assert reproduction(_protocol(None), _agg(20.0, 1.0, 0.5), 0).verdict == "unavailable"

    def test_unavailable_when_incomplete(self) -> None:
        """An incomplete plan is unavailable even when the scores agree exactly."""
        r = reproduction(_protocol(PUBLISHED), _agg(20.0, 1.0, 0.5), 3)
        assert r.verdict == "unavailable"
        assert "incomplete" in r.reason

    def test_half_width_must_match_for_exact(self) -> None:
        """A published half-width is a figure too: a different observed one blocks exact."""
        r = reproduction(_protocol(PUBLISHED), _agg(20.0, 1.0, 0.7), 0)
        assert r.verdict == "bounded"
        assert "estimand half-width" in r.reason


class TestRounding:
    """Rounding to the published precision."""

    @pytest.mark.parametrize(
        ("value", "decimals", "text"),
        [
            (-3112.2049, 2, "-3112.20"),
            (-0.001, 2, "0.00"),
            (-0.0, 2, "0.00"),
            (2.675, 2, "2.67"),
            (1.005, 1, "1.0"),
        ],
    )
    def test_rounded(self, value: float, decimals: int, text: str) -> None:
        """Rounding uses the exact binary value, half to even, and prints no negative zero."""
        assert rounded(value, decimals) == text
