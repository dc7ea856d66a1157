"""Derivations: pure functions of a bundle's recorded files, which ``repro study`` runs to write the
derived files and ``repro verify`` runs again to check them. One module per derived file, plus
the derivation driver that runs them all together (:mod:`~repro.derive.derivation`): the tally
of the runs and their validity (:mod:`~repro.derive.tally`, :mod:`~repro.derive.validity`),
rl-aggregates.json (:mod:`~repro.derive.rl_aggregates`), aggregates.json
(:mod:`~repro.derive.aggregates`), contrasts.json (:mod:`~repro.derive.contrasts`), the source
ledger (:mod:`~repro.derive.ledger`, checked against the ledger's facts by
:mod:`~repro.derive.facts`), tiers (:mod:`~repro.derive.tiers`), the reproduction class
(:mod:`~repro.derive.reproduction`), scores and gates (:mod:`~repro.derive.scoring`), the report
(:mod:`~repro.derive.report`), the RO-Crate (:mod:`~repro.derive.crate`), scenario versions
(:mod:`~repro.derive.scenarios`) and an audit's sample (:mod:`~repro.derive.audit`). The
statistics they compute by (estimators, intervals, tests, Holm, the bootstrap, rliable's
aggregates) are :mod:`repro.stats`'s.

What is not a derived file lives in the room that says what it holds: the figures model every
view reads (:mod:`repro.figures`), the disclosure scan (:mod:`repro.disclosure`), the
protocol's pins against the ledger's sources (:mod:`repro.protocol.pins`), and power planning
before a study runs (:mod:`repro.power`).

The names below load on first use: a worker process, which needs only the validity rules,
does not import every derivation and the report with them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from repro._lazy import names_on_first_use

if TYPE_CHECKING:
    from repro.derive.aggregates import aggregates
    from repro.derive.derivation import Derived, derive, scores, tally_partitions, tally_records
    from repro.derive.ledger import source_ledger

__all__ = [
    "Derived",
    "aggregates",
    "derive",
    "scores",
    "source_ledger",
    "tally_partitions",
    "tally_records",
]

_WHERE: dict[str, str] = {
    "Derived": "derivation",
    "aggregates": "aggregates",
    "derive": "derivation",
    "scores": "derivation",
    "source_ledger": "ledger",
    "tally_partitions": "derivation",
    "tally_records": "derivation",
}

__getattr__ = names_on_first_use(__name__, _WHERE)
