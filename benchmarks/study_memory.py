"""Peak resident memory of the study process for a plan of 20,000 and of 200,000 slots, with a
trivial adapter (benchmarks/_trivial_adapter.py: one step of reward 1 per run), run one after
the other: the study holds what one partition needs, so the ratio should stay well under 2
(issue target: < 2x).

    python benchmarks/study_memory.py [--small 20000] [--large 200000]

The peak is the study process's own (its ``ru_maxrss`` as ``os.wait4`` reports it), the
worker process's not counted. Each plan is 20 conditions of N / 20 runs, per-run seeds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _register(site: Path) -> None:
    info = site / "repro_bench_trivial-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: repro-bench-trivial\nVersion: 0\n", "utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[repro.adapters]\ntrivial = _trivial_adapter:TrivialAdapter\n", "utf-8"
    )


def _protocol(path: Path, slots: int) -> None:
    levels = [f"l{i:02d}" for i in range(20)]
    path.write_text(
        json.dumps(
            {
                "schema": "repro.protocol/1",
                "id": f"memory-{slots}",
                "title": "Study memory benchmark",
                "adapter": {"name": "trivial", "options": {}},
                "matrix": [{"name": "level", "levels": levels}],
                "participants": [{"id": "p", "kind": "fixed", "params": {}}],
                "runs_per_condition": slots // 20,
                "seeding": {"mode": "per-run", "seed": 1},
                "measure": {"name": "episode_return", "description": "one step of reward 1"},
                "estimand": "mean-of-condition-means",
                "interval": {"method": "normal", "level": 0.95},
                "retry": {"max_attempts": 1},
            }
        ),
        "utf-8",
    )


def _study(work: Path, slots: int, env: dict[str, str]) -> tuple[int, float]:
    """Peak RSS (KiB) of the study process and its wall time, for a plan of ``slots``."""
    protocol = work / f"p{slots}.json"
    _protocol(protocol, slots)
    out = work / f"b{slots}"
    # os.wait4 reports the child's own ru_maxrss: the study process's peak, not its worker's.
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "repro", "study", str(protocol), "--out", str(out)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"study of {slots} slots failed: status {status}")
    return usage.ru_maxrss, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=20_000)
    parser.add_argument("--large", type=int, default=200_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        site = work / "site"
        _register(site)
        path = os.pathsep.join([str(site), str(HERE), os.environ.get("PYTHONPATH", "")])
        env = {**os.environ, "PYTHONPATH": path}
        small = _study(work, args.small, env)
        large = _study(work, args.large, env)
    print(f"study peak RSS, {args.small} slots: {small[0] / 1024:.1f} MiB ({small[1]:.1f} s)")
    print(f"study peak RSS, {args.large} slots: {large[0] / 1024:.1f} MiB ({large[1]:.1f} s)")
    print(f"ratio {args.large} / {args.small} slots: {large[0] / small[0]:.2f} (target < 2)")


if __name__ == "__main__":
    main()
