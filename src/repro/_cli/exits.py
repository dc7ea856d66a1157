"""Every command's exit codes and what each means there (:data:`EXITS`), from
:mod:`repro.errors`' constants, and each command's help text, which ends with them."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from repro.errors import (
    EXIT_BAD_INPUT,
    EXIT_OK,
    EXIT_SIGNAL_BASE,
    EXIT_SLOTS_LOST,
    EXIT_STUDY_STOPPED,
    EXIT_VERIFY_FAILED,
)

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["EXITS", "exit_codes", "help_text"]

#: A study stopped by signal N exits with this code.
SIGNALLED = f"{EXIT_SIGNAL_BASE} + N"

#: Every command's exit codes and what each means there, by the command's name as typed
#: ("protocol check"), from repro.errors' constants: each help's "Exit codes" paragraph.
EXITS: dict[str, tuple[tuple[int | str, str], ...]] = {
    "": (
        (EXIT_OK, "ok"),
        (
            EXIT_VERIFY_FAILED,
            "a bundle does not verify, a replay differs, a gate or a comparison fails",
        ),
        (EXIT_BAD_INPUT, "bad input, nothing written"),
        (
            EXIT_STUDY_STOPPED,
            "a study stopped by an I/O error, a failed cluster, or its first slots all failing "
            "the same structural way",
        ),
        (EXIT_SLOTS_LOST, "a study lost a slot that ran (unless --accept-losses)"),
        (SIGNALLED, "a study stopped by signal N"),
    ),
    "study": (
        (EXIT_OK, "done"),
        (EXIT_BAD_INPUT, "bad input (nothing written)"),
        (
            EXIT_STUDY_STOPPED,
            "stopped by an I/O error, a failed cluster, or its first slots all failing the same "
            "structural way (OUT is incomplete)",
        ),
        (
            EXIT_SLOTS_LOST,
            "done, but a slot that ran did not end valid (OUT is whole; --accept-losses: 0)",
        ),
        (SIGNALLED, "stopped by signal N, 130 for SIGINT (OUT is incomplete)"),
    ),
    "verify": (
        (
            EXIT_OK,
            "verifies (and with --trusted-key, every signature checks; with --bagit-only, a "
            "valid bag, its warnings named)",
        ),
        (EXIT_VERIFY_FAILED, "findings (each named), a signature's among them"),
        (
            EXIT_BAD_INPUT,
            "not a bundle (a valid bag that is not a repro bundle among them), or a "
            "--trusted-key that is not an Ed25519 public key",
        ),
    ),
    "sign": (
        (EXIT_OK, "signed (or already signed by this key: the same bytes)"),
        (
            EXIT_BAD_INPUT,
            "not a bundle, a bundle that does not verify, a key that is not an Ed25519 private "
            "key or cannot be read, or another signature by this key already there",
        ),
    ),
    "pack": (
        (EXIT_OK, "written"),
        (
            EXIT_BAD_INPUT,
            "not a bundle directory, a bundle that does not verify, or --out exists or is not "
            "a .zip or .tar (nothing written)",
        ),
    ),
    "replay": (
        (EXIT_OK, "byte-identical"),
        (EXIT_VERIFY_FAILED, "differs (each differing field named)"),
        (EXIT_BAD_INPUT, "the bundle does not verify, an unknown slot, or other simulator sources"),
    ),
    "audit": (
        (EXIT_OK, "every re-executed slot byte-identical, every chained state matched"),
        (
            EXIT_VERIFY_FAILED,
            "a slot differs or a kept state does not chain (each named; signed all the same)",
        ),
        (
            EXIT_BAD_INPUT,
            "the bundle does not verify, a bad --sample, other simulator sources, a bad key, "
            "or another audit signature by this key already there",
        ),
    ),
    "publish": (
        (EXIT_OK, "written"),
        (EXIT_VERIFY_FAILED, "does not verify or a gate fails (nothing written)"),
        (EXIT_BAD_INPUT, "not a scored bundle, or --out exists"),
    ),
    "compare": (
        (EXIT_OK, "no regression"),
        (EXIT_VERIFY_FAILED, "a regression, or a bundle that does not verify"),
        (EXIT_BAD_INPUT, "not one protocol family, or not bundles"),
    ),
    "adapters": ((EXIT_OK, "always, even when some adapter does not load"),),
    "protocol": ((EXIT_OK, "ok"), (EXIT_BAD_INPUT, "bad input")),
    "protocol check": (
        (EXIT_OK, "valid"),
        (EXIT_BAD_INPUT, "bad input (named with its JSON path)"),
    ),
    "protocol new": (
        (EXIT_OK, "written"),
        (EXIT_BAD_INPUT, "no such template, or --out exists or cannot be written"),
    ),
    "protocol power": (
        (EXIT_OK, "planned"),
        (
            EXIT_BAD_INPUT,
            "bad input: a protocol without contrasts or with a clustered one, a pilot that does "
            "not verify or is of another family, too few pilot pairs or runs, an sd of 0, no "
            "discordant pair, a planned sample beyond the exact enumeration's limit (each named "
            "with its JSON path)",
        ),
    ),
    "show": (
        (EXIT_OK, "shown (and written)"),
        (EXIT_VERIFY_FAILED, "does not verify (findings named, nothing written)"),
        (EXIT_BAD_INPUT, "not a bundle, or FILE exists (nothing written)"),
    ),
}


def exit_codes(command: str) -> str:
    """The "Exit codes" paragraph of ``command``'s help (:data:`EXITS`)."""
    return "Exit codes: " + "; ".join(f"{code} {meaning}" for code, meaning in EXITS[command]) + "."


def _one_line(paragraph: str) -> str:
    """A paragraph of help text on one line, each run of white space a space: the terminal
    wraps it to its width."""
    return " ".join(paragraph.split())


def help_text(function: Callable[..., Any], command: str) -> tuple[str, str]:
    """The help of ``command`` (as typed: ``protocol check``) and its line in its group's list
    of commands: the help is ``function``'s docstring and then its exit codes, the line the
    docstring's first paragraph. Each paragraph's source line breaks are made spaces: typer's
    rich help keeps them, which broke sentences mid-line at any width."""
    paragraphs = [_one_line(p) for p in inspect.cleandoc(function.__doc__ or "").split("\n\n")]
    return "\n\n".join([*paragraphs, exit_codes(command)]), paragraphs[0]
