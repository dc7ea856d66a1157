"""Runs ``repro study`` and, optionally, kills itself with SIGKILL at the N-th bundle event.

Usage: ``python study_driver.py EVENT -- ARGS...`` where EVENT 0 never kills and ARGS are the
``repro`` arguments; ``EVENT:INT`` (or another signal's name without ``SIG``) sends that signal
instead, once, which the study handles as it would a user's. An event is one of: a record or
file serialised for writing, a file renamed into place. At the end the driver prints
``events: N`` to stderr (when it was not killed), so a test can pick kill points inside a real
run.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any


def events_printed(stderr: str) -> int:
    """How many bundle events the driver counted: the ``events: N`` it printed last on
    stderr."""
    return int(stderr.rsplit("events: ", 1)[1].split()[0])


def main() -> None:
    """Count bundle events, kill at the chosen one, and run the CLI."""
    from repro._bundle import writer as bundle
    from repro._cli.app import app

    at, _, name = sys.argv[1].partition(":")
    kill_at = int(at)
    how = signal.Signals[f"SIG{name}"] if name else signal.SIGKILL
    seen = [0]

    def event() -> None:
        seen[0] += 1
        if seen[0] == kill_at:
            os.kill(os.getpid(), how)

    to_bytes, commit = bundle.to_bytes, bundle.BundleWriter.commit

    def counting_to_bytes(value: Any) -> bytes:
        event()
        return to_bytes(value)

    def counting_commit(self: bundle.BundleWriter, tmp: Any, path: Any) -> None:
        event()
        commit(self, tmp, path)

    bundle.to_bytes = counting_to_bytes  # type: ignore[assignment]
    bundle.BundleWriter.commit = counting_commit  # type: ignore[method-assign]
    try:
        app(sys.argv[3:], standalone_mode=True)
    finally:
        print(f"events: {seen[0]}", file=sys.stderr)


if __name__ == "__main__":
    main()
