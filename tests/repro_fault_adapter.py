"""A fault-injecting adapter for the tests: each level of its ``fault`` factor makes runs (or the
session) misbehave in one way. It is registered only by the tests, as ``faults``.

Flaky faults misbehave at a slot's first attempt only; they remember which slots already
misbehaved in marker files under the ``state_dir`` option, because the worker that misbehaved may
not survive to remember it.
"""

from __future__ import annotations

import hashlib
import math
import os
import random
import signal
import time
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from repro.adapters import (
    AdapterFacts,
    BadInput,
    Condition,
    Evidence,
    Frozen,
    PlanEntry,
    Protocol,
    RunFailed,
)

#: Every fault, and the terminal (status, cause) each attempt of a slot gets when it is not flaky.
FAULTS: dict[str, tuple[str, str | None]] = {
    "none": ("valid", None),
    "slow": ("valid", None),
    "raise": ("failed", "adapter-raised:ValueError"),
    "run-failed": ("failed", "simulator-error:Boom"),
    "cause-with-path": ("failed", "cause-withheld"),
    "not-evidence": ("invalid", "evidence-type:dict"),
    "missing-fields": ("invalid", "evidence-type:SimpleNamespace"),
    "unpicklable": ("invalid", "evidence-type:function"),
    "reward-type": ("invalid", "evidence-step-reward-type"),
    "steps-type": ("invalid", "evidence-steps-type"),
    "bad-trace": ("invalid", "evidence-trace-digest"),
    "nan": ("invalid", "non-finite-step-reward"),
    "no-measure": ("invalid", "evidence-step-rewards-missing"),
    "steps-mismatch": ("invalid", "evidence-steps-mismatch"),
    "hang": ("failed", "timeout"),
    "kill": ("failed", "worker-died:SIGKILL"),
    "exit": ("failed", "worker-exited:3"),
    "open-raise": ("failed", "session-open-failed:RuntimeError"),
    "open-hang": ("failed", "session-open-failed:timeout"),
    "open-kill": ("failed", "session-open-failed:worker-died:SIGKILL"),
    "bad-contract": ("failed", "session-open-failed:contract-not-json"),
}
#: Faults that misbehave at a slot's first attempt only, and the cause of that first attempt.
FLAKY: dict[str, str] = {
    "flaky-kill": "worker-died:SIGKILL",
    "flaky-hang": "timeout",
    "flaky-raise": "adapter-raised:ValueError",
}
#: Faults at a condition's first session open only: the worker dies while it opens the session,
#: as under the kernel's OOM killer. The open is retried with a fresh worker, so every slot
#: ends valid at its first attempt, and the loss is kept with that attempt's times.
FLAKY_OPEN: dict[str, str] = {"flaky-open-kill": "worker-died:SIGKILL"}
#: How long a ``slow`` run takes.
SLOW_RUN_SECONDS = 0.01


def _good(entry: PlanEntry) -> Evidence:
    # In stream mode the measure comes from the shared generator stream, as CAGE-2's does.
    draw = random.random() if entry.seed is None else (entry.seed % 1000) / 1000
    return Evidence(
        step_rewards=(draw, 1.0),
        reported_measure=None,
        steps=2,
        trace_sha256=hashlib.sha256(repr(draw).encode()).hexdigest(),
    )


def _misbehave(fault: str) -> Any:
    if fault == "raise":
        raise ValueError("a message with /home/someone/secret in it")
    if fault == "run-failed":
        raise RunFailed("simulator-error:Boom")
    if fault == "cause-with-path":
        raise RunFailed("failed at /home/someone/secret\nTraceback (most recent call last)")
    if fault == "not-evidence":
        return {"step_rewards": [1.0], "steps": 1}
    if fault == "missing-fields":
        return types.SimpleNamespace(steps=3)
    if fault == "unpicklable":
        return lambda: None
    if fault == "reward-type":
        return Evidence(("1.0", 2), None, 2, None)
    if fault == "steps-type":
        return Evidence((1.0,), None, "2", None)  # type: ignore[arg-type]
    if fault == "bad-trace":
        return Evidence((1.0,), None, 1, "/home/someone/not-a-digest")
    if fault == "nan":
        return Evidence((1.0, math.nan), None, 2, None)
    if fault == "no-measure":
        return Evidence(None, None, None, None)
    if fault == "steps-mismatch":
        return Evidence((1.0, 2.0), None, 999, None)
    if fault == "hang":
        time.sleep(3600)
    if fault == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if fault == "exit":
        os._exit(3)
    raise AssertionError(f"no such run fault {fault}")


class _Session:
    def __init__(self, fault: str, state_dir: Path | None) -> None:
        self.fault = fault
        self.state_dir = state_dir
        self.contract: dict[str, Any] = {"fault": fault}

    def run(self, entry: PlanEntry) -> Any:
        fault = self.fault
        if fault in FLAKY:
            assert self.state_dir is not None, "flaky faults need --option state_dir"
            marker = self.state_dir / entry.slot
            if marker.exists():
                return _good(entry)
            # Draw first, so a lost attempt has consumed from the stream before it misbehaves.
            _good(entry)
            marker.touch()
            fault = fault.removeprefix("flaky-")
        if fault in ("none", *FLAKY_OPEN):
            return _good(entry)
        if fault == "slow":
            time.sleep(SLOW_RUN_SECONDS)
            return _good(entry)
        return _misbehave(fault)

    def close(self) -> None:
        pass


class FaultAdapter:
    """Runs that misbehave as their condition's ``fault`` level says."""

    name = "faults"

    def __init__(self) -> None:
        self._state_dir: Path | None = None

    def freeze(self, protocol: Protocol, options: Mapping[str, str]) -> Frozen:
        """Check the factor levels; remember where flaky faults keep their markers."""
        for i, factor in enumerate(protocol.matrix):
            for j, level in enumerate(factor.levels):
                if factor.name != "fault" or level not in {*FAULTS, *FLAKY, *FLAKY_OPEN}:
                    raise BadInput(f"protocol: unknown fault {level!r} @ $.matrix[{i}].levels[{j}]")
        if "state_dir" in options:
            self._state_dir = Path(options["state_dir"])
        facts = AdapterFacts(
            name=self.name,
            version="test",
            observation_scope="none",
            observation_note="a test adapter",
            measure_inputs="step-rewards",
        )
        return Frozen(facts=facts, sources=())

    def open(self, protocol: Protocol, condition: Condition, frozen: Frozen) -> _Session:
        """Open a session, or misbehave at opening."""
        fault = str(condition.factors["fault"])
        if fault == "open-raise":
            raise RuntimeError("cannot open /home/someone/secret")
        if fault == "open-hang":
            time.sleep(3600)
        if fault == "open-kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if fault in FLAKY_OPEN:
            assert self._state_dir is not None, "flaky faults need --option state_dir"
            marker = self._state_dir / f"open-{condition.id}"
            if not marker.exists():
                marker.touch()
                os.kill(os.getpid(), signal.SIGKILL)
        session = _Session(fault, self._state_dir)
        if fault == "bad-contract":
            session.contract = {"value": math.inf}
        return session
