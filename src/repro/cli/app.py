"""The ``repro`` command line: parse, call, print.

Each command's exit codes are in :data:`EXITS`, made of :mod:`repro.errors`' constants, and its
help names them.
"""

from __future__ import annotations

import collections.abc
import functools
import gc
import importlib
import importlib.util
import inspect
import math
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

# Each command imports what it needs when it runs: the study machinery (adapters, workers, the
# Dask client) and rich's progress bars and tables cost a start-up that ``repro verify`` and
# ``repro --help`` have no use for.
import typer

from repro._escape import json_text, visible
from repro.errors import (
    EXIT_BAD_INPUT,
    EXIT_OK,
    EXIT_SIGNAL_BASE,
    EXIT_SLOTS_LOST,
    EXIT_STUDY_STOPPED,
    EXIT_VERIFY_FAILED,
    BadInput,
    NotVerified,
    Refused,
    ReproError,
    StudyStopped,
    exit_code,
    install_hint,
)
from repro.execute.backends import (
    MAX_LOCAL_WORKERS,
    MAX_THREAD_WORKERS,
    Backend,
    DaskCluster,
    LocalWorkers,
)
from repro.execute.stopping import FIRST_SLOTS

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence

    from rich.console import Console

    from repro.bundle.signatures import PublicKey
    from repro.derive.derivation import Derived
    from repro.derive.tally import LossStatus
    from repro.execute.spares import Spares
    from repro.execute.studies import Prepared, StudyResult
    from repro.models import Aggregates, Condition, Ledger, Protocol
    from repro.verify import Finding, Limits

__all__ = ["app", "main"]

_NEEDS_MATPLOTLIB = f"plotting needs matplotlib: {install_hint('plot')}"

#: -h as well as --help, on every command (subcommands inherit their group's settings).
_CONTEXT = {"help_option_names": ["-h", "--help"]}

#: A study stopped by signal N exits with this code.
_SIGNALLED = f"{EXIT_SIGNAL_BASE} + N"

#: The limits ``repro verify --limit`` sets, as :class:`repro.verify.Limits` names them (named
#: here so that the command line's help needs no import of the verifier;
#: tests/test_verify_hardening.py holds it to the class).
VERIFY_LIMITS = (
    "max_files",
    "max_file_bytes",
    "max_total_bytes",
    "max_depth",
    "max_json_depth",
    "max_resamples",
    "max_derivation_work",
    "max_held_file_bytes",
    "max_line_bytes",
    "max_findings",
    "max_bad_lines",
    "max_signatures",
    "max_signature_bytes",
    "max_compression_ratio",
    "max_archive_index_bytes",
    "max_archive_ratio",
)

#: Every command's exit codes and what each means there, by the command's name as typed
#: ("protocol check"), from repro.errors' constants: each help's "Exit codes" paragraph.
EXITS: dict[str, tuple[tuple[int | str, str], ...]] = {
    "": (
        (EXIT_OK, "ok"),
        (
            EXIT_VERIFY_FAILED,
            "a bundle does not verify, a replay differs, a gate or a comparison fails",
        ),
        (EXIT_BAD_INPUT, "bad input, nothing written"),
        (
            EXIT_STUDY_STOPPED,
            "a study stopped by an I/O error, a failed cluster, or its first slots all failing "
            "the same structural way",
        ),
        (EXIT_SLOTS_LOST, "a study lost a slot that ran (unless --accept-losses)"),
        (_SIGNALLED, "a study stopped by signal N"),
    ),
    "study": (
        (EXIT_OK, "done"),
        (EXIT_BAD_INPUT, "bad input (nothing written)"),
        (
            EXIT_STUDY_STOPPED,
            "stopped by an I/O error, a failed cluster, or its first slots all failing the same "
            "structural way (OUT is incomplete)",
        ),
        (
            EXIT_SLOTS_LOST,
            "done, but a slot that ran did not end valid (OUT is whole; --accept-losses: 0)",
        ),
        (_SIGNALLED, "stopped by signal N, 130 for SIGINT (OUT is incomplete)"),
    ),
    "verify": (
        (
            EXIT_OK,
            "verifies (and with --trusted-key, every signature checks; with --bagit-only, a "
            "valid bag, its warnings named)",
        ),
        (EXIT_VERIFY_FAILED, "findings (each named), a signature's among them"),
        (
            EXIT_BAD_INPUT,
            "not a bundle (a valid bag that is not a repro bundle among them), or a "
            "--trusted-key that is not an Ed25519 public key",
        ),
    ),
    "sign": (
        (EXIT_OK, "signed (or already signed by this key: the same bytes)"),
        (
            EXIT_BAD_INPUT,
            "not a bundle, a bundle that does not verify, a key that is not an Ed25519 private "
            "key or cannot be read, or another signature by this key already there",
        ),
    ),
    "pack": (
        (EXIT_OK, "written"),
        (
            EXIT_BAD_INPUT,
            "not a bundle directory, a bundle that does not verify, or --out exists or is not "
            "a .zip or .tar (nothing written)",
        ),
    ),
    "replay": (
        (EXIT_OK, "byte-identical"),
        (EXIT_VERIFY_FAILED, "differs (each differing field named)"),
        (EXIT_BAD_INPUT, "the bundle does not verify, an unknown slot, or other simulator sources"),
    ),
    "audit": (
        (EXIT_OK, "every re-executed slot byte-identical, every chained state matched"),
        (
            EXIT_VERIFY_FAILED,
            "a slot differs or a kept state does not chain (each named; signed all the same)",
        ),
        (
            EXIT_BAD_INPUT,
            "the bundle does not verify, a bad --sample, other simulator sources, a bad key, "
            "or another audit signature by this key already there",
        ),
    ),
    "publish": (
        (EXIT_OK, "written"),
        (EXIT_VERIFY_FAILED, "does not verify or a gate fails (nothing written)"),
        (EXIT_BAD_INPUT, "not a scored bundle, or --out exists"),
    ),
    "compare": (
        (EXIT_OK, "no regression"),
        (EXIT_VERIFY_FAILED, "a regression, or a bundle that does not verify"),
        (EXIT_BAD_INPUT, "not one protocol family, or not bundles"),
    ),
    "adapters": ((EXIT_OK, "always, even when some adapter does not load"),),
    "protocol": ((EXIT_OK, "ok"), (EXIT_BAD_INPUT, "bad input")),
    "protocol check": (
        (EXIT_OK, "valid"),
        (EXIT_BAD_INPUT, "bad input (named with its JSON path)"),
    ),
    "protocol new": (
        (EXIT_OK, "written"),
        (EXIT_BAD_INPUT, "no such template, or --out exists or cannot be written"),
    ),
    "protocol power": (
        (EXIT_OK, "planned"),
        (
            EXIT_BAD_INPUT,
            "bad input: a protocol without contrasts or with a clustered one, a pilot that does "
            "not verify or is of another family, too few pilot pairs or runs, an sd of 0, no "
            "discordant pair, a planned sample beyond the exact enumeration's limit (each named "
            "with its JSON path)",
        ),
    ),
    "show": (
        (EXIT_OK, "shown (and written)"),
        (EXIT_VERIFY_FAILED, "does not verify (findings named, nothing written)"),
        (EXIT_BAD_INPUT, "not a bundle, or FILE exists (nothing written)"),
    ),
}


#: The options ``study``, ``replay``, ``audit`` and ``protocol power`` share, declared once.
_AdapterOptions = Annotated[
    list[str] | None,
    typer.Option("--option", help="Pass the adapter an option, KEY=VALUE; repeat it for more."),
]
_Json = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
_Traceback = Annotated[
    bool,
    typer.Option(
        "--traceback",
        help="Print the traceback of every exception the adapter raises to stderr "
        "(on this terminal only: no bundle ever keeps one).",
    ),
]
_Sources = Annotated[
    Path | None,
    typer.Option(
        "--sources",
        help="The directory the study's protocol file was in. The modules the bundle names "
        "(a callable policy, an agent class, an inspect task) are looked up there first, then "
        "on the import path, and the files it names (a command harness) there only; each "
        "must match the bundle's ledger before it runs. Without it, nothing the bundle names "
        "is imported or run.",
        show_default=False,
    ),
]


def _exit_codes(command: str) -> str:
    """The "Exit codes" paragraph of ``command``'s help (:data:`EXITS`)."""
    return "Exit codes: " + "; ".join(f"{code} {meaning}" for code, meaning in EXITS[command]) + "."


_F = TypeVar("_F", bound="Callable[..., Any]")


def _one_line(paragraph: str) -> str:
    """A paragraph of help text on one line, each run of white space a space: the terminal
    wraps it to its width."""
    return " ".join(paragraph.split())


def _command(group: typer.Typer, name: str) -> Callable[[_F], _F]:
    """Register a function as the command ``name`` of ``group``; its help is its docstring and
    then its exit codes, and its line in the group's list of commands the docstring's first
    paragraph. Each paragraph's source line breaks are made spaces: typer's rich help keeps
    them, which broke sentences mid-line at any width."""

    def register(function: _F) -> _F:
        full = name if group is app else f"protocol {name}"
        paragraphs = [_one_line(p) for p in inspect.cleandoc(function.__doc__ or "").split("\n\n")]
        text = "\n\n".join([*paragraphs, _exit_codes(full)])
        group.command(name, help=text, short_help=paragraphs[0])(function)
        return function

    return register


app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    context_settings=_CONTEXT,
    help="Freeze a protocol, run it into a sealed bundle, and verify bundles offline.\n\n"
    + _exit_codes(""),
)


def _version() -> str:
    """repro's version (:func:`repro.version`)."""
    from repro import version

    return version()


def _print_version(value: bool) -> None:
    if value:
        _out(f"repro {_version()}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print repro's version and exit.",
            is_eager=True,
            callback=_print_version,
        ),
    ] = False,
) -> None:
    del version  # handled, eagerly, by its callback


def _out(line: str, *, err: bool = False) -> None:
    """Print ``line`` on stdout (on stderr with ``err``) as it is, but for its control
    characters, shown as text (:func:`repro._escape.visible`): whatever a bundle or a protocol
    holds (a file name, a factor level) reaches the terminal as text. Every line the command
    line prints without rich goes through here; everything it prints with rich, through a
    console of :func:`repro.present.terminal.console`, which does the same."""
    print(visible(line), file=sys.stderr if err else sys.stdout, flush=err)


@functools.cache
def _err() -> Console:
    """The console for messages on stderr, made on first use: a verify that succeeds prints
    nothing through it, so it never imports rich. On a terminal it wraps long lines; anywhere
    else it wraps none (:func:`repro.present.terminal.console`)."""
    from repro.present.terminal import console

    return console(stderr=True)


class _Work:
    """The work of a study in each slot's cost (:func:`repro.adapters.base.slot_costs`: a
    CAGE-2 episode's trial length, else 1), so that the time left is the time per unit of cost
    measured so far times the cost left, not the time per slot times the slots left."""

    def __init__(self, costs: Mapping[str, float], slots: Mapping[str, int]) -> None:
        self._costs = costs
        self.total = math.fsum(costs.get(c, 1.0) * n for c, n in slots.items())
        self.done = 0.0

    def advance(self, condition: str) -> float:
        """One slot of ``condition`` is done; its cost."""
        cost = self._costs.get(condition, 1.0)
        self.done += cost
        return cost

    def left(self, elapsed: float) -> float:
        """Seconds left, at the rate measured over ``elapsed`` seconds."""
        return elapsed / self.done * max(0.0, self.total - self.done) if self.done else 0.0


class _BarProgress:
    """A progress bar with ETA, for terminals; it names the condition of the slot that ended
    last by ``labels`` (condition ID to ``c01 env_id=CartPole-v1 / random``). The bar fills,
    and the ETA runs, by the work's cost (:class:`_Work`); the count beside it is of runs, and
    of those that did not end valid. On a narrow terminal the condition's label is cut (``…``),
    never the bar, the counts or the times: every other column keeps its whole width."""

    def __init__(self, labels: Mapping[str, str], work: _Work) -> None:
        from rich.markup import escape
        from rich.progress import (
            BarColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as RichBar
        from rich.table import Column

        self._bar = RichBar(
            # The label takes what the other columns leave of the line, cut at its end.
            TextColumn(
                "[bold]{task.description}",
                table_column=Column(ratio=1, no_wrap=True, overflow="ellipsis"),
            ),
            BarColumn(bar_width=_BAR_WIDTH),
            TextColumn("{task.fields[runs]}", table_column=Column(no_wrap=True)),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=_err(),
            expand=True,
        )
        self._task = self._bar.add_task("runs", total=None, runs="")
        self._work = work
        self._done = 0
        self._total = 0
        self._lost = 0
        # A level may hold brackets, which are no markup.
        self._labels = {condition: escape(label) for condition, label in labels.items()}

    def start(self, total: int) -> None:
        self._total = total
        self._bar.update(self._task, total=self._work.total, runs=f"0/{total}")
        self._bar.start()

    def advance(self, condition: str, end: str) -> None:
        self._done += 1
        self._lost += end != "valid"
        lost = f" [red]{self._lost} not valid[/red]" if self._lost else ""
        label = self._labels.get(condition, condition)
        self._bar.update(
            self._task,
            advance=self._work.advance(condition),
            description=label,
            runs=f"{self._done}/{self._total}{lost}",
        )

    def finish(self) -> None:
        self._bar.stop()


#: The progress bar's width in columns: room for the label, the counts and the times at 80.
_BAR_WIDTH = 16


class _LineProgress:
    """Plain lines at every tenth of the work, for logs and pipes, each naming the condition
    of the slot that ended last by ``labels``, as :class:`_BarProgress` does, with the time
    left weighed by the work's cost (:class:`_Work`). ``clock`` is the seconds' source."""

    def __init__(
        self,
        labels: Mapping[str, str],
        work: _Work,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._labels = labels
        self._work = work
        self._clock = clock
        self._done = 0
        self._lost = 0
        self._total = 0
        self._next = 0
        self._t0 = 0.0

    def start(self, total: int) -> None:
        self._total, self._t0 = total, self._clock()
        self._next = max(1, total // 10)
        _out(f"study: {total} runs to go", err=True)

    def advance(self, condition: str, end: str) -> None:
        self._done += 1
        self._lost += end != "valid"
        self._work.advance(condition)
        if self._done >= self._next or self._done == self._total:
            elapsed = self._clock() - self._t0
            left = self._work.left(elapsed)
            lost = f", {self._lost} not valid" if self._lost else ""
            _out(
                f"study: {self._done}/{self._total} runs ({100 * self._done // self._total}%)"
                f"{lost}, {elapsed:.1f} s elapsed, about {left:.1f} s left "
                f"({self._labels.get(condition, condition)})",
                err=True,
            )
            self._next += max(1, self._total // 10)

    def finish(self) -> None:
        pass


def _study_work(prepared: Prepared) -> _Work:
    """The study's work by condition: its slots that run, each at the adapter's cost."""
    from repro.adapters.base import slot_costs
    from repro.derive.tally import runs

    slots = {p.condition: sum(map(runs, p.entries)) for p in prepared.plan.partitions}
    return _Work(slot_costs(prepared.adapter, prepared.plan.seal.conditions), slots)


class _Labels(collections.abc.Mapping[str, str]):
    """Each condition's ID and label, as the progress display names it: ``c01
    env_id=CartPole-v1 / random`` (the label as every table words it,
    :func:`repro.figures.condition_label`), made when first read: a study's plain
    progress lines name a condition only at a tenth of its work, and what makes the labels is
    then imported (while the runs wait, with the console), not before the first run."""

    def __init__(self, protocol: Protocol, conditions: Sequence[Condition]) -> None:
        self._protocol = protocol
        self._conditions = conditions
        self._made: dict[str, str] | None = None

    def _labels(self) -> dict[str, str]:
        if self._made is None:
            from repro.figures import condition_label

            order = [factor.name for factor in self._protocol.matrix]
            # One line each, its control characters shown as text: the bar's own text column
            # writes a label to the terminal as it is, past a console's rendering of strings.
            self._made = {
                c.id: visible(
                    f"{c.id} {condition_label(c.factors, c.participant, order)}", newlines=False
                )
                for c in self._conditions
            }
        return self._made

    def __getitem__(self, condition: str) -> str:
        return self._labels()[condition]

    def __iter__(self) -> Iterator[str]:
        return iter(self._labels())

    def __len__(self) -> int:
        return len(self._conditions)


def _fail(error: ReproError | str) -> typer.Exit:
    """Print ``error`` on stderr; the exit its class maps to (:func:`repro.errors.exit_code`;
    a bare message is bad input)."""
    from rich.markup import escape

    message = str(error)
    # Escaped: a message may hold brackets that are not markup, as a JSON path's "$.matrix[0]".
    _err().print(
        f"[red]error:[/red] {escape(message)}", highlight=False, markup=True, soft_wrap=True
    )
    return typer.Exit(exit_code(error) if isinstance(error, ReproError) else EXIT_BAD_INPUT)


def _options(pairs: list[str]) -> dict[str, str]:
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise _fail(f"--option takes KEY=VALUE, not {pair!r}")
        options[key] = value
    return options


@_command(app, "study")
def study(
    protocol: Annotated[Path, typer.Argument(help="Run the protocol in this JSON file.")],
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            help="Write the bundle into this new root, created 0700: it must not exist, and its "
            "parent directory must (repro creates no directory above the root, so a mistyped "
            "path creates nothing).",
        ),
    ],
    option: _AdapterOptions = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            help=f"Run partitions on N local worker processes at once (1 to {MAX_LOCAL_WORKERS}; "
            "default 1). Per-run seeding only. An adapter whose sessions only wait on other "
            "processes (the command adapter's) runs N slots at once on threads of the study "
            f"process instead (1 to {MAX_THREAD_WORKERS}).",
            show_default=False,
        ),
    ] = None,
    scheduler: Annotated[
        str | None,
        typer.Option(
            "--scheduler",
            help="Run each partition as a task on the Dask cluster whose scheduler is at ADDRESS "
            f"(e.g. tcp://127.0.0.1:8786). Per-run seeding only. For Dask, {install_hint('dask')}.",
        ),
    ] = None,
    accept_losses: Annotated[
        bool,
        typer.Option(
            "--accept-losses",
            help=f"Exit {EXIT_OK} even when a slot that ran did not end valid (by default such "
            f"a study exits {EXIT_SLOTS_LOST}, its bundle written whole); slots the protocol "
            "excludes before sealing never count as lost.",
        ),
    ] = False,
    keep_going: Annotated[
        bool,
        typer.Option(
            "--keep-going",
            help=f"Run the whole plan even when the first {FIRST_SLOTS} slots to end all fail "
            "with the same fault of the harness, the policy or the protocol (by default the "
            f"study stops then, exit {EXIT_STUDY_STOPPED}, before it spends the rest).",
        ),
    ] = False,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            hidden=True,
            help="Kept so that scripts written for earlier versions run: what it did is now "
            "the default.",
        ),
    ] = False,
) -> None:
    """Freeze and seal PROTOCOL, run every slot into the fresh root OUT, and bundle the evidence.

    It ends by printing the command that verifies OUT, worded as repro was started (uv run,
    python -m repro, the repro on PATH or the script's own path)."""
    if scheduler is not None and workers is not None:
        raise _fail(
            "--workers and --scheduler exclude each other: the cluster's workers run the partitions"
        )
    from repro.execute.spares import Spares, runs_on_threads

    try:
        with Spares() as spares:
            if scheduler is None and not runs_on_threads(protocol):
                # A local study's first worker process starts now, and imports as the study
                # does and prepares (repro.execute.studies.Prestart); one not taken is killed.
                # A study whose sessions run on threads starts none: it would only slow it.
                spares.start(1)
            result = _study(protocol, out, option, workers, scheduler, spares, keep_going)
    except BadInput as exc:
        raise _fail(exc) from None
    except StudyStopped as exc:
        from rich.markup import escape

        _err().print(
            f"[red]error:[/red] {escape(str(exc))}", highlight=False, markup=True, soft_wrap=True
        )
        raise typer.Exit(exit_code(exc)) from None
    err = _err()
    rep = result.derived.tiers.reproduction
    err.print(
        f"done in {result.wall_seconds:.1f} s: {_headline(result.derived)}; "
        f"reproduction {rep.verdict}",
        highlight=False,
    )
    _print_losses(
        result.derived.ledger, result.derived.aggregates, result.lost_opens, result.lost_as
    )
    # The command as repro was started: a bare `repro` is not on PATH after `uv run repro`.
    from repro.cli.started import command, started
    from repro.execute.studies import lost_slots

    _out(command(["verify", str(out)], started()))
    if lost_slots(result.derived.ledger) and not accept_losses:
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
    workers: int | None,
    scheduler: str | None,
    spares: Spares,
    keep_going: bool = False,
) -> StudyResult:
    """Prepare and run the study of ``repro study``, its progress on stderr; local workers take
    their first processes from ``spares``."""
    from repro.execute.studies import Prestart, prepare
    from repro.execute.studies import study as run_study

    backend: Backend = (
        DaskCluster(scheduler)
        if scheduler is not None
        else LocalWorkers(1 if workers is None else workers)
    )
    prepared = prepare(protocol, _options(option or []), Prestart(backend, spares).early)
    _print_protocol_warnings(prepared.warnings)
    labels = _Labels(prepared.protocol, prepared.plan.seal.conditions)
    work = _study_work(prepared)
    terminal = _stderr_is_terminal()
    progress = _BarProgress(labels, work) if terminal else _LineProgress(labels, work)
    return run_study(
        prepared, out, progress, backend, spares, _console_meanwhile, keep_going=keep_going
    )


def _console_meanwhile() -> None:
    """Import what a study's last lines print through (:func:`_err`'s console), while its runs
    only wait: after them, it would cost the study's end."""
    importlib.import_module("repro.present.terminal")


def _stderr_is_terminal() -> bool:
    """Whether :func:`_err`'s console is a terminal's, without importing rich where it plainly
    is not: stderr is no terminal, and neither ``TTY_COMPATIBLE=1`` nor a non-empty
    ``FORCE_COLOR`` (which rich honours) says otherwise. A study that prints plain lines then
    starts its first run without rich."""
    environ = os.environ
    if environ.get("TTY_COMPATIBLE") != "1" and not environ.get("FORCE_COLOR"):
        try:
            if not sys.stderr.isatty():
                return False
        except ValueError:  # closed: no terminal
            return False
    return _err().is_terminal


def _print_losses(
    ledger: Ledger, aggregates: Aggregates, lost_opens: int, lost_as: Mapping[str, LossStatus]
) -> None:
    """Say on stderr what the study lost, grouped by how each slot ended (``lost_as``: invalid,
    failed or excluded, :func:`repro.derive.tally.loss_status`) and by cause (``12 of 600 slots
    failed (attempts exhausted): policy-error:ZeroDivisionError (12)``), and how many session
    opens a dying worker cost (the exit counts lost slots with
    :func:`repro.execute.studies.lost_slots`)."""
    from collections import Counter

    from repro.derive.tally import loss_groups

    err = _err()
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


def _refused(refused: Refused, prefix: str, outcome: str | None = None) -> typer.Exit:
    """Name every reason on stderr, each on one line after ``prefix`` (a newline it quotes shown
    as text), and the count with ``outcome``; the exit the table gives."""
    err = _err()
    for reason in refused.reasons:
        err.print(visible(f"{prefix} {reason}", newlines=False))
    if outcome is not None:
        err.print(f"{len(refused.reasons)} reason(s): {outcome}", highlight=False)
    return typer.Exit(exit_code(refused))


def _verify_report(findings: Sequence[Finding], digest: str | None) -> dict[str, Any]:
    """``--json``'s verdict on a bundle, the same for ``verify`` and ``show``."""
    return {
        "ok": not findings,
        "bundle_sha256": digest,
        "findings": [f.as_dict() for f in findings],
    }


def _values(f: Finding) -> str:
    """What a finding compares, in words a reader takes the right way round: a derived file's
    stored value and the one re-derived from the bundle's runs, else what was expected and
    what was found."""
    if f.code == "rederived-differs":
        return f"stored {f.found}, re-derived from the bundle's runs {f.expected}"
    return f"expected {f.expected}, found {f.found}"


def _print_protocol_warnings(warnings: Sequence[str]) -> None:
    """Say on stderr what a protocol may not mean (it still runs), one ``warning:`` each."""
    from rich.markup import escape

    for warning in warnings:
        _err().print(
            f"[yellow]warning:[/yellow] {escape(warning)}",
            highlight=False,
            markup=True,
            soft_wrap=True,
        )


def _print_warnings(warnings: Sequence[Finding]) -> None:
    """Name every warning on stderr, one line each, as findings are named."""
    err = _err()
    for w in warnings:
        err.print(
            visible(
                f"WARN {w.file}: {w.what}: expected {w.expected}, found {w.found}", newlines=False
            )
        )


def _verify_bag(bag: Path, as_json: bool, limits: Limits, jobs: int | None) -> None:
    """``repro verify --bagit-only``: the bag checked as BagIt alone, its findings and warnings
    named; exit 1 when it is not a valid bag."""
    from repro.verify import verify_bag

    try:
        done = verify_bag(bag, limits, jobs)
    except BadInput as exc:
        raise _fail(exc) from None
    if as_json:
        _out(
            json_text(
                {
                    "ok": not done.findings,
                    "bagit_version": done.version,
                    "findings": [f.as_dict() for f in done.findings],
                    "warnings": [w.as_dict() for w in done.warnings],
                }
            )
        )
    else:
        _print_warnings(done.warnings)
        if done.findings:
            _print_findings(bag, done.findings, "is not a valid BagIt bag")
        else:
            warned = f", {len(done.warnings)} warning(s)" if done.warnings else ""
            _out(
                f"OK: {bag} is a valid BagIt {done.version} bag (declaration, manifests, "
                f"completeness, every digest, fetch.txt, Payload-Oxum){warned}"
            )
    if done.findings:
        raise typer.Exit(EXIT_VERIFY_FAILED)


def _print_findings(
    bundle: Path, findings: Sequence[Finding], failed: str = "does not verify"
) -> None:
    """Name every finding on stderr, one line each (a newline in what it quotes, such as a file
    name the bundle holds, shown as text like any control character), then say whether the root
    is unfinished or tampered. The findings that follow from others (a derived file's stored
    values against those re-derived from inputs that changed) come last, under the findings they
    follow from, with the stored value and the one re-derived from the bundle's runs named so."""
    err = _err()
    roots = [f for f in findings if not f.follows_from]
    following = [f for f in findings if f.follows_from]
    for f in roots:
        err.print(visible(f"FAIL {f.file}: {f.what}: {_values(f)}", newlines=False))
    if following:
        causes = ", ".join(f"{file} ({code})" for code, file in following[0].follows_from)
        err.print(
            visible(
                f"{len(following)} finding(s) follow from those on the files the derived ones "
                f"are derived from ({causes}): their stored values may be the study's own, and "
                "the re-derived ones come from what those files now hold:",
                newlines=False,
            )
        )
        for f in following:
            values = f": {_values(f)}" if f.code == "rederived-differs" else ""
            err.print(visible(f"  FOLLOWS {f.file}: {f.what}{values}", newlines=False))
    if findings[0].incomplete:
        err.print(
            f"INCOMPLETE: {bundle} is an unfinished study and does not verify "
            f"({len(findings)} finding(s))",
            highlight=False,
        )
    else:
        err.print(f"{len(findings)} finding(s): {bundle} {failed}", highlight=False)


@_command(app, "verify")
def verify(
    bundle: Annotated[
        Path,
        typer.Argument(help="Verify this bundle directory, or this packed bundle (.zip or .tar)."),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print findings as JSON.")] = False,
    trusted_key: Annotated[
        list[Path] | None,
        typer.Option(
            "--trusted-key",
            help="An Ed25519 public key you trust (OpenSSH .pub or PEM; repeatable): every "
            "signature in the bundle's signatures/ must be by one of them and check against the "
            "bundle as it is, and one at least must be there.",
            show_default=False,
        ),
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs",
            min=1,
            help="Run this many jobs at a time (default: REPRO_VERIFY_JOBS, else the cores repro "
            "may run on); the findings are the same whatever it is.",
            show_default=False,
        ),
    ] = None,
    limit: Annotated[
        list[str] | None,
        typer.Option(
            "--limit",
            metavar="NAME=N",
            help="Raise (or lower) a limit verify reads and re-derives within (repeatable; a "
            f"finding names the limit a bundle goes past): {', '.join(VERIFY_LIMITS)}. Their "
            "defaults are in docs/guarantees.md and repro.verify.Limits.",
            show_default=False,
        ),
    ] = None,
    bagit_only: Annotated[
        bool,
        typer.Option(
            "--bagit-only",
            help="Check the path as a BagIt bag alone, whoever wrote it: BagIt 1.0 or 0.97 "
            "(earlier drafts read as 0.97), its declaration, every manifest and digest, "
            "fetch.txt (whose files must be there: nothing is fetched) and bag-info.txt's "
            "Payload-Oxum. It checks none of a repro bundle's content or signatures. What "
            "BagIt tolerates but a careful bag avoids is named as a warning, which does not "
            "fail the bag.",
        ),
    ] = False,
) -> None:
    """Check a bundle offline: integrity, strict parse and schema, joins, re-derivations, and
    with --trusted-key its signatures.

    Without a trusted key each signature is listed by its key's fingerprint as not checked. A
    valid BagIt bag that is not a repro bundle is bad input; --bagit-only checks it as a bag."""
    from repro.verify import verification
    from repro.verify.limits import Limits, with_limits

    try:
        limits = with_limits(Limits(), limit or [])
        if bagit_only:
            if trusted_key:
                raise BadInput(
                    "--trusted-key checks a bundle's signatures: --bagit-only reads none"
                )
            _verify_bag(bundle, as_json, limits, jobs)
            return
        keys = _trusted_keys(trusted_key or [])
        done = verification(bundle, keys, limits, jobs=jobs)
    except BadInput as exc:
        raise _fail(exc) from None
    findings = done.findings
    digest = done.bundle_sha256
    if as_json:
        report = _verify_report(findings, digest)
        if done.signatures or keys:  # a bundle without signatures reports as it always did
            report["signatures"] = [s.as_dict() for s in done.signatures]
        _out(json_text(report))
    elif findings:
        _print_findings(bundle, findings)
    else:
        _out(
            f"OK: {bundle} verifies (integrity, schema, joins, re-derived aggregates, tiers, class)"
        )
        # What was verified, by its identity: compare it with a published digest to know that
        # the files no re-derivation covers (environment.json, bag-info.txt) are the originals.
        _out(f"bundle sha256: {digest}")
        for s in done.signatures:
            said = "not checked" if s.status == "not-checked" else f"{s.kind} statement verified"
            _out(f"signature {s.file}: key {s.keyid} {said}")
            if s.summary is not None:
                _out(f"  {s.kind}: {s.summary}")
    if findings:
        raise typer.Exit(EXIT_VERIFY_FAILED)


def _trusted_keys(paths: Sequence[Path]) -> list[PublicKey]:
    """The public keys of ``--trusted-key``, each once (none imports no cryptography)."""
    if not paths:
        return []
    from repro.bundle.signatures import load_public_keys

    return load_public_keys(paths)


@_command(app, "sign")
def sign(
    bundle: Annotated[Path, typer.Argument(help="Sign this bundle directory; it must verify.")],
    key: Annotated[
        Path,
        typer.Option(
            "--key",
            help="Sign with this Ed25519 private key: OpenSSH (ssh-keygen -t ed25519 -f "
            "repro-key -N '') or PEM (openssl genpkey -algorithm ed25519); an encrypted one's "
            "passphrase is read from REPRO_KEY_PASSPHRASE.",
            show_default=False,
        ),
    ],
) -> None:
    """Sign what a verified bundle claims: an in-toto statement in a DSSE envelope, written
    beside the bag as signatures/<key>.bundle.dsse.json.

    Its subject is the bundle's sha256 (so every file is covered); its predicate the protocol,
    the reproduction class, the estimand with its interval, the contrasts' verdicts and repro's
    version. Several signatures (the author's, a reviewer's) sit side by side; check them with
    repro verify --trusted-key."""
    from repro.bundle.signatures import load_signing_key, sign_bundle
    from repro.verify import open_verified

    try:
        signing = load_signing_key(key)
        path = sign_bundle(bundle, key, open_verified)
    except BadInput as exc:
        raise _fail(exc) from None
    _out(f"signed {bundle}: wrote {path} (key {signing.public.fingerprint})")


@_command(app, "pack")
def pack(
    bundle: Annotated[Path, typer.Argument(help="Pack this bundle directory; it must verify.")],
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            help="Write the packed bundle to this new .zip or .tar file.",
            show_default=False,
        ),
    ],
) -> None:
    """Pack a verified bundle into one zip or tar file: the bag in one top-level directory
    named after the bundle's, signatures/ included, as BagIt serializes a bag.

    The same bundle packs to the same bytes. repro verify, show, compare, publish, replay and
    audit read the packed bundle in place, without unpacking it."""
    from repro.bundle.packed import pack as pack_bundle
    from repro.verify import open_verified

    try:
        written = pack_bundle(bundle, out, open_verified)
    except BadInput as exc:
        raise _fail(exc) from None
    _out(f"packed {bundle}: wrote {written}")


@_command(app, "replay")
def replay(
    bundle: Annotated[
        Path,
        typer.Argument(help="Replay a slot of this bundle, a directory or packed; it must verify."),
    ],
    slot: Annotated[
        str, typer.Argument(help="Re-execute this slot, named by its ID (e.g. c03-r0042).")
    ],
    option: _AdapterOptions = None,
    as_json: _Json = False,
    show_traceback: _Traceback = False,
    sources: _Sources = None,
) -> None:
    """Re-execute one slot and compare its records with the bundle's, byte for byte.

    The simulator must be installed and the protocol's own modules and files in --sources,
    pinning what the bundle pins; in stream mode the slot's partition is re-executed from its
    checkpoint. With --traceback, see why a failed slot failed."""
    import attrs

    from repro.execute.replay import replay as replay_slot

    try:
        result = replay_slot(bundle, slot, _options(option or []), show_traceback, sources)
    except BadInput as exc:
        raise _fail(exc) from None
    except NotVerified as exc:  # a file changed after the bundle verified
        _print_findings(bundle, exc.findings)
        raise typer.Exit(exit_code(exc)) from None
    if as_json:
        _out(json_text(attrs.asdict(result) | {"identical": result.identical}))
    else:
        how = (
            f"replayed {result.replayed_slots} slot(s) of {result.partition} from its checkpoint"
            if result.from_checkpoint
            else "replayed alone from its seed"
        )
        if result.kept_before is not None:
            how += f" (the state kept before {result.kept_before})"
        for difference in result.differences:
            _err().print(visible(f"DIFF {difference}", newlines=False))
        verdict = "byte-identical" if result.identical else "differs"
        _out(f"{result.slot}: {how}; {result.attempts} attempt(s); {verdict}")
    if not result.identical:
        raise typer.Exit(EXIT_VERIFY_FAILED)


@_command(app, "audit")
def audit(
    bundle: Annotated[
        Path, typer.Argument(help="Audit this bundle, a directory or packed; it must verify.")
    ],
    sample: Annotated[
        int | None,
        typer.Option(
            "--sample",
            help="Re-execute N slots, drawn without replacement from the slots that ran by a "
            "generator seeded with the bundle's sha256 (the same N slots for everyone).",
            show_default=False,
        ),
    ] = None,
    every_slot: Annotated[
        bool, typer.Option("--all", help="Re-execute every slot that ran.")
    ] = False,
    option: _AdapterOptions = None,
    as_json: _Json = False,
    show_traceback: _Traceback = False,
    sources: _Sources = None,
    sign: Annotated[
        Path | None,
        typer.Option(
            "--sign",
            help="Sign the audit's result with this Ed25519 private key (OpenSSH or PEM) and "
            "write it beside the bag as signatures/<key>.audit.dsse.json, for verify to report.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Re-execute a sample of the bundle's slots (or --all) and compare them byte for byte.

    The simulator must pin what the bundle's ledger pins, as for replay. In stream mode each
    drawn slot is re-executed from the nearest kept generator state before it, through the
    next kept state, which must match (chaining). A clean sample of N bounds the fraction of
    slots that could differ: at 95%, 1 - 0.05^(1/N) (4.95% for N = 59)."""
    import attrs

    from repro.execute.audit import audit as audit_bundle
    from repro.execute.audit import sign_audit

    if (sample is None) == (not every_slot):
        raise _fail(BadInput("give exactly one of --sample N and --all")) from None
    try:
        if sign is not None:  # a bad key, or no room for a signature, before the audit runs
            from repro.bundle.signatures import load_signing_key, refuse_packed

            refuse_packed(bundle)
            load_signing_key(sign)
        result = audit_bundle(bundle, sample, _options(option or []), show_traceback, sources)
        signed = None if sign is None else sign_audit(bundle, result, sign)
    except BadInput as exc:
        raise _fail(exc) from None
    except NotVerified as exc:  # a file changed after the bundle verified
        _print_findings(bundle, exc.findings)
        raise typer.Exit(exit_code(exc)) from None
    if as_json:
        extra = {
            "identical": result.identical,
            "attempts": result.attempts,
            "excluded_fraction": result.excluded_fraction,
        }
        _out(json_text(attrs.asdict(result) | extra))
    else:
        _print_audit(result)
        if signed is not None:
            _out(f"signed: wrote {signed}")
    if not result.identical:
        raise typer.Exit(EXIT_VERIFY_FAILED)


def _print_audit(result: Any) -> None:
    """The audit's lines: what was drawn, what was re-executed, what matched, what it bounds."""
    for slot in result.slots:
        for difference in slot.differences:
            _err().print(visible(f"DIFF {difference}", newlines=False))
    for link in result.chained:
        if not link.matched:
            _err().print(
                f"CHAIN {link.partition}: the state re-executed up to {link.before} is not the "
                "one the bundle keeps there",
                highlight=False,
                markup=False,
            )
    drawn = len(result.sampled)
    how = (
        f"every one of the {result.population} slot(s) that ran"
        if drawn >= result.population
        else f"{drawn} of the {result.population} slot(s) that ran, drawn from the bundle's "
        f"sha256 {result.bundle_sha256[:12]}..."
    )
    differing = sum(1 for s in result.slots if s.differences)
    broken = sum(1 for c in result.chained if not c.matched)
    _out(f"audit: {how}")
    _out(
        f"re-executed {len(result.slots)} slot(s), {result.attempts} attempt(s): "
        f"{len(result.slots) - differing} byte-identical, {differing} differ; "
        f"{len(result.chained)} kept state(s) chained, {broken} broken"
    )
    fraction = result.excluded_fraction
    if not result.identical:
        _out("audit: FAILED")
    elif fraction is None:
        _out("audit: clean; every slot that ran was re-executed")
    else:
        _out(
            f"audit: clean; at 95%, it excludes that {fraction:.2%} or more of the slots that "
            "ran differ from what this simulator gives"
        )


@_command(app, "publish")
def publish(
    bundle: Annotated[
        Path, typer.Argument(help="Publish this scored study's bundle, a directory or packed.")
    ],
    out: Annotated[Path, typer.Option("--out", help="Write the table to this new Markdown file.")],
) -> None:
    """Write a scored bundle's results table, only if it verifies and every gate holds.

    Otherwise name each finding or failed gate, write nothing and exit 1."""
    from repro.present.publishing import publish as publish_table

    try:
        gates = publish_table(bundle, out)
    except BadInput as exc:
        raise _fail(exc) from None
    except Refused as refused:
        raise _refused(refused, "REFUSED", "no table written") from None
    for gate in gates:
        _out(f"gate {gate.name}: holds ({gate.detail})")
    if not gates:
        _out("gates: none declared")
    _out(f"OK: wrote {out}")


@_command(app, "compare")
def compare(
    baseline: Annotated[
        Path, typer.Argument(help="Take this bundle (a directory or packed) as the baseline.")
    ],
    candidate: Annotated[
        Path, typer.Argument(help="Take this bundle (a directory or packed) as the candidate.")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
) -> None:
    """Compare two verified bundles of one protocol, for regressions or run-by-run equality.

    For a scored study it lists the candidate's regressions against the baseline; for two
    backends' runs it compares them slot by slot. It exits 1 on a regression or a bundle that
    does not verify."""
    from repro.compare.bundles import CompareResult
    from repro.compare.bundles import compare as compare_bundles

    try:
        result: CompareResult = compare_bundles(baseline, candidate)
    except BadInput as exc:
        raise _fail(exc) from None
    except Refused as refused:
        raise _refused(refused, "FAIL") from None
    if as_json:
        _out(json_text(result.as_dict()))
    else:
        _out(result.text())
    if result.regression:
        raise typer.Exit(EXIT_VERIFY_FAILED)


@_command(app, "adapters")
def adapters(
    as_json: Annotated[bool, typer.Option("--json", help="Print the list as JSON.")] = False,
) -> None:
    """List every installed adapter, where it comes from, whether it loads, and whether its
    simulator can be imported.

    Each adapter is listed with its name, distribution and version, object path, and the
    simulator's modules as the adapter states them ("not stated" for one that does not say)."""
    from repro.adapters.base import import_error, registered_adapters

    installed = registered_adapters()
    listed = [
        (
            r,
            r.load_error(),
            [o.distribution for o in installed if o.name == r.name and o is not r],
            _simulator(r.simulator_modules(), r.simulator_install(), import_error),
        )
        for r in installed
    ]
    if as_json:
        rows = [
            {
                "name": r.name,
                "distribution": r.distribution,
                "version": r.version,
                "object": r.target,
                "loads": error is None,
                "error": error,
                "also_registered_by": others,
                "simulator": simulator,
            }
            for r, error, others, simulator in listed
        ]
        _out(json_text({"adapters": rows}))
        return
    if not listed:
        _out("no adapter is registered in the repro.adapters entry-point group")
        return
    table = [("name", "distribution", "version", "object", "loads", "simulator")]
    for r, error, others, simulator in listed:
        status = "yes" if error is None else f"no ({error})"
        if others:
            status += f"; also registered by {', '.join(others)}: refused"
        table.append((r.name, r.distribution, r.version, r.target, status, _said(simulator)))
    widths = [max(len(line[i]) for line in table) for i in range(5)]
    for line in table:
        cells = [cell.ljust(width) for cell, width in zip(line, widths, strict=False)]
        _out("  ".join([*cells, line[5]]))


def _simulator(
    modules: tuple[str, ...] | None, install: str | None, import_error: Callable[[str], str | None]
) -> dict[str, Any] | None:
    """``repro adapters --json``'s ``simulator``: each module the adapter states with whether
    it imports (the error's type if not), whether the simulator is ``available`` (any one
    module imports, or none is needed), and how to ``install`` it as the adapter says (None
    when it does not); None when the adapter does not state its modules."""
    if modules is None:
        return None
    found = [{"module": m, "error": import_error(m)} for m in modules]
    return {
        "modules": [{**f, "imports": f["error"] is None} for f in found],
        "available": not found or any(f["error"] is None for f in found),
        "install": install,
    }


def _said(simulator: dict[str, Any] | None) -> str:
    """The simulator column of ``repro adapters``: ``gymnasium imports``, ``CybORG does not
    import (ModuleNotFoundError), csle_cyborg imports``, ``no simulator package needed`` or ``not
    stated``; a simulator that is not available ends with how to install it, when the adapter
    says (``gymnasium does not import (ModuleNotFoundError); to use this adapter, install
    repro's gymnasium extra: ...``)."""
    if simulator is None:
        return "not stated"
    if not simulator["modules"]:
        return "no simulator package needed"
    said = ", ".join(
        f"{m['module']} imports"
        if m["imports"]
        else f"{m['module']} does not import ({m['error']})"
        for m in simulator["modules"]
    )
    if not simulator["available"] and simulator["install"] is not None:
        said += f"; to use this adapter, {simulator['install']}"
    return said


protocol_app = typer.Typer(
    no_args_is_help=True,
    context_settings=_CONTEXT,
    help="Check a protocol without running it, plan its contrasts' power, or start a new one.\n\n"
    + _exit_codes("protocol"),
)
app.add_typer(protocol_app, name="protocol")


@_command(protocol_app, "check")
def protocol_check(
    protocol: Annotated[Path, typer.Argument(help="Check the protocol in this JSON file.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    option: _AdapterOptions = None,
) -> None:
    """Validate and freeze PROTOCOL as `repro study` would, running and writing nothing.

    It prints the frozen sha256 a study records, the adapter, the plan size and pinned sources."""
    from repro.execute.studies import prepare
    from repro.json.serde import unstructure

    try:
        prepared = prepare(protocol, _options(option or []))
    except BadInput as exc:
        raise _fail(exc) from None
    facts, plan = prepared.frozen.facts, prepared.plan
    sources = [unstructure(source) for source in prepared.frozen.sources]
    summary = {
        "protocol": prepared.protocol.id,
        "sha256": prepared.frozen_protocol.sha256,
        "adapter": unstructure(facts),
        "conditions": len(plan.seal.conditions),
        "partitions": len(plan.partitions),
        "slots": sum(len(partition.entries) for partition in plan.partitions),
        "sources_sha256": plan.seal.sources_sha256,
        "sources": sources,
        "warnings": list(prepared.warnings),
    }
    _print_protocol_warnings(prepared.warnings)
    if as_json:
        _out(json_text(summary))
        return
    _out(f"OK: {protocol} is valid (nothing was run or written)")
    _out(f"protocol  {prepared.protocol.id}")
    _out(f"sha256    {summary['sha256']}")
    _out(
        f"adapter   {facts.name} {facts.version} (observation {facts.observation_scope}, "
        f"measure from {facts.measure_inputs})"
    )
    _out(
        f"plan      {summary['conditions']} conditions, {summary['partitions']} partitions, "
        f"{summary['slots']} slots"
    )
    _out(f"sources   {len(sources)}, sha256 {summary['sources_sha256']}")
    for source in prepared.frozen.sources:
        pin = source.version if source.sha256 is None else f"sha256 {source.sha256}"
        _out(f"  {source.role}: {source.kind} {source.name} {pin}")


@_command(protocol_app, "power")
def protocol_power(
    protocol: Annotated[
        Path, typer.Argument(help="Plan the protocol in this JSON file; it must declare contrasts.")
    ],
    pilot: Annotated[
        Path,
        typer.Option(
            "--pilot",
            help="Take the variances from this pilot bundle of the protocol's family (it must "
            "verify): same protocol id, measure, and conditions of each contrast's groups.",
            show_default=False,
        ),
    ],
    effect: Annotated[
        float | None,
        typer.Option(
            "--effect",
            help="Also say the runs per condition needed to detect this effect beyond the null "
            "boundary (0, or -margin for non-inferiority), in the measure's units (for a rate, "
            "a difference of rates).",
            show_default=False,
        ),
    ] = None,
    power: Annotated[float, typer.Option("--power", help="Plan for this power.")] = 0.8,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
) -> None:
    """Before any run, plan each contrast's minimum detectable effect at the protocol's runs per
    condition from a pilot bundle's variances.

    Paired contrasts plan from the sd of the pilot's paired differences, unpaired ones from
    each group's sd (Welch); power from the noncentral t. A rate (a check or a category) plans
    from the pilot's discordance (McNemar) or mean rate (Fisher), held fixed, its power exact.
    With --effect it also says the runs per condition needed. Every figure says what it assumed: a
    pilot's variance is itself uncertain."""
    from repro.json.serde import unstructure
    from repro.power import pilot_tally, power_plan
    from repro.present.power import lines
    from repro.protocol import freeze, load_protocol
    from repro.verify import open_verified

    try:
        frozen = freeze(load_protocol(protocol))
        if frozen.protocol.contrasts is None:
            raise BadInput(f"protocol {protocol}: declares no contrasts to plan @ $.contrasts")
        bundle = open_verified(pilot)
        runs = pilot_tally(
            bundle.protocol,
            bundle.ledger,
            ((part, bundle.records(part.id)) for part in bundle.partitions()),
        )
        plan = power_plan(
            frozen,
            bundle.protocol,
            bundle.seal,
            bundle.bundle_sha256,
            runs,
            power,
            effect,
            bundle.scores,
        )
    except BadInput as exc:
        raise _fail(exc) from None
    except NotVerified as exc:  # a pilot plans nothing unless it verifies: bad input here
        _print_findings(pilot, exc.findings)
        raise _fail(f"--pilot {pilot}: the pilot does not verify") from None
    if as_json:
        _out(json_text(unstructure(plan)))
        return
    from repro.present.terminal import console

    out = console()
    for line in lines(plan):
        out.print(line, markup=False, highlight=False, emoji=False)


def _templates() -> dict[str, str]:
    """The starting protocols shipped in repro/templates, by adapter name."""
    from importlib.resources import files

    folder = files("repro").joinpath("templates")
    return {
        entry.name.removesuffix(".json"): entry.read_text("utf-8")
        for entry in folder.iterdir()
        if entry.name.endswith(".json")
    }


#: The files a starting protocol names beside itself, by adapter: each file's name there and the
#: file of repro/templates it is a copy of.
_COMPANIONS = {"command": {"harness.py": "command_harness.py"}}


def _companions(adapter: str) -> dict[str, str]:
    """The files ``repro protocol new`` writes beside ``adapter``'s protocol, by name."""
    from importlib.resources import files

    folder = files("repro").joinpath("templates")
    return {
        name: folder.joinpath(shipped).read_text("utf-8")
        for name, shipped in _COMPANIONS.get(adapter, {}).items()
    }


@_command(protocol_app, "new")
def protocol_new(
    adapter: Annotated[
        str,
        typer.Option(
            "--adapter",
            help="Start from this adapter: gymnasium, command or cyborg.",
            show_default=False,
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Write the protocol to this new file (by default, to stdout)."),
    ] = None,
) -> None:
    """Write a starting protocol for ADAPTER, explained by "$comment" keys.

    It writes to stdout, or to a new file (never over an existing one). For the command
    adapter, --out also writes harness.py, a working harness the protocol names, beside the
    file."""
    templates = _templates()
    if adapter not in templates:
        raise _fail(f"no template for adapter {adapter!r} ({', '.join(sorted(templates))})")
    text = templates[adapter]
    companions = _companions(adapter)
    if out is None:
        sys.stdout.write(text)
        if companions:
            _out(
                f"note: this protocol names {', '.join(companions)} beside it, which only "
                "--out FILE writes",
                err=True,
            )
        return
    files = {out: text} | {out.parent / name: body for name, body in companions.items()}
    for path in files:
        if path.exists() or path.is_symlink():
            raise _fail(f"{path} exists: repro protocol new never overwrites a file")
    written: list[Path] = []
    try:
        for path, body in files.items():
            with path.open("x", encoding="utf-8") as file:
                written.append(path)
                file.write(body)
    except OSError as exc:
        for path in written:
            path.unlink(missing_ok=True)
        if isinstance(exc, FileExistsError):
            raise _fail(
                f"{exc.filename} exists: repro protocol new never overwrites a file"
            ) from None
        raise _fail(f"{exc.filename or out}: cannot write ({exc.strerror})") from None
    from repro.cli.started import command, started

    beside = "".join(f" and {out.parent / name}" for name in companions)
    _out(
        f"wrote {out}{beside}; check it with: {command(['protocol', 'check', str(out)], started())}"
    )


def _write_new(path: Path, text: str) -> None:
    """Write ``text`` to the new file ``path``; refuse an existing one, and leave nothing behind
    when the write fails (a full disk, say)."""
    try:
        fh = open(path, "x", encoding="utf-8")  # noqa: SIM115 (closed below, removed on failure)
    except OSError as exc:
        raise _fail(f"{path}: {exc.strerror or type(exc).__name__}") from None
    try:
        with fh:
            fh.write(text)
    except OSError as exc:
        path.unlink(missing_ok=True)
        raise _fail(f"{path}: {exc.strerror or type(exc).__name__}") from None


@_command(app, "show")
def show(
    bundle: Annotated[
        Path, typer.Argument(help="Show this bundle, a directory or packed; it must verify.")
    ],
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Also draw a PNG comparison plot.")
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="Also write the report as one self-contained HTML file (must not exist).",
        ),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="Print aggregates, tiers and scores as one JSON object instead."
        ),
    ] = False,
) -> None:
    """Verify the bundle, then show its protocol, that it verified (by its sha256), and its
    conditions, estimand, class, contrasts, pass rates and tiers.

    With --json it prints its derived files as JSON instead; it can also draw a plot (PNG) or
    write an HTML report. A table too wide for the terminal is printed as key: value blocks."""
    from repro.present.showing import load

    if html is not None and (html.exists() or html.is_symlink()):
        raise _fail(f"--html {html}: already exists; show never overwrites")
    # Known before anything is written: a missing matplotlib must not leave the HTML file behind.
    if plot is not None and importlib.util.find_spec("matplotlib") is None:
        raise _fail(_NEEDS_MATPLOTLIB)
    try:
        shown = load(bundle)
    except BadInput as exc:
        raise _fail(exc) from None
    except NotVerified as exc:
        if as_json:
            _out(json_text(_verify_report(exc.findings, None)))
        else:
            _print_findings(bundle, exc.findings)
        raise typer.Exit(exit_code(exc)) from None
    if as_json:
        _out(json_text(shown.as_dict()))
    else:
        from repro.present.terminal import console, print_identity, print_tables

        out = console()
        print_identity(shown.protocol, bundle, shown.bundle_sha256, out)
        print_tables(
            shown.figures(runs=False), shown.tiers, out, shown.contrasts, shown.rl, shown.scores
        )
    # With --json, stdout holds the JSON object alone: notes go to stderr.
    if html is not None:
        _write_new(html, shown.html())
        _out(f"html written to {html}", err=as_json)
    if plot is not None:
        from repro.present.plot import plot as draw

        try:
            draw(shown.figures(), plot)
        except ImportError:
            raise _fail(_NEEDS_MATPLOTLIB) from None
        _out(f"plot written to {plot}", err=as_json)


def main() -> None:
    """Console-script entry point.

    Whatever way the command ends, the objects it made are frozen out of the cyclic garbage
    collector's reach first: at the interpreter's end they are all garbage at once, and the
    collector's last passes over them (its modules, their classes and schemas, what the command
    read) would cost a tenth of a second of every command, as long as a small verify. Their
    memory goes back with the process; files are closed and atexit handlers run as before."""
    try:
        app()
    finally:
        gc.freeze()


if __name__ == "__main__":
    main()
