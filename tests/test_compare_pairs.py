"""repro compare on two bundles of one family: the pinned sources that differ between them are
named by role with both pins, and when the sealed plans are the same each condition's paired
difference (candidate less baseline) is given with its interval; when they are not, why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import run_study
from repro._cli.app import app
from repro._compare.bundles import compare
from repro.verify import open_verified

# Slow: studies of paired protocols, end to end.
pytestmark = pytest.mark.slow

runner = CliRunner()

#: A policy that acts at random with probability eps, from the run's generator.
POLICY = (
    "def act(observation, rng, epsilon={eps}):\n"
    "    u, action = rng.random(), int(rng.integers(2))\n"
    "    if u < epsilon:\n"
    "        return action\n"
    "    return int(observation[2] + 0.5 * observation[3] > 0)\n"
)


def _study(tmp_path: Path, name: str, module: str, eps: float, seed: int) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / f"{module}.py").write_text(POLICY.format(eps=eps), "utf-8")
    protocol: dict[str, Any] = {
        "schema": "repro.protocol/1",
        "id": "compare-pairs",
        "title": "One policy, two releases",
        "adapter": {"name": "gymnasium", "options": {}},
        "matrix": [{"name": "env_id", "levels": ["CartPole-v1"]}],
        "participants": [
            {"id": "policy", "kind": "callable", "params": {"target": f"{module}:act"}}
        ],
        "runs_per_condition": 30,
        "seeding": {"mode": "per-run", "seed": seed},
        "measure": {"name": "episode_return", "description": "sum of rewards"},
        "estimand": "mean-of-condition-means",
        "interval": {"method": "t", "level": 0.95},
    }
    path = folder / "protocol.json"
    path.write_text(json.dumps(protocol), "utf-8")
    return run_study(path, folder / "bundle")


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A baseline (the policy at 30% random actions), a candidate release of it (at 10%) on
    the same seeds, and the baseline again on other seeds."""
    tmp = tmp_path_factory.mktemp("pairs")
    return {
        "base": _study(tmp, "base", "cmp_release_a", 0.3, 11),
        "cand": _study(tmp, "cand", "cmp_release_b", 0.1, 11),
        "reseeded": _study(tmp, "reseeded", "cmp_release_c", 0.3, 12),
    }


def test_a_changed_policy_is_named_and_the_runs_pair(bundles: dict[str, Path]) -> None:
    """The candidate's policy file is named as the source that differs, by role, with both
    digests; the plans are the same, so the condition's paired difference is given over the
    slots valid in both, and it equals the mean of the slot-by-slot differences."""
    result = compare(bundles["base"], bundles["cand"])
    base, cand = open_verified(bundles["base"]), open_verified(bundles["cand"])
    pins = {
        b.role: (b, c) for b in base.ledger.sources for c in cand.ledger.sources if b.role == c.role
    }
    old, new = pins["policy policy"]
    assert result.sources == (
        f"policy policy: file {old.name} sha256 {old.sha256} in the baseline, "
        f"file {new.name} sha256 {new.sha256} in the candidate",
    )
    assert result.unpaired_because is None
    (difference,) = result.differences
    a = {r.slot: r.measure for r in base.all_records() if r.status == "valid"}
    b = {r.slot: r.measure for r in cand.all_records() if r.status == "valid"}
    both = sorted(set(a) & set(b))
    assert difference.pairs == len(both) == 30
    assert difference.difference == pytest.approx(
        sum(b[s] - a[s] for s in both) / len(both), rel=1e-12
    )
    assert difference.low is not None and difference.high is not None
    assert difference.low < difference.difference < difference.high


def test_other_seeds_do_not_pair(bundles: dict[str, Path]) -> None:
    """Bundles whose sealed plans differ (other seeds) get no paired difference, and the
    comparison says why."""
    result = compare(bundles["base"], bundles["reseeded"])
    assert result.differences == ()
    assert result.unpaired_because is not None and "sealed plans differ" in result.unpaired_because


def test_the_command_prints_and_emits_them(bundles: dict[str, Path]) -> None:
    """repro compare prints a 'source differs' line and a 'paired difference' line, and its
    --json holds both."""
    shown = runner.invoke(app, ["compare", str(bundles["base"]), str(bundles["cand"])])
    assert shown.exit_code == 0, shown.output
    assert any(
        line.startswith("source differs: policy policy:") for line in shown.stdout.splitlines()
    )
    assert any(line.startswith("paired difference c00:") for line in shown.stdout.splitlines())
    data = json.loads(
        runner.invoke(app, ["compare", str(bundles["base"]), str(bundles["cand"]), "--json"]).stdout
    )
    assert data["paired_differences"][0]["pairs"] == 30
    assert data["sources"][0].startswith("policy policy:")
    assert data["unpaired_because"] is None
