"""The whole suite on a busy machine: ``uvx nox`` with two CPU-bound processes beside it.

Users run the tests beside other work, so every test must pass with the machine's cores busy,
not only on a quiet machine. This script starts two processes that spin on the CPU at normal
priority (one per core of the 2-core machine the project is developed on; ``--burners`` changes
the number), runs ``uvx nox`` (with any further arguments, e.g. ``-s tests``) for its whole
length beside them, stops them, and prints the suite's wall time and exit status::

    python benchmarks/busy_suite.py              # uvx nox, two burners
    python benchmarks/busy_suite.py -- -s tests  # only the tests session

It exits with the suite's own exit status. It is not run by ``uvx nox -s benchmarks`` (which
runs inside nox itself): run it by hand, as every session does before it stops.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from _busy import burners

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    """Run the suite beside the burners; print its wall time and the burners' CPU time."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--burners", type=int, default=2, help="CPU-bound processes beside it")
    parser.add_argument("nox_args", nargs="*", help="arguments for nox (after --)")
    args = parser.parse_args()
    started = time.perf_counter()
    with burners(args.burners) as used:
        code = subprocess.call(["uvx", "nox", *args.nox_args], cwd=ROOT)
        wall = time.perf_counter() - started
    print(
        f"busy suite: uvx nox {' '.join(args.nox_args)} exited {code} after {wall:.0f} s wall, "
        f"beside {args.burners} CPU-bound process(es) that used "
        + ", ".join(f"{u:.0f}" for u in used)
        + " CPU seconds",
        flush=True,
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
