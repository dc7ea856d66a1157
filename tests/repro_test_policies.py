"""Importable policies for tests of the ``callable`` participant kind and of retries."""

from __future__ import annotations

from typing import Any

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


def broken(observation: Any, rng: Any) -> int:
    """Always fail."""
    raise RuntimeError("permanent failure")


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
