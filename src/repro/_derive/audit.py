"""Which slots a replay audit re-executes, and what a clean audit says.

Pure functions of a verified bundle's identity and plan, so that anyone who audits a bundle
samples the same slots, and verify can check that an audit's attestation names the sample the
bundle's identity gives (:func:`audit_sample`)."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, TypeGuard

from attrs import frozen

from repro._json import canonical
from repro._plan.sealing import slot_ids
from repro._plan.streams import segment
from repro._stats.draws import Stream
from repro.models import Partition, Protocol

__all__ = [
    "AUDIT",
    "AUDIT_LEVEL",
    "BOUND_TOLERANCE",
    "MAX_NAMED",
    "AuditPlan",
    "audit_plan",
    "audit_population",
    "audit_sample",
    "excluded_fraction",
    "kept_after",
    "sample_problems",
    "sample_sha256",
    "statement_problems",
    "stream_stretches",
]

#: The kind of statement ``repro audit --sign`` makes.
AUDIT = "audit"
#: The confidence a clean audit's bound is stated at.
AUDIT_LEVEL = 0.95
#: Differing slots and broken links an audit statement names one by one; the rest are counted.
MAX_NAMED = 100
#: How far a statement's bound (:func:`excluded_fraction`) may lie from the one derived again,
#: relative to it: the last bits of a power computed by another platform's C library, far
#: below any difference a reader could act on (0.0495 against 0.0494999999999999...).
BOUND_TOLERANCE = 1e-12


def audit_sample(bundle_sha256: str, population: Sequence[str], n: int) -> list[str]:
    """``n`` slots of ``population`` (the slots that ran, in sealed order), chosen uniformly
    without replacement from PCG64's stream seeded with the bundle's sha256 read as an integer
    (:meth:`repro._stats.draws.Stream.choice`, which draws as NumPy's ``Generator.choice`` did,
    whatever NumPy verifies it), returned in sealed order: the same for everyone, and unknown to
    the author until the bundle is final. All of them when ``n`` is at least the population's
    size."""
    if n >= len(population):
        return list(population)
    chosen = Stream(int(bundle_sha256, 16)).choice(len(population), n)
    return [population[i] for i in sorted(chosen)]


def excluded_fraction(n: int, level: float = AUDIT_LEVEL) -> float:
    """The smallest fraction ``f`` of the population's slots that could differ from what the
    simulator gives while ``n`` sampled slots all match with probability at least
    ``1 - level``: all ``n`` match with probability at most ``(1 - f) ** n`` (sampling without
    replacement only lowers it), so a clean audit excludes every fraction at or above
    ``1 - (1 - level) ** (1 / n)`` at ``level``; for ``n = 59``, 4.95% at 95%."""
    return float(1 - (1 - level) ** (1 / n)) if n else 1.0


def audit_population(protocol: Protocol) -> list[str]:
    """The slots an audit draws from, in sealed order: every slot whose attempts ran, i.e. all
    but the protocol's declared exclusions (:func:`repro._derive.tally.runs`)."""
    excluded = {x.slot for x in protocol.exclusions}
    return [slot for slot in slot_ids(protocol) if slot not in excluded]


def sample_sha256(slots: Sequence[str]) -> str:
    """The sha256 of the drawn slots' canonical JSON list: how an audit's statement names its
    sample without listing it."""
    return hashlib.sha256(canonical.dumps(list(slots), newline=False)).hexdigest()


def sample_problems(
    protocol: Protocol, bundle_sha256: str, predicate: Mapping[str, Any]
) -> list[str]:
    """What an audit statement's predicate says of its sample that the bundle's identity and
    plan contradict: the population's size, and the sample drawn (``sample`` slots, or
    ``"all"``) by its size and :func:`sample_sha256`."""
    population = audit_population(protocol)
    requested = predicate.get("sample")
    if requested == "all":
        drawn = population
    elif isinstance(requested, int) and not isinstance(requested, bool) and requested >= 1:
        drawn = audit_sample(bundle_sha256, population, requested)
    else:
        return [f"sample is {requested!r}, neither a count of at least 1 nor 'all'"]
    expected = {
        "population": len(population),
        "sampled": len(drawn),
        "sampled_sha256": sample_sha256(drawn),
    }
    return [
        f"{key} is {predicate.get(key)!r}, the bundle's identity gives {value!r}"
        for key, value in expected.items()
        if predicate.get(key) != value
    ]


def stream_stretches(count: int, every: int | None, wanted: Sequence[int]) -> list[tuple[int, int]]:
    """The stretches of a stream-seeded partition of ``count`` slots that an audit re-executes
    to reach the slots at ``wanted`` (indices, in sealed order), each from the kept state at its
    start to the next: with a checkpoint every ``every`` slots, each wanted slot's segment
    (:func:`repro._plan.streams.segment`) once; with only the partition's first state kept
    (``every`` None, a ``repro.checkpoint/1``), one stretch from the start to the last."""
    if every is None:
        return [(0, max(wanted) + 1)]
    return sorted({segment(every, count, index) for index in wanted})


def kept_after(
    part: Partition, following: Partition | None, stop: int, every: int | None
) -> str | None:
    """The slot before which the bundle keeps the state a stretch of ``part`` ending at
    ``stop`` must end in: a later checkpoint of the partition (None between two states a
    ``repro.checkpoint/1`` does not keep), or at the partition's end the first slot of the
    ``following`` partition (None after the last)."""
    if stop < len(part.entries):
        return None if every is None else part.entries[stop].slot
    return following.entries[0].slot if following is not None and following.entries else None


@frozen
class AuditPlan:
    """What an audit of a drawn sample re-executes: every slot (in sealed order), each link it
    chains (``"c03 before c03-r0040"``: the partition, and the slot before which the kept state
    it must end in stands), and the partitions those slots are in."""

    slots: tuple[str, ...]
    links: tuple[str, ...]
    partitions: tuple[str, ...]


def audit_plan(
    partitions: Iterable[Partition],
    drawn: Collection[str],
    every: Callable[[str], int | None] | None,
) -> AuditPlan:
    """What an audit of ``drawn`` re-executes in the sealed ``partitions`` (read in sealed order,
    one ahead): in ``per-run`` seeding (``every`` None) the drawn slots alone; in ``stream``
    seeding each drawn slot's stretch (:func:`stream_stretches`, by the spacing ``every`` gives
    of a partition's checkpoint), chained to the kept state after it (:func:`kept_after`)."""
    chosen = set(drawn)
    slots: list[str] = []
    links: list[str] = []
    touched: list[str] = []
    ahead = iter(partitions)
    part = next(ahead, None)
    while part is not None:
        following = next(ahead, None)
        wanted = [j for j, e in enumerate(part.entries) if e.slot in chosen]
        if wanted:
            touched.append(part.id)
        if wanted and every is None:
            slots += [part.entries[j].slot for j in wanted]
        elif wanted and every is not None:
            spacing = every(part.id)
            for start, stop in stream_stretches(len(part.entries), spacing, wanted):
                slots += [e.slot for e in part.entries[start:stop]]
                before = kept_after(part, following, stop, spacing)
                if before is not None:
                    links.append(f"{part.id} before {before}")
        part = following
    return AuditPlan(tuple(slots), tuple(links), tuple(touched))


def _count(value: Any) -> TypeGuard[int]:
    """Whether ``value`` is a count: a whole number, not a bool, at least 0."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _named(what: str, value: Any, count: Any, among: Sequence[str], problems: list[str]) -> None:
    """A statement's list of named slots or links: distinct, each one of ``among``, in its
    order, and the first :data:`MAX_NAMED` of the ``count`` it states."""
    order = {name: i for i, name in enumerate(among)}
    if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        problems.append(f"{what} is {value!r}, not a list of names")
        return
    if any(v not in order for v in value):
        problems.append(f"{what} names what the audit did not re-execute: {value[:3]!r}")
    elif [order[v] for v in value] != sorted({order[v] for v in value}):
        problems.append(f"{what} is not distinct names in sealed order")
    if _count(count) and len(value) != min(count, MAX_NAMED):
        problems.append(
            f"{what} names {len(value)}, the count {count} gives {min(count, MAX_NAMED)}"
        )


def statement_problems(
    predicate: Mapping[str, Any],
    plan: AuditPlan,
    population: int,
    attempts: int | None,
    max_attempts: int,
) -> list[str]:
    """What an audit statement's predicate says that its own facts and the bundle contradict,
    beyond its sample (:func:`sample_problems`): the slots re-executed and links chained the
    sample gives (:func:`audit_plan`), ``identical`` exactly when nothing differs and no link
    broke, the differing slots and broken links among those re-executed and chained, the bound
    of a clean sample (:func:`excluded_fraction`, within :data:`BOUND_TOLERANCE`) at
    :data:`AUDIT_LEVEL`, and the attempts: those of the bundle's records of the re-executed
    slots (``attempts``) when every one matched, else between one and ``max_attempts`` a slot."""
    p, problems = predicate, []
    expected = {"reexecuted_slots": len(plan.slots), "chained": len(plan.links)}
    for key, value in expected.items():
        if p.get(key) != value:
            problems.append(f"{key} is {p.get(key)!r}, the sample gives {value!r}")
    differing, broken = p.get("differing"), p.get("broken")
    for key, count, most in (
        ("differing", differing, len(plan.slots)),
        ("broken", broken, len(plan.links)),
    ):
        if not (_count(count) and count <= most):
            problems.append(f"{key} is {count!r}, not a count of at most {most}")
    if p.get("identical") is not (differing == 0 and broken == 0):
        problems.append(
            f"identical is {p.get('identical')!r} with {differing!r} differing slot(s) and "
            f"{broken!r} broken link(s)"
        )
    _named("differing_slots", p.get("differing_slots"), differing, plan.slots, problems)
    _named("broken_links", p.get("broken_links"), broken, plan.links, problems)
    if p.get("level") != AUDIT_LEVEL:
        problems.append(f"level is {p.get('level')!r}, not {AUDIT_LEVEL}")
    sampled = p.get("sampled")
    if _count(sampled):
        bound = excluded_fraction(sampled) if sampled < population else None
        stated = p.get("excluded_fraction")
        if not (
            (bound is None and stated is None)
            or (
                bound is not None
                and isinstance(stated, float)
                and math.isclose(stated, bound, rel_tol=BOUND_TOLERANCE, abs_tol=0.0)
            )
        ):
            problems.append(f"excluded_fraction is {stated!r}, the sample gives {bound!r}")
    stated_attempts, slots = p.get("attempts"), len(plan.slots)
    if p.get("identical") is True and attempts is not None:
        if stated_attempts != attempts:
            problems.append(
                f"attempts is {stated_attempts!r}, the bundle's records of the re-executed "
                f"slots are {attempts}"
            )
    elif not (_count(stated_attempts) and slots <= stated_attempts <= slots * max_attempts):
        problems.append(
            f"attempts is {stated_attempts!r}, not between {slots} and {slots * max_attempts}"
        )
    return problems
