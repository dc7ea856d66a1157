"""Whether a protocol's estimand mixes environments: a mean (or sum) of condition means taken
across conditions that run different environments or tasks.

An average of CartPole, Acrobot and MountainCar returns is a number, but not one that says
anything: each environment's returns have their own scale and sign. An adapter names the matrix
factors whose levels are different environments or tasks as ``environment_factors`` on its
class (the gymnasium adapter's ``env_id``, the inspect adapter's ``task``); when such a factor
has more than one level, the estimand, which spans every condition, spans environments too, and
``repro protocol check`` and ``repro study`` say so as a warning before anything runs. It is a
warning, not a refusal: a composite score summed over tasks can be what a benchmark publishes
(CAGE-2's is a sum over its adversaries and episode lengths, which are not environment factors
of the CybORG adapter), and contrasts and per-condition means stay meaningful in such a study.
"""

from __future__ import annotations

from collections.abc import Sequence

from repro.models import Protocol

__all__ = ["ENVIRONMENT_FACTORS", "mixed_environments"]

#: The adapter class attribute that names its environment factors.
ENVIRONMENT_FACTORS = "environment_factors"

#: How many levels a warning lists before it says how many more there are.
_SHOWN = 3


def mixed_environments(protocol: Protocol, factors: Sequence[str]) -> str | None:
    """The warning for ``protocol`` when its estimand spans conditions whose environment factor
    (one of ``factors``) differs, naming the JSON path, the factor and its levels; None when
    every condition runs the same environment."""
    for index, factor in enumerate(protocol.matrix):
        if factor.name not in factors or len(factor.levels) < 2:
            continue
        levels = ", ".join(str(level) for level in factor.levels[:_SHOWN])
        if len(factor.levels) > _SHOWN:
            levels += f" and {len(factor.levels) - _SHOWN} more"
        how = "sums" if protocol.estimand == "sum-of-condition-means" else "averages"
        return (
            f"$.estimand: {protocol.estimand} {how} {protocol.measure.name} over conditions "
            f"of different {factor.name} ({levels} @ $.matrix[{index}]), a figure that rarely "
            "means anything across environments; compare within one environment (contrasts), "
            "read each condition's mean, or run one study per environment"
        )
    return None
