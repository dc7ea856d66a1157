"""``repro compare BASELINE CANDIDATE``: two bundles of one protocol family, both verified first.

For a scored protocol it reports the candidate's regressions against the baseline
(:func:`repro.compare.scores.compare_scores`): the scores it reads are those ``repro verify`` has
just re-derived from each bundle's runs and found equal to what the bundle stores. For any
protocol it compares the two bundles run by run (:func:`repro.compare.scores.compare_runs`): two
backends of one protocol (two simulator implementations, say) with per-run seeds should agree
slot by slot, and the comparison says in which respects they do.

One family: the same protocol ``id`` and the same conditions (factor levels and participants).
The protocols may differ elsewhere (an adapter, a release option), which is what is compared.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from attrs import frozen

from repro.compare.scores import (
    AspectComparison,
    Comparison,
    RunComparison,
    compare_runs,
    compare_scores,
)
from repro.errors import BadInput, NotVerified, Refused
from repro.json.serde import unstructure
from repro.models import FrozenProtocol, RunRecord
from repro.plan.sealing import conditions_of
from repro.present.publishing import load_verified
from repro.verify import VerifiedBundle

__all__ = ["TIER_ASPECTS", "CompareResult", "compare"]

#: The equivalence tier each compared aspect of the runs bears on: which runs ended how, what
#: was observed of the simulator's states, and what the runs measured.
TIER_ASPECTS: dict[str, tuple[str, ...]] = {
    "execution-control": ("status", "steps"),
    "state-observation": ("trace_sha256",),
    "outcome-evaluation": ("measure", "step_rewards", "outcome"),
}


@frozen
class CompareResult:
    """What ``repro compare`` found: the score comparison (scored protocols) and the run-by-run
    comparison."""

    baseline: str
    candidate: str
    scores: Comparison | None
    runs: RunComparison

    @property
    def regression(self) -> bool:
        """Whether the candidate regressed against the baseline (scored protocols)."""
        return self.scores is not None and self.scores.regression

    def text(self) -> str:
        """The report for people."""
        lines = [f"baseline:  {self.baseline}", f"candidate: {self.candidate}"]
        if self.scores is not None:
            lines += ["", self.scores.text()]
        lines += ["", self.runs.text(), *self.tier_lines()]
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
        }


def _family(baseline: FrozenProtocol, candidate: FrozenProtocol) -> None:
    a, b = baseline.protocol, candidate.protocol
    if a.id != b.id:
        raise BadInput(f"not one protocol family: protocol id {a.id!r} vs {b.id!r}")
    if conditions_of(a) != conditions_of(b):
        raise BadInput(f"not one protocol family: the conditions of {a.id!r} differ")


def _measured(bundle: VerifiedBundle, measures: dict[str, list[float]]) -> Iterator[RunRecord]:
    """The run records of ``bundle``, as verify's reader reads them again, adding each valid
    run's measure to ``measures`` (by condition) as it passes, so that one reading serves both
    comparisons."""
    for r in bundle.all_records():
        if r.status == "valid" and r.measure is not None:
            measures.setdefault(r.condition, []).append(r.measure)
        yield r


def compare(baseline: Path, candidate: Path) -> CompareResult:
    """Verify both bundles, check they are one family, and compare them; raise
    :class:`repro.errors.Refused` naming every finding when either does not verify."""
    base, cand = load_verified(baseline), load_verified(candidate)
    _family(base.protocol, cand.protocol)
    base_measures: dict[str, list[float]] = {}
    cand_measures: dict[str, list[float]] = {}
    # Reads every record of both bundles once, and gathers their measures on the way.
    try:
        runs = compare_runs(_measured(base, base_measures), _measured(cand, cand_measures))
    except NotVerified as exc:  # a runs file changed after its bundle verified
        raise Refused([f"{f.file}: {f.what}" for f in exc.findings]) from None
    scores = None
    if base.scores is not None and cand.scores is not None:
        scores = compare_scores(
            base.scores, cand.scores, base.protocol.protocol, base_measures, cand_measures
        )
    return CompareResult(str(baseline), str(candidate), scores, runs)
