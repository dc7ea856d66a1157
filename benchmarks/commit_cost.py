"""What a change costs: ``repro verify`` and ``repro study`` timed with two versions of repro.

The baseline is a commit (``--baseline``, HEAD by default), the candidate a commit or the
working tree (``--candidate``, the default), each as the source tree ``byte_identity.py``
extracts, run in this interpreter's environment with ``PYTHONPATH`` set to its ``src``. Two
workloads, each as a fresh subprocess, alternating which version goes first:

- verify: ``repro verify`` of one synthetic bundle of 9,000 runs of 100 steps (9 conditions,
  as CAGE-2's leaderboard study; tests/synthetic.py), the same bundle for both versions;
- study: ``repro study`` of the quick-start protocol (protocols/gymnasium-classic-control.json)
  into a fresh root, whose wall time is mostly the apparatus's (the episodes take
  microseconds a step).

It prints each time, the medians and the ratios (candidate / baseline), and exits 1 if a
version's command fails.

    uv run python benchmarks/commit_cost.py --baseline ebae8d8 --repeats 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from byte_identity import repro, tree

ROOT = Path(__file__).resolve().parents[1]
PROTOCOL = ROOT / "protocols" / "gymnasium-classic-control.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="HEAD", help="the commit before (default: HEAD)")
    parser.add_argument("--candidate", default=None, help="a commit (default: the working tree)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "tests"))
    from synthetic import synthetic_bundle

    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        sides = {
            "baseline": tree(args.baseline, base / "baseline"),
            "candidate": tree(args.candidate, base / "candidate"),
        }
        bundle = synthetic_bundle(base / "bundle", 9, 1000, 100)
        times: dict[tuple[str, str], list[float]] = {}
        for rep in range(args.repeats):
            for side in list(sides) if rep % 2 == 0 else list(reversed(sides)):
                out = base / f"study-{side}-{rep}"
                verify = ["verify", str(bundle)]
                study = ["study", str(PROTOCOL), "--out", str(out)]
                for workload, args in (("verify", verify), ("study", study)):
                    elapsed = repro(sides[side], *args)
                    times.setdefault((workload, side), []).append(elapsed)
                    print(f"repeat {rep + 1}: {workload} {side:9s} {elapsed:7.3f} s", flush=True)
    for workload in ("verify", "study"):
        medians = {side: statistics.median(times[(workload, side)]) for side in sides}
        ratio = medians["candidate"] / medians["baseline"]
        print(
            f"{workload}: baseline median {medians['baseline']:.3f} s, candidate median "
            f"{medians['candidate']:.3f} s, ratio {ratio:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
