"""The protocol's consistency rules: every check across its fields (matrix size, participants,
seeding and its common random numbers, published figures and the criteria that judge them,
scoring's rules, contrasts, rliable's aggregates) that no single field's constraint can state.
``repro study`` applies them before it freezes; ``repro verify`` applies them again to the
bundle's protocol."""

from __future__ import annotations

from repro._plan.sealing import PARTICIPANT, conditions_of, slot_ids
from repro._protocol.contrasts import contrast_problems
from repro._protocol.rl_rules import rl_problems
from repro._protocol.scoring_rules import scoring_problems
from repro._protocol.work import MAX_DERIVATION_WORK, planned_conditions, work_problems
from repro.errors import BadInput, Problem
from repro.models import (
    CHECKPOINT_EVERY,
    MAX_CHECKPOINTS,
    Condition,
    Contributor,
    Level,
    Protocol,
    Published,
)
from repro.models._protocol import FAMILYWISE

__all__ = ["MAX_SLOTS", "check_consistency"]

#: The plan is expanded and sealed in memory before anything runs; a few lines of JSON could
#: otherwise ask for more slots (matrix cells x participants x runs) than memory holds.
MAX_SLOTS = 1_000_000


def _check_size(p: Protocol) -> None:
    conditions = planned_conditions(p)
    if conditions > MAX_SLOTS:
        said = (
            f"{conditions} conditions (matrix cells x participants) are over the limit of "
            f"{MAX_SLOTS} slots"
        )
        raise BadInput.of("protocol", [Problem("$.matrix", said, "over-limit")])
    slots = conditions * p.runs_per_condition
    if slots > MAX_SLOTS:
        said = (
            f"{conditions} conditions x {p.runs_per_condition} runs = {slots} slots is over the "
            f"limit of {MAX_SLOTS}"
        )
        raise BadInput.of("protocol", [Problem("$.runs_per_condition", said, "over-limit")])


def _checkpoint_problems(p: Protocol) -> list[Problem]:
    """``seeding.checkpoint_every``: stream seeding only, and no more than
    :data:`~repro.models.MAX_CHECKPOINTS` checkpoints in a partition, declared or by default."""
    every = p.seeding.checkpoint_every
    where = "$.seeding.checkpoint_every"
    if every is not None and p.seeding.mode != "stream":
        return [
            Problem(
                where,
                f"checkpoints are kept in stream seeding only, not {p.seeding.mode}",
                "inconsistent",
            )
        ]
    if p.seeding.mode != "stream":
        return []
    spacing = every or CHECKPOINT_EVERY
    kept = -(-p.runs_per_condition // spacing)
    if kept > MAX_CHECKPOINTS:
        return [
            Problem(
                where,
                f"{p.runs_per_condition} runs per condition at one checkpoint every {spacing} "
                f"slots keep {kept} checkpoints in a partition, over the limit of "
                f"{MAX_CHECKPOINTS}: declare a larger spacing",
                "over-limit",
            )
        ]
    return []


def _contributor_problems(p: Protocol) -> list[Problem]:
    """An ORCID iD names a person and a ROR ID an organization, so each goes with its kind; the
    publisher is an organization (RO-Crate 1.1 recommends one)."""
    credited: list[tuple[str, Contributor]] = [
        (f"$.authors[{i}]", a) for i, a in enumerate(p.authors)
    ]
    if p.publisher is not None:
        credited.append(("$.publisher", p.publisher))
    problems: list[Problem] = []
    for where, c in credited:
        if c.orcid is not None and c.kind != "person":
            problems.append(
                Problem(f"{where}.orcid", "an ORCID iD identifies a person", "inconsistent")
            )
        if c.ror is not None and c.kind != "organization":
            problems.append(
                Problem(f"{where}.ror", "a ROR ID identifies an organization", "inconsistent")
            )
    if p.publisher is not None and p.publisher.kind != "organization":
        problems.append(
            Problem("$.publisher.kind", "the publisher must be an organization", "inconsistent")
        )
    return problems


def _seeding_problems(p: Protocol) -> list[Problem]:
    """``seeding.common``: per-run seeding only, each name once, each a factor of the matrix
    or ``"participant"`` (and not both: a factor named "participant" would make it ambiguous);
    ``seeding.checkpoint_every`` as :func:`_checkpoint_problems` says."""
    checkpoints = _checkpoint_problems(p)
    common = p.seeding.common
    if not common:
        return checkpoints
    if p.seeding.mode != "per-run":
        return [
            Problem(
                "$.seeding.common",
                f"common random numbers need per-run seeding, not {p.seeding.mode}",
                "inconsistent",
            )
        ]
    problems: list[Problem] = checkpoints
    factors = {f.name for f in p.matrix}
    for i, name in enumerate(common):
        where = f"$.seeding.common[{i}]"
        if common.index(name) != i:
            problems.append(
                Problem(where, f"duplicate name {name!r} in seeding.common", "duplicate")
            )
        elif name == PARTICIPANT and name in factors:
            problems.append(
                Problem(
                    where,
                    f"{name!r} names both the participant and a factor of the matrix",
                    "inconsistent",
                )
            )
        elif name != PARTICIPANT and name not in factors:
            problems.append(
                Problem(
                    where,
                    f"unknown factor {name!r}: seeding.common names factors of the matrix or "
                    f"'participant'",
                    "unknown-name",
                )
            )
    return problems


def _published_problems(p: Protocol, published: Published) -> list[Problem]:
    """Each published figure names one condition of the matrix (its participant when there are
    several), and no condition is published twice; something is published. The conditions are
    looked up by their levels, so the check is linear in figures and conditions."""
    problems: list[Problem] = []
    by_levels: dict[tuple[frozenset[tuple[str, Level]], str], list[Condition]] = {}
    for c in conditions_of(p):
        by_levels.setdefault((frozenset(c.factors.items()), c.participant), []).append(c)
    matched: set[str] = set()
    for i, figure in enumerate(published.conditions):
        where = f"$.published.conditions[{i}]"
        if figure.participant is None and len(p.participants) > 1:
            problems.append(
                Problem(where, "participant required when there are several", "missing-field")
            )
            continue
        who = p.participants[0].id if figure.participant is None else figure.participant
        hits = by_levels.get((frozenset(figure.factors.items()), who), [])
        if len(hits) != 1:
            problems.append(
                Problem(f"{where}.factors", "matches no condition of the matrix", "unknown-name")
            )
        elif hits[0].id in matched:
            problems.append(Problem(where, "condition published twice", "duplicate"))
        else:
            matched.add(hits[0].id)
    if not published.conditions and published.estimand is None:
        problems.append(
            Problem("$.published", "published figures declared but none given", "inconsistent")
        )
    return problems


def _name_problems(p: Protocol) -> list[Problem]:
    """Factor names, a factor's levels and participant IDs, each once."""
    problems: list[Problem] = []
    names: dict[str, int] = {}
    for i, factor in enumerate(p.matrix):
        if names.setdefault(factor.name, i) != i:
            said = f"duplicate factor name {factor.name!r}"
            problems.append(Problem(f"$.matrix[{i}].name", said, "duplicate"))
        if len(set(factor.levels)) != len(factor.levels):
            said = f"duplicate level in factor {factor.name!r}"
            problems.append(Problem(f"$.matrix[{i}].levels", said, "duplicate"))
    ids: dict[str, int] = {}
    for i, participant in enumerate(p.participants):
        if ids.setdefault(participant.id, i) != i:
            said = f"duplicate participant id {participant.id!r}"
            problems.append(Problem(f"$.participants[{i}].id", said, "duplicate"))
    return problems


def _statistics_problems(p: Protocol) -> list[Problem]:
    """The measure's bounds in order, and a bootstrap interval of enough resamples that the
    family-wise criterion does not need recomputed."""
    problems: list[Problem] = []
    m = p.measure
    if m.minimum is not None and m.maximum is not None and m.minimum > m.maximum:
        problems.append(Problem("$.measure", "minimum is greater than maximum", "inconsistent"))
    if p.interval.method == "bootstrap" and p.interval.resamples < 100:
        said = "a bootstrap needs at least 100 resamples"
        problems.append(Problem("$.interval.resamples", said, "not-allowed"))
    if p.interval.method == "bootstrap" and p.criteria.bounded == FAMILYWISE:
        # The criterion recomputes each observed interval at the family-wise level from
        # aggregates.json, which a bootstrap's resamples are not in.
        problems.append(
            Problem(
                "$.interval.method",
                f"criteria.bounded {FAMILYWISE} recomputes the observed intervals at the "
                "family-wise level, which a bootstrap interval cannot be: use normal or t",
                "inconsistent",
            )
        )
    return problems


def _exclusion_problems(p: Protocol) -> list[Problem]:
    """Each excluded slot a slot of the plan, excluded once."""
    problems: list[Problem] = []
    # One string per slot of the plan: expanded only when there is an exclusion to look up.
    valid_slots = set(slot_ids(p)) if p.exclusions else set()
    seen: set[str] = set()
    for i, exclusion in enumerate(p.exclusions):
        where = f"$.exclusions[{i}].slot"
        if exclusion.slot not in valid_slots:
            problems.append(Problem(where, f"unknown slot {exclusion.slot!r}", "unknown-name"))
        if exclusion.slot in seen:
            problems.append(Problem(where, f"slot {exclusion.slot!r} excluded twice", "duplicate"))
        seen.add(exclusion.slot)
    return problems


def check_consistency(p: Protocol, max_work: int = MAX_DERIVATION_WORK) -> None:
    """Refuse what each field allows alone but the protocol as a whole does not: a plan too
    large to seal, duplicate names, references to slots, conditions or factors that do not
    exist, scenarios, checks and gates that do not fit together, and derivations that would
    take more than ``max_work`` (:func:`repro._protocol.work.derivation_work`; verify passes its
    own limit). The rules' own scans of the conditions are part of that work: past it, the
    contrasts' rules are not run."""
    _check_size(p)
    over = work_problems(p, max_work)
    problems = _name_problems(p) + _seeding_problems(p) + _contributor_problems(p)
    problems += _statistics_problems(p) + _exclusion_problems(p)
    if p.published is not None:
        problems += _published_problems(p, p.published)
    problems += scoring_problems(p)
    if p.contrasts is not None and not over:
        problems += contrast_problems(p, conditions_of(p))
    problems += rl_problems(p) + over
    if problems:
        raise BadInput.of("protocol", problems)
