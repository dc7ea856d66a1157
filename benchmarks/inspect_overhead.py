"""Cost per run of the inspect adapter: ``repro study`` against inspect's own ``eval()`` of the
same samples.

The protocol is protocols/inspect-arithmetic.json (one task, two mock models, two solver arms,
five samples), with ``--epochs`` replicates per condition, in a temporary copy beside its task
module. inspect's side is what one would run by hand for the same samples: for each model and
solver, one ``eval(task, model=..., solver=..., epochs=N)`` over the five samples, its logs in a
temporary directory. Both sides run as fresh subprocesses, alternating, so start-up and imports
count on both; the script prints each wall time and CPU time (every process of a side, from
``getrusage``), the medians, their ratios against the target (<= 1.3) and the cost per run
(sample-epoch), and checks that both sides evaluated as many samples (otherwise the comparison
is void). The default, 15 epochs, is 300 sample-epochs a side. Needs inspect_ai (the
``inspect`` extra).

    uv run python benchmarks/inspect_overhead.py [--epochs 15] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _usage import children_cpu, timed_python

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "protocols" / "inspect-arithmetic.json"
TASKS = ROOT / "protocols" / "inspect_arithmetic.py"

#: inspect's own side, run in a fresh interpreter from the task module's directory: prints the
#: number of samples its logs hold.
INSPECT_SIDE = """
import sys, tempfile
from inspect_ai import eval
import inspect_arithmetic as t
epochs = int(sys.argv[1])
solvers = {"default": None, "inspect_arithmetic:reasoned": t.reasoned}
count = 0
with tempfile.TemporaryDirectory() as logs:
    for model in (t.careful, t.hasty):
        for solver in solvers.values():
            log = eval(t.arithmetic(), model=model(), solver=None if solver is None else solver(),
                       epochs=epochs, log_dir=logs, display="none", temperature=0.0)[0]
            count += sum(1 for s in log.samples if s.scores)
print(count)
"""


#: The target: repro's wall time at most this many times inspect's own batched eval().
TARGET = 1.3


def _repro(directory: Path) -> tuple[float, int]:
    out = directory / "bundle"
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "repro", "study", str(directory / EXAMPLE.name), "--out", str(out)],
        check=True,
        capture_output=True,
    )
    elapsed = time.perf_counter() - start
    lines = [
        json.loads(line)
        for path in (out / "data" / "runs").glob("*.jsonl")
        for line in path.read_text("utf-8").splitlines()
    ]
    return elapsed, sum(1 for r in lines if r["status"] == "valid")


def _inspect(directory: Path, epochs: int) -> tuple[float, int]:
    elapsed, printed = timed_python(INSPECT_SIDE, str(epochs), cwd=directory)
    return elapsed, int(printed.split()[-1])


def main() -> None:
    """Run both sides alternately and print the ratio of medians and the cost per run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=15, help="replicates per condition")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        protocol = json.loads(EXAMPLE.read_text("utf-8"))
        protocol["runs_per_condition"] = args.epochs
        (directory / EXAMPLE.name).write_text(json.dumps(protocol), "utf-8")
        shutil.copy(TASKS, directory / TASKS.name)
        times: dict[str, list[float]] = {"inspect": [], "repro": []}
        cpus: dict[str, list[float]] = {"inspect": [], "repro": []}
        counts: dict[str, set[int]] = {"inspect": set(), "repro": set()}
        for i in range(args.repeats):
            for side in ("inspect", "repro") if i % 2 == 0 else ("repro", "inspect"):
                cpu = children_cpu()
                elapsed, n = (
                    _repro(directory) if side == "repro" else _inspect(directory, args.epochs)
                )
                used = children_cpu() - cpu
                times[side].append(elapsed)
                cpus[side].append(used)
                counts[side].add(n)
                print(
                    f"repeat {i + 1} {side:7} {elapsed:8.2f} s  CPU {used:8.2f} s  "
                    f"{n} samples evaluated"
                )
    if counts["inspect"] != counts["repro"] or len(counts["repro"]) != 1:
        sys.exit(f"the sides evaluated different numbers of samples: {counts}")
    runs = counts["repro"].pop()
    i, r = statistics.median(times["inspect"]), statistics.median(times["repro"])
    ci, cr = statistics.median(cpus["inspect"]), statistics.median(cpus["repro"])
    print(f"inspect eval() median {i:8.2f} s  {1000 * i / runs:8.1f} ms per run  CPU {ci:.2f} s")
    print(f"repro study    median {r:8.2f} s  {1000 * r / runs:8.1f} ms per run  CPU {cr:.2f} s")
    print(
        f"ratio {r / i:.2f}x wall (target <= {TARGET}), {cr / ci:.2f}x CPU; repro's cost per "
        f"run over inspect's: {1000 * (r - i) / runs:.1f} ms"
    )


if __name__ == "__main__":
    main()
