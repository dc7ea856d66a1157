"""A continued study's account (``data/continuation.json``) against the bundle it is in, and the
``continuation`` tier that says what it carried and ran.

:func:`continuation_problems` is the one rule: ``repro study --continue-from`` applies it to the
account it is about to write (with the digests it computed of the files it carried and the run
records it counted in them), ``repro verify`` to the account a bundle holds (with the digests
of the files as read and the run records tallied), each problem a ``continuation-account``
finding. Neither can see the interrupted study: the account is checked against the bundle."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

from repro import _layout as layout
from repro._json import canonical
from repro._json.serde import to_bytes
from repro._plan.streams import segment
from repro.models import CarriedPartition, Continuation, Seal, Tier

__all__ = [
    "INTERRUPTION",
    "carried_files",
    "carried_sha256",
    "continuation_problems",
    "continuation_tier",
    "continued_note",
    "rejoined_at",
]

#: How an interrupted study may say it stopped: a short upper-case token (``SIGINT``,
#: ``SIGTERM``, ``SIGHUP``).
INTERRUPTION = re.compile(r"^[A-Z][A-Z0-9]{1,15}$")

#: At most this many partitions are named one by one in a problem or a piece of evidence.
_LISTED = 10


def carried_sha256(carried: Sequence[CarriedPartition]) -> str:
    """The sha256 of the canonical JSON of the ``carried`` list: what names what the
    interrupted study gave."""
    return canonical.sha256_hex(to_bytes(list(carried)))


def _name(value: str) -> str:
    """A name from the account, quoted and cut short: the account may hold anything."""
    return repr(value if len(value) <= 40 else value[:40] + "...")


def _names(values: Sequence[str]) -> str:
    shown = ", ".join(_name(v) for v in values[:_LISTED])
    return shown + (f" and {len(values) - _LISTED} more" if len(values) > _LISTED else "")


def _order_problems(where: str, ids: Sequence[str], sealed: Mapping[str, int]) -> list[str]:
    """Each partition of ``ids`` the seal does not name, each named twice, and whether the
    others are out of sealed order."""
    problems = []
    unknown = [i for i in ids if i not in sealed]
    if unknown:
        problems.append(f"$.{where}: partition(s) the seal does not name: {_names(unknown)}")
    repeated = sorted(i for i, n in Counter(ids).items() if n > 1)
    if repeated:
        problems.append(f"$.{where}: partition(s) named more than once: {_names(repeated)}")
    known = [sealed[i] for i in ids if i in sealed]
    if known != sorted(known):
        problems.append(f"$.{where}: partitions not in sealed order")
    return problems


def carried_files(partition: str, stream: bool) -> list[str]:
    """The files a continuation carries of a finished partition, sorted: those its runs wrote
    (:func:`repro._layout.run_files`: its runs and times files, and in stream mode its
    checkpoint)."""
    return sorted(layout.run_files(partition, stream))


def _carried_problems(
    index: int,
    carried: CarriedPartition,
    slots: Mapping[str, int],
    digests: Mapping[str, str],
    attempts: Mapping[str, int],
    stream: bool,
) -> list[str]:
    """What one carried partition's entry says that its files in the bundle do not."""
    where, partition = f"$.carried[{index}]", carried.partition
    if partition not in slots:
        return []  # named by the order check
    problems = []
    expected = carried_files(partition, stream)
    if sorted(carried.files) != expected:
        what = "runs, times and checkpoint files" if stream else "runs and times files"
        problems.append(
            f"{where}.files: names {_names(sorted(carried.files))}, not the partition's {what} "
            f"({', '.join(expected)})"
        )
    for name in expected:
        digest = carried.files.get(name)
        if digest is not None and digest != digests.get(name):
            problems.append(
                f"{where}.files: sha256 of {name} is {_name(digest)}, the bundle's is "
                f"{digests.get(name) or 'absent'}"
            )
    if carried.slots != slots[partition]:
        problems.append(
            f"{where}.slots: {carried.slots}, the seal gives {partition} {slots[partition]} slots"
        )
    if carried.attempts != attempts.get(partition):
        found = attempts.get(partition)
        problems.append(
            f"{where}.attempts: {carried.attempts}, the runs file of {partition} holds "
            f"{'no' if found is None else found} run record(s)"
        )
    return problems


def rejoined_at(every: int, slots: int) -> int:
    """Where a stream-seeded continuation takes up the stream in the last carried partition,
    of ``slots`` slots whose checkpoint keeps a state every ``every``: the index of its last
    kept state (its last stretch's first slot; 0, its first state, when it keeps no other)."""
    return segment(every, slots, slots - 1)[0]


def _stream_problems(
    continuation: Continuation, seal: Seal, slots: Mapping[str, int], every: int | None
) -> list[str]:
    """What the account says against how the protocol seeds (``every``: the checkpoint spacing
    of a stream-seeded protocol, None for per-run seeding): its schema; in stream mode, that it
    carried the plan's first partitions and took the stream up again from the last one's last
    kept state (``rejoined``)."""
    rejoined = continuation.rejoined
    if every is None:
        if continuation.schema != "repro.continuation/1" or rejoined is not None:
            return [
                f"$.schema: {continuation.schema}"
                + (" with $.rejoined" if rejoined is not None else "")
                + ", the account of a stream-seeded study; this protocol seeds each run "
                "(repro.continuation/1)"
            ]
        return []
    if continuation.schema != "repro.continuation/2":
        return [
            f"$.schema: {continuation.schema}; a stream-seeded study's account is "
            "repro.continuation/2"
        ]
    carried = [c.partition for c in continuation.carried]
    first = [ref.id for ref in seal.partitions[: len(carried)]]
    problems = []
    if carried != first:
        problems.append(
            "$.carried: not the plan's first partitions in sealed order, which are all a "
            "stream-seeded study can carry (each begins where the one before it left the stream)"
        )
    if not carried:
        if rejoined is not None:
            problems.append("$.rejoined: present, but no partition was carried")
        return problems
    last = carried[-1]
    if rejoined is None:
        return [
            *problems,
            f"$.rejoined: absent; the stream must be taken up again in {_name(last)}",
        ]
    if rejoined.partition != last:
        problems.append(
            f"$.rejoined.partition: {_name(rejoined.partition)}, not the last carried partition "
            f"{_name(last)}"
        )
    count = slots.get(last)
    if count is None:
        return problems  # named by the order check
    start = rejoined_at(every, count)
    if rejoined.start != start:
        problems.append(
            f"$.rejoined.start: {rejoined.start}, not the last state {_name(last)}'s checkpoint "
            f"keeps (slot index {start} of {count}, every {every})"
        )
    if rejoined.slots != count - start:
        problems.append(
            f"$.rejoined.slots: {rejoined.slots}, not the {count - start} slot(s) from there to "
            f"the end of {_name(last)}"
        )
    return problems


def _partition_problems(continuation: Continuation, seal: Seal) -> list[str]:
    """What the account's lists of partitions say against the seal: each in sealed order
    without repeats, every sealed partition carried or ran and never both, ``unfinished``
    among those that ran."""
    sealed = {ref.id: number for number, ref in enumerate(seal.partitions)}
    carried = [c.partition for c in continuation.carried]
    ran = list(continuation.ran)
    problems = [
        *_order_problems("carried", carried, sealed),
        *_order_problems("ran", ran, sealed),
    ]
    # Sets: an account may name any number of partitions, and each is looked up once.
    ran_set, carried_set = set(ran), set(carried)
    both = [p for p in carried if p in ran_set]
    if both:
        problems.append(f"$.ran: partition(s) both carried and ran: {_names(both)}")
    neither = [p for p in sealed if p not in carried_set and p not in ran_set]
    if neither:
        problems.append(f"$: sealed partition(s) neither carried nor ran: {_names(neither)}")
    problems += [
        p.replace("partition(s) the seal does not name", "partition(s) that did not run")
        for p in _order_problems(
            "unfinished", list(continuation.unfinished), {k: sealed[k] for k in ran if k in sealed}
        )
    ]
    return problems


def continuation_problems(
    continuation: Continuation,
    seal: Seal,
    digests: Mapping[str, str],
    attempts: Mapping[str, int],
    every: int | None,
) -> list[str]:
    """Every way the account ``continuation`` disagrees with the bundle it is in, each a line
    that starts with the JSON path of what it names; none when it is consistent.

    ``digests``: the sha256 of each bundle file (by bundle name, ``data/runs/c00.jsonl``) as
    the bundle holds it, of the carried partitions' runs and times files at least (a study
    computes them before its manifest exists); ``attempts``: the run records in each carried
    partition's runs file, by partition.

    The rules: every sealed partition is carried or ran, never both, and no other; each list
    in sealed order, without repeats; ``unfinished`` lists partitions that ran; each carried
    partition's ``files`` are exactly its runs and times files, each with the digest the bundle
    gives it; its ``slots`` are the seal's for it, its ``attempts`` the run records its runs file
    holds; ``carried_sha256`` is the sha256 of the canonical JSON of ``carried``
    (:func:`carried_sha256`); ``interruption`` is null or a short token
    (:data:`INTERRUPTION`).

    ``every``: the checkpoint spacing of a stream-seeded protocol, None for per-run seeding.
    A per-run study's account is ``repro.continuation/1``. A stream-seeded study's is
    ``repro.continuation/2``: its carried partitions are the plan's first, each carrying its
    checkpoint too, and ``rejoined`` names the last of them, the index of the last state its
    checkpoint keeps (:func:`rejoined_at`) and the slots from there to its end."""
    slots = {ref.id: ref.entries for ref in seal.partitions}
    problems = _partition_problems(continuation, seal)
    problems += _stream_problems(continuation, seal, slots, every)
    for index, entry in enumerate(continuation.carried):
        problems += _carried_problems(index, entry, slots, digests, attempts, every is not None)
    digest = carried_sha256(continuation.carried)
    if continuation.carried_sha256 != digest:
        problems.append(
            f"$.carried_sha256: {continuation.carried_sha256}, the sha256 of the canonical JSON "
            f"of $.carried is {digest}"
        )
    if continuation.interruption is not None and not INTERRUPTION.match(continuation.interruption):
        problems.append(
            f"$.interruption: {_name(continuation.interruption)}, not null nor a short token "
            "such as SIGINT"
        )
    return problems


def _spans(ids: Sequence[str], seal: Seal) -> str:
    """``ids`` as a reader reads them: each run of consecutive sealed partitions as its first
    and last (``c02-c08``), the rest one by one."""
    order = {ref.id: number for number, ref in enumerate(seal.partitions)}
    spans: list[list[str]] = []
    for i in ids:
        last = spans[-1][-1] if spans else None
        if last is not None and i in order and last in order and order[i] == order[last] + 1:
            spans[-1].append(i)
        else:
            spans.append([i])
    shown = [s[0] if len(s) == 1 else f"{s[0]}-{s[-1]}" for s in spans[:_LISTED]]
    more = len(spans) - _LISTED
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def continuation_tier(continuation: Continuation, seal: Seal, problems: Sequence[str]) -> Tier:
    """continuation: what the continued study carried whole from the interrupted one and what
    it ran; pass when the account agrees with the bundle (:func:`continuation_problems` found
    nothing), fail naming the first of ``problems`` otherwise."""
    carried = continuation.carried
    total = len(seal.partitions)
    how = (
        f"({continuation.interruption})"
        if continuation.interruption is not None
        else "(which left no word of how it stopped)"
    )
    if carried:
        ids = [c.partition for c in carried]
        slots = sum(c.slots for c in carried)
        records = sum(c.attempts for c in carried)
        first = (
            f"carried {len(carried)} of {total} partitions whole ({_spans(ids, seal)}: "
            f"{slots:,} slots, {records:,} run records) from an interrupted study {how}, "
            f"sha256 {continuation.carried_sha256}"
        )
    else:
        first = f"carried none of {total} partitions from an interrupted study {how}"
    ran = list(continuation.ran)
    second = f"ran {len(ran)} partition(s)" + (f" ({_spans(ran, seal)})" if ran else "")
    unfinished = list(continuation.unfinished)
    if unfinished:
        second += (
            f"; {len(unfinished)} begun there and left unfinished ran again from the first slot "
            f"({_spans(unfinished, seal)})"
        )
    rejoined = continuation.rejoined
    if rejoined is not None:
        second += (
            f"; the generator stream was taken up where the interrupted study left it: the last "
            f"{rejoined.slots} slot(s) of {_name(rejoined.partition)}, from the state its "
            "checkpoint keeps, ran again and gave the carried records byte for byte (which "
            "repro audit can re-check)"
        )
    evidence = (first, second)
    if problems:
        reason = (
            f"{len(problems)} inconsistency(ies) between the account and the bundle, first: "
            f"{problems[0]}"
        )
        return Tier("continuation", "fail", evidence, reason)
    return Tier("continuation", "pass", evidence, None)


def continued_note(continuation: Continuation, partitions: int) -> str:
    """What ``repro show`` says of a continued study's bundle, of a plan of ``partitions``
    sealed partitions: that it was continued, and how many partitions it carried."""
    carried = len(continuation.carried)
    return f"continued from an interrupted study: {carried} of {partitions} partitions carried"
