"""All derivations together: :func:`derive` runs each one (aggregates, the ledger's losses, tiers,
the report, for a scored protocol its scores and publish gates, for a protocol with contrasts
their verdicts, and for one with an ``rl`` section rliable's aggregates) on the tally of the
runs.

``repro study`` and ``repro verify`` both call :func:`derive` on a
:class:`~repro._derive.tally.RunTally` of the runs: the study tallies the records it wrote, the
verifier the records it reads, and it compares the canonical bytes it re-derives with what the
bundle stores.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from attrs import evolve, frozen

from repro._derive import report, scoring
from repro._derive.aggregates import aggregates
from repro._derive.continuation import continuation_tier
from repro._derive.contrasts import contrasts
from repro._derive.ledger import source_ledger
from repro._derive.rl_aggregates import rl_aggregates
from repro._derive.scenarios import by_condition
from repro._derive.tally import Attempt, ConditionTally, RunTally, merge, tally
from repro._derive.tiers import contract_digests, tiers
from repro._disclosure import FileHits
from repro._plan.sealing import conditions_of
from repro.models import (
    Aggregates,
    Continuation,
    ContrastsFile,
    FrozenProtocol,
    Ledger,
    Partition,
    RLAggregates,
    RunRecord,
    Scores,
    Seal,
    Tiers,
)

__all__ = [
    "Derived",
    "Figures",
    "derive",
    "figures_of",
    "judgements",
    "run_measures",
    "scores",
    "tally_partitions",
    "tally_records",
]


def tally_records(
    frozen_protocol: FrozenProtocol,
    partitions: Sequence[Partition],
    records: Sequence[RunRecord],
    facts: Ledger,
) -> RunTally:
    """The tally of whole run records, as a study holds them, against the plan's partitions
    and the contract facts in ``facts``."""
    return tally(
        partitions,
        (Attempt.of(r) for r in records),
        frozen_protocol.protocol.retry.max_attempts,
        contract_digests(facts),
        by_condition(frozen_protocol.protocol, conditions_of(frozen_protocol.protocol)),
    )


def tally_partitions(
    frozen_protocol: FrozenProtocol,
    partitions: Iterable[tuple[Partition, Iterable[RunRecord]]],
    facts: Ledger,
) -> RunTally:
    """The tally of each partition's run records against it, one partition at a time, added up
    in sealed order (:func:`repro._derive.tally.merge`), as verify tallies a bundle it reads:
    only one partition's records are held at a time. It equals :func:`tally_records` of them all
    when each partition's records name its own slots, as a study's do."""
    p = frozen_protocol.protocol
    contracts = contract_digests(facts)
    scenarios = by_condition(p, conditions_of(p))
    limit = p.retry.max_attempts
    return merge(
        [
            tally([part], (Attempt.of(r) for r in records), limit, contracts, scenarios)
            for part, records in partitions
        ]
    )


@frozen
class Derived:
    """Everything a bundle stores that is a function of protocol, plan, runs and ledger facts."""

    aggregates: Aggregates
    tiers: Tiers
    ledger: Ledger
    report: str
    #: scores.json, for a protocol with scoring.
    scores: Scores | None = None
    #: contrasts.json, for a protocol that declares contrasts.
    contrasts: ContrastsFile | None = None
    #: rl-aggregates.json, for a protocol with an ``rl`` section.
    rl: RLAggregates | None = None


@frozen
class Figures:
    """The derived files computed from the runs' values, whose floats verify compares within the
    numeric policy's tolerance (:mod:`repro._stats.figures`): aggregates.json and, for a
    protocol that has them, scores.json, contrasts.json and rl-aggregates.json."""

    aggregates: Aggregates
    scores: Scores | None
    contrasts: ContrastsFile | None
    rl: RLAggregates | None


def figures_of(frozen_protocol: FrozenProtocol, seal: Seal, runs: RunTally) -> Figures:
    """Aggregates, scores, contrasts and rliable's aggregates, from the tally of the runs."""
    scored = scores(frozen_protocol, seal, runs)
    return Figures(
        aggregates=aggregates(frozen_protocol, seal, runs),
        scores=scored,
        contrasts=contrasts(frozen_protocol, seal, runs, scored),
        rl=rl_aggregates(frozen_protocol, seal, runs),
    )


def judgements(
    frozen_protocol: FrozenProtocol,
    seal: Seal,
    runs: RunTally,
    ledger: Ledger,
    disclosures: Sequence[FileHits],
    figures: Figures,
    report_version: int = report.REPORT_VERSION,
    judged_tiers: Tiers | None = None,
    continuation: Continuation | None = None,
    continuation_problems: Sequence[str] = (),
) -> Derived:
    """What follows from the runs and ``figures``: the ledger's losses, the tiers (with the
    reproduction class, from the aggregates' intervals) and the report, of every file; verify
    passes the figures a bundle stores once it accepts them, and ``judged_tiers``, the stored
    tiers once accepted, for the report to be written of. A continued study's account
    (``continuation``, with what :func:`repro._derive.continuation.continuation_problems` found
    of it) adds the ``continuation`` tier and the report's line on it; without one, nothing
    changes."""
    full_ledger = source_ledger(frozen_protocol, runs, ledger)
    judged = tiers(frozen_protocol, seal, runs, full_ledger, figures.aggregates, disclosures)
    if continuation is not None:
        told = continuation_tier(continuation, seal, continuation_problems)
        judged = evolve(judged, tiers=(*judged.tiers, told))
    text = report.validation_report(
        frozen_protocol,
        figures.aggregates,
        judged if judged_tiers is None else judged_tiers,
        full_ledger,
        figures.scores,
        figures.contrasts,
        figures.rl,
        report_version,
        continuation,
        len(seal.partitions),
    )
    return Derived(
        aggregates=figures.aggregates,
        tiers=judged,
        ledger=full_ledger,
        report=text,
        scores=figures.scores,
        contrasts=figures.contrasts,
        rl=figures.rl,
    )


def derive(
    frozen_protocol: FrozenProtocol,
    seal: Seal,
    runs: RunTally,
    ledger: Ledger,
    disclosures: Sequence[FileHits],
    report_version: int = report.REPORT_VERSION,
    continuation: Continuation | None = None,
    continuation_problems: Sequence[str] = (),
) -> Derived:
    """Derive aggregates, tiers, the ledger's losses and the report: the figures of the runs
    (:func:`figures_of`) and what follows from them (:func:`judgements`). ``runs`` is the tally
    of the runs against the sealed plan; ``ledger`` supplies the facts gathered at run time
    (adapter, sources, contracts), and its losses are re-derived. ``disclosures`` are the hits
    of :class:`repro._disclosure.Scanner` in the bytes of each input file
    (:func:`repro._layout.is_derivation_input`) as written or read. The report is written
    as ``report_version`` (:func:`repro._derive.report.validation_report`): a study's the
    current one, verify's the one the stored report declares. A continued study passes its
    account, ``continuation`` (data/continuation.json), with what
    :func:`repro._derive.continuation.continuation_problems` found of it: the tiers then hold
    the ``continuation`` tier and the report says the study was continued; a study that was not
    passes neither, and its files are what they were."""
    figures = figures_of(frozen_protocol, seal, runs)
    return judgements(
        frozen_protocol,
        seal,
        runs,
        ledger,
        disclosures,
        figures,
        report_version,
        continuation=continuation,
        continuation_problems=continuation_problems,
    )


def scores(frozen_protocol: FrozenProtocol, seal: Seal, runs: RunTally) -> Scores | None:
    """scores.json from the tally of the runs (None for a protocol without scoring): every
    valid run scored, the cells in sealed order, and the publish gates."""
    p = frozen_protocol.protocol
    if p.scoring is None:
        return None
    none = ConditionTally(scheduled=0, valid=0, failed=0, excluded=0, measures=())
    scored = [
        (attempt, condition.id, outcome, measure)
        for condition in seal.conditions
        for attempt, outcome, measure in runs.conditions.get(condition.id, none).scored
    ]
    superseded = {condition: c.superseded for condition, c in runs.conditions.items()}
    level = p.interval.level
    run_scores, cells = scoring.score_cells(p, seal.conditions, scored, superseded, level)
    return Scores(
        schema="repro.scores/1",
        protocol_sha256=frozen_protocol.sha256,
        level=level,
        runs=run_scores,
        cells=cells,
        gates=scoring.gates(p, cells, runs.losses, runs.slots),
    )


def run_measures(
    fp: FrozenProtocol,
    ledger: Ledger,
    partitions: Iterable[tuple[Partition, Iterable[RunRecord]]],
) -> dict[str, tuple[float, ...]]:
    """Each condition's valid measures in sealed order: the sample whose mean and interval
    aggregates.json holds. Each sealed partition's records are tallied against it
    (:func:`repro._derive.tally.tally`, with the contract digests and scenarios verify tallies
    with), one partition at a time, so that what is held is the measures, not the records."""
    p = fp.protocol
    contracts = contract_digests(ledger)
    scenarios = by_condition(p, conditions_of(p))
    found: dict[str, list[float]] = defaultdict(list)
    for part, records in partitions:
        attempts = (Attempt.of(r) for r in records)
        runs = tally([part], attempts, p.retry.max_attempts, contracts, scenarios)
        for condition, counted in runs.conditions.items():
            found[condition].extend(counted.measures)
    return {condition: tuple(values) for condition, values in found.items()}
