"""What the command line prints: every plain line (:func:`emit`), the stderr console
(:func:`err_console`), and the findings, warnings and refusals several commands name alike."""

from __future__ import annotations

import functools
import shutil
import sys
import textwrap
from typing import TYPE_CHECKING, Any

from repro._escape import visible

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from rich.console import Console

    from repro.errors import Refused
    from repro.verify import Finding

__all__ = [
    "emit",
    "err_console",
    "fitted",
    "print_findings",
    "print_protocol_warnings",
    "print_refused",
    "print_warnings",
    "verify_report",
]


def emit(line: str, *, err: bool = False, prose: bool = False) -> None:
    """Print ``line`` on stdout (on stderr with ``err``) as it is, but for its control
    characters, shown as text (:func:`repro._escape.visible`): whatever a bundle or a protocol
    holds (a file name, a factor level) reaches the terminal as text. Every line the command
    line prints without rich goes through here; everything it prints with rich, through a
    console of :func:`repro._present.terminal.console`, which does the same.

    A ``prose`` line (a sentence for a person, not JSON, a table row or a command to copy) is
    broken between words on a terminal narrower than it (:func:`fitted`), as rich's consoles
    wrap theirs; anywhere else (a pipe, a file, a log) every line comes out whole."""
    stream = sys.stderr if err else sys.stdout
    text = visible(line)
    if prose and stream.isatty():
        text = fitted(text, shutil.get_terminal_size().columns)
    print(text, file=stream, flush=err)


def fitted(text: str, width: int) -> str:
    """``text`` with each of its lines longer than ``width`` broken at spaces into lines of at
    most ``width``, each after the first indented by two spaces (so that a reader sees where a
    line goes on). A word longer than a line (a path, a digest) is never cut: it stands on a
    line of its own, longer than ``width``, for the terminal to fold. Lines that fit, and
    their leading spaces, are kept as they are."""
    if width < 20:  # too narrow to wrap to any purpose: the terminal folds it
        return text
    out: list[str] = []
    for part in text.split("\n"):
        if len(part) <= width:
            out.append(part)
            continue
        indent = part[: len(part) - len(part.lstrip(" "))]
        out.extend(
            textwrap.wrap(
                part,
                width,
                subsequent_indent=indent + "  ",
                break_long_words=False,
                break_on_hyphens=False,
            )
        )
    return "\n".join(out)


@functools.cache
def err_console() -> Console:
    """The console for messages on stderr, made on first use: a verify that succeeds prints
    nothing through it, so it never imports rich. On a terminal it wraps long lines; anywhere
    else it wraps none (:func:`repro._present.terminal.console`)."""
    # Lazy: rich only when something is printed through it (tests/test_startup.py).
    from repro._present.terminal import console

    return console(stderr=True)


def print_refused(refused: Refused, prefix: str, outcome: str | None = None) -> None:
    """Name every reason on stderr, each on one line after ``prefix`` (a newline it quotes shown
    as text), and the count with ``outcome``."""
    err = err_console()
    for reason in refused.reasons:
        err.print(visible(f"{prefix} {reason}", newlines=False))
    if outcome is not None:
        err.print(f"{len(refused.reasons)} reason(s): {outcome}", highlight=False)


def verify_report(findings: Sequence[Finding], digest: str | None) -> dict[str, Any]:
    """``--json``'s verdict on a bundle, the same for ``verify`` and ``show``."""
    return {
        "ok": not findings,
        "bundle_sha256": digest,
        "findings": [f.as_dict() for f in findings],
    }


def _values(f: Finding) -> str:
    """What a finding compares, in words a reader takes the right way round: a derived file's
    stored value and the one re-derived from the bundle's runs, else what was expected and
    what was found."""
    if f.code == "rederived-differs":
        return f"stored {f.found}, re-derived from the bundle's runs {f.expected}"
    return f"expected {f.expected}, found {f.found}"


def print_protocol_warnings(warnings: Sequence[str]) -> None:
    """Say on stderr what a protocol may not mean (it still runs), one ``warning:`` each."""
    # Lazy: rich only when there is a warning to print.
    from rich.markup import escape

    for warning in warnings:
        err_console().print(
            f"[yellow]warning:[/yellow] {escape(warning)}",
            highlight=False,
            markup=True,
            soft_wrap=True,
        )


def print_warnings(warnings: Sequence[Finding]) -> None:
    """Name every warning on stderr, one line each, as findings are named (with none, rich is
    not imported)."""
    for w in warnings:
        err_console().print(
            visible(
                f"WARN {w.file}: {w.what}: expected {w.expected}, found {w.found}", newlines=False
            )
        )


def print_findings(
    bundle: Path, findings: Sequence[Finding], failed: str = "does not verify"
) -> None:
    """Name every finding on stderr, one line each (a newline in what it quotes, such as a file
    name the bundle holds, shown as text like any control character), then say whether the root
    is unfinished or tampered. The findings that follow from others (a derived file's stored
    values against those re-derived from inputs that changed) come last, under the findings they
    follow from, with the stored value and the one re-derived from the bundle's runs named so."""
    err = err_console()
    roots = [f for f in findings if not f.follows_from]
    following = [f for f in findings if f.follows_from]
    for f in roots:
        err.print(visible(f"FAIL {f.file}: {f.what}: {_values(f)}", newlines=False))
    if following:
        causes = ", ".join(f"{file} ({code})" for code, file in following[0].follows_from)
        err.print(
            visible(
                f"{len(following)} finding(s) follow from those on the files the derived ones "
                f"are derived from ({causes}): their stored values may be the study's own, and "
                "the re-derived ones come from what those files now hold:",
                newlines=False,
            )
        )
        for f in following:
            values = f": {_values(f)}" if f.code == "rederived-differs" else ""
            err.print(visible(f"  FOLLOWS {f.file}: {f.what}{values}", newlines=False))
    if findings[0].incomplete:
        err.print(
            f"INCOMPLETE: {bundle} is an unfinished study and does not verify "
            f"({len(findings)} finding(s))",
            highlight=False,
        )
    else:
        err.print(f"{len(findings)} finding(s): {bundle} {failed}", highlight=False)
