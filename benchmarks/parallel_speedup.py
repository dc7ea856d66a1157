"""Parallel speed-up: wall time of ``repro study --workers 1`` over ``--workers 2``, same protocol.

Two protocols, each scaled up in a temporary copy: the quick-start Gymnasium study
(protocols/gymnasium-classic-control.json, six partitions) and the per-run CAGE-2 study
(protocols/cage2-ccs-sleeper-per-run.json, nine partitions; skipped when csle-cyborg or the
scenario files are missing). Each side runs as a fresh subprocess, the two alternating in order
from one repeat to the next; the script prints each wall time, the medians and their ratio, and
checks that both sides wrote byte-identical runs files (otherwise the comparison is void).

    uv run --extra cyborg python benchmarks/parallel_speedup.py --repeats 3
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _runs_digest(bundle: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted((bundle / "data/runs").glob("*.jsonl")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def measure(
    name: str, protocol: dict[str, object], options: list[str], repeats: int, work: Path
) -> float:
    """Time both worker counts ``repeats`` times, alternating; print and return the ratio of
    the medians (serial over two workers)."""
    path = work / f"{name}.json"
    path.write_text(json.dumps(protocol))
    times: dict[int, list[float]] = {1: [], 2: []}
    for rep in range(repeats):
        order = (1, 2) if rep % 2 == 0 else (2, 1)
        digests = set()
        for workers in order:
            out = work / f"{name}-{rep}-w{workers}"
            command = [
                sys.executable,
                "-m",
                "repro._cli.app",
                "study",
                str(path),
                "--out",
                str(out),
            ]
            command += ["--workers", str(workers), *options]
            t0 = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True)
            elapsed = time.perf_counter() - t0
            times[workers].append(elapsed)
            digests.add(_runs_digest(out))
            print(f"{name}: repeat {rep + 1}: --workers {workers} {elapsed:8.2f} s", flush=True)
        if len(digests) != 1:
            sys.exit(f"{name}: the runs files differ between worker counts: the comparison is void")
    serial, parallel = statistics.median(times[1]), statistics.median(times[2])
    print(f"{name}: --workers 1 median {serial:8.2f} s")
    print(f"{name}: --workers 2 median {parallel:8.2f} s")
    print(f"{name}: speed-up (workers 1 / workers 2): {serial / parallel:.3f}", flush=True)
    return serial / parallel


def parallel_capacity() -> float:
    """How many cores two busy processes get here now: twice the wall time of one busy loop
    alone over that of two at once (2.0 on two free cores; less when other work loads them)."""
    command = [sys.executable, "-c", "sum(range(4 * 10**7))"]
    t0 = time.perf_counter()
    subprocess.run(command, check=True)
    alone = time.perf_counter() - t0
    t0 = time.perf_counter()
    pair = [subprocess.Popen(command) for _ in range(2)]
    for process in pair:
        process.wait()
    return 2 * alone / (time.perf_counter() - t0)


def main() -> None:
    """Measure the speed-up on both protocols."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--gym-runs", type=int, default=500, help="episodes per Gymnasium condition"
    )
    parser.add_argument("--cage2-runs", type=int, default=40, help="episodes per CAGE-2 condition")
    parser.add_argument("--scenario-dir", type=Path, default=ROOT.parent / "shared/cage2/scenario")
    args = parser.parse_args()
    print(
        f"cores: {os.cpu_count()}; load average: {os.getloadavg()[0]:.2f}; "
        f"parallel capacity: {parallel_capacity():.2f}",
        flush=True,
    )
    ratios = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        gym = json.loads((ROOT / "protocols/gymnasium-classic-control.json").read_text())
        gym["runs_per_condition"] = args.gym_runs
        ratios["gymnasium"] = measure("gymnasium", gym, [], args.repeats, work)
        if importlib.util.find_spec("csle_cyborg") is None or not args.scenario_dir.is_dir():
            print("cage2: skipped (needs the cyborg extra and the Scenario2 files)")
        else:
            cage2 = json.loads((ROOT / "protocols/cage2-ccs-sleeper-per-run.json").read_text())
            cage2["runs_per_condition"] = args.cage2_runs
            option = ["--option", f"scenario_dir={args.scenario_dir}"]
            ratios["cage2"] = measure("cage2", cage2, option, args.repeats, work)
    print(
        f"load average after: {os.getloadavg()[0]:.2f}; "
        f"parallel capacity: {parallel_capacity():.2f}"
    )
    print("; ".join(f"{name} speed-up {ratio:.3f}" for name, ratio in ratios.items()))


if __name__ == "__main__":
    main()
