"""The cyborg adapter's parameters as attrs models (:mod:`repro.adapters._params`): its options
and its ``agent_class`` and ``shipped`` participants' params, structured by the one converter and
checked before the simulator is loaded (:mod:`repro.adapters._cyborg`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any

from attrs import field, frozen

from repro._json.canonical import json_path
from repro._protocol.pins import SCENARIO_PINS
from repro.adapters._params import Expect, Sha256, Target, is_sha256, structure_at
from repro.errors import BadInput
from repro.models import SHA256_HEX, Protocol

__all__ = [
    "FEEDS",
    "SHIPPED_BLUE_AGENTS",
    "WRAPPER",
    "AgentClassParams",
    "CybORGOptions",
    "ShippedParams",
    "settings_of",
]

#: Blue agents shipped with both distributions that a ``shipped`` participant may name.
SHIPPED_BLUE_AGENTS = ("BlueReactRestoreAgent", "BlueReactRemoveAgent")
#: What an agent is fed (``params.observation``): see the :mod:`repro.adapters._cyborg` docstring.
FEEDS = ("challenge-wrapper", "blue-steps", "reset-true-state")
WRAPPER = "challenge-wrapper"
_OPTIONS = {"backend", "scenario_sha256", "simulator_tree_sha256"}
_CLI_OPTIONS = {"backend", "scenario_dir"}
_BACKENDS = ("auto", "cyborg", "csle-cyborg")
_PINS = SCENARIO_PINS
_IMAGE = re.compile(r"^images/[^/\\]+\.yaml$")
#: What an ``agent_class`` or ``shipped`` participant is fed.
Feed = Annotated[
    str, Expect(lambda v: v in FEEDS, "unknown observation {value!r} (" + ", ".join(FEEDS) + ")")
]

#: A shipped participant's ``params.agent``.
ShippedAgent = Annotated[
    str,
    Expect(
        lambda v: v in SHIPPED_BLUE_AGENTS,
        "the shipped participant names agent {value!r}, not one of "
        + ", ".join(SHIPPED_BLUE_AGENTS),
    ),
]
#: The ``backend`` option (whether it is installed is found when it is loaded).
Backend = Annotated[
    str,
    Expect(
        lambda v: v in _BACKENDS,
        "unknown backend {value!r} (" + ", ".join(_BACKENDS) + ")",
    ),
]
#: The ``simulator_tree_sha256`` option.
TreePin = Annotated[str, Expect(is_sha256, "the tree's pin must be 64 lower-case hex digits")]
#: The ``scenario_sha256`` option: scenario file name -> sha256 (each checked on its own).
Pins = Annotated[
    dict[str, Any],
    Expect(lambda v: isinstance(v, dict), "expected an object of file name -> sha256"),
]


@frozen
class AgentClassParams:
    """An ``agent_class`` participant's params: its ``module:Class`` target, the module's
    pinned sha256 and what the agent is fed."""

    target: Target
    sha256: Sha256 | None = None
    observation: Feed = WRAPPER


@frozen
class ShippedParams:
    """A ``shipped`` participant's params: which of the simulator's blue agents, and what it
    is fed (a raw feed: it reads the raw observation dictionary)."""

    agent: ShippedAgent
    observation: Feed = WRAPPER


def _pin_problem(name: str, value: Any) -> str | None:
    if name.startswith(("/", "\\")) or ".." in re.split(r"[/\\]", name):
        return f"pins {name!r}, a path outside the scenario directory"
    if name != "Scenario2.yaml" and not _IMAGE.fullmatch(name):
        return (
            f"pins {name!r}, which is not a scenario file name (Scenario2.yaml, images/NAME.yaml)"
        )
    if not isinstance(value, str) or not SHA256_HEX.fullmatch(value):
        return f"the pin of {name} must be 64 lower-case hex digits"
    return None


@frozen
class CybORGOptions:
    """The cyborg adapter's options, the protocol's ``adapter.options`` with ``--option``'s
    over them: the backend, the scenario directory (``--option`` only), the simulator tree's
    pin and the scenario files' pins (the protocol only)."""

    backend: Backend = "auto"
    scenario_dir: str | None = None
    simulator_tree_sha256: TreePin | None = None
    scenario_sha256: Pins = field(factory=dict)


def settings_of(protocol: Protocol, options: Mapping[str, str]) -> CybORGOptions:
    """The options, every key known and in its place, structured; every scenario pin checked
    for form."""
    merged: dict[str, Any] = dict(protocol.adapter.options)
    for key in protocol.adapter.options:
        if key == "scenario_dir":
            raise BadInput.at(
                "$.adapter.options.scenario_dir",
                "scenario_dir names a directory on one host, and the protocol is "
                "frozen into the bundle: give it as --option scenario_dir=DIR",
                "not-allowed",
            )
        if key not in _OPTIONS:
            raise BadInput.at(
                json_path("$.adapter.options", key),
                f"unknown option {key!r} for cyborg",
                "unknown-field",
            )
    for key, value in options.items():
        if key not in _CLI_OPTIONS:
            raise BadInput(
                f"--option {key}: the cyborg adapter takes {', '.join(sorted(_CLI_OPTIONS))}"
            )
        merged[key] = value
    settings = structure_at(merged, CybORGOptions, "$.adapter.options")
    if "scenario_sha256" in merged and not settings.scenario_sha256:
        raise BadInput.at(
            _PINS,
            "scenario_sha256 pins no file; pin every scenario file or leave it out",
            "not-allowed",
        )
    for name, value in settings.scenario_sha256.items():
        problem = _pin_problem(name, value)
        if problem is not None:
            raise BadInput.at(json_path(_PINS, name), problem, "not-allowed")
    return settings
