"""Derivations: pure functions of a bundle's recorded files, which ``repro study`` runs to write the
derived files and ``repro verify`` runs again to check them. One module per derived file or
figure: the tally of the runs and their validity (:mod:`~repro.derive.tally`,
:mod:`~repro.derive.validity`), statistics (:mod:`~repro.derive.stats`, and rliable's aggregates
of runs x tasks scores in :mod:`~repro.derive.rl`), rl-aggregates.json
(:mod:`~repro.derive.rl_aggregates`), aggregates.json
(:mod:`~repro.derive.aggregates`), the source ledger (:mod:`~repro.derive.ledger`), tiers
(:mod:`~repro.derive.tiers`), the reproduction class (:mod:`~repro.derive.reproduction`), scores
and gates (:mod:`~repro.derive.scoring`), the figures by condition that every view of a bundle
shows (:mod:`~repro.derive.figures`), the report (:mod:`~repro.derive.report`), the RO-Crate
(:mod:`~repro.derive.crate`), the disclosure scan (:mod:`~repro.disclosure`), scenario
versions (:mod:`~repro.derive.scenarios`), the protocol's pins against the ledger's sources
(:mod:`~repro.derive.pins`, a rule, not a derived file), and all of them together
(:mod:`~repro.derive.derivation`). :mod:`~repro.derive.inference` holds the comparisons of two
groups of runs that pre-registered contrasts build on; :mod:`repro.power` plans their power
from a pilot bundle before a study runs (``repro protocol power``; no bundle file).

The names below load on first use: a worker process, which needs only the disclosure scan and
the validity rules, does not import every derivation, the report and the figures with them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from repro._lazy import names_on_first_use

if TYPE_CHECKING:
    from repro.derive.aggregates import aggregates
    from repro.derive.derivation import Derived, derive, scores, tally_partitions, tally_records
    from repro.derive.figures import FigureRow, Figures, figures
    from repro.derive.ledger import source_ledger

__all__ = [
    "Derived",
    "FigureRow",
    "Figures",
    "aggregates",
    "derive",
    "figures",
    "scores",
    "source_ledger",
    "tally_partitions",
    "tally_records",
]

_WHERE: dict[str, str] = {
    "Derived": "derivation",
    "FigureRow": "figures",
    "Figures": "figures",
    "aggregates": "aggregates",
    "derive": "derivation",
    "figures": "figures",
    "scores": "derivation",
    "source_ledger": "ledger",
    "tally_partitions": "derivation",
    "tally_records": "derivation",
}

__getattr__ = names_on_first_use(__name__, _WHERE)
