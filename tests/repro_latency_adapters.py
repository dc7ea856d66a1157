"""Test adapters for thread sessions (tests/test_latency.py): a command adapter whose runs
ignore the protocol's timeout, so that only the study's own bound on a thread session ends
them."""

from __future__ import annotations

import threading
from typing import Any

from repro.adapters import Evidence, Frozen, stopped_with_run
from repro.adapters._command import CommandAdapter
from repro.errors import RunFailed
from repro.models import Condition, PlanEntry, Protocol


class StuckAdapter(CommandAdapter):
    """The command adapter's freezing and contract, but a run waits until it is stopped (its
    registered stop), however long that takes: a plugin that never bounds its own runs."""

    name = "stuck"
    thread_sessions = True

    def open(self, protocol: Protocol, condition: Condition, frozen: Frozen) -> Any:
        """A session that never answers by itself."""
        return _StuckSession(super().open(protocol, condition, frozen).contract)


class _StuckSession:
    def __init__(self, contract: dict[str, Any]) -> None:
        self.contract = contract

    def run(self, entry: PlanEntry) -> Evidence:
        stopped = threading.Event()
        with stopped_with_run(stopped.set):
            stopped.wait()
        raise RunFailed("stopped")  # never recorded: the study has given up on this run

    def close(self) -> None:
        """Nothing to release."""
