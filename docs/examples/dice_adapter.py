"""A toy adapter for repro: fair dice, rolled anew in every run.

Registered as ``dice`` (see docs/adapter-api.md). Factors: ``sides`` (faces of the die, a whole
number from 2 to 1000) and ``rolls`` (rolls per run, from 1 to 10000). Participants (``kind``):

- ``keep``: keeps every roll;
- ``reroll-below``: rolls once more when a roll is below ``params.threshold``, and keeps that.

A run is one episode of ``rolls`` steps, each step's reward the face kept. Its random numbers come
from a generator of its own, seeded with the slot's seed (``per-run`` seeding) or with a 63-bit
draw from the stream the protocol seeds once (``stream`` seeding): a run is a function of its
seed, whatever ran before it in the same process.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from repro.adapters import (
    AdapterFacts,
    BadInput,
    Condition,
    Evidence,
    Frozen,
    Participant,
    PlanEntry,
    Protocol,
    TraceDigest,
    module_file_source,
)

#: Each factor's allowed whole numbers, lowest and highest.
FACTORS = {"sides": (2, 1000), "rolls": (1, 10_000)}
#: Each participant kind's params.
KINDS: dict[str, set[str]] = {"keep": set(), "reroll-below": {"threshold"}}


def _whole(value: object, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


class DiceAdapter:
    """Rolls a fair die."""

    name = "dice"

    def freeze(self, protocol: Protocol, options: Mapping[str, str]) -> Frozen:
        """Check the protocol's part that is the adapter's, naming the JSON path of any problem,
        and pin what defines the runs: this file."""
        if protocol.adapter.options or options:
            raise BadInput.at(
                "$.adapter.options", "the dice adapter takes no options", "unknown-field"
            )
        for i, factor in enumerate(protocol.matrix):
            if factor.name not in FACTORS:
                raise BadInput.at(
                    f"$.matrix[{i}].name", f"unknown factor {factor.name!r}", "not-allowed"
                )
            low, high = FACTORS[factor.name]
            for j, level in enumerate(factor.levels):
                if not _whole(level, low, high):
                    raise BadInput.at(
                        f"$.matrix[{i}].levels[{j}]",
                        f"{factor.name} must be a whole number from {low} to {high}",
                        "not-allowed",
                    )
        missing = sorted(set(FACTORS) - {f.name for f in protocol.matrix})
        if missing:
            raise BadInput.at(
                "$.matrix", f"the dice adapter needs the factor(s) {missing}", "missing-field"
            )
        for i, participant in enumerate(protocol.participants):
            where = f"$.participants[{i}]"
            if participant.kind not in KINDS:
                raise BadInput.at(
                    f"{where}.kind",
                    f"unknown kind {participant.kind!r} (keep, reroll-below)",
                    "not-allowed",
                )
            allowed = KINDS[participant.kind]
            if set(participant.params) != allowed:
                raise BadInput.at(
                    f"{where}.params",
                    f"{participant.kind} takes the params {sorted(allowed)}",
                    "not-allowed",
                )
            if participant.kind == "reroll-below" and not _whole(
                participant.params["threshold"], 1, 1000
            ):
                raise BadInput.at(
                    f"{where}.params.threshold",
                    "threshold must be a whole number from 1 to 1000",
                    "not-allowed",
                )
        facts = AdapterFacts(
            name=self.name,
            version="1",
            observation_scope="full",
            observation_note="every roll, every reroll decision and every face kept is digested "
            "into each run's trace",
            measure_inputs="step-rewards",
        )
        return Frozen(facts=facts, sources=(module_file_source("simulator", __name__),))

    def open(self, protocol: Protocol, condition: Condition, frozen: Frozen) -> DiceSession:
        """Open the session of one condition: its die and its participant."""
        participant = next(p for p in protocol.participants if p.id == condition.participant)
        return DiceSession(condition, participant)


class DiceSession:
    """One condition's die and participant."""

    def __init__(self, condition: Condition, participant: Participant) -> None:
        self.sides = int(condition.factors["sides"])
        self.rolls = int(condition.factors["rolls"])
        self.threshold: int | None = participant.params.get("threshold")
        # The facts every run of the condition sees; each run record carries their digest.
        self.contract: dict[str, Any] = {
            "sides": self.sides,
            "rolls": self.rolls,
            "participant": participant.id,
            "kind": participant.kind,
            "threshold": self.threshold,
        }

    def run(self, entry: PlanEntry) -> Evidence:
        """Roll ``rolls`` times; each step's reward is the face kept."""
        seed = entry.seed if entry.seed is not None else random.getrandbits(63)
        rng = random.Random(seed)
        trace = TraceDigest()
        rewards: list[float] = []
        for _ in range(self.rolls):
            face = rng.randint(1, self.sides)
            trace.add(b"O", face.to_bytes(2, "big"))
            reroll = self.threshold is not None and face < self.threshold
            trace.add(b"A", b"\x01" if reroll else b"\x00")
            if reroll:
                face = rng.randint(1, self.sides)
            trace.add(b"R", face.to_bytes(2, "big"))
            rewards.append(float(face))
        return Evidence(
            step_rewards=tuple(rewards),
            reported_measure=None,
            steps=len(rewards),
            trace_sha256=trace.hexdigest(),
        )

    def close(self) -> None:
        """Nothing to release."""
