"""Which conditions a contrast compares, and how they pair: one definition, read by the
protocol's consistency rules (a contrast whose groups match no condition, overlap or cannot pair
is refused before anything is written) and by the derivation of contrasts.json, in the study and
in verify.

A group (:class:`~repro.models.Group`) selects every condition whose factors have the levels it
names and, if it names one, whose participant it is. A paired contrast matches each condition of
``a`` with the one condition of ``b`` that has the same levels of every factor neither group
names (and the same participant, unless a group names one): those are "the remaining factors",
and the runs of a matched pair of conditions pair by replicate.
"""

from __future__ import annotations

from collections.abc import Sequence

from repro.errors import Problem
from repro.models import Condition, Contrast, Group, Level, Protocol

__all__ = ["contrast_problems", "matched_conditions", "selected"]


def selected(group: Group, conditions: Sequence[Condition]) -> list[Condition]:
    """The conditions ``group`` selects, in sealed order."""
    return [
        c
        for c in conditions
        if all(c.factors.get(name) == level for name, level in group.factors.items())
        and (group.participant is None or c.participant == group.participant)
    ]


def _key(contrast: Contrast, condition: Condition) -> tuple[tuple[str, Level], ...]:
    """The levels of the factors (and the participant) that neither group names."""
    named = set(contrast.a.factors) | set(contrast.b.factors)
    key = [(name, level) for name, level in condition.factors.items() if name not in named]
    if contrast.a.participant is None and contrast.b.participant is None:
        key.append(("participant", condition.participant))
    return tuple(key)


def matched_conditions(
    contrast: Contrast, conditions: Sequence[Condition]
) -> list[tuple[Condition, Condition]] | str:
    """The pairs of conditions (``a``'s, ``b``'s) a paired contrast compares, in ``a``'s sealed
    order, or why they cannot pair: each condition of ``a`` must have exactly one condition of
    ``b`` with the same remaining levels, and the other way round."""
    a, b = selected(contrast.a, conditions), selected(contrast.b, conditions)
    by_key: dict[tuple[tuple[str, Level], ...], list[Condition]] = {}
    for c in b:
        by_key.setdefault(_key(contrast, c), []).append(c)
    pairs = []
    for c in a:
        partners = by_key.get(_key(contrast, c), [])
        if len(partners) != 1:
            return (
                f"condition {c.id} of a has {len(partners)} conditions of b with the same "
                "levels of the factors the groups do not name (it needs exactly one)"
            )
        pairs.append((c, partners[0]))
    if len(pairs) != len(b) or len({id(partner) for _, partner in pairs}) != len(b):
        return "the conditions of b do not each pair with exactly one condition of a"
    return pairs


def _group_problems(p: Protocol, group: Group, where: str) -> list[Problem]:
    levels = {f.name: f.levels for f in p.matrix}
    problems = []
    for name, level in group.factors.items():
        if name not in levels:
            problems.append(Problem(f"{where}.factors", f"unknown factor {name!r}", "unknown-name"))
        elif level not in levels[name]:
            problems.append(
                Problem(
                    f"{where}.factors",
                    f"{level!r} is not a level of factor {name!r}",
                    "unknown-name",
                )
            )
    if group.participant is not None and group.participant not in {q.id for q in p.participants}:
        problems.append(
            Problem(
                f"{where}.participant", f"unknown participant {group.participant!r}", "unknown-name"
            )
        )
    return problems


def _contrast_problems(
    p: Protocol, contrast: Contrast, conditions: Sequence[Condition], where: str
) -> list[Problem]:
    problems = _group_problems(p, contrast.a, f"{where}.a") + _group_problems(
        p, contrast.b, f"{where}.b"
    )
    if problems:
        return problems
    a, b = selected(contrast.a, conditions), selected(contrast.b, conditions)
    for side, chosen in (("a", a), ("b", b)):
        if not chosen:
            problems.append(
                Problem(f"{where}.{side}", "group matches no condition", "unknown-name")
            )
    overlap = sorted({c.id for c in a} & {c.id for c in b})
    if overlap:
        problems.append(Problem(where, f"groups overlap in {', '.join(overlap)}", "inconsistent"))
    if contrast.direction == "non-inferiority" and not contrast.margin > 0:
        problems.append(
            Problem(
                f"{where}.margin",
                "a non-inferiority contrast needs a margin above 0",
                "not-allowed",
            )
        )
    if contrast.direction != "non-inferiority" and contrast.margin != 0:
        problems.append(
            Problem(
                f"{where}.margin", "a margin is for non-inferiority contrasts only", "inconsistent"
            )
        )
    problems += _outcome_problems(p, contrast, where)
    if not problems and contrast.pairing == "paired":
        matched = matched_conditions(contrast, conditions)
        if isinstance(matched, str):
            problems.append(Problem(f"{where}.pairing", f"cannot pair: {matched}", "inconsistent"))
    return problems


def _outcome_problems(p: Protocol, contrast: Contrast, where: str) -> list[Problem]:
    """What is compared must exist, and each test must be one repro has."""
    problems = []
    binary = contrast.check is not None or contrast.category is not None
    if contrast.check is not None and contrast.category is not None:
        problems.append(
            Problem(where, "a contrast compares a check or a category, not both", "inconsistent")
        )
    scoring = p.scoring
    if binary and scoring is None:
        problems.append(
            Problem(where, "checks and categories need the protocol's scoring", "inconsistent")
        )
    checks = set() if scoring is None else {c.name for c in scoring.checks}
    if contrast.check is not None and scoring is not None and contrast.check not in checks:
        problems.append(
            Problem(f"{where}.check", f"unknown check {contrast.check!r}", "unknown-name")
        )
    if contrast.category is not None and scoring is not None:
        categories = () if scoring.taxonomy is None else scoring.taxonomy.categories
        if contrast.category not in categories:
            problems.append(
                Problem(
                    f"{where}.category", f"unknown category {contrast.category!r}", "unknown-name"
                )
            )
    if binary and contrast.direction == "non-inferiority":
        problems.append(
            Problem(
                f"{where}.direction",
                "non-inferiority compares the measure only (a margin on a rate has no exact test "
                "here)",
                "inconsistent",
            )
        )
    if contrast.cluster is not None:
        named = set(contrast.a.factors) | set(contrast.b.factors)
        if contrast.cluster not in {f.name for f in p.matrix}:
            problems.append(
                Problem(f"{where}.cluster", f"unknown factor {contrast.cluster!r}", "unknown-name")
            )
        elif contrast.pairing == "paired" and contrast.cluster in named:
            problems.append(
                Problem(
                    f"{where}.cluster",
                    "a paired contrast clusters by a factor its groups do not name",
                    "inconsistent",
                )
            )
        if binary:
            problems.append(
                Problem(f"{where}.cluster", "clusters are for the measure only", "inconsistent")
            )
    return problems


def _interval_problems(contrast: Contrast, family_size: int, where: str) -> list[Problem]:
    """A bootstrap needs its resamples and seed, declared before the runs, a measure to
    resample that no cluster structures, and enough resamples that its smallest p-value,
    adjusted over the ``family_size`` contrasts the multiplicity control counts, can be below
    ``1 - level``; a t takes neither."""
    spec = contrast.interval
    if spec is None:
        return []
    rate = contrast.check is not None or contrast.category is not None
    problems = []
    if spec.method == "t":
        for name in ("resamples", "seed"):
            if getattr(spec, name) is not None:
                said = f"{name} is for a bootstrap interval only"
                problems.append(Problem(f"{where}.{name}", said, "inconsistent"))
        if rate:
            said = "a rate's interval is Newcombe's score interval, not a t"
            problems.append(Problem(f"{where}.method", said, "inconsistent"))
        return problems
    for name in ("resamples", "seed"):
        if getattr(spec, name) is None:
            said = f"a bootstrap interval needs its {name}"
            problems.append(Problem(f"{where}.{name}", said, "missing-field"))
    if rate:
        said = "a bootstrap interval is for the measure only"
        problems.append(Problem(f"{where}.method", said, "inconsistent"))
    if contrast.cluster is not None:
        said = "a clustered contrast takes its cluster-robust t, not a bootstrap of runs or pairs"
        problems.append(Problem(f"{where}.method", said, "inconsistent"))
    if spec.resamples is not None:
        # The smallest p-value the bootstrap gives, adjusted as Holm's first step would and
        # compared as the verdict compares (repro._derive.contrasts.bootstrap_p_value,
        # repro._stats.inference.holm, repro._derive.contrasts.verdict): never below 1 - level,
        # the contrast could not hold whatever the runs.
        smallest = (1 if contrast.direction != "two-sided" else 2) / (spec.resamples + 1)
        if not min(1.0, family_size * smallest) < 1.0 - contrast.level:
            said = (
                f"the smallest p-value of {spec.resamples} resamples, {smallest:.6g}, "
                f"times {family_size} contrast(s) is not below 1 - level "
                f"({1.0 - contrast.level:.6g}): the contrast could never hold"
            )
            problems.append(Problem(f"{where}.resamples", said, "inconsistent"))
    return problems


def contrast_problems(p: Protocol, conditions: Sequence[Condition]) -> list[Problem]:
    """Every way the protocol's contrasts do not fit its matrix, each with its JSON path."""
    if p.contrasts is None:
        return []
    family = p.contrasts.family
    problems: list[Problem] = []
    first: dict[str, int] = {}
    for i, contrast in enumerate(family):
        where = f"$.contrasts.family[{i}]"
        if first.setdefault(contrast.id, i) != i:
            problems.append(
                Problem(f"{where}.id", f"duplicate contrast id {contrast.id!r}", "duplicate")
            )
        problems += _contrast_problems(p, contrast, conditions, where)
        counted = len(family) if p.contrasts.multiplicity == "holm" else 1
        problems += _interval_problems(contrast, counted, f"{where}.interval")
    if p.contrasts.multiplicity == "none" and not (len(family) == 1 and family[0].primary):
        problems.append(
            Problem(
                "$.contrasts.multiplicity",
                "multiplicity none is only for a family of one contrast declared primary",
                "inconsistent",
            )
        )
    if p.contrasts.multiplicity == "holm" and len({c.level for c in family}) > 1:
        problems.append(
            Problem(
                "$.contrasts.family",
                "Holm controls one family-wise error rate: every contrast of the family takes the "
                "same level",
                "inconsistent",
            )
        )
    return problems
