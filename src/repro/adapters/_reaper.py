"""The reaper: one small process beside each process that starts harnesses, which kills the
process group of every harness still running when that process ends, however it ends (SIGKILL
included), so that a study killed outright leaves no run going on behind it.

The process that starts a harness (in its own session, so its process group is its ID) tells
the reaper, over a pipe that only it holds: before it starts it, the inode of the pipe that
will be the harness's standard input (``?INODE``); once it has started it, its group
(``+PGID INODE``), or that it did not start (``!INODE``); and once it has reaped it
(``-PGID``). When the pipe ends, because that process exited or was killed, the reaper kills
every group it was told of and not told was reaped; and where a harness was about to start or
had started but the reaper was not yet told its group (the process was killed in between, which
a study killed while its threads start harnesses can be, by milliseconds), it kills the group of
every process that holds that harness's standard input open (read from ``/proc``: on Linux). It
then exits. A harness that closed its standard input within those milliseconds, and so
escapes the search, is the one way left for a harness to outlive its study. The reaper runs in
a session of its own, so a signal to the study's terminal or process group does not end it
first; it reads only its pipe and ``/proc``, and writes nothing.

It replaces a parent-death signal set for each harness: util-linux's ``setpriv --pdeathsig
KILL`` costs an ``exec`` of its own per run (about 1 ms of CPU here, which 128 harnesses
starting at once on two cores wait on), and a ``preexec_fn`` that sets it forces a full fork
of a study process with many threads. Unlike the signal, which reaches the harness alone, the
reaper kills the harness's whole group. Where no reaper can be started, :func:`reaper` says so
and the caller falls back to the parent-death signal.

A forked child does not share its parent's reaper: it starts its own if it starts harnesses.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

__all__ = ["Reaper", "reaper"]

#: The reaper's program (the standard library only, run with ``-I -S``: no site, no user path).
PROGRAM = """\
import os, signal, sys
live, starting = set(), set()
for line in sys.stdin.buffer:
    kind, numbers = line[:1], [int(n) for n in line[1:].split()]
    if kind == b"+":
        live.add(numbers[0])
        starting.difference_update(numbers[1:])
    elif kind == b"-":
        live.discard(numbers[0])
    elif kind == b"?":
        starting.add(numbers[0])
    else:
        starting.discard(numbers[0])
for group in live:
    try:
        os.killpg(group, signal.SIGKILL)
    except OSError:
        pass
# A harness runs in a session of its own, as its children do unless they leave it: a process of
# its owner's session (a fork of the owner, say) is never one, and its group is not killed.
owner_session = int(sys.argv[1])
marks = {"pipe:[%d]" % inode for inode in starting}
for pid in os.listdir("/proc") if marks else ():
    try:
        fds = os.listdir("/proc/%s/fd" % pid) if pid.isdigit() else ()
    except OSError:
        continue
    for fd in fds:
        try:
            if os.readlink("/proc/%s/fd/%s" % (pid, fd)) in marks:
                if os.getsid(int(pid)) != owner_session:
                    os.killpg(os.getpgid(int(pid)), signal.SIGKILL)
                break
        except OSError:
            pass
"""


class Reaper:
    """This process's side of its reaper: the groups it was told of, and the pipe to it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: set[int] = set()
        #: The standard inputs (their pipes' inodes) of harnesses about to start.
        self._starting: set[int] = set()
        self._pipe: int | None = None
        self._pid: int | None = None

    def start(self) -> bool:
        """Start the reaper unless it runs; whether it runs."""
        with self._lock:
            return self._pipe is not None or self._spawn()

    def starting(self, stdin: int) -> int:
        """Tell the reaper that a harness is about to start with the pipe ``stdin`` (a
        descriptor of it) as its standard input, before it starts; the pipe's inode, which
        :meth:`watch` is given with the harness's group once it has started (or
        :meth:`not_started`, if it did not). Raises OSError when no reaper can be started (the
        harness must then not be started this way)."""
        inode = os.fstat(stdin).st_ino
        with self._lock:
            self._starting.add(inode)
            self._tell(b"?%d\n" % inode)
        return inode

    def not_started(self, inode: int) -> None:
        """Tell the reaper that the harness of :meth:`starting` did not start."""
        with self._lock:
            self._starting.discard(inode)
            with contextlib.suppress(OSError):  # a new reaper, if one is needed, is not told it
                self._tell(b"!%d\n" % inode)

    def watch(self, group: int, inode: int) -> None:
        """Tell the reaper of a harness started in the process group ``group``, and that the
        harness whose standard input's ``inode`` :meth:`starting` told it of is that one.
        Raises OSError when no reaper can be started (the caller then kills the group
        itself)."""
        with self._lock:
            self._live.add(group)
            self._starting.discard(inode)
            self._tell(b"+%d %d\n" % (group, inode))

    def unwatch(self, group: int) -> None:
        """Tell the reaper that the harness of ``group`` was reaped (its group is never killed
        by the reaper after: its ID may be another's)."""
        with self._lock:
            self._live.discard(group)
            with contextlib.suppress(OSError):  # a new reaper, if one is needed, is not told it
                self._tell(b"-%d\n" % group)

    def _tell(self, line: bytes) -> None:
        if self._pipe is not None:
            try:
                os.write(self._pipe, line)  # shorter than PIPE_BUF: written whole or not at all
                return
            except OSError:  # the reaper is gone: a new one is told of every live group
                self._drop()
        if not self._spawn():
            raise OSError("cannot start the harnesses' reaper")
        assert self._pipe is not None
        told = [b"+%d\n" % group for group in sorted(self._live)]
        told += [b"?%d\n" % inode for inode in sorted(self._starting)]
        os.write(self._pipe, b"".join(told))

    def _spawn(self) -> bool:
        read_end, write_end = os.pipe()
        try:
            self._pid = os.posix_spawn(
                sys.executable,
                [sys.executable, "-I", "-S", "-c", PROGRAM, str(os.getsid(0))],
                os.environ,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, read_end, 0),
                    (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                    (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
                ],
                setsid=True,
            )
        except (OSError, ValueError, NotImplementedError):  # no usable interpreter, no setsid
            os.close(write_end)
            return False
        finally:
            os.close(read_end)
        self._pipe = write_end
        return True

    def _drop(self) -> None:
        """Forget a reaper that is gone (reaping it, if it has ended)."""
        if self._pipe is not None:
            os.close(self._pipe)
        if self._pid is not None:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self._pid, os.WNOHANG)
        self._pipe = self._pid = None

    def _forked(self) -> None:
        """In a forked child: the parent's reaper is the parent's."""
        self._lock = threading.Lock()
        self._live = set()
        self._starting = set()
        if self._pipe is not None:
            with contextlib.suppress(OSError):
                os.close(self._pipe)
        self._pipe = self._pid = None


_REAPER = Reaper()
os.register_at_fork(after_in_child=_REAPER._forked)


def reaper() -> Reaper | None:
    """This process's reaper, started on first use; None where none can be started."""
    return _REAPER if _REAPER.start() else None
