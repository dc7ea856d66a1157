"""``repro show`` without options: the protocol and identity of a verified bundle, then the
tables its figures make in a terminal; and the consoles the command line prints through.

The conditions table reads the figures model (:mod:`repro.derive.figures`), as the PNG, the
HTML page and the validation report do."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from repro.derive.figures import FigureRow, Figures
from repro.models import ContrastsFile, FrozenProtocol, Tiers

__all__ = ["UNWRAPPED_WIDTH", "console", "print_identity", "print_tables"]

#: The width a console that is not a terminal lays lines out in: wide enough that no line of
#: text is wrapped and no table's cell folded, as a log or a pipe reads them.
UNWRAPPED_WIDTH = 1 << 14


def console(*, stderr: bool = False) -> Console:
    """A console on stdout (on stderr with ``stderr``). On a terminal it is rich's own: the
    terminal's width and colours, long lines wrapped to fit. Anywhere else (a pipe, a file, a
    log) no line is wrapped: text comes out whole, and a table as wide as its widest cells need
    rather than folded into 80 columns."""
    here = Console(stderr=stderr)
    if here.is_terminal:
        return here
    return Console(stderr=stderr, soft_wrap=True, width=UNWRAPPED_WIDTH)


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
    protocol: FrozenProtocol, bundle: Path, bundle_sha256: str, out: Console | None = None
) -> None:
    """Say, before any table, which protocol the bundle ran and that it verified, by its
    identity: ``protocol ID: TITLE`` and ``verified: BUNDLE (bundle sha256 ...)``."""
    out = out or console()
    p = protocol.protocol
    out.print(f"protocol {p.id}: {p.title}", markup=False, highlight=False)
    out.print(f"verified: {bundle} (bundle sha256 {bundle_sha256})", markup=False, highlight=False)


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


def print_tables(
    model: Figures,
    tiers: Tiers,
    out: Console | None = None,
    contrasts: ContrastsFile | None = None,
) -> None:
    """Print the conditions, the estimand, the reproduction class, the contrasts (if any) and
    the tiers on ``out`` (stdout by default, as :func:`console` makes it)."""
    out = out or console()
    # A table is laid out as a table (its title centred over it) even where text is not
    # wrapped: its width is the console's, which off a terminal fits every cell whole.
    out.print(_conditions(model), soft_wrap=False)
    e = model.estimand
    if e.mean is not None and e.interval is not None:
        out.print(
            f"{e.key}: {e.mean:.4f} ± {e.interval.halfwidth:.4f} "
            f"({e.interval.method}, {e.interval.level:.0%})",
            highlight=False,
        )
    rep = tiers.reproduction
    out.print(f"reproduction: [bold]{rep.verdict}[/bold] ({rep.reason})", highlight=False)
    if contrasts is not None:
        out.print(_contrasts(contrasts), soft_wrap=False)
    out.print(_tiers(tiers), soft_wrap=False)
