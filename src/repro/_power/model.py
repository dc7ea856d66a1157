"""The plan as data: ``repro protocol power``'s answer, contrast by contrast and at each alpha
(its text is :mod:`repro._present.power`'s, its JSON the plan unstructured)."""

from __future__ import annotations

from typing import Literal

from attrs import frozen

from repro._power.pilot import PilotEstimate, PlannedSample
from repro._power.sizing import Sidedness


@frozen
class AtLevel:
    """The test of one contrast at one alpha, at the protocol's runs per condition. A t test's
    design (``se``, ``df``) and the noncentrality at the target power (None for a rate); the
    MDE at the target power, ``difference`` the true ``a - b`` (positive favouring ``a``) at
    the MDE (the null boundary plus the MDE), and ``power_at_mde``, at or above the target. A
    rate's MDE is None when even the largest effect its held value allows falls short: its
    power is then ``largest_power``. ``method`` says how each power is computed:
    ``noncentral-t``, or ``exact`` (a rate's, by enumeration). With an effect: its power here,
    and the runs per condition needed among those searched (``runs_searched``: up to
    ``PowerPlan.max_runs``, or for a rate up to the exact enumeration's limit; None: none of
    them reaches the target)."""

    alpha: float
    se: float | None
    df: float | None
    noncentrality: float | None
    mde: float | None
    difference: float | None
    power_at_effect: float | None = None
    runs_needed: int | None = None
    method: str = "noncentral-t"
    power_at_mde: float | None = None
    largest_power: float | None = None
    runs_searched: int | None = None


@frozen
class ConditionRef:
    """A condition of the protocol, by its ID and as a reader names it."""

    id: str
    label: str


@frozen
class ContrastPower:
    """One contrast's power plan: as declared (``sided`` and ``null``, the null boundary, as
    its test takes them; ``outcome`` what it compares, as contrasts.json names it, and
    ``test`` the test that will decide it), its conditions in the protocol, the pilot's
    estimates, the planned sample, and the test at the contrast's alpha (``unadjusted``) and,
    under Holm over a family of m > 1, at Bonferroni's ``alpha / m`` (``bonferroni``, the
    conservative bound). A rate's ``largest_effect`` is the largest difference of rates the
    pilot's held value allows."""

    id: str
    direction: str
    pairing: str
    better: str
    margin: float
    level: float
    primary: bool
    sided: Sidedness
    null: float
    a: tuple[ConditionRef, ...]
    b: tuple[ConditionRef, ...]
    pilot: PilotEstimate
    planned: PlannedSample
    unadjusted: AtLevel
    bonferroni: AtLevel | None
    outcome: str = "measure"
    test: str = "paired-t"
    largest_effect: float | None = None
    #: The test contrasts.json will name when it is not ``test``: a contrast that declares a
    #: seeded bootstrap (``paired-bootstrap``, ``unpaired-bootstrap``) is planned as its t
    #: analogue, ``test``.
    decided_by: str | None = None


@frozen
class PowerPlan:
    """``repro protocol power``'s answer (``schema`` names its form): the protocol (its frozen
    sha256, runs per condition and family), the pilot (its bundle sha256, protocol sha256 and
    runs per condition), the power asked, the effect (None without ``--effect``), the most runs
    per condition a protocol of these conditions may seal, every contrast's plan, and what was
    assumed."""

    schema: Literal["repro.power/1"]
    protocol_id: str
    protocol_sha256: str
    runs_per_condition: int
    multiplicity: str
    family_size: int
    pilot_bundle_sha256: str
    pilot_protocol_sha256: str
    pilot_runs_per_condition: int
    power: float
    effect: float | None
    max_runs: int
    contrasts: tuple[ContrastPower, ...]
    assumptions: tuple[str, ...]


def figure(x: float) -> str:
    """A figure of the plan as its text and its refusals give it: six significant digits."""
    return f"{x:.6g}"


def test_sides(better: str, a: int, b: int) -> tuple[int, int]:
    """``a``'s and ``b``'s figures in the order a rate's test takes its groups, and back:
    ``b``'s first when lower is better (a passing less often is a doing better; the contrasts'
    rule 2)."""
    return (a, b) if better == "higher" else (b, a)


def what_counts(outcome: str, plural: bool = False) -> str:
    """What a run does to count, for a rate contrast's ``outcome`` (contrasts.json's name):
    pass the check, or fall in the category."""
    kind, name = outcome.split(":", 1)
    if kind == "check":
        return f"{'pass' if plural else 'passes'} check {name!r}"
    return f"{'fall' if plural else 'falls'} in category {name!r}"
