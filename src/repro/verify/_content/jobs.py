"""The readers of the partitions' jobs: a job reads the verifier's files with its own reader,
given what the verifier's first reads found, and hands back what it found in each stretch of
its work, which the verifier takes as if it had read it itself."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from attrs import frozen

from repro.verify._findings import Finding, Findings
from repro.verify._limits import Limits
from repro.verify._reader import BundleReader
from repro.verify._walk import Source as FileSource


def seen_of(read: BundleReader, names: Iterable[str]) -> dict[str, Any]:
    """What ``read``'s first reads found of those of ``names`` it has read."""
    seen = read.first_reads
    return {n: seen[n] for n in names if n in seen}


@frozen
class Stretch:
    """What a job's reader found in one stretch of its work: the findings it made (those
    listed, and how many it counted past the limit max_findings), the first reads it made, and
    the bytes they read."""

    findings: list[Finding]
    dropped: int
    seen: dict[str, Any]
    spent: int

    def into(self, read: BundleReader, *names: str) -> None:
        """Make ``read`` as if it had done this stretch itself."""
        read.findings.extend(self.findings)
        if isinstance(read.findings, Findings):
            read.findings.dropped += self.dropped
        read.adopt(self.seen)
        read.budget -= self.spent


class JobReader:
    """A job's own reader of the verifier's files, given what the verifier's first reads found
    of those it has read, and the byte budget it has left; :meth:`stretch` takes what it found
    since the last stretch."""

    def __init__(
        self,
        source: FileSource,
        limits: Limits,
        seen: Mapping[str, Any],
        budget: int | None = None,
    ) -> None:
        self.read = BundleReader(source, Findings(limits.max_findings), limits)
        self.read.adopt(seen)
        if budget is not None:
            self.read.budget = budget
        self._mark = (0, 0, set(self.read.first_reads), self.read.budget)

    def stretch(self) -> Stretch:
        findings = self.read.findings
        assert isinstance(findings, Findings)
        listed, dropped, seen, budget = self._mark
        got = Stretch(
            list(findings[listed:]),
            findings.dropped - dropped,
            {n: v for n, v in self.read.first_reads.items() if n not in seen},
            budget - self.read.budget,
        )
        self._mark = (len(findings), findings.dropped, set(self.read.first_reads), self.read.budget)
        return got
