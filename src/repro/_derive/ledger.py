"""source-ledger.json: the facts gathered at run time (adapter, sources, contracts) with the losses
the tally gives."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from repro._derive.tally import RunTally
from repro._json import canonical
from repro.models import (
    FrozenProtocol,
    Ledger,
    Source,
)

__all__ = ["contract_digests", "contract_sha256", "source_differences", "source_ledger"]


def contract_sha256(facts: dict[str, object]) -> str:
    """Digest of one condition's contract facts (as the ledger keeps them), as each run records
    it."""
    return canonical.sha256_hex(canonical.dumps(facts))


def contract_digests(ledger: Ledger) -> Mapping[str, str]:
    """The contract digest each run of a condition must record, by condition."""
    return {c: contract_sha256(facts) for c, facts in ledger.contracts.items()}


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


def _describe(source: Source) -> str:
    pin = f"version {source.version}" if source.sha256 is None else f"sha256 {source.sha256}"
    return f"{source.kind} {source.name} {pin}"


def source_differences(
    pinned: Sequence[Source],
    other: Sequence[Source],
    sides: tuple[str, str] = ("in the bundle", "here"),
) -> list[str]:
    """Each source whose pin differs between two sets of pins (a bundle's ledger and this
    machine's, or two bundles'), by its role (``policy energy``, ``environment CartPole-v1``,
    ``harness``, ...), with both pins, each side named by ``sides``."""
    old = {source.role: source for source in pinned}
    new = {source.role: source for source in other}
    out = []
    for role in [*old, *(role for role in new if role not in old)]:
        a, b = old.get(role), new.get(role)
        if a == b:
            continue
        was = "not pinned" if a is None else _describe(a)
        now = "not pinned" if b is None else _describe(b)
        out.append(f"{role}: {was} {sides[0]}, {now} {sides[1]}")
    return out
