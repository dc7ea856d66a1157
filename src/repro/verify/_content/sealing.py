"""The plan re-sealed and compared with the seal and each partition, the bounds on the plan
and the derivations it asks for, and the tally of the whole plan: the partitions' tallies added
up, or everything read again and tallied together."""

from __future__ import annotations

from collections.abc import Iterator

from repro import _layout as layout
from repro import _plan as plan
from repro._derive.tally import Attempt, RunTally, merge, tally
from repro._json.serde import to_bytes
from repro._protocol.rules import check_consistency
from repro._protocol.work import planned_conditions, work_over
from repro.errors import BadInput
from repro.models import FrozenProtocol, Ledger, Partition, PartitionRef, Protocol, Seal, Source
from repro.verify._content.compare import compare
from repro.verify._content.records import PartitionRuns, RecordChecks, read_attempts
from repro.verify._findings import Finding
from repro.verify._limits import raise_hint
from repro.verify._reader import BundleReader


def whole_plan_tally(
    read: BundleReader,
    kept: list[PartitionRuns],
    max_attempts: int,
    checks: RecordChecks,
) -> RunTally | None:
    """The tally of all partitions and runs files together, read again: for a plan whose
    partitions' tallies may not add up to it. None when a file no longer reads as it did (which
    is named)."""
    with read.repeating():
        parts = [read.json(k.file, "partition", Partition) for k in kept]
        attempts: list[Attempt] = []
        for k in kept:
            got = read_attempts(read, k.runs_file, None, None)
            if got is None:
                return None
            attempts += got[0]
    if None in parts:
        return None
    parts_read = [p for p in parts if p is not None]
    return tally(parts_read, attempts, max_attempts, checks.contracts, checks.scenarios)


class Resealing:
    """The plan re-sealed one partition at a time while the partitions' jobs run, so that the
    verifier does it while it waits for them: a partition is made only once the partitions read
    hold as many entries as it and those made before it (the bound of ``plan-limit``, which
    comes later), and only of a protocol that keeps its consistency rules. What it made is used
    only while each partition is the one read (:func:`_reseal` makes the rest, and all of them
    again, naming the differences, when one differs or the making raised)."""

    def __init__(self, protocol: Protocol, max_work: int) -> None:
        self._per = protocol.runs_per_condition
        self.refs: list[PartitionRef] = []
        self._made: Iterator[Partition] = iter(())
        self._entries = self._read = 0
        self.usable = True
        try:
            check_consistency(protocol, max_work)
            self._made = plan.partitions(protocol)
        except Exception:  # named, or raised again, where the verifier checks it
            self.usable = False

    def advance(self, kept: list[PartitionRuns]) -> None:
        """Make the partitions the entries read so far allow (``kept``: those read)."""
        self._read += kept[-1].entries if kept else 0
        while self.usable and self._entries + self._per <= self._read:
            try:
                expected = next(self._made, None)
                if expected is None:
                    return
                ref = plan.partition_ref(expected)
            except Exception:  # raised again where _reseal makes it
                self.usable = False
                return
            index = len(self.refs)
            if index >= len(kept) or ref.sha256 != kept[index].sha256:
                self.usable = False
                return
            self.refs.append(ref)
            self._entries += len(expected.entries)
            del expected

    def rest(self) -> Iterator[Partition]:
        """The partitions not made yet."""
        return self._made


def _reseal(
    read: BundleReader,
    protocol: Protocol,
    protocol_sha256: str,
    sources: tuple[Source, ...],
    kept: list[PartitionRuns],
    seal: Seal,
    resealing: Resealing | None = None,
) -> list[PartitionRef]:
    """Re-seal the plan one partition at a time and compare the seal, then each partition, with
    its re-derivation; a partition that differs is read again to name the differences. Returns
    the re-derived partitions' references. The first partitions come from ``resealing`` where
    it made them, each the one read."""
    refs: list[PartitionRef] = []
    made: Iterator[Partition] = plan.partitions(protocol)
    if resealing is not None and resealing.usable:
        refs, made = list(resealing.refs), resealing.rest()
    partition_findings: list[Finding] = []
    for index, expected in enumerate(made, start=len(refs)):
        refs.append(plan.partition_ref(expected))
        if index < len(kept) and refs[-1].sha256 != kept[index].sha256:
            with read.repeating():
                part = read.json(kept[index].file, "partition", Partition)
            if part is not None:
                found = to_bytes(part)
                compare(layout.plan_file(part.id), expected, found, partition_findings, part)
                del part
        # Let this partition go before the next one is made.
        del expected
    resealed = plan.seal_record(protocol, protocol_sha256, sources, tuple(refs))
    found_seal = read.raw(layout.SEAL)
    compare(layout.SEAL, resealed, found_seal, read.findings, seal)
    read.findings.extend(partition_findings)
    return refs


def seal_partitions_problem(protocol: Protocol, seal: Seal, read: BundleReader) -> Finding | None:
    """A seal that names more partitions than the protocol plans conditions (one partition
    each), or than the bundle holds files (each partition has its own): then no partition is
    read, since reading them would cost per partition what the seal declares, not what the
    bundle holds."""
    most = min(planned_conditions(protocol), len(read.files))
    count = len(seal.partitions)
    if count <= most:
        return None
    return Finding(
        "seal-partitions",
        layout.SEAL,
        "the seal names more partitions than the protocol plans conditions or the bundle "
        "holds files: no partition read",
        f"<= {most} partitions",
        f"{count} partitions",
    )


def plan_problem(protocol: Protocol, kept: list[PartitionRuns], max_work: int) -> Finding | None:
    """A protocol that plans more slots than the sealed partitions hold, asks more work of the
    derivations than ``max_work``, or breaks the protocol's consistency rules: then nothing is
    re-derived."""
    planned = planned_conditions(protocol) * protocol.runs_per_condition
    entries = sum(k.entries for k in kept)
    if planned > entries:
        # Expanding the plan costs as much as the slots it has; bound that by what was read.
        return Finding(
            "plan-limit",
            layout.PROTOCOL,
            "the protocol plans more slots than the sealed partitions hold: not re-derived",
            f"{entries} slots",
            f"{planned} slots",
        )
    over = _work_over(protocol, max_work)
    if over is not None:
        return over
    try:
        check_consistency(protocol, max_work)
    except BadInput as exc:
        return Finding(
            "protocol-inconsistent",
            layout.PROTOCOL,
            "protocol consistency",
            "consistent",
            str(exc),
        )
    return None


def plan_tally(
    read: BundleReader,
    fp: FrozenProtocol,
    seal: Seal,
    ledger: Ledger,
    kept: list[PartitionRuns],
    checks: RecordChecks,
    resealing: Resealing | None = None,
) -> RunTally | None:
    """Re-seal the plan, and tally the runs of the whole plan: the partitions' tallies added up
    when every partition is the one the protocol seals and every record is in its own
    partition's runs file with the attempt ID its slot and number give (then no slot and no
    attempt ID is in two partitions); otherwise (a changed bundle) everything read again and
    tallied together."""
    refs = _reseal(read, fp.protocol, fp.sha256, ledger.sources, kept, seal, resealing)
    sealed = len(refs) == len(kept) and all(
        ref.sha256 == k.sha256 and k.contained for ref, k in zip(refs, kept, strict=True)
    )
    if sealed:
        return merge([k.tally for k in kept])
    return whole_plan_tally(read, kept, fp.protocol.retry.max_attempts, checks)


def _work_over(protocol: Protocol, limit: int) -> Finding | None:
    """The finding for a protocol whose derivations would take more than ``limit``
    (:func:`repro._protocol.work.work_over`, the bound the study's rules apply), naming the part
    that asks the most; None within it."""
    over = work_over(protocol, limit)
    if over is None:
        return None
    total, largest = over
    return Finding(
        "derivation-work-limit",
        layout.PROTOCOL,
        "re-deriving the protocol's statistics would take more work than the limit "
        f"max_derivation_work (the most @ $.protocol{largest[1:]}): not re-derived; "
        + raise_hint("max_derivation_work"),
        f"<= {limit}",
        str(total),
    )


def resamples_over(protocol: Protocol, limit: int) -> list[Finding]:
    """Each bootstrap the protocol asks for (its intervals', its contrasts', that of rliable's
    aggregates) past ``limit`` resamples: then nothing is re-derived."""
    over = []
    interval, rl = protocol.interval, protocol.rl
    asked = [interval.resamples] if interval.method == "bootstrap" else []
    asked += [rl.bootstrap.resamples] if rl is not None else []
    if any(n > limit for n in asked):
        over.append(
            Finding(
                "resamples-limit",
                layout.PROTOCOL,
                "bootstrap resamples over the limit max_resamples: aggregates not re-derived",
                f"<= {limit}",
                str(max(asked)),
            )
        )
    family = () if protocol.contrasts is None else protocol.contrasts.family
    for i, contrast in enumerate(family):
        spec = contrast.interval
        if spec is not None and spec.resamples is not None and spec.resamples > limit:
            over.append(
                Finding(
                    "resamples-limit",
                    layout.PROTOCOL,
                    "bootstrap resamples over the limit max_resamples @ "
                    f"$.protocol.contrasts.family[{i}].interval.resamples: contrasts not "
                    "re-derived",
                    f"<= {limit}",
                    str(spec.resamples),
                )
            )
    return over
