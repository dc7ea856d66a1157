"""How a run's processes end with it, for an adapter whose runs start processes (the command
adapter's harnesses): :func:`die_with_parent` (a child killed by the kernel when the process
that started it dies) and :func:`stopped_with_run` (how a run on a thread of the study process,
a thread session, is ended early), with :class:`RunScope`, the stops a thread session's run
registered, which :mod:`repro._execute.threads` calls. Part of the plugin API, below the study
machinery that calls it; standard library only."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator

__all__ = ["RunScope", "die_with_parent", "stopped_with_run"]


#: ``prctl``, looked up once, in the parent: :func:`die_with_parent` runs in a child forked from
#: a process that may have many threads (thread sessions, :mod:`repro._execute.threads`), and
#: must not call the dynamic loader between fork and exec, where a lock another thread held at
#: the fork would stay held.
_PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None


def die_with_parent(parent: int) -> None:
    """On Linux, ask the kernel to kill this child when its parent dies, so a study killed by
    SIGKILL leaves no run going on behind it. (The kernel's "parent" is the thread that started
    the child: one started from a thread session dies when that thread ends, which it does
    only after the run.)"""
    if _PRCTL is not None:
        pr_set_pdeathsig = 1
        _PRCTL(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it died before the request above took effect
        os._exit(1)


class RunScope:
    """What ends one run early when it runs on a thread of the study process (a thread
    session, :mod:`repro._execute.threads`), where there is no worker process to kill: the stops
    its session registered with :func:`stopped_with_run`, called from another thread when the
    run outlasts its timeout or the study stops."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stops: list[Callable[[], None]] = []
        self._stopped = False

    def enter(self) -> None:
        """Make this the scope of the runs of the calling thread."""
        _scope.run = self

    def add(self, stop: Callable[[], None]) -> None:
        """Register ``stop``; call it at once if the run was stopped already."""
        with self._lock:
            if not self._stopped:
                self._stops.append(stop)
                return
        _call_stop(stop)

    def discard(self, stop: Callable[[], None]) -> None:
        """Forget ``stop``: what it stops has ended."""
        with self._lock, contextlib.suppress(ValueError):
            self._stops.remove(stop)

    def stop(self) -> None:
        """Call every stop registered, now and later."""
        with self._lock:
            self._stopped, stops = True, list(self._stops)
            self._stops.clear()
        for stop in stops:
            _call_stop(stop)


def _call_stop(stop: Callable[[], None]) -> None:
    with contextlib.suppress(Exception):
        stop()


_scope = threading.local()


@contextlib.contextmanager
def stopped_with_run(stop: Callable[[], None]) -> Iterator[None]:
    """While the block runs, ``stop`` (which must be safe to call from another thread, e.g. a
    kill of the process group the run waits on) is how the run is ended early, should it run on
    a thread of the study process: when it outlasts ``retry.timeout_seconds`` or the study
    stops. In a worker process it is never called: the study kills the process instead."""
    scope: RunScope | None = getattr(_scope, "run", None)
    if scope is None:
        yield
        return
    scope.add(stop)
    try:
        yield
    finally:
        scope.discard(stop)
