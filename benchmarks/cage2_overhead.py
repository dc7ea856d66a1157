"""Apparatus overhead on CAGE-2: ``repro study`` against a bare evaluation loop, same episodes.

The bare loop is the leaderboard evaluator's loop with the published seed statement: set
``random.seed(153)`` once; for trial lengths [30, 50, 100], for red agents [B_lineAgent,
RedMeanderAgent, SleepAgent]: build the environment, wrap it for Blue, reset; per episode take
``trial_length`` sleeping steps (recording, as the evaluator does, both agents' last actions as
strings), sum the rewards, reset. Both sides run as fresh subprocesses, alternating, so start-up
and imports count on both; the script prints each wall time, the medians and their ratio, and
checks that both sides produced the same per-episode totals.

    uv run --extra cyborg python benchmarks/cage2_overhead.py --episodes 50 --repeats 3
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRIAL_LENGTHS = (30, 50, 100)
RED_AGENTS = ("B_lineAgent", "RedMeanderAgent", "SleepAgent")


def bare_loop(
    scenario_dir: Path,
    episodes: int,
    seed: int = 153,
    trial_lengths: tuple[int, ...] = TRIAL_LENGTHS,
) -> list[list[float]]:
    """Per-condition lists of episode totals, from the evaluator's loop with the seed set once
    (over ``trial_lengths``, the evaluator's three unless told)."""
    from repro.adapters._cyborg import load_backend, resolve_scenario

    backend = load_backend("csle-cyborg")  # imports only: the classes the evaluator uses
    main, wrapper = backend.classes["Main"], backend.classes["ChallengeWrapper"]
    random.seed(seed)
    totals = []
    for steps in trial_lengths:
        for red in RED_AGENTS:
            cyborg = main(
                resolve_scenario(scenario_dir), "sim", agents={"Red": backend.classes[red]}
            )
            wrapped = wrapper(env=cyborg, agent_name="Blue")
            wrapped.reset()
            condition = []
            for _ in range(episodes):
                rewards, actions = [], []
                for _ in range(steps):
                    _obs, reward, _done, _trunc, _info = wrapped.step(0)  # the Sleeping Agent
                    rewards.append(reward)
                    actions.append(
                        (str(cyborg.get_last_action("Blue")), str(cyborg.get_last_action("Red")))
                    )
                condition.append(sum(rewards))
                wrapped.reset()
            totals.append(condition)
    return totals


def _repro_totals(bundle: Path) -> list[list[float]]:
    out = []
    for path in sorted((bundle / "data/runs").glob("c*.jsonl")):
        out.append([json.loads(line)["measure"] for line in path.read_text().splitlines()])
    return out


def main() -> None:
    """Run both sides alternately and print the ratio of medians."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=50, help="episodes per condition")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scenario-dir", type=Path, default=ROOT.parent / "shared/cage2/scenario")
    parser.add_argument("--bare", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bare-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare:
        args.bare_out.write_text(json.dumps(bare_loop(args.scenario_dir, args.episodes)))
        return

    protocol = json.loads((ROOT / "protocols/cage2-ccs-sleeper.json").read_text())
    protocol["id"] = f"cage2-ccs-sleeper-bench-{args.episodes}"
    protocol["runs_per_condition"] = args.episodes
    bare_times, repro_times = [], []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        protocol_path = work / "protocol.json"
        protocol_path.write_text(json.dumps(protocol))
        for rep in range(args.repeats):
            bare_out, bundle = work / f"bare-{rep}.json", work / f"bundle-{rep}"
            bare_cmd = [
                sys.executable,
                __file__,
                "--bare",
                "--episodes",
                str(args.episodes),
                "--scenario-dir",
                str(args.scenario_dir),
                "--bare-out",
                str(bare_out),
            ]
            repro_cmd = [
                sys.executable,
                "-m",
                "repro._cli.app",
                "study",
                str(protocol_path),
                "--out",
                str(bundle),
                "--option",
                f"scenario_dir={args.scenario_dir}",
            ]
            order = [("bare", bare_cmd), ("repro", repro_cmd)]
            for name, cmd in order if rep % 2 == 0 else reversed(order):
                t0 = time.perf_counter()
                subprocess.run(cmd, check=True, capture_output=True)
                elapsed = time.perf_counter() - t0
                (bare_times if name == "bare" else repro_times).append(elapsed)
                print(f"repeat {rep + 1}: {name:5s} {elapsed:8.2f} s", flush=True)
            # The evaluator sums rewards left to right; repro's measure is the correctly rounded
            # sum (math.fsum), so the two may differ in the last bits, never more.
            bare = itertools.chain.from_iterable(json.loads(bare_out.read_text()))
            pairs = zip(bare, itertools.chain.from_iterable(_repro_totals(bundle)), strict=True)
            gap = max(abs(a - b) for a, b in pairs)
            same = gap < 1e-6
            print(f"repeat {rep + 1}: largest per-episode difference {gap:.1e}", flush=True)
            if not same:
                sys.exit("the two sides disagree: the comparison is void")
    b, r = statistics.median(bare_times), statistics.median(repro_times)
    episodes = args.episodes * len(TRIAL_LENGTHS) * len(RED_AGENTS)
    print(f"episodes per run: {episodes}; repeats: {args.repeats}")
    print(f"bare loop   median {b:8.2f} s")
    print(f"repro study median {r:8.2f} s")
    print(f"overhead ratio (repro / bare): {r / b:.3f}")


if __name__ == "__main__":
    main()
