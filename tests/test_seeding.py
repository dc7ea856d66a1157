"""Per-run seeding: every run is a function of its slot's seed alone, whatever ran before it."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import run_study
from repro._execute.worker import seed_global_generators


def _lines(bundle: Path) -> dict[str, bytes]:
    """Each run record's canonical line, by attempt ID."""
    out = {}
    for path in sorted((bundle / "data/runs").glob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            out[line.split(b'"attempt_id":"', 1)[1].split(b'"', 1)[0].decode()] = line
    return out


class TestGlobalGenerators:
    """What the worker does before each run in per-run mode."""

    def test_seeded_from_the_slot_seed(self) -> None:
        """Python's global generator gets the seed itself, NumPy's legacy global generator its
        low 32 bits."""
        seed = (1 << 62) + 12345
        random.seed(0)
        np.random.seed(0)
        seed_global_generators(seed)
        assert random.random() == random.Random(seed).random()
        assert np.random.random() == np.random.RandomState(seed & 0xFFFF_FFFF).random()


@pytest.mark.slow
class TestPerRunIndependence:
    """A policy that draws from the process-global generators still gives repeatable runs that
    do not depend on the order of execution."""

    @staticmethod
    def _protocol(small_protocol: dict[str, Any]) -> dict[str, Any]:
        small_protocol["matrix"] = [{"name": "env_id", "levels": ["CartPole-v1"]}]
        small_protocol["participants"] = [
            {
                "id": "globals",
                "kind": "callable",
                "params": {"target": "repro_test_policies:global_generators"},
            }
        ]
        return small_protocol

    def test_two_studies_give_the_same_runs(
        self, write_protocol: Callable[..., Path], small_protocol: dict[str, Any], tmp_path: Path
    ) -> None:
        """Two studies of the same protocol write byte-identical runs files, although each
        worker process starts its global generators from fresh entropy."""
        path = write_protocol(self._protocol(small_protocol))
        a = run_study(path, tmp_path / "a")
        b = run_study(path, tmp_path / "b")
        assert _lines(a) == _lines(b)

    def test_a_run_does_not_depend_on_the_runs_before_it(
        self, write_protocol: Callable[..., Path], small_protocol: dict[str, Any], tmp_path: Path
    ) -> None:
        """With the first two slots excluded, so that the third runs first in its worker, every
        slot that runs in both studies has the same record in both."""
        data = self._protocol(small_protocol)
        full = run_study(write_protocol(data, "full.json"), tmp_path / "full")
        data["exclusions"] = [
            {"slot": "c00-r0000", "reason": "r"},
            {"slot": "c00-r0001", "reason": "r"},
        ]
        later = run_study(write_protocol(data, "later.json"), tmp_path / "later")
        full_lines, later_lines = _lines(full), _lines(later)
        common = [a for a in full_lines if a >= "c00-r0002"]
        assert len(common) == 6
        assert {a: later_lines[a] for a in common} == {a: full_lines[a] for a in common}
