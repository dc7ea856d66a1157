"""The slowest tests: the full suite's 40 slowest test phases at a baseline commit and here.

The ``tests`` nox session ends with pytest's ``--durations=40``: the 40 slowest phases (a
test's setup, call or teardown), which is what the suite's time is cut by. This script runs
``uvx nox -s tests`` twice, one after the other on the same machine: first in a git worktree of
``--baseline`` made beside this checkout (so that ``../shared`` is found from both), then in
this checkout as it stands. It prints each run's tests time, the sum of its 40 slowest phases
and how many of them are CAGE-2's (tests/test_cyborg.py), and the ratios (this checkout /
baseline). The environment is passed on, so ``CI=true`` makes both runs require what CI
requires. About twice the suite's time; run by hand, not by ``uvx nox -s benchmarks``::

    CI=true python benchmarks/slowest_tests.py --baseline bf61380

``--logs BASE NEW`` reads two saved outputs of the tests session instead of running it.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parents[1]
#: One line of pytest's durations list: seconds, phase, test id.
DURATION = re.compile(r"^([\d.]+)s (setup|call|teardown)\s+(\S+)")
#: pytest's last line: how long the tests took.
TESTS_TIME = re.compile(r"passed.* in ([\d.]+)s")


@attrs.frozen
class Slowest:
    """What one run of the tests session printed: its tests time, and its slowest phases as
    (seconds, phase, test id), slowest first."""

    tests_time: float
    phases: tuple[tuple[float, str, str], ...]

    def top(self, n: int = 40) -> float:
        """The seconds of the ``n`` slowest phases."""
        return sum(seconds for seconds, _, _ in self.phases[:n])

    def cage2(self, n: int = 40) -> tuple[int, float]:
        """How many of the ``n`` slowest phases are tests/test_cyborg.py's, and their seconds."""
        ours = [s for s, _, test in self.phases[:n] if test.startswith("tests/test_cyborg.py")]
        return len(ours), sum(ours)


def slowest(output: str) -> Slowest:
    """The durations list and tests time in the output of one ``nox -s tests`` run."""
    phases = sorted(
        (
            (float(m.group(1)), m.group(2), m.group(3))
            for m in map(DURATION.match, output.splitlines())
            if m
        ),
        reverse=True,
    )
    times = TESTS_TIME.findall(output)
    if not phases or not times:
        raise SystemExit("no durations list or no tests time in the output")
    return Slowest(float(times[-1]), tuple(phases))


def _run_tests(where: Path) -> str:
    """``uvx nox -s tests`` in ``where``; its output, echoed; exits if the session fails."""
    done = subprocess.run(
        ["uvx", "nox", "-s", "tests"], cwd=where, capture_output=True, text=True, check=False
    )
    sys.stdout.write(done.stdout[-2000:])
    if done.returncode != 0:
        raise SystemExit(f"the tests session failed in {where} (exit {done.returncode})")
    return done.stdout + done.stderr


def _report(base: Slowest, here: Slowest) -> None:
    for name, run in (("baseline", base), ("this tree", here)):
        count, seconds = run.cage2()
        print(
            f"{name:9s}: tests {run.tests_time:8.1f} s; 40 slowest {run.top():7.1f} s, "
            f"{count} of them CAGE-2's ({seconds:.1f} s)"
        )
    print(f"ratio, 40 slowest: {here.top() / base.top():.3f} (TARGET 0.5)")
    print(f"ratio, tests time: {here.tests_time / base.tests_time:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="HEAD", help="the commit before (default: HEAD)")
    parser.add_argument("--logs", nargs=2, type=Path, metavar=("BASE", "NEW"))
    args = parser.parse_args()
    if args.logs:
        base_log, new_log = args.logs
        _report(slowest(base_log.read_text()), slowest(new_log.read_text()))
        return
    worktree = ROOT.parent / f"{ROOT.name}-baseline-{args.baseline}"
    subprocess.run(["git", "worktree", "add", "--detach", str(worktree), args.baseline], check=True)
    try:
        base = slowest(_run_tests(worktree))
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], check=False)
    _report(base, slowest(_run_tests(ROOT)))


if __name__ == "__main__":
    main()
