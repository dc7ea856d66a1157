"""Very large bundles: what an archivist waits for first, and whether full verify scales.

Two comparisons on the synthetic bundles of tests/synthetic.py (9 conditions of 1,000 and of
10,000 runs of 100 steps: 9,000 and 90,000 runs), each side a fresh subprocess of this
interpreter, the sides alternating which goes first, medians of ``--repeats`` printed with the
load average before and after, CPU time (every process of a side, from ``getrusage``) beside
wall time:

1. ``repro verify --bagit-only`` on the 90,000-run bundle against ``sha256sum`` over the same
   payload files, as its manifest lists them, in two processes (``xargs -P 2``: both cores),
   the hashing limit. Target: wall <= 1.3 x. Both sides must agree: the bag verifies, and
   every digest ``sha256sum`` prints is the manifest's.
2. Full ``repro verify`` of the 9,000-run and the 90,000-run bundle: CPU time per run of each,
   and their ratio. Target: <= 1.1 (the cost of a run does not grow with the bundle).

::

    uv run python benchmarks/large_bundles.py [--repeats 5] [--steps 100]
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
from _usage import children_cpu

ROOT = Path(__file__).resolve().parents[1]
CONDITIONS = 9


def _timed(command: list[str], cwd: Path | None = None) -> tuple[float, float, bytes, int]:
    """Wall and CPU seconds, stdout and exit status of ``command``."""
    cpu = children_cpu()
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, check=False, cwd=cwd)
    return time.perf_counter() - start, children_cpu() - cpu, done.stdout, done.returncode


def _repro(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "repro", *arguments]


def _manifest(bundle: Path) -> dict[str, str]:
    """Each payload file of the bundle's manifest, by name, with its digest."""
    lines = (bundle / "manifest-sha256.txt").read_text("utf-8").splitlines()
    return {name: digest for digest, name in (line.split(maxsplit=1) for line in lines)}


def _sha256sum(bundle: Path, names: list[str]) -> list[str]:
    """``sha256sum`` over ``names``, in two processes."""
    per = max(1, -(-len(names) // 2))
    return ["sh", "-c", f'printf "%s\\0" "$@" | xargs -0 -P 2 -n {per} sha256sum', "sh", *names]


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _median(values: list[float]) -> float:
    return statistics.median(values)


def bagit_only(bundle: Path, repeats: int) -> float:
    """The ratio of ``--bagit-only``'s median wall time to ``sha256sum``'s."""
    manifest = _manifest(bundle)
    names = sorted(manifest)
    sides: dict[str, tuple[list[float], list[float]]] = {
        side: ([], []) for side in ("bagit-only", "sha256sum")
    }
    for repeat in range(repeats):
        order = ["bagit-only", "sha256sum"] if repeat % 2 == 0 else ["sha256sum", "bagit-only"]
        for side in order:
            if side == "bagit-only":
                wall, cpu, _, status = _timed(_repro("verify", "--bagit-only", str(bundle)))
                if status != 0:
                    sys.exit(f"void: --bagit-only exited {status}")
            else:
                wall, cpu, out, status = _timed(_sha256sum(bundle, names), cwd=bundle)
                found = dict(reversed(line.split(maxsplit=1)) for line in out.decode().splitlines())
                if status != 0 or found != manifest:
                    sys.exit("void: sha256sum did not give the manifest's digests")
            sides[side][0].append(wall)
            sides[side][1].append(cpu)
            print(f"  repeat {repeat + 1} {side}: wall {wall:.3f} s, CPU {cpu:.3f} s")
    for side, (walls, cpus) in sides.items():
        print(f"{side}: median wall {_median(walls):.3f} s, CPU {_median(cpus):.3f} s")
    ratio = _median(sides["bagit-only"][0]) / _median(sides["sha256sum"][0])
    cpu_ratio = _median(sides["bagit-only"][1]) / _median(sides["sha256sum"][1])
    print(f"--bagit-only / sha256sum: wall {ratio:.3f} (target <= 1.3), CPU {cpu_ratio:.3f}")
    return ratio


def per_run(bundles: dict[int, Path], repeats: int) -> float:
    """The ratio of full verify's median CPU time per run on the largest bundle to the
    smallest's."""
    cpu: dict[int, list[float]] = {runs: [] for runs in bundles}
    for repeat in range(repeats):
        order = sorted(bundles) if repeat % 2 == 0 else sorted(bundles, reverse=True)
        for runs in order:
            wall, used, _, status = _timed(_repro("verify", str(bundles[runs])))
            if status != 0:
                sys.exit(f"void: the {runs}-run bundle did not verify ({status})")
            cpu[runs].append(used)
            print(f"  repeat {repeat + 1} {runs} runs: wall {wall:.2f} s, CPU {used:.2f} s")
    small, large = min(bundles), max(bundles)
    each = {runs: _median(values) / runs for runs, values in cpu.items()}
    for runs in sorted(each):
        print(
            f"full verify, {runs} runs: median CPU {_median(cpu[runs]):.2f} s, "
            f"{each[runs] * 1e6:.1f} us a run"
        )
    ratio = each[large] / each[small]
    print(f"CPU per run, {large} against {small} runs: {ratio:.3f} (target <= 1.1)")
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        bundles = {}
        for per in (1000, 10000):
            bundles[CONDITIONS * per] = synthetic(base / f"r{per}", CONDITIONS, per, args.steps)
        print(f"load before: {_load()}")
        bagit_only(bundles[max(bundles)], args.repeats)
        per_run(bundles, args.repeats)
        print(f"load after: {_load()}")


if __name__ == "__main__":
    main()
