"""Verify memory: peak resident memory of ``repro verify`` on 9,000 and on 90,000 runs.

Generates two synthetic bundles that differ only in their runs per condition (by default 9
conditions of 1,000 and of 10,000 runs of 100 steps: CAGE-2's leaderboard study and ten times
it; see tests/synthetic.py), verifies each in a fresh subprocess of this interpreter and reads
the child's peak resident set size from the kernel (``os.wait4``). Prints both, the ratio of
the larger to the smaller, and what verify concluded (both must verify)::

    uv run python benchmarks/verify_memory.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _trees import synthetic


def peak_rss(bundle: Path) -> tuple[int, float, int]:
    """Peak resident set size in bytes, wall time and exit status of ``repro verify`` on
    ``bundle`` in a fresh process."""
    t0 = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "repro", "verify", str(bundle)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # wait4 reports this child's own usage (RUSAGE_CHILDREN would be the largest of all).
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss * 1024, time.perf_counter() - t0, child.returncode


def main() -> None:
    """Generate both bundles, verify each, print the peaks and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=1, help="verifications per bundle")
    parser.add_argument("--conditions", type=int, default=9)
    parser.add_argument("--small", type=int, default=1000, help="runs per condition, smaller")
    parser.add_argument("--large", type=int, default=10000, help="runs per condition, larger")
    parser.add_argument("--steps", type=int, default=100, help="steps per run")
    args = parser.parse_args()
    peaks: dict[int, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for runs in (args.small, args.large):
            total = runs * args.conditions
            bundle = synthetic(Path(tmp) / f"r{runs}", args.conditions, runs, args.steps)
            size = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file())
            measured = []
            for rep in range(args.repeats):
                rss, wall, status = peak_rss(bundle)
                measured.append(rss)
                print(
                    f"{total:7d} runs ({size / 1e6:5.1f} MB), repeat {rep + 1}: "
                    f"peak RSS {rss / 1e6:6.1f} MB, {wall:6.2f} s, exit {status}",
                    flush=True,
                )
                if status != 0:
                    sys.exit(f"the {total}-run bundle does not verify: the comparison is void")
            peaks[total] = int(statistics.median(measured))
    (small, small_rss), (large, large_rss) = sorted(peaks.items())
    print(f"peak RSS, median: {small} runs {small_rss / 1e6:.1f} MB", end="; ")
    print(f"{large} runs {large_rss / 1e6:.1f} MB")
    print(f"memory ratio ({large} / {small} runs): {large_rss / small_rss:.2f}")


if __name__ == "__main__":
    main()
