"""Importable policies for tests of the ``callable`` participant kind and of retries."""

from __future__ import annotations

import getpass
import os
import random
from pathlib import Path
from typing import Any

import numpy as np

_calls = {"flaky": 0}


def always_left(observation: Any, rng: Any) -> int:
    """Push left at every step."""
    return 0


def flaky(observation: Any, rng: Any) -> int:
    """Fail at the very first call of the process, then act randomly."""
    _calls["flaky"] += 1
    if _calls["flaky"] == 1:
        raise RuntimeError("transient failure")
    return int(rng.integers(2))


def global_generators(observation: Any, rng: Any) -> int:
    """Act from Python's and NumPy's process-global generators, ignoring the generator given, as
    a careless policy would: its episodes repeat only if the globals are seeded per run."""
    return int(random.random() < 0.5) ^ int(np.random.randint(2))


def broken(observation: Any, rng: Any) -> int:
    """Always fail."""
    raise RuntimeError("permanent failure")


def divides_by_zero(observation: Any, rng: Any) -> int:
    """Fail at every step with the error a careless policy makes."""
    return int(1 / 0)


class SleepyBlue:
    """A CAGE-2 blue agent class that sleeps (action 0) at every step."""

    def get_action(self, observation: Any, action_space: Any) -> int:
        """Sleep."""
        return 0

    def end_episode(self) -> None:
        """Nothing to reset."""


class BrokenBlue(SleepyBlue):
    """A CAGE-2 blue agent class that fails at its first step."""

    def get_action(self, observation: Any, action_space: Any) -> int:
        """Fail."""
        raise RuntimeError("permanent failure")


_leaky: dict[str, Any] = {"rng": None, "attempts": 0}


def leaky(observation: Any, rng: Any) -> int:
    """Fail three attempts in five, at their first step, with a message naming the home and
    working directories, the user and a secret from the environment, as a careless library
    would; then act randomly. The adapter makes a fresh generator for every attempt, which is
    how attempts are told apart."""
    if _leaky["rng"] is not rng:
        _leaky["rng"] = rng
        _leaky["attempts"] += 1
        if _leaky["attempts"] % 5 in (1, 2, 3):
            raise RuntimeError(
                f"cannot read {Path.home() / '.config'} from {Path.cwd()} as {getpass.getuser()} "
                f"with token={os.environ.get('AWS_SECRET_ACCESS_KEY')}"
            )
    return int(rng.integers(2))
