"""A study's early stop: a study whose first slots all fail the same structural way stops
before it spends the rest of its plan.

A harness whose outcome lacks a key the scoring needs, prints no JSON, or cannot start fails
every run of a study the same way; with model calls, a whole paid study is thrown away before
anyone looks. So a study watches how its first :data:`FIRST_SLOTS` slots end (in the order they
end, slots the protocol excluded before sealing not counted: they never run). When every one of
them failed, or was invalid, with one and the same cause, and that cause is :func:`structural`
(a fault of the harness, the policy or the protocol, not of one run), the study stops: no
bundle, nothing claimed, the records of what ran kept in its incomplete root, the cause and the
count named, a non-zero exit.

Slots run on threads (the command adapter's harnesses, where runs cost money) wait at the
watch's :class:`Gate` past the first :data:`FIRST_SLOTS` until it has decided, so a study it
stops has run its first slots and no more than were under way beside them on other threads,
however busy the machine. Worker processes and Dask tasks do not wait: there, the stop comes
when the study's own thread has seen the slots end, and a slot or two more may have started.

The rule cannot change any result of a study that does not stop: it only reads how slots ended,
decides once (when the :data:`FIRST_SLOTS`-th slot ends) and then is done, and a study it does
not stop runs, records and derives exactly as it would without it (``repro study --keep-going``
turns it off; tests/test_stopping.py compares the two bundles byte for byte).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the command line reads FIRST_SLOTS for its help, and imports no model
    from repro._derive.tally import Ended

__all__ = [
    "FIRST_SLOTS",
    "STRUCTURAL",
    "EarlyStop",
    "Gate",
    "Watch",
    "early_stop",
    "ran",
    "structural",
]

#: How many slots must end, every one failed or invalid with the same structural cause, for a
#: study to stop early. A study that plans no more slots than this never stops early: stopping
#: would save nothing.
FIRST_SLOTS = 3

#: The causes (exactly, or as a prefix ending in ``:``) that are a fault of the harness, the
#: policy or the protocol rather than of one run: the same one on every slot means every slot
#: will end the same way. A timeout, a killed harness or a measure outside its declared range
#: is not among them: each can be a fact about the runs themselves.
STRUCTURAL = (
    "outcome-not-json",
    "outcome-not-object",
    "outcome-schema",
    "outcome-too-large",
    "outcome-scenario-version-missing",
    "evidence-step-rewards-missing",
    "evidence-steps-mismatch",
    "harness-exit:",
    "harness-error:",
    "policy-error:",
    "session-open-failed:",
)


def structural(cause: str | None) -> bool:
    """Whether ``cause`` is a fault of the harness, policy or protocol (:data:`STRUCTURAL`)."""
    if cause is None:
        return False
    return any(
        cause.startswith(known) if known.endswith(":") else cause == known for known in STRUCTURAL
    )


def ran(end: Ended) -> bool:
    """Whether the slot that ended as ``end`` ran: all but those the protocol excluded before
    sealing, which never run (a run excluded when it ran, on a superseded scenario version,
    ran); the slots the :class:`Gate` admits are the same."""
    # Lazy: the command line imports this module for FIRST_SLOTS alone, and no model.
    from repro._derive.tally import is_declared_exclusion

    return not (end.outcome == "excluded" and is_declared_exclusion(end.cause))


def early_stop(ended: Sequence[Ended], planned: int) -> str | None:
    """The cause that stops a study of ``planned`` slots to run, whose slots ended as
    ``ended`` (in the order they ended): the one structural cause of its first
    :data:`FIRST_SLOTS` slots that ran (:func:`ran`), each failed or invalid; None when the
    study goes on (or when fewer than :data:`FIRST_SLOTS` such slots have ended)."""
    first = [end for end in ended if ran(end)][:FIRST_SLOTS]
    if planned <= FIRST_SLOTS or len(first) < FIRST_SLOTS:
        return None
    causes = {end.cause for end in first}
    if len(causes) != 1 or any(end.outcome != "failed" for end in first):
        return None
    (cause,) = causes
    return cause if structural(cause) else None


class EarlyStop(Exception):
    """Raised in the study's own thread when :func:`early_stop` stops it: ``cause`` on each of
    the first ``slots`` slots to end."""

    def __init__(self, cause: str, slots: int) -> None:
        super().__init__(cause, slots)
        self.cause = cause
        self.slots = slots


#: How often a slot held at the gate looks whether the study was stopped.
_GATE_SLICE_SECONDS = 0.05


class Gate:
    """Where slots wait while the watch has not decided: the first :data:`FIRST_SLOTS` slots
    that run pass at once (or one for each thread, when there are more threads: every thread
    starts its first slot), every later one waits until :meth:`open` (the watch decided to go
    on) or until ``cancelled`` (the study stops), so that a study the watch stops has started
    no more than its first slots and those already under way on other threads. Where slots
    start is the scheduler's (:mod:`repro._execute.threads` holds them here); the watch opens
    the gate from the study's own thread."""

    def __init__(self, open_: bool = False) -> None:
        self._opened = threading.Event()
        if open_:
            self._opened.set()
        self._lock = threading.Lock()
        self._admitted = 0
        self._first = FIRST_SLOTS

    def widen(self, threads: int) -> None:
        """Let ``threads`` slots through at once, when that is more than
        :data:`FIRST_SLOTS`: one for each thread (a study on 128 threads starts 128 runs at
        once, as it would without the gate)."""
        with self._lock:
            self._first = max(self._first, threads)

    def open(self) -> None:
        """Let every slot through from now on."""
        self._opened.set()

    def admit(self, cancelled: threading.Event) -> bool:
        """Wait until a slot that runs may start: True, or False when the study stopped
        meanwhile (the slot must not start)."""
        if self._opened.is_set():
            return True
        with self._lock:
            self._admitted += 1
            if self._admitted <= self._first:
                return True
        while not self._opened.wait(_GATE_SLICE_SECONDS):
            if cancelled.is_set():
                return False
        return True


class Watch:
    """Sees each slot end in turn and raises :class:`EarlyStop` when :func:`early_stop` says
    so; decides once, when the :data:`FIRST_SLOTS`-th slot that ran ends, and then watches
    no more (and opens its :attr:`gate`). A watch that is not ``armed`` never stops anything,
    and its gate is open from the start."""

    def __init__(self, planned: int, armed: bool = True) -> None:
        self._planned = planned
        self._first: list[Ended] | None = [] if armed and planned > FIRST_SLOTS else None
        self.gate = Gate(open_=self._first is None)

    def see(self, end: Ended) -> None:
        """Note how a slot ended; raise :class:`EarlyStop` if the study must stop now."""
        if self._first is None or not ran(end):
            return
        self._first.append(end)
        if len(self._first) < FIRST_SLOTS:
            return
        first, self._first = self._first, None
        cause = early_stop(first, self._planned)
        if cause is not None:
            raise EarlyStop(cause, len(first))
        self.gate.open()
