"""``repro study``: freeze and seal a protocol, run it into a fresh root, and say how it ended."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from repro._cli.options import AdapterOptions, parse_options
from repro._cli.output import emit, err_console, print_protocol_warnings
from repro._cli.progress import (
    BarProgress,
    Labels,
    LineProgress,
    console_meanwhile,
    stderr_is_terminal,
    study_work,
)
from repro._cli.started import command, started
from repro._execute.backends import MAX_LOCAL_WORKERS, MAX_THREAD_WORKERS, backend_of
from repro._execute.stopping import FIRST_SLOTS
from repro.errors import EXIT_OK, EXIT_SLOTS_LOST, EXIT_STUDY_STOPPED, BadInput, install_hint

if TYPE_CHECKING:
    from collections.abc import Mapping

    from repro._derive.derivation import Derived
    from repro._derive.tally import LossStatus
    from repro._execute.continuation import Carry
    from repro._execute.spares import Spares
    from repro._execute.studies import Prepared, StudyResult
    from repro.models import Aggregates, Ledger

__all__ = ["study"]

_Protocol = Annotated[Path, typer.Argument(help="Run the protocol in this JSON file.")]
_Out = Annotated[
    Path,
    typer.Option(
        "--out",
        help="Write the bundle into this new root, created 0700: it must not exist, and its "
        "parent directory must (repro creates no directory above the root, so a mistyped "
        "path creates nothing).",
    ),
]
_Workers = Annotated[
    int | None,
    typer.Option(
        "--workers",
        help=f"Run partitions on N local worker processes at once (1 to {MAX_LOCAL_WORKERS}; "
        "default 1). Per-run seeding only. An adapter whose sessions only wait on other "
        "processes (the command adapter's) runs N slots at once on threads of the study "
        f"process instead (1 to {MAX_THREAD_WORKERS}).",
        show_default=False,
    ),
]
_Scheduler = Annotated[
    str | None,
    typer.Option(
        "--scheduler",
        help="Run each partition as a task on the Dask cluster whose scheduler is at ADDRESS "
        f"(e.g. tcp://127.0.0.1:8786). Per-run seeding only. For Dask, {install_hint('dask')}.",
    ),
]
_AcceptLosses = Annotated[
    bool,
    typer.Option(
        "--accept-losses",
        help=f"Exit {EXIT_OK} even when a slot that ran did not end valid (by default such "
        f"a study exits {EXIT_SLOTS_LOST}, its bundle written whole); slots the protocol "
        "excludes before sealing never count as lost.",
    ),
]
_KeepGoing = Annotated[
    bool,
    typer.Option(
        "--keep-going",
        help=f"Run the whole plan even when the first {FIRST_SLOTS} slots to end all fail "
        "with the same fault of the harness, the policy or the protocol (by default the "
        f"study stops then, exit {EXIT_STUDY_STOPPED}, before it spends the rest).",
    ),
]
_ContinueFrom = Annotated[
    Path | None,
    typer.Option(
        "--continue-from",
        metavar="OLD",
        help="Continue the interrupted study whose root is OLD, a study of the same protocol "
        "(it must freeze and seal exactly as OLD's did) that stopped before it finished. The "
        "partitions OLD finished are checked by verify's rules and carried into OUT byte for "
        "byte; every other partition runs from its first slot; OUT's "
        "data/continuation.json says which. OLD is never written. Per-run seeding only.",
        show_default=False,
    ),
]
_Strict = Annotated[
    bool,
    typer.Option(
        "--strict",
        hidden=True,
        help="Kept so that scripts written for earlier versions run: what it did is now "
        "the default.",
    ),
]


def study(
    protocol: _Protocol,
    out: _Out,
    option: AdapterOptions = None,
    workers: _Workers = None,
    scheduler: _Scheduler = None,
    accept_losses: _AcceptLosses = False,
    keep_going: _KeepGoing = False,
    continue_from: _ContinueFrom = None,
    strict: _Strict = False,
) -> None:
    """Freeze and seal PROTOCOL, run every slot into the fresh root OUT, and bundle the evidence.

    It ends by printing the command that verifies OUT, worded as repro was started (uv run,
    python -m repro, the repro on PATH or the script's own path)."""
    if scheduler is not None and workers is not None:
        raise BadInput(
            "--workers and --scheduler exclude each other: the cluster's workers run the partitions"
        )
    # Lazy: `repro --help` imports this module; only `repro study` runs the study machinery.
    from repro._execute.spares import Spares, runs_on_threads

    with Spares() as spares:
        if scheduler is None and not runs_on_threads(protocol):
            # A local study's first worker process starts now, and imports as the study
            # does and prepares (repro._execute.studies.Prestart); one not taken is killed.
            # A study whose sessions run on threads starts none: it would only slow it.
            spares.start(1)
        result, carry = _study(
            protocol, out, option, (workers, scheduler), spares, keep_going, continue_from
        )
    err = err_console()
    rep = result.derived.tiers.reproduction
    err.print(
        f"done in {result.wall_seconds:.1f} s: {_headline(result.derived)}; "
        f"reproduction {rep.verdict}",
        highlight=False,
    )
    if carry is not None:
        parts = len(result.derived.ledger.contracts)
        err.print(
            f"continued: {len(carry.carried)} of {parts} partitions carried from the "
            f"interrupted study, {parts - len(carry.carried)} run here "
            "(data/continuation.json)",
            highlight=False,
        )
    _print_losses(
        result.derived.ledger, result.derived.aggregates, result.lost_opens, result.lost_as
    )
    # The command as repro was started: a bare `repro` is not on PATH after `uv run repro`.
    emit(command(["verify", str(out)], started()))
    if result.lost and not accept_losses:
        raise typer.Exit(EXIT_SLOTS_LOST)


def _headline(derived: Derived) -> str:
    """The one figure a study's end names: its primary contrast (the comparison the protocol
    declared first of all) when it declares one, with its interval and verdict; else its
    estimand, with its interval's half-width."""
    primary = [c for c in (derived.contrasts.contrasts if derived.contrasts else ()) if c.primary]
    if primary:
        c = primary[0]
        if c.estimate is None:
            return f"{c.id} undefined, {c.verdict}"
        shown = f"{c.id} = {c.estimate:+.4f}"
        if c.interval is not None:
            shown += f" [{c.interval.low:.4f}, {c.interval.high:.4f}]"
        return f"{shown}, {c.verdict}"
    e = derived.aggregates.estimand
    summary = f"{e.kind} = {e.value:.4f}" if e.value is not None else f"{e.kind} undefined"
    if e.interval is not None:
        summary += f" ± {e.interval.halfwidth:.4f}"
    return summary


def _study(
    protocol: Path,
    out: Path,
    option: list[str] | None,
    where: tuple[int | None, str | None],
    spares: Spares,
    keep_going: bool = False,
    continue_from: Path | None = None,
) -> tuple[StudyResult, Carry | None]:
    """Prepare and run the study of ``repro study`` (on ``where``: its workers or scheduler),
    its progress on stderr; local workers take their first processes from ``spares``; with
    ``continue_from``, carrying what that interrupted study finished."""
    # Lazy: `repro --help` imports this module; only `repro study` runs the study machinery.
    from repro._execute.continuation import carry_from
    from repro._execute.studies import Prestart, prepare
    from repro._execute.studies import study as run_study

    workers, scheduler = where
    backend = backend_of(workers, scheduler)
    prepared = prepare(protocol, parse_options(option or []), Prestart(backend, spares).early)
    print_protocol_warnings(prepared.warnings)
    carry = (
        None
        if continue_from is None
        else carry_from(continue_from, out, prepared, say=_say_on_stderr)
    )
    if carry is not None and continue_from is not None:
        err_console().print(carried_line(carry, continue_from, prepared), highlight=False)
    labels = Labels(prepared.protocol, prepared.plan.seal.conditions)
    work = study_work(prepared, frozenset() if carry is None else carry.ids)
    terminal = stderr_is_terminal()
    progress = BarProgress(labels, work) if terminal else LineProgress(labels, work)
    result = run_study(
        prepared,
        out,
        progress,
        backend,
        spares,
        console_meanwhile,
        keep_going=keep_going,
        carry=carry,
    )
    return result, carry


def _say_on_stderr(line: str) -> None:
    err_console().print(line, highlight=False)


def carried_line(carry: Carry, old: Path, prepared: Prepared) -> str:
    """What a continuation takes from ``old`` and what it runs, said before it runs."""
    parts = prepared.plan.seal.partitions
    slots = sum(c.slots for c in carry.carried)
    left = len(parts) - len(carry.carried)
    again = (
        f" ({len(carry.unfinished)} begun there run again from their first slot)"
        if carry.unfinished
        else ""
    )
    if not carry.carried:
        return (
            f"continuing {old}: it finished no partition, so nothing is carried; running all {left}"
        )
    stream = ""
    if carry.rejoined is not None:
        r = carry.rejoined
        stream = (
            f"; the generator stream taken up where OLD left it (the last {r.slots} slot(s) of "
            f"{r.partition} re-run gave OLD's records byte for byte)"
        )
    return (
        f"continuing {old}: {len(carry.carried)} of {len(parts)} partitions carried whole "
        f"({slots:,} slots, checked by verify's rules){stream}; running the other {left}{again}"
    )


def _print_losses(
    ledger: Ledger, aggregates: Aggregates, lost_opens: int, lost_as: Mapping[str, LossStatus]
) -> None:
    """Say on stderr what the study lost, grouped by how each slot ended (``lost_as``: invalid,
    failed or excluded, :func:`repro._derive.tally.loss_status`) and by cause (``12 of 600 slots
    failed (attempts exhausted): policy-error:ZeroDivisionError (12)``), and how many session
    opens a dying worker cost (the exit counts lost slots with
    :func:`repro._execute.studies.lost_slots`)."""
    # Lazy: the tally and its models only to print losses, not at `repro --help`.
    from repro._derive.tally import loss_groups

    err = err_console()
    total = sum(c.scheduled for c in aggregates.conditions)
    for status, losses in loss_groups(ledger.losses, lost_as):
        causes = Counter(loss.cause for loss in losses)
        shown = ", ".join(f"{cause} ({n})" for cause, n in causes.most_common())
        err.print(
            f"{len(losses)} of {total} slots {_ENDED[status]}: {shown}",
            highlight=False,
            markup=False,
        )
    if lost_opens:
        err.print(
            f"{lost_opens} session open(s) lost to a dying worker process and retried with a "
            "fresh one (recorded with the attempts' times)",
            highlight=False,
        )


#: How the study's end words each way a slot did not end valid (docs/bundle-format.md).
_ENDED: dict[str, str] = {
    "invalid": "invalid (ran, but outside the protocol's validity rules)",
    "failed": "failed (attempts exhausted)",
    "excluded": "excluded",
}
