"""What running the plan leaves: one run record per attempt (:class:`RunRecord`), when each
attempt ran (:class:`AttemptTimes`), and the generator state a stream-mode partition began with
(:class:`Checkpoint`)."""

from __future__ import annotations

import re
from typing import Any, Literal

from attrs import field, frozen
from attrs.validators import deep_iterable, matches_re, max_len, optional

from repro.models._constraints import OMIT_IF_DEFAULT, SHA256, UTC_MICROSECONDS, Constraint

__all__ = [
    "MAX_LOST_OPENS",
    "MAX_OUTCOME_BYTES",
    "MAX_RECORD_VALUES",
    "MAX_STEP_REWARDS",
    "AttemptTimes",
    "Checkpoint",
    "GeneratorState",
    "HarnessFacts",
    "RunRecord",
    "RunStatus",
]

RunStatus = Literal["valid", "invalid", "failed", "excluded"]
"""What became of an attempt (:class:`RunRecord`)."""

#: Step rewards one run record may hold at most (as many as the longest episode a protocol
#: may ask for), and bytes of its outcome object at most (as canonical JSON): a study refuses
#: evidence past either (``evidence-too-many-step-rewards``, ``evidence-outcome-too-large``), so
#: that every record it writes fits the line verify reads at most.
MAX_STEP_REWARDS = 1_000_000
MAX_OUTCOME_BYTES = 4 << 20
#: Values (array items and object members) a run record's line may hold at most: every step
#: reward, and an outcome of MAX_OUTCOME_BYTES made of the shortest values, with room to spare.
MAX_RECORD_VALUES = MAX_STEP_REWARDS + MAX_OUTCOME_BYTES // 2 + 1024

#: Session opens in a row that may be lost to a dying worker process before the condition's
#: session is given up (every later attempt of it then fails with the last cause, untried).
MAX_LOST_OPENS = 3
#: The cause of a worker process lost while it worked: killed by a signal, or exited.
_LOST_WORKER = re.compile(r"worker-(?:died|exited):[A-Za-z0-9-]{1,32}")
#: The causes of the session opens lost before an attempt ran, in order. Not stated in the
#: schema: verify reports a schema's refusal in preference to the model's, and "[...] is too
#: long" would say less than these words, which name the causes allowed.
_LOST_OPENS = Constraint(
    deep_iterable(matches_re(_LOST_WORKER), max_len(MAX_LOST_OPENS)),
    f"hold at most {MAX_LOST_OPENS} causes of a lost worker "
    "(worker-died:SIGNAL, worker-exited:CODE)",
    in_schema=False,
)


@frozen
class RunRecord:
    """One attempt at one slot. A retry has a new ``attempt_id`` and names its ``predecessor``.

    ``status``: valid, invalid (completed but outside the protocol's validity rules), failed
    (the adapter could not complete it) or excluded (declared before sealing and never run, or
    run on a superseded scenario version: cause ``superseded-scenario-version:N``).

    Runs that end in an outcome object (the command adapter's) also keep it, and what the
    harness process left: its exit code and the length and digest of its stderr.

    What each status keeps (:mod:`repro._derive.validity` states the rule, and verify applies it to
    every record): a valid or judged-invalid attempt its evidence; a failed attempt, or one
    whose evidence the worker refused, none; a declared exclusion nothing but its cause.
    """

    attempt_id: str
    slot: str
    condition: str
    attempt: int
    predecessor: str | None
    status: RunStatus
    cause: str | None
    measure: float | None
    steps: int | None
    step_rewards: tuple[float, ...] | None
    trace_sha256: str | None = field(validator=optional(SHA256))
    contract_sha256: str | None = field(validator=optional(SHA256))
    outcome: dict[str, Any] | None = field(default=None, metadata=OMIT_IF_DEFAULT)
    harness: HarnessFacts | None = field(default=None, metadata=OMIT_IF_DEFAULT)
    #: The sha256 of the canonical bytes of an outcome withheld because it would disclose a
    #: host path, a traceback or a credential (cause ``outcome-discloses:KIND``), so that its
    #: maker can match it with their own copy; the outcome itself never enters the bundle.
    outcome_sha256: str | None = field(
        default=None, validator=optional(SHA256), metadata=OMIT_IF_DEFAULT
    )


@frozen
class HarnessFacts:
    """What a harness process left besides its outcome: its exit code, and the length and
    sha256 of its stderr (whose text never enters the bundle)."""

    exit_code: int
    stderr_bytes: int
    stderr_sha256: str = field(validator=SHA256)


@frozen
class GeneratorState:
    """A Python ``random`` generator's state, as ``random.getstate()`` gives it: the version, the
    625 Mersenne Twister words (the last is the position) and the cached Gaussian, if any."""

    version: int
    words: tuple[int, ...]
    gauss_next: float | None


@frozen
class SlotState:
    """The generator's state before ``slot``'s first attempt, in a checkpoint's ``later``."""

    slot: str
    python_random: GeneratorState


@frozen
class AttemptTimes:
    """One line of times/<partition>.jsonl: when an attempt was asked of the worker (or, for
    one sent ahead while the worker ran the attempt before it, when that one's answer came) and
    when its answer came (UTC, microseconds). Kept apart from the run records, which stay
    byte-identical whatever ran them and whenever; every attempt but a declared exclusion has
    one line, in the order of the runs file."""

    attempt_id: str
    started_utc: str = field(validator=UTC_MICROSECONDS)
    finished_utc: str = field(validator=UTC_MICROSECONDS)
    #: Session opens lost before this attempt ran (its worker process died or exited while it
    #: opened the condition's session, as under the kernel's OOM killer), each retried with a
    #: fresh worker: their causes, in order. What happened to the machine, not to the run, so
    #: it is kept here with the times, not in the run record.
    lost_opens: tuple[str, ...] = field(default=(), validator=_LOST_OPENS, metadata=OMIT_IF_DEFAULT)


@frozen
class Checkpoint:
    """runs/<partition>.checkpoint.json, in stream mode only: the state of Python's global
    generator (the stream the protocol seeds) when the partition began, from which ``repro
    replay`` re-executes its slots. NumPy's global generator is no part of the stream: nothing
    seeds it, so a simulator that draws from it cannot be replayed, and replay says so.

    ``repro.checkpoint/2`` adds ``every`` (the protocol's ``seeding.checkpoint_every``, or its
    default) and ``later``: the state before every ``every``-th slot after the first, in the
    partition's order, so that a slot is replayed from the nearest state before it. Bundles of
    ``repro.checkpoint/1`` keep the first state only, and replay from it."""

    schema: Literal["repro.checkpoint/1", "repro.checkpoint/2"]
    partition: str
    python_random: GeneratorState
    every: int | None = field(default=None, metadata=OMIT_IF_DEFAULT)
    later: tuple[SlotState, ...] = field(default=(), metadata=OMIT_IF_DEFAULT)
