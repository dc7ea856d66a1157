"""Which slots a replay audit re-executes, and what a clean audit says.

Pure functions of a verified bundle's identity and plan, so that anyone who audits a bundle
samples the same slots, and verify can check that an audit's attestation names the sample the
bundle's identity gives (:func:`audit_sample`)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from repro.json import canonical
from repro.models import Protocol
from repro.plan.sealing import slot_ids

__all__ = [
    "AUDIT",
    "AUDIT_LEVEL",
    "audit_population",
    "audit_sample",
    "excluded_fraction",
    "sample_problems",
    "sample_sha256",
]

#: The kind of statement ``repro audit --sign`` makes.
AUDIT = "audit"
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


def audit_population(protocol: Protocol) -> list[str]:
    """The slots an audit draws from, in sealed order: every slot whose attempts ran, i.e. all
    but the protocol's declared exclusions (:func:`repro.derive.tally.runs`)."""
    excluded = {x.slot for x in protocol.exclusions}
    return [slot for slot in slot_ids(protocol) if slot not in excluded]


def sample_sha256(slots: Sequence[str]) -> str:
    """The sha256 of the drawn slots' canonical JSON list: how an audit's statement names its
    sample without listing it."""
    return hashlib.sha256(canonical.dumps(list(slots), newline=False)).hexdigest()


def sample_problems(
    protocol: Protocol, bundle_sha256: str, predicate: Mapping[str, Any]
) -> list[str]:
    """What an audit statement's predicate says of its sample that the bundle's identity and
    plan contradict: the population's size, and the sample drawn (``sample`` slots, or
    ``"all"``) by its size and :func:`sample_sha256`."""
    population = audit_population(protocol)
    requested = predicate.get("sample")
    if requested == "all":
        drawn = population
    elif isinstance(requested, int) and not isinstance(requested, bool) and requested >= 1:
        drawn = audit_sample(bundle_sha256, population, requested)
    else:
        return [f"sample is {requested!r}, neither a count of at least 1 nor 'all'"]
    expected = {
        "population": len(population),
        "sampled": len(drawn),
        "sampled_sha256": sample_sha256(drawn),
    }
    return [
        f"{key} is {predicate.get(key)!r}, the bundle's identity gives {value!r}"
        for key, value in expected.items()
        if predicate.get(key) != value
    ]
