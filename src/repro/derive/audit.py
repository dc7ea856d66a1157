"""Which slots a replay audit re-executes, and what a clean audit says.

Pure functions of a verified bundle's identity and plan, so that anyone who audits a bundle
samples the same slots, and verify can check that an audit's attestation names the sample the
bundle's identity gives (:func:`audit_sample`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["AUDIT_LEVEL", "audit_sample", "excluded_fraction"]

#: The confidence a clean audit's bound is stated at.
AUDIT_LEVEL = 0.95


def audit_sample(bundle_sha256: str, population: Sequence[str], n: int) -> list[str]:
    """``n`` slots of ``population`` (the slots that ran, in sealed order), chosen uniformly
    without replacement by NumPy's PCG64 generator seeded with the bundle's sha256 read as an
    integer, returned in sealed order: the same for everyone, and unknown to the author until
    the bundle is final. All of them when ``n`` is at least the population's size."""
    if n >= len(population):
        return list(population)
    rng = np.random.Generator(np.random.PCG64(int(bundle_sha256, 16)))
    chosen = rng.choice(len(population), size=n, replace=False)
    return [population[i] for i in sorted(int(i) for i in chosen)]


def excluded_fraction(n: int, level: float = AUDIT_LEVEL) -> float:
    """The smallest fraction ``f`` of the population's slots that could differ from what the
    simulator gives while ``n`` sampled slots all match with probability at least
    ``1 - level``: all ``n`` match with probability at most ``(1 - f) ** n`` (sampling without
    replacement only lowers it), so a clean audit excludes every fraction at or above
    ``1 - (1 - level) ** (1 / n)`` at ``level``; for ``n = 59``, 4.95% at 95%."""
    return float(1 - (1 - level) ** (1 / n)) if n else 1.0
