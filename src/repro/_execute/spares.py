"""Worker processes started before a study has a job for them (:class:`Spares`): each starts
its interpreter and imports :mod:`repro._execute.worker` while the study still imports and
prepares. This module imports little, so that a study can start its first one before its own
imports."""

from __future__ import annotations

import contextlib
import multiprocessing.connection
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import orjson

from repro._execute.interrupts import held
from repro._files import read_regular

__all__ = ["THREAD_ADAPTERS", "Child", "Spares", "runs_on_threads", "spawn"]

#: The built-in adapters whose sessions run on threads of the study process (their classes say
#: ``thread_sessions``), by the name a protocol gives them.
THREAD_ADAPTERS = frozenset({"command", "recorded"})

#: The most of a protocol file :func:`runs_on_threads` reads (the loader's own limit).
_PEEK_BYTES = 1 << 20


def runs_on_threads(protocol: Path) -> bool:
    """Whether the protocol file ``protocol`` names a built-in adapter whose sessions run on
    threads, in per-run seeding, read before the protocol is loaded and checked: a study of one
    starts no worker process before its imports (where one would only slow them, and be
    killed). A protocol that turns out otherwise, or cannot be read so, costs time, never a
    result: :class:`~repro._execute.studies.Prestart` starts what it needs once it is known."""
    try:
        # Never blocks: a FIFO or a device given as the protocol is not opened for reading.
        read = read_regular(protocol, _PEEK_BYTES)
        if read is None or read[0] > _PEEK_BYTES or len(read[1]) > _PEEK_BYTES:
            return False
        raw = orjson.loads(read[1])
        return bool(
            raw["adapter"]["name"] in THREAD_ADAPTERS and raw["seeding"]["mode"] == "per-run"
        )
    except Exception:  # unreadable, not JSON, not shaped like a protocol: the loader says why
        return False


#: A worker process and this side of its socket.
Child = tuple[subprocess.Popen[bytes], multiprocessing.connection.Connection]


def spawn() -> Child:
    """Start a worker process (:func:`repro._execute.worker.main`) and return it with this side of
    its socket; it imports its module, then waits for its job."""
    ours, theirs = socket.socketpair()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    command = [sys.executable, "-c", "from repro._execute.worker import main; main()"]
    try:
        # A signal while the child starts would stop it half-started; it is held until the
        # start is done, then stops the study as usual.
        with held():
            process = subprocess.Popen(
                [*command, str(theirs.fileno()), str(os.getpid())],
                stdin=subprocess.DEVNULL,
                stdout=sys.__stderr__.fileno() if sys.__stderr__ else subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
                env=env,
            )
    finally:
        theirs.close()
    return process, multiprocessing.connection.Connection(ours.detach())


class Spares:
    """Worker processes started before the study has a job for them, so that each starts its
    interpreter and imports :mod:`repro._execute.worker` (and, once told, its adapter's modules)
    while the study still imports and prepares (the adapter's freeze, the seal): a
    :class:`~repro._execute.worker.Worker` given them takes one for its first child rather than
    start its own. A child never taken is killed (:meth:`close`): it has run nothing but
    imports. Taken from any thread.

    A child learns nothing of the study before its job, so which child serves a job leaves no
    trace in what it does."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[Child] = []

    def __enter__(self) -> Spares:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def __len__(self) -> int:
        """How many children wait to be taken."""
        with self._lock:
            return len(self._idle)

    def start(self, count: int, modules: Sequence[str] = ()) -> None:
        """Start ``count`` children, each told to import ``modules``."""
        started = [spawn() for _ in range(count)]
        if modules:
            _tell(started, modules)
        with self._lock:
            self._idle += started

    def preload(self, modules: Sequence[str]) -> None:
        """Tell every child not yet taken to import ``modules`` as it waits."""
        with self._lock:
            idle = list(self._idle)
        _tell(idle, modules)

    def take(self) -> Child | None:
        """A child started here and still running, or None when none is left."""
        with self._lock:
            while self._idle:
                process, conn = self._idle.pop(0)
                if process.poll() is None:
                    return process, conn
                conn.close()  # it died waiting (killed from outside): a new one is started
        return None

    def close(self) -> None:
        """Kill every child not taken."""
        with self._lock:
            idle, self._idle = self._idle, []
        for process, conn in idle:
            conn.close()
            if process.poll() is None:
                process.kill()
            process.wait()


def _tell(children: Sequence[Child], modules: Sequence[str]) -> None:
    """Tell each of ``children`` to import ``modules`` as it waits."""
    for _, conn in children:
        with contextlib.suppress(OSError):  # it died: Spares.take passes it over
            conn.send(("import", tuple(modules)))
