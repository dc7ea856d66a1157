"""source-ledger.json: the facts gathered at run time (adapter, sources, contracts) with the losses
the tally gives."""

from __future__ import annotations

from repro.derive.tally import RunTally
from repro.models import (
    FrozenProtocol,
    Ledger,
)

__all__ = ["source_ledger"]


def source_ledger(frozen_protocol: FrozenProtocol, runs: RunTally, facts: Ledger) -> Ledger:
    """source-ledger.json: the facts gathered at run time (adapter, sources, contracts) with the
    citation and disagreements of the protocol and the losses of the runs. The study writes it
    before :func:`derive`, whose disclosure tier reads its bytes."""
    p = frozen_protocol.protocol
    return Ledger(
        schema="repro.source-ledger/1",
        protocol_sha256=frozen_protocol.sha256,
        adapter=facts.adapter,
        sources=facts.sources,
        contracts=facts.contracts,
        citation=p.published.citation if p.published else None,
        disagreements=p.disagreements,
        losses=runs.losses,
    )
