"""A researcher's own code in a protocol: module targets found next to the protocol file (no
PYTHONPATH), the callable contract (arguments, the factory form), and replay naming the source
that changed since the study, by role, with both digests."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, run_study
from repro._derive.ledger import source_differences
from repro._execute.replay import replay
from repro.adapters._base import import_target, targets_in
from repro.errors import PROBLEM_CODES, BadInput
from repro.models import Source
from repro.verify import open_verified

POLICIES = '''
def energy(observation, rng, push=2):
    """Push the way the car already moves: pumps energy into the swing."""
    return push if observation[1] >= 0 else 0


def act(observation, rng, action=0):
    return action


class Counting:
    """A factory: one instance per run, holding state within the run only."""

    def __init__(self, rng, every=3):
        self.rng = rng
        self.every = every
        self.steps = 0

    def __call__(self, observation):
        self.steps += 1
        return 0 if self.steps % self.every else 1


def not_a_policy(rng):
    return 42
'''


def _protocol(participants: list[dict[str, Any]], env: str = "CartPole-v1") -> dict[str, Any]:
    return {
        "schema": "repro.protocol/1",
        "id": "own-code",
        "title": "Own policies next to the protocol",
        "description": "test",
        "adapter": {"name": "gymnasium", "options": {}},
        "matrix": [{"name": "env_id", "levels": [env]}],
        "participants": participants,
        "runs_per_condition": 3,
        "seeding": {"mode": "per-run", "seed": 7},
        "measure": {"name": "episode_return", "description": "sum of rewards"},
        "estimand": "mean-of-condition-means",
        "interval": {"method": "normal", "level": 0.95},
    }


def _study_dir(tmp_path: Path, module: str, participants: list[dict[str, Any]], **kw: Any) -> Path:
    """A study directory as a researcher makes one: the protocol and its module side by side."""
    folder = tmp_path / "my-study"
    folder.mkdir()
    (folder / f"{module}.py").write_text(POLICIES, "utf-8")
    path = folder / "protocol.json"
    path.write_text(json.dumps(_protocol(participants, **kw)), "utf-8")
    return path


def _clean_env() -> dict[str, str]:
    """The environment of a user who never set PYTHONPATH (as under ``uv run``)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # repro itself must still import in this test's environment: the src/ tree, not the tests/.
    env["PYTHONPATH"] = str(ROOT / "src")
    return env


@pytest.mark.slow
def test_a_module_next_to_the_protocol_imports_without_pythonpath(tmp_path: Path) -> None:
    """`repro study` run from another directory, with nothing of the study's on the import path,
    finds `heuristics:energy` in the protocol file's directory, in the parent and in the worker
    processes; the bundle verifies and pins heuristics.py by sha256."""
    protocol = _study_dir(
        tmp_path,
        "fw_heuristics",
        [{"id": "energy", "kind": "callable", "params": {"target": "fw_heuristics:energy"}}],
        env="MountainCar-v0",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    bundle = tmp_path / "bundle"
    done = subprocess.run(
        [sys.executable, "-m", "repro", "study", str(protocol), "--out", str(bundle)],
        cwd=elsewhere,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    verified = open_verified(bundle)
    assert all(r.status == "valid" for r in verified.records("c00")), done.stderr
    policy = next(s for s in verified.ledger.sources if s.role == "policy energy")
    assert policy.name == "fw_heuristics.py"
    # The energy policy climbs out of the valley: better than the -200 of any constant action.
    assert verified.aggregates.conditions[0].mean > -200


@pytest.mark.slow
def test_replay_looks_targets_up_in_sources(tmp_path: Path) -> None:
    """replay finds the study's own module in --sources (the protocol's directory): the slot
    comes out byte-identical. Without --sources it imports nothing the bundle names, even run
    from the directory that holds the module: it refuses (exit 2), naming --sources and the
    target's JSON path."""
    protocol = _study_dir(
        tmp_path,
        "rp_heuristics",
        [{"id": "energy", "kind": "callable", "params": {"target": "rp_heuristics:energy"}}],
        env="MountainCar-v0",
    )
    bundle = tmp_path / "bundle"
    env = _clean_env()
    base = [sys.executable, "-m", "repro"]
    kw: dict[str, Any] = {"env": env, "capture_output": True, "text": True, "timeout": 600}
    made = subprocess.run([*base, "study", str(protocol), "--out", str(bundle)], **kw)
    assert made.returncode == 0, made.stderr
    done = subprocess.run(
        [*base, "replay", str(bundle), "c00-r0001", "--sources", str(protocol.parent)], **kw
    )
    assert done.returncode == 0, done.stderr
    assert "byte-identical" in done.stdout
    for cwd in (tmp_path, protocol.parent):
        done = subprocess.run([*base, "replay", str(bundle), "c00-r0001"], cwd=cwd, **kw)
        assert done.returncode == 2
        message = " ".join(done.stderr.split())
        assert "target 'rp_heuristics:energy'" in message
        assert "--sources DIR" in message
        assert message.endswith("@ $.participants[0].params.target")


@pytest.mark.slow
def test_arguments_reach_the_callable(tmp_path: Path) -> None:
    """params.arguments are the callable's keyword arguments: the energy policy with its default
    push (2) climbs out of MountainCar's valley, with ``push`` 1 (no push at all) it never does
    and every episode ends at the time limit with -200."""
    protocol = _study_dir(
        tmp_path,
        "arg_policies",
        [
            {"id": "push-2", "kind": "callable", "params": {"target": "arg_policies:energy"}},
            {
                "id": "push-1",
                "kind": "callable",
                "params": {"target": "arg_policies:energy", "arguments": {"push": 1}},
            },
        ],
        env="MountainCar-v0",
    )
    bundle = run_study(protocol, tmp_path / "bundle")
    means = [c.mean for c in open_verified(bundle).aggregates.conditions]
    assert means[0] is not None and means[0] > -200
    assert means[1] == -200


@pytest.mark.slow
def test_a_factory_makes_a_fresh_policy_for_every_run(tmp_path: Path) -> None:
    """A factory (a class) is called once per run with the run's generator and the arguments:
    its state lasts one run, so every run of a seed is the same whatever ran before it in the
    worker, and a replayed slot is byte-identical."""
    protocol = _study_dir(
        tmp_path,
        "factory_policies",
        [
            {
                "id": "counting",
                "kind": "callable",
                "params": {
                    "target": "factory_policies:Counting",
                    "factory": True,
                    "arguments": {"every": 4},
                },
            }
        ],
    )
    data = json.loads(protocol.read_text("utf-8"))
    data["seeding"] = {"mode": "per-run", "seed": 11}
    protocol.write_text(json.dumps(data), "utf-8")
    bundle = run_study(protocol, tmp_path / "bundle")
    verified = open_verified(bundle)
    records = list(verified.records("c00"))
    assert [r.status for r in records] == ["valid"] * 3
    # In the study c00-r0002 ran third in its worker; replayed, it runs first in a fresh one.
    # Its actions depend on the policy's step count: a count carried over from the runs
    # before it would change them.
    result = replay(bundle, "c00-r0002", {}, sources=protocol.parent)
    assert result.identical, result.differences


@pytest.mark.slow
def test_a_factory_that_returns_no_policy_fails_the_run(tmp_path: Path) -> None:
    """A factory whose result cannot be called is the policy's failure, recorded as such."""
    protocol = _study_dir(
        tmp_path,
        "bad_factory",
        [
            {
                "id": "bad",
                "kind": "callable",
                "params": {"target": "bad_factory:not_a_policy", "factory": True},
            }
        ],
    )
    bundle = run_study(protocol, tmp_path / "bundle")
    causes = {loss.cause for loss in open_verified(bundle).ledger.losses}
    assert causes == {"policy-error:TypeError"}


@pytest.mark.parametrize(
    ("params", "expected", "path"),
    [
        ({"arguments": [1]}, "arguments must be an object", "params.arguments"),
        ({"arguments": {"not valid": 1}}, "is not a Python identifier", "params.arguments"),
        ({"arguments": {"lambda": 1}}, "is not a Python identifier", "params.arguments"),
        (
            {"arguments": {"speed": 1}},
            "must be a function taking (observation, rng, speed=...)",
            "params.target",
        ),
        ({"factory": "yes"}, "factory must be true or false", "params.factory"),
        ({"factory": True}, "must be callable as (rng", "params.target"),
        ({"epsilon": 0.1}, "unknown key(s) epsilon", "params"),
    ],
)
def test_callable_params_are_checked_at_freeze(
    tmp_path: Path, params: dict[str, Any], expected: str, path: str
) -> None:
    """Malformed arguments, an argument the function does not take, a factory flag that is not
    a boolean, a factory that cannot take (rng), and an unknown key are refused at freeze with
    their JSON path, before anything runs."""
    from repro._execute.studies import prepare

    module = "checked_" + re.sub(r"\W", "_", tmp_path.name)  # one module name per case
    protocol = _study_dir(
        tmp_path,
        module,
        [{"id": "p", "kind": "callable", "params": {"target": f"{module}:energy", **params}}],
    )
    if params.get("factory") is True:
        data = json.loads(protocol.read_text("utf-8"))
        data["participants"][0]["params"]["target"] = f"{module}:act"
        data["participants"][0]["params"]["arguments"] = {"action": 1, "extra": 2}
        protocol.write_text(json.dumps(data), "utf-8")
    with pytest.raises(BadInput) as caught:
        prepare(protocol, {})
    assert expected in str(caught.value)
    [problem] = caught.value.problems
    assert expected in problem.message
    assert problem.path.startswith(f"$.participants[0].{path}")
    assert problem.code in PROBLEM_CODES and problem.code != "bad-input"


def test_a_module_that_shadows_one_already_imported_is_refused(tmp_path: Path) -> None:
    """A `json.py` next to the protocol is not silently swapped for the standard library's (or
    the other way round): the clash is refused, naming both places."""
    (tmp_path / "json.py").write_text("def act(observation, rng):\n    return 0\n", "utf-8")
    with targets_in(tmp_path), pytest.raises(BadInput) as caught:
        import_target("json:act", "$.x")
    assert "already imported from" in str(caught.value)
    assert str(caught.value).endswith("@ $.x")


def test_a_module_linked_from_outside_the_directory_is_refused(tmp_path: Path) -> None:
    """A module file in the protocol's directory that is a link to a file outside it is
    refused: what a protocol names lies in its own directory tree."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "linked_policy.py").write_text("def act(o, rng):\n    return 0\n", "utf-8")
    study = tmp_path / "study"
    study.mkdir()
    (study / "linked_policy.py").symlink_to(outside / "linked_policy.py")
    with targets_in(study), pytest.raises(BadInput) as caught:
        import_target("linked_policy:act", "$.x")
    assert "lies outside" in str(caught.value)
    assert "linked_policy" not in sys.modules


def test_targets_outside_the_directory_are_found_on_the_import_path(tmp_path: Path) -> None:
    """A target not in the protocol's directory is imported from the import path as before (an
    installed package of policies)."""
    with targets_in(tmp_path):
        target = import_target("repro_test_policies:always_left", "$.x")
    assert callable(target)


def test_source_differences_name_role_and_both_pins() -> None:
    """Each differing source is named by its role, kind, name and both pins; an unchanged one
    is not named; one pinned on one side only says so."""
    a = "a" * 64
    b = "b" * 64
    bundle = [
        Source(kind="package", role="simulator", name="gymnasium", version="1.4.0"),
        Source(kind="file", role="policy energy", name="heuristics.py", sha256=a, size=10),
        Source(kind="file", role="environment CartPole-v1", name="cartpole.py", sha256=a, size=1),
    ]
    here = [
        Source(kind="package", role="simulator", name="gymnasium", version="1.5.0"),
        Source(kind="file", role="policy energy", name="heuristics.py", sha256=b, size=11),
        Source(kind="file", role="environment CartPole-v1", name="cartpole.py", sha256=a, size=1),
        Source(kind="file", role="harness", name="run.sh", sha256=b, size=3),
    ]
    assert source_differences(bundle, here) == [
        "simulator: package gymnasium version 1.4.0 in the bundle, "
        "package gymnasium version 1.5.0 here",
        f"policy energy: file heuristics.py sha256 {a} in the bundle, "
        f"file heuristics.py sha256 {b} here",
        f"harness: not pinned in the bundle, file run.sh sha256 {b} here",
    ]
