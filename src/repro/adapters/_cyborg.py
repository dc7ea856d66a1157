"""CAGE Challenge 2 (CybORG 2.1, Scenario2) through upstream CybORG or the csle-cyborg fork.

Factors: ``trial_length`` (blue steps per episode) and ``red_agent`` (``B_lineAgent``,
``RedMeanderAgent``, ``SleepAgent``). Participants (``kind``): ``sleep`` (ChallengeWrapper action 0
at every step: the "Sleeping Agent"), ``agent_class`` (``params.target = "module:Class"``, an
object with ``get_action(observation, action_space)`` and ``end_episode()``, instantiated once per
condition and pinned by the sha256 of its module's source file) and ``shipped`` (``params.agent``:
a blue agent shipped with the simulator, ``BlueReactRestoreAgent`` or ``BlueReactRemoveAgent``,
taken from the backend's own package and pinned by its source file's sha256).

What an agent is fed (``params.observation`` of ``agent_class`` and ``shipped``):

``challenge-wrapper`` (the default)
    ChallengeWrapper's observation vector and its integer action space; the agent's action goes
    through the wrapper's ``step``. The shipped evaluator's harness.
``blue-steps``
    The raw CybORG observation dictionary for Blue (``reset('Blue')``, then each step's
    ``step('Blue', action).observation``) and the raw action space
    (``get_action_space('Blue')``); the agent returns a CybORG action object.
``reset-true-state``
    The evaluator's commented-out raw lines switched on: ``observation = reset().observation``
    (with no agent named, CybORG returns the initial *true state*) before the episodes and after
    each, never updated from a step, so the agent sees that one observation at every step; the
    raw action space; ``step('Blue', action)`` and its reward. The harness under which the
    shipped ``BlueReactRestoreAgent`` restores the twelve hosts other than User0 in a 13-step
    cycle (one Monitor, twelve Restores).

The two raw feeds exist because the shipped reactive agents read the raw dictionary
(``observation.items()``, ``action_space['session']``) and cannot run under ChallengeWrapper.
Whatever the feed, the ChallengeWrapper is built and reset as the evaluator does, so every feed
draws the same random numbers before an episode's first step.

Options: ``backend`` (protocol ``adapter.options`` or ``--option``: ``auto``, ``cyborg`` for
upstream, ``csle-cyborg``), ``scenario_dir`` (``--option`` only: a directory on this host,
required for csle-cyborg, whose wheel ships no scenario files; a protocol is frozen into the
bundle and carries no host paths), ``scenario_sha256`` (protocol only: every scenario file name,
``Scenario2.yaml`` or ``images/NAME.yaml``, -> its pinned sha256; a mismatch refuses the run),
``simulator_tree_sha256`` (protocol only: the digest of the simulator package's Python sources,
:func:`simulator_tree_source`; when given, the ledger pins that tree too and any other tree
refuses the run, so a study can require one simulator, e.g. upstream at the leaderboard's
commit, not a later fix or the fork).
Every scenario file must lie inside the scenario directory once symlinks are resolved, and the
images that images/images.yaml names must be among them.

Per condition, as the leaderboard's evaluator does: build a fresh environment with the red agent,
wrap it in ChallengeWrapper for Blue, reset; per episode take ``trial_length`` blue steps, sum
the step rewards, reset.

A condition's contract names the interface (scenario, red agent, trial length, action space,
observation, participant), not the distribution: the ledger names that (the adapter's version and
the simulator's pinned source files), so the two distributions' run records can be compared byte
for byte.

Seeding: CybORG draws from Python's global :mod:`random` (the IP addresses and process IDs a
reset assigns, the red agents' and actions' choices). In ``stream`` mode the episodes run in the
evaluator's loop above on the one stream set at study start. In ``per-run`` mode the worker
seeds the global generators from the slot's seed just before each run, and the run resets the
environment first: a reset rebuilds the whole simulated state and resets every agent, so an
episode is a function of its slot's seed alone, whichever episodes ran before it in the process.
"""

from __future__ import annotations

import copy
import enum
import hashlib
import importlib
import importlib.metadata
import importlib.util
import inspect
import random
import struct
import sys
import types
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from repro._protocol.pins import (
    SCENARIO_ROLE,
    TREE_PIN,
    TREE_ROLE,
    agent_role,
    cyborg_problems,
    refuse_pin_problems,
)
from repro.adapters._base import (
    MAX_EPISODE_STEPS,
    Evidence,
    Frozen,
    TraceDigest,
    accepts,
    file_source,
    import_target,
    module_file_source,
    package_source,
    pinned_target_source,
)
from repro.adapters._cyborg_params import (
    FEEDS,
    SHIPPED_BLUE_AGENTS,
    WRAPPER,
    AgentClassParams,
    CybORGOptions,
    ShippedParams,
    settings_of,
)
from repro.adapters._params import structure_at
from repro.errors import BadInput, RunFailed, install_hint
from repro.models import AdapterFacts, Condition, PlanEntry, Protocol, Source

__all__ = [
    "FEEDS",
    "RED_AGENTS",
    "SHIPPED_BLUE_AGENTS",
    "CybORGAdapter",
    "canonical_observation",
    "load_backend",
    "resolve_scenario",
    "simulator_tree_source",
]

RED_AGENTS = ("B_lineAgent", "RedMeanderAgent", "SleepAgent")
_TREE = TREE_PIN
_SB3 = "stable_baselines3"


@contextmanager
def _without_stable_baselines3() -> Iterator[None]:
    """csle-cyborg imports stable_baselines3 (and so torch) for a blue agent that a Scenario2
    evaluation never uses. When it is not installed, stand in a module for the length of the
    import only, and take it out of sys.modules afterwards so no other library sees it."""
    if _SB3 in sys.modules or importlib.util.find_spec(_SB3) is not None:
        yield
        return
    stub = types.ModuleType(_SB3, "temporary stand-in while importing csle_cyborg")

    class PPO:
        def __init__(self, *args: object, **kwargs: object) -> None:
            raise RuntimeError("stable_baselines3 is not installed")

        @classmethod
        def load(cls, *args: object, **kwargs: object) -> None:
            raise RuntimeError("stable_baselines3 is not installed")

    stub.PPO = PPO  # type: ignore[attr-defined]
    sys.modules[_SB3] = stub
    try:
        yield
    finally:
        if sys.modules.get(_SB3) is stub:
            del sys.modules[_SB3]


class Backend:
    """One of the two CybORG distributions, behind the calls the evaluator makes."""

    def __init__(self, name: str) -> None:
        self.name = name
        if name == "csle-cyborg":
            with _without_stable_baselines3():
                main = importlib.import_module("csle_cyborg.main")
                self.modules = {
                    "B_lineAgent": "csle_cyborg.agents.simple_agents.b_line",
                    "RedMeanderAgent": "csle_cyborg.agents.simple_agents.meander",
                    "SleepAgent": "csle_cyborg.agents.simple_agents.sleep_agent",
                    "ChallengeWrapper": "csle_cyborg.agents.wrappers.challenge_wrapper",
                    "Main": "csle_cyborg.main",
                    "BlueReactAgent": "csle_cyborg.agents.simple_agents.blue_react_agent",
                }
                self.classes = {
                    k: getattr(importlib.import_module(m), k)
                    for k, m in self.modules.items()
                    if k != "BlueReactAgent"
                }
            self.distribution = "csle-cyborg"
            self.package_dir = Path(str(main.__file__)).resolve().parent
        else:
            cyborg = importlib.import_module("CybORG")
            agents = importlib.import_module("CybORG.Agents")
            wrappers = importlib.import_module("CybORG.Agents.Wrappers")
            self.classes = {
                "B_lineAgent": agents.B_lineAgent,
                "RedMeanderAgent": agents.RedMeanderAgent,
                "SleepAgent": agents.SleepAgent,
                "ChallengeWrapper": wrappers.ChallengeWrapper,
                "Main": cyborg.CybORG,
            }
            self.modules = {k: c.__module__ for k, c in self.classes.items()}
            self.modules["BlueReactAgent"] = "CybORG.Agents.SimpleAgents.BlueReactAgent"
            self.distribution = "CybORG"
            self.package_dir = Path(str(cyborg.__file__)).resolve().parent

    def default_scenario_dir(self) -> Path | None:
        """Upstream finds its scenario files inside the package; the fork ships none."""
        if self.name == "cyborg":
            return self.package_dir / "Shared" / "Scenarios"
        return None

    def make(self, scenario: dict[str, Any], scenario_file: Path, red: str) -> Any:
        """A fresh environment with the red agent, wrapped for Blue."""
        agents = {"Red": self.classes[red]}
        if self.name == "csle-cyborg":
            env = self.classes["Main"](copy.deepcopy(scenario), "sim", agents=agents)
        else:
            env = self.classes["Main"](str(scenario_file), "sim", agents=agents)
        return env, self.classes["ChallengeWrapper"](env=env, agent_name="Blue")

    def reset(self, wrapped: Any) -> Any:
        """Reset and return the observation (the fork returns (obs, info))."""
        out = wrapped.reset()
        return out[0] if self.name == "csle-cyborg" else out

    def step(self, wrapped: Any, action: int) -> tuple[Any, float]:
        """One blue step: observation and reward (4 values upstream, 5 in the fork)."""
        out = wrapped.step(action)
        return out[0], out[1]

    def shipped_agent(self, name: str) -> type[Any]:
        """A blue agent class shipped with this distribution (:data:`SHIPPED_BLUE_AGENTS`)."""
        module = importlib.import_module(self.modules["BlueReactAgent"])
        return getattr(module, name)  # type: ignore[no-any-return]


#: How to get a backend: upstream from its repository (docs/reproducing-cage2.md), the fork
#: csle-cyborg by repro's extra.
SIMULATOR_INSTALL = "install upstream CybORG 2.1, or, for the fork csle-cyborg, " + install_hint(
    "cyborg"
)


def load_backend(name: str) -> Backend:
    """The requested backend; ``auto`` prefers upstream CybORG, then csle-cyborg."""
    candidates = ["cyborg", "csle-cyborg"] if name == "auto" else [name]
    if name not in ("auto", "cyborg", "csle-cyborg"):
        raise BadInput.at(
            "$.adapter.options.backend",
            f"unknown backend {name!r} (auto, cyborg, csle-cyborg)",
            "not-allowed",
        )
    for candidate in candidates:
        module = "CybORG" if candidate == "cyborg" else "csle_cyborg"
        if importlib.util.find_spec(module) is not None:
            return Backend(candidate)
    raise BadInput(f"CybORG is not installed: {SIMULATOR_INSTALL}")


def _yaml() -> Any:
    try:
        return importlib.import_module("yaml")
    except ImportError:
        raise BadInput(f"the cyborg adapter needs PyYAML: {install_hint('cyborg')}") from None


def scenario_files(directory: Path) -> dict[str, Path]:
    """Scenario2.yaml and every image file, by their names inside the scenario directory."""
    files = {"Scenario2.yaml": directory / "Scenario2.yaml"}
    images = directory / "images"
    if images.is_dir():
        files.update({f"images/{p.name}": p for p in sorted(images.glob("*.yaml"))})
    return files


def resolve_scenario(directory: Path) -> dict[str, Any]:
    """Scenario2 with host images resolved, as upstream does from the file path: each host's
    image is looked up in images/images.yaml; an entry with a ``path`` contributes the
    ``Test_Host`` mapping of images/<path>.yaml (and the ``image`` key goes), otherwise the host
    becomes a copy of the image entry. An image path that is not one of the scenario files
    (``../x``, ``sub/x``) is refused: only the files pinned in the ledger are read."""
    yaml = _yaml()
    files = scenario_files(directory)
    scenario = yaml.safe_load(files["Scenario2.yaml"].read_text("utf-8"))
    images = yaml.safe_load((directory / "images" / "images.yaml").read_text("utf-8"))
    for hostname, host in list(scenario["Hosts"].items()):
        image = images[host["image"]]
        if "path" in image:
            name = f"images/{image['path']}.yaml"
            if name not in files:
                raise BadInput(
                    f"scenario directory {directory}: images/images.yaml names image path "
                    f"{image['path']!r}, which is not a file in images/"
                )
            loaded = yaml.safe_load(files[name].read_text("utf-8"))
            host.update(loaded["Test_Host"])
            host.pop("image")
        else:
            scenario["Hosts"][hostname] = copy.deepcopy(image)
    return scenario  # type: ignore[no-any-return]


def simulator_tree_source(package_dir: Path, name: str) -> Source:
    """The simulator package's Python sources pinned as one tree: every ``*.py`` file under
    ``package_dir`` (``__pycache__`` and every other file left out: compiled files differ from
    host to host, and the scenario files are pinned one by one), one line each of its sha256,
    size and ``/``-separated path relative to the package, sorted by path, digested with
    sha256. A symlinked file is refused: what it points to is not part of the package."""
    lines, total = [], 0
    for path in sorted(package_dir.rglob("*.py")):
        relative = path.relative_to(package_dir)
        if "__pycache__" in relative.parts:
            continue
        if path.is_symlink() or not path.is_file():
            raise BadInput(f"simulator package {package_dir}: {relative} is not a regular file")
        data = path.read_bytes()
        lines.append(f"{hashlib.sha256(data).hexdigest()} {len(data)} {relative.as_posix()}\n")
        total += len(data)
    lines.sort(key=lambda line: line.split(" ", 2)[2])
    digest = hashlib.sha256("".join(lines).encode()).hexdigest()
    return Source(kind="directory", role=TREE_ROLE, name=name, sha256=digest, size=total)


def _check_inside(directory: Path, files: Mapping[str, Path], where: str) -> None:
    """Refuse a scenario file that a symlink (of the file or of images/) takes outside the
    scenario directory: the ledger would name it as if it were inside."""
    root = directory.resolve()
    for name, path in files.items():
        target = path.resolve()
        if not target.is_relative_to(root):
            raise BadInput(
                f"{where}: {name} resolves to {target}, outside the scenario directory {root}"
            )


def _check_factors(protocol: Protocol) -> None:
    """The factors are ``trial_length`` and ``red_agent``, each level one the simulator runs."""
    names = [f.name for f in protocol.matrix]
    for i, factor in enumerate(protocol.matrix):
        if factor.name == "red_agent":
            for j, level in enumerate(factor.levels):
                if level not in RED_AGENTS:
                    raise BadInput.at(
                        f"$.matrix[{i}].levels[{j}]",
                        f"unknown red agent {level!r} ({', '.join(RED_AGENTS)})",
                        "not-allowed",
                    )
        elif factor.name == "trial_length":
            for j, level in enumerate(factor.levels):
                if not isinstance(level, int) or not 1 <= level <= MAX_EPISODE_STEPS:
                    raise BadInput.at(
                        f"$.matrix[{i}].levels[{j}]",
                        f"trial_length must be a whole number from 1 to "
                        f"{MAX_EPISODE_STEPS}, not {level!r}",
                        "not-allowed",
                    )
        else:
            raise BadInput.at(
                f"$.matrix[{i}].name", f"unknown factor {factor.name!r} for cyborg", "not-allowed"
            )
    for required in ("trial_length", "red_agent"):
        if required not in names:
            raise BadInput.at(
                "$.matrix", f"the cyborg adapter needs a {required!r} factor", "missing-field"
            )


def _participant_params(protocol: Protocol) -> dict[int, AgentClassParams]:
    """Each participant's params checked by its kind; the ``agent_class`` ones structured, by
    the participant's index."""
    agents = {}
    for i, participant in enumerate(protocol.participants):
        where = f"$.participants[{i}]"
        if participant.kind == "sleep":
            if participant.params:
                raise BadInput.at(
                    f"{where}.params", "the sleep participant takes no params", "not-allowed"
                )
        elif participant.kind == "agent_class":
            agents[i] = structure_at(participant.params, AgentClassParams, f"{where}.params")
        elif participant.kind == "shipped":
            shipped = structure_at(participant.params, ShippedParams, f"{where}.params")
            if shipped.observation == WRAPPER:
                raise BadInput.at(
                    f"{where}.params.observation",
                    f"{shipped.agent} reads the raw observation dictionary and cannot "
                    "run under ChallengeWrapper: name the raw feed it is given "
                    "(blue-steps, reset-true-state)",
                    "inconsistent",
                )
        else:
            raise BadInput.at(
                f"{where}.kind",
                f"unknown participant kind {participant.kind!r} for cyborg "
                "(sleep, agent_class, shipped)",
                "not-allowed",
            )
    return agents


def _scenario_directory(settings: CybORGOptions, backend: Backend) -> tuple[Path, str]:
    """The scenario directory (``--option scenario_dir``, or the backend's own) and what names
    it in a refusal."""
    if settings.scenario_dir:
        return Path(settings.scenario_dir), "--option scenario_dir"
    default = backend.default_scenario_dir()
    if default is None:
        raise BadInput("csle-cyborg ships no scenario files: give --option scenario_dir=DIR")
    return default, f"{backend.distribution}'s scenario directory"


def _scenario_sources(directory: Path, where: str) -> list[Source]:
    """Every scenario file, each inside ``directory``, pinned by name."""
    if not directory.is_dir():
        raise BadInput(f"{where}: {directory} is not a directory")
    files = scenario_files(directory)
    missing = [n for n in files if not files[n].is_file()]
    if missing or not (directory / "images" / "images.yaml").is_file():
        raise BadInput(
            f"{where}: {directory}: Scenario2.yaml or images/images.yaml missing"
            + (f" ({', '.join(missing)} not a file)" if missing else "")
        )
    _check_inside(directory, files, where)
    return [file_source(SCENARIO_ROLE, name, path.read_bytes()) for name, path in files.items()]


def _simulator_sources(
    protocol: Protocol, settings: CybORGOptions, backend: Backend
) -> list[Source]:
    """The simulator's distribution, its tree when the protocol pins one, and the source files
    of its environment, wrapper and red agents (and blue agents, when a participant is one)."""
    sources = [package_source("simulator", backend.distribution)]
    if settings.simulator_tree_sha256 is not None:
        sources.append(simulator_tree_source(backend.package_dir, backend.package_dir.name))
    for key in ("Main", "ChallengeWrapper", *RED_AGENTS):
        sources.append(module_file_source(f"simulator {key}", backend.modules[key]))
    if any(p.kind == "shipped" for p in protocol.participants):
        sources.append(
            module_file_source("simulator blue agents", backend.modules["BlueReactAgent"])
        )
    return sources


def _agent_sources(protocol: Protocol, agents: Mapping[int, AgentClassParams]) -> list[Source]:
    """Each agent class's module, pinned, and the class checked for the evaluator's calls."""
    sources = []
    for i, params in agents.items():
        participant = protocol.participants[i]
        where = f"$.participants[{i}].params"
        pin = {"target": params.target, "sha256": params.sha256}
        sources.append(pinned_target_source(agent_role(participant.id), pin, where))
        agent = import_target(params.target, f"{where}.target")
        if not (
            inspect.isclass(agent)
            and accepts(agent, 0)
            and callable(getattr(agent, "get_action", None))
            and callable(getattr(agent, "end_episode", None))
        ):
            raise BadInput.at(
                f"{where}.target",
                f"target {params.target!r} must be a class made without arguments, "
                "with get_action(observation, action_space) and end_episode()",
                "not-allowed",
            )
    return sources


def _resolved(directory: Path) -> dict[str, Any]:
    """The scenario the directory's files describe, each host's image merged in."""
    yaml = _yaml()
    try:
        return resolve_scenario(directory)
    except (yaml.YAMLError, KeyError, TypeError, AttributeError, ValueError) as exc:
        raise BadInput(
            f"scenario directory {directory}: Scenario2 does not resolve "
            f"({type(exc).__name__}: {exc})"
        ) from None


def _facts(name: str, backend: Backend, protocol: Protocol) -> AdapterFacts:
    """What the ledger says of the adapter: the simulator's version, and what is observed."""
    return AdapterFacts(
        name=name,
        version=f"{backend.distribution} {importlib.metadata.version(backend.distribution)}",
        observation_scope="partial",
        observation_note=(
            "each step's blue ChallengeWrapper observation, the blue and red actions and the "
            "reward are digested; the simulator's true state is not observed"
            if all(_feed(p) == WRAPPER for p in protocol.participants)
            else "each step's blue and red actions, the reward and what the blue agent is "
            "fed are digested (a raw observation as canonical JSON; reset-true-state's once "
            "per episode, as it never changes); the simulator's state after a step is not "
            "observed"
        ),
        measure_inputs="step-rewards",
    )


#: What the reset before each episode costs, in steps: 16-17 ms against 1.9-2.4 ms a step
#: with each of the three red agents (csle-cyborg 0.0.3, Scenario2, measured on the project's
#: 2-core machine). Without it a 30-step episode seemed to cost 30% of a 100-step one where it
#: costs about 35%, and a stream study's ETA, which meets its short episodes first, said too
#: much time was left (benchmarks/eta.py).
RESET_STEPS = 8.0


class CybORGAdapter:
    """Runs CAGE-2 Scenario2 episodes."""

    name = "cyborg"
    #: Upstream CybORG 2.1 or the fork csle-cyborg (the ``backend`` option chooses).
    simulator_modules = ("CybORG", "csle_cyborg")
    simulator_install = SIMULATOR_INSTALL

    def slot_cost(self, condition: Condition) -> float:
        """One episode's cost in steps (the progress display's weight): its trial length, the
        steps it takes, and the reset that starts it (:data:`RESET_STEPS`)."""
        return float(condition.factors["trial_length"]) + RESET_STEPS

    def __init__(self) -> None:
        self._backend: Backend | None = None
        self._scenario: dict[str, Any] = {}
        self._scenario_file = Path()

    def freeze(self, protocol: Protocol, options: Mapping[str, str]) -> Frozen:
        """Check factors and participants, load the backend, pin scenario, image, agent and
        wrapper source files, and refuse any pinned digest that does not match."""
        settings = settings_of(protocol, options)
        _check_factors(protocol)
        agents = _participant_params(protocol)
        backend = load_backend(settings.backend)
        directory, where = _scenario_directory(settings, backend)
        sources = _scenario_sources(directory, where)
        sources += _simulator_sources(protocol, settings, backend)
        sources += _agent_sources(protocol, agents)
        # Every pin against what was found: the rule verify applies again to the bundle's
        # protocol and ledger.
        refuse_pin_problems(
            cyborg_problems(protocol, sources),
            {
                _TREE: f" ({backend.distribution}, {backend.package_dir}): another simulator, "
                "or another commit of it"
            },
        )
        self._backend = backend
        self._scenario = _resolved(directory)
        self._scenario_file = directory / "Scenario2.yaml"
        return Frozen(facts=_facts(self.name, backend, protocol), sources=tuple(sources))

    def open(self, protocol: Protocol, condition: Condition, frozen: Frozen) -> _CybORGSession:
        """Build the condition's environment, wrap it for Blue and reset it."""
        if self._backend is None:
            raise RuntimeError("freeze() must run before open()")
        participant = next(p for p in protocol.participants if p.id == condition.participant)
        return _CybORGSession(
            self._backend,
            self._scenario,
            self._scenario_file,
            condition,
            participant,
            protocol.seeding.mode == "per-run",
        )


def _feed(participant: Any) -> str:
    """What the participant is fed (``params.observation``; the sleeper: ChallengeWrapper's)."""
    if participant.kind == "sleep":
        return WRAPPER
    return str(participant.params.get("observation", WRAPPER))


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(_plain(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return f"{type(value).__name__}:{value}"


def canonical_observation(observation: Any) -> bytes:
    """A raw CybORG observation dictionary as JSON bytes for the trace digest: keys in the
    simulator's insertion order, enum members as ``Type.NAME``, addresses and networks (and any
    other object) as ``Type:str(value)``."""
    return orjson.dumps(_plain(observation))


class _PolicyError(Exception):
    """The agent raised (its exception is the ``__cause__``): a ``policy-error``, not a
    ``simulator-error``."""


class _SleepingAgent:
    """ChallengeWrapper action 0 (Sleep) at every step."""

    def get_action(self, observation: Any, action_space: Any) -> int:
        return 0

    def end_episode(self) -> None:
        pass


class _CybORGSession:
    def __init__(
        self,
        backend: Backend,
        scenario: dict[str, Any],
        scenario_file: Path,
        condition: Condition,
        participant: Any,
        per_run: bool,
    ) -> None:
        self._backend = backend
        self._per_run = per_run
        self._feed = _feed(participant)
        self._steps = int(condition.factors["trial_length"])
        red = str(condition.factors["red_agent"])
        self._env, self._wrapped = backend.make(scenario, scenario_file, red)
        # The contract needs a first observation; the stream is put back as it was, so that
        # each run draws its episode from the stream at its own start (below): a run's episode
        # is then a function of the stream's state before it alone, and replay may resume the
        # stream at any run of the session.
        before = random.getstate()
        self._observation = self._reset()
        random.setstate(before)
        if self._feed == WRAPPER:
            self._action_space = self._wrapped.get_action_space("Blue")
        else:
            self._action_space = self._env.get_action_space("Blue")
        if participant.kind == "sleep":
            self._make_agent: Any = _SleepingAgent
        elif participant.kind == "shipped":
            self._make_agent = backend.shipped_agent(str(participant.params["agent"]))
        else:
            self._make_agent = import_target(participant.params["target"], "$")
        self._agent: Any = self._make_agent()
        self.contract: dict[str, Any] = {
            "scenario": "Scenario2",
            "red_agent": red,
            "trial_length": self._steps,
            "blue_actions": int(self._action_space)
            if isinstance(self._action_space, int)
            else str(self._action_space),
            "observation_shape": list(np.asarray(self._observation).shape),
            "participant": participant.id,
            "policy": participant.kind,
        }
        if self._feed != WRAPPER:  # a raw feed: no vector, and what the agent sees is named
            self.contract["blue_actions"] = "raw"
            self.contract["observation_shape"] = None
            self.contract["observation"] = self._feed
        if participant.kind == "shipped":
            self.contract["agent"] = str(participant.params["agent"])

    def _reset(self) -> Any:
        """Reset the environment, and return the observation the agent is fed first."""
        if self._feed == WRAPPER:
            return self._backend.reset(self._wrapped)
        if self._feed == "blue-steps":
            return self._env.reset("Blue").observation
        return self._env.reset().observation

    def _step(self, action: Any, observation: Any) -> tuple[Any, float]:
        """One blue step: the observation the agent is fed next, and the reward."""
        if self._feed == WRAPPER:
            return self._backend.step(self._wrapped, action)
        result = self._env.step("Blue", action)
        return (result.observation if self._feed == "blue-steps" else observation), result.reward

    def _digest(self, observation: Any) -> bytes:
        if self._feed == WRAPPER:
            return np.asarray(observation).tobytes()
        return canonical_observation(observation)

    def run(self, entry: PlanEntry) -> Evidence:
        trace = TraceDigest()
        rewards: list[float] = []
        try:
            # The reset draws the episode's whole state from the global generators: seeded from
            # the slot's seed just now (per-run), or where the stream stands. The evaluator
            # resets after each episode instead, and once before the first: the same draws in
            # the same order, with the last one made at close.
            observation = self._reset()
            trace.add(b"O", self._digest(observation))
            fixed = self._feed == "reset-true-state"  # fed the same observation at every step
            for _ in range(self._steps):
                try:
                    action = self._agent.get_action(observation, self._action_space)
                except Exception as exc:
                    raise _PolicyError(exc) from exc
                observation, reward = self._step(action, observation)
                r = float(reward)
                rewards.append(r)
                trace.add(b"A", str(action).encode())
                trace.add(b"B", str(self._env.get_last_action("Blue")).encode())
                trace.add(b"E", str(self._env.get_last_action("Red")).encode())
                if not fixed:
                    trace.add(b"O", self._digest(observation))
                trace.add(b"R", struct.pack(">d", r))
            try:
                self._agent.end_episode()
            except Exception as exc:
                raise _PolicyError(exc) from exc
        except Exception as exc:
            # Who failed is told apart: the agent's exceptions are its own cause family.
            error = exc.__cause__ if isinstance(exc, _PolicyError) else exc
            family = "policy-error" if isinstance(exc, _PolicyError) else "simulator-error"
            cause = f"{family}:{type(error).__name__}"
            # A failed episode may leave the agent mid-episode (end_episode never ran): the
            # next run gets a fresh one, so no run inherits another's state.
            self._agent = self._make_agent()
            raise RunFailed(cause) from error
        return Evidence(
            step_rewards=tuple(rewards),
            reported_measure=None,
            steps=len(rewards),
            trace_sha256=trace.hexdigest(),
        )

    def close(self) -> None:
        if not self._per_run:
            # The evaluator's reset after its last episode of the condition: the next
            # condition's stream starts after it.
            self._reset()
