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
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _usage import children_cpu

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
    condition_width, run_width = _widths(protocol)
    totals = []
    for number, (env_id, participant) in enumerate(itertools.product(env_ids, participants)):
        env = gym.make(env_id)
        constant = participant["params"].get("action")
        returns = []
        for replicate in range(runs):
            slot = _slot(number, replicate, condition_width, run_width)
            returns.append(_bare_episode(env, _seed(master, slot), constant))
        env.close()
        totals.append(returns)
    return totals


def _widths(protocol: dict[str, Any]) -> tuple[int, int]:
    """The widths of the condition and replicate numbers in repro's slot IDs."""
    conditions = len(protocol["matrix"][0]["levels"]) * len(protocol["participants"])
    return max(2, len(str(conditions - 1))), max(4, len(str(protocol["runs_per_condition"] - 1)))


def _slot(number: int, replicate: int, condition_width: int, run_width: int) -> str:
    return f"c{number:0{condition_width}d}-r{replicate:0{run_width}d}"


def _bare_episode(env: Any, seed: int, constant: Any) -> float:
    """One episode as one would write it by hand: its return."""
    if constant is None:
        env.action_space.seed(seed)
    env.reset(seed=seed)
    total = 0.0
    while True:
        action = env.action_space.sample() if constant is None else constant
        _obs, reward, terminated, truncated, _info = env.step(action)
        total += float(reward)
        if terminated or truncated:
            return total


def in_process(protocol: dict[str, Any], episodes: int) -> list[tuple[str, float, float, int]]:
    """Per condition (named ``env_id participant``): the CPU seconds of its first ``episodes``
    episodes run by the bare loop and by the adapter's own session (what a worker process calls
    for each run, the trace digest included), interleaved episode by episode in this one
    process, which goes first alternating; and the episodes' steps. No process, pipe, file or
    parent is in it: what it shows is what a run costs in the worker over the bare loop."""
    import gymnasium as gym

    from repro.adapters._gymnasium import _GymSession
    from repro.models import Condition, Participant, PlanEntry

    env_ids, participants = protocol["matrix"][0]["levels"], protocol["participants"]
    master = protocol["seeding"]["seed"]
    widths = _widths(protocol)
    out = []
    for number, (env_id, participant) in enumerate(itertools.product(env_ids, participants)):
        condition = f"c{number:0{widths[0]}d}"
        env = gym.make(env_id)
        session = _GymSession(
            Condition(id=condition, factors={"env_id": env_id}, participant=participant["id"]),
            Participant(**participant),
            stream=False,
        )
        constant = participant["params"].get("action")
        bare = adapter = 0.0
        steps = 0
        for replicate in range(episodes):
            slot = _slot(number, replicate, *widths)
            seed = _seed(master, slot)
            entry = PlanEntry(
                slot=slot, condition=condition, replicate=replicate, order=0, seed=seed
            )
            for side in ("bare", "adapter") if replicate % 2 == 0 else ("adapter", "bare"):
                t0 = time.process_time()
                if side == "bare":
                    _bare_episode(env, seed, constant)
                    bare += time.process_time() - t0
                else:
                    steps += session.run(entry).steps or 0
                    adapter += time.process_time() - t0
        session.close()
        env.close()
        out.append((f"{env_id} {participant['id']}", bare, adapter, steps))
    return out


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
    parser.add_argument(
        "--in-process",
        type=int,
        default=100,
        metavar="EPISODES",
        help="episodes per condition of the in-process comparison (0: none)",
    )
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
                "repro": [sys.executable, "-m", "repro._cli.app", "study", str(protocol_path)],
            }
            commands["repro"] += ["--out", str(bundle)]
            for name in ("bare", "repro") if rep % 2 == 0 else ("repro", "bare"):
                t0, cpu0 = time.perf_counter(), children_cpu()
                subprocess.run(commands[name], check=True, capture_output=True)
                elapsed, cpu = time.perf_counter() - t0, children_cpu() - cpu0
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
    if args.in_process <= 0:
        return
    # Where the gap goes: the part a run costs in the worker over the bare loop, measured without
    # processes, and scaled to the study's episodes, beside the gap of the medians.
    episodes_each = min(args.in_process, args.runs)
    print(
        f"in one process, {episodes_each} episodes per condition, bare loop and the adapter's "
        "session run interleaved (CPU time):",
        flush=True,
    )
    scaled = bare_all = adapter_all = 0.0
    for name, bare_cpu, adapter_cpu, steps in in_process(protocol, episodes_each):
        extra = adapter_cpu - bare_cpu
        scaled += extra / episodes_each * args.runs
        bare_all, adapter_all = bare_all + bare_cpu, adapter_all + adapter_cpu
        print(
            f"  {name}: bare {1e3 * bare_cpu / episodes_each:.3f} ms, adapter "
            f"{1e3 * adapter_cpu / episodes_each:.3f} ms an episode ({steps / episodes_each:.1f} "
            f"steps); {1e6 * extra / steps:+.2f} us a step, ratio {adapter_cpu / bare_cpu:.3f}",
            flush=True,
        )
    print(
        f"the adapter's runs over the bare loop, scaled to {episodes} episodes: {scaled:.2f} s "
        f"CPU, of a gap of the wall medians of {r - b:.2f} s"
    )
    # Every condition ran as many episodes on each side, as in the study: the ratio of the sums
    # is what the runs alone give the study's ratio, before its start-up, processes and files.
    print(
        f"the adapter's runs alone over the bare loop's, every condition: {adapter_all:.2f} / "
        f"{bare_all:.2f} s CPU, ratio {adapter_all / bare_all:.3f} (the study's target: <= 1.05)"
    )


if __name__ == "__main__":
    main()
