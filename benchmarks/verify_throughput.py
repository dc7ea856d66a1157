"""Verify throughput: ``repro verify`` against ``bagit.py --validate`` on the same bag.

``bagit.py --validate`` checks the BagIt layer only (manifests, digests, Payload-Oxum);
``repro verify`` checks that and parses every file strictly, joins plan and runs, scans for
disclosures and re-derives aggregates, tiers, ledger and report. Both run as fresh subprocesses
of this interpreter, alternating which goes first, so start-up and imports count on both; the
script prints each wall time with the CPU time the command used (its process and any it
waited for: verify's workers), the medians of both, their ratios and what verify concluded. On
a machine shared with other work the wall ratio moves with the load; the CPU ratio much less.

Without a bundle it generates a synthetic one of 9,000 runs of 100 steps (9 conditions, as
CAGE-2's leaderboard study; see tests/synthetic.py)::

    uv run python benchmarks/verify_throughput.py [BUNDLE] --repeats 5
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _usage import children_cpu

ROOT = Path(__file__).resolve().parents[1]


def _wall(cmd: list[str]) -> tuple[float, float, int]:
    """Wall time, CPU time and exit status of ``cmd`` in a fresh process, its output discarded."""
    t0, cpu0 = time.perf_counter(), children_cpu()
    status = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    return time.perf_counter() - t0, children_cpu() - cpu0, status


def measure(bundle: Path, repeats: int) -> None:
    """Time both commands on ``bundle`` alternately and print the medians and their ratio."""
    commands = {
        "repro verify": [sys.executable, "-m", "repro", "verify", str(bundle)],
        "bagit.py --validate": [sys.executable, "-m", "bagit", "--validate", str(bundle)],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    statuses: dict[str, set[int]] = {name: set() for name in commands}
    order = list(commands)
    for rep in range(repeats):
        for name in order if rep % 2 == 0 else reversed(order):
            elapsed, cpu, status = _wall(commands[name])
            times[name].append(elapsed)
            cpus[name].append(cpu)
            statuses[name].add(status)
            print(
                f"repeat {rep + 1}: {name:20s} {elapsed:7.3f} s, CPU {cpu:7.3f} s (exit {status})",
                flush=True,
            )
    size = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file())
    runs = sum(1 for p in (bundle / "data/runs").glob("*.jsonl") for _ in p.open("rb"))
    verify_median = statistics.median(times["repro verify"])
    bagit_median = statistics.median(times["bagit.py --validate"])
    print(f"bundle: {bundle} ({runs} run records, {size / 1e6:.1f} MB); repeats: {repeats}")
    print(f"repro verify exit status(es): {sorted(statuses['repro verify'])} (0: verifies)")
    if statuses["bagit.py --validate"] != {0}:
        # A bagit.py that failed to start or rejected the bag timed nothing worth comparing.
        sys.exit(f"bagit.py --validate exited {sorted(statuses['bagit.py --validate'])}: no ratio")
    verify_cpu = statistics.median(cpus["repro verify"])
    bagit_cpu = statistics.median(cpus["bagit.py --validate"])
    print(f"bagit.py --validate median {bagit_median:7.3f} s, CPU {bagit_cpu:7.3f} s")
    print(f"repro verify        median {verify_median:7.3f} s, CPU {verify_cpu:7.3f} s")
    print(
        f"throughput ratio (repro verify / bagit.py --validate): {verify_median / bagit_median:.2f}"
        f" (CPU time: {verify_cpu / bagit_cpu:.2f})"
    )


def main() -> None:
    """Measure on the given bundle, or on a freshly generated synthetic one."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bundle", type=Path, nargs="?", help="a bundle (default: synthetic)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--conditions", type=int, default=9, help="synthetic: conditions")
    parser.add_argument("--runs", type=int, default=1000, help="synthetic: runs per condition")
    parser.add_argument("--steps", type=int, default=100, help="synthetic: steps per run")
    args = parser.parse_args()
    if args.bundle is not None:
        measure(args.bundle, args.repeats)
        return
    sys.path.insert(0, str(ROOT / "tests"))
    from synthetic import synthetic_bundle

    with tempfile.TemporaryDirectory() as tmp:
        bundle = synthetic_bundle(Path(tmp) / "bundle", args.conditions, args.runs, args.steps)
        measure(bundle, args.repeats)


if __name__ == "__main__":
    main()
