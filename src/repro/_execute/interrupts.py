"""How signals stop a study: SIGINT, SIGTERM and SIGHUP raise :class:`Interrupted` in the main
thread, except inside :func:`held` sections, where the signal waits until the section ends.

Python runs signal handlers in the main thread whatever thread the kernel delivered the signal
to, so blocking a signal in one thread does not hold it back; this module's handler does.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from repro.errors import Interrupted

__all__ = ["STOP_SIGNALS", "held", "stop_on_signals"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_state: dict[str, int] = {"held": 0, "pending": 0}


def _handler(signum: int, _: object) -> None:
    if _state["held"]:
        _state["pending"] = _state["pending"] or signum
        return
    raise Interrupted(signum)


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """While the block runs (in the main thread), the stop signals raise :class:`Interrupted`."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _handler) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _state["pending"] = 0


@contextmanager
def held() -> Iterator[None]:
    """Hold stop signals until the block ends, then raise :class:`Interrupted` for the first
    that arrived. The block's thread also blocks them at the kernel, so a child process started
    in the block inherits them blocked (it unblocks them once it has set its own handlers).

    In any other thread than the main one the block only blocks them at the kernel: the signal
    is handled in the main thread meanwhile (which stops the other threads through their own
    means), and nothing is raised in the block's thread."""
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    if threading.current_thread() is not threading.main_thread():
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        return
    _state["held"] += 1
    try:
        yield
    finally:
        _state["held"] -= 1
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if not _state["held"] and _state["pending"]:
            signum, _state["pending"] = _state["pending"], 0
            raise Interrupted(signum)
