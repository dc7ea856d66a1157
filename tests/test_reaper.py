"""The harnesses' reaper (repro.adapters._reaper): the process groups a process was told to watch
die with it, however it ends; those it was told were reaped do not; a harness it was told was
starting dies with it too, its group never told (the process killed in between); a reaper that
is gone is replaced and told of every group still watched and every harness still starting."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# Slow: starts and reaps process trees.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

#: A process that starts groups (a shell and its child, each group in a session of its own,
#: the shell's standard input a pipe), tells its reaper of each as its arguments say, prints the
#: IDs it started (and its reaper's), then waits to be killed. Arguments, in order: ``watch``
#: (told it is starting, then its group), ``unwatch`` (then told it was reaped), ``untold``
#: (told it is starting, never its group: as if killed in between), ``started-not`` (told it
#: is starting, then that it did not start, though it runs), ``forked`` (told a harness is
#: starting, it forks instead: a process of its own session that holds the harness's standard
#: input) or ``kill-reaper`` (kills the reaper and waits for it to end before going on).
DRIVER = """
import os, signal, subprocess, sys, time
from repro.adapters import _reaper as module
guard = module.reaper()
assert guard is not None
pids = []
for step in sys.argv[1:]:
    if step == "kill-reaper":
        os.kill(guard._pid, signal.SIGKILL)
        os.waitpid(guard._pid, 0)
        continue
    stdin, spec = os.pipe()
    inode = guard.starting(stdin)
    if step == "forked":
        fork = os.fork()
        if fork == 0:
            time.sleep(300)
            os._exit(0)
        os.close(stdin)
        pids.append(fork)
        continue
    group = subprocess.Popen(
        ["sh", "-c", "sleep 300 & echo $!; wait"],
        stdin=stdin, stdout=subprocess.PIPE, text=True, start_new_session=True,
    )
    os.close(stdin)
    child = int(group.stdout.readline())
    if step in ("watch", "unwatch"):
        guard.watch(group.pid, inode)
    if step == "unwatch":
        guard.unwatch(group.pid)
    if step == "started-not":
        guard.not_started(inode)
    pids += [group.pid, child]
print(" ".join(map(str, pids)), guard._pid, flush=True)
time.sleep(300)
"""


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not exited (a zombie has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _wait_for(condition: Callable[[], bool], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


@contextlib.contextmanager
def _driver(*steps: str) -> Iterator[tuple[subprocess.Popen[str], list[int], int]]:
    """The driver with ``steps`` started: the process, the IDs it started (group, child, in
    order of the steps) and its reaper's; everything it started is killed afterwards."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    # In a session of its own: a group of its session that the reaper killed by mistake would
    # be its own, never the tests'.
    process = subprocess.Popen(
        [sys.executable, "-c", DRIVER, *steps],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    pids: list[int] = []
    try:
        assert process.stdout is not None
        *started, reaper = process.stdout.readline().split()
        pids = [int(p) for p in started]
        yield process, pids, int(reaper)
    finally:
        process.kill()
        process.wait()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_watched_groups_die_with_the_process_that_watched_them() -> None:
    """SIGKILL of the watching process (no handler of its runs): every process of each group
    it watched, the group's leader and its child alike, is killed by the reaper, which then
    ends."""
    with _driver("watch", "watch") as (process, pids, reaper):
        assert len(pids) == 4 and all(_alive(pid) for pid in pids)
        process.kill()
        process.wait()
        _wait_for(lambda: not any(_alive(pid) for pid in [*pids, reaper]))


def test_a_group_unwatched_is_left_alone() -> None:
    """A group the process said it reaped is not killed with it (its ID may be another's by
    then); the group still watched is."""
    with _driver("unwatch", "watch") as (process, pids, reaper):
        process.kill()
        process.wait()
        _wait_for(lambda: not any(_alive(pid) for pid in pids[2:]))
        _wait_for(lambda: not _alive(reaper))
        assert all(_alive(pid) for pid in pids[:2])


def test_a_harness_whose_group_was_never_told_dies_with_the_process() -> None:
    """The process killed after it told its reaper a harness was starting and before it told
    the harness's group: the reaper finds the harness by its standard input and kills its
    group, the child included; a harness it was told did not start is left alone, and so is a
    process of the killed process's own session that holds such a standard input (a fork of
    it), whose group is that process's."""
    with _driver("started-not", "untold", "watch", "forked") as (process, pids, reaper):
        assert len(pids) == 7 and all(_alive(pid) for pid in pids)
        process.kill()
        process.wait()
        _wait_for(lambda: not any(_alive(pid) for pid in [*pids[2:6], reaper]))
        assert all(_alive(pid) for pid in [*pids[:2], pids[6]])


def test_a_reaper_that_is_gone_is_replaced_and_told_of_every_watched_group() -> None:
    """The reaper killed while a group is watched and a harness is starting: the next start
    starts another reaper, which is told of all three, and kills them when the process dies."""
    with _driver("watch", "untold", "kill-reaper", "watch") as (process, pids, reaper):
        assert len(pids) == 6 and all(_alive(pid) for pid in pids)
        process.kill()
        process.wait()
        _wait_for(lambda: not any(_alive(pid) for pid in [*pids, reaper]))


def test_a_forked_child_does_not_share_its_parents_reaper() -> None:
    """After a fork the child holds no pipe to the parent's reaper (which would keep it from
    seeing the parent's end) and knows of none of the parent's groups."""
    from repro.adapters import _reaper as module

    guard = module.reaper()
    assert guard is not None
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what it holds, and leave at once
        os.close(read_end)
        os.write(write_end, repr((guard._pipe, guard._pid, sorted(guard._live))).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as fh:
        held = fh.read()
    os.waitpid(pid, 0)
    assert held == repr((None, None, []))
