"""The study's progress: the time left weighed by what each slot costs (a CAGE-2 episode's
trial length and the reset before it), not by the count of slots alone."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from repro._cli.progress import LineProgress, Work
from repro.adapters._base import slot_costs
from repro.adapters._cyborg import RESET_STEPS, CybORGAdapter
from repro.adapters._gymnasium import GymnasiumAdapter
from repro.models import Condition


def _condition(cid: str, **factors: object) -> Condition:
    return Condition(id=cid, factors=factors, participant="p")


class _Clock:
    """A clock that says what the test sets: the estimate depends on nothing else."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class TestWeights:
    """What a slot costs, as the adapter says."""

    def test_cyborg_weighs_an_episode_by_its_trial_length(self) -> None:
        """The CAGE-2 adapter's slot of trial length 100 costs its 100 steps and the reset
        before them, of 30 its 30 steps and the same reset."""
        conditions = [_condition("c00", trial_length=30), _condition("c01", trial_length=100)]
        reset = RESET_STEPS
        assert reset > 0
        assert slot_costs(CybORGAdapter(), conditions) == {"c00": 30 + reset, "c01": 100 + reset}

    def test_without_a_cost_every_slot_counts_one(self) -> None:
        """An adapter that states no cost (Gymnasium's episodes vary) weighs every slot 1."""
        conditions = [_condition("c00", env_id="CartPole-v1")]
        assert slot_costs(GymnasiumAdapter(), conditions) == {"c00": 1.0}

    @pytest.mark.parametrize("value", [0, -3, float("nan"), float("inf"), "x"])
    def test_an_unusable_cost_counts_one(self, value: object) -> None:
        """A cost that is not a positive finite number (or raises) counts as 1."""

        class Odd:
            def slot_cost(self, condition: Condition) -> object:
                return value

        assert slot_costs(Odd(), [_condition("c00")]) == {"c00": 1.0}


class TestTimeLeft:
    """The line progress's estimate, with a clock the test sets."""

    def test_the_long_episodes_left_are_weighed(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Ten 30-step episodes done in 10 s leave ten 100-step ones: about 33.3 s left (at the
        time per step measured so far), where counting slots would say 10 s."""
        clock = _Clock()
        work = Work({"c00": 30.0, "c01": 100.0}, {"c00": 10, "c01": 10})
        progress = LineProgress({"c00": "c00", "c01": "c01"}, work, clock)
        progress.start(20)
        for i in range(10):
            clock.now = i + 1.0
            progress.advance("c00", "valid")
        lines = capsys.readouterr().err.splitlines()
        assert lines[-1] == "study: 10/20 runs (50%), 10.0 s elapsed, about 33.3 s left (c00)"

    @pytest.mark.slow
    @given(
        costs=st.lists(st.floats(0.5, 200), min_size=1, max_size=5),
        runs=st.integers(1, 20),
        per_unit=st.floats(0.001, 10),
    )
    def test_exact_when_the_cost_is_the_time(
        self, costs: list[float], runs: int, per_unit: float
    ) -> None:
        """When every slot takes its cost times one rate, the estimate after any number of
        slots is the time that is in fact left (to rounding)."""
        ids = [f"c{i:02d}" for i in range(len(costs))]
        work = Work(dict(zip(ids, costs, strict=True)), dict.fromkeys(ids, runs))
        elapsed = 0.0
        total = sum(c * runs for c in costs) * per_unit
        for cid, cost in zip(ids, costs, strict=True):
            for _ in range(runs):
                work.advance(cid)
                elapsed += cost * per_unit
                assert work.left(elapsed) == pytest.approx(total - elapsed, rel=1e-9, abs=1e-9)


def test_the_eta_benchmark_reads_every_line(capsys: pytest.CaptureFixture[str]) -> None:
    """benchmarks/eta.py reads the line progress's figures back, a line with runs not valid
    included: were the wording to change, the benchmark would stop reading it here first."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    try:
        from eta import _progress
    finally:
        sys.path.pop(0)
    clock = _Clock()
    work = Work({"c00": 1.0}, {"c00": 20})
    progress = LineProgress({"c00": "c00 [x] / p"}, work, clock)
    progress.start(20)
    for i in range(20):
        clock.now = 0.5 * (i + 1)
        progress.advance("c00", "failed" if i == 3 else "valid")
    read = _progress(capsys.readouterr().err)
    assert [(n, total, pct) for n, total, pct, _, _ in read] == [
        (2 * k, 20, 10 * k) for k in range(1, 11)
    ]
    assert read[4][3:] == (5.0, 5.0)  # 10 of 20 in 5 s: 5 s left
