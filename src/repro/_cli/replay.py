"""``repro replay``: re-execute one slot and compare it with the bundle's, byte for byte."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import attrs
import typer

from repro._cli.options import AdapterOptions, AsJson, Sources, Traceback, parse_options
from repro._cli.output import emit, err_console
from repro._escape import json_text, visible
from repro.errors import EXIT_VERIFY_FAILED

__all__ = ["replay"]


def replay(
    bundle: Annotated[
        Path,
        typer.Argument(help="Replay a slot of this bundle, a directory or packed; it must verify."),
    ],
    slot: Annotated[
        str, typer.Argument(help="Re-execute this slot, named by its ID (e.g. c03-r0042).")
    ],
    option: AdapterOptions = None,
    as_json: AsJson = False,
    show_traceback: Traceback = False,
    sources: Sources = None,
) -> None:
    """Re-execute one slot and compare its records with the bundle's, byte for byte.

    The simulator must be installed and the protocol's own modules and files in --sources,
    pinning what the bundle pins; in stream mode the slot's partition is re-executed from its
    checkpoint. With --traceback, see why a failed slot failed."""
    # Lazy: `repro --help` imports this module; only `repro replay` runs the study machinery.
    from repro._execute.replay import replay as replay_slot

    result = replay_slot(bundle, slot, parse_options(option or []), show_traceback, sources)
    if as_json:
        emit(json_text(attrs.asdict(result) | {"identical": result.identical}))
    else:
        how = (
            f"replayed {result.replayed_slots} slot(s) of {result.partition} from its checkpoint"
            if result.from_checkpoint
            else "replayed alone from its seed"
        )
        if result.kept_before is not None:
            how += f" (the state kept before {result.kept_before})"
        for difference in result.differences:
            err_console().print(visible(f"DIFF {difference}", newlines=False))
        verdict = "byte-identical" if result.identical else "differs"
        emit(f"{result.slot}: {how}; {result.attempts} attempt(s); {verdict}", prose=True)
    if not result.identical:
        raise typer.Exit(EXIT_VERIFY_FAILED)
