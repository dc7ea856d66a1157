"""What the command line imports: ``repro verify`` and ``repro --help`` start without the study
machinery, whose imports (adapters, workers, the Dask client, rich's progress bars) would cost
them most of their start-up for nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, study_once
from synthetic import synthetic_bundle

# Slow: times fresh interpreters.
pytestmark = pytest.mark.slow

#: The bundle shipped in the repository, made by repro 0.1.0 (tests/test_distribution.py).
SHIPPED = ROOT / "docs" / "examples" / "quick-start-bundle"

#: Modules that only running a study or replaying a slot needs.
STUDY_MACHINERY = (
    "repro._execute.studies",
    "repro._execute.cluster",
    "repro._execute.local",
    "repro._execute.worker",
    "repro._execute.attempts",
    "repro._execute.replay",
    "repro.adapters",
    "gymnasium",
    "distributed",
)

#: What no command imports to parse its arguments: typer 0.29 parses every argument through a
#: pydantic ``TypeAdapter``, and importing pydantic costs each command about 0.13 s here; the lock
#: holds typer below it (pyproject.toml, ``[tool.uv]``).
ARGUMENT_PARSING = ("pydantic",)

#: What a study has no use for: reading a verified bundle, and the verifier that does it.
BUNDLE_READING = ("repro._present.showing", "repro.verify")

#: A shell harness for a command-adapter study: it reads its spec and answers one outcome.
_HARNESS = """#!/bin/sh
IFS= read -r spec || :
printf '{"value":1}\\n'
"""

#: Runs the command line with the given arguments, then prints to stderr, whatever the exit, the
#: name of every module loaded by then.
_CODE = """\
import sys
from repro._cli.app import main
sys.argv = ["repro", *sys.argv[1:]]
try:
    main()
finally:
    print("\\n".join(sorted(sys.modules)), file=sys.stderr)
"""


def _loaded(*args: str, cwd: Path | None = None) -> tuple[int, str, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _CODE, *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )
    return done.returncode, done.stdout, set(done.stderr.split())


def _imported(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


def test_verify_imports_no_study_machinery(tmp_path: Path) -> None:
    """A bundle that verifies is verified without the study machinery, without rich (nothing is
    printed through it), without pydantic and, its interval being normal, without NumPy or
    SciPy."""
    bundle = synthetic_bundle(tmp_path / "bundle", 2, 3, 5)
    status, out, modules = _loaded("verify", str(bundle))
    assert status == 0, out
    assert "verifies" in out
    heavy = (*STUDY_MACHINERY, *ARGUMENT_PARSING, "rich", "numpy", "scipy")
    assert _imported(modules, heavy) == []


#: What only the content stage of verify needs: the models and the converter that structures
#: them, the rules, the derivations, the protocol's loader, the content checks and the signatures
#: (its statistics are NumPy's and SciPy's).
CONTENT_STAGE = (
    "repro.models",
    "repro._json.serde",
    "cattrs",
    "repro.verify._core",
    "repro.verify._content",
    "repro.verify._signatures",
    "repro._derive",
    "repro._protocol.load",
    "repro._protocol.rules",
    "repro._protocol.freeze",
)


def test_bagit_only_imports_no_content_stage(tmp_path: Path) -> None:
    """``repro verify --bagit-only`` checks a bag with the tree walk, the reader and the BagIt
    stage alone, parsing no model: on a large bag its wall time is near the hashing limit, and
    what it imports is part of it (benchmarks/large_bundles.py)."""
    bundle = synthetic_bundle(tmp_path / "bundle", 2, 3, 5)
    status, out, modules = _loaded("verify", "--bagit-only", str(bundle))
    assert status == 0, out
    assert "valid BagIt" in out
    heavy = (*CONTENT_STAGE, *STUDY_MACHINERY, *ARGUMENT_PARSING, "rich", "numpy", "scipy")
    assert _imported(modules, heavy) == []


#: What ``pip install repro-evidence`` leaves out: the simulator (repro's ``gymnasium`` extra)
#: and what it alone brings.
SIMULATOR = ("gymnasium", "cloudpickle", "farama_notifications")

#: :data:`_CODE` where none of :data:`SIMULATOR` can be imported, as where it is not installed.
_WITHOUT_SIMULATOR = f"import sys\nsys.modules.update(dict.fromkeys({SIMULATOR!r}))\n" + _CODE


@pytest.fixture(scope="module")
def rl_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real bundle of tests/test_rl_bundle.py's ``RL_SMALL``: rliable's aggregates and their
    bootstrap intervals, which verify derives again with NumPy."""
    from test_rl_bundle import RL_SMALL

    return study_once(tmp_path_factory, "rl-small", RL_SMALL)


@pytest.mark.parametrize(
    "bundle",
    ["shipped", "contrasted_bundle", "rl_bundle", "scored_bundle"],
)
def test_verify_needs_no_simulator(bundle: str, request: pytest.FixtureRequest) -> None:
    """Bundles of every kind verify in a fresh interpreter where gymnasium (and what only it
    brings) cannot be imported, as after ``pip install repro-evidence`` without its gymnasium
    extra: the quick-start bundle shipped in docs/examples, gymnasium studies with contrasts and
    with rliable's aggregates, and a scored study of the command adapter."""
    path = SHIPPED if bundle == "shipped" else request.getfixturevalue(bundle)
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_SIMULATOR, "verify", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verifies" in done.stdout
    assert _imported(set(done.stderr.split()), ("repro.adapters",)) == []


def test_study_imports_no_bundle_reading(tmp_path: Path) -> None:
    """A study prints through the command line's console without importing what reads a
    verified bundle (the verifier with it), and parses its arguments without pydantic."""
    harness = tmp_path / "harness.sh"
    harness.write_text(_HARNESS)
    harness.chmod(0o755)
    protocol = {
        "schema": "repro.protocol/1",
        "id": "startup-study",
        "title": "What a study imports",
        "adapter": {"name": "command", "options": {"harness": "harness.sh"}},
        "matrix": [{"name": "task", "levels": ["a"]}],
        "participants": [{"id": "m1", "kind": "agent", "params": {"model": "m1"}}],
        "runs_per_condition": 2,
        "seeding": {"mode": "per-run", "seed": 5},
        "measure": {"name": "outcome_value", "key": "value", "description": "always 1"},
        "estimand": "mean-of-condition-means",
        "interval": {"method": "normal", "level": 0.95},
        "retry": {"max_attempts": 1, "timeout_seconds": 30},
    }
    (tmp_path / "protocol.json").write_text(json.dumps(protocol))
    status, out, modules = _loaded("study", "protocol.json", "--out", "bundle", cwd=tmp_path)
    assert status == 0, out
    assert (tmp_path / "bundle" / "tagmanifest-sha256.txt").is_file()
    assert _imported(modules, (*BUNDLE_READING, *ARGUMENT_PARSING)) == []


def test_help_imports_no_study_machinery() -> None:
    """``repro --help`` lists every command without importing what any of them runs."""
    status, out, modules = _loaded("--help")
    assert status == 0, out
    assert "verify" in out and "study" in out
    assert _imported(modules, (*STUDY_MACHINERY, *ARGUMENT_PARSING)) == []


def test_show_json_and_html_import_no_study_machinery(tmp_path: Path) -> None:
    """``repro show --json --html`` verifies, prints JSON and writes the page with neither the
    study machinery nor rich (nothing goes through it), matplotlib (the page's plot is repro's
    own SVG), NumPy or SciPy."""
    bundle = synthetic_bundle(tmp_path / "bundle", 2, 3, 5)
    page = tmp_path / "report.html"
    status, out, modules = _loaded("show", str(bundle), "--json", "--html", str(page))
    assert status == 0, out
    assert '"ok": true' in out and page.is_file()
    heavy = (*STUDY_MACHINERY, "rich", "matplotlib", "numpy", "scipy")
    assert _imported(modules, heavy) == []


def test_the_study_machinery_imports_no_derivation() -> None:
    """What a study runs before its first run imports none of the derivations, the ledger or
    the crate (``repro._execute.studies.AFTER_RUNS``), nor rich, nor the figures its progress
    labels conditions with: it imports them while its runs wait, or after them."""
    code = (
        "import sys, repro._cli.app, repro._execute.studies as s; "
        "after = (*s.AFTER_RUNS, 'rich', 'repro._figures'); "
        "print(*sorted(m for m in after if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == []
