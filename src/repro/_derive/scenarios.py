"""Scenarios and their versions: which scenario a condition runs, and whether a run's outcome
was made on the scenario's current version.

A harness keeps its scenarios with it and says, in each outcome, which version of the scenario
it ran (``scenario_version``). A run made on another version than the protocol's is superseded:
it is recorded ``excluded`` and never counted, so results from an old scenario are never
averaged in with the current one. ``repro study`` judges each run with :func:`version_verdict`
and ``repro verify`` judges every retained outcome again with it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from repro.models import Condition, Protocol, Scenario
from repro.models._outcome import VERSION_KEY

__all__ = [
    "SUPERSEDED",
    "VERSION_KEY",
    "by_condition",
    "scenario_of",
    "version_verdict",
]

#: The cause of a superseded run's record, followed by the version it ran.
SUPERSEDED = "superseded-scenario-version:"


def scenario_of(protocol: Protocol, condition: Condition) -> Scenario | None:
    """The scenario ``condition`` runs (its level of the scoring's scenario factor), if the
    protocol declares scenarios."""
    if not protocol.scenarios:
        return None
    factor = protocol.scoring.scenario_factor if protocol.scoring is not None else "scenario"
    level = condition.factors.get(factor)
    return next((s for s in protocol.scenarios if s.id == level), None)


def by_condition(protocol: Protocol, conditions: Iterable[Condition]) -> dict[str, Scenario]:
    """The scenario each of ``conditions`` runs (those that run one)."""
    if not protocol.scenarios:
        return {}
    pairs = ((c.id, scenario_of(protocol, c)) for c in conditions)
    return {condition: scenario for condition, scenario in pairs if scenario is not None}


def version_verdict(
    scenario: Scenario | None, outcome: dict[str, Any] | None
) -> tuple[Literal["invalid", "excluded"], str] | None:
    """How a completed run with ``outcome`` must be recorded because of its scenario version:
    invalid when the outcome does not say which version it ran, excluded when it ran another
    than the current one; None when the version is current or the run has no scenario."""
    if scenario is None or outcome is None:
        return None
    reported = outcome.get(VERSION_KEY)
    if type(reported) is not int:
        return ("invalid", "outcome-scenario-version-missing")
    if reported != scenario.version:
        return ("excluded", f"{SUPERSEDED}{reported}")
    return None
