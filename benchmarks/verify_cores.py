"""Verify on the cores it has: ``repro verify`` on one core against two, and against a baseline.

Two comparisons, each of fresh subprocesses of this interpreter run alternately (which goes
first alternates too), medians printed with the load average before and after:

1. The 90,000-run synthetic bundle (9 conditions of 10,000 runs of 100 steps; tests/synthetic.py)
   verified under ``taskset -c 0`` (one core: verify then runs its jobs in its own process) and
   ``taskset -c 0,1`` (two: in two workers); the ratio of the medians, and whether ``repro
   verify --json`` printed the same bytes on one core and on two, for the clean bundle and for
   a few tampered copies of the 9,000-run one (a step reward changed, a run record dropped, a
   times line dropped, a partition's entry changed, two runs swapped), each verified on one
   core and on two.
2. A 9,000-run bundle verified by this tree and by ``--baseline REV`` (``git archive`` of
   that commit's ``src``, ``schemas`` and ``tests``), on every core: the ratio of the medians.
   The bundle is the baseline's own (its tests/synthetic.py, run with its ``src``): a later
   version verifies what an earlier one wrote, where an earlier one need not verify a later
   one's bundle (whose report text, say, has changed since). Then what
   bounds it from below: ``python -c "import repro._cli.app, repro.verify"`` with each tree,
   the imports every verification makes before it reads a bundle, and the ratio of what is
   left of each side's median without them; and the least wall time this tree's CPU time
   allows (every process of it, from ``getrusage``): the imports, which run alone, and the rest
   of its CPU time spread over every core with none idle, against half the baseline.

::

    uv run python benchmarks/verify_cores.py [--baseline REV] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _trees import commit_tree, synthetic
from _usage import children_cpu

ROOT = Path(__file__).resolve().parents[1]
ONE, TWO = "0", "0,1"
#: The commit before verify ran its work as jobs (main when the work on it began): the "before"
#: of the 9,000-run figure, so that ``uvx nox -s benchmarks`` compares with it.
BEFORE = "82faab1"


def run(src: Path, bundle: Path, cores: str | None) -> tuple[float, int, bytes]:
    """Wall time, exit status and stdout of ``repro verify --json BUNDLE`` with the repro in
    ``src``, under ``taskset -c CORES`` when given."""
    command = [sys.executable, "-m", "repro", "verify", "--json", str(bundle)]
    if cores is not None:
        command = ["taskset", "-c", cores, *command]
    return _timed(command, src)


#: The CPU seconds of each command :func:`_timed` ran, by its source tree and its last argument
#: (every process it started and waited for included).
CPU: dict[tuple[str, str], list[float]] = {}


def _timed(command: list[str], src: Path) -> tuple[float, int, bytes]:
    """Wall time, exit status and stdout of ``command`` with the repro in ``src`` (and no
    ``REPRO_VERIFY_JOBS``); its CPU time is kept in :data:`CPU`."""
    env = {k: v for k, v in os.environ.items() if k != "REPRO_VERIFY_JOBS"}
    env["PYTHONPATH"] = str(src)
    cpu = children_cpu()
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, check=False)
    wall = time.perf_counter() - start
    CPU.setdefault((str(src), command[-1]), []).append(children_cpu() - cpu)
    return wall, done.returncode, done.stdout


#: What ``repro verify`` imports before it reads a bundle: the command line and the verifier.
IMPORTS = "import repro._cli.app, repro.verify"


def imports(src: Path) -> tuple[float, int, bytes]:
    """Wall time, exit status and stdout of ``python -c IMPORTS`` with the repro in ``src``: the
    part of a verification that does not depend on the bundle."""
    return _timed([sys.executable, "-c", IMPORTS], src)


def load() -> str:
    """The load averages (1, 5, 15 minutes)."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def alternate(
    sides: dict[str, Callable[[], tuple[float, int, bytes]]], repeats: int
) -> dict[str, tuple[list[float], set[int], set[bytes]]]:
    """Run each side ``repeats`` times, alternating which goes first; print each wall time."""
    seen: dict[str, tuple[list[float], set[int], set[bytes]]] = {
        name: ([], set(), set()) for name in sides
    }
    order = list(sides)
    for rep in range(repeats):
        for name in order if rep % 2 == 0 else reversed(order):
            wall, status, out = sides[name]()
            seen[name][0].append(wall)
            seen[name][1].add(status)
            seen[name][2].add(out)
            print(f"repeat {rep + 1}: {name:28s} {wall:7.3f} s (exit {status})", flush=True)
    return seen


def tampered(clean: Path, into: Path) -> dict[str, Path]:
    """Copies of ``clean`` with one change each, which verify must name."""

    def edit(name: str, path: str, change: Callable[[list[bytes]], list[bytes]]) -> None:
        copy = into / name
        shutil.copytree(clean, copy)
        target = copy / path
        target.write_bytes(b"".join(change(target.read_bytes().splitlines(keepends=True))))
        out[name] = copy

    out: dict[str, Path] = {}
    edit(
        "reward-changed",
        "data/runs/c03.jsonl",
        lambda ls: [ls[0].replace(b'"step_rewards":[', b'"step_rewards":[7.5,', 1), *ls[1:]],
    )
    edit("record-dropped", "data/runs/c05.jsonl", lambda ls: ls[:10] + ls[11:])
    edit("times-line-dropped", "data/times/c07.jsonl", lambda ls: ls[:-1])
    edit(
        "entry-changed",
        "data/plans/c02.json",
        lambda ls: [b"".join(ls).replace(b'"replicate":5,', b'"replicate":6,', 1)],
    )
    edit("runs-swapped", "data/runs/c01.jsonl", lambda ls: [ls[1], ls[0], *ls[2:]])
    return out


def main() -> int:
    """Generate the bundles, run both comparisons, print the medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--baseline",
        default=BEFORE,
        help=f"the commit before (default: {BEFORE}, main before verify ran jobs)",
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    src = ROOT / "src"
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        small = synthetic(base / "r1000", 9, 1000, args.steps)
        large = synthetic(base / "r10000", 9, 10000, args.steps)
        baseline = commit_tree(args.baseline, base / "baseline", "tests")
        older = synthetic(base / "baseline-r1000", 9, 1000, args.steps, baseline.parent)

        print(f"load average before: {load()}")
        cores = alternate(
            {
                "90,000 runs, taskset -c 0": lambda: run(src, large, ONE),
                "90,000 runs, taskset -c 0,1": lambda: run(src, large, TWO),
            },
            args.repeats,
        )
        print(f"load average after: {load()}")
        one, two = (statistics.median(c[0]) for c in cores.values())
        outputs = [c[2] for c in cores.values()]
        same = len(outputs[0] | outputs[1]) == 1
        print(f"90,000 runs: 1 core median {one:.3f} s, 2 cores median {two:.3f} s")
        print(f"speed-up (1 core / 2 cores): {one / two:.2f} (target >= 1.7)")
        print(f"--json output the same on 1 and 2 cores, clean bundle: {same}")
        failed |= not same or any(c[1] != {0} for c in cores.values())

        for name, bundle in tampered(small, base / "tampered").items():
            _, status1, out1 = run(src, bundle, ONE)
            _, status2, out2 = run(src, bundle, TWO)
            findings = out1.count(b'"code"')
            print(
                f"tampered ({name}): exit {status1} / {status2}, {findings} finding(s), "
                f"--json the same on 1 and 2 cores: {out1 == out2}"
            )
            failed |= out1 != out2 or status1 != 1 or status2 != 1

        print(f"load average before: {load()}")
        walls = alternate(
            {
                f"9,000 runs, baseline {args.baseline}": lambda: run(baseline, older, None),
                "9,000 runs, this tree": lambda: run(src, older, None),
            },
            args.repeats,
        )
        print(f"load average after: {load()}")
        before, after = (statistics.median(w[0]) for w in walls.values())
        print(f"9,000 runs: baseline median {before:.3f} s, this tree median {after:.3f} s")
        print(f"ratio (this tree / baseline): {after / before:.2f} (target <= 0.5)")
        failed |= any(w[1] != {0} for w in walls.values())

        # What bounds that ratio from below: the imports, which do not depend on the bundle.
        floor = alternate(
            {
                f"imports, baseline {args.baseline}": lambda: imports(baseline),
                "imports, this tree": lambda: imports(src),
            },
            args.repeats,
        )
        first, second = (statistics.median(w[0]) for w in floor.values())
        print(
            f"{IMPORTS!r}: baseline median {first:.3f} s, this tree median {second:.3f} s; "
            f"the rest of the 9,000-run verification, baseline {before - first:.3f} s, this "
            f"tree {after - second:.3f} s (ratio {(after - second) / (before - first):.2f})"
        )
        failed |= any(w[1] != {0} for w in floor.values())

        # What bounds it from below on this machine: the imports run in one process, alone; at
        # best the rest of this tree's CPU time is spread over every core, none idle.
        cores = len(os.sched_getaffinity(0))
        cpu = statistics.median(CPU[str(src), str(older)])
        cpu_imports = statistics.median(CPU[str(src), IMPORTS])
        least = second + max(cpu - cpu_imports, 0.0) / cores
        print(
            f"9,000 runs, this tree: CPU time median {cpu:.3f} s (every process), of which the "
            f"imports {cpu_imports:.3f} s; the imports' wall time and the rest of the CPU time "
            f"over {cores} cores with none idle give at least {least:.3f} s, ratio "
            f"{least / before:.2f} (half the baseline: {before / 2:.3f} s)"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
