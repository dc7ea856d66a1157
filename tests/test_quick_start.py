"""The first number a new user sees means something: the quick start compares one environment's
two policies by a pre-registered contrast, which is its headline; the gymnasium template does
the same; and an estimand averaged across environments is warned of before anything runs."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, SMALL, repro_cli
from repro._protocol.estimand import mixed_environments
from repro._protocol.load import load_protocol, parse_protocol
from repro.models import Protocol

# Slow: runs the quick start in fresh interpreters.
pytestmark = pytest.mark.slow

QUICK_START = ROOT / "protocols" / "gymnasium-classic-control.json"
README = ROOT / "README.md"


def _parse(data: dict[str, Any]) -> Protocol:
    return parse_protocol(json.dumps(data).encode())


class TestMixedEnvironments:
    """The pure rule: an estimand over conditions of different environments is named."""

    def test_several_environments_are_named_with_their_json_path(self) -> None:
        """Three env_id levels: the warning names the estimand's and the factor's JSON paths,
        the factor and its levels; a sum says it sums."""
        data = copy.deepcopy(SMALL)
        data["matrix"] = [
            {"name": "env_id", "levels": ["CartPole-v1", "Acrobot-v1", "MountainCar-v0"]}
        ]
        warning = mixed_environments(_parse(data), ("env_id",))
        assert warning is not None
        assert warning.startswith("$.estimand: ")
        assert "@ $.matrix[0]" in warning and "CartPole-v1, Acrobot-v1, MountainCar-v0" in warning
        data["estimand"] = "sum-of-condition-means"
        assert " sums " in (mixed_environments(_parse(data), ("env_id",)) or "")

    def test_one_environment_or_another_factor_is_no_mix(self) -> None:
        """One env_id level, or several levels of a factor that is no environment (the
        adapter does not name it), or an adapter that names none: no warning."""
        data = copy.deepcopy(SMALL)
        data["matrix"] = [
            {"name": "env_id", "levels": ["CartPole-v1"]},
            {"name": "max_episode_steps", "levels": [50, 100]},
        ]
        assert mixed_environments(_parse(data), ("env_id",)) is None
        data["matrix"] = [{"name": "env_id", "levels": ["CartPole-v1", "Acrobot-v1"]}]
        assert mixed_environments(_parse(data), ()) is None

    def test_many_levels_are_counted_not_listed(self) -> None:
        """Past three levels the warning says how many more there are."""
        data = copy.deepcopy(SMALL)
        data["matrix"] = [{"name": "env_id", "levels": [f"E{i}-v0" for i in range(7)]}]
        assert "and 4 more" in (mixed_environments(_parse(data), ("env_id",)) or "")


class TestTheCommandLineWarns:
    """``protocol check`` and ``study`` say it before anything runs; the study still runs."""

    def test_check_warns_on_stderr_and_in_json(self, tmp_path: Path) -> None:
        """A gymnasium protocol over three environments: ``protocol check`` exits 0 with a
        ``warning: $.estimand`` line on stderr, and ``--json`` lists the warning."""
        data = json.loads(QUICK_START.read_text("utf-8"))
        data["matrix"] = [
            {"name": "env_id", "levels": ["CartPole-v1", "Acrobot-v1", "MountainCar-v0"]}
        ]
        data.pop("contrasts")
        path = tmp_path / "mixed.json"
        path.write_text(json.dumps(data), "utf-8")
        done = repro_cli("protocol", "check", str(path), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "warning: $.estimand:" in " ".join(done.stderr.split())
        listed = repro_cli("protocol", "check", str(path), "--json", cwd=tmp_path)
        warnings = json.loads(listed.stdout)["warnings"]
        assert len(warnings) == 1 and warnings[0].startswith("$.estimand:")

    @pytest.mark.parametrize("adapter", ["gymnasium"])
    def test_the_template_and_the_quick_start_draw_no_warning(
        self, tmp_path: Path, adapter: str
    ) -> None:
        """The quick start and the protocol ``repro protocol new`` writes each run one
        environment: ``protocol check`` warns of nothing, and each declares a primary
        contrast."""
        written = tmp_path / "new.json"
        made = repro_cli(
            "protocol", "new", "--adapter", adapter, "--out", str(written), cwd=tmp_path
        )
        assert made.returncode == 0, made.stderr
        for path in (QUICK_START, written):
            done = repro_cli("protocol", "check", str(path), "--json", cwd=tmp_path)
            assert done.returncode == 0, done.stderr
            assert json.loads(done.stdout)["warnings"] == [], path
            contrasts = load_protocol(path).contrasts
            assert contrasts is not None and any(c.primary for c in contrasts.family), path


class TestTheReadmeQuickStart:
    """The README's first command, run as written, ends with a headline that is one
    meaningful figure: the primary contrast, its interval and its verdict."""

    def test_the_first_command_runs_verifies_and_names_the_contrast(self, tmp_path: Path) -> None:
        """The first line of the README's first ``sh`` block, with ``uv run repro`` as this
        interpreter's ``python -m repro``, run from the root of the checkout: exit 0, the
        study's end names ``random-beats-push-left = +X [L, H], holds``, no warning, and the
        verify that follows passes."""
        readme = README.read_text("utf-8")
        block = re.search(r"```sh\n(.*?)```", readme, re.S)
        assert block is not None
        first = block.group(1).splitlines()[0]
        assert first.startswith('d="$(mktemp -d)/bundle" && uv run repro study ')
        python = f"{sys.executable} -m repro"
        command = first.replace("uv run repro", python).replace("$(mktemp -d)", str(tmp_path))
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        done = subprocess.run(
            ["sh", "-c", command],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr
        said = " ".join(done.stderr.split())
        assert "warning" not in said
        found = re.search(
            r"random-beats-push-left = \+(\d+\.\d+) \[(\d+\.\d+), (\d+\.\d+)\], holds", said
        )
        assert found is not None, said
        estimate, low, high = (float(x) for x in found.groups())
        assert 0 < low < estimate < high
        assert "verifies" in done.stdout
