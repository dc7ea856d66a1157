"""What is derived from the protocol and the runs, and written once they have run: the aggregates
(:class:`Aggregates`), the equivalence tiers (:class:`Tiers`), the scores of a scored study
(:class:`Scores`), the contrasts (:class:`ContrastsFile`), rliable's aggregates
(:class:`RLAggregates`) and the source ledger (:class:`Ledger`)."""

from __future__ import annotations

from typing import Any, Literal, get_args

from attrs import field, frozen
from attrs.validators import optional

from repro.models._constraints import OMIT_IF_DEFAULT, SHA256
from repro.models._protocol import (
    Citation,
    Disagreement,
    Estimand,
    IntervalMethod,
    Level,
    RLDistribution,
    RLSampler,
    RLStatistic,
    Stratum,
)

__all__ = [
    "LOSS_OUTCOMES",
    "TIER_NAMES",
    "AdapterFacts",
    "Aggregates",
    "Agreement",
    "CellScore",
    "CheckResult",
    "CheckSummary",
    "ConditionAggregate",
    "ContrastInterval",
    "ContrastResult",
    "ContrastVerdict",
    "ContrastsFile",
    "EstimandValue",
    "FamilywiseLevels",
    "FigureComparison",
    "GateResult",
    "IntervalValue",
    "Ledger",
    "Loss",
    "LossOutcome",
    "RLAggregates",
    "RLImprovementEstimate",
    "RLParticipant",
    "RLProfilePoint",
    "RLStatisticEstimate",
    "Reproduction",
    "RunScore",
    "Scores",
    "Source",
    "Tier",
    "TierName",
    "Tiers",
]


@frozen
class IntervalValue:
    """A two-sided interval at ``level``."""

    method: IntervalMethod
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

    kind: Estimand
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


TierName = Literal[
    "authored-source",
    "contract",
    "execution-control",
    "state-observation",
    "outcome-evaluation",
    "disclosure",
    "continuation",
]
"""The six equivalence tiers, by name, and ``continuation``, which only the bundle of a study
continued from an interrupted one has (after the six)."""
#: The tiers' names in the order tiers.json lists them.
TIER_NAMES: tuple[TierName, ...] = get_args(TierName)


@frozen
class Tier:
    """One equivalence tier's verdict, the evidence it cites and the reason for any weakening."""

    name: TierName
    verdict: Literal["pass", "fail", "weakened"]
    evidence: tuple[str, ...]
    reason: str | None


@frozen
class FigureComparison:
    """One published figure against its observed counterpart. The two containment checks are
    None where unavailable (no published half-width, no observed interval); under the
    family-wise criterion they are of the intervals at the family-wise level, which are then
    recorded: ``familywise_observed_interval`` (recomputed from aggregates.json) and
    ``familywise_published_halfwidth`` (rescaled), each where its check is available."""

    figure: str
    published: float
    observed: float | None
    observed_rounded: str | None
    equal_at_precision: bool
    published_interval_contains_observed: bool | None
    observed_interval_contains_published: bool | None
    familywise_observed_interval: IntervalValue | None = field(
        default=None, metadata=OMIT_IF_DEFAULT
    )
    familywise_published_halfwidth: float | None = field(default=None, metadata=OMIT_IF_DEFAULT)


@frozen
class FamilywiseLevels:
    """The family-wise criterion's levels: ``checks`` containment checks were available, and
    each interval was taken at ``1 - (1 - L) / checks``: ``observed_level`` for the observed
    intervals (L the protocol's ``interval.level``), ``published_level`` for the published
    half-widths (L the ``published.level``)."""

    checks: int
    observed_level: float
    published_level: float


@frozen
class Reproduction:
    """The reproduction class and the figure-by-figure comparison behind it; ``familywise``
    holds the levels the family-wise criterion used (absent under the default criterion, and
    where no containment check is available)."""

    verdict: Literal["exact", "bounded", "failed", "unavailable"]
    reason: str
    figures: tuple[FigureComparison, ...]
    familywise: FamilywiseLevels | None = field(default=None, metadata=OMIT_IF_DEFAULT)


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


Agreement = Literal["unanimous", "split", "none"]
"""Whether a cell's valid runs agree in every check and category (:class:`CellScore`)."""


@frozen
class CellScore:
    """One cell (condition) of a scored study. ``agreement``: unanimous when every valid run
    had the same result in every check and the same category, split otherwise, none without
    valid runs. Rates and the median measure are null below 2 valid runs (``note`` says so)."""

    condition: str
    factors: dict[str, Level]
    participant: str
    stratum: Stratum
    valid_runs: int
    superseded_runs: int
    checks: tuple[CheckSummary, ...]
    categories: dict[str, int]
    agreement: Agreement
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


ContrastVerdict = Literal["holds", "does-not-hold", "inconclusive"]
"""What the runs say of a contrast's claim (:class:`ContrastResult`)."""


@frozen
class ContrastInterval:
    """A contrast's two-sided interval at ``level`` for the difference: ``t`` (paired or Welch
    t), ``cluster-t`` (t on a cluster-robust standard error), ``newcombe-paired-score`` or
    ``newcombe-hybrid-score`` (score intervals for a difference of paired or independent
    proportions, which need not be symmetric), ``percentile-bootstrap`` (the seeded percentile
    bootstrap of the mean difference, which need not be symmetric either)."""

    method: Literal[
        "t",
        "cluster-t",
        "newcombe-paired-score",
        "newcombe-hybrid-score",
        "percentile-bootstrap",
    ]
    level: float
    low: float
    high: float


@frozen
class ContrastResult:
    """One pre-registered contrast as the runs decide it (:mod:`repro._derive.contrasts` states
    every rule): the conditions on each side, the runs or pairs used and those that could not
    be (a slot of a pair that did not end valid: counted, never imputed), the difference
    (positive: ``a`` does better), its standard error, degrees of freedom and two-sided interval
    at the contrast's level, the test statistic, the p-value (one-sided for superiority and
    non-inferiority, two-sided for two-sided) and the one after the family's multiplicity
    control, and the verdict with the reason that decided it. Figures are null when
    undefined (fewer than two runs or pairs)."""

    id: str
    direction: str
    pairing: str
    better: str
    margin: float
    level: float
    primary: bool
    a: tuple[str, ...]
    b: tuple[str, ...]
    n_a: int
    n_b: int
    pairs: int | None
    incomplete_pairs: int | None
    estimate: float | None
    se: float | None
    df: float | None
    interval: ContrastInterval | None
    statistic: float | None
    p_value: float | None
    p_adjusted: float | None
    verdict: ContrastVerdict
    reason: str
    #: What is compared: ``measure``, ``check:NAME`` or ``category:NAME``.
    outcome: str = "measure"
    #: The test that gave the p-value: ``paired-t``, ``welch-t``, ``cluster-paired-t``,
    #: ``cluster-t``, ``mcnemar-exact``, ``fisher-exact``, or ``paired-bootstrap`` and
    #: ``unpaired-bootstrap`` (the seeded bootstrap's p-value; ``se`` is then the bootstrap
    #: standard error and ``df`` and ``statistic`` are null).
    test: str = "paired-t"
    #: Clusters, for a clustered contrast.
    clusters: int | None = None
    #: A binary outcome's counts: pairs where both, only a, only b or neither passed (paired),
    #: or each group's passes and runs (unpaired).
    counts: dict[str, int] | None = None


@frozen
class ContrastsFile:
    """contrasts.json (protocols that declare contrasts only): every contrast of the family
    decided from the protocol and the runs, in the order the protocol declares them, and how
    the family's error rate was controlled."""

    schema: Literal["repro.contrasts/1"]
    protocol_sha256: str
    multiplicity: str
    contrasts: tuple[ContrastResult, ...]


@frozen
class RLStatisticEstimate:
    """One aggregate of a participant's score matrix: its point estimate and the low and high
    ends of its stratified-bootstrap percentile interval; all three null when the participant
    has no complete replicate."""

    statistic: RLStatistic
    value: float | None
    low: float | None
    high: float | None


@frozen
class RLProfilePoint:
    """A participant's performance profile at ``tau``: the fraction of its scores (or of its
    task means) above ``tau``, with its interval; null when it has no complete replicate."""

    tau: float
    value: float | None
    low: float | None
    high: float | None


@frozen
class RLParticipant:
    """One participant (an algorithm) of rl-aggregates.json: its condition on each task, the
    valid runs with a measure on each task, the complete replicates that are the rows of its
    score matrix and the replicates left out (a task's slot did not end valid), and its
    statistics and profile in the order the protocol asks them."""

    participant: str
    conditions: tuple[str, ...]
    valid: tuple[int, ...]
    runs: int
    incomplete: int
    statistics: tuple[RLStatisticEstimate, ...]
    profile: tuple[RLProfilePoint, ...]


@frozen
class RLImprovementEstimate:
    """P(``x`` > ``y``), averaged over tasks, from the two participants' score matrices (their
    complete replicates, ``runs_x`` and ``runs_y`` of them), with its interval; null when either
    has none."""

    x: str
    y: str
    runs_x: int
    runs_y: int
    value: float | None
    low: float | None
    high: float | None


@frozen
class RLAggregates:
    """rl-aggregates.json (protocols that declare ``rl`` only): rliable's aggregates of every
    participant's (runs x tasks) score matrix, the probabilities of improvement and the
    performance profiles, each with its stratified-bootstrap interval at ``level``, and what
    they were computed from: the task factor and its levels, whether the scores are normalised,
    the bootstrap's resamples, seed and sampler, the optimality gap's ``gamma`` and what the
    profiles count (:mod:`repro._derive.rl_aggregates` states every rule)."""

    schema: Literal["repro.rl-aggregates/1"]
    protocol_sha256: str
    measure: str
    task_factor: str
    tasks: tuple[Level, ...]
    normalized: bool
    level: float
    resamples: int
    seed: int
    sampler: RLSampler
    gamma: float
    distribution: RLDistribution
    participants: tuple[RLParticipant, ...]
    improvements: tuple[RLImprovementEstimate, ...]


@frozen
class Source:
    """A pinned source: a file (path inside its package or scenario directory, never a host
    path) with size and sha256, a directory (its name, with the sha256 of its tree and its
    total size), or a package with its version."""

    kind: Literal["file", "directory", "package"]
    role: str
    name: str
    sha256: str | None = field(default=None, validator=optional(SHA256))
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
    #: Set by an adapter whose runs were made elsewhere and only read under the seal (the
    #: recorded adapter): what it says of them, the reason execution control is weakened.
    recorded_from: str | None = field(default=None, metadata=OMIT_IF_DEFAULT)


LossOutcome = Literal["failed", "excluded"]
"""How a slot that did not end valid ended (:class:`Loss`)."""
#: The outcomes of a loss, in the order they are reported.
LOSS_OUTCOMES: tuple[LossOutcome, ...] = get_args(LossOutcome)


@frozen
class Loss:
    """A slot that did not end valid."""

    slot: str
    outcome: LossOutcome
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
