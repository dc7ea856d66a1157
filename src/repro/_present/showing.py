"""``repro show``: the derived files of a bundle, read only once the bundle verifies.

What ``show`` prints, writes as HTML or emits as JSON is someone's evidence: figures from a
tampered or unfinished bundle would look exactly as trustworthy as the real ones. So the bundle
is verified first (everything re-derived) and its files are then read with the verifier's own
strict reader (canonical JSON, schema, model): :func:`repro.verify.open_verified` hands back
what verify parsed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attrs import field, frozen

from repro._derive.continuation import continued_note
from repro._derive.derivation import run_measures
from repro._derive.facts import recorded_reading
from repro._derive.tally import LossStatus, loss_status
from repro._figures import Figures, figures
from repro._json.serde import unstructure
from repro.models import (
    Aggregates,
    ContrastsFile,
    Environment,
    FrozenProtocol,
    Ledger,
    RLAggregates,
    Scores,
    Tiers,
)
from repro.verify import VerifiedBundle, open_verified

__all__ = ["Shown", "load"]


@frozen
class Shown:
    """A verified bundle's identity and the parsed files ``repro show`` presents."""

    bundle_sha256: str
    protocol: FrozenProtocol
    aggregates: Aggregates
    tiers: Tiers
    ledger: Ledger
    scores: Scores | None
    #: When and how the study ran (environment.json), and the verified bundle whose run records
    #: the plots read (:meth:`values`); None where the files were not read from a bundle.
    environment: Environment | None = None
    verified: VerifiedBundle | None = field(default=None, eq=False, repr=False)
    _values: dict[str, tuple[float, ...]] = field(factory=dict, eq=False, repr=False)
    #: contrasts.json; None for a protocol that declares no contrasts.
    contrasts: ContrastsFile | None = None
    #: rl-aggregates.json; None for a protocol without an ``rl`` section.
    rl: RLAggregates | None = None
    #: What show says of a study continued from an interrupted one
    #: (:func:`repro._derive.continuation.continued_note`); None for any other.
    continued: str | None = None

    @property
    def recorded(self) -> str | None:
        """What show says of a study of runs made elsewhere (the ledger's ``recorded_from``,
        :func:`repro._derive.facts.recorded_reading`); None for any other."""
        recorded = self.ledger.adapter.recorded_from
        return None if recorded is None else recorded_reading(recorded)

    def values(self) -> dict[str, tuple[float, ...]] | None:
        """Each condition's valid measures (:func:`repro._derive.derivation.run_measures`), read
        from the verified bundle's run records once; None without a bundle to read."""
        v = self.verified
        if v is None:
            return None
        if not self._values:
            parts = ((part, v.records(part.id)) for part in v.partitions())
            self._values.update(run_measures(v.protocol, v.ledger, parts))
        return self._values

    def lost_as(self) -> dict[str, LossStatus]:
        """How each slot of the ledger's losses ended, by the status of its last attempt
        (:func:`repro._derive.tally.loss_status`: invalid, failed or excluded), read from the
        verified bundle's run records of the partitions that hold a loss; empty without a
        bundle to read."""
        v = self.verified
        lost = {loss.slot for loss in self.ledger.losses}
        if v is None or not lost:
            return {}
        last: dict[str, tuple[int, str]] = {}
        for part in v.partitions():
            if not lost.intersection(e.slot for e in part.entries):
                continue
            for r in v.records(part.id):
                if r.slot in lost and r.attempt >= last.get(r.slot, (0, ""))[0]:
                    last[r.slot] = (r.attempt, r.status)
        return {slot: loss_status(last[slot][1] if slot in last else None) for slot in lost}

    def as_dict(self) -> dict[str, Any]:
        """``repro show --json``: the shape of ``repro verify --json``'s success (``ok``,
        ``bundle_sha256``) plus the protocol's identity and the derived files as they are stored.
        ``scores`` is null for a protocol without scoring, ``contrasts`` for one without
        contrasts and ``rl_aggregates`` for one without an ``rl`` section, so every key is
        always present."""
        p = self.protocol
        return {
            "ok": True,
            "bundle_sha256": self.bundle_sha256,
            "protocol": {"id": p.protocol.id, "title": p.protocol.title, "sha256": p.sha256},
            "aggregates": unstructure(self.aggregates),
            "tiers": unstructure(self.tiers),
            "scores": None if self.scores is None else unstructure(self.scores),
            "contrasts": None if self.contrasts is None else unstructure(self.contrasts),
            "rl_aggregates": None if self.rl is None else unstructure(self.rl),
        }

    def figures(self, runs: bool = True) -> Figures:
        """The figures model (:mod:`repro._figures`) of these files and, with ``runs``,
        of every valid run's measure: what the PNG and the HTML page show. The terminal's
        tables need no run (``runs=False``), so plain ``repro show`` reads no run record after
        verify has."""
        return figures(self.protocol, self.aggregates, self.tiers, self.values() if runs else None)

    def html(self) -> str:
        """``repro show --html``: the page :func:`repro._present.html.render` makes of these
        files."""
        # Lazy: the page's renderer (markupsafe) only for --html.
        from repro._present.html import render

        return render(
            self.protocol,
            self.aggregates,
            self.tiers,
            self.ledger,
            self.scores,
            self.bundle_sha256,
            environment=self.environment,
            values=self.values(),
            contrasts=self.contrasts,
            rl=self.rl,
            lost_as=self.lost_as(),
            continued=self.continued,
        )


def load(bundle: Path) -> Shown:
    """Verify ``bundle`` and read what ``show`` presents (:func:`repro.verify.open_verified`).
    Raises :class:`NotVerified` with the findings when it does not verify, and
    :class:`repro.errors.BadInput` when it is not a bundle directory at all."""
    v = open_verified(bundle)
    return Shown(
        v.bundle_sha256,
        v.protocol,
        v.aggregates,
        v.tiers,
        v.ledger,
        v.scores,
        environment=v.environment,
        verified=v,
        contrasts=v.contrasts,
        rl=v.rl,
        continued=(
            None
            if v.continuation is None
            else continued_note(v.continuation, len(v.seal.partitions))
        ),
    )
