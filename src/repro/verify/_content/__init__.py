"""Stage 3, content: the bundle's files parsed strictly, the joins of plan and runs, every
record under the validity rules, and the re-derivation of every derived file with the
derivations ``repro study`` ran (:mod:`repro._derive`), compared byte for byte. A module per
check: :mod:`.stored` (the fixed files), :mod:`.partitions` (each partition read by a job, with
:mod:`.records`, :mod:`.checkpoints` and :mod:`.crate`), :mod:`.sealing` (the plan re-sealed
and the whole tally), :mod:`.compare` (the derived files compared again)."""

from __future__ import annotations

from functools import partial

from attrs import evolve

from repro import _layout as layout
from repro._derive.derivation import Derived, Figures, figures_of, judgements
from repro._derive.report import REPORT_VERSION
from repro._derive.scenarios import by_condition
from repro._derive.tally import RunTally
from repro._derive.tiers import contract_digests
from repro._disclosure import FileHits
from repro.models import Continuation, FrozenProtocol, Ledger, Seal, Tiers
from repro.verify._content.compare import compare_derived, report_version
from repro.verify._content.continued import account_problems
from repro.verify._content.partitions import read_partitions
from repro.verify._content.recorded import carried_rows
from repro.verify._content.records import RecordChecks, join_findings
from repro.verify._content.sealing import (
    Resealing,
    plan_problem,
    plan_tally,
    resamples_over,
    seal_partitions_problem,
)
from repro.verify._content.stored import (
    Stored,
    check_digests,
    disclosure_findings,
    fact_findings,
    pin_findings,
    read_stored,
    scan_disclosures,
)
from repro.verify._limits import Limits
from repro.verify._parallel import Jobs
from repro.verify._reader import BundleReader

__all__ = ["Stored", "check_content", "disclosure_findings"]


def check_content(read: BundleReader, limits: Limits, jobs: Jobs | None = None) -> Stored:
    """Parse every payload file, check the joins and compare each stored derivation with its
    re-derivation, adding findings to ``read.findings``; return what was parsed.

    The stages run in order, each only when the one before it left something to judge: the
    fixed files parsed; the digests; the partitions read and tallied one at a time (so that
    what is held does not grow with the runs), the crate re-derived on the way; the plan's
    size and rules; the re-sealed plan and the whole tally; the join problems and the records'
    findings; then every derivation run again and compared."""
    stored = read_stored(read)
    disclosures = scan_disclosures(read, read.findings)
    fp, seal, ledger = stored.protocol, stored.seal, stored.ledger
    if fp is None or seal is None:
        return stored
    check_digests(fp, seal, read.findings)
    protocol = fp.protocol
    too_many = seal_partitions_problem(protocol, seal, read)
    if too_many is not None:
        read.findings.append(too_many)
        return stored
    if ledger is not None:
        read.findings.extend(pin_findings(protocol, ledger))
        read.findings.extend(fact_findings(protocol, seal, ledger))
    checks = RecordChecks(
        contract_digests(ledger) if ledger is not None else {},
        by_condition(protocol, seal.conditions),
        protocol,
        ledger.adapter if ledger is not None else None,
        carried_rows(read, protocol, limits),
    )
    resealing = Resealing(protocol, limits.max_derivation_work)
    kept = read_partitions(read, stored, fp, seal, checks, jobs or Jobs(1, False), resealing)
    if kept is None or ledger is None:
        return stored
    problem = plan_problem(protocol, kept, limits.max_derivation_work)
    if problem is not None:
        read.findings.append(problem)
        return stored
    runs = plan_tally(read, fp, seal, ledger, kept, checks, resealing)
    if runs is None:
        return stored
    read.findings.extend(join_findings(runs))
    read.findings.extend(checks.findings)
    over = resamples_over(protocol, limits.max_resamples)
    if over:
        read.findings.extend(over)
        return stored
    inputs = [d for d in disclosures if layout.is_derivation_input(d.file)]
    version = report_version(read, stored.report)
    told = stored.continuation
    problems = [] if told is None else account_problems(read, told, protocol, seal, kept)
    derive_from = partial(
        _judgements, fp, seal, runs, ledger, inputs, version or REPORT_VERSION, told, problems
    )
    # A report of a version verify does not know is named as such, not compared.
    judged = stored if version else evolve(stored, report=None)
    compare_derived(read, judged, derive_from, figures_of(fp, seal, runs))
    return stored


def _judgements(
    fp: FrozenProtocol,
    seal: Seal,
    runs: RunTally,
    ledger: Ledger,
    inputs: list[FileHits],
    version: int,
    continuation: Continuation | None,
    problems: list[str],
    figures: Figures,
    judged_tiers: Tiers | None,
) -> Derived:
    """What follows from the runs and ``figures`` (:func:`repro._derive.derivation.judgements`),
    with the continuation's account and its problems when the bundle has one."""
    return judgements(
        fp,
        seal,
        runs,
        ledger,
        inputs,
        figures,
        version,
        judged_tiers,
        continuation=continuation,
        continuation_problems=problems,
    )
