"""Processes that keep the machine's cores busy beside a benchmark or the suite: each spins on
the CPU at normal priority, never sleeping, never allocating (busy_suite.py, eta.py)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

#: What a burner runs: an endless loop of arithmetic.
_SPIN = "x = 0\nwhile True:\n    x = (x * 1103515245 + 12345) & 0xFFFFFFFF\n"


def cpu_seconds(process: subprocess.Popen[bytes]) -> float:
    """CPU time a running process has used (Linux /proc), to show that a burner really ran."""
    try:
        fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


@contextlib.contextmanager
def burners(count: int) -> Iterator[list[float]]:
    """``count`` burners for the length of the block; the list it yields holds, once the block
    ends, the CPU seconds each one used."""
    processes = [
        subprocess.Popen([sys.executable, "-c", _SPIN], stdin=subprocess.DEVNULL)
        for _ in range(count)
    ]
    used: list[float] = []
    try:
        yield used
    finally:
        used.extend(cpu_seconds(p) for p in processes)
        for process in processes:
            process.kill()
            process.wait()
