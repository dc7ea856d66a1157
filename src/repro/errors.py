"""One exception family for repro, and the exit codes the CLI maps it to."""

from __future__ import annotations

__all__ = ["EXIT_BAD_INPUT", "EXIT_OK", "EXIT_VERIFY_FAILED", "BadInput", "ReproError", "RunFailed"]

EXIT_OK = 0
EXIT_VERIFY_FAILED = 1
EXIT_BAD_INPUT = 2


class ReproError(Exception):
    """Base of every error repro raises on purpose."""


class BadInput(ReproError):
    """Input that repro cannot use: a bad protocol, an existing output root, an unreadable bundle.

    The CLI exits 2 with the message and writes nothing.
    """


class RunFailed(ReproError):
    """An adapter could not complete one run; ``cause`` is a short code, never a traceback."""

    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause
