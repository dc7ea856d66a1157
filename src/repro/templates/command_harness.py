"""A starting harness for repro's command adapter, written beside the protocol by
``repro protocol new --adapter command --out FILE`` (as ``harness.py``). Replace its ``answer``
with a call of your own agent or model; keep its input and output.

repro starts it once per run, writes the run spec to its stdin as one JSON object and reads one
JSON object, the outcome, from its stdout (repro's docs/harness.md is the contract, key by key). It
exits 0 with the outcome; any other exit fails the run (``harness-exit:N``). What it writes to
stderr never enters the bundle: only its length and sha256 do.

This one has no model and no network: a pretend reviewer whose verdict and findings depend on
the ``arm`` factor (``raw`` or ``gated``) and on ``random.Random(seed)``, so that a run is a
function of its spec and a replay gives the same bytes.
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

#: How often the pretend reviewer gets a scenario right, by arm.
SKILL = {"raw": 0.2, "gated": 0.9}


def answer(spec: dict[str, Any]) -> dict[str, Any]:
    """The outcome of one run: what the protocol's outcome_schema requires and its scoring
    reads (verdict, summary, findings, blocking_questions, and the scenario_version it ran)."""
    scenario = spec["scenario"]
    case = scenario["input"]
    rng = random.Random(spec["seed"])
    right = rng.random() < SKILL.get(spec["factors"].get("arm", ""), 0.5)
    wrong = "pass" if case["answer"] == "block" else "block"
    seen = [c for c in case["concepts"] if right or rng.random() < 0.5]
    return {
        "verdict": case["answer"] if right else wrong,
        "summary": f"Reviewed {case['title']}: " + "; ".join(seen),
        "findings": [f"the change touches {c}" for c in seen],
        "blocking_questions": [f"what about {c}?" for c in seen],
        # The version of the scenario this harness ran: a run that reports another version
        # than the protocol's is superseded, never counted.
        "scenario_version": scenario["version"],
    }


def main() -> None:
    spec = json.loads(sys.stdin.read())
    print(f"harness: slot {spec['slot']}", file=sys.stderr)  # kept out of the bundle
    sys.stdout.write(json.dumps(answer(spec)))


if __name__ == "__main__":
    main()
