"""repro._protocol.work: the work a protocol asks of the derivations, counted from the protocol
alone. Its bound is tested where it refuses and where verify names it (test_bad_protocols.py,
test_verify_hardening.py, test_hostile.py); here, what it counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, SMALL
from repro._json.serde import structure
from repro._plan.sealing import conditions_of
from repro._protocol.contrasts import selected
from repro._protocol.load import load_protocol
from repro._protocol.work import MAX_DERIVATION_WORK, _selected, derivation_work
from repro.models import Group, Protocol

LEVELS = st.sampled_from(["a", "b", "c", 1, 2])


@st.composite
def protocols_and_groups(draw: st.DrawFn) -> tuple[Protocol, Group]:
    """A protocol of up to three factors and three participants, and a group that may name
    levels, factors and participants the protocol does not have."""
    factors = [
        {"name": f"f{i}", "levels": draw(st.lists(LEVELS, min_size=1, max_size=3, unique=True))}
        for i in range(draw(st.integers(1, 3)))
    ]
    ids = [f"p{i}" for i in range(draw(st.integers(1, 3)))]
    participants = [{"id": q, "kind": "random", "params": {}} for q in ids]
    plain = {**SMALL, "matrix": factors, "participants": participants}
    protocol = structure(plain, Protocol, what="protocol")
    names = st.sampled_from([f"f{i}" for i in range(4)])
    group = Group(
        factors=draw(st.dictionaries(names, LEVELS, max_size=2)),
        participant=draw(st.none() | st.sampled_from([*ids, "nobody"])),
    )
    return protocol, group


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(protocols_and_groups())
def test_selected_conditions_are_counted_without_making_them(
    drawn: tuple[Protocol, Group],
) -> None:
    """The count of a group's conditions, from the matrix alone, is how many the contrasts'
    own selection picks of the sealed conditions."""
    protocol, group = drawn
    assert _selected(protocol, group) == len(selected(group, conditions_of(protocol)))


def test_the_shipped_protocols_fit() -> None:
    """Every shipped protocol asks less than the bound of the work it may ask, and the rl
    example's bootstraps are what it asks."""
    for path in sorted((ROOT / "protocols").glob("*.json")):
        protocol = load_protocol(path)
        assert sum(derivation_work(protocol).values()) <= MAX_DERIVATION_WORK, path.name
    example = load_protocol(ROOT / "protocols" / "gymnasium-rl-aggregates.json")
    assert list(derivation_work(example)) == ["$.rl.bootstrap.resamples"]


def _atari_like(resamples: int) -> Protocol:
    """rliable's Atari 100k figures as an rl section: five algorithms on 26 tasks of 10 runs,
    every statistic, a profile of 81 taus and four improvements over the first algorithm."""
    ids = [f"algo{i}" for i in range(5)]
    plain: dict[str, Any] = {
        **SMALL,
        "matrix": [{"name": "game", "levels": [f"g{i}" for i in range(26)]}],
        "participants": [{"id": q, "kind": "random", "params": {}} for q in ids],
        "runs_per_condition": 10,
        "rl": {
            "task_factor": "game",
            "bootstrap": {"resamples": resamples, "seed": 0},
            "taus": [t / 10 for t in range(81)],
            "improvements": [{"x": ids[0], "y": other} for other in ids[1:]],
        },
    }
    return structure(json.loads(json.dumps(plain)), Protocol, what="protocol")


def test_an_atari_like_section_fits_at_50000_resamples() -> None:
    """The section docs/guarantees.md names counts 4.8 x 10^8 at 50,000 resamples, within the
    bound, and its work grows with the resamples."""
    work = derivation_work(_atari_like(50_000))
    assert sum(work.values()) == 483_500_000 <= MAX_DERIVATION_WORK
    assert sum(derivation_work(_atari_like(100_000)).values()) > MAX_DERIVATION_WORK


def test_each_part_is_named_by_its_path(tmp_path: Path) -> None:
    """A bootstrap interval, two contrasts and an rl section are each counted at their own JSON
    path; a t interval asks nothing of the bootstraps."""
    contrast = {"a": {"participant": "random"}, "b": {"participant": "push-left"}}
    plain = {
        **SMALL,
        "interval": {"method": "bootstrap", "level": 0.95, "resamples": 999, "seed": 1},
        "contrasts": {"family": [{"id": "x", **contrast}, {"id": "y", **contrast}]},
        "rl": {"task_factor": "env_id"},
    }
    work = derivation_work(structure(plain, Protocol, what="protocol"))
    assert list(work) == [
        "$.interval.resamples",
        "$.contrasts.family[0]",
        "$.contrasts.family[1]",
        "$.rl.bootstrap.resamples",
    ]
    assert work["$.contrasts.family[0]"] == work["$.contrasts.family[1]"]
    plain_t = {**SMALL, "interval": {"method": "t", "level": 0.95}}
    assert derivation_work(structure(plain_t, Protocol, what="protocol")) == {}
