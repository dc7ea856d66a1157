"""The ``repro`` command line: the Typer app and its commands' registration.

Each command is a module of :mod:`repro._cli` (``repro study`` is :mod:`repro._cli.study`), run
inside the one error boundary (:mod:`repro._cli.boundary`); each command's exit codes are in
:data:`repro._cli.exits.EXITS`, made of :mod:`repro.errors`' constants, and its help names them.
"""

from __future__ import annotations

import gc
from typing import Annotated

# Each command imports what it needs when it runs: the study machinery (adapters, workers, the
# Dask client) and rich's progress bars and tables cost a start-up that ``repro verify`` and
# ``repro --help`` have no use for.
import typer

from repro import version
from repro._cli import (
    adapters,
    audit,
    compare,
    pack,
    protocol,
    publish,
    replay,
    show,
    sign,
    study,
    verify,
)
from repro._cli.boundary import Presenting, command
from repro._cli.exits import exit_codes
from repro._cli.output import emit
from repro.errors import EXIT_OK

__all__ = ["app", "main"]

#: -h as well as --help, on every command (subcommands inherit their group's settings).
_CONTEXT = {"help_option_names": ["-h", "--help"]}

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    context_settings=_CONTEXT,
    help="Freeze a protocol, run it into a sealed bundle, and verify bundles offline.\n\n"
    + exit_codes(""),
)


def _version() -> str:
    """repro's version (:func:`repro.version`)."""
    return version()


def _print_version(value: bool) -> None:
    if value:
        emit(f"repro {_version()}")
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


#: A command whose bundle does not verify names its findings for the bundle it was given.
_BUNDLE = Presenting(findings_of="bundle")

command(app, "study", study.study)
command(app, "verify", verify.verify)
command(app, "sign", sign.sign)
command(app, "pack", pack.pack)
command(app, "replay", replay.replay, _BUNDLE)
command(app, "audit", audit.audit, _BUNDLE)
command(app, "publish", publish.publish, Presenting(refused=("REFUSED", "no table written")))
command(app, "compare", compare.compare, Presenting(refused=("FAIL", None)))
command(app, "adapters", adapters.adapters)

protocol_app = typer.Typer(
    no_args_is_help=True,
    context_settings=_CONTEXT,
    help="Check a protocol without running it, plan its contrasts' power, or start a new one.\n\n"
    + exit_codes("protocol"),
)
app.add_typer(protocol_app, name="protocol")
command(protocol_app, "protocol check", protocol.check, Presenting(json_problems=True))
command(protocol_app, "protocol power", protocol.power)
command(protocol_app, "protocol new", protocol.new)

command(app, "show", show.show, Presenting(findings_of="bundle", json_findings=True))


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
