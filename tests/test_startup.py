"""What the command line imports: ``repro verify`` and ``repro --help`` start without the study
machinery, whose imports (adapters, workers, the Dask client, rich's progress bars) would cost
them most of their start-up for nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from synthetic import synthetic_bundle

#: Modules that only running a study or replaying a slot needs.
STUDY_MACHINERY = (
    "repro.execute.studies",
    "repro.execute.cluster",
    "repro.execute.local",
    "repro.execute.worker",
    "repro.execute.attempts",
    "repro.execute.replay",
    "repro.adapters",
    "gymnasium",
    "distributed",
)

#: Runs the command line with the given arguments, then prints to stderr, whatever the exit, the
#: name of every module loaded by then.
_CODE = """\
import sys
from repro.cli.app import main
sys.argv = ["repro", *sys.argv[1:]]
try:
    main()
finally:
    print("\\n".join(sorted(sys.modules)), file=sys.stderr)
"""


def _loaded(*args: str) -> tuple[int, str, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _CODE, *args], capture_output=True, text=True, timeout=120
    )
    return done.returncode, done.stdout, set(done.stderr.split())


def _imported(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


def test_verify_imports_no_study_machinery(tmp_path: Path) -> None:
    """A bundle that verifies is verified without the study machinery, without rich (nothing is
    printed through it) and, its interval being normal, without NumPy or SciPy."""
    bundle = synthetic_bundle(tmp_path / "bundle", 2, 3, 5)
    status, out, modules = _loaded("verify", str(bundle))
    assert status == 0, out
    assert "verifies" in out
    assert _imported(modules, (*STUDY_MACHINERY, "rich", "numpy", "scipy")) == []


def test_help_imports_no_study_machinery() -> None:
    """``repro --help`` lists every command without importing what any of them runs."""
    status, out, modules = _loaded("--help")
    assert status == 0, out
    assert "verify" in out and "study" in out
    assert _imported(modules, STUDY_MACHINERY) == []


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
