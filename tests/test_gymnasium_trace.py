"""The gymnasium adapter's trace digest: whatever the environment emits and the policy returns
(arrays whose dtype and shape change from step to step, numpy scalars, Python numbers and
lists), a run's ``trace_sha256`` is the sha256 of every observation, action and reward framed
one by one, in order, and its rewards are the step rewards."""

from __future__ import annotations

import hashlib
import struct
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repro.adapters._gymnasium import _GymSession
from repro.models import Condition, Participant, PlanEntry

_ENV_ID = "ReproTraceTest/Shifting-v0"
_ENTRY = PlanEntry(slot="c00-r0000", condition="c00", replicate=0, order=0, seed=1)

#: What an item may be: each a maker of a fresh value from a step number.
_VALUES: dict[str, Any] = {
    "float32[2]": lambda i: np.array([i, -i], dtype=np.float32),
    "float64[2]": lambda i: np.array([i, 0.5], dtype=np.float64),
    "int32[3]": lambda i: np.arange(3, dtype=np.int32) + i,
    "float32[2,1]": lambda i: np.array([[i], [1]], dtype=np.float32),
    "big-endian>f8[2]": lambda i: np.array([i, 2], dtype=">f8"),
    "int64 scalar": lambda i: np.int64(i),
    "float32 scalar": lambda i: np.float32(i),
    "int": lambda i: int(i),
    "float": lambda i: float(i) / 3,
    "list": lambda i: [float(i), 1.0],
    "0-d uint8": lambda i: np.array(i % 256, dtype=np.uint8),
}
_KINDS = sorted(_VALUES)


class _Shifting(gym.Env[Any, Any]):
    """Emits the observations of the plan its ``plan`` attribute holds, step by step."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,))
    action_space = gym.spaces.Discrete(2)

    def __init__(self) -> None:
        self.plan = ["float32[2]"]

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self._step = 0
        return _VALUES[self.plan[0]](0), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self._step += 1
        done = self._step >= len(self.plan)
        return (
            _VALUES[self.plan[self._step % len(self.plan)]](self._step),
            self._step / 7,
            done,
            False,
            {},
        )


gym.register(_ENV_ID, entry_point=_Shifting, max_episode_steps=1000, disable_env_checker=True)


def _framed(tag: bytes, value: Any) -> bytes:
    array = np.asarray(value)
    payload = f"{array.dtype.str}{array.shape}".encode() + array.tobytes()
    return tag + struct.pack(">Q", len(payload)) + payload


def _expected(observations: list[Any], actions: list[Any], rewards: list[float]) -> str:
    framed = [_framed(b"O", observations[0])]
    for action, obs, reward in zip(actions, observations[1:], rewards, strict=True):
        framed += [_framed(b"A", action), _framed(b"O", obs)]
        framed.append(b"R" + struct.pack(">Q", 8) + struct.pack(">d", reward))
    return hashlib.sha256(b"repro.trace/1" + b"".join(framed)).hexdigest()


def _session(observations: list[str], actions: list[str]) -> tuple[_GymSession, list[Any]]:
    condition = Condition(id="c00", factors={"env_id": _ENV_ID}, participant="p")
    session = _GymSession(condition, Participant(id="p", kind="random"), stream=False)
    session._env.unwrapped.plan = observations  # type: ignore[attr-defined]
    taken: list[Any] = []

    def policy(_obs: Any) -> Any:
        action = _VALUES[actions[len(taken) % len(actions)]](len(taken))
        taken.append(action)
        return action

    session._policy = lambda _seed: policy  # type: ignore[method-assign]
    return session, taken


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(_KINDS), min_size=1, max_size=12),
    st.lists(st.sampled_from(_KINDS), min_size=1, max_size=12),
    st.integers(min_value=1, max_value=3),
)
def test_trace_frames_every_item_by_its_own_dtype_and_shape(
    observations: list[str], actions: list[str], repeat: int
) -> None:
    """Observations and actions whose dtype and shape change at any step (or never) are each
    framed by their own dtype and shape: the digest is the one of every item framed afresh."""
    plan = observations * repeat
    session, taken = _session(plan, actions)
    evidence = session.run(_ENTRY)
    emitted = [_VALUES[plan[i % len(plan)]](i) for i in range(len(taken) + 1)]
    rewards = [i / 7 for i in range(1, len(taken) + 1)]
    assert evidence.step_rewards == tuple(rewards)
    assert evidence.steps == len(taken) == len(plan)
    assert evidence.trace_sha256 == _expected(emitted, taken, rewards)


def test_a_long_episode_digests_past_the_block_size() -> None:
    """An episode of more items than are gathered before hashing digests them all, in order."""
    plan = ["float32[2]", "int64 scalar", "float64[2]"] * 333
    session, taken = _session(plan, ["int64 scalar", "list"])
    evidence = session.run(_ENTRY)
    emitted = [_VALUES[plan[i % len(plan)]](i) for i in range(len(taken) + 1)]
    rewards = [i / 7 for i in range(1, len(taken) + 1)]
    assert len(taken) == 999
    assert evidence.trace_sha256 == _expected(emitted, taken, rewards)


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Acrobot-v1", "Pendulum-v1"])
def test_a_registered_environment_digests_its_episode(env_id: str) -> None:
    """On shipped environments (discrete and continuous actions) the random policy's episode
    digests to every observation, action and reward framed one by one."""
    condition = Condition(id="c00", factors={"env_id": env_id}, participant="p")
    session = _GymSession(condition, Participant(id="p", kind="random"), stream=False)
    evidence = session.run(_ENTRY)
    env = gym.make(env_id)
    env.action_space.seed(1)
    observations, actions, rewards = [env.reset(seed=1)[0]], [], []
    while True:
        actions.append(env.action_space.sample())
        obs, reward, terminated, truncated, _ = env.step(actions[-1])
        observations.append(obs)
        rewards.append(float(reward))
        if terminated or truncated:
            break
    assert evidence.step_rewards == tuple(rewards)
    assert evidence.trace_sha256 == _expected(observations, actions, rewards)
