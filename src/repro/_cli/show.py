"""``repro show``: verify a bundle, then show its figures; optionally a plot and an HTML
report."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Annotated

import typer

from repro._cli.output import emit
from repro._escape import json_text
from repro.errors import BadInput, install_hint

__all__ = ["show"]

_NEEDS_MATPLOTLIB = f"plotting needs matplotlib: {install_hint('plot')}"

_Bundle = Annotated[
    Path, typer.Argument(help="Show this bundle, a directory or packed; it must verify.")
]
_Plot = Annotated[Path | None, typer.Option("--plot", help="Also draw a PNG comparison plot.")]
_Html = Annotated[
    Path | None,
    typer.Option(
        "--html",
        help="Also write the report as one self-contained HTML file (must not exist).",
    ),
]
_AsJson = Annotated[
    bool,
    typer.Option("--json", help="Print aggregates, tiers and scores as one JSON object instead."),
]


def show(bundle: _Bundle, plot: _Plot = None, html: _Html = None, as_json: _AsJson = False) -> None:
    """Verify the bundle, then show its protocol, that it verified (by its sha256), and its
    conditions, estimand, class, contrasts, pass rates and tiers.

    With --json it prints its derived files as JSON instead; it can also draw a plot (PNG) or
    write an HTML report. A table too wide for the terminal is printed as key: value blocks."""
    # Lazy: `repro --help` imports this module; only `repro show` verifies.
    from repro._present.showing import load

    if html is not None and (html.exists() or html.is_symlink()):
        raise BadInput(f"--html {html}: already exists; show never overwrites")
    # Known before anything is written: a missing matplotlib must not leave the HTML file behind.
    if plot is not None and importlib.util.find_spec("matplotlib") is None:
        raise BadInput(_NEEDS_MATPLOTLIB)
    shown = load(bundle)  # a bundle that does not verify: its findings, named by the boundary
    if as_json:
        emit(json_text(shown.as_dict()))
    else:
        # Lazy: rich only for the terminal's tables, not for --json (tests/test_startup.py).
        from repro._present.terminal import console, print_identity, print_tables

        out = console()
        print_identity(
            shown.protocol, bundle, shown.bundle_sha256, out, shown.continued, shown.recorded
        )
        print_tables(
            shown.figures(runs=False), shown.tiers, out, shown.contrasts, shown.rl, shown.scores
        )
    # With --json, stdout holds the JSON object alone: notes go to stderr.
    if html is not None:
        _write_new(html, shown.html())
        emit(f"html written to {html}", err=as_json)
    if plot is not None:
        # Lazy: matplotlib (the plot extra, maybe absent) only for --plot.
        from repro._present.plot import plot as draw

        try:
            draw(shown.figures(), plot)
        except ImportError:
            raise BadInput(_NEEDS_MATPLOTLIB) from None
        emit(f"plot written to {plot}", err=as_json)


def _write_new(path: Path, text: str) -> None:
    """Write ``text`` to the new file ``path``; refuse an existing one, and leave nothing behind
    when the write fails (a full disk, say)."""
    try:
        fh = open(path, "x", encoding="utf-8")  # noqa: SIM115 (closed below, removed on failure)
    except OSError as exc:
        raise BadInput(f"{path}: {exc.strerror or type(exc).__name__}") from None
    try:
        with fh:
            fh.write(text)
    except OSError as exc:
        path.unlink(missing_ok=True)
        raise BadInput(f"{path}: {exc.strerror or type(exc).__name__}") from None
