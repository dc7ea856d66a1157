"""A policy for the report's tests: it fails some episodes, decided by the episode's own
generator, so that a bundle has slots lost to more than one cause and slots saved by a retry."""

from __future__ import annotations

from typing import Any

_seen: dict[str, Any] = {"rng": None}


def sometimes_fails(observation: Any, rng: Any) -> int:
    """At an episode's first step (a fresh generator), fail one episode in five with a
    ZeroDivisionError and one in ten with a ValueError; otherwise, and at every later step, act
    randomly. Which episodes fail follows from their seeds alone."""
    if _seen["rng"] is not rng:
        _seen["rng"] = rng
        draw = float(rng.random())
        if draw < 0.2:
            raise ZeroDivisionError("division by zero")
        if draw < 0.3:
            raise ValueError("observation out of range")
    return int(rng.integers(2))
