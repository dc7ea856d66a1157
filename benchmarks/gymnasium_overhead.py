"""Apparatus overhead on Gymnasium: ``repro study`` against a bare loop over the same episodes.

The protocol is the quick-start study (protocols/gymnasium-classic-control.json: three
classic-control environments x seeded random and constant-action policies, per-run seeding),
scaled up in a temporary copy. The bare loop is what one would write by hand for the same
episodes: per condition make the environment; per episode compute the slot's seed as repro
does (sha256 of ``repro.seed/1:<master>:<slot>``, first 8 bytes, shifted right by one), seed the
action space with it (random policy), ``reset(seed=...)``, step until terminated or truncated,
sum the rewards. Both sides run as fresh subprocesses, alternating, so start-up and imports
count on both; the script prints each wall time, the medians and their ratio, and checks that
both sides produced the same per-episode returns (otherwise the comparison is void). Each run's
CPU time (every process of the side) and the load average are printed beside its wall time:
on a shared machine the wall ratio moves with the load.

    uv run python benchmarks/gymnasium_overhead.py --runs 1000 --repeats 3
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _seed(master: int, slot: str) -> int:
    digest = hashlib.sha256(f"repro.seed/1:{master}:{slot}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def bare_loop(protocol: dict[str, Any]) -> list[list[float]]:
    """Per-condition lists of episode returns, conditions in repro's order (first factor
    outermost, participants innermost), slots named as repro names them."""
    import gymnasium as gym

    env_ids = protocol["matrix"][0]["levels"]
    participants = protocol["participants"]
    runs, master = protocol["runs_per_condition"], protocol["seeding"]["seed"]
    condition_width = max(2, len(str(len(env_ids) * len(participants) - 1)))
    run_width = max(4, len(str(runs - 1)))
    totals = []
    for number, (env_id, participant) in enumerate(itertools.product(env_ids, participants)):
        env = gym.make(env_id)
        constant = participant["params"].get("action")
        returns = []
        for replicate in range(runs):
            seed = _seed(master, f"c{number:0{condition_width}d}-r{replicate:0{run_width}d}")
            if constant is None:
                env.action_space.seed(seed)
            env.reset(seed=seed)
            total = 0.0
            while True:
                action = env.action_space.sample() if constant is None else constant
                _obs, reward, terminated, truncated, _info = env.step(action)
                total += float(reward)
                if terminated or truncated:
                    break
            returns.append(total)
        env.close()
        totals.append(returns)
    return totals


def _children_cpu() -> float:
    """User and system CPU seconds of the child processes waited for so far (a study's worker
    processes included: each is waited for by its study)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _repro_returns(bundle: Path) -> list[list[float]]:
    return [
        [json.loads(line)["measure"] for line in path.read_text().splitlines()]
        for path in sorted((bundle / "data/runs").glob("c*.jsonl"))
    ]


def main() -> None:
    """Run both sides alternately and print the ratio of medians."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000, help="episodes per condition")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--bare", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--bare-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare:
        args.bare_out.write_text(json.dumps(bare_loop(json.loads(args.bare.read_text()))))
        return

    protocol = json.loads((ROOT / "protocols/gymnasium-classic-control.json").read_text())
    protocol["id"] = f"gymnasium-classic-control-bench-{args.runs}"
    protocol["runs_per_condition"] = args.runs
    print(f"cores: {os.cpu_count()}; load average: {os.getloadavg()[0]:.2f}", flush=True)
    times: dict[str, list[float]] = {"bare": [], "repro": []}
    cpus: dict[str, list[float]] = {"bare": [], "repro": []}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        protocol_path = work / "protocol.json"
        protocol_path.write_text(json.dumps(protocol))
        for rep in range(args.repeats):
            bare_out, bundle = work / f"bare-{rep}.json", work / f"bundle-{rep}"
            bare_args = ["--bare", str(protocol_path), "--bare-out", str(bare_out)]
            commands = {
                "bare": [sys.executable, __file__, *bare_args],
                "repro": [sys.executable, "-m", "repro.cli.app", "study", str(protocol_path)],
            }
            commands["repro"] += ["--out", str(bundle)]
            for name in ("bare", "repro") if rep % 2 == 0 else ("repro", "bare"):
                t0, cpu0 = time.perf_counter(), _children_cpu()
                subprocess.run(commands[name], check=True, capture_output=True)
                elapsed, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
                times[name].append(elapsed)
                cpus[name].append(cpu)
                print(
                    f"repeat {rep + 1}: {name:5s} {elapsed:8.2f} s wall, {cpu:8.2f} s CPU "
                    f"(every process of the side), load average {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
            # repro's measure is the correctly rounded sum (math.fsum), the bare loop sums left
            # to right: they may differ in the last bits, never more.
            bare = itertools.chain.from_iterable(json.loads(bare_out.read_text()))
            ours = itertools.chain.from_iterable(_repro_returns(bundle))
            gap = max(abs(a - b) for a, b in zip(bare, ours, strict=True))
            print(f"repeat {rep + 1}: largest per-episode difference {gap:.1e}", flush=True)
            if gap > 1e-6:
                sys.exit("the two sides disagree: the comparison is void")
    b, r = statistics.median(times["bare"]), statistics.median(times["repro"])
    episodes = args.runs * len(protocol["matrix"][0]["levels"]) * len(protocol["participants"])
    print(f"episodes per run: {episodes}; repeats: {args.repeats}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(f"bare loop   median {b:8.2f} s")
    print(f"repro study median {r:8.2f} s")
    print(f"overhead ratio (repro / bare): {r / b:.3f}")
    # On a shared machine the wall ratio moves with the load; the CPU ratio much less.
    cb, cr = statistics.median(cpus["bare"]), statistics.median(cpus["repro"])
    print(f"CPU medians: bare {cb:.2f} s, repro {cr:.2f} s; ratio {cr / cb:.3f}")


if __name__ == "__main__":
    main()
