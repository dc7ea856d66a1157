"""The distribution's name, and the bundle shipped in the repository.

repro's distribution is ``repro-evidence``: ``repro`` on the package index is another project,
whose distribution also installs an import package and a command named ``repro``, so the two
cannot share one environment (README, "Install"). ``docs/examples/quick-start-bundle/`` is a
bundle of repro 0.1.0's quick-start protocol at 5 episodes per condition, made by it: the bundle
the nox session ``wheel`` verifies with the built wheel alone, and a compatibility fixture that
every later version must keep verifying."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
from tools import check_dist

from conftest import ROOT
from repro import DISTRIBUTION, version
from repro._protocol.freeze import freeze
from repro._protocol.load import load_protocol
from repro.verify import bundle_sha256, verify

# Slow: builds and inspects the distribution.
pytestmark = pytest.mark.slow

EXAMPLES = ROOT / "docs" / "examples"
SHIPPED = EXAMPLES / "quick-start-bundle"
SHIPPED_PROTOCOL = EXAMPLES / "quick-start-reduced.json"
#: The shipped bundle's identity (the sha256 of its tag manifest) as it was made: a change to any
#: of its files changes it, so the fixture cannot be made again unnoticed.
SHIPPED_SHA256 = "a5cbfd3fdb8fb9532d3594987f68d53090fc7240f960e1eeac6b52a8ad603e46"


class TestName:
    """The distribution name everything that names it uses."""

    def test_pyproject_and_lock_name_the_distribution(self) -> None:
        """pyproject.toml's ``[project] name`` and uv.lock's editable package are
        :data:`repro.DISTRIBUTION`, which is not ``repro``; the command is still ``repro``."""
        pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
        assert pyproject["project"]["name"] == DISTRIBUTION != "repro"
        assert pyproject["project"]["scripts"] == {"repro": "repro._cli:main"}
        lock = tomllib.loads((ROOT / "uv.lock").read_text("utf-8"))
        ours = [p["name"] for p in lock["package"] if p.get("source") == {"editable": "."}]
        assert ours == [DISTRIBUTION]

    def test_version_is_the_distributions(self) -> None:
        """:func:`repro.version` is the installed repro-evidence distribution's version."""
        try:
            installed = importlib.metadata.version(DISTRIBUTION)
        except importlib.metadata.PackageNotFoundError:
            pytest.skip("repro-evidence is not installed here (a bare source tree)")
        assert version() == installed

    def test_no_other_repro_distribution_here(self) -> None:
        """No distribution named ``repro`` (the other project's) is installed beside this one:
        its files would overwrite repro's own package and command."""
        with pytest.raises(importlib.metadata.PackageNotFoundError):
            importlib.metadata.distribution("repro")


class TestShippedBundle:
    """docs/examples/quick-start-bundle/, verified by the code under test."""

    def test_verifies_unchanged(self) -> None:
        """The shipped bundle verifies with no finding, and is the bundle that was shipped."""
        assert verify(SHIPPED) == []
        assert bundle_sha256(SHIPPED) == SHIPPED_SHA256

    def test_is_a_bundle_of_the_shipped_protocol(self) -> None:
        """Its bag-info names the frozen sha256 of docs/examples/quick-start-reduced.json: the
        quick start as repro 0.1.0 shipped it (three classic-control environments, two
        baseline policies), at 5 runs per condition."""
        protocol = load_protocol(SHIPPED_PROTOCOL)
        assert protocol.runs_per_condition == 5
        assert [len(factor.levels) for factor in protocol.matrix] == [3]
        info = (SHIPPED / "bag-info.txt").read_text("utf-8").splitlines()
        assert f"External-Identifier: sha256:{freeze(protocol).sha256}" in info

    def test_cli_verifies_it(self) -> None:
        """``python -m repro verify`` on the shipped bundle exits 0, as the wheel check runs it."""
        done = subprocess.run(
            [sys.executable, "-m", "repro", "verify", str(SHIPPED)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert SHIPPED_SHA256 in done.stdout


def _sdist(tmp_path: Path, names: list[str]) -> Path:
    path = tmp_path / "repro_evidence-0.1.0.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for name in names:
            data = tmp_path / "member"
            data.write_bytes(b"x")
            archive.add(data, arcname=f"repro_evidence-0.1.0/{name}")
    return path


def _wheel(tmp_path: Path, files: dict[str, str]) -> Path:
    path = tmp_path / "repro_evidence-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


GOOD_SDIST = [
    "PKG-INFO",
    "pyproject.toml",
    "README.md",
    "LICENSE",
    "src/repro/__init__.py",
    "src/repro/_cli/__init__.py",
    "schemas/protocol.schema.json",
    "docs/examples/quick-start-bundle/bagit.txt",
]
INFO = "repro_evidence-0.1.0.dist-info"
GOOD_WHEEL = {
    "repro/__init__.py": "",
    "repro/_cli/__init__.py": "",
    "repro/json_schemas/protocol.schema.json": "{}",
    "repro/templates/gymnasium.json": "{}",
    "repro/_present/page.css": "",
    "repro/data/bagit-profile.json": "{}",
    f"{INFO}/METADATA": (
        "Metadata-Version: 2.4\nName: repro-evidence\nVersion: 0.1.0\n"
        "Requires-Dist: numpy>=1.26\n"
        "Requires-Dist: gymnasium>=1.0; extra == 'gymnasium'\n"
    ),
    f"{INFO}/entry_points.txt": (
        "[console_scripts]\nrepro = repro._cli:main\n\n[repro.adapters]\n"
        + "".join(f"{name} = a:B\n" for name in check_dist.BUILT_IN_ADAPTERS)
    ),
    f"{INFO}/licenses/LICENSE": "MIT",
    f"{INFO}/RECORD": "",
}


class TestArchiveChecks:
    """tools/check_dist.py, which the nox session ``wheel`` runs on the built archives."""

    def test_good_archives_pass(self, tmp_path: Path) -> None:
        """An sdist and a wheel holding what they should raise no problem."""
        assert check_dist.sdist_problems(_sdist(tmp_path, GOOD_SDIST)) == []
        assert check_dist.wheel_problems(_wheel(tmp_path, GOOD_WHEEL)) == []

    @pytest.mark.parametrize(
        ("drop", "add", "problem"),
        [
            ("LICENSE", None, "missing: LICENSE"),
            ("src/repro/__init__.py", None, "missing: src/repro/__init__.py"),
            (None, "tests/data/corpus.json", "unexpected: tests/data/corpus.json"),
            (None, "uv.lock", "unexpected: uv.lock"),
            (None, "src/repro/__pycache__/x.pyc", "unexpected: src/repro/__pycache__/x.pyc"),
        ],
    )
    def test_sdist_problems(
        self, tmp_path: Path, drop: str | None, add: str | None, problem: str
    ) -> None:
        """An sdist without a file it needs, or with one it should not carry, is named."""
        names = [n for n in GOOD_SDIST if n != drop] + ([add] if add else [])
        assert check_dist.sdist_problems(_sdist(tmp_path, names)) == [f"sdist {problem}"]

    @pytest.mark.parametrize(
        ("change", "problem"),
        [
            ({"tests/test_x.py": ""}, "wheel unexpected: tests/test_x.py"),
            (
                {f"{INFO}/METADATA": "Name: repro\nVersion: 0.1.0\n"},
                "wheel metadata Name is 'repro', not 'repro-evidence'",
            ),
            (
                {f"{INFO}/entry_points.txt": "[repro.adapters]\ngymnasium = a:B\n"},
                "wheel entry points: console script repro missing",
            ),
            (
                {
                    f"{INFO}/METADATA": "Name: repro-evidence\nVersion: 0.1.0\n"
                    "Requires-Dist: Gymnasium>=1.0\n"
                },
                "wheel requires Gymnasium>=1.0 without an extra",
            ),
        ],
    )
    def test_wheel_problems(self, tmp_path: Path, change: dict[str, str], problem: str) -> None:
        """A wheel with a stray top-level file, another distribution name, no ``repro``
        command, or a requirement on what only an extra brings (the simulator, which verify
        does without) is named."""
        problems = check_dist.wheel_problems(_wheel(tmp_path, {**GOOD_WHEEL, **change}))
        assert problem in problems

    def test_a_wheel_without_the_page_style(self, tmp_path: Path) -> None:
        """A wheel without repro/_present/page.css, which the HTML page reads as package data,
        is named."""
        files = {k: v for k, v in GOOD_WHEEL.items() if k != "repro/_present/page.css"}
        problems = check_dist.wheel_problems(_wheel(tmp_path, files))
        assert problems == ["wheel missing: repro/_present/page.css"]

    def test_a_wheel_without_the_bagit_profile(self, tmp_path: Path) -> None:
        """A wheel without repro/data/bagit-profile.json, the BagIt profile bundles name and
        verify reads as package data, is named."""
        files = {k: v for k, v in GOOD_WHEEL.items() if k != "repro/data/bagit-profile.json"}
        problems = check_dist.wheel_problems(_wheel(tmp_path, files))
        assert problems == ["wheel missing: repro/data/bagit-profile.json"]
