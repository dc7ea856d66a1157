"""The validity rules of a run: how a completed attempt's evidence becomes its record's status,
cause and measure.

One pure function, :func:`judge`, is the rule. ``repro study`` applies it to the evidence each
attempt returns; ``repro verify`` applies it again, through :func:`record_problem`, to the
evidence every record of a bundle keeps, and names each record whose status, cause or measure
is not what the rule gives. So a record flipped from invalid to valid (a measure past the
protocol's maximum, say) or a measure that is not the number its kept outcome holds is found,
whatever else a forger re-derived.

What a record keeps is not always all the rule saw: step rewards that are not finite cannot be
written in canonical JSON, and an outcome that would disclose a host path or a credential is
withheld (its sha256 kept). For those two causes the record must hold exactly what the study
keeps of them, which is all verify can check.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any, Literal

from attrs import frozen

from repro._derive.scenarios import SUPERSEDED, version_verdict
from repro._derive.tally import measure_of
from repro._disclosure import scan, short_cause
from repro._json import canonical
from repro.models import (
    MAX_OUTCOME_BYTES,
    MAX_STEP_REWARDS,
    AdapterFacts,
    Protocol,
    RunRecord,
    Scenario,
)

__all__ = [
    "JUDGED_CAUSES",
    "NON_FINITE",
    "WITHHELD_OUTCOME",
    "Judged",
    "judge",
    "outcome_value",
    "record_problem",
]

#: The cause of a run whose step rewards are not all finite (they are not kept).
NON_FINITE = "non-finite-step-reward"
#: The cause of a run whose outcome would disclose something, followed by the kind of the first
#: hit (``host-path``, ``traceback``, ``credential``): the outcome is withheld, its sha256 kept.
WITHHELD_OUTCOME = "outcome-discloses:"
#: Causes :func:`judge` gives, besides :data:`WITHHELD_OUTCOME` and the superseded version.
JUDGED_CAUSES = frozenset(
    {
        NON_FINITE,
        "no-finite-measure",
        "measure-below-minimum",
        "measure-above-maximum",
        "evidence-step-rewards-missing",
        "evidence-steps-mismatch",
        "outcome-scenario-version-missing",
    }
)


@frozen
class Judged:
    """What a completed attempt is recorded as: its status and cause, and the measure, step
    rewards and outcome its record keeps (with the sha256 of an outcome withheld)."""

    status: Literal["valid", "invalid", "excluded"]
    cause: str | None
    measure: float | None
    step_rewards: tuple[float, ...] | None
    outcome: dict[str, Any] | None
    outcome_sha256: str | None = None


def outcome_value(outcome: dict[str, Any] | None, key: str | None) -> float | None:
    """The ``outcome_value`` measure: the number at ``key`` of the outcome, or the length of the
    array there; None when there is no such finite number (a boolean is not a number)."""
    if outcome is None or key is None:
        return None
    value = outcome.get(key)
    if isinstance(value, list):
        return float(len(value))
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
        return number if math.isfinite(number) else None
    return None


def _measure_cause(protocol: Protocol, measure: float | None) -> str | None:
    m = protocol.measure
    if measure is None or not math.isfinite(measure):
        return "no-finite-measure"
    if m.minimum is not None and measure < m.minimum:
        return "measure-below-minimum"
    if m.maximum is not None and measure > m.maximum:
        return "measure-above-maximum"
    return None


def judge(
    protocol: Protocol,
    facts: AdapterFacts,
    scenario: Scenario | None,
    step_rewards: Sequence[float] | None,
    reported: float | None,
    steps: int | None,
    outcome: dict[str, Any] | None,
    *,
    summed: float | None = None,
) -> Judged:
    """The record of a completed attempt with this evidence, under the protocol's rules, in
    this order: an outcome that would disclose something is withheld (invalid); an adapter whose
    facts say its runs end in step rewards must give them, as many as its steps; they must be
    finite; the measure (the sum of the step rewards, the number at ``measure.key`` of the
    outcome for ``outcome_value``, else as reported) must be finite and within the protocol's
    bounds; and a run on another scenario version than the protocol's is excluded whatever
    else holds (:func:`~repro._derive.scenarios.version_verdict`)."""
    rewards = tuple(step_rewards) if step_rewards is not None else None
    if outcome is not None:
        data = canonical.dumps(outcome)
        hits = scan("", data)
        if hits:
            return Judged(
                "invalid",
                WITHHELD_OUTCOME + hits[0].kind,
                None,
                rewards,
                None,
                hashlib.sha256(data).hexdigest(),
            )
    cause: str | None = None
    if protocol.measure.name == "outcome_value":
        measure = outcome_value(outcome, protocol.measure.key)
    else:
        if rewards is None:
            measure = reported
        else:
            measure = summed if summed is not None else measure_of(rewards)
    if rewards is None and facts.measure_inputs == "step-rewards":
        cause = "evidence-step-rewards-missing"
    elif rewards is not None and steps is not None and steps != len(rewards):
        cause = "evidence-steps-mismatch"
    elif rewards is not None and not all(map(math.isfinite, rewards)):
        cause, measure, rewards = NON_FINITE, None, None
    else:
        cause = _measure_cause(protocol, measure)
        if cause == "no-finite-measure":
            measure = None
    status: Literal["valid", "invalid", "excluded"] = "invalid" if cause else "valid"
    verdict = version_verdict(scenario, outcome)
    if verdict is not None:
        status, cause = verdict
    return Judged(status, cause, measure, rewards, outcome)


def _holds_evidence(record: RunRecord) -> bool:
    return any(
        value is not None
        for value in (
            record.measure,
            record.steps,
            record.step_rewards,
            record.trace_sha256,
            record.outcome,
            record.outcome_sha256,
        )
    )


def _kept_problem(record: RunRecord) -> str | None:
    """What a study would not have kept of an attempt that ran, whatever its status: too many
    step rewards, too large an outcome, a cause that is no short code, or no cause for an
    attempt that is not valid."""
    if record.step_rewards is not None and len(record.step_rewards) > MAX_STEP_REWARDS:
        return f"more than {MAX_STEP_REWARDS} step rewards, which a study refuses"
    if record.outcome is not None and len(canonical.dumps(record.outcome)) > MAX_OUTCOME_BYTES:
        return f"an outcome of more than {MAX_OUTCOME_BYTES} bytes, which a study refuses"
    if record.cause is not None and short_cause(record.cause) != record.cause:
        return "the cause is not a short code (a study keeps no message, path or traceback)"
    if record.status != "valid" and record.cause is None:
        return f"a {record.status} attempt without a cause"
    return None


def record_problem(
    protocol: Protocol,
    facts: AdapterFacts,
    scenario: Scenario | None,
    record: RunRecord,
    summed: float | None = None,
) -> str | None:
    """What is wrong with ``record`` under the validity rules, or None: a completed attempt's
    status, cause and measure must be what :func:`judge` gives for the evidence it keeps; an
    attempt that failed, or whose evidence the worker refused, keeps none. (Declared exclusions
    and the chaining of attempts are the plan join's to judge.) ``summed``: the sum of its step
    rewards, when the caller has it (see :func:`judge`)."""
    status, cause = record.status, record.cause or ""
    judged = status == "valid" or cause in JUDGED_CAUSES or cause.startswith(SUPERSEDED)
    if status == "excluded" and not cause.startswith(SUPERSEDED):
        if _holds_evidence(record) or record.contract_sha256 is not None:
            return "a slot excluded before sealing keeps evidence, but it never ran"
        return None
    kept = _kept_problem(record)
    if kept is not None:
        return kept
    if cause.startswith(WITHHELD_OUTCOME):
        if record.outcome is not None or record.measure is not None:
            return "an outcome withheld as disclosing is kept, or its measure"
        if record.outcome_sha256 is None:
            return "an outcome withheld as disclosing has no sha256"
        return None
    if record.outcome_sha256 is not None:
        return "an outcome sha256 without a withheld outcome"
    if not judged:
        if _holds_evidence(record):
            return f"a {status} attempt ({cause or 'no cause'}) keeps evidence"
        return None
    if cause == NON_FINITE:
        if record.step_rewards is not None or record.measure is not None:
            return "step rewards that were not finite are kept, or their measure"
        return None
    verdict = judge(
        protocol,
        facts,
        scenario,
        record.step_rewards,
        record.measure,
        record.steps,
        record.outcome,
        summed=summed,
    )
    found = (record.status, record.cause, record.measure)
    expected = (verdict.status, verdict.cause, verdict.measure)
    if found != expected:
        return (
            f"the validity rules give {verdict.status} ({verdict.cause or 'no cause'}, measure "
            f"{verdict.measure!r}), the record says {record.status} "
            f"({record.cause or 'no cause'}, measure {record.measure!r})"
        )
    return None
