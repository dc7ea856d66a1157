"""``repro publish``: write a scored bundle's results table when every gate holds."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from repro._cli.output import emit

__all__ = ["publish"]


def publish(
    bundle: Annotated[
        Path, typer.Argument(help="Publish this scored study's bundle, a directory or packed.")
    ],
    out: Annotated[Path, typer.Option("--out", help="Write the table to this new Markdown file.")],
) -> None:
    """Write a scored bundle's results table, only if it verifies and every gate holds.

    Otherwise name each finding or failed gate, write nothing and exit 1."""
    # Lazy: `repro --help` imports this module; only `repro publish` verifies.
    from repro._present.publishing import publish as publish_table

    gates = publish_table(bundle, out)
    for gate in gates:
        emit(f"gate {gate.name}: holds ({gate.detail})")
    if not gates:
        emit("gates: none declared")
    emit(f"OK: wrote {out}")
