"""The embedded default adapter: any registered Gymnasium environment.

Factors: ``env_id`` (required), ``max_episode_steps`` (optional, a whole number from 1 to
:data:`~repro.adapters._base.MAX_EPISODE_STEPS`; required when the environment registers no time
limit). Participants (``kind``):

- ``random``: samples the action space, seeded with the run's seed;
- ``constant``: ``params.action`` at every step: a number or an array of numbers (integers for
  an integer space), checked against the action space at freeze;
- ``callable``: ``params.target`` = ``"module:function"``, called as
  ``function(observation, rng, **arguments)`` at every step, with a NumPy generator seeded from
  the run's seed and the keyword arguments ``params.arguments`` (an object, default ``{}``)
  names; it returns the action. With ``params.factory`` true the target is instead called once
  at the start of every run as ``target(rng, **arguments)`` and returns that run's policy,
  ``policy(observation) -> action`` (a class with ``__call__`` is such a factory), so a policy
  can hold state within a run and never across runs. The module is looked up first in the
  protocol file's directory, then on the import path; its source file is pinned by sha256
  (and, if ``params.sha256`` is given, must match it).

Seeding: every episode calls ``env.reset(seed=...)``, and the ``random`` policy's action space
and the ``callable`` policy's generator are seeded with the same value: the slot's seed in
``per-run`` mode (the worker has also seeded Python's and NumPy's global generators from it),
in ``stream`` mode a 63-bit draw from the stream set once at study start.
"""

from __future__ import annotations

import copy
import importlib
import importlib.metadata
import keyword
import random
import struct
from collections.abc import Callable, Mapping
from typing import Annotated, Any, cast

import numpy as np
from attrs import field, frozen

from repro._json.canonical import json_path
from repro._protocol.pins import gymnasium_problems, policy_role, refuse_pin_problems
from repro.adapters._base import (
    MAX_EPISODE_STEPS,
    Evidence,
    Frozen,
    TraceDigest,
    accepts,
    frame,
    import_target,
    module_file_source,
    package_source,
    pinned_target_source,
)
from repro.adapters._params import Expect, Sha256, Target, structure_at
from repro.errors import BadInput, RunFailed, install_hint
from repro.models import AdapterFacts, Condition, Participant, PlanEntry, Protocol, Source

__all__ = ["GymnasiumAdapter"]

Policy = Callable[[Any], Any]
#: A callable participant's keyword arguments, an object of argument name -> JSON value.
Arguments = Annotated[
    dict[str, Any], Expect(lambda v: isinstance(v, dict), "arguments must be an object")
]
#: A callable participant's ``factory``.
Flag = Annotated[bool, Expect(lambda v: isinstance(v, bool), "factory must be true or false")]


#: How to get the simulator, which repro does not install unless asked (its ``gymnasium`` extra).
SIMULATOR_INSTALL = install_hint("gymnasium")


def _gym() -> Any:
    """The gymnasium package, or a refusal saying how to install it: verify needs no simulator,
    so a verifying install goes without it."""
    try:
        # Lazy: the gymnasium extra may be absent (verify needs no simulator).
        import gymnasium
    except ImportError as exc:
        raise BadInput.at(
            "$.adapter.name",
            f"the gymnasium adapter needs the gymnasium package, which does not import "
            f"({type(exc).__name__}: {exc}): {SIMULATOR_INSTALL}",
            "not-found",
        ) from None
    return gymnasium


def _leaves(value: Any) -> list[Any]:
    return [x for item in value for x in _leaves(item)] if isinstance(value, list) else [value]


def _action_problem(action: Any, space: Any) -> str | None:
    """Why a JSON action is not what the space takes, before NumPy would coerce it silently
    (``true`` to 1, ``"0"`` to 0, ``0.7`` to 0 in an integer space)."""
    leaves = _leaves(action)
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in leaves):
        return "must be a number or an array of numbers"
    integral = space.dtype is not None and np.issubdtype(space.dtype, np.integer)
    if integral and not all(isinstance(x, int) for x in leaves):
        return f"must be whole numbers for the integer action space {space}"
    return None


def _in_space(action: Any, space: Any) -> bool:
    try:
        return bool(space.contains(np.asarray(action, dtype=space.dtype)))
    except (OverflowError, TypeError, ValueError):  # e.g. 1000 for an int8 space, ragged arrays
        return False


#: Framing of a trace item (tag, length and the array's dtype and shape) by tag, dtype and
#: shape: making it costs more than a step of a classic-control environment.
_PREFIXES: dict[tuple[bytes, Any, tuple[int, ...]], bytes] = {}
#: A reward item, framing and payload in one: the framing is the same for every reward.
_REWARD = struct.Struct(">9sd").pack
_REWARD_PREFIX = frame(b"R", 8)


def _prefix(tag: bytes, array: Any) -> bytes:
    """The framing of ``array`` as trace item ``tag``: tag and length, then the array's dtype and
    shape, which start its payload (its bytes follow)."""
    key = (tag, array.dtype, array.shape)
    prefix = _PREFIXES.get(key)
    if prefix is None:
        header = f"{array.dtype.str}{array.shape}".encode()
        prefix = _PREFIXES[key] = frame(tag, len(header) + array.nbytes) + header
    return prefix


#: Framed items gathered before they are hashed.
_BLOCK = 4096


class _PolicyError(Exception):
    """The policy raised (its exception is the ``__cause__``): a ``policy-error``, not a
    ``simulator-error``."""


@frozen
class RandomParams:
    """A ``random`` participant's params: none."""


@frozen
class ConstantParams:
    """A ``constant`` participant's params: the action at every step (checked against each
    environment's action space at freeze)."""

    action: Any


@frozen
class CallableParams:
    """A ``callable`` participant's params: its ``module:function`` target, the module's pinned
    sha256, the keyword arguments of every call and whether the target makes each run's policy."""

    target: Target
    sha256: Sha256 | None = None
    arguments: Arguments = field(factory=dict)
    factory: Flag = False


#: Each participant kind's params.
_PARAMS: dict[str, type[RandomParams | ConstantParams | CallableParams]] = {
    "random": RandomParams,
    "constant": ConstantParams,
    "callable": CallableParams,
}


def _check_callable(participant: str, params: CallableParams, where: str) -> Source:
    """Pin a ``callable`` participant's module and check that its target can be called as the
    protocol says: ``(observation, rng, **arguments)``, or ``(rng, **arguments)`` for a factory."""
    pin = {"target": params.target, "sha256": params.sha256}
    source = pinned_target_source(policy_role(participant), pin, f"{where}.params")
    arguments = params.arguments
    for key in arguments:
        if not key.isidentifier() or keyword.iskeyword(key):
            raise BadInput.at(
                json_path(f"{where}.params.arguments", key),
                f"argument name {key!r} is not a Python identifier",
                "not-allowed",
            )
    target = params.target
    if params.factory and not accepts(import_target(target, "$"), 1, arguments):
        raise BadInput.at(
            f"{where}.params.target",
            f"factory {target!r} must be callable as (rng"
            + "".join(f", {key}=..." for key in arguments)
            + ") and return the run's policy",
            "not-allowed",
        )
    if not params.factory and not accepts(import_target(target, "$"), 2, arguments):
        raise BadInput.at(
            f"{where}.params.target",
            f"target {target!r} must be a function taking (observation, rng"
            + "".join(f", {key}=..." for key in arguments)
            + ")",
            "not-allowed",
        )
    return source


def _check_options(protocol: Protocol, options: Mapping[str, str]) -> None:
    """The gymnasium adapter takes no option, in the protocol or with ``--option``."""
    for key in protocol.adapter.options:
        raise BadInput.at(
            json_path("$.adapter.options", key),
            f"the gymnasium adapter takes no option {key!r}",
            "unknown-field",
        )
    for key in options:
        raise BadInput(f"--option {key}: the gymnasium adapter takes no options")


def _check_factors(protocol: Protocol) -> list[str]:
    """The factors' names (``env_id`` and perhaps ``max_episode_steps``), each episode length
    checked."""
    names = [f.name for f in protocol.matrix]
    for i, name in enumerate(names):
        if name not in {"env_id", "max_episode_steps"}:
            raise BadInput.at(
                f"$.matrix[{i}].name", f"unknown factor {name!r} for gymnasium", "not-allowed"
            )
    if "env_id" not in names:
        raise BadInput.at(
            "$.matrix", "the gymnasium adapter needs an 'env_id' factor", "missing-field"
        )
    if "max_episode_steps" in names:
        i = names.index("max_episode_steps")
        for j, steps in enumerate(protocol.matrix[i].levels):
            if not isinstance(steps, int) or not 1 <= steps <= MAX_EPISODE_STEPS:
                raise BadInput.at(
                    f"$.matrix[{i}].levels[{j}]",
                    f"max_episode_steps must be a whole number from 1 to "
                    f"{MAX_EPISODE_STEPS}, not {steps!r}",
                    "not-allowed",
                )
    return names


def _environments(gym: Any, protocol: Protocol, names: list[str]) -> tuple[list[Source], Any]:
    """Each environment's module, pinned once, and its action space by ``env_id``."""
    sources: list[Source] = []
    pinned: set[str] = set()
    env_factor = names.index("env_id")
    spaces = {}
    for j, env_id in enumerate(protocol.matrix[env_factor].levels):
        where = f"$.matrix[{env_factor}].levels[{j}]"
        if not isinstance(env_id, str):
            raise BadInput.at(where, "env_id must be a string", "wrong-type")
        try:
            spec = gym.spec(env_id)
        except Exception as exc:
            raise BadInput.at(where, str(exc), "not-found") from None
        if spec.max_episode_steps is None and "max_episode_steps" not in names:
            raise BadInput.at(
                where, f"{env_id} has no time limit; add a max_episode_steps factor", "inconsistent"
            )
        entry = spec.entry_point
        module_name = entry.partition(":")[0] if isinstance(entry, str) else entry.__module__
        if module_name not in pinned:
            sources.append(module_file_source(f"environment {env_id}", module_name))
            pinned.add(module_name)
        env = gym.make(env_id)
        spaces[env_id] = env.action_space
        env.close()
    return sources, spaces


def _check_constant(params: ConstantParams, spaces: Mapping[str, Any], where: str) -> None:
    """A constant action is what every environment's action space takes, as JSON gives it."""
    for env_id, space in spaces.items():
        problem = _action_problem(params.action, space)
        if problem is not None:
            raise BadInput.at(f"{where}.params.action", f"action {problem}", "wrong-type")
        if not _in_space(params.action, space):
            raise BadInput.at(
                f"{where}.params.action",
                f"action {params.action!r} is not in the action space {space} of {env_id}",
                "not-allowed",
            )


def _check_participants(protocol: Protocol, spaces: Mapping[str, Any]) -> list[Source]:
    """Each participant's params, structured by its kind and checked; the pinned source of
    each ``callable`` participant's module."""
    sources = []
    for i, participant in enumerate(protocol.participants):
        where = f"$.participants[{i}]"
        model = _PARAMS.get(participant.kind)
        if model is None:
            raise BadInput.at(
                f"{where}.kind",
                f"unknown participant kind {participant.kind!r} for gymnasium "
                "(random, constant, callable)",
                "not-allowed",
            )
        params = structure_at(participant.params, model, f"{where}.params")
        if isinstance(params, ConstantParams):
            _check_constant(params, spaces, where)
        if isinstance(params, CallableParams):
            sources.append(_check_callable(participant.id, params, where))
    return sources


class GymnasiumAdapter:
    """Runs episodes of registered Gymnasium environments."""

    name = "gymnasium"
    simulator_modules = ("gymnasium",)
    #: Its environments differ by ``env_id``: an estimand across them mixes environments
    #: (:mod:`repro._protocol.estimand`).
    environment_factors = ("env_id",)
    simulator_install = SIMULATOR_INSTALL

    def freeze(self, protocol: Protocol, options: Mapping[str, str]) -> Frozen:
        """Check factors, participants and spaces; pin gymnasium, numpy and every source file."""
        gym = _gym()
        _check_options(protocol, options)
        names = _check_factors(protocol)
        sources: list[Source] = [
            package_source("simulator", "gymnasium"),
            package_source("rng", "numpy"),
        ]
        environments, spaces = _environments(gym, protocol, names)
        sources += environments
        sources += _check_participants(protocol, spaces)
        # The rule verify applies again to the bundle's protocol and ledger.
        refuse_pin_problems(gymnasium_problems(protocol, sources))
        facts = AdapterFacts(
            name=self.name,
            version=importlib.metadata.version("gymnasium"),
            observation_scope="full",
            observation_note=(
                "every observation the environment emits, every action and every reward is "
                "digested into each run's trace"
            ),
            measure_inputs="step-rewards",
        )
        return Frozen(facts=facts, sources=tuple(sources))

    def open(self, protocol: Protocol, condition: Condition, frozen: Frozen) -> _GymSession:
        """Make the condition's environment and policy."""
        participant = next(p for p in protocol.participants if p.id == condition.participant)
        return _GymSession(condition, participant, protocol.seeding.mode == "stream")


class _GymSession:
    def __init__(self, condition: Condition, participant: Participant, stream: bool) -> None:
        gym = _gym()
        kwargs = {}
        if "max_episode_steps" in condition.factors:
            kwargs["max_episode_steps"] = condition.factors["max_episode_steps"]
        self._env = gym.make(condition.factors["env_id"], **kwargs)
        self._participant = participant
        self._stream = stream
        self.contract: dict[str, Any] = {
            "env_id": condition.factors["env_id"],
            "action_space": str(self._env.action_space),
            "observation_space": str(self._env.observation_space),
            "max_episode_steps": self._env.spec.max_episode_steps,
            "participant": participant.id,
            "policy": participant.kind,
        }

    def _policy(self, seed: int) -> Policy:
        kind, params = self._participant.kind, self._participant.params
        space = self._env.action_space
        if kind == "random":
            space.seed(seed)
            return lambda _obs: space.sample()
        if kind == "constant":
            action = np.asarray(params["action"], dtype=space.dtype)
            if action.ndim == 0:
                action = action.item()
            return lambda _obs: action
        function = import_target(params["target"], "$")
        rng = np.random.default_rng(seed)
        # A copy per run: a policy that changes its arguments changes no other run's.
        arguments = copy.deepcopy(dict(params.get("arguments", {})))
        if params.get("factory", False):
            policy = function(rng, **arguments)
            if not callable(policy):
                raise TypeError(f"factory {params['target']!r} returned no callable policy")
            return cast(Policy, policy)
        if arguments:
            return lambda obs: function(obs, rng, **arguments)
        return lambda obs: function(obs, rng)

    def run(self, entry: PlanEntry) -> Evidence:
        # In stream mode each episode's seed is drawn from the stream set once at study start.
        seed = random.getrandbits(63) if self._stream else entry.seed
        assert seed is not None
        try:
            policy = self._policy(seed)
        except Exception as exc:
            raise RunFailed(f"policy-error:{type(exc).__name__}") from exc
        trace = TraceDigest()
        rewards: list[float] = []
        # The loop is written out for speed: a classic-control step takes microseconds. An
        # item's framing is made again only when its dtype or shape is not the previous item's
        # of its kind (the same dtype object and shape give the same framing).
        parts: list[bytes] = []
        push, step, ndarray, asarray = parts.append, self._env.step, np.ndarray, np.asarray
        try:
            obs, _ = self._env.reset(seed=seed)
            o = obs if type(obs) is ndarray else asarray(obs)
            o_dtype, o_shape, o_prefix = o.dtype, o.shape, _prefix(b"O", o)
            push(o_prefix)
            push(o.tobytes())
            a_dtype: Any = None
            a_shape: tuple[int, ...] | None = None
            a_prefix = b""
            while True:
                # Who failed is told apart: the policy's exceptions are its own cause family.
                try:
                    action = policy(obs)
                except Exception as exc:
                    raise _PolicyError(exc) from exc
                obs, reward, terminated, truncated, _ = step(action)
                r = float(reward)
                rewards.append(r)
                a = action if type(action) is ndarray else asarray(action)
                if a.dtype is not a_dtype or a.shape != a_shape:
                    a_dtype, a_shape, a_prefix = a.dtype, a.shape, _prefix(b"A", a)
                o = obs if type(obs) is ndarray else asarray(obs)
                if o.dtype is not o_dtype or o.shape != o_shape:
                    o_dtype, o_shape, o_prefix = o.dtype, o.shape, _prefix(b"O", o)
                push(a_prefix)
                push(a.tobytes())
                push(o_prefix)
                push(o.tobytes())
                push(_REWARD(_REWARD_PREFIX, r))
                if len(parts) >= _BLOCK:
                    trace.feed(parts)
                if terminated or truncated:
                    break
            trace.feed(parts)
        except _PolicyError as failed:
            error = failed.__cause__
            raise RunFailed(f"policy-error:{type(error).__name__}") from error
        except Exception as exc:
            raise RunFailed(f"simulator-error:{type(exc).__name__}") from exc
        return Evidence(
            step_rewards=tuple(rewards),
            reported_measure=None,
            steps=len(rewards),
            trace_sha256=trace.hexdigest(),
        )

    def close(self) -> None:
        self._env.close()
