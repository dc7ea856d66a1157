"""What inspect_ai itself costs per sample-epoch in three shapes of ``eval()``, with no repro.

repro gives every run its own seed, which inspect takes per task (``Task(config=...)``) or per
``eval()``, not per sample. So this script asks what inspect costs in the shapes a per-run seed
allows, against the batched shape that ``benchmarks/inspect_overhead.py`` compares repro with.
The task is protocols/inspect_arithmetic.py with the ``careful`` mock model, and there are N
sample-epochs in each shape:

- batched: one ``eval()`` of the five-sample task with N / 5 epochs, with no seed;
- tasks: one ``eval()`` of N one-sample tasks, each with its own seed;
- evals: N calls of ``eval()``, each of one one-sample task with its own seed (what the inspect
  adapter does per run).

Each shape runs in a fresh interpreter, the shapes alternating over the repeats. The script
prints wall and CPU time (``getrusage`` of the children), the medians, and each shape's ratio
against the batched one. Needs inspect_ai (the ``inspect`` extra).

    uv run python benchmarks/inspect_shapes.py [--samples 300] [--repeats 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from _usage import children_cpu, timed_python

ROOT = Path(__file__).resolve().parents[1]
TASKS = ROOT / "protocols" / "inspect_arithmetic.py"
SHAPES = ("batched", "tasks", "evals")

#: One shape, run in a fresh interpreter from the task module's directory: prints the number
#: of scored samples its logs hold.
SIDE = """
import sys, tempfile
from inspect_ai import Task, eval
from inspect_ai.model import GenerateConfig
import inspect_arithmetic as t

shape, n = sys.argv[1], int(sys.argv[2])
base = t.arithmetic()
samples = list(base.dataset)
model = t.careful()


def one(i):
    config = GenerateConfig(seed=1000 + i, temperature=0.0)
    sample = samples[i % len(samples)]
    return Task(dataset=[sample], solver=base.solver, scorer=base.scorer, config=config)


with tempfile.TemporaryDirectory() as logs:
    options = dict(model=model, log_dir=logs, display="log", log_level="critical")
    if shape == "batched":
        done = eval(base, epochs=n // len(samples), temperature=0.0, **options)
    elif shape == "tasks":
        done = eval([one(i) for i in range(n)], max_tasks=n, **options)
    else:
        done = [eval(one(i), **options)[0] for i in range(n)]
    print(sum(1 for log in done for s in (log.samples or []) if s.scores))
"""


def _shape(directory: Path, shape: str, samples: int) -> tuple[float, int]:
    elapsed, printed = timed_python(SIDE, shape, str(samples), cwd=directory)
    return elapsed, int(printed.split()[-1])


def main() -> None:
    """Run the shapes alternately; print each one's medians and ratio against batched."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=300, help="sample-epochs per shape")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.samples % 5:
        sys.exit("--samples must be a multiple of 5 (the task's samples)")
    times: dict[str, list[float]] = {shape: [] for shape in SHAPES}
    cpus: dict[str, list[float]] = {shape: [] for shape in SHAPES}
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        shutil.copy(TASKS, directory / TASKS.name)
        for i in range(args.repeats):
            order = SHAPES[i % 3 :] + SHAPES[: i % 3]
            for shape in order:
                cpu = children_cpu()
                elapsed, n = _shape(directory, shape, args.samples)
                used = children_cpu() - cpu
                if n != args.samples:
                    sys.exit(f"{shape}: {n} samples scored, not {args.samples}")
                times[shape].append(elapsed)
                cpus[shape].append(used)
                print(f"repeat {i + 1} {shape:7} {elapsed:8.2f} s  CPU {used:8.2f} s")
    wall = {shape: statistics.median(times[shape]) for shape in SHAPES}
    cpu = {shape: statistics.median(cpus[shape]) for shape in SHAPES}
    for shape in SHAPES:
        print(
            f"{shape:7} median {wall[shape]:8.2f} s  {1000 * wall[shape] / args.samples:6.1f} ms "
            f"per sample-epoch  CPU {cpu[shape]:.2f} s  ratio to batched "
            f"{wall[shape] / wall['batched']:.2f}x wall, {cpu[shape] / cpu['batched']:.2f}x CPU"
        )


if __name__ == "__main__":
    main()
