"""docs/tutorial.md works as written: every shell block, run in order in a fresh directory,
succeeds, and the user ends with a bundle that verifies and its HTML report.

The blocks say ``uv run ...``, as a user types them in a clone; here ``uv`` is a stand-in on PATH
that runs the same command in this test's environment (``uv run repro`` is ``python -m repro``),
so the test needs no network and no second environment."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT
from repro.verify import verify

# Slow: runs the tutorial's commands.
pytestmark = pytest.mark.slow

TUTORIAL = ROOT / "docs" / "tutorial.md"

_UV = """#!/bin/sh
[ "$1" = run ] || {{ echo "only 'uv run' is stood in for" >&2; exit 97; }}
shift
case "$1" in
  repro) shift; exec {python} -m repro "$@" ;;
  python) shift; exec {python} "$@" ;;
  *) exec "$@" ;;
esac
"""


def _blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", TUTORIAL.read_text("utf-8"), re.S)


def test_the_tutorial_has_its_steps() -> None:
    """The tutorial writes, checks, runs, verifies, shows (as HTML too) and replays a study."""
    text = "".join(_blocks())
    for step in ("protocol new", "protocol check", "study", "verify", "--html", "replay"):
        assert step in text, step


def test_every_block_of_the_tutorial_runs_in_order(tmp_path: Path) -> None:
    """Each ```sh block of docs/tutorial.md exits 0 when run in order in an empty directory,
    and the study it makes verifies and has its self-contained HTML report."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    uv = bin_dir / "uv"
    uv.write_text(_UV.format(python=sys.executable), "utf-8")
    uv.chmod(uv.stat().st_mode | stat.S_IEXEC)
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    for number, block in enumerate(_blocks(), start=1):
        done = subprocess.run(
            ["bash", "-e", "-c", block],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"block {number}:\n{block}\n{done.stdout}\n{done.stderr}"
    assert verify(work / "my-bundle") == []
    assert "<svg" in (work / "report.html").read_text("utf-8")
    _check_the_edit_step(work / "my-study.json")
    # What the tutorial says of the result: some episodes reach the limit of 500, some fall short.
    returns = [
        json.loads(line)["measure"] for line in (work / "my-bundle/data/runs/c00.jsonl").open()
    ]
    assert 500 in returns and min(returns) < 500
    # Step 10: the comparison verifies, and its contrast says what the tutorial says.
    assert verify(work / "my-comparison") == []
    compared = json.loads((work / "my-comparison/data/contrasts.json").read_bytes())
    contrast = compared["contrasts"][0]
    assert (contrast["verdict"], contrast["pairs"]) == ("holds", 50)
    assert f"{contrast['estimate']:.2f}" in TUTORIAL.read_text("utf-8")


def _comments(value: Any, path: str = "$") -> dict[str, str]:
    """Every "$comment" of a JSON value, by the JSON path of the object holding it."""
    found: dict[str, str] = {}
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "$comment":
                found[path] = item
            else:
                found |= _comments(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found |= _comments(item, f"{path}[{i}]")
    return found


def _without_comments(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_comments(v) for k, v in value.items() if k != "$comment"}
    if isinstance(value, list):
        return [_without_comments(v) for v in value]
    return value


def _check_the_edit_step(edited: Path) -> None:
    """The edit step does what the tutorial says: it keeps every "$comment" of the template but
    the participants' (its own participant has one) and the contrast's it removes, and the file
    then holds, without its comments, exactly the JSON the tutorial shows."""
    template = json.loads((ROOT / "src" / "repro" / "templates" / "gymnasium.json").read_text())
    study = json.loads(edited.read_text("utf-8"))
    kept = {
        k: v
        for k, v in _comments(template).items()
        if not k.startswith(("$.participants", "$.contrasts"))
    }
    assert kept and _comments(study).items() >= kept.items()
    assert set(_comments(study)) - set(kept) == {"$.participants[0]"}
    shown = re.findall(r"```json\n(.*?)```", TUTORIAL.read_text("utf-8"), re.S)
    assert len(shown) == 1
    assert json.loads(shown[0]) == _without_comments(study)
