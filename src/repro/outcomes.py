"""Slot outcomes: which attempts belong to which slot, and how each slot ended."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence

from attrs import frozen

from repro.models import Loss, PlanEntry, RunRecord

__all__ = ["SlotOutcome", "losses", "measure_of", "slot_outcomes"]


def measure_of(step_rewards: Sequence[float]) -> float:
    """The ``episode_return`` measure: the correctly rounded sum of the step rewards."""
    return math.fsum(step_rewards)


@frozen
class SlotOutcome:
    """A slot's terminal outcome: valid, failed (attempts exhausted or chain broken) or
    excluded, with its attempts in order."""

    entry: PlanEntry
    outcome: str
    attempts: tuple[RunRecord, ...]

    @property
    def terminal(self) -> RunRecord | None:
        """The last attempt, which decides the outcome."""
        return self.attempts[-1] if self.attempts else None


def _attempts_by_slot(records: Iterable[RunRecord]) -> dict[str, tuple[RunRecord, ...]]:
    """Each slot's attempts sorted by attempt number, whatever order the records come in."""
    by_slot: dict[str, list[RunRecord]] = defaultdict(list)
    for record in records:
        by_slot[record.slot].append(record)
    return {
        slot: tuple(sorted(group, key=lambda r: (r.attempt, r.attempt_id)))
        for slot, group in by_slot.items()
    }


def slot_outcomes(entries: Iterable[PlanEntry], records: Iterable[RunRecord]) -> list[SlotOutcome]:
    """Each plan entry in sealed order with its attempts sorted by attempt number. The order in
    which ``records`` are read does not matter."""
    by_slot = _attempts_by_slot(records)
    out = []
    for entry in sorted(entries, key=lambda e: e.order):
        attempts = by_slot.get(entry.slot, ())
        last = attempts[-1].status if attempts else None
        outcome = "valid" if last == "valid" else "excluded" if last == "excluded" else "failed"
        out.append(SlotOutcome(entry=entry, outcome=outcome, attempts=attempts))
    return out


def losses(outcomes: Sequence[SlotOutcome]) -> tuple[Loss, ...]:
    """Every slot that did not end valid, with its cause and attempt count."""
    out = []
    for o in outcomes:
        if o.outcome == "valid":
            continue
        last = o.terminal
        cause = (last.cause if last is not None else None) or "no attempt recorded"
        out.append(
            Loss(
                slot=o.entry.slot,
                outcome="excluded" if o.outcome == "excluded" else "failed",
                cause=cause,
                attempts=len(o.attempts),
            )
        )
    return tuple(out)


@frozen
class JoinProblem:
    """A broken join between plan and runs: where, what, what was expected, what was found."""

    where: str
    what: str
    expected: str
    found: str


def attempt_id(slot: str, attempt: int) -> str:
    """The ID of a slot's ``attempt``-th attempt."""
    return f"{slot}-a{attempt}"


def join_problems(
    entries: Sequence[PlanEntry], records: Sequence[RunRecord], max_attempts: int
) -> list[JoinProblem]:
    """Every way the runs fail to join the plan: each admitted slot must have exactly one terminal
    outcome, reached through a correctly chained sequence of attempts."""
    problems: list[JoinProblem] = []
    known = {e.slot for e in entries}
    seen_ids: set[str] = set()
    for r in records:
        if r.attempt_id in seen_ids:
            problems.append(JoinProblem(r.attempt_id, "duplicate attempt ID", "unique", "repeated"))
        seen_ids.add(r.attempt_id)
        if r.slot not in known:
            problems.append(
                JoinProblem(
                    r.attempt_id, "run for a slot not in the sealed plan", "a planned slot", r.slot
                )
            )
    by_slot = _attempts_by_slot(records)
    for entry in sorted(entries, key=lambda e: e.order):
        attempts = by_slot.get(entry.slot, ())
        where = entry.slot
        if not attempts:
            problems.append(
                JoinProblem(where, "slot has no terminal outcome", "1 terminal record", "0 records")
            )
            continue
        if entry.excluded is not None:
            if len(attempts) != 1 or attempts[0].status != "excluded":
                problems.append(
                    JoinProblem(
                        where,
                        "excluded slot must have one 'excluded' record",
                        "1 excluded record",
                        f"{len(attempts)} record(s), last {attempts[-1].status}",
                    )
                )
            continue
        previous: str | None = None
        for number, r in enumerate(attempts, start=1):
            if r.attempt != number or r.attempt_id != attempt_id(entry.slot, number):
                problems.append(
                    JoinProblem(
                        r.attempt_id,
                        "attempt numbering",
                        attempt_id(entry.slot, number),
                        r.attempt_id,
                    )
                )
            if r.predecessor != previous:
                problems.append(
                    JoinProblem(r.attempt_id, "predecessor link", str(previous), str(r.predecessor))
                )
            if r.condition != entry.condition:
                problems.append(
                    JoinProblem(r.attempt_id, "condition", entry.condition, r.condition)
                )
            if r.status == "excluded":
                problems.append(
                    JoinProblem(
                        r.attempt_id,
                        "exclusion not declared in the protocol",
                        "not excluded",
                        "excluded",
                    )
                )
            if r.status == "valid" and number != len(attempts):
                problems.append(
                    JoinProblem(
                        r.attempt_id,
                        "attempt after a valid attempt",
                        "no further attempt",
                        f"{len(attempts) - number} more",
                    )
                )
            previous = r.attempt_id
        if len(attempts) > max_attempts:
            problems.append(
                JoinProblem(
                    where,
                    "more attempts than the protocol allows",
                    str(max_attempts),
                    str(len(attempts)),
                )
            )
        elif attempts[-1].status != "valid" and len(attempts) < max_attempts:
            problems.append(
                JoinProblem(
                    where,
                    "slot abandoned before its attempts were exhausted",
                    str(max_attempts),
                    str(len(attempts)),
                )
            )
    return problems
