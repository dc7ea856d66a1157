"""Slot outcomes: which attempts belong to which slot, how each slot ended, and the tally of it
all that the derivations read.

The derivations never hold whole run records: each record is reduced to an :class:`Attempt`
(everything but its step rewards, which become the measure recomputed from them), and the
attempts of a set of plan entries are reduced to a :class:`RunTally` (per condition the counts
and the valid measures, the losses, and counts with the first few examples of everything the
tiers judge). ``repro study`` tallies the records it wrote, ``repro verify`` the records it reads,
one partition at a time, and both hand the tally to the same derivation.
"""

from __future__ import annotations

import math
import operator
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Generic, Literal, TypeVar

from attrs import field, frozen

from repro._derive.scenarios import SUPERSEDED, version_verdict
from repro.models import Loss, Partition, PlanEntry, RunRecord, RunStatus, Scenario

__all__ = [
    "DECLARED",
    "MAX_JOIN_PROBLEMS",
    "Attempt",
    "ConditionTally",
    "Ended",
    "FirstOf",
    "JoinProblem",
    "RunTally",
    "attempt_id",
    "declared_exclusion",
    "is_declared_exclusion",
    "measure_of",
    "merge",
    "runs",
    "slot_ended",
    "slot_outcome",
    "tally",
]

T = TypeVar("T")

#: Join problems a tally keeps one by one (``verify`` lists them); the rest are counted.
MAX_JOIN_PROBLEMS = 100


def measure_of(step_rewards: Sequence[float]) -> float:
    """The ``episode_return`` measure: the correctly rounded sum of the step rewards."""
    return math.fsum(step_rewards)


def attempt_id(slot: str, attempt: int) -> str:
    """The ID of a slot's ``attempt``-th attempt."""
    return f"{slot}-a{attempt}"


#: How the cause of a slot the protocol excluded before sealing begins.
DECLARED = "excluded before sealing: "


def runs(entry: PlanEntry) -> bool:
    """Whether a slot's attempts run (and so have times and crate actions): every slot's but
    one the protocol excluded before sealing, whose one record is made without running. The
    study and verify both decide it here."""
    return entry.excluded is None


def declared_exclusion(reason: str) -> str:
    """The cause of the one record of a slot the protocol excluded before sealing."""
    return DECLARED + reason


def is_declared_exclusion(cause: str | None) -> bool:
    """Whether ``cause`` is that of a slot the protocol excluded before sealing
    (:func:`declared_exclusion`)."""
    return cause is not None and cause.startswith(DECLARED)


@frozen
class Attempt:
    """What the derivations read of one run record: all of it but the step rewards, of which
    only the measure recomputed from them is kept, so that what is held does not grow with the
    steps of a run."""

    attempt_id: str
    slot: str
    condition: str
    attempt: int
    predecessor: str | None
    status: RunStatus
    cause: str | None
    measure: float | None
    #: :func:`measure_of` the step rewards; None for a record without step rewards.
    recomputed: float | None
    traced: bool
    contract_sha256: str | None
    #: The run's outcome object (runs that end in one): what scores are derived from.
    outcome: dict[str, Any] | None = None

    @classmethod
    def of(cls, record: RunRecord) -> Attempt:
        """The attempt ``record`` describes. The strings most records repeat (condition, cause,
        contract digest) are interned: held once, however many attempts hold them."""
        rewards = record.step_rewards
        return cls(
            attempt_id=record.attempt_id,
            slot=record.slot,
            condition=sys.intern(record.condition),
            attempt=record.attempt,
            predecessor=record.predecessor,
            status=record.status,
            cause=sys.intern(record.cause) if record.cause is not None else None,
            measure=record.measure,
            recomputed=measure_of(rewards) if rewards is not None else None,
            traced=record.trace_sha256 is not None,
            contract_sha256=(
                sys.intern(record.contract_sha256) if record.contract_sha256 is not None else None
            ),
            outcome=record.outcome,
        )


#: How a slot ends.
SlotEnd = Literal["valid", "failed", "excluded"]


@frozen
class SlotOutcome:
    """A slot's terminal outcome: valid, failed (attempts exhausted or chain broken) or
    excluded, with its attempts in order."""

    entry: PlanEntry
    outcome: SlotEnd
    attempts: tuple[Attempt, ...]

    @property
    def terminal(self) -> Attempt | None:
        """The last attempt, which decides the outcome."""
        return self.attempts[-1] if self.attempts else None


def _attempts_by_slot(attempts: Iterable[Attempt]) -> dict[str, tuple[Attempt, ...]]:
    """Each slot's attempts sorted by attempt number, whatever order they come in."""
    by_slot: dict[str, list[Attempt]] = defaultdict(list)
    for a in attempts:
        by_slot[a.slot].append(a)
    # Most slots have one attempt, which needs no sorting.
    return {
        slot: tuple(group) if len(group) == 1 else tuple(sorted(group, key=_attempt_order))
        for slot, group in by_slot.items()
    }


def _attempt_order(a: Attempt) -> tuple[int, str]:
    """Where an attempt comes among its slot's: by number, then ID."""
    return a.attempt, a.attempt_id


def _outcomes(
    entries: Iterable[PlanEntry], by_slot: Mapping[str, tuple[Attempt, ...]]
) -> list[SlotOutcome]:
    """Each plan entry in sealed order with its attempts."""
    out = []
    for entry in sorted(entries, key=_ORDER):
        attempts = by_slot.get(entry.slot, ())
        outcome = slot_outcome(attempts[-1].status if attempts else None)
        out.append(SlotOutcome(entry, outcome, attempts))
    return out


#: A plan entry's place in sealed order (one C call per entry, where a tally sorts them).
_ORDER = operator.attrgetter("order")


@frozen
class Ended:
    """How a slot ended, and the cause its last attempt records (None when it has none, or
    when that attempt is valid): what a study's progress and its early stop
    (:mod:`repro._execute.stopping`) see of each slot as it finishes."""

    outcome: SlotEnd
    cause: str | None


def slot_ended(last: RunRecord | None) -> Ended:
    """How a slot whose last attempt's record is ``last`` (None: it has none) ended."""
    if last is None:
        return Ended("failed", None)
    return Ended(slot_outcome(last.status), last.cause)


LossStatus = Literal["invalid", "failed", "excluded"]
"""How a slot that did not end valid ended, as the record statuses name it (:func:`loss_status`)."""
#: The statuses of lost slots, in the order a summary of the losses gives them.
LOSS_STATUSES: tuple[LossStatus, ...] = ("invalid", "failed", "excluded")


def loss_status(last: str | None) -> LossStatus:
    """How a slot that did not end valid ended, from the status of its last attempt (None: it
    has none), as docs/bundle-format.md names a record's status: invalid (its last attempt ran
    but its result is outside the protocol's validity rules), excluded, or failed (its attempts
    exhausted without a run that completed, or none recorded). The ledger's losses say failed
    for the first and the last alike (:func:`slot_outcome`)."""
    return "invalid" if last == "invalid" else "excluded" if last == "excluded" else "failed"


def loss_groups(
    losses: Iterable[Loss], lost_as: Mapping[str, LossStatus]
) -> list[tuple[LossStatus, list[Loss]]]:
    """``losses`` grouped by how each slot ended (``lost_as``; the ledger's outcome where a slot
    is not in it), in the order of :data:`LOSS_STATUSES`, empty groups left out."""
    groups: dict[LossStatus, list[Loss]] = {status: [] for status in LOSS_STATUSES}
    for loss in losses:
        groups[lost_as.get(loss.slot, loss.outcome)].append(loss)
    return [(status, found) for status, found in groups.items() if found]


def slot_outcome(last: str | None) -> SlotEnd:
    """How a slot ended, from the status of its last attempt (None: it has none): valid,
    excluded, or failed (attempts exhausted, or none recorded)."""
    return "valid" if last == "valid" else "excluded" if last == "excluded" else "failed"


@frozen
class JoinProblem:
    """A broken join between plan and runs: a stable code, where (a slot or an attempt ID),
    what, what was expected, what was found, and the partition whose runs file it is in: the
    sealed partition of a slot, the condition an attempt's record names for an attempt."""

    code: str
    where: str
    what: str
    expected: str
    found: str
    partition: str


@frozen
class FirstOf(Generic[T]):
    """How many things there are, and the first of them in order (at most as many as the
    tally keeps of their kind)."""

    count: int
    first: tuple[T, ...]


def _first_of(items: Sequence[T], keep: int) -> FirstOf[T]:
    return FirstOf(len(items), tuple(items[:keep]))


def _concat(parts: Iterable[FirstOf[T]], keep: int) -> FirstOf[T]:
    parts = list(parts)
    return FirstOf(sum(p.count for p in parts), tuple(x for p in parts for x in p.first)[:keep])


def _attempt_problems(known: set[str], attempts: Sequence[Attempt]) -> list[JoinProblem]:
    """Attempts that repeat an attempt ID or name a slot not in ``known``, in the order the
    attempts come."""
    problems = []
    seen_ids: set[str] = set()
    for a in attempts:
        if a.attempt_id in seen_ids:
            problems.append(
                JoinProblem(
                    "duplicate-attempt-id",
                    a.attempt_id,
                    "duplicate attempt ID",
                    "unique",
                    "repeated",
                    a.condition,
                )
            )
        seen_ids.add(a.attempt_id)
        if a.slot not in known:
            problems.append(
                JoinProblem(
                    "unplanned-slot",
                    a.attempt_id,
                    "run for a slot not in the sealed plan",
                    "a planned slot",
                    a.slot,
                    a.condition,
                )
            )
    return problems


def _version_problem(a: Attempt, scenario: Scenario | None) -> JoinProblem | None:
    """A completed attempt whose status and cause disagree with the version verdict its
    outcome gives (:func:`repro._derive.scenarios.version_verdict`)."""
    verdict = version_verdict(scenario, a.outcome) if a.status != "failed" else None
    found = (a.status, a.cause)
    if verdict is not None and found != verdict:
        return JoinProblem(
            "version-verdict",
            a.attempt_id,
            "scenario version verdict",
            " ".join(verdict),
            a.status,
            a.condition,
        )
    if verdict is None and (
        (a.status == "excluded" and (a.cause or "").startswith(SUPERSEDED))
        or (a.status == "invalid" and a.cause == "outcome-scenario-version-missing")
    ):
        return JoinProblem(
            "version-verdict",
            a.attempt_id,
            "scenario version verdict",
            "current version",
            f"{a.status} {a.cause}",
            a.condition,
        )
    return None


def _excluded_slot_problems(
    entry: PlanEntry, attempts: Sequence[Attempt], partition: str
) -> list[JoinProblem]:
    """A slot the protocol excluded before sealing has one ``excluded`` record whose cause is
    the reason the protocol gives."""
    problems = []
    reason = declared_exclusion(entry.excluded or "")
    if len(attempts) == 1 and attempts[0].cause != reason:
        problems.append(
            JoinProblem(
                "excluded-slot-cause",
                entry.slot,
                "an excluded slot's cause is the reason the protocol gives",
                reason,
                str(attempts[0].cause),
                partition,
            )
        )
    if len(attempts) != 1 or attempts[0].status != "excluded":
        problems.append(
            JoinProblem(
                "excluded-slot",
                entry.slot,
                "excluded slot must have one 'excluded' record",
                "1 excluded record",
                f"{len(attempts)} record(s), last {attempts[-1].status}",
                partition,
            )
        )
    return problems


def _attempt_link_problems(
    entry: PlanEntry, number: int, previous: str | None, a: Attempt
) -> Iterator[JoinProblem]:
    """How the ``number``-th attempt of a slot fails to be its next link: its number and ID,
    its predecessor (``previous``), its condition."""
    expected_id = attempt_id(entry.slot, number)
    if a.attempt != number or a.attempt_id != expected_id:
        yield JoinProblem(
            "attempt-numbering",
            a.attempt_id,
            "attempt numbering",
            expected_id,
            a.attempt_id,
            a.condition,
        )
    if a.predecessor != previous:
        yield JoinProblem(
            "predecessor-link",
            a.attempt_id,
            "predecessor link",
            str(previous),
            str(a.predecessor),
            a.condition,
        )
    if a.condition != entry.condition:
        yield JoinProblem(
            "condition", a.attempt_id, "condition", entry.condition, a.condition, a.condition
        )


def _chain_problems(
    entry: PlanEntry, attempts: Sequence[Attempt], scenarios: Mapping[str, Scenario | None]
) -> list[JoinProblem]:
    """How a planned slot's attempts fail to be one correctly chained sequence that ends at its
    first valid or superseded attempt, with no exclusion the protocol does not declare."""
    problems: list[JoinProblem] = []
    previous: str | None = None
    for number, a in enumerate(attempts, start=1):
        problems += _attempt_link_problems(entry, number, previous, a)
        superseded = a.status == "excluded" and (a.cause or "").startswith(SUPERSEDED)
        if a.status == "excluded" and not superseded:
            problems.append(
                JoinProblem(
                    "undeclared-exclusion",
                    a.attempt_id,
                    "exclusion not declared in the protocol",
                    "not excluded",
                    "excluded",
                    a.condition,
                )
            )
        version = _version_problem(a, scenarios.get(a.condition))
        if version is not None:
            problems.append(version)
        if (a.status == "valid" or superseded) and number != len(attempts):
            problems.append(
                JoinProblem(
                    "attempt-after-terminal",
                    a.attempt_id,
                    f"attempt after a{' superseded' if superseded else ' valid'} attempt",
                    "no further attempt",
                    f"{len(attempts) - number} more",
                    a.condition,
                )
            )
        previous = a.attempt_id
    return problems


def _count_problem(
    entry: PlanEntry, attempts: Sequence[Attempt], max_attempts: int, partition: str
) -> JoinProblem | None:
    """A slot with more attempts than the protocol allows, or left failed before its attempts
    were exhausted."""
    if len(attempts) > max_attempts:
        return JoinProblem(
            "too-many-attempts",
            entry.slot,
            "more attempts than the protocol allows",
            str(max_attempts),
            str(len(attempts)),
            partition,
        )
    if attempts[-1].status not in ("valid", "excluded") and len(attempts) < max_attempts:
        return JoinProblem(
            "slot-abandoned",
            entry.slot,
            "slot abandoned before its attempts were exhausted",
            str(max_attempts),
            str(len(attempts)),
            partition,
        )
    return None


def _slot_problems(
    outcomes: Sequence[SlotOutcome],
    max_attempts: int,
    scenarios: Mapping[str, Scenario | None],
    partition_of: Mapping[str, str],
) -> list[JoinProblem]:
    """Every way a planned slot's attempts fail to reach exactly one terminal outcome through a
    correctly chained sequence, in sealed order. ``partition_of`` gives each slot's sealed
    partition."""
    problems: list[JoinProblem] = []
    for o in outcomes:
        entry, attempts = o.entry, o.attempts
        partition = partition_of[entry.slot]
        if not attempts:
            problems.append(
                JoinProblem(
                    "no-terminal-outcome",
                    entry.slot,
                    "slot has no terminal outcome",
                    "1 terminal record",
                    "0 records",
                    partition,
                )
            )
        elif entry.excluded is not None:
            problems += _excluded_slot_problems(entry, attempts, partition)
        else:
            problems += _chain_problems(entry, attempts, scenarios)
            count = _count_problem(entry, attempts, max_attempts, partition)
            if count is not None:
                problems.append(count)
    return problems


@frozen
class ConditionTally:
    """One condition's slots, as aggregates.json counts them."""

    scheduled: int
    valid: int
    failed: int
    excluded: int
    #: The measures of the slots that ended valid, in sealed order (a valid slot without a
    #: measure is counted valid and has none here).
    measures: tuple[float, ...]
    #: Slots excluded because their run was made on a superseded scenario version.
    superseded: int = 0
    #: The slots that ended valid with an outcome, in sealed order: the terminal attempt's ID,
    #: outcome and measure (what scores are derived from).
    scored: tuple[tuple[str, dict[str, Any], float | None], ...] = ()
    #: The replicate of each of ``measures``, in the same order (what contrasts pair by).
    replicates: tuple[int, ...] = ()
    #: The replicate of each of ``scored``, in the same order.
    scored_replicates: tuple[int, ...] = ()


@frozen
class RunTally:
    """Everything the derivations read of the plan entries and their attempts.

    Join problems come in two kinds: those of single attempts (a repeated attempt ID, a slot the
    plan does not have) and those of slots (in sealed order), and all of the first come before
    all of the second. The attempts' problems are kept twice: among all attempts in the order
    they were read, as ``verify`` lists them, and among the attempts of planned slots in sealed
    order, as the execution-control tier judges them.
    """

    #: Partitions and plan entries tallied.
    partitions: int
    slots: int
    #: Attempts of planned slots (an attempt naming no planned slot is not counted).
    attempts: int
    #: Per condition named by an entry, in the order its first entry comes.
    conditions: dict[str, ConditionTally]
    #: Every slot that did not end valid, in sealed order.
    losses: tuple[Loss, ...]
    #: Slots that ended valid whose terminal attempt carries a trace digest.
    traced: int
    #: Slots that ended valid whose measure was recomputed from step rewards, and the IDs of
    #: those whose measure differs from the recomputed one.
    recomputed: int
    wrong_measures: FirstOf[str]
    #: Attempts that ran (valid or invalid) with other contract facts than their condition's.
    contract_mismatches: FirstOf[str]
    attempt_problems: FirstOf[JoinProblem]
    planned_attempt_problems: FirstOf[JoinProblem]
    slot_problems: FirstOf[JoinProblem]
    #: How each slot of ``losses`` ended, by the status of its last attempt
    #: (:func:`loss_status`): what a summary of the losses groups them by. Not stored.
    lost_as: dict[str, LossStatus] = field(factory=dict)

    @property
    def join_problems(self) -> FirstOf[JoinProblem]:
        """Every join problem: those of all attempts in the order read, then those of slots."""
        return _concat((self.attempt_problems, self.slot_problems), MAX_JOIN_PROBLEMS)

    @property
    def plan_join_problems(self) -> FirstOf[JoinProblem]:
        """The join problems of the planned slots: those of their attempts in sealed order,
        then those of the slots."""
        return _concat((self.planned_attempt_problems, self.slot_problems), MAX_JOIN_PROBLEMS)

    @property
    def valid(self) -> int:
        """Slots that ended valid."""
        return sum(c.valid for c in self.conditions.values())

    @property
    def failed(self) -> int:
        """Slots that ended failed."""
        return sum(c.failed for c in self.conditions.values())

    @property
    def excluded(self) -> int:
        """Slots that ended excluded."""
        return sum(c.excluded for c in self.conditions.values())


def _condition_tally(slots: Sequence[SlotOutcome]) -> ConditionTally:
    """One condition's counts, valid measures and scored outcomes, from its slots in sealed
    order (in one pass over them: verify tallies every slot)."""
    valid = failed = excluded = superseded = 0
    measures: list[float] = []
    replicates: list[int] = []
    scored: list[tuple[str, dict[str, Any], float | None]] = []
    scored_replicates: list[int] = []
    for o in slots:
        outcome, last = o.outcome, o.terminal
        if outcome == "valid":
            valid += 1
            if last is not None and last.measure is not None:
                measures.append(last.measure)
                replicates.append(o.entry.replicate)
            if last is not None and last.outcome is not None:
                scored.append((last.attempt_id, last.outcome, last.measure))
                scored_replicates.append(o.entry.replicate)
        elif outcome == "failed":
            failed += 1
        elif outcome == "excluded":
            excluded += 1
            superseded += last is not None and (last.cause or "").startswith(SUPERSEDED)
    return ConditionTally(
        scheduled=len(slots),
        valid=valid,
        failed=failed,
        excluded=excluded,
        measures=tuple(measures),
        superseded=superseded,
        scored=tuple(scored),
        replicates=tuple(replicates),
        scored_replicates=tuple(scored_replicates),
    )


def _losses(outcomes: Sequence[SlotOutcome]) -> list[Loss]:
    """Every slot that did not end valid, in sealed order, with the cause of its last attempt."""
    losses = []
    for o in outcomes:
        if o.outcome != "valid":
            last = o.terminal
            losses.append(
                Loss(
                    slot=o.entry.slot,
                    outcome="excluded" if o.outcome == "excluded" else "failed",
                    cause=(last.cause if last is not None else None) or "no attempt recorded",
                    attempts=len(o.attempts),
                )
            )
    return losses


def tally(
    partitions: Sequence[Partition],
    attempts: Iterable[Attempt],
    max_attempts: int,
    contracts: Mapping[str, str],
    scenarios: Mapping[str, Scenario | None] | None = None,
) -> RunTally:
    """Join ``attempts`` to the entries of ``partitions`` and reduce them to what the
    derivations read. ``contracts`` maps each condition to the digest of its contract facts,
    ``scenarios`` to the scenario it runs (whose version its outcomes are judged against).
    Whatever order the attempts come in, everything but the order of the attempts' own join
    problems is the same."""
    entries = [e for part in partitions for e in part.entries]
    attempts = list(attempts)
    outcomes = _outcomes(entries, _attempts_by_slot(attempts))
    conditions: dict[str, list[SlotOutcome]] = defaultdict(list)
    for o in outcomes:
        conditions[o.entry.condition].append(o)
    losses = _losses(outcomes)
    valid = [o.terminal for o in outcomes if o.outcome == "valid" and o.terminal is not None]
    recomputed = [a for a in valid if a.recomputed is not None]
    planned = [a for o in outcomes for a in o.attempts]
    ran = [a for a in planned if a.status in ("valid", "invalid")]
    known = {e.slot for e in entries}
    return RunTally(
        partitions=len(partitions),
        slots=len(entries),
        attempts=len(planned),
        conditions={condition: _condition_tally(slots) for condition, slots in conditions.items()},
        losses=tuple(losses),
        traced=sum(a.traced for a in valid),
        recomputed=len(recomputed),
        wrong_measures=_first_of(
            [a.attempt_id for a in recomputed if a.measure != a.recomputed], 1
        ),
        contract_mismatches=_first_of(
            [a.attempt_id for a in ran if a.contract_sha256 != contracts.get(a.condition)], 1
        ),
        attempt_problems=_first_of(_attempt_problems(known, attempts), MAX_JOIN_PROBLEMS),
        planned_attempt_problems=_first_of(_attempt_problems(known, planned), MAX_JOIN_PROBLEMS),
        slot_problems=_first_of(
            _slot_problems(
                outcomes,
                max_attempts,
                scenarios or {},
                {e.slot: part.id for part in partitions for e in part.entries},
            ),
            MAX_JOIN_PROBLEMS,
        ),
        lost_as={
            o.entry.slot: loss_status(None if o.terminal is None else o.terminal.status)
            for o in outcomes
            if o.outcome != "valid"
        },
    )


def merge(tallies: Sequence[RunTally]) -> RunTally:
    """The tally of several partitions from the tallies of each, in sealed order. It equals the
    tally of all their entries and attempts together when no slot or attempt ID is in two of
    them and each partition's entries come after the previous one's in sealed order."""
    per_condition: dict[str, list[ConditionTally]] = defaultdict(list)
    for t in tallies:
        for condition, c in t.conditions.items():
            per_condition[condition].append(c)
    return RunTally(
        partitions=sum(t.partitions for t in tallies),
        slots=sum(t.slots for t in tallies),
        attempts=sum(t.attempts for t in tallies),
        conditions={
            condition: ConditionTally(
                scheduled=sum(c.scheduled for c in parts),
                valid=sum(c.valid for c in parts),
                failed=sum(c.failed for c in parts),
                excluded=sum(c.excluded for c in parts),
                measures=tuple(m for c in parts for m in c.measures),
                superseded=sum(c.superseded for c in parts),
                scored=tuple(x for c in parts for x in c.scored),
                replicates=tuple(r for c in parts for r in c.replicates),
                scored_replicates=tuple(r for c in parts for r in c.scored_replicates),
            )
            for condition, parts in per_condition.items()
        },
        losses=tuple(loss for t in tallies for loss in t.losses),
        traced=sum(t.traced for t in tallies),
        recomputed=sum(t.recomputed for t in tallies),
        wrong_measures=_concat((t.wrong_measures for t in tallies), 1),
        contract_mismatches=_concat((t.contract_mismatches for t in tallies), 1),
        attempt_problems=_concat((t.attempt_problems for t in tallies), MAX_JOIN_PROBLEMS),
        planned_attempt_problems=_concat(
            (t.planned_attempt_problems for t in tallies), MAX_JOIN_PROBLEMS
        ),
        slot_problems=_concat((t.slot_problems for t in tallies), MAX_JOIN_PROBLEMS),
        lost_as={slot: status for t in tallies for slot, status in t.lost_as.items()},
    )
