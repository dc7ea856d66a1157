"""A fake agent harness for repro's command adapter: no network, no model, deterministic.

It reads the run spec (one JSON object) from stdin and prints one outcome object: the verdict
the "agent" reached on a change under review, its summary and findings (free text), the
domains it looked at, the blocking questions it asked, and the scenario version it ran.

How good the agent is depends on the arm (``raw``: the model alone, ``gated``: with a review
gate, ``static``: a static checker), on the model, and on the release under test, read from
``release.json`` in the release directory:

- ``forget``: concepts this release never mentions (a seeded regression);
- ``stale``: scenario IDs this release still runs at version 1 (superseded runs);
- ``crash``: scenario IDs on which the harness exits 3 (failed runs);
- ``noise``: bytes written to stderr (kept out of the bundle).

Everything else comes from ``random.Random(seed)``, so a run is a function of its spec.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

SKILL = {"raw": 0.1, "gated": 0.9, "static": 0.6}
MODEL_BONUS = {"model-a": 0.0, "model-b": 0.05}


def main() -> None:
    spec = json.loads(sys.stdin.read())
    release = json.loads((Path(spec["release"]) / "release.json").read_text())
    scenario = spec["scenario"]
    sys.stderr.write(release.get("noise", ""))
    if scenario["id"] in release.get("crash", []):
        sys.exit(3)
    factors = spec["factors"]
    rng = random.Random(spec["seed"])
    skill = SKILL[factors["arm"]] + MODEL_BONUS[factors["model"]]
    case = scenario["input"]
    right = rng.random() < skill
    verdict = case["answer"] if right else ("pass" if case["answer"] == "block" else "block")
    forget = set(release.get("forget", []))
    mentioned = [
        concept
        for concept in case["concepts"]
        if concept not in forget and (right or rng.random() < 0.5)
    ]
    domains = [d for d in case["domains"] if right or rng.random() < 0.5]
    questions = [f"what about {c}?" for c in mentioned][: 1 + int(skill * 3)]
    outcome = {
        "verdict": verdict,
        "summary": f"Reviewed {case['title']}: " + "; ".join(mentioned),
        "findings": [f"the change touches {c}" for c in mentioned],
        "domains": domains,
        "blocking_questions": questions,
        "scenario_version": 1
        if scenario["id"] in release.get("stale", [])
        else scenario["version"],
    }
    sys.stdout.write(json.dumps(outcome))


if __name__ == "__main__":
    main()
