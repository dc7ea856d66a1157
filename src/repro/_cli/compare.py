"""``repro compare``: compare two verified bundles of one protocol."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from repro._cli.output import emit
from repro._escape import json_text
from repro.errors import EXIT_VERIFY_FAILED

__all__ = ["compare"]


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
    # Lazy: `repro --help` imports this module; only `repro compare` verifies and compares.
    from repro._compare.bundles import CompareResult
    from repro._compare.bundles import compare as compare_bundles

    result: CompareResult = compare_bundles(baseline, candidate)
    if as_json:
        emit(json_text(result.as_dict()))
    else:
        emit(result.text())
    if result.regression:
        raise typer.Exit(EXIT_VERIFY_FAILED)
