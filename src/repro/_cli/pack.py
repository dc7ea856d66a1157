"""``repro pack``: pack a verified bundle into one zip or tar file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from repro._cli.output import emit

__all__ = ["pack"]


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
    # Lazy: `repro --help` imports this module; only `repro pack` packs and verifies.
    from repro._bundle.packed import pack as pack_bundle
    from repro.verify import open_verified

    written = pack_bundle(bundle, out, open_verified)
    emit(f"packed {bundle}: wrote {written}")
