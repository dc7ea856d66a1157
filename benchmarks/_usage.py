"""What several benchmarks measure the same way: the CPU time of the processes they ran, and
the wall time of a snippet of Python run in a fresh interpreter."""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path


def children_cpu() -> float:
    """User and system CPU seconds of the child processes waited for so far, and of theirs that
    they waited for (a study's worker processes, verify's workers): read before and after a
    child runs, the difference is what it and its own children used."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_python(code: str, *args: str, cwd: Path) -> tuple[float, str]:
    """Run ``code`` in a fresh interpreter (``python -c CODE ARGS``) in ``cwd``; its wall time
    in seconds and what it printed. A failure raises."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, *args], check=True, capture_output=True, cwd=cwd, text=True
    )
    return time.perf_counter() - start, done.stdout
