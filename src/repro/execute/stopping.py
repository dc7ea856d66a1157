"""A study's early stop: a study whose first slots all fail the same structural way stops
before it spends the rest of its plan.

A harness whose outcome lacks a key the scoring needs, prints no JSON, or cannot start fails
every run of a study the same way; with model calls, a whole paid study is thrown away before
anyone looks. So a study watches how its first :data:`FIRST_SLOTS` slots end (in the order they
end, excluded slots not counted). When every one of them failed, or was invalid, with one and
the same cause, and that cause is :func:`structural` (a fault of the harness, the policy or the
protocol, not of one run), the study stops: no bundle, nothing claimed, the records of what ran
kept in its incomplete root, the cause and the count named, a non-zero exit.

The rule cannot change any result of a study that does not stop: it only reads how slots ended,
decides once (when the :data:`FIRST_SLOTS`-th slot ends) and then is done, and a study it does
not stop runs, records and derives exactly as it would without it (``repro study --keep-going``
turns it off; tests/test_stopping.py compares the two bundles byte for byte).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the command line reads FIRST_SLOTS for its help, and imports no model
    from repro.derive.tally import Ended

__all__ = ["FIRST_SLOTS", "STRUCTURAL", "EarlyStop", "Watch", "early_stop", "structural"]

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


def early_stop(ended: Sequence[Ended], planned: int) -> str | None:
    """The cause that stops a study of ``planned`` slots to run, whose slots ended as
    ``ended`` (in the order they ended): the one structural cause of its first
    :data:`FIRST_SLOTS` slots that were not excluded, each failed or invalid; None when the
    study goes on (or when fewer than :data:`FIRST_SLOTS` such slots have ended)."""
    first = [end for end in ended if end.outcome != "excluded"][:FIRST_SLOTS]
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


class Watch:
    """Sees each slot end in turn and raises :class:`EarlyStop` when :func:`early_stop` says
    so; decides once, when the :data:`FIRST_SLOTS`-th slot not excluded ends, and then watches
    no more. A watch that is not ``armed`` never stops anything."""

    def __init__(self, planned: int, armed: bool = True) -> None:
        self._planned = planned
        self._first: list[Ended] | None = [] if armed and planned > FIRST_SLOTS else None

    def see(self, end: Ended) -> None:
        """Note how a slot ended; raise :class:`EarlyStop` if the study must stop now."""
        if self._first is None or end.outcome == "excluded":
            return
        self._first.append(end)
        if len(self._first) < FIRST_SLOTS:
            return
        first, self._first = self._first, None
        cause = early_stop(first, self._planned)
        if cause is not None:
            raise EarlyStop(cause, len(first))
