"""Run records and their joins: a partition's runs file read one line at a time into its
attempts (in sealed order, each in its own partition), the checks on single records (a measure
that is not its step rewards' sum, a contract digest, the validity rules), and the join problems
of the tally."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import frozen

from repro import _layout as layout
from repro._derive.recorded import recorded_problem
from repro._derive.tally import Attempt, RunTally, attempt_id
from repro._derive.validity import record_problem
from repro.models import AdapterFacts, Partition, Protocol, RunRecord, Scenario
from repro.verify._findings import MAX_DIFFS, Finding, Location
from repro.verify._reader import BundleReader

#: The kinds of record findings listed at most MAX_DIFFS times in all.
_CAPPED = ("measure-not-sum", "validity-rules", "contract-digest", "recorded-differs")


class RecordChecks:
    """The findings on single run records that come after the join problems: a measure that is
    not the sum of its step rewards, a contract digest that is not its condition's, and a record
    whose status, cause or measure is not what the validity rules give for the evidence it keeps
    (:func:`repro._derive.validity.record_problem`, under the ledger's adapter facts), and, in a
    bundle that carries its records file, a record that is not its slot's row of it
    (:func:`repro._derive.recorded.recorded_problem`; ``recorded`` maps each slot ID to its
    row). At most MAX_DIFFS of each kind are named, in the order the records are read."""

    def __init__(
        self,
        contracts: Mapping[str, str],
        scenarios: Mapping[str, Scenario],
        protocol: Protocol,
        facts: AdapterFacts | None,
        recorded: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.contracts = contracts
        #: The scenario each condition runs, whose version outcomes are judged against.
        self.scenarios = scenarios
        self._protocol = protocol
        self._facts = facts
        self._recorded = recorded
        self.findings: list[Finding] = []
        #: Findings made of each capped kind, those not listed included.
        self.counts: dict[str, int] = dict.fromkeys(_CAPPED, 0)

    def _counted(self, code: str) -> bool:
        """Count one more finding of ``code``: whether it is still listed."""
        self.counts[code] += 1
        return self.counts[code] <= MAX_DIFFS

    def fresh(self) -> RecordChecks:
        """Checks like these, with nothing checked yet."""
        return RecordChecks(
            self.contracts, self.scenarios, self._protocol, self._facts, self._recorded
        )

    def merge(self, findings: list[Finding], counts: Mapping[str, int]) -> None:
        """Add the findings and counts of checks run on the records that follow, as if these
        checks had seen them: at most MAX_DIFFS of each kind are listed in all."""
        for finding in findings:
            if finding.code not in _CAPPED or self._counted(finding.code):
                self.findings.append(finding)
        for code, count in counts.items():
            # Those not listed there are counted here.
            self.counts[code] += count - sum(f.code == code for f in findings)

    def check(self, record: RunRecord, a: Attempt) -> None:
        """Check one record and its attempt. A record named for a measure that is not the sum
        of its step rewards is not named again for the validity rules, which say the same."""
        where = layout.runs_file(a.condition)
        summed = a.recomputed is None or a.measure is None or a.recomputed == a.measure
        if not summed:
            if self._counted("measure-not-sum"):
                self.findings.append(
                    Finding(
                        "measure-not-sum",
                        where,
                        f"{a.attempt_id}: measure differs from the sum of its step rewards",
                        repr(a.recomputed),
                        repr(a.measure),
                        Location(item=a.attempt_id),
                    )
                )
        elif self._facts is not None:
            scenario = self.scenarios.get(a.condition)
            # The step rewards were summed once already, for the attempt.
            problem = record_problem(self._protocol, self._facts, scenario, record, a.recomputed)
            if problem is not None and self._counted("validity-rules"):
                self.findings.append(
                    Finding(
                        "validity-rules",
                        where,
                        f"{a.attempt_id}: record breaks the validity rules",
                        "the status, cause and measure the rules give its evidence",
                        problem,
                        Location(item=a.attempt_id),
                    )
                )
        if self._recorded is not None:
            self._check_recorded(record, a)
        expected = self.contracts.get(a.condition)
        ran = a.status in ("valid", "invalid")
        if ran and a.contract_sha256 != expected and self._counted("contract-digest"):
            self.findings.append(
                Finding(
                    "contract-digest",
                    where,
                    f"{a.attempt_id}: contract digest",
                    str(expected),
                    str(a.contract_sha256),
                    Location(item=a.attempt_id),
                )
            )

    def _check_recorded(self, record: RunRecord, a: Attempt) -> None:
        assert self._recorded is not None
        problem = recorded_problem(self._recorded.get(a.slot), record)
        if problem is not None and self._counted("recorded-differs"):
            self.findings.append(
                Finding(
                    "recorded-differs",
                    layout.runs_file(a.condition),
                    f"{a.attempt_id}: not what the records file holds for its slot: {problem}",
                    "the slot's row of the records file the bundle carries",
                    a.status if record.outcome is None else "another outcome",
                    Location(item=a.attempt_id),
                )
            )


@frozen
class PartitionRuns:
    """What verify keeps of one partition and its runs file once both are read: the tally of
    the runs against the partition, and what tells whether the tallies of all partitions add up
    to the tally of the whole plan (see :func:`repro._derive.tally.merge`)."""

    file: str
    runs_file: str
    #: The partition's ``id``, which names it where it is compared with its re-derivation.
    id: str
    entries: int
    #: sha256 of the partition's canonical bytes.
    sha256: str
    tally: RunTally
    #: Every record in the runs file names a slot of this partition and has the attempt ID its
    #: slot and number give.
    contained: bool


def read_attempts(
    read: BundleReader, runs_file: str, part: Partition | None, checks: RecordChecks | None
) -> tuple[list[Attempt], bool] | None:
    """The attempts of the records in ``runs_file``, read one line at a time, and whether each
    names a slot of ``part`` with the attempt ID its slot and number give; None when a line is
    not a run record (each named). ``checks`` see every record."""
    records = read.run_records(runs_file)
    if records is None:
        return None
    order = {e.slot: e.order for e in part.entries} if part is not None else {}
    attempts: list[Attempt] = []
    contained = ok = in_order = True
    previous: tuple[int, int] = (-1, 0)
    for number, record in enumerate(records, start=1):
        if record is None:
            ok = False
            continue
        a = Attempt.of(record)
        if checks is not None:
            checks.check(record, a)
        attempts.append(a)
        place = order.get(a.slot)
        contained = (
            contained and place is not None and a.attempt_id == attempt_id(a.slot, a.attempt)
        )
        if place is not None and checks is not None and in_order:
            # A study writes each partition's records in sealed order: slots by their order in
            # the plan, each slot's attempts by number.
            if (place, a.attempt) <= previous:
                in_order = False
                checks.findings.append(
                    Finding(
                        "runs-order",
                        runs_file,
                        f"records out of sealed order from line {number}",
                        "slots in plan order, each slot's attempts by number",
                        a.attempt_id,
                        Location(line=number, item=a.attempt_id),
                    )
                )
            previous = (place, a.attempt)
    return (attempts, contained) if ok else None


def join_findings(runs: RunTally) -> list[Finding]:
    """Every join problem of the tally, named in the runs file of its partition."""
    return [
        Finding(
            f"join-{problem.code}",
            layout.runs_file(problem.partition),
            f"{problem.where}: {problem.what}",
            problem.expected,
            problem.found,
            Location(item=problem.where),
        )
        for problem in runs.join_problems.first
    ]
