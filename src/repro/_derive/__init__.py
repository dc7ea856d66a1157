"""Derivations: pure functions of a bundle's recorded files, which ``repro study`` runs to write the
derived files and ``repro verify`` runs again to check them. One module per derived file, plus
the derivation driver that runs them all together (:mod:`~repro._derive.derivation`): the tally
of the runs and their validity (:mod:`~repro._derive.tally`, :mod:`~repro._derive.validity`),
rl-aggregates.json (:mod:`~repro._derive.rl_aggregates`), aggregates.json
(:mod:`~repro._derive.aggregates`), contrasts.json (:mod:`~repro._derive.contrasts`), the source
ledger (:mod:`~repro._derive.ledger`, checked against the ledger's facts by
:mod:`~repro._derive.facts`), tiers (:mod:`~repro._derive.tiers`), the reproduction class
(:mod:`~repro._derive.reproduction`), scores and gates (:mod:`~repro._derive.scoring`), the report
(:mod:`~repro._derive.report`), the RO-Crate (:mod:`~repro._derive.crate`), scenario versions
(:mod:`~repro._derive.scenarios`) and an audit's sample (:mod:`~repro._derive.audit`). The
statistics they compute by (estimators, intervals, tests, Holm, the bootstrap, rliable's
aggregates) are :mod:`repro._stats`'s.

What is not a derived file lives in the room that says what it holds: the figures model every
view reads (:mod:`repro._figures`), the disclosure scan (:mod:`repro._disclosure`), the
protocol's pins against the ledger's sources (:mod:`repro._protocol.pins`), and power planning
before a study runs (:mod:`repro._power`).

The names below load on first use: a worker process, which needs only the validity rules,
does not import every derivation and the report with them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from repro._lazy import names_on_first_use

if TYPE_CHECKING:
    from repro._derive.aggregates import aggregates
    from repro._derive.derivation import Derived, derive, scores, tally_partitions, tally_records
    from repro._derive.ledger import source_ledger

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
