"""The options several commands share, declared once as ``Annotated`` aliases, and what
``--option KEY=VALUE`` reads as."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from repro.errors import BadInput

__all__ = ["AdapterOptions", "AsJson", "Sources", "Traceback", "parse_options"]

#: The options ``study``, ``replay``, ``audit`` and ``protocol check`` share.
AdapterOptions = Annotated[
    list[str] | None,
    typer.Option("--option", help="Pass the adapter an option, KEY=VALUE; repeat it for more."),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
Traceback = Annotated[
    bool,
    typer.Option(
        "--traceback",
        help="Print the traceback of every exception the adapter raises to stderr "
        "(on this terminal only: no bundle ever keeps one).",
    ),
]
Sources = Annotated[
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


def parse_options(pairs: list[str]) -> dict[str, str]:
    """``--option KEY=VALUE``, each given, as a dict; bad input unless each has a key and an
    ``=``."""
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BadInput(f"--option takes KEY=VALUE, not {pair!r}")
        options[key] = value
    return options
