"""What several benchmarks make the same way: a synthetic bundle written by a process of its
own, and the source tree of repro at a commit."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tomllib
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def synthetic(root: Path, conditions: int, runs: int, steps: int, tree: Path | None = None) -> Path:
    """Write the synthetic bundle of tests/synthetic.py at ``root`` in a process of its own.
    Generating it in the benchmark's process would leave that process large, and a child's
    peak resident size counts the pages it shares with its parent between fork and exec.

    With ``tree`` (a directory :func:`commit_tree` extracted with ``tests``), the bundle is
    that version's: its tests/synthetic.py with its ``src`` first on the import path."""
    code = (
        "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
        "from synthetic import synthetic_bundle; "
        "synthetic_bundle(Path(sys.argv[2]), *map(int, sys.argv[3:]))"
    )
    tests = ROOT / "tests" if tree is None else tree / "tests"
    env = None if tree is None else {**os.environ, "PYTHONPATH": str(tree / "src")}
    arguments = [str(tests), str(root), str(conditions), str(runs), str(steps)]
    subprocess.run([sys.executable, "-c", code, *arguments], check=True, env=env)
    return root


def commit_tree(ref: str, into: Path, *also: str) -> Path:
    """The ``src`` directory of repro at commit ``ref``, extracted into ``into`` with the
    ``schemas`` beside it (where a source tree's repro reads them) and the directories named
    in ``also``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", ref, "src", "schemas", *also],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    _distribution(ref, into / "src")
    return into / "src"


def _distribution(ref: str, src: Path) -> None:
    """The commit's own distribution metadata in ``src``: its name, version and entry points
    (the adapters it registers, which may live in other modules than the installed repro's).
    First on the import path, it is the one importlib.metadata reads, as a wheel of that commit
    installed would be: the installed repro's registrations would name modules the tree may
    not have."""
    text = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{ref}:pyproject.toml"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    project = tomllib.loads(text)["project"]
    info = src / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    groups = {"console_scripts": project.get("scripts", {}), **project.get("entry-points", {})}
    (info / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in points.items())
            for group, points in groups.items()
        )
    )
