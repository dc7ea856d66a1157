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


def _group_problems(p: Protocol, group: Group, where: str) -> list[str]:
    levels = {f.name: f.levels for f in p.matrix}
    problems = []
    for name, level in group.factors.items():
        if name not in levels:
            problems.append(f"unknown factor {name!r} @ {where}.factors")
        elif level not in levels[name]:
            problems.append(f"{level!r} is not a level of factor {name!r} @ {where}.factors")
    if group.participant is not None and group.participant not in {q.id for q in p.participants}:
        problems.append(f"unknown participant {group.participant!r} @ {where}.participant")
    return problems


def _contrast_problems(
    p: Protocol, contrast: Contrast, conditions: Sequence[Condition], where: str
) -> list[str]:
    problems = _group_problems(p, contrast.a, f"{where}.a") + _group_problems(
        p, contrast.b, f"{where}.b"
    )
    if problems:
        return problems
    a, b = selected(contrast.a, conditions), selected(contrast.b, conditions)
    for side, chosen in (("a", a), ("b", b)):
        if not chosen:
            problems.append(f"group matches no condition @ {where}.{side}")
    overlap = sorted({c.id for c in a} & {c.id for c in b})
    if overlap:
        problems.append(f"groups overlap in {', '.join(overlap)} @ {where}")
    if contrast.direction == "non-inferiority" and not contrast.margin > 0:
        problems.append(f"a non-inferiority contrast needs a margin above 0 @ {where}.margin")
    if contrast.direction != "non-inferiority" and contrast.margin != 0:
        problems.append(f"a margin is for non-inferiority contrasts only @ {where}.margin")
    problems += _outcome_problems(p, contrast, where)
    if not problems and contrast.pairing == "paired":
        matched = matched_conditions(contrast, conditions)
        if isinstance(matched, str):
            problems.append(f"cannot pair: {matched} @ {where}.pairing")
    return problems


def _outcome_problems(p: Protocol, contrast: Contrast, where: str) -> list[str]:
    """What is compared must exist, and each test must be one repro has."""
    problems = []
    binary = contrast.check is not None or contrast.category is not None
    if contrast.check is not None and contrast.category is not None:
        problems.append(f"a contrast compares a check or a category, not both @ {where}")
    scoring = p.scoring
    if binary and scoring is None:
        problems.append(f"checks and categories need the protocol's scoring @ {where}")
    checks = set() if scoring is None else {c.name for c in scoring.checks}
    if contrast.check is not None and scoring is not None and contrast.check not in checks:
        problems.append(f"unknown check {contrast.check!r} @ {where}.check")
    if contrast.category is not None and scoring is not None:
        categories = () if scoring.taxonomy is None else scoring.taxonomy.categories
        if contrast.category not in categories:
            problems.append(f"unknown category {contrast.category!r} @ {where}.category")
    if binary and contrast.direction == "non-inferiority":
        problems.append(
            f"non-inferiority compares the measure only (a margin on a rate has no exact test "
            f"here) @ {where}.direction"
        )
    if contrast.cluster is not None:
        named = set(contrast.a.factors) | set(contrast.b.factors)
        if contrast.cluster not in {f.name for f in p.matrix}:
            problems.append(f"unknown factor {contrast.cluster!r} @ {where}.cluster")
        elif contrast.pairing == "paired" and contrast.cluster in named:
            problems.append(
                f"a paired contrast clusters by a factor its groups do not name @ {where}.cluster"
            )
        if binary:
            problems.append(f"clusters are for the measure only @ {where}.cluster")
    return problems


def _interval_problems(contrast: Contrast, family_size: int, where: str) -> list[str]:
    """A bootstrap needs its resamples and seed, declared before the runs, a measure to
    resample that no cluster structures, and enough resamples that its smallest p-value,
    adjusted over the ``family_size`` contrasts the multiplicity control counts, can be below
    ``1 - level``; a t takes neither."""
    spec = contrast.interval
    if spec is None:
        return []
    problems = []
    if spec.method == "t":
        for name in ("resamples", "seed"):
            if getattr(spec, name) is not None:
                problems.append(f"{name} is for a bootstrap interval only @ {where}.{name}")
        if contrast.check is not None or contrast.category is not None:
            problems.append(
                f"a rate's interval is Newcombe's score interval, not a t @ {where}.method"
            )
        return problems
    for name in ("resamples", "seed"):
        if getattr(spec, name) is None:
            problems.append(f"a bootstrap interval needs its {name} @ {where}.{name}")
    if contrast.check is not None or contrast.category is not None:
        problems.append(f"a bootstrap interval is for the measure only @ {where}.method")
    if contrast.cluster is not None:
        problems.append(
            f"a clustered contrast takes its cluster-robust t, not a bootstrap of runs or pairs "
            f"@ {where}.method"
        )
    if spec.resamples is not None:
        # The smallest p-value the bootstrap gives, adjusted as Holm's first step would and
        # compared as the verdict compares (repro.derive.contrasts.bootstrap_p_value,
        # repro.stats.inference.holm, repro.derive.contrasts.verdict): never below 1 - level,
        # the contrast could not hold whatever the runs.
        smallest = (1 if contrast.direction != "two-sided" else 2) / (spec.resamples + 1)
        if not min(1.0, family_size * smallest) < 1.0 - contrast.level:
            problems.append(
                f"the smallest p-value of {spec.resamples} resamples, {smallest:.6g}, times "
                f"{family_size} contrast(s) is not below 1 - level ({1.0 - contrast.level:.6g}): "
                f"the contrast could never hold @ {where}.resamples"
            )
    return problems


def contrast_problems(p: Protocol, conditions: Sequence[Condition]) -> list[str]:
    """Every way the protocol's contrasts do not fit its matrix, each with its JSON path."""
    if p.contrasts is None:
        return []
    family = p.contrasts.family
    problems: list[str] = []
    first: dict[str, int] = {}
    for i, contrast in enumerate(family):
        where = f"$.contrasts.family[{i}]"
        if first.setdefault(contrast.id, i) != i:
            problems.append(f"duplicate contrast id {contrast.id!r} @ {where}.id")
        problems += _contrast_problems(p, contrast, conditions, where)
        counted = len(family) if p.contrasts.multiplicity == "holm" else 1
        problems += _interval_problems(contrast, counted, f"{where}.interval")
    if p.contrasts.multiplicity == "none" and not (len(family) == 1 and family[0].primary):
        problems.append(
            "multiplicity none is only for a family of one contrast declared primary "
            "@ $.contrasts.multiplicity"
        )
    if p.contrasts.multiplicity == "holm" and len({c.level for c in family}) > 1:
        problems.append(
            "Holm controls one family-wise error rate: every contrast of the family takes the "
            "same level @ $.contrasts.family"
        )
    return problems
