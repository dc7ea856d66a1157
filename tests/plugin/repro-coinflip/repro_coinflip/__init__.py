"""Seeded coin flips as a repro adapter: a third-party plugin, as small as one can be.

Factor ``flips``: tosses per episode, a whole number from 1 to 10,000. Participants are
``kind: "coin"`` with ``params.heads``, the probability of heads (0 to 1). A toss scores 1 for
heads, 0 for tails; a run's step rewards are its tosses, so ``episode_return`` counts heads.

Deterministic by construction: run ``slot``'s tosses are ``random.Random(seed).random() < heads``
for the slot's per-run seed, one draw per toss, so a test can recompute every run of a bundle.
``stream`` seeding is refused: one shared stream would add nothing to this example.
"""

from __future__ import annotations

import importlib.metadata
import random
from collections.abc import Mapping
from typing import Any

from repro.adapters import (
    AdapterFacts,
    BadInput,
    Condition,
    Evidence,
    Frozen,
    PlanEntry,
    Protocol,
    TraceDigest,
    module_file_source,
    package_source,
)

__all__ = ["CoinflipAdapter"]

MAX_FLIPS = 10_000


class CoinflipAdapter:
    """Episodes of coin tosses; the contract of :mod:`repro.adapters._base`."""

    name = "coinflip"

    def freeze(self, protocol: Protocol, options: Mapping[str, str]) -> Frozen:
        """Check the seeding, the options, the flips factor and the coins; pin this package (by
        version) and this module (by sha256)."""
        if protocol.seeding.mode != "per-run":
            raise BadInput("protocol: the coinflip adapter takes per-run seeding @ $.seeding.mode")
        if protocol.adapter.options or options:
            raise BadInput("protocol: the coinflip adapter takes no options @ $.adapter.options")
        for i, factor in enumerate(protocol.matrix):
            if factor.name != "flips":
                raise BadInput(f"protocol: unknown factor {factor.name!r} @ $.matrix[{i}].name")
            for j, level in enumerate(factor.levels):
                if not isinstance(level, int) or not 1 <= level <= MAX_FLIPS:
                    raise BadInput(
                        f"protocol: flips must be a whole number from 1 to {MAX_FLIPS} "
                        f"@ $.matrix[{i}].levels[{j}]"
                    )
        if [f.name for f in protocol.matrix] != ["flips"]:
            raise BadInput("protocol: the coinflip adapter needs a 'flips' factor @ $.matrix")
        for i, participant in enumerate(protocol.participants):
            heads = participant.params.get("heads")
            if participant.kind != "coin" or set(participant.params) != {"heads"}:
                raise BadInput(
                    f"protocol: a participant is a coin with params.heads @ $.participants[{i}]"
                )
            if not isinstance(heads, int | float) or isinstance(heads, bool) or not 0 <= heads <= 1:
                raise BadInput(
                    f"protocol: heads must be a probability @ $.participants[{i}].params.heads"
                )
        version = importlib.metadata.version("repro-coinflip")
        facts = AdapterFacts(
            name=self.name,
            version=version,
            observation_scope="full",
            observation_note="every toss is digested into each run's trace",
            measure_inputs="step-rewards",
        )
        sources = (
            package_source("simulator", "repro-coinflip"),
            module_file_source("adapter", __name__),
        )
        return Frozen(facts=facts, sources=sources)

    def open(self, protocol: Protocol, condition: Condition, frozen: Frozen) -> _Session:
        """A coin for the condition's participant and number of flips."""
        participant = next(p for p in protocol.participants if p.id == condition.participant)
        return _Session(int(condition.factors["flips"]), float(participant.params["heads"]))


class _Session:
    def __init__(self, flips: int, heads: float) -> None:
        self._flips = flips
        self._heads = heads
        self.contract: dict[str, Any] = {"flips": flips, "heads": heads}

    def run(self, entry: PlanEntry) -> Evidence:
        assert entry.seed is not None  # per-run seeding only (checked at freeze)
        rng = random.Random(entry.seed)
        rewards = tuple(1.0 if rng.random() < self._heads else 0.0 for _ in range(self._flips))
        trace = TraceDigest()
        for reward in rewards:
            trace.add(b"T", b"H" if reward else b"T")
        return Evidence(
            step_rewards=rewards,
            reported_measure=None,
            steps=len(rewards),
            trace_sha256=trace.hexdigest(),
        )

    def close(self) -> None:
        """Nothing to release."""
