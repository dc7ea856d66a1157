"""A continued study's account (``data/continuation.json``) checked against the bundle's bytes:
the digests of its runs and times files as verify read them, and the run records it tallied of
each partition, by the rule the study applied to it
(:func:`repro._derive.continuation.continuation_problems`); each problem a
``continuation-account`` finding."""

from __future__ import annotations

from collections.abc import Sequence

from repro import _layout as layout
from repro._derive.continuation import continuation_problems
from repro._plan.streams import stream_spacing
from repro.models import Continuation, Protocol, Seal
from repro.verify._content.records import PartitionRuns
from repro.verify._findings import Finding
from repro.verify._reader import BundleReader

__all__ = ["account_problems"]


def account_problems(
    read: BundleReader,
    continuation: Continuation,
    protocol: Protocol,
    seal: Seal,
    kept: Sequence[PartitionRuns],
) -> list[str]:
    """Every way the account disagrees with the bundle of ``protocol``, each also named as a
    ``continuation-account`` finding; ``kept`` is what verify kept of each sealed partition
    (its runs file's records tallied)."""
    every = stream_spacing(protocol)
    digests = {}
    for ref in seal.partitions:
        for name in layout.run_files(ref.id, every is not None):
            digest = read.sha256(name) if name in read.files else None
            if digest is not None:
                digests[name] = digest
    attempts = {k.id: k.tally.attempts for k in kept}
    problems = continuation_problems(continuation, seal, digests, attempts, every)
    read.findings.extend(
        Finding(
            "continuation-account",
            layout.CONTINUATION,
            f"the continuation's account disagrees with the bundle: {problem}",
            "an account of the bundle's own partitions and files",
            problem.split(":", 1)[0],
        )
        for problem in problems
    )
    return problems
