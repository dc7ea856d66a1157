"""Latency-bound harnesses: ``repro study`` of a command-adapter study against ``xargs -P N``
running the same harness on the same run specs, at concurrency N = 8, 32 and 128.

The harness is a POSIX shell script that reads its run spec, sleeps 1 s (a model call that takes
seconds and costs the machine almost nothing) and prints one JSON outcome made from the spec's
seed. It is a shell script, not Python, so that the harness's own start-up is a few
milliseconds on both sides and what the ratio shows is repro's cost. The protocol is 4
conditions (2 levels x 2 agents) of 80 runs each, 320 runs, per-run seeding, one attempt.

First an untimed recording study at the largest N, in which the harness also saves the exact
stdin repro gave each run (``BENCH_SPECS``): those files are what ``xargs`` feeds the harness,
one ``sh -c 'harness < SPEC > OUT'`` per run, which is what a user would otherwise write.
During that study the script samples ``/proc`` every 20 ms and reports the peak of the summed
``VmRSS`` of repro's own processes: the study process and any worker process it started
(``repro._execute.worker`` in its command line), the harness processes and their ``sleep``
excluded. ``os.wait4``'s ``ru_maxrss`` cannot give this: it is the largest single process of
the tree, harnesses included, not a sum. Summing ``VmRSS`` counts shared pages (the
interpreter, libraries) once per process, so it is an upper bound.

Python's byte-compiled modules are cached in the temporary directory (``PYTHONPYCACHEPREFIX``,
``PYTHONDONTWRITEBYTECODE`` unset for the studies), so that repro starts as an installed wheel
does, not by compiling its sources again on every start (a few hundred ms here).

Then, per N, both sides run as fresh subprocesses, alternating which goes first from one repeat
to the next: the wall time of the whole ``repro study --workers N`` command against that of the
whole ``xargs -P N`` command. The script prints each wall, the medians and their ratio per N,
and checks that every repro run's outcome is the one ``xargs`` got from the same spec
(otherwise the comparison is void).

Last, what bounds the ratio at the largest N from below, where 320 runs take three rounds of
about 1 s and the target leaves a tenth of that: in one more run of each side, untimed and
unsampled, how long after its command starts each side's first run starts and its last run
starts (the harness saves its spec as it starts: the earliest and latest files' modification
times), and how long after that last start it ends; and the wall
time of ``python -c "import repro._cli.app, repro.models"`` (the command line and the models
every protocol is read into, which a study imports before it can read one) against
``python -c pass`` (medians of seven, alternating).

    python benchmarks/latency_harness.py [--repeats 3] [--concurrency 8 32 128]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HARNESS = r"""#!/bin/sh
# One run: read the spec (one line of canonical JSON), wait 1 s, answer one outcome.
IFS= read -r spec || :
rest=${spec#*\"seed\":}
seed=${rest%%[,\}]*}
if [ -n "${BENCH_SPECS:-}" ]; then
    rest=${spec#*\"slot\":\"}
    printf '%s' "$spec" > "$BENCH_SPECS/${rest%%\"*}.json"
fi
sleep 1
printf '{"seed":%s,"value":%s}\n' "$seed" "$((seed % 1000))"
"""

CONDITIONS, RUNS = 4, 80
#: What a study imports before it can read a protocol: the command line and the models.
FLOOR = "import repro._cli.app, repro.models"


def _protocol(harness: str) -> dict[str, Any]:
    return {
        "schema": "repro.protocol/1",
        "id": "latency-harness-bench",
        "title": "Latency-bound harness benchmark",
        "adapter": {"name": "command", "options": {"harness": harness}},
        "matrix": [{"name": "task", "levels": ["a", "b"]}],
        "participants": [
            {"id": agent, "kind": "agent", "params": {"model": agent}} for agent in ("m1", "m2")
        ],
        "runs_per_condition": RUNS,
        "seeding": {"mode": "per-run", "seed": 19},
        "measure": {"name": "outcome_value", "key": "value", "description": "seed mod 1000"},
        "estimand": "mean-of-condition-means",
        "interval": {"method": "normal", "level": 0.95},
        "retry": {"max_attempts": 1, "timeout_seconds": 30},
    }


def _tree(root: int) -> list[int]:
    """``root`` and every process descended from it, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rpartition(")")[2].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def _repro_rss_kib(root: int) -> int:
    """The summed VmRSS of the study process and its repro worker processes."""
    total = 0
    for pid in _tree(root):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        if pid != root and b"repro._execute.worker" not in cmdline:
            continue  # a harness, its shell or its sleep
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total


def _sampled(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int]:
    """Run ``command``; its wall time and the peak of :func:`_repro_rss_kib` over its run."""
    peak = [0]
    t0 = time.perf_counter()
    child = subprocess.Popen(
        command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.02):
            peak[0] = max(peak[0], _repro_rss_kib(child.pid))

    sampler = threading.Thread(target=sample)
    sampler.start()
    _, stderr = child.communicate()
    done.set()
    sampler.join()
    if child.returncode != 0:
        sys.exit(f"the recording study failed: {stderr.decode()[-2000:]}")
    return time.perf_counter() - t0, peak[0]


def _xargs(n: int, harness: Path, specs: Path, outs: Path) -> list[str]:
    """``xargs -P n`` running ``harness`` once per spec name read on its stdin, each run's spec
    from ``specs`` and its outcome into ``outs``: what a user would otherwise write."""
    return ["xargs", "-P", str(n), "-I{}", "sh", "-c", f"{harness} < {specs}/{{}} > {outs}/{{}}"]


def _run_starts(
    command: list[str], stdin: bytes, env: dict[str, str], saved: Path
) -> tuple[float, float, float]:
    """Run ``command`` with its harnesses saving their specs into ``saved`` as they start;
    the seconds from the command's start to its first run's start, to its last run's start
    (the modification times of those files) and to its end."""
    saved.mkdir()
    launched = time.time()
    subprocess.run(
        command,
        input=stdin,
        check=True,
        capture_output=True,
        env={**env, "BENCH_SPECS": str(saved)},
        cwd=saved.parent,
    )
    ended = time.time()
    starts = [p.stat().st_mtime_ns / 1e9 - launched for p in saved.glob("*.json")]
    return min(starts), max(starts), ended - launched


def _import_floor(env: dict[str, str], cwd: Path, repeats: int = 7) -> tuple[float, float]:
    """Median wall times of ``python -c pass`` and of importing the command line and the models
    (:data:`FLOOR`), run alternately."""
    walls: dict[str, list[float]] = {"pass": [], FLOOR: []}
    for rep in range(repeats):
        for code in ("pass", FLOOR) if rep % 2 == 0 else (FLOOR, "pass"):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=cwd)
            walls[code].append(time.perf_counter() - t0)
    return statistics.median(walls["pass"]), statistics.median(walls[FLOOR])


def _outcomes_repro(bundle: Path) -> dict[str, Any]:
    out = {}
    for path in sorted((bundle / "data/runs").glob("c*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            out[record["slot"]] = record["outcome"]
    return out


def _outcomes_xargs(outs: Path) -> dict[str, Any]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(outs.glob("*.json"))}


def main() -> None:
    """Record the specs and the memory, then time both sides per N, alternating."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32, 128])
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}; load average: {os.getloadavg()[0]:.2f}", flush=True)
    ratios: dict[int, float] = {}
    xargs_medians: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        harness = work / "harness.sh"
        harness.write_text(HARNESS)
        harness.chmod(0o755)
        protocol = work / "protocol.json"
        protocol.write_text(json.dumps(_protocol("harness.sh")))
        specs = work / "specs"
        specs.mkdir()
        study = [sys.executable, "-m", "repro", "study", str(protocol)]
        largest = max(args.concurrency)
        # The studies run in the temporary directory: the import path must not be relative.
        path = os.environ.get("PYTHONPATH", "").split(os.pathsep)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(os.path.abspath(p) for p in path if p)}
        # Byte-compiled modules, as an installed wheel has them (pip and uv compile on install),
        # even where the environment says PYTHONDONTWRITEBYTECODE: kept in the temporary
        # directory, written by the untimed recording study.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        env["BENCH_SPECS"] = str(specs)
        wall, peak = _sampled(
            [*study, "--out", str(work / "recorded"), "--workers", str(largest)], env, work
        )
        names = sorted(p.name for p in specs.glob("*.json"))
        if len(names) != CONDITIONS * RUNS:
            sys.exit(f"the recording study saved {len(names)} specs, not {CONDITIONS * RUNS}")
        print(f"recording study, --workers {largest}: {wall:.2f} s", flush=True)
        print(
            f"peak RSS of repro's own processes at N = {largest}: {peak / 1024:.1f} MiB "
            "(summed VmRSS, harnesses excluded)",
            flush=True,
        )
        expected = _outcomes_repro(work / "recorded")
        # When each side's first and last runs start, and when it ends: one more run of each,
        # untimed and unsampled, whose harnesses save their specs again, into a directory of
        # their own.
        (work / "xargs-outs").mkdir()
        starts = {
            "repro": _run_starts(
                [*study, "--out", str(work / "again"), "--workers", str(largest)],
                b"",
                env,
                work / "repro-specs",
            ),
            "xargs": _run_starts(
                _xargs(largest, harness, specs, work / "xargs-outs"),
                "\n".join(names).encode(),
                env,
                work / "xargs-specs",
            ),
        }
        del env["BENCH_SPECS"]
        for n in args.concurrency:
            times: dict[str, list[float]] = {"xargs": [], "repro": []}
            for rep in range(args.repeats):
                outs, bundle = work / f"x{n}-{rep}", work / f"b{n}-{rep}"
                outs.mkdir()
                commands = {
                    "xargs": _xargs(n, harness, specs, outs),
                    "repro": [*study, "--out", str(bundle), "--workers", str(n)],
                }
                stdin = {"xargs": "\n".join(names).encode(), "repro": b""}
                for name in ("xargs", "repro") if rep % 2 == 0 else ("repro", "xargs"):
                    t0 = time.perf_counter()
                    subprocess.run(
                        commands[name],
                        input=stdin[name],
                        check=True,
                        capture_output=True,
                        env=env,
                        cwd=work,
                    )
                    elapsed = time.perf_counter() - t0
                    times[name].append(elapsed)
                    print(f"N={n:3d} repeat {rep + 1}: {name:5s} {elapsed:7.2f} s", flush=True)
                if _outcomes_repro(bundle) != expected or _outcomes_xargs(outs) != expected:
                    sys.exit("the two sides' outcomes differ: the comparison is void")
            x, r = statistics.median(times["xargs"]), statistics.median(times["repro"])
            ratios[n] = r / x
            print(f"N={n:3d}: xargs median {x:7.2f} s; repro median {r:7.2f} s", flush=True)
            print(f"N={n:3d}: ratio (repro / xargs) {r / x:.3f} (target <= 1.10)", flush=True)
            xargs_medians[n] = x
        bare, floor = _import_floor(env, work)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print("ratios: " + ", ".join(f"N={n}: {ratio:.3f}" for n, ratio in ratios.items()))
    print(f"peak RSS at N = {largest}: {peak / 1024:.1f} MiB (target < 1024 MiB)")
    print(
        f"N = {largest}: the target leaves {0.1 * xargs_medians[largest]:.3f} s over xargs' "
        f"{xargs_medians[largest]:.2f} s, for everything repro does that xargs does not"
    )
    # Each side's wall time in three parts: until its first run starts, from there until its
    # last run starts (the runs start N at a time, each taking its 1 s), and from there to its
    # end (the last run's 1 s, then what the side does after its runs).
    for side, (first, last, end) in starts.items():
        print(
            f"{side} (--workers / -P {largest}): first run started after {first:.3f} s, the "
            f"last {last - first:.3f} s later, ended {end - last:.3f} s after that "
            f"({end:.3f} s in all)"
        )
    print(
        f"importing the command line and the models ({FLOOR!r}): {floor:.3f} s; "
        f"the interpreter alone ('pass'): {bare:.3f} s"
    )


if __name__ == "__main__":
    main()
