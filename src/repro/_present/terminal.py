"""``repro show`` without options: the protocol and identity of a verified bundle, then the
tables its figures make in a terminal; and the consoles the command line prints through.

The conditions table reads the figures model (:mod:`repro._figures`), as the PNG, the
HTML page and the validation report do.

What a console prints is data (a title, a factor level, a file name a bundle holds), so a
console takes no rich markup, emoji code or highlighting from it unless a call asks, and shows
every control character of it as text (:func:`repro._escape.visible`): rich's own styling is
the only escape sequence it writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from repro._escape import visible
from repro._figures import FigureRow, Figures
from repro.models import ContrastsFile, FrozenProtocol, RLAggregates, Scores, Tiers

__all__ = ["UNWRAPPED_WIDTH", "console", "print_identity", "print_table", "print_tables"]

#: The width a console that is not a terminal lays lines out in: wide enough that no line of
#: text is wrapped and no table's cell folded, as a log or a pipe reads them.
UNWRAPPED_WIDTH = 1 << 14


class _DataConsole(Console):
    """rich's console for data: markup, emoji codes and highlighting off unless a call asks,
    and every string it renders (a printed one, a table's cell, title or header) shown with its
    control characters as text (:func:`repro._escape.visible`) before rich reads it."""

    def __init__(self, **options: Any) -> None:
        super().__init__(markup=False, emoji=False, highlight=False, **options)

    def render_str(self, text: str, **options: Any) -> Text:
        return super().render_str(visible(text), **options)


def console(*, stderr: bool = False) -> Console:
    """A console on stdout (on stderr with ``stderr``), for data (:class:`_DataConsole`). On a
    terminal it lays out as rich does: the terminal's width and colours, long lines wrapped to
    fit. Anywhere else (a pipe, a file, a log) no line is wrapped: text comes out whole, and a
    table as wide as its widest cells need rather than folded into 80 columns."""
    here = _DataConsole(stderr=stderr)
    if here.is_terminal:
        return here
    return _DataConsole(stderr=stderr, soft_wrap=True, width=UNWRAPPED_WIDTH)


def _cuts(out: Console, table: Table) -> bool:
    """Whether ``table`` laid out on ``out`` would cut a cell short (``contra…``): some column
    would be narrower than its longest word (its whole text where it does not wrap). rich
    squeezes every column alike once the wrapping ones cannot give more room, so the widths are
    rich's own layout's (``Table._calculate_column_widths``, as rich renders the table)."""
    options = out.options.update_width(out.options.max_width - table._extra_width)
    widths = table._calculate_column_widths(out, options)
    return any(
        width < table._measure_column(out, options, column).minimum
        for width, column in zip(widths, table.columns, strict=True)
    )


def _folded(table: Table) -> Table:
    """``table`` as ``key: value`` blocks, a row each: the first column's header and cell on a
    line, each other column's indented below it, a value wrapping (a word longer than the line
    folding) beside its key, so that nothing is cut however narrow the console."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    columns = [(str(c.header), list(c.cells)) for c in table.columns]
    rows = len(columns[0][1]) if columns else 0
    for i in range(rows):
        for j, (header, cells) in enumerate(columns):
            grid.add_row(("" if j == 0 else "  ") + f"{header}:", cells[i])
    return grid


def print_table(out: Console, table: Table) -> None:
    """Print ``table`` on ``out``: as a table (its title centred over it) where every cell fits
    whole, wrapped at spaces if need be; as ``key: value`` blocks under its title where a table
    would cut a cell short (:func:`_folded`), as on a terminal 80 columns wide."""
    # A table is laid out as a table even where text is not wrapped: its width is the
    # console's, which off a terminal fits every cell whole.
    if not _cuts(out, table):
        out.print(table, soft_wrap=False)
        return
    if table.title:
        out.print(str(table.title), style="italic")
    out.print(_folded(table), soft_wrap=False)


def _conditions(model: Figures) -> Table:
    """A row per condition: n, mean, interval, and the published value where any was."""
    # Any published figure, the estimand's alone too, makes the published columns.
    has_published = any(r.published is not None for r in model.rows)
    table = Table(title=f"{model.measure} by condition")
    columns = ["id", "condition", "n", "mean", f"{model.level:.0%} interval"]
    columns += ["published", "at precision"] if has_published else []
    for column in columns:
        table.add_column(
            column,
            justify="right" if column in ("n", "mean", "published") else "left",
            no_wrap=column != "condition",
            overflow="fold",
        )
    for r in model.conditions:
        table.add_row(*_condition_cells(r, has_published))
    return table


def _condition_cells(r: FigureRow, has_published: bool) -> list[str]:
    """The cells of one condition's row."""
    cells = [
        r.key,
        r.label,
        str(r.n),
        "n/a" if r.mean is None else f"{r.mean:.4f}",
        "n/a" if r.interval is None else f"[{r.interval.low:.4f}, {r.interval.high:.4f}]",
    ]
    if has_published:
        agreement = "equal" if r.equal_at_precision else f"differs ({r.observed_rounded})"
        cells += [
            "" if r.published is None else str(r.published),
            "" if r.published is None else agreement,
        ]
    return cells


def _tiers(tiers: Tiers) -> Table:
    """Each tier's verdict and reason."""
    table = Table(title="tiers")
    table.add_column("tier")
    table.add_column("verdict")
    table.add_column("reason")
    for t in tiers.tiers:
        table.add_row(t.name, t.verdict, t.reason or "")
    return table


def print_identity(
    protocol: FrozenProtocol,
    bundle: Path,
    bundle_sha256: str,
    out: Console | None = None,
    continued: str | None = None,
    recorded: str | None = None,
) -> None:
    """Say, before any table, which protocol the bundle ran and that it verified, by its
    identity: ``protocol ID: TITLE`` and ``verified: BUNDLE (bundle sha256 ...)``; for a
    study continued from an interrupted one, ``continued`` (how many partitions it carried);
    for one of runs made elsewhere, ``recorded`` (that its figures recompute them)."""
    out = out or console()
    p = protocol.protocol
    out.print(f"protocol {p.id}: {p.title}")
    out.print(f"verified: {bundle} (bundle sha256 {bundle_sha256})")
    for note in (continued, recorded):
        if note is not None:
            out.print(note)


def _contrasts(compared: ContrastsFile) -> Table:
    """Each pre-registered contrast: its claim, verdict, n, difference, interval and p-values."""
    control = "Holm" if compared.multiplicity == "holm" else "no multiplicity control"
    table = Table(title=f"contrasts (a - b, positive favours a; {control})")
    for name in ("contrast", "claim", "verdict", "n", "difference", "interval", "p", "p adj."):
        table.add_column(name, justify="right" if name in ("n", "p", "p adj.") else "left")
    for c in compared.contrasts:
        n = f"{c.pairs} pairs" if c.pairs is not None else f"{c.n_a} vs {c.n_b}"
        if c.incomplete_pairs:
            n += f" (+{c.incomplete_pairs} incomplete)"
        table.add_row(
            c.id + (" *" if c.primary else ""),
            c.direction + (f" (margin {c.margin:g})" if c.margin else "") + f" on {c.outcome}",
            c.verdict,
            n,
            "n/a" if c.estimate is None else f"{c.estimate:.4f}",
            "n/a"
            if c.interval is None
            else f"[{c.interval.low:.4f}, {c.interval.high:.4f}] {c.interval.level:.0%}",
            "n/a" if c.p_value is None else f"{c.p_value:.3g}",
            "n/a" if c.p_adjusted is None else f"{c.p_adjusted:.3g}",
        )
    return table


def _pass_rates(scores: Scores) -> Table:
    """A row per scored cell (its condition's ID and stratum), and a column per check: passes
    of valid runs, the rate and its Wilson interval (the rate needs 2 valid runs)."""
    table = Table(
        title=f"pass rates by cell (passes/valid runs, rate [Wilson {scores.level:.0%} interval])"
    )
    checks = [c.name for c in scores.cells[0].checks]
    for name in ("id", "stratum", *checks):
        table.add_column(name)
    for cell in scores.cells:
        rates = []
        for c in cell.checks:
            text = f"{c.passed}/{c.runs}"
            if c.rate is not None and c.low is not None and c.high is not None:
                text += f" {c.rate:.2f} [{c.low:.2f}-{c.high:.2f}]"
            rates.append(text)
        table.add_row(cell.condition, cell.stratum, *rates)
    return table


def _estimate(value: float | None, low: float | None, high: float | None) -> str:
    if value is None or low is None or high is None:
        return "n/a"
    return f"{value:.4f} [{low:.4f}, {high:.4f}]"


def _rl_tables(rl: RLAggregates) -> list[Table]:
    """rliable's aggregates: a row per participant with its runs and each statistic asked,
    then each probability of improvement, then the participants' profiles, a row per tau."""
    scores = "normalised scores" if rl.normalized else "scores"
    where = f"{rl.level:.0%} stratified bootstrap, {rl.resamples} resamples, {rl.sampler}"
    tables = []
    names = [s.statistic for s in rl.participants[0].statistics] if rl.participants else []
    if names:
        table = Table(title=f"rliable aggregates of {rl.measure} ({scores}; {where})")
        for name in ("participant", "runs", *names):
            table.add_column(name, justify="right" if name == "runs" else "left")
        for q in rl.participants:
            runs = f"{q.runs}" + (f" (+{q.incomplete} incomplete)" if q.incomplete else "")
            cells = [_estimate(s.value, s.low, s.high) for s in q.statistics]
            table.add_row(q.participant, runs, *cells)
        tables.append(table)
    if rl.improvements:
        table = Table(title=f"probability of improvement ({where})")
        for name in ("x", "y", "runs", "P(x > y)"):
            table.add_column(name, justify="right" if name == "runs" else "left")
        for d in rl.improvements:
            table.add_row(d.x, d.y, f"{d.runs_x} vs {d.runs_y}", _estimate(d.value, d.low, d.high))
        tables.append(table)
    taus = [p.tau for p in rl.participants[0].profile] if rl.participants else []
    if taus:
        # A row per tau, a column per participant: the taus may be many.
        table = Table(title=f"performance profiles: fraction of {rl.distribution} above tau")
        for name in ("tau", *(q.participant for q in rl.participants)):
            table.add_column(name, justify="right" if name == "tau" else "left")
        for i, tau in enumerate(taus):
            points = [q.profile[i] for q in rl.participants]
            table.add_row(f"{tau:g}", *(_estimate(c.value, c.low, c.high) for c in points))
        tables.append(table)
    return tables


def print_tables(
    model: Figures,
    tiers: Tiers,
    out: Console | None = None,
    contrasts: ContrastsFile | None = None,
    rl: RLAggregates | None = None,
    scores: Scores | None = None,
) -> None:
    """Print the conditions, the estimand, the reproduction class, the contrasts, the scored
    cells' pass rates and rliable's aggregates (if any) and the tiers on ``out`` (stdout by
    default, as :func:`console` makes it); a table that would cut a cell short at the console's
    width is printed as ``key: value`` blocks (:func:`print_table`)."""
    out = out or console()
    print_table(out, _conditions(model))
    e = model.estimand
    if e.mean is not None and e.interval is not None:
        out.print(
            f"{e.key}: {e.mean:.4f} ± {e.interval.halfwidth:.4f} "
            f"({e.interval.method}, {e.interval.level:.0%})"
        )
    rep = tiers.reproduction
    out.print(
        f"reproduction: [bold]{escape(rep.verdict)}[/bold] ({escape(rep.reason)})", markup=True
    )
    if contrasts is not None:
        print_table(out, _contrasts(contrasts))
    if scores is not None and scores.cells:
        print_table(out, _pass_rates(scores))
    for table in _rl_tables(rl) if rl is not None else []:
        print_table(out, table)
    print_table(out, _tiers(tiers))
