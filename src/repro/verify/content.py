"""Stage 3, content: the bundle's files parsed strictly, the joins of plan and runs, every
record under the validity rules, and the re-derivation of every derived file with the
derivations ``repro study`` ran (:mod:`repro.derive`), compared byte for byte."""

from __future__ import annotations

import hashlib
import itertools
import pickle
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, cast

import orjson
from attrs import evolve, frozen

from repro import layout, plan
from repro.derive.contrasts import judged as judged_contrasts
from repro.derive.crate import CRATE_VERSION, VERSIONS, ActionFacts, CrateBuilder, version_of
from repro.derive.derivation import Derived, Figures, figures_of, judgements
from repro.derive.facts import ledger_fact_problems
from repro.derive.report import MARKER_BYTES, MARKERS, REPORT_VERSION
from repro.derive.report import version_of as report_version_of
from repro.derive.scenarios import by_condition
from repro.derive.tally import Attempt, RunTally, attempt_id, merge, runs, tally
from repro.derive.tiers import contract_digests
from repro.derive.validity import record_problem
from repro.disclosure import FileHits
from repro.errors import BadInput
from repro.json import canonical
from repro.json.serde import to_bytes, unstructure
from repro.layout import CRATE
from repro.models import (
    AdapterFacts,
    Aggregates,
    AttemptTimes,
    Checkpoint,
    ContrastsFile,
    Environment,
    FrozenProtocol,
    Ledger,
    Partition,
    PartitionRef,
    Protocol,
    RLAggregates,
    RunRecord,
    Scenario,
    Scores,
    Seal,
    Source,
    Tiers,
)
from repro.plan.streams import checkpoint_slots, checkpoint_spacing, generator_state
from repro.protocol.pins import ledger_problems
from repro.protocol.rules import check_consistency
from repro.protocol.work import planned_conditions, work_over
from repro.stats.figures import LIBRARY_FIGURES, same_figure
from repro.verify.findings import MAX_DIFFS, Finding, Findings, Location
from repro.verify.limits import Limits, raise_hint
from repro.verify.parallel import Jobs
from repro.verify.reader import BundleReader
from repro.verify.walk import Source as FileSource


def _diff(
    expected: Any,
    found: Any,
    path: str = "$",
    tolerant: frozenset[str] | None = frozenset(),
    key: str = "",
) -> Iterator[tuple[str, Any, Any]]:
    """Each value of ``found`` (a stored file, as plain data) that is not the re-derived
    ``expected``: a float stored under a key of ``tolerant`` (None: any key) is the same figure
    within the numeric policy's tolerance (:func:`repro.stats.figures.same_figure`); anything
    else is equal, of the same type."""
    if isinstance(expected, dict) and isinstance(found, dict):
        for k in sorted(set(expected) | set(found)):
            yield from _diff(expected.get(k), found.get(k), f"{path}.{k}", tolerant, k)
    elif isinstance(expected, list) and isinstance(found, list) and len(expected) == len(found):
        for i, (e, f) in enumerate(zip(expected, found, strict=True)):
            yield from _diff(e, f, f"{path}[{i}]", tolerant, key)
    elif type(expected) is float and type(found) is float and (tolerant is None or key in tolerant):
        if not same_figure(found, expected):
            yield path, expected, found
    elif expected != found or type(expected) is not type(found):
        yield path, expected, found


def _short(value: Any) -> str:
    text = canonical.dumps(value, newline=False).decode() if value is not None else "absent"
    return text if len(text) <= 120 else text[:117] + "..."


def _compare(
    name: str, expected: Any, found_bytes: bytes | None, findings: list[Finding], found: Any
) -> bool:
    """Compare the stored file ``name`` (its bytes and its parsed value ``found``) with its
    re-derivation ``expected``, naming each difference; whether it is accepted: the same bytes,
    or canonical bytes of values that differ from the re-derived ones only in figures within
    the numeric policy's tolerance."""
    if found_bytes is None or found is None:
        return False
    expected_plain = unstructure(expected)
    if canonical.dumps(expected_plain) == found_bytes:
        return True
    found_plain = unstructure(found)
    diffs = list(
        _diff(expected_plain, found_plain, tolerant=LIBRARY_FIGURES.get(name, frozenset()))
    )
    if not diffs and found_plain != expected_plain and canonical.dumps(found_plain) == found_bytes:
        return True
    for path, e, f in diffs[:MAX_DIFFS]:
        findings.append(
            Finding(
                "rederived-differs",
                name,
                f"re-derived value differs @ {path}",
                _short(e),
                _short(f),
                Location(path=path),
            )
        )
    if len(diffs) > MAX_DIFFS:
        findings.append(
            Finding(
                "rederived-differs-more",
                name,
                f"{len(diffs) - MAX_DIFFS} further differing values",
                "none",
                "differences",
            )
        )
    if not diffs:
        findings.append(
            Finding(
                "rederived-bytes-differ",
                name,
                "re-derived bytes differ",
                "canonical re-derivation",
                "other bytes",
            )
        )
    return False


def disclosure_findings(hits: FileHits) -> list[Finding]:
    """One finding per disclosure hit in a file (at most MAX_DIFFS, the rest counted)."""
    out = [
        Finding(
            "disclosure",
            hits.file,
            f"disclosure: {hit.kind} at byte {hit.offset}",
            "no personal or host identity"
            if hit.kind == "identity"
            else "no host path, traceback or credential-looking string",
            hit.pattern,
        )
        for hit in hits.first[:MAX_DIFFS]
    ]
    shown = min(len(hits.first), MAX_DIFFS)
    if hits.count > shown:
        out.append(
            Finding(
                "disclosure-more",
                hits.file,
                f"{hits.count - shown} further disclosure hits",
                "none",
                "hits",
            )
        )
    return out


def _disclosures(read: BundleReader, findings: list[Finding]) -> list[FileHits]:
    """Scan every file, tag files too, each from the bytes read once; one finding per hit (at
    most MAX_DIFFS per file, the rest counted). Returns every file's hits. A signature file is
    base64 whose ``/`` make chance host paths: the signatures stage scans its decoded
    statement instead."""
    out: list[FileHits] = []
    for name in sorted(read.files):
        hits = None if layout.is_signature(name) else read.disclosures(name)
        if hits is None:
            continue
        findings.extend(disclosure_findings(hits))
        out.append(hits)
    return out


#: The kinds of record findings listed at most MAX_DIFFS times in all.
_CAPPED = ("measure-not-sum", "validity-rules", "contract-digest")


class _RecordChecks:
    """The findings on single run records that come after the join problems: a measure that is
    not the sum of its step rewards, a contract digest that is not its condition's, and a record
    whose status, cause or measure is not what the validity rules give for the evidence it keeps
    (:func:`repro.derive.validity.record_problem`, under the ledger's adapter facts). At most
    MAX_DIFFS of each kind are named, in the order the records are read."""

    def __init__(
        self,
        contracts: Mapping[str, str],
        scenarios: Mapping[str, Scenario],
        protocol: Protocol,
        facts: AdapterFacts | None,
    ) -> None:
        self.contracts = contracts
        #: The scenario each condition runs, whose version outcomes are judged against.
        self.scenarios = scenarios
        self._protocol = protocol
        self._facts = facts
        self.findings: list[Finding] = []
        #: Findings made of each capped kind, those not listed included.
        self.counts: dict[str, int] = dict.fromkeys(_CAPPED, 0)

    def _counted(self, code: str) -> bool:
        """Count one more finding of ``code``: whether it is still listed."""
        self.counts[code] += 1
        return self.counts[code] <= MAX_DIFFS

    def fresh(self) -> _RecordChecks:
        """Checks like these, with nothing checked yet."""
        return _RecordChecks(self.contracts, self.scenarios, self._protocol, self._facts)

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


@frozen
class _PartitionRuns:
    """What verify keeps of one partition and its runs file once both are read: the tally of
    the runs against the partition, and what tells whether the tallies of all partitions add up
    to the tally of the whole plan (see :func:`repro.derive.tally.merge`)."""

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


def _attempts(
    read: BundleReader, runs_file: str, part: Partition | None, checks: _RecordChecks | None
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


def whole_plan_tally(
    read: BundleReader,
    kept: list[_PartitionRuns],
    max_attempts: int,
    checks: _RecordChecks,
) -> RunTally | None:
    """The tally of all partitions and runs files together, read again: for a plan whose
    partitions' tallies may not add up to it. None when a file no longer reads as it did (which
    is named)."""
    with read._repeating():
        parts = [read.json(k.file, "partition", Partition) for k in kept]
        attempts: list[Attempt] = []
        for k in kept:
            got = _attempts(read, k.runs_file, None, None)
            if got is None:
                return None
            attempts += got[0]
    if None in parts:
        return None
    parts_read = [p for p in parts if p is not None]
    return tally(parts_read, attempts, max_attempts, checks.contracts, checks.scenarios)


def _check_checkpoint(
    read: BundleReader, protocol: Protocol, part: Partition | None, name_id: str, first: bool
) -> None:
    """A stream-mode partition's checkpoint parses and names its partition; for the first
    partition, its first state is exactly the state the protocol's seed gives; and a
    ``repro.checkpoint/2`` keeps the protocol's spacing and a state before exactly the slots
    :func:`~repro.plan.streams.checkpoint_slots` names (later states depend on the simulator,
    which replay and audit re-check)."""
    name = layout.checkpoint_file(name_id)
    checkpoint = read.json(name, "checkpoint", Checkpoint)
    if checkpoint is None:
        return
    if checkpoint.partition != name_id:
        read.findings.append(
            Finding(
                "checkpoint-partition",
                name,
                "checkpoint names another partition",
                name_id,
                checkpoint.partition,
            )
        )
    seed = protocol.seeding.seed
    if first and checkpoint.python_random != generator_state(("seed", seed)):
        read.findings.append(
            Finding(
                "checkpoint-seed",
                name,
                "the first checkpoint is not the state the protocol's seed gives",
                f"random.seed({seed})",
                "another state",
            )
        )
    every = checkpoint_spacing(protocol)
    if checkpoint.schema == "repro.checkpoint/1":
        if checkpoint.every is not None or checkpoint.later:
            read.findings.append(
                Finding(
                    "checkpoint-spacing",
                    name,
                    "a repro.checkpoint/1 keeps the partition's first state only",
                    "no later states",
                    f"every {checkpoint.every}, {len(checkpoint.later)} later state(s)",
                )
            )
        return
    if checkpoint.every != every:
        read.findings.append(
            Finding(
                "checkpoint-spacing",
                name,
                "the checkpoint's spacing is not the protocol's",
                f"every {every}",
                f"every {checkpoint.every}",
            )
        )
    elif part is not None:
        expected = checkpoint_slots(part.entries, every)
        found = [s.slot for s in checkpoint.later]
        if found != expected:
            read.findings.append(
                Finding(
                    "checkpoint-slots",
                    name,
                    "the checkpoint's later states are not before the slots its spacing names",
                    _short(expected),
                    _short(found),
                )
            )


#: Bytes of a partition's actions inflated at a time.
_BLOCK = 1 << 16


class _CrateCheck:
    """The re-derivation of data/ro-crate-metadata.json, one partition at a time as verify reads
    them: its bytes are hashed as they are made (each partition's made by its job, see
    :func:`_crate_partition`), and the digest is compared at the end."""

    def __init__(self, builder: CrateBuilder, window: tuple[str, str] | None) -> None:
        self.builder = builder
        self._hash = hashlib.sha256(builder.head())
        #: When the study ran, to the second (environment.json), where the attempts' times come
        #: from the same clock (local workers; a cluster's workers have their own).
        self.window = window
        #: False once a partition's actions could not be made (its files are named already).
        self.whole = True

    def add(self, made: bytes, broken: bool) -> None:
        """Add one partition's actions as its job made them (deflated); ``broken``: they could
        not all be made, which leaves the crate unjudged."""
        unpacker = zlib.decompressobj()
        data = made
        while data:
            self._hash.update(unpacker.decompress(data, _BLOCK))
            data = unpacker.unconsumed_tail
        self._hash.update(unpacker.flush())
        if broken:
            self.whole = False

    def finish(self, read: BundleReader, mentions: Iterable[tuple[str, _Mentioned]]) -> None:
        """Compare the re-derived crate with the file, if every partition was made. The root's
        mentions are the attempts of the times files, read again one line at a time, a
        partition's by a job (:func:`_mentions`): ``mentions``, each file's in sealed order."""
        if not self.whole:
            return

        def attempts() -> Iterator[str]:
            for name, (got, packed) in mentions:
                got.into(read, name)
                yield from _mentioned(packed)

        for piece in self.builder.tail(attempts()):
            self._hash.update(piece)
        found = read.sha256(CRATE)
        if found is not None and found != self._hash.hexdigest():
            read.findings.append(
                Finding(
                    "crate-differs",
                    CRATE,
                    "RO-Crate metadata differs from its re-derivation",
                    f"sha256 {self._hash.hexdigest()}",
                    f"sha256 {found}",
                )
            )


def _seen_of(read: BundleReader, names: Iterable[str]) -> dict[str, Any]:
    """What ``read``'s first reads found of those of ``names`` it has read."""
    return {n: read._seen[n] for n in names if n in read._seen}


@frozen
class _Read:
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
        for name, seen in self.seen.items():
            read._seen.setdefault(name, seen)
        read._budget -= self.spent


class _JobReader:
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
        self.read._seen.update(seen)
        if budget is not None:
            self.read._budget = budget
        self._mark = (0, 0, set(self.read._seen), self.read._budget)

    def stretch(self) -> _Read:
        findings = self.read.findings
        assert isinstance(findings, Findings)
        listed, dropped, seen, budget = self._mark
        got = _Read(
            list(findings[listed:]),
            findings.dropped - dropped,
            {n: v for n, v in self.read._seen.items() if n not in seen},
            budget - self.read._budget,
        )
        self._mark = (len(findings), findings.dropped, set(self.read._seen), self.read._budget)
        return got


#: What :func:`_mentions` gives: the attempt IDs pickled and deflated (a tenth of the list's
#: bytes, so that the verifier may hold several while a partition's job ends; see
#: :func:`_mentioned`).
_Mentioned = tuple[_Read, bytes]


def _mentions(context: tuple[FileSource, Limits], task: tuple[str, dict[str, Any]]) -> _Mentioned:
    """A job (:mod:`repro.verify.parallel`): the attempt IDs of a times file's lines, read
    again (findings about its content are not made twice)."""
    name, seen = task
    job = _JobReader(*context, seen)
    with job.read._repeating():
        ids = [t for t in job.read.times_ids(name) or () if t is not None]
    return job.stretch(), zlib.compress(pickle.dumps(ids, protocol=pickle.HIGHEST_PROTOCOL), 1)


def _mentioned(packed: bytes) -> list[str]:
    """The attempt IDs :func:`_mentions` gave."""
    ids: list[str] = pickle.loads(zlib.decompress(packed))
    return ids


def _crate_partition(
    read: BundleReader,
    builder: CrateBuilder,
    window: tuple[str, str] | None,
    partition: Partition,
    attempts: list[Attempt],
) -> tuple[bytes, bool]:
    """The crate's actions of ``partition``'s attempts that ran, joined one by one with the
    lines of its times file as they are read, and whether they could not all be made: a file
    that does not parse, or does not hold one line per attempt that ran (in the runs file's
    order, each ending after it starts), is named and leaves the crate unjudged."""
    name = layout.times_file(partition.id)
    lines = read.times_lines(name)
    if lines is None:
        return b"", True
    declared = {e.slot for e in partition.entries if not runs(e)}
    ran = [a for a in attempts if a.slot not in declared]
    broken: list[str] = []
    joined = _joined(read, name, ran, iter(lines), broken, window)
    # Deflated as they are made: what is held and handed over is a tenth of the actions' bytes.
    packer = zlib.compressobj(1)
    made = [packer.compress(piece) for piece in builder.partition(partition.id, joined)]
    made.append(packer.flush())
    return b"".join(made), bool(broken)


_END = object()


def _joined(
    read: BundleReader,
    name: str,
    ran: list[Attempt],
    lines: Iterator[AttemptTimes | None],
    broken: list[str],
    window: tuple[str, str] | None = None,
) -> Iterator[ActionFacts]:
    """The crate's facts of each attempt that ran with its line of the times file ``name``, one
    at a time. The first line that does not parse (named as it was read), names another
    attempt, ends before it starts, lies outside the study's ``window`` (its recorded start and
    end, to the second), or is missing or left over, ends the join: it is named and put in
    ``broken``."""
    for number, a in enumerate(ran, start=1):
        t = next(lines, _END)
        if t is None:
            broken.append(name)
            return
        if t is _END or not isinstance(t, AttemptTimes) or t.attempt_id != a.attempt_id:
            found = t.attempt_id if isinstance(t, AttemptTimes) else "end of file"
            what = f"times do not match the attempts that ran, from line {number}"
            read.findings.append(Finding("times-mismatch", name, what, a.attempt_id, found))
            broken.append(name)
            return
        if t.finished_utc < t.started_utc:
            what = f"attempt {a.attempt_id} ends before it starts"
            read.findings.append(Finding("times-order", name, what, "end >= start", t.finished_utc))
            broken.append(name)
            return
        # Times to the microsecond against the study's to the second: compare whole seconds.
        if window is not None and not (
            window[0][:19] <= t.started_utc[:19] and t.finished_utc[:19] <= window[1][:19]
        ):
            what = f"attempt {a.attempt_id} ran outside the study's recorded start and end"
            found = f"{t.started_utc} to {t.finished_utc}"
            read.findings.append(
                Finding("times-outside-study", name, what, f"{window[0]} to {window[1]}", found)
            )
            broken.append(name)
            return
        yield ActionFacts(a.attempt_id, a.slot, a.condition, a.status, a.cause, t)
    extra = next(lines, _END)
    if extra is not _END:
        found = extra.attempt_id if isinstance(extra, AttemptTimes) else "a line"
        what = f"times do not match the attempts that ran, from line {len(ran) + 1}"
        read.findings.append(Finding("times-mismatch", name, what, "end of file", found))
        broken.append(name)


@frozen
class _PartitionContext:
    """What every partition's job is given: where the files are, the limits, the protocol, the
    record checks (none run yet) and the crate's builder and window (None without a crate to
    re-derive)."""

    source: FileSource
    limits: Limits
    fp: FrozenProtocol
    checks: _RecordChecks
    builder: CrateBuilder | None
    window: tuple[str, str] | None


@frozen
class _PartitionTask:
    """One partition's job: its reference in the seal, whether it is the first, what the
    verifier's first reads found of its files, and the byte budget left."""

    ref: PartitionRef
    first: bool
    seen: dict[str, Any]
    budget: int


@frozen
class _PartitionDone:
    """What one partition's job found: its reading (partition, checkpoint and runs file), the
    record checks' findings and counts, what verify keeps of it (None when a file did not
    parse), and, when the crate is re-derived and the runs parsed, the crate's reading (its
    times file), the crate's bytes of its actions and whether they could not all be made."""

    read: _Read
    checks: tuple[list[Finding], dict[str, int]]
    kept: _PartitionRuns | None
    crate: tuple[_Read, bytes, bool] | None


def _partition_job(context: _PartitionContext, task: _PartitionTask) -> _PartitionDone:
    """A job (:mod:`repro.verify.parallel`): read one partition and its runs file (and, in
    stream mode, its checkpoint), tally its runs and make its part of the crate."""
    job = _JobReader(context.source, context.limits, task.seen, task.budget)
    checks = context.checks.fresh()
    got = _partition_runs(job.read, context.fp, task.ref, task.first, checks)
    reading = job.stretch()
    crate = None
    if got is not None and context.builder is not None:
        part, _, attempts = got
        made, broken = _crate_partition(job.read, context.builder, context.window, part, attempts)
        crate = (job.stretch(), made, broken)
    return _PartitionDone(
        reading, (checks.findings, checks.counts), None if got is None else got[1], crate
    )


def _partition_runs(
    read: BundleReader,
    fp: FrozenProtocol,
    ref: PartitionRef,
    first: bool,
    checks: _RecordChecks,
) -> tuple[Partition, _PartitionRuns, list[Attempt]] | None:
    """Read one partition and its runs file (and, in stream mode, its checkpoint) and tally its
    runs; None when either does not parse. What is held of it is let go once its crate's part
    is made: only the tally is kept."""
    name = layout.DATA + ref.file
    digest = read.sha256(name)
    if digest is not None and digest != ref.sha256:
        read.findings.append(
            Finding(
                "partition-digest",
                name,
                "partition digest differs from the seal",
                ref.sha256,
                digest,
            )
        )
    part, part_sha256 = read._model(name, "partition", Partition)
    if fp.protocol.seeding.mode == "stream":
        _check_checkpoint(read, fp.protocol, part, ref.id, first)
    runs_name = layout.runs_file(ref.id)
    got = _attempts(read, runs_name, part, checks)
    if part is None or part_sha256 is None or got is None:
        return None
    attempts, contained = got
    kept = _PartitionRuns(
        file=name,
        runs_file=runs_name,
        id=part.id,
        entries=len(part.entries),
        sha256=part_sha256,
        tally=tally(
            [part], attempts, fp.protocol.retry.max_attempts, checks.contracts, checks.scenarios
        ),
        contained=contained,
    )
    return part, kept, attempts


class _Resealing:
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

    def advance(self, kept: list[_PartitionRuns]) -> None:
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
    kept: list[_PartitionRuns],
    seal: Seal,
    resealing: _Resealing | None = None,
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
            with read._repeating():
                part = read.json(kept[index].file, "partition", Partition)
            if part is not None:
                found = to_bytes(part)
                _compare(layout.plan_file(part.id), expected, found, partition_findings, part)
                del part
        # Let this partition go before the next one is made.
        del expected
    resealed = plan.seal_record(protocol, protocol_sha256, sources, tuple(refs))
    found_seal = read.raw(layout.SEAL)
    _compare(layout.SEAL, resealed, found_seal, read.findings, seal)
    read.findings.extend(partition_findings)
    return refs


@frozen
class Stored:
    """The bundle's files as parsed: each None when it is missing or does not parse (which is
    named); ``scores`` is None too for a protocol without scoring, ``report`` the report's
    bytes."""

    protocol: FrozenProtocol | None
    seal: Seal | None
    ledger: Ledger | None
    aggregates: Aggregates | None
    tiers: Tiers | None
    environment: Environment | None
    scores: Scores | None
    report: bytes | None
    #: None too for a protocol that declares no contrasts.
    contrasts: ContrastsFile | None = None
    #: None too for a protocol without an ``rl`` section.
    rl: RLAggregates | None = None


def _undeclared(read: BundleReader, name: str, code: str, what: str) -> None:
    """Name ``name`` when the bundle holds it though its protocol declares nothing it derives."""
    if name in read.files:
        read.findings.append(Finding(code, name, what, "absent", "present"))


def _stored(read: BundleReader) -> Stored:
    """Parse every fixed payload file (and scores.json, contrasts.json and rl-aggregates.json,
    which only a scored protocol, one that declares contrasts and one with an ``rl`` section
    have)."""
    fp = read.json(layout.PROTOCOL, "frozen-protocol", FrozenProtocol)
    scored = fp is not None and fp.protocol.scoring is not None
    seal = read.json(layout.SEAL, "seal", Seal)
    ledger = read.json(layout.LEDGER, "source-ledger", Ledger)
    aggregates = read.json(layout.AGGREGATES, "aggregates", Aggregates)
    tiers = read.json(layout.TIERS, "tiers", Tiers)
    environment = read.json(layout.ENVIRONMENT, "environment", Environment)
    scores = read.json(layout.SCORES, "scores", Scores) if scored else None
    if not scored:
        _undeclared(
            read,
            layout.SCORES,
            "scores-without-scoring",
            "scores of a protocol that declares no scoring",
        )
    compared = fp is not None and fp.protocol.contrasts is not None
    contrasts = read.json(layout.CONTRASTS, "contrasts", ContrastsFile) if compared else None
    if not compared:
        _undeclared(
            read,
            layout.CONTRASTS,
            "contrasts-without-contrasts",
            "contrasts of a protocol that declares none",
        )
    with_rl = fp is not None and fp.protocol.rl is not None
    rl = read.json(layout.RL_AGGREGATES, "rl-aggregates", RLAggregates) if with_rl else None
    if not with_rl:
        _undeclared(
            read,
            layout.RL_AGGREGATES,
            "rl-aggregates-without-rl",
            "rliable's aggregates of a protocol without an rl section",
        )
    report = read.raw(layout.REPORT)
    return Stored(fp, seal, ledger, aggregates, tiers, environment, scores, report, contrasts, rl)


def _check_digests(fp: FrozenProtocol, seal: Seal, findings: list[Finding]) -> None:
    """The protocol's digest is that of its canonical bytes, and the seal names it."""
    digest = canonical.sha256_hex(to_bytes(fp.protocol))
    if digest != fp.sha256:
        findings.append(
            Finding("protocol-digest", layout.PROTOCOL, "protocol digest", fp.sha256, digest)
        )
    if seal.protocol_sha256 != fp.sha256:
        findings.append(
            Finding(
                "seal-protocol-digest",
                layout.SEAL,
                "protocol digest in the seal",
                fp.sha256,
                seal.protocol_sha256,
            )
        )


def _seal_partitions_problem(protocol: Protocol, seal: Seal, read: BundleReader) -> Finding | None:
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


def _pin_findings(protocol: Protocol, ledger: Ledger) -> list[Finding]:
    """Each pin of the protocol that the ledger's sources do not record
    (:func:`repro.protocol.pins.ledger_problems`, the rule the adapter's freeze applied); none
    for an adapter without a rule there (a third party's: its pins are not checked)."""
    return [
        Finding(
            "ledger-pin",
            layout.LEDGER,
            f"{problem.what}: the ledger does not record the pin of {layout.PROTOCOL} "
            f"@ $.protocol{problem.path[1:]}",
            problem.expected,
            problem.found,
        )
        for problem in ledger_problems(protocol, ledger.sources) or []
    ]


def _fact_findings(protocol: Protocol, seal: Seal, ledger: Ledger) -> list[Finding]:
    """Each fact of the ledger (the adapter's name and what it says of itself, the roles of
    its sources, each contract) that the protocol contradicts
    (:func:`repro.derive.facts.ledger_fact_problems`, the rules the study applied at freeze and
    as each session opened)."""
    return [
        Finding(
            "ledger-facts",
            layout.LEDGER,
            f"{problem.what}: the ledger contradicts {layout.PROTOCOL} @ {problem.path}",
            problem.expected,
            problem.found,
        )
        for problem in ledger_fact_problems(protocol, seal.conditions, ledger)
    ]


def _crate_check(
    read: BundleReader, stored: Stored, fp: FrozenProtocol, seal: Seal
) -> _CrateCheck | None:
    """The crate's re-derivation, made as the partitions are read; None without the ledger and
    the environment it describes."""
    ledger, environment = stored.ledger, stored.environment
    if ledger is None or environment is None:
        return None
    payload = layout.payload_files(fp, [ref.id for ref in seal.partitions])
    # A cluster's workers time the attempts by their own clocks.
    window = (
        None
        if environment.backend == "dask"
        else (environment.started_utc, environment.finished_utc)
    )
    version = _crate_version(read)
    if version is None:
        return None
    return _CrateCheck(CrateBuilder(fp, ledger, environment, payload, version), window)


#: How much of the stored crate is read to find its version: its first line (the context) and
#: its metadata descriptor's, each a few hundred bytes.
_CRATE_HEAD_BYTES = 4096


def _crate_version(read: BundleReader) -> int | None:
    """The crate version the stored crate declares in its metadata descriptor (its second line),
    re-derived as that version. A descriptor that does not parse leaves the current version,
    whose re-derivation then differs; a marker verify does not know is named, and leaves the
    crate unjudged (None); so does a crate that cannot be read (named by the reader)."""
    head = read.head(CRATE, _CRATE_HEAD_BYTES)
    if head is None:
        return None
    lines = head.split(b"\n", 2)
    try:
        descriptor = orjson.loads(lines[1].removesuffix(b",")) if len(lines) > 2 else None
    except orjson.JSONDecodeError:
        descriptor = None
    if not isinstance(descriptor, dict) or descriptor.get("@id") != "ro-crate-metadata.json":
        return CRATE_VERSION
    version = version_of(descriptor)
    if version is None:
        read.findings.append(
            Finding(
                "crate-version",
                CRATE,
                "RO-Crate metadata declares a version verify does not know",
                " or ".join(repr(v) for v in VERSIONS if v is not None) + " or none",
                _short(repr(descriptor.get("version"))),
            )
        )
    return version


def _read_partitions(
    read: BundleReader,
    stored: Stored,
    fp: FrozenProtocol,
    seal: Seal,
    checks: _RecordChecks,
    jobs: Jobs,
    resealing: _Resealing,
) -> list[_PartitionRuns] | None:
    """Read and tally every sealed partition, each by a job, building the crate's
    re-derivation on the way (and re-sealing the plan by ``resealing`` as they come), and name
    each partitioned file the seal does not name; None when a partition does not read. The
    jobs' findings are taken in sealed order, as one reader reading the partitions in turn
    would make them: a partition's crate part only while the crate is whole."""
    crate = _crate_check(read, stored, fp, seal)
    context = _PartitionContext(
        read.source,
        read.limits,
        fp,
        checks.fresh(),
        None if crate is None else crate.builder,
        None if crate is None else crate.window,
    )
    stream = fp.protocol.seeding.mode == "stream"

    def tasks() -> Iterator[_PartitionTask]:
        for ref in seal.partitions:
            names = [layout.DATA + ref.file, *layout.partition_files(ref.id, stream)[1:]]
            yield _PartitionTask(
                ref, ref is seal.partitions[0], _seen_of(read, names), read._budget
            )

    def mentions() -> Iterator[tuple[str, dict[str, Any]]]:
        # Given after the partitions' jobs, to run while the last of them do (their results
        # are taken only if the crate is whole once every partition is read).
        for ref in seal.partitions if crate is not None else ():
            name = layout.times_file(ref.id)
            yield name, _seen_of(read, [name])

    count = len(seal.partitions)
    # Here, a job is no round trip, and each partition's is given the budget the partitions
    # before it left.
    most = _CHUNK_TASKS if jobs.processes else 1
    every = itertools.chain(_chunks(tasks(), most), _chunks(mentions(), most))
    chunked = jobs.ordered(_partition_or_mentions, context, every)
    results = itertools.chain.from_iterable(chunked)
    try:
        kept = _merge_partitions(read, itertools.islice(results, count), checks, crate, resealing)
        _not_in_seal(read, seal, stream)
        if crate is not None and kept is not None:
            names = [layout.times_file(ref.id) for ref in seal.partitions]
            crate.finish(read, zip(names, cast(Iterator[_Mentioned], results), strict=True))
    finally:
        chunked.close()
    return kept


#: Partitions (or times files) one job takes at most, and the bytes of their files past which it
#: takes no more: a job is a round trip to a worker, which many small partitions would each
#: pay, and a seal that names thousands of missing ones made verify's time a round trip each.
_CHUNK_TASKS = 64
_CHUNK_BYTES = 1 << 20

_Task = _PartitionTask | tuple[str, dict[str, Any]]


def _chunks(tasks: Iterable[_Task], most: int) -> Iterator[list[_Task]]:
    """``tasks`` in consecutive groups, each of at most ``most`` tasks, ended by the first task
    that brings the bytes their first reads found to :data:`_CHUNK_BYTES`."""
    chunk: list[_Task] = []
    size = 0
    for task in tasks:
        chunk.append(task)
        seen = task.seen if isinstance(task, _PartitionTask) else task[1]
        size += sum(s.size for s in seen.values() if s is not None)
        if len(chunk) == most or size >= _CHUNK_BYTES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def _partition_or_mentions(
    context: _PartitionContext, chunk: list[_Task]
) -> list[_PartitionDone | _Mentioned]:
    """A job (:mod:`repro.verify.parallel`): for each task of ``chunk``, a partition's
    (:func:`_partition_job`), or the mentions of a times file (:func:`_mentions`)."""
    return [
        _partition_job(context, task)
        if isinstance(task, _PartitionTask)
        else _mentions((context.source, context.limits), task)
        for task in chunk
    ]


def _merge_partitions(
    read: BundleReader,
    results: Iterable[_PartitionDone | _Mentioned],
    checks: _RecordChecks,
    crate: _CrateCheck | None,
    resealing: _Resealing,
) -> list[_PartitionRuns] | None:
    """Take each partition's job's findings in sealed order, as one reader reading the
    partitions in turn would make them (a partition's crate part only while the crate is
    whole), and re-seal the plan as they come; what verify keeps of the partitions, or None
    when one did not read."""
    kept: list[_PartitionRuns] = []
    complete = True
    for done in results:
        assert isinstance(done, _PartitionDone)
        done.read.into(read)
        checks.merge(*done.checks)
        if done.crate is not None and crate is not None and crate.whole:
            reading, made, broken = done.crate
            reading.into(read)
            crate.add(made, broken)
        if done.kept is None:
            complete = False
        else:
            kept.append(done.kept)
        # Let this partition's crate part go before the next one is made.
        del done
        if complete:
            resealing.advance(kept)
    return kept if complete else None


def _not_in_seal(read: BundleReader, seal: Seal, stream: bool) -> None:
    """Name each partitioned file the seal does not name."""
    expected_files = {layout.SEAL}
    for ref in seal.partitions:
        expected_files |= {layout.DATA + ref.file, *layout.partition_files(ref.id, stream)[1:]}
    for name in sorted(n for n in read.files if layout.is_partitioned(n)):
        if name not in expected_files:
            read.findings.append(
                Finding("not-in-seal", name, "file not named by the seal", "absent", "present")
            )


def _plan_problem(protocol: Protocol, kept: list[_PartitionRuns], max_work: int) -> Finding | None:
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


def _plan_tally(
    read: BundleReader,
    fp: FrozenProtocol,
    seal: Seal,
    ledger: Ledger,
    kept: list[_PartitionRuns],
    checks: _RecordChecks,
    resealing: _Resealing | None = None,
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


def _join_findings(runs: RunTally) -> list[Finding]:
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


def _compare_derived(
    read: BundleReader,
    stored: Stored,
    derive_from: Callable[[Figures, Tiers | None], Derived],
    figures: Figures,
) -> None:
    """Compare each derived file the bundle holds with its re-derivation: the figures, computed
    from the runs (``figures``), within the numeric policy's tolerance (a contrast's verdict,
    and what else follows from its figures, derived again from the stored figures:
    :func:`repro.derive.contrasts.judged`); then what follows from the figures
    (``derive_from``: the ledger's losses, the tiers, the report) derived from the stored
    figures where they are accepted, and the report also from the stored tiers where those
    are: so that only a figure's own difference is named, never the last bits of a library that
    made it another way, and no verdict or rounded figure turns on them."""
    accepted: dict[str, Any] = {}
    named: dict[str, list[Finding]] = {}
    for name, expected, found in (
        (layout.AGGREGATES, figures.aggregates, stored.aggregates),
        (layout.SCORES, figures.scores, stored.scores),
        (layout.CONTRASTS, figures.contrasts, stored.contrasts),
        (layout.RL_AGGREGATES, figures.rl, stored.rl),
    ):
        accepted[name] = expected
        if expected is None or found is None:
            continue
        raw, out = read.raw(name), named.setdefault(name, [])
        ok = _compare(name, _judged_as(expected, found), raw, out, found)
        if isinstance(found, ContrastsFile) and stored.protocol is not None:
            ok = _compare(name, judged_contrasts(stored.protocol, found), raw, out, found) and ok
        if ok:
            accepted[name] = found
    kept = Figures(
        aggregates=accepted[layout.AGGREGATES],
        scores=accepted[layout.SCORES],
        contrasts=accepted[layout.CONTRASTS],
        rl=accepted[layout.RL_AGGREGATES],
    )
    derived = derive_from(kept, None)
    ledger_out = named.setdefault(layout.LEDGER, [])
    _compare(layout.LEDGER, derived.ledger, read.raw(layout.LEDGER), ledger_out, stored.ledger)
    tiers_out = named.setdefault(layout.TIERS, [])
    tiers_ok = _compare(
        layout.TIERS, derived.tiers, read.raw(layout.TIERS), tiers_out, stored.tiers
    )
    # Each file's findings in the order verify has always named them.
    for name in (layout.LEDGER, layout.AGGREGATES, layout.TIERS, *FIGURES_AFTER_TIERS):
        read.findings.extend(named.get(name, []))
    if stored.report is None:
        return
    text = derived.report
    if tiers_ok and stored.tiers != derived.tiers:
        # The report tells the stored tiers, within the tolerance of the re-derived ones.
        text = derive_from(kept, stored.tiers).report
    if stored.report != text.encode():
        read.findings.append(
            Finding(
                "report-differs",
                layout.REPORT,
                "report differs from its re-derivation",
                "re-derived text",
                "other text",
            )
        )


#: The derived files verify compares after the tiers, in that order.
FIGURES_AFTER_TIERS = (layout.SCORES, layout.CONTRASTS, layout.RL_AGGREGATES)


def _judged_as(expected: Any, found: Any) -> Any:
    """The re-derived file ``expected`` as it is compared with the stored ``found``: a contrasts
    file with each contrast's judgement (adjusted p-value, verdict, reason) the stored one's,
    which is checked against the stored figures instead (:func:`repro.derive.contrasts.judged`),
    not against re-derived figures that may differ within the tolerance."""
    if not isinstance(found, ContrastsFile) or not isinstance(expected, ContrastsFile):
        return expected
    if len(found.contrasts) != len(expected.contrasts):
        return expected
    return evolve(
        expected,
        contrasts=tuple(
            evolve(e, p_adjusted=f.p_adjusted, verdict=f.verdict, reason=f.reason)
            for e, f in zip(expected.contrasts, found.contrasts, strict=True)
        ),
    )


def _report_version(read: BundleReader, report: bytes | None) -> int | None:
    """The version the stored report declares by its first line
    (:func:`repro.derive.report.version_of`), re-derived as that version: 1 without a marker,
    so that every report written before the marker keeps verifying. A marker verify does not
    know is named, and leaves the report unjudged (None); a missing report (named by the
    reader) is the current version."""
    if report is None:
        return REPORT_VERSION
    version = report_version_of(report)
    if version is None:
        read.findings.append(
            Finding(
                "report-version",
                layout.REPORT,
                "validation report declares a version verify does not know",
                " or ".join(MARKERS.values()) + " or none",
                _short(report[:MARKER_BYTES].partition(b"\n")[0].decode("utf-8", "replace")),
            )
        )
    return version


def _work_over(protocol: Protocol, limit: int) -> Finding | None:
    """The finding for a protocol whose derivations would take more than ``limit``
    (:func:`repro.protocol.work.work_over`, the bound the study's rules apply), naming the part
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


def _resamples_over(protocol: Protocol, limit: int) -> list[Finding]:
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


def check_content(read: BundleReader, limits: Limits, jobs: Jobs | None = None) -> Stored:
    """Parse every payload file, check the joins and compare each stored derivation with its
    re-derivation, adding findings to ``read.findings``; return what was parsed.

    The stages run in order, each only when the one before it left something to judge: the
    fixed files parsed; the digests; the partitions read and tallied one at a time (so that
    what is held does not grow with the runs), the crate re-derived on the way; the plan's
    size and rules; the re-sealed plan and the whole tally; the join problems and the records'
    findings; then every derivation run again and compared."""
    stored = _stored(read)
    disclosures = _disclosures(read, read.findings)
    fp, seal, ledger = stored.protocol, stored.seal, stored.ledger
    if fp is None or seal is None:
        return stored
    _check_digests(fp, seal, read.findings)
    protocol = fp.protocol
    too_many = _seal_partitions_problem(protocol, seal, read)
    if too_many is not None:
        read.findings.append(too_many)
        return stored
    if ledger is not None:
        read.findings.extend(_pin_findings(protocol, ledger))
        read.findings.extend(_fact_findings(protocol, seal, ledger))
    checks = _RecordChecks(
        contract_digests(ledger) if ledger is not None else {},
        by_condition(protocol, seal.conditions),
        protocol,
        ledger.adapter if ledger is not None else None,
    )
    resealing = _Resealing(protocol, limits.max_derivation_work)
    kept = _read_partitions(read, stored, fp, seal, checks, jobs or Jobs(1, False), resealing)
    if kept is None or ledger is None:
        return stored
    problem = _plan_problem(protocol, kept, limits.max_derivation_work)
    if problem is not None:
        read.findings.append(problem)
        return stored
    runs = _plan_tally(read, fp, seal, ledger, kept, checks, resealing)
    if runs is None:
        return stored
    read.findings.extend(_join_findings(runs))
    read.findings.extend(checks.findings)
    over = _resamples_over(protocol, limits.max_resamples)
    if over:
        read.findings.extend(over)
        return stored
    inputs = [d for d in disclosures if layout.is_derivation_input(d.file)]
    version = _report_version(read, stored.report)

    def derive_from(figures: Figures, judged_tiers: Tiers | None) -> Derived:
        return judgements(
            fp, seal, runs, ledger, inputs, figures, version or REPORT_VERSION, judged_tiers
        )

    # A report of a version verify does not know is named as such, not compared.
    judged = stored if version else evolve(stored, report=None)
    _compare_derived(read, judged, derive_from, figures_of(fp, seal, runs))
    return stored
