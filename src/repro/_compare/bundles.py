"""``repro compare BASELINE CANDIDATE``: two bundles of one protocol family, both verified first.

For a scored protocol it reports the candidate's regressions against the baseline
(:func:`repro._compare.scores.compare_scores`): the scores it reads are those ``repro verify`` has
just re-derived from each bundle's runs and found equal to what the bundle stores. For any
protocol it compares the two bundles run by run (:func:`repro._compare.scores.compare_runs`): two
backends of one protocol (two simulator implementations, say) with per-run seeds should agree
slot by slot, and the comparison says in which respects they do.

One family: the same protocol ``id`` and the same conditions (factor levels and participants).
The protocols may differ elsewhere (an adapter, a release option), which is what is compared:
every pinned source whose pin differs between the two ledgers is named (a policy's sha256, a
release's tree), and when the two sealed plans are the same (same slots, seeds and order, so
that each slot's runs face the same episode) each condition's paired difference of the measure,
candidate less baseline, with its t interval at the protocol's level
(:func:`paired_differences`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from attrs import frozen

from repro._compare.scores import (
    AspectComparison,
    Comparison,
    RunComparison,
    compare_runs,
    compare_scores,
)
from repro._derive.contrasts import paired_t
from repro._derive.ledger import source_differences
from repro._json.serde import unstructure
from repro._plan.sealing import conditions_of
from repro._present.publishing import load_verified
from repro.errors import BadInput, NotVerified, Refused
from repro.models import Contrast, FrozenProtocol, Group, RunRecord
from repro.verify import VerifiedBundle

__all__ = ["TIER_ASPECTS", "CompareResult", "ConditionDifference", "compare", "paired_differences"]

#: The equivalence tier each compared aspect of the runs bears on: which runs ended how, what
#: was observed of the simulator's states, and what the runs measured.
TIER_ASPECTS: dict[str, tuple[str, ...]] = {
    "execution-control": ("status", "steps"),
    "state-observation": ("trace_sha256",),
    "outcome-evaluation": ("measure", "step_rewards", "outcome"),
}


@frozen
class ConditionDifference:
    """One condition's paired difference of the measure between two bundles whose slots pair:
    candidate less baseline over the slots valid in both, with its two-sided t interval and
    p-value (None with fewer than two pairs)."""

    condition: str
    pairs: int
    difference: float | None
    low: float | None
    high: float | None
    p_value: float | None


@frozen
class CompareResult:
    """What ``repro compare`` found: the score comparison (scored protocols), the run-by-run
    comparison, the pinned sources that differ, and, when the sealed plans are the same, each
    condition's paired difference (else why there is none)."""

    baseline: str
    candidate: str
    scores: Comparison | None
    runs: RunComparison
    sources: tuple[str, ...] = ()
    differences: tuple[ConditionDifference, ...] = ()
    unpaired_because: str | None = None

    @property
    def regression(self) -> bool:
        """Whether the candidate regressed against the baseline (scored protocols)."""
        return self.scores is not None and self.scores.regression

    def text(self) -> str:
        """The report for people."""
        lines = [f"baseline:  {self.baseline}", f"candidate: {self.candidate}"]
        if self.scores is not None:
            lines += ["", self.scores.text()]
        lines += ["", self.runs.text(), *self.tier_lines(), ""]
        lines += [f"source differs: {line}" for line in self.sources] or [
            "sources: every pinned source is the same in both"
        ]
        if self.unpaired_because is not None:
            lines.append(f"paired differences: none ({self.unpaired_because})")
        for d in self.differences:
            if d.difference is None or d.low is None or d.high is None:
                lines.append(f"paired difference {d.condition}: undefined ({d.pairs} pair(s))")
            else:
                p = "n/a" if d.p_value is None else f"{d.p_value:.3g}"
                lines.append(
                    f"paired difference {d.condition}: candidate - baseline = "
                    f"{d.difference:.6g} [{d.low:.6g}, {d.high:.6g}] over {d.pairs} pairs (p {p})"
                )
        return "\n".join(lines)

    def tier_lines(self) -> list[str]:
        """Per tier, whether the runs both bundles have agree in every aspect it bears on."""
        by_name: dict[str, AspectComparison] = {a.name: a for a in self.runs.aspects}
        matched = self.runs.matched
        lines = []
        for tier, names in TIER_ASPECTS.items():
            aspects = [by_name[n] for n in names]
            if not any(a.observed for a in aspects):
                verdict = "not observed in either bundle"
            elif all(a.equal == matched for a in aspects):
                verdict = "equal"
            else:
                verdict = "differs"
            counts = ", ".join(
                f"{a.name} {a.equal}/{matched}" if a.observed else f"{a.name} absent"
                for a in aspects
            )
            lines.append(f"tier {tier}: {verdict} ({counts})")
        return lines

    def as_dict(self) -> dict[str, Any]:
        """The report as plain JSON data."""
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "regression": self.regression,
            "scores": unstructure(self.scores) if self.scores is not None else None,
            "runs": unstructure(self.runs),
            "tiers": self.tier_lines(),
            "sources": list(self.sources),
            "paired_differences": [unstructure(d) for d in self.differences],
            "unpaired_because": self.unpaired_because,
        }


def _family(baseline: FrozenProtocol, candidate: FrozenProtocol) -> None:
    a, b = baseline.protocol, candidate.protocol
    if a.id != b.id:
        raise BadInput(f"not one protocol family: protocol id {a.id!r} vs {b.id!r}")
    if conditions_of(a) != conditions_of(b):
        raise BadInput(f"not one protocol family: the conditions of {a.id!r} differ")


def _measured(
    bundle: VerifiedBundle, measures: dict[str, list[float]], by_slot: dict[str, float]
) -> Iterator[RunRecord]:
    """The run records of ``bundle``, as verify's reader reads them again, adding each valid
    run's measure to ``measures`` (by condition) and ``by_slot`` as it passes, so that one
    reading serves every comparison. A slot's valid attempt is its last (retries end at the
    first valid one)."""
    for r in bundle.all_records():
        if r.status == "valid" and r.measure is not None:
            measures.setdefault(r.condition, []).append(r.measure)
            by_slot[r.slot] = r.measure
        yield r


def _unpaired_because(base: VerifiedBundle, cand: VerifiedBundle) -> str | None:
    """Why the two bundles' slots do not pair, or None when their sealed plans are the same."""
    a, b = base.seal.partitions, cand.seal.partitions
    if [(r.id, r.sha256) for r in a] != [(r.id, r.sha256) for r in b]:
        return "the sealed plans differ (other seeds, slots or order), so slots do not pair"
    return None


def paired_differences(
    conditions: list[str],
    slots: dict[str, list[str]],
    base: dict[str, float],
    cand: dict[str, float],
    level: float,
) -> list[ConditionDifference]:
    """Each condition's paired difference, candidate less baseline, over its slots (in sealed
    order) valid in both bundles: the paired t of :func:`repro._derive.contrasts.paired_t`,
    two-sided at ``level``."""
    two_sided = Contrast(id="c", a=Group(), b=Group(), direction="two-sided", level=level)
    out = []
    for condition in conditions:
        both = [s for s in slots.get(condition, []) if s in base and s in cand]
        d = paired_t(two_sided, [cand[s] - base[s] for s in both])
        interval = d.interval
        out.append(
            ConditionDifference(
                condition=condition,
                pairs=len(both),
                difference=d.estimate,
                low=None if interval is None else interval.low,
                high=None if interval is None else interval.high,
                p_value=d.p_value,
            )
        )
    return out


def compare(baseline: Path, candidate: Path) -> CompareResult:
    """Verify both bundles, check they are one family, and compare them; raise
    :class:`repro.errors.Refused` naming every finding when either does not verify."""
    base, cand = load_verified(baseline), load_verified(candidate)
    _family(base.protocol, cand.protocol)
    base_measures: dict[str, list[float]] = {}
    cand_measures: dict[str, list[float]] = {}
    base_slots: dict[str, float] = {}
    cand_slots: dict[str, float] = {}
    # Reads every record of both bundles once, and gathers their measures on the way.
    try:
        runs = compare_runs(
            _measured(base, base_measures, base_slots), _measured(cand, cand_measures, cand_slots)
        )
        unpaired = _unpaired_because(base, cand)
        differences: list[ConditionDifference] = []
        if unpaired is None:
            slots = {p.condition: [e.slot for e in p.entries] for p in base.partitions()}
            level = base.protocol.protocol.interval.level
            conditions = [c.id for c in base.seal.conditions]
            differences = paired_differences(conditions, slots, base_slots, cand_slots, level)
    except NotVerified as exc:  # a file changed after its bundle verified
        raise Refused([f"{f.file}: {f.what}" for f in exc.findings]) from None
    scores = None
    if base.scores is not None and cand.scores is not None:
        scores = compare_scores(
            base.scores, cand.scores, base.protocol.protocol, base_measures, cand_measures
        )
    sources = source_differences(
        base.ledger.sources, cand.ledger.sources, ("in the baseline", "in the candidate")
    )
    return CompareResult(
        str(baseline),
        str(candidate),
        scores,
        runs,
        tuple(sources),
        tuple(differences),
        unpaired,
    )
