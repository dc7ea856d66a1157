"""The protocol as authored (:class:`Protocol`) and frozen into a bundle (:class:`FrozenProtocol`),
with every object type it holds."""

from __future__ import annotations

from typing import Any, Literal

from attrs import field, frozen
from attrs.validators import ge, gt, le, max_len, optional

from repro.models._constraints import (
    FINITE,
    FRACTION,
    IDENT,
    NAME,
    NON_EMPTY,
    OMIT_IF_DEFAULT,
    ONE_LINE,
    ORCID,
    POSITIVE,
    PROBABILITY,
    ROR,
    SEED,
    SHA256,
    SPDX,
    WEB_ADDRESS,
    Constraint,
    within,
)

__all__ = [
    "CHECKPOINT_EVERY",
    "DEFAULT_OPEN_TIMEOUT_SECONDS",
    "FAMILYWISE",
    "MAX_CHECKPOINTS",
    "MAX_RESAMPLES",
    "MAX_TAUS",
    "MIN_CONTRAST_RESAMPLES",
    "RL",
    "AdapterSpec",
    "BoundedCriterion",
    "BreadthGate",
    "Check",
    "Citation",
    "Contrast",
    "ContrastDirection",
    "ContrastIntervalSpec",
    "Contrasts",
    "Contributor",
    "ContributorKind",
    "ControlFloorGate",
    "Criteria",
    "Disagreement",
    "Estimand",
    "Exclusion",
    "Factor",
    "FrozenProtocol",
    "Gates",
    "Group",
    "Interval",
    "IntervalMethod",
    "Level",
    "Measure",
    "Participant",
    "Protocol",
    "Published",
    "PublishedCondition",
    "PublishedEstimand",
    "RLBootstrap",
    "RLDistribution",
    "RLImprovement",
    "RLSampler",
    "RLStatistic",
    "RLTaskScale",
    "Retry",
    "Rule",
    "Scenario",
    "Scoring",
    "Seeding",
    "SeedingMode",
    "Stratum",
    "Taxonomy",
]

Level = str | int
"""A factor level: a name or a whole number."""

SeedingMode = Literal["stream", "per-run"]
"""How runs are seeded (:class:`Seeding`); the seal records it too."""
IntervalMethod = Literal["normal", "t", "bootstrap"]
"""How intervals are computed (:class:`Interval`); each computed interval says which."""
Estimand = Literal["sum-of-condition-means", "mean-of-condition-means"]
"""The primary estimand across conditions, as declared and as computed."""
Stratum = Literal["training", "holdout"]
"""A scenario's stratum, and so of the cells made on it."""

#: A bootstrap holds resamples x runs values at once; ten times the default is plenty.
MAX_RESAMPLES = 100_000
#: Slots between two generator checkpoints of a stream-seeded partition, when the protocol does
#: not say (``seeding.checkpoint_every``).
CHECKPOINT_EVERY = 10
#: Checkpoints one stream-seeded partition may keep: its checkpoint file is held whole to be
#: verified, and 10,000 states are about 70 MB of JSON.
MAX_CHECKPOINTS = 10_000
#: The fewest resamples a contrast's bootstrap takes: its smallest p-value is
#: 1 / (resamples + 1), and each end of its interval is read among the replicates of one tail
#: ((1 - level) / 2 of them), which a few hundred resamples would leave to a handful.
MIN_CONTRAST_RESAMPLES = 999
#: A performance profile's bootstrap holds resamples x taus values at once (at most 200 MB);
#: rliable's own figures use some tens to a few hundred.
MAX_TAUS = 256


@frozen
class AdapterSpec:
    """Which adapter runs the study, and its adapter-specific options."""

    name: str = field(validator=IDENT)
    options: dict[str, Any] = field(factory=dict)


@frozen
class Factor:
    """One dimension of the condition matrix; the first factor declared is the outermost loop."""

    name: str = field(validator=IDENT)
    levels: tuple[Level, ...] = field(validator=NON_EMPTY)


@frozen
class Participant:
    """An agent or policy under evaluation; ``kind`` and ``params`` are the adapter's to check."""

    id: str = field(validator=IDENT)
    kind: str = field(validator=IDENT)
    params: dict[str, Any] = field(factory=dict)


@frozen
class Seeding:
    """``stream``: one seed set once, every run consumes the stream in sealed order.
    ``per-run``: each slot's seed is derived from ``seed`` and the slot ID.

    ``common`` (``per-run`` only): common random numbers. It names matrix factors, or
    ``"participant"``, whose levels do not enter the seed: each slot's seed is then derived from
    ``seed``, the replicate and the condition's other factor levels (and its participant, unless
    named), so the conditions that differ only in the named factors share each replicate's seed
    and a paired comparison of them is paired episode by episode. Each name at most once, and
    a matrix factor named ``participant`` makes the name ambiguous (refused). Empty (the
    default): every slot has a seed of its own, derived from ``seed`` and the slot ID.

    ``checkpoint_every`` (``stream`` only): the generator's state is kept before every this
    many slots of a partition, so that ``repro replay`` and ``repro audit`` re-execute at most
    this many slots to reach any one of them. Default 10 (:data:`CHECKPOINT_EVERY`): an audit
    of 59 slots then re-executes at most 590 episodes, and each checkpoint (Python's 625-word
    generator state, about 7 KB) costs about as much as the ten run records it stands for in a
    CAGE-2 study. At most 10,000 checkpoints per partition (:data:`MAX_CHECKPOINTS`)."""

    mode: SeedingMode
    seed: int = field(validator=SEED)
    statement: str | None = None
    common: tuple[str, ...] = field(default=(), metadata=OMIT_IF_DEFAULT)
    checkpoint_every: int | None = field(
        default=None, validator=optional(within(ge(1))), metadata=OMIT_IF_DEFAULT
    )


@frozen
class Measure:
    """What one run yields. ``episode_return`` is the exact sum of the run's step rewards;
    ``outcome_value`` is the number the run's outcome object holds at ``key`` (the length of the
    array, if it holds an array): for adapters whose runs end in an outcome object."""

    name: Literal["episode_return", "outcome_value"]
    description: str
    minimum: float | None = field(default=None, validator=optional(FINITE))
    maximum: float | None = field(default=None, validator=optional(FINITE))
    key: str | None = field(default=None, metadata=OMIT_IF_DEFAULT)


@frozen
class Interval:
    """How intervals are computed: normal approximation, Student t, or a seeded bootstrap (of
    each condition's mean and of the estimand: its resamples times the runs count towards the
    limit on what re-deriving the protocol's statistics may take,
    ``repro._protocol.work.derivation_work``)."""

    method: IntervalMethod
    level: float = field(default=0.95, validator=PROBABILITY)
    resamples: int = field(default=9999, validator=within(ge(1), le(MAX_RESAMPLES)))
    seed: int = field(default=0, validator=SEED)


#: How long starting a worker process and opening a condition's session may take, when the
#: protocol does not say (``retry.open_timeout_seconds``): generous, since it includes starting
#: an interpreter and importing the simulator on a busy machine, and never charged to a run.
DEFAULT_OPEN_TIMEOUT_SECONDS = 300.0


#: A bound in seconds on a run's work or on opening a session: above 0, and at most a week.
_TIMEOUT = optional(within(gt(0.0), le(604800.0)))


@frozen
class Retry:
    """How attempts are made: at most ``max_attempts`` per slot before it is recorded failed,
    each run stopped and recorded failed (cause ``timeout``) after ``timeout_seconds`` if given.

    ``timeout_seconds`` bounds one run's work only. Starting a worker process and opening the
    condition's session have their own bound, ``open_timeout_seconds`` (300 s when null), which
    is never charged to a run; a session open that outlasts it fails the attempt with cause
    ``session-open-failed:timeout``, and so every later attempt of the condition."""

    max_attempts: int = field(default=1, validator=within(ge(1), le(100)))
    timeout_seconds: float | None = field(default=None, validator=_TIMEOUT)
    open_timeout_seconds: float | None = field(
        default=None, validator=_TIMEOUT, metadata=OMIT_IF_DEFAULT
    )

    @property
    def open_bound(self) -> float:
        """The bound on starting a worker and opening a session, in seconds."""
        given = self.open_timeout_seconds
        return DEFAULT_OPEN_TIMEOUT_SECONDS if given is None else given


ContributorKind = Literal["person", "organization"]
"""What a :class:`Contributor` is."""


@frozen
class Contributor:
    """A person or an organization the protocol credits, as an author or as the publisher: the
    RO-Crate metadata names them (a schema.org Person or Organization).

    ``name``: how they are named. ``orcid`` (a person only): their ORCID iD, as
    ``https://orcid.org/0000-0000-0000-000X`` with a valid check character. ``ror`` (an
    organization only): its ROR ID, as ``https://ror.org/0xxxxxxNN``. ``url``: their web page.
    The identifier, when given, identifies them in the crate; none is looked up."""

    kind: ContributorKind
    name: str = field(validator=NAME)
    orcid: str | None = field(default=None, validator=optional(ORCID), metadata=OMIT_IF_DEFAULT)
    ror: str | None = field(default=None, validator=optional(ROR), metadata=OMIT_IF_DEFAULT)
    url: str | None = field(default=None, validator=optional(WEB_ADDRESS), metadata=OMIT_IF_DEFAULT)


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
    mean: float = field(validator=FINITE)
    participant: str | None = None
    halfwidth: float | None = field(default=None, validator=optional(FINITE))


@frozen
class PublishedEstimand:
    """The published value of the primary estimand, with its interval half-width if given."""

    value: float = field(validator=FINITE)
    halfwidth: float | None = field(default=None, validator=optional(FINITE))


@frozen
class Published:
    """Figures to compare with, at the precision they were published."""

    citation: Citation
    decimals: int = field(validator=within(ge(0), le(12)))
    level: float = field(default=0.95, validator=PROBABILITY)
    conditions: tuple[PublishedCondition, ...] = ()
    estimand: PublishedEstimand | None = None


BoundedCriterion = Literal["mutual-interval-containment", "familywise-interval-containment"]
"""The rule that tells a bounded reproduction from a failed one (:class:`Criteria`)."""

#: The bounded criterion that controls the family-wise error of the containment checks.
FAMILYWISE = "familywise-interval-containment"


@frozen
class Criteria:
    """The reproduction criteria, named so that a bundle records which rule classified it.

    ``exact``: every published figure equals the observed one at the published precision.
    Otherwise the containment checks decide: each observed interval (a condition's mean, the
    estimand's value) contains its published value, and each published half-width's interval
    contains the observed value. The class is bounded when every available check holds, failed
    otherwise; ``bounded`` says at which level each interval is taken:

    - ``mutual-interval-containment`` (the default): at its own level, ``interval.level`` for
      the observed intervals, ``published.level`` for the published half-widths. With many
      figures this fails honest reproductions by chance: of ten independent checks at 95%, at
      least one fails about 40% of the time when nothing is wrong.
    - ``familywise-interval-containment``: the checks' family-wise error is controlled
      (Bonferroni). With K the number of checks available (a published half-width given, an
      observed interval defined), every interval is taken at ``1 - (1 - L) / K``, where L is
      its own level. The observed intervals are recomputed at that level from aggregates.json
      (mean, sd, valid n) by the protocol's ``interval.method``, which must then be ``normal``
      or ``t`` (a bootstrap is refused). The published half-widths are rescaled as a normal
      interval's would be, ``halfwidth * z(1 - a'/2) / z(1 - a/2)`` with a and a' one minus
      the levels: an assumption, since a publication says "95% confidence intervals" and
      rarely how they were made. tiers.json records K, both levels and each rescaled
      interval."""

    exact: Literal["all-published-figures-at-published-precision"] = (
        "all-published-figures-at-published-precision"
    )
    bounded: BoundedCriterion = "mutual-interval-containment"


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

    id: str = field(validator=IDENT)
    version: int = field(validator=POSITIVE)
    stratum: Stratum = "training"
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

    name: str = field(validator=IDENT)
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

    name: str = field(validator=IDENT)
    categories: tuple[str, ...] = field(validator=NON_EMPTY)
    rules: tuple[Rule, ...] = field(validator=NON_EMPTY)


@frozen
class Scoring:
    """How runs are scored: ``checks`` reported one by one, never collapsed into one number,
    and an optional ``taxonomy``. ``scenario_factor`` names the matrix factor whose levels are
    scenario IDs."""

    checks: tuple[Check, ...] = field(validator=NON_EMPTY)
    taxonomy: Taxonomy | None = None
    scenario_factor: str = "scenario"


@frozen
class BreadthGate:
    """Publish only with between ``minimum`` and ``maximum`` scenarios, at least
    ``holdout_fraction`` of them holdout."""

    minimum: int = field(validator=POSITIVE)
    maximum: int = field(validator=POSITIVE)
    holdout_fraction: float = field(default=0.0, validator=FRACTION)


@frozen
class ControlFloorGate:
    """Publish only if, in every scenario, the runs of the control level ``control`` of factor
    ``factor`` fail check ``check`` in at least ``fraction`` of their valid runs: a scenario
    whose control does not show the failure measured proves nothing."""

    factor: str
    control: Level
    check: str
    fraction: float = field(validator=FRACTION)


@frozen
class Gates:
    """What ``repro publish`` requires before it writes a results table. ``versions``: no run
    of a superseded scenario version counted; ``completeness``: every admitted slot ended valid
    or excluded (failures are grouped by cause)."""

    breadth: BreadthGate | None = None
    control_floor: ControlFloorGate | None = None
    versions: bool = True
    completeness: bool = True


ContrastDirection = Literal["superiority", "non-inferiority", "two-sided"]
"""What a contrast claims of group ``a`` against group ``b`` (:class:`Contrast`)."""


@frozen
class Group:
    """The conditions one side of a contrast compares: every condition whose factors have the
    levels named here (all of them) and, when ``participant`` is given, whose participant it
    is."""

    factors: dict[str, Level] = field(factory=dict)
    participant: str | None = None


@frozen
class ContrastIntervalSpec:
    """How a measure contrast's interval and p-value are made. ``t`` (the default): the paired
    t or Welch's t (with ``cluster``, the cluster-robust t). ``bootstrap``: SciPy's percentile
    bootstrap interval of the mean difference (``scipy.stats.bootstrap``), over ``resamples``
    resamples drawn by a NumPy Generator seeded with ``seed`` (paired: the pairs' differences
    resampled; unpaired: each group's runs resampled on their own), and the bootstrap p-value
    read from the same resamples: ``(1 + k) / (resamples + 1)``, where ``k`` resampled
    differences lie at or beyond the null boundary on the null's side (two-sided: twice the
    smaller side's, at most 1). ``resamples`` and ``seed`` are required for the bootstrap and
    refused for ``t``; a bootstrap is refused for a check's or a category's rate, for a
    clustered contrast, and with too few resamples for its smallest p-value,
    ``1 / (resamples + 1)`` (twice that two-sided), times the family's size under Holm, to be
    below ``1 - level``."""

    method: Literal["t", "bootstrap"] = "t"
    resamples: int | None = field(
        default=None,
        validator=optional(within(ge(MIN_CONTRAST_RESAMPLES), le(MAX_RESAMPLES))),
    )
    seed: int | None = field(default=None, validator=optional(SEED))


@frozen
class Contrast:
    """One pre-registered comparison of group ``a`` with group ``b`` on the protocol's measure,
    frozen and sealed before any run. The difference is ``a - b`` (``b - a`` when ``better`` is
    ``lower``), so that a positive difference is always ``a`` doing better.

    ``direction``: ``superiority`` claims ``a`` better than ``b``; ``non-inferiority`` claims
    ``a`` at most ``margin`` worse than ``b`` (``margin`` above 0, in the measure's units);
    ``two-sided`` claims that they differ. ``pairing``: ``paired`` matches each run of ``a``
    with the run of ``b`` of the same replicate in the condition with the same levels of every
    factor (and participant) the groups do not name, and compares the differences with a
    paired t; ``unpaired`` compares the two groups' pooled runs with Welch's t. ``level`` is the
    confidence level of the interval and of the test (error rate ``1 - level``, controlled
    over the family as :class:`Contrasts` says).

    With ``check`` or ``category`` (a scored protocol's check, or a category of its taxonomy)
    the contrast compares how often runs pass the check or fall in the category: paired by
    McNemar's exact test with Newcombe's paired score interval, unpaired by Fisher's exact test
    with Newcombe's hybrid score interval (superiority and two-sided only). With ``cluster``
    (a factor the groups do not name) the measure's difference gets a cluster-robust (CR1)
    standard error, the runs or pairs clustered by that factor's level. ``interval`` (measure
    contrasts that are not clustered; :class:`ContrastIntervalSpec`) replaces the t by a
    seeded bootstrap."""

    id: str = field(validator=IDENT)
    a: Group
    b: Group
    direction: ContrastDirection = "superiority"
    margin: float = field(default=0.0, validator=within(ge(0.0)))
    better: Literal["higher", "lower"] = "higher"
    pairing: Literal["paired", "unpaired"] = "paired"
    level: float = field(default=0.95, validator=PROBABILITY)
    primary: bool = False
    description: str = ""
    #: Compare how often runs pass this scoring check instead of the measure.
    check: str | None = None
    #: Compare how often runs fall in this category of the scoring taxonomy instead.
    category: str | None = None
    #: A factor whose levels cluster the runs (pairs, for a paired contrast): the measure's
    #: difference then gets a cluster-robust standard error on (clusters - 1) degrees of freedom.
    cluster: str | None = None
    #: How the interval and p-value are made (absent: the t of the pairing, or of the cluster).
    interval: ContrastIntervalSpec | None = field(default=None, metadata=OMIT_IF_DEFAULT)


@frozen
class Contrasts:
    """The comparisons a study will claim, as one family: ``multiplicity`` is how its
    family-wise error rate is controlled: ``holm`` (Holm's step-down adjustment of the
    contrasts' p-values), or ``none``, allowed only for a family of one contrast declared
    ``primary``. Each contrast, the conditions it scans and its bootstrap's resamples times
    runs count towards the limit on what re-deriving the protocol's statistics may take
    (``repro._protocol.work.derivation_work``)."""

    family: tuple[Contrast, ...] = field(validator=NON_EMPTY)
    multiplicity: Literal["holm", "none"] = "holm"


RLStatistic = Literal["median", "iqm", "mean", "optimality-gap"]
"""One of rliable's aggregates of a score matrix (:class:`RL`)."""
RLSampler = Literal["default", "rliable"]
"""How rl-aggregates.json's stratified bootstrap draws its replicates (:class:`RLBootstrap`)."""
RLDistribution = Literal["runs", "tasks"]
"""What a performance profile counts: each run's score, or each task's mean score (:class:`RL`)."""


@frozen
class RLTaskScale:
    """How one task's scores are normalised: a run's measure ``x`` scores ``(x - low) / (high -
    low)``, so that ``low`` scores 0 and ``high`` scores 1 (rliable's normalised scores, with
    ``low`` a random policy's score and ``high`` a reference one's, say). Scores beyond either
    are not clipped. ``low`` must be below ``high``."""

    task: Level
    low: float = field(validator=FINITE)
    high: float = field(validator=FINITE)


@frozen
class RLBootstrap:
    """The stratified bootstrap of every interval in rl-aggregates.json: ``resamples``
    replicates, each drawing, for each task independently, as many runs with replacement as the
    score matrix has; the interval at ``level`` is the replicates' percentile interval (as
    rliable's ``get_interval_estimates``). ``sampler``: ``default`` draws from NumPy's
    ``default_rng(seed)``, a fresh stream for each participant and each pair; ``rliable`` draws
    as rliable 1.2.0 does after ``np.random.seed(seed)``, one legacy stream through the
    participants (or pairs) in the protocol's order, so that its intervals are rliable's own to
    the float (its seed must be below 2**32). The statistics, the improvements and the profiles
    each start from the seed afresh."""

    resamples: int = field(default=2000, validator=within(ge(100), le(MAX_RESAMPLES)))
    seed: int = field(default=0, validator=SEED)
    level: float = field(default=0.95, validator=PROBABILITY)
    sampler: RLSampler = "default"


@frozen
class RLImprovement:
    """A probability of improvement to estimate: P(``x`` > ``y``), participant ``x``'s score
    above participant ``y``'s on a task drawn at random, ties counting one half (rliable's
    ``probability_of_improvement``)."""

    x: str = field(validator=IDENT)
    y: str = field(validator=IDENT)


@frozen
class RL:
    """rliable's aggregates of the runs (Agarwal et al. 2021, "Deep RL at the Edge of the
    Statistical Precipice"), written to rl-aggregates.json and re-derived by verify.

    The tasks are the levels of the matrix factor ``task_factor``, in the order the matrix
    gives them; the algorithms are the participants. Every other factor of the matrix must have
    one level (its levels would be neither tasks nor algorithms: refused). A participant's
    score matrix holds, for each replicate in which every task's slot ended valid with a
    measure, that replicate's score on each task; a replicate with a task that did not end
    valid is left out and counted, never imputed.

    ``normalization``: one :class:`RLTaskScale` per task, or none (empty: the raw measure is the
    score). ``statistics``: which of median, IQM, mean and optimality gap (below ``gamma``, in
    the score's units; for the optimality gap only) to estimate for every participant, each with
    its interval. ``improvements``: the probabilities of improvement to estimate, each with its
    interval. ``taus``: the thresholds of each participant's performance profile, the fraction
    of ``distribution`` (every run's score, or every task's mean score) above each, with its
    interval. At least one of the three must be asked for, and the bootstraps count towards the
    limit on what re-deriving the protocol's statistics may take
    (``repro._protocol.work.derivation_work``, at most 5 x 10^8 units with the protocol's other
    bootstraps and contrasts; five algorithms on 26 tasks of 10 runs fit at 50,000 resamples
    with every statistic, a profile of 81 taus and four improvements): a section that asks more
    is refused."""

    task_factor: str = field(validator=IDENT)
    normalization: tuple[RLTaskScale, ...] = ()
    statistics: tuple[RLStatistic, ...] = ("median", "iqm", "mean", "optimality-gap")
    gamma: float = field(default=1.0, validator=FINITE)
    bootstrap: RLBootstrap = RLBootstrap()
    improvements: tuple[RLImprovement, ...] = ()
    taus: tuple[float, ...] = field(default=(), validator=Constraint(max_len(MAX_TAUS)))
    distribution: RLDistribution = "runs"


@frozen
class Protocol:
    """An experiment protocol as authored: everything that shapes the results."""

    schema: Literal["repro.protocol/1"]
    id: str = field(validator=IDENT)
    title: str = field(validator=ONE_LINE)
    adapter: AdapterSpec
    matrix: tuple[Factor, ...] = field(validator=NON_EMPTY)
    participants: tuple[Participant, ...] = field(validator=NON_EMPTY)
    runs_per_condition: int = field(validator=POSITIVE)
    seeding: Seeding
    measure: Measure
    estimand: Estimand
    interval: Interval
    retry: Retry = Retry()
    exclusions: tuple[Exclusion, ...] = ()
    published: Published | None = None
    criteria: Criteria = Criteria()
    disagreements: tuple[Disagreement, ...] = ()
    description: str = ""
    license: str | None = field(default=None, validator=optional(SPDX), metadata=OMIT_IF_DEFAULT)
    scenarios: tuple[Scenario, ...] = field(default=(), metadata=OMIT_IF_DEFAULT)
    scoring: Scoring | None = field(default=None, metadata=OMIT_IF_DEFAULT)
    gates: Gates | None = field(default=None, metadata=OMIT_IF_DEFAULT)
    contrasts: Contrasts | None = field(default=None, metadata=OMIT_IF_DEFAULT)
    rl: RL | None = field(default=None, metadata=OMIT_IF_DEFAULT)
    authors: tuple[Contributor, ...] = field(default=(), metadata=OMIT_IF_DEFAULT)
    publisher: Contributor | None = field(default=None, metadata=OMIT_IF_DEFAULT)


@frozen
class FrozenProtocol:
    """protocol.json: the protocol with defaults made explicit, and the sha256 of its canonical
    bytes."""

    schema: Literal["repro.frozen-protocol/1"]
    sha256: str = field(validator=SHA256)
    protocol: Protocol
