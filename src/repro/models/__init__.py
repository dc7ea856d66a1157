"""Frozen value objects for everything repro reads or writes.

Every bundle file is the canonical JSON of exactly one of the top-level models here
(:class:`Protocol` wrapped in :class:`FrozenProtocol`, :class:`Seal`, :class:`Partition`,
:class:`RunRecord`, :class:`Aggregates`, :class:`Tiers`, :class:`Ledger`, :class:`Environment`).
"""

from __future__ import annotations

import math
import re
import unicodedata
from datetime import datetime
from typing import Any, Literal

from attrs import field, frozen
from attrs.validators import optional

__all__ = [
    "DEFAULT_OPEN_TIMEOUT_SECONDS",
    "MAX_LOST_OPENS",
    "MAX_OUTCOME_BYTES",
    "MAX_RECORD_VALUES",
    "MAX_RESAMPLES",
    "MAX_STEP_REWARDS",
    "OMIT_IF_DEFAULT",
    "TIER_NAMES",
    "AdapterFacts",
    "AdapterSpec",
    "Aggregates",
    "AttemptTimes",
    "BreadthGate",
    "CellScore",
    "Check",
    "CheckResult",
    "CheckSummary",
    "Checkpoint",
    "Citation",
    "Condition",
    "ConditionAggregate",
    "ControlFloorGate",
    "Criteria",
    "Disagreement",
    "Environment",
    "EstimandValue",
    "Exclusion",
    "Factor",
    "FieldError",
    "FigureComparison",
    "FrozenProtocol",
    "GateResult",
    "Gates",
    "GeneratorState",
    "HarnessFacts",
    "Interval",
    "IntervalValue",
    "Ledger",
    "Level",
    "Loss",
    "Measure",
    "Participant",
    "Partition",
    "PartitionRef",
    "PlanEntry",
    "Protocol",
    "Published",
    "PublishedCondition",
    "PublishedEstimand",
    "Reproduction",
    "Retry",
    "Rule",
    "RunRecord",
    "RunScore",
    "Scenario",
    "Scores",
    "Scoring",
    "Seal",
    "Seeding",
    "Source",
    "Taxonomy",
    "Tier",
    "Tiers",
]

Level = str | int
"""A factor level: a name or a whole number."""

#: A bootstrap holds resamples x runs values at once; ten times the default is plenty.
MAX_RESAMPLES = 100_000

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


#: Field metadata: the field is left out of its object's JSON while it holds its default, so
#: that adding it changed no existing file's bytes (or a protocol's digest).
OMIT_IF_DEFAULT = {"omit_if_default": True}


class FieldError(ValueError):
    """A field value of the right type that a validator refuses; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _ident(_: object, attribute: Any, value: str) -> None:
    if not _ID.fullmatch(value):
        raise FieldError(
            attribute.name,
            f"{attribute.name} {value!r} must be 1-64 characters of letters, digits, '_', '.', '-'",
        )


def _sha256(_: object, attribute: Any, value: str) -> None:
    if not _HEX64.fullmatch(value):
        raise FieldError(attribute.name, f"{attribute.name} must be 64 lower-case hex digits")


def _one_line(_: object, attribute: Any, value: str) -> None:
    # The title goes into bag-info.txt as a "Label: value" line; a line break would add lines.
    if any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in value):
        raise FieldError(
            attribute.name, f"{attribute.name} must be one line without control characters"
        )


def _seed(_: object, attribute: Any, value: int) -> None:
    if not 0 <= value < 2**63:
        raise FieldError(attribute.name, f"{attribute.name} must be in [0, 2**63), not {value}")


def _positive(_: object, attribute: Any, value: int) -> None:
    if value < 1:
        raise FieldError(attribute.name, f"{attribute.name} must be at least 1, not {value}")


def _probability(_: object, attribute: Any, value: float) -> None:
    if not 0.5 <= value < 1:
        raise FieldError(attribute.name, f"{attribute.name} must be in [0.5, 1), not {value}")


def _finite(_: object, attribute: Any, value: float) -> None:
    if not math.isfinite(value):
        raise FieldError(attribute.name, f"{attribute.name} must be finite")


def _fraction(_: object, attribute: Any, value: float) -> None:
    if not (math.isfinite(value) and 0 <= value <= 1):
        raise FieldError(attribute.name, f"{attribute.name} must be in [0, 1], not {value}")


_SPDX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+-]{0,63}$")


def _spdx(_: object, attribute: Any, value: str) -> None:
    # The licence of what the bundle holds, named by its SPDX identifier (e.g. CC-BY-4.0); the
    # RO-Crate metadata links it as https://spdx.org/licenses/<identifier>.
    if not _SPDX.fullmatch(value):
        raise FieldError(attribute.name, f"{attribute.name} must be an SPDX license identifier")


def _non_empty(_: object, attribute: Any, value: tuple[Any, ...]) -> None:
    if not value:
        raise FieldError(attribute.name, f"{attribute.name} must not be empty")


# --------------------------------------------------------------------------- protocol


@frozen
class AdapterSpec:
    """Which adapter runs the study, and its adapter-specific options."""

    name: str = field(validator=_ident)
    options: dict[str, Any] = field(factory=dict)


@frozen
class Factor:
    """One dimension of the condition matrix; the first factor declared is the outermost loop."""

    name: str = field(validator=_ident)
    levels: tuple[Level, ...] = field(validator=_non_empty)


@frozen
class Participant:
    """An agent or policy under evaluation; ``kind`` and ``params`` are the adapter's to check."""

    id: str = field(validator=_ident)
    kind: str = field(validator=_ident)
    params: dict[str, Any] = field(factory=dict)


@frozen
class Seeding:
    """``stream``: one seed set once, every run consumes the stream in sealed order.
    ``per-run``: each slot's seed is derived from ``seed`` and the slot ID."""

    mode: Literal["stream", "per-run"]
    seed: int = field(validator=_seed)
    statement: str | None = None


@frozen
class Measure:
    """What one run yields. ``episode_return`` is the exact sum of the run's step rewards;
    ``outcome_value`` is the number the run's outcome object holds at ``key`` (the length of the
    array, if it holds an array): for adapters whose runs end in an outcome object."""

    name: Literal["episode_return", "outcome_value"]
    description: str
    minimum: float | None = field(default=None, validator=optional(_finite))
    maximum: float | None = field(default=None, validator=optional(_finite))
    key: str | None = field(default=None, metadata=OMIT_IF_DEFAULT)


@frozen
class Interval:
    """How intervals are computed: normal approximation, Student t, or a seeded bootstrap."""

    method: Literal["normal", "t", "bootstrap"]
    level: float = field(default=0.95, validator=_probability)
    resamples: int = field(default=9999)
    seed: int = field(default=0, validator=_seed)

    @resamples.validator
    def _check_resamples(self, _: Any, value: int) -> None:
        if not 1 <= value <= MAX_RESAMPLES:
            raise FieldError(
                "resamples", f"resamples must be between 1 and {MAX_RESAMPLES}, not {value}"
            )


#: How long starting a worker process and opening a condition's session may take, when the
#: protocol does not say (``retry.open_timeout_seconds``): generous, since it includes starting
#: an interpreter and importing the simulator on a busy machine, and never charged to a run.
DEFAULT_OPEN_TIMEOUT_SECONDS = 300.0


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


def _timeout_range(name: str, value: float | None) -> None:
    if value is not None and not (math.isfinite(value) and 0 < value <= 604800):
        raise FieldError(name, f"{name} must be above 0 and at most 604800 (a week)")


@frozen
class Retry:
    """How attempts are made: at most ``max_attempts`` per slot before it is recorded failed,
    each run stopped and recorded failed (cause ``timeout``) after ``timeout_seconds`` if given.

    ``timeout_seconds`` bounds one run's work only. Starting a worker process and opening the
    condition's session have their own bound, ``open_timeout_seconds`` (300 s when null), which
    is never charged to a run; a session open that outlasts it fails the attempt with cause
    ``session-open-failed:timeout``, and so every later attempt of the condition."""

    max_attempts: int = field(default=1)
    timeout_seconds: float | None = field(default=None)
    open_timeout_seconds: float | None = field(default=None, metadata=OMIT_IF_DEFAULT)

    @property
    def open_bound(self) -> float:
        """The bound on starting a worker and opening a session, in seconds."""
        given = self.open_timeout_seconds
        return DEFAULT_OPEN_TIMEOUT_SECONDS if given is None else given

    @max_attempts.validator
    def _check(self, _: Any, value: int) -> None:
        if not 1 <= value <= 100:
            raise FieldError("max_attempts", "max_attempts must be between 1 and 100")

    @timeout_seconds.validator
    def _check_timeout(self, _: Any, value: float | None) -> None:
        _timeout_range("timeout_seconds", value)

    @open_timeout_seconds.validator
    def _check_open_timeout(self, _: Any, value: float | None) -> None:
        _timeout_range("open_timeout_seconds", value)


@frozen
class Exclusion:
    """A slot excluded before sealing, with the reason that is reported."""

    slot: str
    reason: str


@frozen
class Citation:
    """Where published figures come from."""

    title: str
    url: str
    locator: str | None = None
    commit: str | None = None


@frozen
class PublishedCondition:
    """A published per-condition mean, named by its factor levels (and participant if several)."""

    factors: dict[str, Level]
    mean: float = field(validator=_finite)
    participant: str | None = None
    halfwidth: float | None = field(default=None, validator=optional(_finite))


@frozen
class PublishedEstimand:
    """The published value of the primary estimand, with its interval half-width if given."""

    value: float = field(validator=_finite)
    halfwidth: float | None = field(default=None, validator=optional(_finite))


@frozen
class Published:
    """Figures to compare with, at the precision they were published."""

    citation: Citation
    decimals: int = field()
    level: float = field(default=0.95, validator=_probability)
    conditions: tuple[PublishedCondition, ...] = ()
    estimand: PublishedEstimand | None = None

    @decimals.validator
    def _check(self, _: Any, value: int) -> None:
        if not 0 <= value <= 12:
            raise FieldError("decimals", "decimals must be between 0 and 12")


@frozen
class Criteria:
    """The reproduction criteria, named so that a bundle records which rule classified it."""

    exact: Literal["all-published-figures-at-published-precision"] = (
        "all-published-figures-at-published-precision"
    )
    bounded: Literal["mutual-interval-containment"] = "mutual-interval-containment"


@frozen
class Disagreement:
    """A known disagreement between sources, recorded rather than hidden."""

    topic: str
    published: str
    source: str
    resolution: str


@frozen
class Scenario:
    """A scenario a run is made on: ``input`` goes to the harness in the run spec, ``expect`` is
    what the scorers compare the outcome with. ``version`` is the scenario's current version: a
    run whose outcome reports another one is superseded, recorded ``excluded`` and never counted.
    ``stratum`` tells holdout scenarios (reported apart) from training ones."""

    id: str = field(validator=_ident)
    version: int = field(validator=_positive)
    stratum: Literal["training", "holdout"] = "training"
    input: dict[str, Any] = field(factory=dict)
    expect: dict[str, Any] = field(factory=dict)


@frozen
class Check:
    """One deterministic check of a run's outcome against its scenario's ``expect[expect]``:

    - ``concept-coverage``: every expected concept (a string) has at least half of its
      ``[a-z0-9]+`` tokens among the tokens of the outcome's text at ``keys``;
    - ``includes-all``: every expected item is in the outcome's array at ``key``;
    - ``at-least``: the outcome's number at ``key`` (an array's length) is at least the
      expected number;
    - ``equals``: the outcome's value at ``key`` equals the expected value.
    """

    name: str = field(validator=_ident)
    kind: Literal["concept-coverage", "includes-all", "at-least", "equals"]
    expect: str
    key: str | None = None
    keys: tuple[str, ...] = ()


@frozen
class Rule:
    """One row of a taxonomy's rule table: ``category`` when every named check has the given
    result and every named outcome key holds the given value (no conditions: always)."""

    category: str
    checks: dict[str, bool] = field(factory=dict)
    values: dict[str, Any] = field(factory=dict)


@frozen
class Taxonomy:
    """Maps each run to one of ``categories``: the first rule that matches wins; the last rule
    must have no conditions, so that every run gets a category."""

    name: str = field(validator=_ident)
    categories: tuple[str, ...] = field(validator=_non_empty)
    rules: tuple[Rule, ...] = field(validator=_non_empty)


@frozen
class Scoring:
    """How runs are scored: ``checks`` reported one by one, never collapsed into one number,
    and an optional ``taxonomy``. ``scenario_factor`` names the matrix factor whose levels are
    scenario IDs."""

    checks: tuple[Check, ...] = field(validator=_non_empty)
    taxonomy: Taxonomy | None = None
    scenario_factor: str = "scenario"


@frozen
class BreadthGate:
    """Publish only with between ``minimum`` and ``maximum`` scenarios, at least
    ``holdout_fraction`` of them holdout."""

    minimum: int = field(validator=_positive)
    maximum: int = field(validator=_positive)
    holdout_fraction: float = field(default=0.0, validator=_fraction)


@frozen
class ControlFloorGate:
    """Publish only if, in every scenario, the runs of the control level ``control`` of factor
    ``factor`` fail check ``check`` in at least ``fraction`` of their valid runs: a scenario
    whose control does not show the failure measured proves nothing."""

    factor: str
    control: Level
    check: str
    fraction: float = field(validator=_fraction)


@frozen
class Gates:
    """What ``repro publish`` requires before it writes a results table. ``versions``: no run
    of a superseded scenario version counted; ``completeness``: every admitted slot ended valid
    or excluded (failures are grouped by cause)."""

    breadth: BreadthGate | None = None
    control_floor: ControlFloorGate | None = None
    versions: bool = True
    completeness: bool = True


@frozen
class Protocol:
    """An experiment protocol as authored: everything that shapes the results."""

    schema: Literal["repro.protocol/1"]
    id: str = field(validator=_ident)
    title: str = field(validator=_one_line)
    adapter: AdapterSpec
    matrix: tuple[Factor, ...] = field(validator=_non_empty)
    participants: tuple[Participant, ...] = field(validator=_non_empty)
    runs_per_condition: int = field(validator=_positive)
    seeding: Seeding
    measure: Measure
    estimand: Literal["sum-of-condition-means", "mean-of-condition-means"]
    interval: Interval
    retry: Retry = Retry()
    exclusions: tuple[Exclusion, ...] = ()
    published: Published | None = None
    criteria: Criteria = Criteria()
    disagreements: tuple[Disagreement, ...] = ()
    description: str = ""
    license: str | None = field(default=None, validator=optional(_spdx), metadata=OMIT_IF_DEFAULT)
    scenarios: tuple[Scenario, ...] = field(default=(), metadata=OMIT_IF_DEFAULT)
    scoring: Scoring | None = field(default=None, metadata=OMIT_IF_DEFAULT)
    gates: Gates | None = field(default=None, metadata=OMIT_IF_DEFAULT)


@frozen
class FrozenProtocol:
    """protocol.json: the protocol with defaults made explicit, and the sha256 of its canonical
    bytes."""

    schema: Literal["repro.frozen-protocol/1"]
    sha256: str = field(validator=_sha256)
    protocol: Protocol


# --------------------------------------------------------------------------- plan


@frozen
class Condition:
    """One cell of the matrix crossed with one participant."""

    id: str
    factors: dict[str, Level]
    participant: str


@frozen
class PlanEntry:
    """One admitted run slot. ``order`` is its place in the sealed execution order; ``seed`` is
    its derived seed in per-run mode and null in stream mode; ``excluded`` the declared reason."""

    slot: str
    condition: str
    replicate: int
    order: int
    seed: int | None
    excluded: str | None = None


@frozen
class Partition:
    """plans/<id>.json: one sealed partition of the plan."""

    schema: Literal["repro.partition/1"]
    id: str
    condition: str
    entries: tuple[PlanEntry, ...]


@frozen
class PartitionRef:
    """A partition as listed in the seal, with the sha256 of its canonical file bytes."""

    id: str
    file: str
    entries: int
    sha256: str = field(validator=_sha256)


@frozen
class Seal:
    """plans/seal.json: the sealed plan, written before any run."""

    schema: Literal["repro.seal/1"]
    protocol_sha256: str = field(validator=_sha256)
    sources_sha256: str = field(validator=_sha256)
    seeding: Literal["stream", "per-run"]
    conditions: tuple[Condition, ...]
    partitions: tuple[PartitionRef, ...]


# --------------------------------------------------------------------------- runs


@frozen
class RunRecord:
    """One attempt at one slot. A retry has a new ``attempt_id`` and names its ``predecessor``.

    ``status``: valid, invalid (completed but outside the protocol's validity rules), failed
    (the adapter could not complete it) or excluded (declared before sealing and never run, or
    run on a superseded scenario version: cause ``superseded-scenario-version:N``).

    Runs that end in an outcome object (the command adapter's) also keep it, and what the
    harness process left: its exit code and the length and digest of its stderr.

    What each status keeps (:mod:`repro.derive.validity` states the rule, and verify applies it to
    every record): a valid or judged-invalid attempt its evidence; a failed attempt, or one
    whose evidence the worker refused, none; a declared exclusion nothing but its cause.
    """

    attempt_id: str
    slot: str
    condition: str
    attempt: int
    predecessor: str | None
    status: Literal["valid", "invalid", "failed", "excluded"]
    cause: str | None
    measure: float | None
    steps: int | None
    step_rewards: tuple[float, ...] | None
    trace_sha256: str | None = field(validator=optional(_sha256))
    contract_sha256: str | None = field(validator=optional(_sha256))
    outcome: dict[str, Any] | None = field(default=None, metadata=OMIT_IF_DEFAULT)
    harness: HarnessFacts | None = field(default=None, metadata=OMIT_IF_DEFAULT)
    #: The sha256 of the canonical bytes of an outcome withheld because it would disclose a
    #: host path, a traceback or a credential (cause ``outcome-discloses:KIND``), so that its
    #: maker can match it with their own copy; the outcome itself never enters the bundle.
    outcome_sha256: str | None = field(
        default=None, validator=optional(_sha256), metadata=OMIT_IF_DEFAULT
    )


@frozen
class HarnessFacts:
    """What a harness process left besides its outcome: its exit code, and the length and
    sha256 of its stderr (whose text never enters the bundle)."""

    exit_code: int
    stderr_bytes: int
    stderr_sha256: str = field(validator=_sha256)


# --------------------------------------------------------------------------- derived


@frozen
class IntervalValue:
    """A two-sided interval at ``level``."""

    method: Literal["normal", "t", "bootstrap"]
    level: float
    low: float
    high: float
    halfwidth: float


@frozen
class ConditionAggregate:
    """Per-condition summary of the valid runs; mean, sd and interval are null when undefined."""

    condition: str
    factors: dict[str, Level]
    participant: str
    scheduled: int
    valid: int
    failed: int
    excluded: int
    mean: float | None
    sd: float | None
    interval: IntervalValue | None


@frozen
class EstimandValue:
    """The primary estimand across conditions, with its standard error and interval."""

    kind: Literal["sum-of-condition-means", "mean-of-condition-means"]
    value: float | None
    se: float | None
    interval: IntervalValue | None


@frozen
class Aggregates:
    """aggregates.json."""

    schema: Literal["repro.aggregates/1"]
    protocol_sha256: str
    measure: str
    conditions: tuple[ConditionAggregate, ...]
    estimand: EstimandValue


TIER_NAMES = (
    "authored-source",
    "contract",
    "execution-control",
    "state-observation",
    "outcome-evaluation",
    "disclosure",
)


@frozen
class Tier:
    """One equivalence tier's verdict, the evidence it cites and the reason for any weakening."""

    name: Literal[
        "authored-source",
        "contract",
        "execution-control",
        "state-observation",
        "outcome-evaluation",
        "disclosure",
    ]
    verdict: Literal["pass", "fail", "weakened"]
    evidence: tuple[str, ...]
    reason: str | None


@frozen
class FigureComparison:
    """One published figure against its observed counterpart."""

    figure: str
    published: float
    observed: float | None
    observed_rounded: str | None
    equal_at_precision: bool
    published_interval_contains_observed: bool | None
    observed_interval_contains_published: bool | None


@frozen
class Reproduction:
    """The reproduction class and the figure-by-figure comparison behind it."""

    verdict: Literal["exact", "bounded", "failed", "unavailable"]
    reason: str
    figures: tuple[FigureComparison, ...]


@frozen
class Tiers:
    """tiers.json."""

    schema: Literal["repro.tiers/1"]
    protocol_sha256: str
    tiers: tuple[Tier, ...]
    reproduction: Reproduction


@frozen
class CheckResult:
    """One check of one run: whether it passed, and what decided it (``detail``: e.g. the
    concepts covered and missing, the items missing, the count and the minimum)."""

    name: str
    passed: bool
    detail: dict[str, Any]


@frozen
class RunScore:
    """The scores of one valid run: every check by name, and its taxonomy category."""

    attempt_id: str
    condition: str
    checks: tuple[CheckResult, ...]
    category: str | None


@frozen
class CheckSummary:
    """One check over a cell's valid runs: passes of runs, the rate and its Wilson interval
    (null with fewer than 2 valid runs), and whether every run had the same result."""

    name: str
    passed: int
    runs: int
    rate: float | None
    low: float | None
    high: float | None
    unanimous: bool


@frozen
class CellScore:
    """One cell (condition) of a scored study. ``agreement``: unanimous when every valid run
    had the same result in every check and the same category, split otherwise, none without
    valid runs. Rates and the median measure are null below 2 valid runs (``note`` says so)."""

    condition: str
    factors: dict[str, Level]
    participant: str
    stratum: Literal["training", "holdout"]
    valid_runs: int
    superseded_runs: int
    checks: tuple[CheckSummary, ...]
    categories: dict[str, int]
    agreement: Literal["unanimous", "split", "none"]
    median_measure: float | None
    note: str | None


@frozen
class GateResult:
    """One publish gate: whether it holds, and why (the figures it was judged on)."""

    name: Literal["breadth", "holdout", "control-floor", "versions", "completeness"]
    holds: bool
    detail: str


@frozen
class Scores:
    """scores.json (scored studies only): every valid run's checks and category, the cells,
    and the publish gates, all derived from the protocol and the runs."""

    schema: Literal["repro.scores/1"]
    protocol_sha256: str
    level: float
    runs: tuple[RunScore, ...]
    cells: tuple[CellScore, ...]
    gates: tuple[GateResult, ...]


# --------------------------------------------------------------------------- ledger, environment


@frozen
class Source:
    """A pinned source: a file (path inside its package or scenario directory, never a host
    path) with size and sha256, a directory (its name, with the sha256 of its tree and its
    total size), or a package with its version."""

    kind: Literal["file", "directory", "package"]
    role: str
    name: str
    sha256: str | None = field(default=None, validator=optional(_sha256))
    size: int | None = None
    version: str | None = None


@frozen
class AdapterFacts:
    """What an adapter is and what it can observe; tiers weaken on what it cannot."""

    name: str
    version: str
    observation_scope: Literal["full", "partial", "none"]
    observation_note: str
    measure_inputs: Literal["step-rewards", "reported"]


@frozen
class Loss:
    """A slot that did not end valid."""

    slot: str
    outcome: Literal["failed", "excluded"]
    cause: str
    attempts: int


@frozen
class Ledger:
    """source-ledger.json."""

    schema: Literal["repro.source-ledger/1"]
    protocol_sha256: str
    adapter: AdapterFacts
    sources: tuple[Source, ...]
    contracts: dict[str, dict[str, Any]]
    citation: Citation | None
    disagreements: tuple[Disagreement, ...]
    losses: tuple[Loss, ...]


_UTC = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z$")


def _real_time(value: str) -> bool:
    """Whether ``value``, a UTC time in one of the shapes above, is a time that exists in the
    calendar (not ``2026-99-99T99:99:99Z``). (``fromisoformat`` reads those shapes, and is many
    times faster than ``strptime``: verify judges two times per attempt.)"""
    try:
        datetime.fromisoformat(value[:-1])
    except ValueError:
        return False
    return True


def _utc(_: object, attribute: Any, value: str) -> None:
    if not (_UTC.fullmatch(value) and _real_time(value)):
        raise FieldError(
            attribute.name, f"{attribute.name} must be a UTC time as YYYY-MM-DDTHH:MM:SS.ffffffZ"
        )


_UTC_SECONDS = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$")


def _utc_seconds(_: object, attribute: Any, value: str) -> None:
    if not (_UTC_SECONDS.fullmatch(value) and _real_time(value)):
        raise FieldError(
            attribute.name, f"{attribute.name} must be a UTC time as YYYY-MM-DDTHH:MM:SSZ"
        )


@frozen
class Environment:
    """environment.json: where and how the study ran, without host paths, user or host names
    (a cluster's address is not recorded either)."""

    schema: Literal["repro.environment/1"]
    repro_version: str
    python: str
    implementation: str
    platform: str
    machine: str
    packages: dict[str, str]
    started_utc: str = field(validator=_utc_seconds)
    finished_utc: str = field(validator=_utc_seconds)
    wall_seconds: float
    #: How the partitions ran: on local worker processes, or on a Dask cluster; and how many
    #: workers there were (for a cluster, when the study began).
    backend: Literal["local", "dask"] | None = field(default=None, metadata=OMIT_IF_DEFAULT)
    workers: int | None = field(default=None, metadata=OMIT_IF_DEFAULT)


@frozen
class GeneratorState:
    """A Python ``random`` generator's state, as ``random.getstate()`` gives it: the version, the
    625 Mersenne Twister words (the last is the position) and the cached Gaussian, if any."""

    version: int
    words: tuple[int, ...]
    gauss_next: float | None


@frozen
class AttemptTimes:
    """One line of times/<partition>.jsonl: when an attempt was asked of the worker and
    when its answer came (UTC, microseconds). Kept apart from the run records, which stay
    byte-identical whatever ran them and whenever; every attempt but a declared exclusion has
    one line, in the order of the runs file."""

    attempt_id: str
    started_utc: str = field(validator=_utc)
    finished_utc: str = field(validator=_utc)
    #: Session opens lost before this attempt ran (its worker process died or exited while it
    #: opened the condition's session, as under the kernel's OOM killer), each retried with a
    #: fresh worker: their causes, in order. What happened to the machine, not to the run, so
    #: it is kept here with the times, not in the run record.
    lost_opens: tuple[str, ...] = field(default=(), metadata=OMIT_IF_DEFAULT)

    @lost_opens.validator
    def _check_lost_opens(self, _: Any, value: tuple[str, ...]) -> None:
        if len(value) > MAX_LOST_OPENS or not all(_LOST_WORKER.fullmatch(v) for v in value):
            raise FieldError(
                "lost_opens",
                f"lost_opens holds at most {MAX_LOST_OPENS} causes of a lost worker "
                "(worker-died:SIGNAL, worker-exited:CODE)",
            )


@frozen
class Checkpoint:
    """runs/<partition>.checkpoint.json, in stream mode only: the state of Python's global
    generator (the stream the protocol seeds) when the partition began, from which ``repro
    replay`` re-executes its slots. NumPy's global generator is no part of the stream: nothing
    seeds it, so a simulator that draws from it cannot be replayed, and replay says so."""

    schema: Literal["repro.checkpoint/1"]
    partition: str
    python_random: GeneratorState
