"""What code a bundle can make run: a module is found and its digest checked before any of its
code runs, and it runs from the bytes checked; re-executing someone else's bundle (replay,
audit) imports or runs nothing it names unless the user says where that code lives, and never
a standard-library module.

Each hostile module here would leave a file behind if any of its code ran: the tests check
that file is absent, not only the exit code."""

from __future__ import annotations

import hashlib
import json
import os
import py_compile
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import run_study
from repro._cli.app import app
from repro.adapters._base import code_of_bundle, import_target, targets_in
from repro.errors import BadInput
from repro.models import Source

runner = CliRunner()


def _marker_module(directory: Path, name: str, marker: Path, body: str = "") -> Path:
    """A module ``name`` in ``directory`` whose top-level code creates ``marker``."""
    path = directory / f"{name}.py"
    path.write_text(
        f"open({str(marker)!r}, 'w').close()\n{body}\ndef act(observation, rng):\n    return 0\n",
        "utf-8",
    )
    return path


@pytest.fixture
def fresh_modules() -> Iterator[list[str]]:
    """Names of modules a test imports, dropped from ``sys.modules`` after it (and before:
    another test may have made a module of the same name)."""
    names: list[str] = []
    yield names
    for name in names:
        sys.modules.pop(name, None)


def _callable_protocol(small_protocol: dict[str, Any], target: str, **params: Any) -> None:
    small_protocol["participants"] = [
        {"id": "p", "kind": "callable", "params": {"target": target, **params}}
    ]
    small_protocol["matrix"] = [{"name": "env_id", "levels": ["CartPole-v1"]}]
    small_protocol["runs_per_condition"] = 2


class TestStudy:
    """A study checks a pinned module's digest before the module runs."""

    def test_a_pin_that_does_not_match_runs_nothing(
        self,
        tmp_path: Path,
        small_protocol: dict[str, Any],
        fresh_modules: list[str],
    ) -> None:
        """A ``params.sha256`` that is not the module's refuses the study (exit 2, at the pin's
        JSON path) before any of the module's code runs, and writes no bundle."""
        marker = tmp_path / "ran"
        _marker_module(tmp_path, "bc_pinned_wrong", marker)
        fresh_modules.append("bc_pinned_wrong")
        _callable_protocol(small_protocol, "bc_pinned_wrong:act", sha256="0" * 64)
        protocol = tmp_path / "protocol.json"
        protocol.write_text(json.dumps(small_protocol), "utf-8")
        result = runner.invoke(app, ["study", str(protocol), "--out", str(tmp_path / "b")])
        assert result.exit_code == 2, result.output
        assert result.stderr.rstrip().endswith("@ $.participants[0].params.sha256")
        assert not marker.exists()
        assert not (tmp_path / "b").exists()

    def test_the_pinned_bytes_are_the_bytes_that_run(
        self, tmp_path: Path, fresh_modules: list[str]
    ) -> None:
        """A cached compilation beside the module (``__pycache__``, valid for the source's
        size and time, as Python checks it) is not what runs: the module runs from the source
        bytes whose digest is pinned. ``importlib`` alone would run the cache."""
        fresh_modules.append("bc_cached")
        source = tmp_path / "bc_cached.py"
        source.write_text("VALUE = 'planted'\n", "utf-8")
        cached = Path(importlib_cache(source))
        py_compile.compile(str(source), cfile=str(cached), doraise=True)
        stat = source.stat()
        source.write_text("VALUE = 'source!'\n", "utf-8")  # the same size
        os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        with targets_in(tmp_path):
            assert import_target("bc_cached:VALUE", "$") == "source!"
        sys.modules.pop("bc_cached")
        sys.path.insert(0, str(tmp_path))
        try:  # the planted cache is real: the import system alone runs it
            import bc_cached  # type: ignore[import-not-found]

            assert bc_cached.VALUE == "planted"
        finally:
            sys.path.remove(str(tmp_path))


def importlib_cache(source: Path) -> str:
    """Where the import system looks for ``source``'s cached compilation."""
    import importlib.util

    return importlib.util.cache_from_source(str(source))


def _pins(path: Path) -> list[Source]:
    data = path.read_bytes()
    return [
        Source(
            kind="file",
            role="policy p",
            name=path.name,
            sha256=hashlib.sha256(data).hexdigest(),
            size=len(data),
        )
    ]


class TestCodeOfBundle:
    """While a bundle is re-executed, what it names is imported only from where the user said,
    at the digest its ledger pins."""

    def test_nothing_without_sources(self, tmp_path: Path, fresh_modules: list[str]) -> None:
        """Without a directory from the user, no module the bundle names is imported, even one
        its ledger pins at the right digest and that lies on the import path."""
        marker = tmp_path / "ran"
        module = _marker_module(tmp_path, "bc_unsourced", marker)
        fresh_modules.append("bc_unsourced")
        sys.path.insert(0, str(tmp_path))
        try:
            with code_of_bundle(None, _pins(module)), pytest.raises(BadInput, match="--sources"):
                import_target("bc_unsourced:act", "$.participants[0].params.target")
        finally:
            sys.path.remove(str(tmp_path))
        assert not marker.exists()

    def test_an_unpinned_module_does_not_run(
        self, tmp_path: Path, fresh_modules: list[str]
    ) -> None:
        """A module whose file the ledger does not pin at its digest is refused before any of
        its code runs, naming both digests; one it pins runs."""
        marker = tmp_path / "ran"
        module = _marker_module(tmp_path, "bc_pinned", marker)
        fresh_modules.append("bc_pinned")
        pinned = _pins(module)
        module.write_text(module.read_text("utf-8") + "# changed\n", "utf-8")
        here = hashlib.sha256(module.read_bytes()).hexdigest()
        with code_of_bundle(tmp_path, pinned), pytest.raises(BadInput) as refused:
            import_target("bc_pinned:act", "$")
        assert here in str(refused.value)
        assert str(pinned[0].sha256) in str(refused.value)
        assert not marker.exists()
        with code_of_bundle(tmp_path, _pins(module)):
            assert callable(import_target("bc_pinned:act", "$"))
        assert marker.exists()

    @pytest.mark.parametrize("module", ["this", "antigravity", "os.path"])
    def test_never_the_standard_library(
        self, tmp_path: Path, module: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A standard-library module named by a bundle is never imported, whatever the ledger
        pins (``this`` would print, ``antigravity`` open a browser)."""
        was_loaded = module in sys.modules
        with code_of_bundle(tmp_path, []), pytest.raises(BadInput, match="standard library"):
            import_target(f"{module}:x", "$")
        assert (module in sys.modules) == was_loaded
        assert capsys.readouterr().out == ""


def _harness_protocol(tmp_path: Path) -> Path:
    """A command-adapter protocol in ``tmp_path`` whose harness (beside it, named relative to
    it) leaves a file behind each time it runs."""
    harness = tmp_path / "h.py"
    harness.write_text(
        "import json, pathlib, sys\n"
        "spec = json.loads(sys.stdin.read())\n"
        "pathlib.Path(__file__).with_name('runs').open('a').write('x')\n"
        "print(json.dumps({'score': spec['seed'] % 7}))\n",
        "utf-8",
    )
    protocol = {
        "schema": "repro.protocol/1",
        "id": "harness-code",
        "title": "A harness a replay must be told of",
        "adapter": {"name": "command", "options": {"harness": "h.py"}},
        "matrix": [{"name": "case", "levels": ["one"]}],
        "participants": [{"id": "a", "kind": "agent", "params": {}}],
        "runs_per_condition": 2,
        "seeding": {"mode": "per-run", "seed": 3},
        "measure": {"name": "outcome_value", "key": "score", "description": "score"},
        "estimand": "mean-of-condition-means",
        "interval": {"method": "normal", "level": 0.95},
        "retry": {"max_attempts": 1, "timeout_seconds": 30},
    }
    path = tmp_path / "protocol.json"
    path.write_text(json.dumps(protocol), "utf-8")
    return path


class TestReplayOfAHarness:
    """A command bundle's harness runs on replay only from the directory the user gives."""

    @pytest.fixture
    def harness_bundle(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> Callable[[], tuple[Path, Path]]:
        def make() -> tuple[Path, Path]:
            study_dir = tmp_path / "study"
            study_dir.mkdir()
            protocol = _harness_protocol(study_dir)
            monkeypatch.chdir(study_dir)  # the study finds the harness from here
            bundle = run_study(protocol, tmp_path / "bundle")
            (study_dir / "runs").unlink()
            return study_dir, bundle

        return make

    @pytest.mark.parametrize("command", ["replay", "audit"])
    def test_not_run_without_sources(
        self, harness_bundle: Callable[[], tuple[Path, Path]], command: str
    ) -> None:
        """Without --sources, replay and audit refuse (exit 2) before the harness runs, even
        from the directory that holds it, naming --sources and the option's JSON path."""
        study_dir, bundle = harness_bundle()
        args = ["c00-r0000"] if command == "replay" else ["--all"]
        result = runner.invoke(app, [command, str(bundle), *args])
        assert result.exit_code == 2, result.output
        said = " ".join(result.stderr.split())
        assert "--sources DIR" in said
        assert said.endswith("@ $.adapter.options.harness")
        assert not (study_dir / "runs").exists()

    @pytest.mark.slow
    def test_run_from_sources(self, harness_bundle: Callable[[], tuple[Path, Path]]) -> None:
        """With --sources, the harness found there (at the ledger's digest) runs and the slot
        replays byte-identical."""
        study_dir, bundle = harness_bundle()
        result = runner.invoke(
            app, ["replay", str(bundle), "c00-r0001", "--sources", str(study_dir)]
        )
        assert result.exit_code == 0, result.output
        assert "byte-identical" in result.stdout
        assert (study_dir / "runs").read_text() == "x"

    def test_changed_harness_not_run(self, harness_bundle: Callable[[], tuple[Path, Path]]) -> None:
        """A harness in --sources that is not the one the ledger pins does not run."""
        study_dir, bundle = harness_bundle()
        harness = study_dir / "h.py"
        harness.write_text(harness.read_text("utf-8") + "# changed\n", "utf-8")
        result = runner.invoke(
            app, ["replay", str(bundle), "c00-r0001", "--sources", str(study_dir)]
        )
        assert result.exit_code == 2, result.output
        assert "harness: file h.py" in " ".join(result.stderr.split())
        assert not (study_dir / "runs").exists()

    def test_outside_sources_refused(self, tmp_path: Path) -> None:
        """A path the protocol names that leads out of --sources is refused."""
        with code_of_bundle(tmp_path, []), pytest.raises(BadInput, match="lies outside"):
            from repro.adapters._base import protocol_path

            protocol_path("../../bin/sh", "$.adapter.options.harness")
