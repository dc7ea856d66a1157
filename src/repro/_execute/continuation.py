"""Continuing an interrupted study into a fresh root (``repro study --continue-from OLD``).

An unfinished study's root keeps, beside its files, what a continuation needs and its files do
not hold: each finished partition's contract facts (the ledger is written only at the end) and
how the study stopped, in ``continue/`` (:mod:`repro._execute.aside`), which a study removes
before its tag files. A continuation reads OLD and never writes it:

- OLD must be an unfinished root (``bagit.txt`` and no tag manifest) of the same protocol: its
  protocol, partition and seal files must be, byte for byte, what this study writes (the first
  difference is named otherwise, before anything is written);
- each partition OLD finished (its runs and times files, in stream mode its checkpoint, and its
  contract in place) is checked by verify's own rules before it is used
  (:func:`check_partition`) and carried whole, byte for byte; every other partition runs again
  from its first slot, so an attempt the interruption cut short runs again and leaves no record
  of the first try;
- in stream mode (one generator stream through the plan, each partition beginning where the
  one before it left it) the carried partitions are the plan's first, and the stream is taken
  up again where the last of them left it (:func:`rejoin`): its slots from the last state its
  checkpoint keeps run again, must give OLD's records byte for byte, and the state they end in
  begins the next partition, as it did in an uninterrupted study.

What was carried and what ran is ``data/continuation.json`` (:func:`account`)."""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from attrs import evolve, frozen

from repro import _layout as layout
from repro._derive.continuation import (
    INTERRUPTION,
    carried_files,
    carried_sha256,
    continuation_problems,
    rejoined_at,
)
from repro._execute.aside import STOPPED, aside_contract, contract_file
from repro._execute.attempts import PartitionRun
from repro._files import partial_name
from repro._json.serde import to_bytes
from repro._plan.sealing import PartitionsWhenRead
from repro._plan.streams import state_at, stream_of, stream_spacing
from repro.errors import BadInput
from repro.models import (
    AdapterFacts,
    CarriedPartition,
    Checkpoint,
    Condition,
    Continuation,
    FrozenProtocol,
    Partition,
    Rejoined,
    RunRecord,
    Seal,
)

if TYPE_CHECKING:
    from repro._bundle.writer import BundleWriter
    from repro._derive.tally import Attempt
    from repro._execute.studies import Prepared
    from repro._plan.sealing import SealedPlan
    from repro.verify._findings import Finding
    from repro.verify._reader import BundleReader

__all__ = [
    "Carried",
    "Carry",
    "Checked",
    "LeftToRun",
    "account",
    "account_problems",
    "carry_from",
    "check_partition",
    "copy_carried",
    "rejoin",
    "write_account",
    "write_carried",
]

#: Bytes read at a time where a carried file is copied.
_BLOCK = 1 << 20


@frozen
class Carried:
    """One partition OLD finished, checked: its files there, each file's sha256, its slots and
    run records, its contract facts, the session opens a dying worker lost in it, and in stream
    mode its checkpoint."""

    partition: str
    condition: str
    files: dict[str, Path]
    digests: dict[str, str]
    slots: int
    attempts: int
    contract: dict[str, Any]
    lost_opens: int
    checkpoint: Checkpoint | None = None


@frozen
class Carry:
    """What a continuation takes from OLD: the partitions carried (in sealed order), those OLD
    had begun and not finished, and how OLD said it stopped (None: it left no word). In stream
    mode, ``every`` is the protocol's checkpoint spacing, and once the stream is taken up again
    (:func:`rejoin`), ``rejoined`` says how and ``stream`` is where the next partition begins."""

    carried: tuple[Carried, ...]
    unfinished: tuple[str, ...]
    interruption: str | None
    every: int | None = None
    rejoined: Rejoined | None = None
    stream: tuple[str, Any] | None = None

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(c.partition for c in self.carried)


def carry_from(
    old: Path, out: Path, prepared: Prepared, say: Callable[[str], None] | None = None
) -> Carry:
    """What may be carried from the unfinished root ``old`` into the study ``prepared``, to be
    written into the new root ``out``; raises :class:`BadInput` naming why OLD cannot be
    continued. Nothing is written. In stream mode the stream is taken up again here
    (:func:`rejoin`, which ``say`` announces), so that a refusal still writes nothing."""
    frozen_protocol, plan = prepared.frozen_protocol, prepared.plan
    facts = prepared.frozen.facts
    _refuse_unless_unfinished(old)
    if _inside(out, old):
        raise BadInput(
            f"--out {out} is inside --continue-from {old}: the interrupted study's root is "
            "never written; give a new root outside it"
        )
    every = stream_spacing(frozen_protocol.protocol)
    _refuse_other_plan(old, frozen_protocol, plan)
    carried: list[Carried] = []
    unfinished: list[str] = []
    for index, part in enumerate(plan.partitions):
        first = None if every is None else index == 0
        got = _finished(old, part, frozen_protocol, facts, plan.seal.conditions, first)
        if got is not None:
            carried.append(got)
        elif _begun(old, part.id):
            unfinished.append(part.id)
    if every is not None:
        _refuse_gaps(old, carried, [ref.id for ref in plan.seal.partitions])
    carry = Carry(tuple(carried), tuple(unfinished), _interruption(old), every)
    return carry if every is None or not carried else rejoin(old, carry, prepared, say)


def _refuse_gaps(old: Path, carried: Sequence[Carried], ids: Sequence[str]) -> None:
    """In stream mode OLD ran the partitions one after the other in sealed order, so those it
    finished are the plan's first: anything else is refused, naming the first gap."""
    for got, sealed in zip(carried, ids, strict=False):
        if got.partition != sealed:
            raise BadInput(
                f"--continue-from {old}: it finished partition {got.partition} but not "
                f"{sealed} before it, which a stream-seeded study (one generator stream "
                "through the partitions in sealed order) does not do; its files were changed"
            )


def _inside(path: Path, root: Path) -> bool:
    """Whether ``path`` is ``root`` or below it (both resolved as far as they exist)."""
    return path.resolve().is_relative_to(root.resolve())


def _refuse_unless_unfinished(old: Path) -> None:
    """OLD must be a directory a study began in (bagit.txt) and did not finish (no tag
    manifest)."""
    if not old.is_dir() or old.is_symlink():
        raise BadInput(f"--continue-from {old}: not a directory")
    if not (old / layout.BAGIT).is_file():
        raise BadInput(f"--continue-from {old}: not the root of a study (it has no {layout.BAGIT})")
    if os.path.lexists(old / layout.TAGMANIFEST):
        raise BadInput(
            f"--continue-from {old}: a finished bundle, not an interrupted study. Its lost "
            "slots are part of its evidence: running only those again would choose which "
            "results to keep. Run the study again into a new root"
        )


def _refuse_other_plan(old: Path, frozen_protocol: FrozenProtocol, plan: SealedPlan) -> None:
    """OLD's protocol, partitions and seal must be this study's, byte for byte."""
    expected: list[tuple[str, Any]] = [(layout.PROTOCOL, frozen_protocol)]
    expected += [
        (f"data/{ref.file}", part)
        for ref, part in zip(plan.seal.partitions, plan.partitions, strict=True)
    ]
    expected.append((layout.SEAL, plan.seal))
    if not (old / layout.SEAL).is_file():
        raise BadInput(
            f"--continue-from {old}: it stopped before its plan was sealed ({layout.SEAL} is "
            "missing), so no run began there and there is nothing to continue; run the study "
            "again into a fresh root"
        )
    for name, model in expected:
        made = to_bytes(model)
        there = _read(old / name)
        if there == made:
            continue
        what = "is missing" if there is None else _first_difference(there, made)
        raise BadInput(
            f"--continue-from {old}: {name} {what}: OLD is a study of another protocol or "
            "plan (the protocol must freeze, and the plan seal, exactly as OLD's did)"
        )


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _first_difference(there: bytes, here: bytes) -> str:
    """Where OLD's file and this study's first differ, by JSON path, with both values."""
    # Lazy: verify's comparison of a file with its re-derivation, only where OLD differs.
    from repro.verify._content.compare import differences, short

    try:
        old, new = orjson.loads(there), orjson.loads(here)
    except orjson.JSONDecodeError:
        return "differs (it is not JSON)"
    for path, expected, found in differences(new, old):
        return f"differs at {path}: {short(found)} there, {short(expected)} here"
    return "differs in its bytes only (it is not canonical JSON)"


def _finished(
    old: Path,
    part: Partition,
    frozen_protocol: FrozenProtocol,
    facts: AdapterFacts,
    conditions: Sequence[Condition],
    first: bool | None,
) -> Carried | None:
    """The partition as OLD finished it, checked; None when OLD did not finish it. A finished
    partition that fails a check is refused (:class:`BadInput`): OLD's files were changed.
    ``first``: in stream mode, whether the partition is the plan's first (its checkpoint
    begins at the seed); None in per-run mode."""
    names = {n: old / n for n in carried_files(part.id, first is not None)}
    aside = old / contract_file(part.id)
    if not all(p.is_file() and not p.is_symlink() for p in (*names.values(), aside)):
        return None
    try:
        contract = orjson.loads(aside.read_bytes())["contract"]
        if not isinstance(contract, dict):
            raise TypeError
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError):
        raise BadInput(f"--continue-from {old}: {contract_file(part.id)} is not readable") from None
    checked = check_partition(names, part, frozen_protocol, facts, contract, conditions, first)
    if checked.findings:
        findings = checked.findings
        shown = "; ".join(f"{f.code} in {f.file}: {f.what}" for f in findings[:3])
        raise BadInput(
            f"--continue-from {old}: partition {part.id} as OLD finished it does not hold "
            f"(verify's rules name {len(findings)} problem(s): {shown}); it cannot be carried"
        )
    return Carried(
        partition=part.id,
        condition=part.condition,
        files=names,
        digests=checked.digests,
        slots=len(part.entries),
        attempts=checked.attempts,
        contract=contract,
        lost_opens=checked.lost_opens,
        checkpoint=checked.checkpoint,
    )


@frozen
class Checked:
    """What verify's rules found of a finished partition's files (:func:`check_partition`): the
    findings, the run records counted, the session opens lost, each file's sha256 as the reader
    read it (the bytes the rules were applied to), and in stream mode its checkpoint."""

    findings: list[Finding]
    attempts: int
    lost_opens: int
    digests: dict[str, str]
    checkpoint: Checkpoint | None


def check_partition(
    files: Mapping[str, Path],
    part: Partition,
    frozen_protocol: FrozenProtocol,
    facts: AdapterFacts,
    contract: Mapping[str, Any],
    conditions: Sequence[Condition],
    first: bool | None = None,
) -> Checked:
    """Verify's rules applied to one finished partition's runs and times files (``files``, by
    bundle name): each record parses and is what the validity rules give, in sealed order, its
    contract digest is ``contract``'s; the records join the partition's slots with no join
    problem; the times file joins the attempts that ran as verify joins it
    (:func:`repro.verify._content.crate.joined_times`: one line per attempt, in the records'
    order, each ending after it starts and before now). In stream
    mode (``first`` not None: whether the partition is the plan's first) its checkpoint is
    checked too, by verify's rule (:func:`repro.verify._content.checkpoints.check_checkpoint`)."""
    # Lazy: verify's reader and rules, and the tally, only where a study continues another.
    from repro._derive.ledger import contract_sha256
    from repro._derive.scenarios import by_condition
    from repro._derive.tally import tally
    from repro.verify._content.checkpoints import check_checkpoint
    from repro.verify._content.records import RecordChecks, join_findings, read_attempts
    from repro.verify._reader import BundleReader

    protocol = frozen_protocol.protocol
    findings: list[Finding] = []
    read = BundleReader(dict(files), findings)
    checks = RecordChecks(
        {part.condition: contract_sha256(dict(contract))},
        by_condition(protocol, conditions),
        protocol,
        facts,
    )
    runs_name, times_name = layout.runs_file(part.id), layout.times_file(part.id)
    checkpoint = None if first is None else check_checkpoint(read, protocol, part, part.id, first)
    got = read_attempts(read, runs_name, part, checks)
    findings += checks.findings
    if got is None:
        return Checked(findings, 0, 0, {}, checkpoint)
    # A record naming a slot of no partition, or another partition's, is a join problem here.
    attempts, _ = got
    joined = tally(
        [part], attempts, protocol.retry.max_attempts, checks.contracts, checks.scenarios
    )
    findings += join_findings(joined)
    lost = _times_lost(read, part, attempts, times_name)
    digests = {name: read.sha256(name) for name in files}
    kept = {n: d for n, d in digests.items() if d is not None}
    return Checked(findings, len(attempts), lost, kept, checkpoint)


def _times_lost(
    read: BundleReader, part: Partition, attempts: Sequence[Attempt], times_name: str
) -> int:
    """The times file joined with the attempts that ran as verify joins it for the crate
    (problems named in ``read``'s findings): one line per attempt, in the records' order, each
    ending after it starts, and (as the continued study's verify will require) before now, as
    the continued study has not started yet; the session opens lost that it records."""
    # Lazy: verify's times join and the tally's rule, only where a study continues another.
    from repro._derive.tally import runs
    from repro.verify._content.crate import joined_times

    declared = {e.slot for e in part.entries if not runs(e)}
    ran = [a for a in attempts if a.slot not in declared]
    lines = read.times_lines(times_name)
    if lines is None:
        return 0
    window = ("", datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    joined = joined_times(read, times_name, ran, iter(lines), [], window)
    return sum(len(f.times.lost_opens) for f in joined)


def _begun(old: Path, partition: str) -> bool:
    """Whether OLD began the partition: any of its files or their unfinished forms is there."""
    names = (layout.runs_file(partition), layout.times_file(partition), contract_file(partition))
    return any(os.path.lexists(old / n) or os.path.lexists(partial_name(old / n)) for n in names)


def _interruption(old: Path) -> str | None:
    """How OLD said it stopped: the cause in its :data:`STOPPED`, when it wrote one."""
    try:
        cause = orjson.loads((old / STOPPED).read_bytes()).get("cause")
    except (OSError, orjson.JSONDecodeError, AttributeError):
        return None
    return cause if isinstance(cause, str) and INTERRUPTION.match(cause) else None


def copy_carried(carried: Carried) -> Iterator[tuple[str, Iterator[bytes]]]:
    """Each carried file's bundle name and its bytes, read in blocks; raises ``OSError`` when a
    file no longer has the digest it was checked at (OLD changed while it was carried)."""
    for name, path in carried.files.items():
        yield name, _blocks(path, carried.digests[name], name)


def _blocks(path: Path, expected: str, name: str) -> Iterator[bytes]:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_BLOCK):
            digest.update(block)
            yield block
    if digest.hexdigest() != expected:
        raise OSError(errno.EIO, f"{name} changed in the interrupted study while it was carried")


def rejoin(
    old: Path, carry: Carry, prepared: Prepared, say: Callable[[str], None] | None = None
) -> Carry:
    """Take the generator stream up again where the last partition ``carry`` carries left it
    (stream mode): re-run that partition's slots from the last state its checkpoint keeps
    (:func:`repro._derive.continuation.rejoined_at`) to its end in one session on a new worker,
    as ``repro audit`` re-runs a stretch; ``carry`` with what was re-run and the state the
    stretch ended in (after its session closed), where the next partition begins. Raises
    :class:`BadInput` when the re-run records are not OLD's byte for byte (another simulator,
    other sources, or OLD's records were not what it ran): the stream cannot be taken up
    again. Nothing is written."""
    # Lazy: the runner of a stretch, only where a stream-seeded study is continued.
    from repro._execute.replay import Rerun, run_stretch
    from repro._execute.studies import study_job
    from repro._execute.worker import Worker

    last, every = carry.carried[-1], carry.every
    checkpoint = last.checkpoint
    assert every is not None and checkpoint is not None, "stream mode carries checkpoints"
    part = prepared.plan.partitions[len(carry.carried) - 1]
    entries = list(part.entries)
    start = rejoined_at(every, len(entries))
    if start > 0 and checkpoint.every is None:
        raise BadInput(
            f"--continue-from {old}: the checkpoint of {part.id} keeps its first state only "
            f"(repro.checkpoint/1), not the protocol's every {every}; run the study again"
        )
    tail = entries[start:]
    seek = (stream_of(state_at(checkpoint, entries, start)), start > 0)
    if say is not None:
        say(
            f"continuing {old}: re-running the last {len(tail)} slot(s) of {part.id} from the "
            "state its checkpoint keeps, to take up the generator stream where OLD left it"
        )
    protocol = prepared.protocol
    worker = Worker(study_job(prepared, seek[0]), protocol.retry.timeout_seconds)
    try:
        done = run_stretch(
            Rerun(protocol, prepared.plan.seal.conditions, prepared.frozen.facts),
            worker,
            part,
            tail,
            _records(old, last, {e.slot for e in tail}),
            seek,
            close_first=True,
        )
    finally:
        worker.stop()
    differing = [d for e in tail for d in done.differences[e.slot]]
    if differing or done.end is None:
        raise BadInput(
            f"--continue-from {old}: re-running the last {len(tail)} slot(s) of {part.id} from "
            f"the state its checkpoint keeps did not give OLD's records ({len(differing)} "
            f"difference(s), first: {differing[0] if differing else 'no stream state'}), so "
            "the generator stream cannot be taken up where OLD left it (the simulator or its "
            "sources differ from OLD's, or OLD's records are not what it ran); run the study "
            "again"
        )
    rejoined = Rejoined(partition=part.id, start=start, slots=len(tail))
    return evolve(carry, rejoined=rejoined, stream=stream_of(done.end))


def _records(old: Path, carried: Carried, slots: set[str]) -> dict[str, list[RunRecord]]:
    """The run records of ``slots`` in the carried partition's runs file, by slot, read again
    from OLD and checked to be the bytes it was carried at."""
    # Lazy: verify's reader, only where a stream-seeded study is continued.
    from repro.verify._reader import BundleReader

    name = layout.runs_file(carried.partition)
    findings: list[Finding] = []
    read = BundleReader({name: carried.files[name]}, findings)
    out: dict[str, list[RunRecord]] = {}
    for record in read.run_records(name) or ():
        if record is not None and record.slot in slots:
            out.setdefault(record.slot, []).append(record)
    if findings or read.sha256(name) != carried.digests[name]:
        raise BadInput(f"--continue-from {old}: {name} changed while the study read it")
    return out


def write_carried(writer: BundleWriter, carry: Carry) -> list[PartitionRun]:
    """Write the partitions carried from the interrupted study, byte for byte as they were
    checked, with their contracts aside (so that this study, stopped, can be continued too);
    what the study keeps of each."""
    kept: list[PartitionRun] = []
    for part in carry.carried:
        for name, blocks in copy_carried(part):
            writer.stream(name, blocks)
        writer.aside(contract_file(part.partition), aside_contract(part.contract))
        kept.append(PartitionRun(part.condition, part.contract, part.lost_opens))
    return kept


def write_account(writer: BundleWriter, carry: Carry, seal: Seal) -> tuple[Continuation, list[str]]:
    """Write data/continuation.json, the account of what ``carry`` carried and what ran of the
    plan ``seal``; the account and what the rule verify applies finds of it (nothing, unless the
    study is wrong)."""
    continuation = account(carry, [ref.id for ref in seal.partitions])
    problems = account_problems(carry, continuation, seal)
    writer.model(layout.CONTINUATION, continuation)
    return continuation, problems


def account_problems(carry: Carry, continuation: Continuation, seal: Seal) -> list[str]:
    """What the rule verify applies (:func:`repro._derive.continuation.continuation_problems`)
    finds of the account this study is about to write, against the carried files' digests and
    run records as they were checked: nothing, unless the study is wrong."""
    digests = {name: d for part in carry.carried for name, d in part.digests.items()}
    attempts = {part.partition: part.attempts for part in carry.carried}
    return continuation_problems(continuation, seal, digests, attempts, carry.every)


def account(carry: Carry, plan_ids: Sequence[str]) -> Continuation:
    """data/continuation.json of a study that carried ``carry`` and ran the rest of the
    partitions ``plan_ids`` (in sealed order): ``repro.continuation/2``, with ``rejoined``,
    for a stream-seeded study."""
    carried = tuple(
        CarriedPartition(
            partition=c.partition, files=dict(c.digests), slots=c.slots, attempts=c.attempts
        )
        for c in carry.carried
    )
    return Continuation(
        schema="repro.continuation/1" if carry.every is None else "repro.continuation/2",
        carried_sha256=carried_sha256(carried),
        carried=carried,
        ran=tuple(p for p in plan_ids if p not in carry.ids),
        unfinished=carry.unfinished,
        interruption=carry.interruption,
        rejoined=carry.rejoined,
    )


class LeftToRun(PartitionsWhenRead):
    """The partitions of ``partitions`` (a plan's, expanded when read) that were not carried, in
    sealed order, each expanded only when asked for, as the plan's are."""

    def __init__(
        self, partitions: Sequence[Partition], ids: Sequence[str], carried: frozenset[str]
    ):
        self._partitions = partitions
        self._left = [index for index, pid in enumerate(ids) if pid not in carried]

    def __len__(self) -> int:
        return len(self._left)

    def _at(self, index: int) -> Partition:
        return self._partitions[self._left[index]]
