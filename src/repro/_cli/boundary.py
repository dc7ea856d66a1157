"""The command line's one error boundary: every command is registered through :func:`command`,
which runs it inside :func:`guarded`, where each error repro raises on purpose becomes what the
command prints and the exit code :func:`repro.errors.exit_code` gives it. No command catches
:class:`~repro.errors.BadInput` itself."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from repro._cli.exits import help_text
from repro._cli.output import emit, err_console, print_findings, print_refused, verify_report
from repro._escape import json_text
from repro.errors import BadInput, NotVerified, Refused, ReproError, exit_code

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["Presenting", "command", "guarded", "print_error", "problems_report"]

_F = TypeVar("_F", bound="Callable[..., Any]")


@dataclass(frozen=True)
class Presenting:
    """How a command shows the errors whose words depend on it.

    ``findings_of`` names the parameter holding the bundle a :class:`~repro.errors.NotVerified`
    is about (its findings are named for it), and ``json_findings`` prints them as ``repro
    verify --json`` does when the command has ``--json``; ``refused`` is the prefix of each
    reason a :class:`~repro.errors.Refused` gives and the outcome its count ends with;
    ``json_problems`` prints a :class:`~repro.errors.BadInput`'s problems as JSON on stdout
    when the command has ``--json``."""

    findings_of: str | None = None
    json_findings: bool = False
    refused: tuple[str, str | None] = ("FAIL", None)
    json_problems: bool = False


def print_error(error: ReproError) -> None:
    """Print ``error`` on stderr, after a red ``error:``."""
    # Lazy: rich only when an error is printed (`repro verify` of a good bundle has none).
    from rich.markup import escape

    # Escaped: a message may hold brackets that are not markup, as a JSON path's "$.matrix[0]".
    err_console().print(
        f"[red]error:[/red] {escape(str(error))}", highlight=False, markup=True, soft_wrap=True
    )


def _shown(error: ReproError, how: Presenting, params: Mapping[str, Any]) -> None:
    """Print ``error`` as the command shows it, ``params`` being its arguments."""
    as_json = bool(params.get("as_json"))
    if isinstance(error, NotVerified) and how.findings_of is not None:
        if how.json_findings and as_json:
            emit(json_text(verify_report(error.findings, None)))
        else:
            print_findings(params[how.findings_of], error.findings)
    elif isinstance(error, Refused):
        print_refused(error, *how.refused)
    else:
        if isinstance(error, BadInput) and how.json_problems and as_json:
            emit(json_text(problems_report(error)))
        print_error(error)


def problems_report(error: BadInput) -> dict[str, Any]:
    """``--json``'s refusal: ``ok`` false and each problem as data; an input refused in words
    alone (an adapter's own refusal) is one problem at ``$``, its code ``bad-input``, its
    message the whole text."""
    problems = [p.as_dict() for p in error.problems] or [
        {"path": "$", "message": str(error), "code": "bad-input"}
    ]
    return {"ok": False, "problems": problems}


def guarded(function: _F, how: Presenting = Presenting()) -> _F:
    """``function``, a command, made to end on a repro error with its message (as ``how`` says)
    and the exit code the error's class maps to."""

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except ReproError as error:
            _shown(error, how, kwargs)
            raise typer.Exit(exit_code(error)) from None

    return run  # type: ignore[return-value]


def command(
    group: typer.Typer, name: str, function: Callable[..., Any], how: Presenting = Presenting()
) -> None:
    """Register ``function`` as the command ``name`` of ``group``, inside the error boundary
    (:func:`guarded`); its help is its docstring and then its exit codes
    (:func:`repro._cli.exits.help_text`; ``name`` is as typed, ``protocol check``)."""
    full, short = help_text(function, name)
    group.command(name.rpartition(" ")[2], help=full, short_help=short)(guarded(function, how))
