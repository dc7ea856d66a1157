"""Adapters are plugins: repro's own and any other package's are found through one entry-point
group, ``repro adapters`` lists them (whether each loads, and whether its simulator imports), a
name two distributions register is refused, and a third-party package installed from
tests/plugin runs a study that verifies."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from conftest import ROOT, SMALL, register_adapters
from repro import DISTRIBUTION
from repro._cli.app import app
from repro._execute.studies import prepare
from repro._execute.worker import adapter_target
from repro._plan.sealing import derive_seed
from repro.adapters._base import get_adapter, registered_adapters
from repro.errors import BadInput, install_hint

runner = CliRunner()

PLUGIN = ROOT / "tests" / "plugin" / "repro-coinflip"
BUILT_IN = {
    "gymnasium": "repro.adapters._gymnasium:GymnasiumAdapter",
    "command": "repro.adapters._command:CommandAdapter",
    "cyborg": "repro.adapters._cyborg:CybORGAdapter",
    "inspect": "repro.adapters._inspect_eval:InspectAdapter",
    "recorded": "repro.adapters._recorded:RecordedAdapter",
}
#: The modules each built-in adapter's simulator is imported from (any one is enough).
SIMULATORS: dict[str, tuple[str, ...]] = {
    "gymnasium": ("gymnasium",),
    "command": (),
    "cyborg": ("CybORG", "csle_cyborg"),
    "inspect": ("inspect_ai",),
    "recorded": (),
}


def _adapters(*args: str) -> Result:
    return runner.invoke(app, ["adapters", *args])


def _listed(result: Result) -> dict[tuple[str, str], dict[str, Any]]:
    """``repro adapters --json`` by (name, distribution)."""
    assert result.exit_code == 0, result.output
    return {(a["name"], a["distribution"]): a for a in json.loads(result.stdout)["adapters"]}


def _small(tmp_path: Path, adapter: str = "gymnasium") -> Path:
    path = tmp_path / "protocol.json"
    path.write_text(json.dumps({**SMALL, "adapter": {"name": adapter, "options": {}}}), "utf-8")
    return path


class TestBuiltIn:
    """repro's own adapters are entry points like any other."""

    def test_declared_in_pyproject_and_installed(self) -> None:
        """pyproject.toml declares the five built-in adapters in the repro.adapters group, and
        the installed repro distribution (repro-evidence) registers exactly those (after an edit
        of pyproject.toml an editable install must be synced again for this to hold)."""
        pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
        assert pyproject["project"]["entry-points"]["repro.adapters"] == BUILT_IN
        ours = {r.name: r.target for r in registered_adapters() if r.distribution == DISTRIBUTION}
        assert ours == BUILT_IN

    @pytest.mark.parametrize("name", sorted(BUILT_IN))
    def test_workers_rebuild_what_the_entry_point_names(self, name: str) -> None:
        """Each built-in adapter, got by its entry point, names its own entry point's object as
        the ``module:Class`` a worker process rebuilds it from."""
        adapter = get_adapter(name)
        assert adapter.name == name
        assert adapter_target(adapter) == BUILT_IN[name]

    def test_listed_with_repro_version(self) -> None:
        """``repro adapters --json`` lists each built-in with repro's distribution
        (repro-evidence) and version, its object path, that it loads, and its simulator's
        modules, each with whether it is there to import (the command adapter needs none: it
        runs a program)."""
        listed = _listed(_adapters("--json"))
        version = importlib.metadata.version(DISTRIBUTION)
        for name, target in BUILT_IN.items():
            simulator = listed[(name, DISTRIBUTION)].pop("simulator")
            modules = simulator["modules"]
            assert [m["module"] for m in modules] == list(SIMULATORS[name])
            for m in modules:
                there = importlib.util.find_spec(m["module"]) is not None
                assert (m["imports"], m["error"] is None) == (there, there), m
            assert simulator["available"] == (not modules or any(m["imports"] for m in modules))
            assert listed[(name, DISTRIBUTION)] == {
                "name": name,
                "distribution": DISTRIBUTION,
                "version": version,
                "object": target,
                "loads": True,
                "error": None,
                "also_registered_by": [],
            }


#: Each built-in adapter's way to install its simulator, as ``repro adapters`` says it.
INSTALLS = {
    "gymnasium": install_hint("gymnasium"),
    "command": None,
    "cyborg": "install upstream CybORG 2.1, or, for the fork csle-cyborg, "
    + install_hint("cyborg"),
    "inspect": install_hint("inspect"),
    "recorded": None,
}


class TestWithoutGymnasium:
    """gymnasium is repro's ``gymnasium`` extra, not a dependency: without it a gymnasium study
    is refused saying what to install, and ``repro adapters`` says so too."""

    @pytest.fixture(autouse=True)
    def _no_gymnasium(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """``import gymnasium`` raises ModuleNotFoundError, as where it is not installed."""
        monkeypatch.setitem(sys.modules, "gymnasium", None)

    def test_the_hint_names_the_extra_both_ways(self) -> None:
        """The hint names the pip form and the uv form of the gymnasium extra."""
        hint = install_hint("gymnasium")
        assert "pip install 'repro-evidence[gymnasium]'" in hint
        assert "uv run --extra gymnasium repro" in hint

    @pytest.mark.parametrize("command", [["study"], ["protocol", "check"]])
    def test_a_gymnasium_study_is_refused_with_the_hint(
        self, tmp_path: Path, command: list[str]
    ) -> None:
        """``repro study`` (and ``repro protocol check``) of a gymnasium protocol exits 2
        naming the extra to install and the JSON path of the adapter, with no traceback, and
        writes nothing."""
        out = tmp_path / "bundle"
        protocol = ROOT / "protocols" / "gymnasium-classic-control.json"
        args = [*command, str(protocol)] + (["--out", str(out)] if command == ["study"] else [])
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        said = " ".join(result.stderr.split())
        assert install_hint("gymnasium") in said and "@ $.adapter.name" in said
        assert "Traceback" not in result.output
        assert not out.exists()

    def test_listed_with_the_hint(self) -> None:
        """``repro adapters`` lists the gymnasium adapter with its simulator not available and
        the hint after it (``--json``: ``simulator.install``); each built-in states its own."""
        listed = _listed(_adapters("--json"))
        simulator = listed[("gymnasium", DISTRIBUTION)]["simulator"]
        assert simulator["available"] is False
        assert simulator["modules"] == [
            {"module": "gymnasium", "imports": False, "error": "ModuleNotFoundError"}
        ]
        assert {n: listed[(n, DISTRIBUTION)]["simulator"]["install"] for n in BUILT_IN} == INSTALLS
        text = _adapters()
        row = next(x for x in text.stdout.splitlines() if x.startswith("gymnasium "))
        assert row.endswith(
            "gymnasium does not import (ModuleNotFoundError); "
            f"to use this adapter, {install_hint('gymnasium')}"
        )


class TestRegistered:
    """Adapters a test registers as a distribution's metadata on sys.path."""

    def test_found_while_registered_only(self, tmp_path: Path) -> None:
        """A registered adapter is found by name and built from its entry point; once its
        distribution is gone from sys.path, the name is unknown again."""
        with pytest.MonkeyPatch.context() as monkeypatch:
            register_adapters(
                monkeypatch, tmp_path, "repro-extra", {"faults": "repro_fault_adapter:FaultAdapter"}
            )
            assert adapter_target(get_adapter("faults")) == "repro_fault_adapter:FaultAdapter"
        with pytest.raises(BadInput, match="unknown adapter 'faults'"):
            get_adapter("faults")

    def test_same_name_from_two_distributions_is_refused(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A second distribution registering ``gymnasium`` makes a gymnasium study exit 2 naming
        both distributions, writing nothing; ``repro adapters`` lists both, each naming the
        other, and exits 0."""
        register_adapters(
            monkeypatch,
            tmp_path / "site",
            "repro-rival",
            {"gymnasium": "repro_fault_adapter:FaultAdapter"},
        )
        with pytest.raises(BadInput) as refused:
            prepare(_small(tmp_path), {})
        message = str(refused.value)
        version = importlib.metadata.version(DISTRIBUTION)
        assert f"{DISTRIBUTION} {version} ({BUILT_IN['gymnasium']})" in message
        assert "repro-rival 0 (repro_fault_adapter:FaultAdapter)" in message
        assert message.endswith("@ $.adapter.name")

        out = tmp_path / "bundle"
        result = runner.invoke(app, ["study", str(_small(tmp_path)), "--out", str(out)])
        assert result.exit_code == 2 and "more than one distribution" in result.stderr
        assert not out.exists()

        listed = _listed(_adapters("--json"))
        assert listed[("gymnasium", DISTRIBUTION)]["also_registered_by"] == ["repro-rival"]
        assert listed[("gymnasium", "repro-rival")]["also_registered_by"] == [DISTRIBUTION]
        text = _adapters()
        assert text.exit_code == 0
        assert "also registered by repro-rival: refused" in text.stdout

    def test_adapters_that_do_not_load_are_listed_by_error_type(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An adapter whose module does not import, whose class is missing or whose constructor
        raises is listed with the error's type and no traceback, and the listing exits 0; a
        study naming one exits 2 saying it does not load."""
        site = tmp_path / "site"
        site.mkdir()
        (site / "repro_raising_adapter.py").write_text(
            "class Adapter:\n    def __init__(self):\n        raise RuntimeError('no licence')\n"
        )
        register_adapters(
            monkeypatch,
            site,
            "repro-broken",
            {
                "missing-module": "repro_no_such_module:Adapter",
                "missing-class": "repro_fault_adapter:NoSuchAdapter",
                "raising": "repro_raising_adapter:Adapter",
            },
        )
        listed = _listed(_adapters("--json"))
        errors = {
            name: (a["loads"], a["error"])
            for (name, dist), a in listed.items()
            if dist == "repro-broken"
        }
        assert errors == {
            "missing-module": (False, "ModuleNotFoundError"),
            "missing-class": (False, "AttributeError"),
            "raising": (False, "RuntimeError"),
        }
        text = _adapters()
        assert text.exit_code == 0
        assert "Traceback" not in text.output and "no licence" not in text.output
        line = next(x for x in text.stdout.splitlines() if x.startswith("missing-module "))
        assert line.split()[1:] == [
            "repro-broken",
            "0",
            "repro_no_such_module:Adapter",
            "no",
            "(ModuleNotFoundError)",
            "not",
            "stated",
        ]
        assert {n: a["simulator"] for (n, d), a in listed.items() if d == "repro-broken"} == {
            "missing-module": None,
            "missing-class": None,
            "raising": None,
        }
        result = runner.invoke(app, ["protocol", "check", str(_small(tmp_path, "missing-module"))])
        assert result.exit_code == 2
        assert (
            "adapter 'missing-module' (repro_no_such_module:Adapter from repro-broken 0) "
            "does not load (ModuleNotFoundError"
        ) in " ".join(result.stderr.split())

    def test_simulator_modules_are_tried(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An adapter that states its simulator's modules is listed loading, with each module's
        import tried apart: one that is there imports, a missing one or one whose import raises
        is named with the error's type; the simulator is available when any one imports. An
        attribute that is no tuple of names counts as not stated. How to install the simulator,
        when the adapter says it, is listed, and said after a simulator that is not available."""
        site = tmp_path / "site"
        site.mkdir()
        (site / "repro_raising_simulator.py").write_text("raise RuntimeError('no licence')\n")
        (site / "repro_stating_adapters.py").write_text(
            "class Either:\n"
            "    simulator_modules = ('repro_no_such_simulator', 'json')\n"
            "    simulator_install = 'pip install repro-either'\n"
            "class Missing:\n"
            "    simulator_modules = ('repro_no_such_simulator', 'repro_raising_simulator')\n"
            "    simulator_install = 'pip install repro-missing'\n"
            "class Unsaid:\n"
            "    simulator_modules = ('repro_no_such_simulator',)\n"
            "    simulator_install = ['not', 'a', 'string']\n"
            "class Odd:\n"
            "    simulator_modules = 'json'\n"
        )
        register_adapters(
            monkeypatch,
            site,
            "repro-stating",
            {
                "either": "repro_stating_adapters:Either",
                "missing": "repro_stating_adapters:Missing",
                "unsaid": "repro_stating_adapters:Unsaid",
                "odd": "repro_stating_adapters:Odd",
            },
        )
        listed = _listed(_adapters("--json"))
        no_such = {"module": "repro_no_such_simulator", "imports": False}
        no_such["error"] = "ModuleNotFoundError"
        assert listed[("either", "repro-stating")]["simulator"] == {
            "modules": [no_such, {"module": "json", "imports": True, "error": None}],
            "available": True,
            "install": "pip install repro-either",
        }
        raising = {"module": "repro_raising_simulator", "imports": False, "error": "RuntimeError"}
        assert listed[("missing", "repro-stating")]["simulator"] == {
            "modules": [no_such, raising],
            "available": False,
            "install": "pip install repro-missing",
        }
        assert listed[("unsaid", "repro-stating")]["simulator"] == {
            "modules": [no_such],
            "available": False,
            "install": None,
        }
        assert listed[("odd", "repro-stating")]["simulator"] is None
        stating = ("either", "missing", "unsaid", "odd")
        assert all(listed[(n, "repro-stating")]["loads"] for n in stating)
        text = _adapters()
        assert text.exit_code == 0 and "no licence" not in text.output
        rows = {x.split()[0]: x for x in text.stdout.splitlines()}
        assert rows["either"].endswith("json imports")
        assert rows["missing"].endswith(
            "  yes    repro_no_such_simulator does not import (ModuleNotFoundError), "
            "repro_raising_simulator does not import (RuntimeError); "
            "to use this adapter, pip install repro-missing"
        )
        assert rows["unsaid"].endswith(
            "repro_no_such_simulator does not import (ModuleNotFoundError)"
        )
        assert rows["odd"].endswith("  not stated")

    def test_nothing_registered(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """With no entry point in the group (repro itself not installed), the listing says so
        and exits 0, and a study's adapter is unknown, with none known."""
        monkeypatch.setattr(importlib.metadata, "entry_points", lambda **_: [])
        result = _adapters()
        assert (result.exit_code, result.stdout) == (
            0,
            "no adapter is registered in the repro.adapters entry-point group\n",
        )
        assert _listed(_adapters("--json")) == {}
        with pytest.raises(BadInput, match=r"unknown adapter 'gymnasium' \(known: none\)"):
            prepare(_small(tmp_path), {})


# --------------------------------------------------------------------------- a real plugin

COINS: dict[str, Any] = {
    "schema": "repro.protocol/1",
    "id": "coins",
    "title": "Fair and loaded coins",
    "adapter": {"name": "coinflip", "options": {}},
    "matrix": [{"name": "flips", "levels": [10, 40]}],
    "participants": [
        {"id": "fair", "kind": "coin", "params": {"heads": 0.5}},
        {"id": "loaded", "kind": "coin", "params": {"heads": 0.8}},
    ],
    "runs_per_condition": 4,
    "seeding": {"mode": "per-run", "seed": 3},
    "measure": {"name": "episode_return", "description": "number of heads"},
    "estimand": "mean-of-condition-means",
    "interval": {"method": "t", "level": 0.95},
}


def _installer() -> list[str]:
    """uv when it is on PATH, else this interpreter's pip; skips when there is neither."""
    uv = shutil.which("uv")
    if uv is not None:
        # Offline: the build backend (hatchling, which repro itself builds with) comes from uv's
        # cache, and the plugin has no dependencies to fetch.
        return [uv, "pip", "install", "--offline", "--python", sys.executable]
    if importlib.util.find_spec("pip") is None:
        pytest.skip("neither uv nor pip is available to install the plugin package")
    return [sys.executable, "-m", "pip", "install", "--no-build-isolation"]


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/plugin/repro-coinflip installed into a fresh target directory (not the venv)."""
    target = tmp_path_factory.mktemp("plugin-site")
    done = subprocess.run(
        [*_installer(), "--no-deps", "--target", str(target), str(PLUGIN)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return target


def _repro(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m repro ARGS`` in a fresh interpreter that sees the plugin through PYTHONPATH."""
    # The plugin first, then whatever this interpreter was given (the tree under test).
    path = [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    return subprocess.run(
        [sys.executable, "-m", "repro", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def _heads(seed: int, heads: float, flips: int) -> list[float]:
    """The plugin's documented rule: one ``random.Random(seed)`` draw per toss."""
    rng = random.Random(seed)
    return [1.0 if rng.random() < heads else 0.0 for _ in range(flips)]


@pytest.mark.slow
class TestPlugin:
    """A third-party adapter package, installed as a user would, in fresh interpreters."""

    def test_listed_with_its_version(self, plugin_site: Path, tmp_path: Path) -> None:
        """``repro adapters`` lists the plugin by name, distribution, version and object path,
        loading; the built-ins stay listed."""
        done = _repro(plugin_site, tmp_path, "adapters")
        assert done.returncode == 0, done.stderr
        rows = {line.split()[0]: line.split() for line in done.stdout.splitlines()[1:]}
        assert rows["coinflip"] == [
            "coinflip",
            "repro-coinflip",
            "0.3.0",
            "repro_coinflip:CoinflipAdapter",
            "yes",
            "not",  # the plugin states no simulator modules: listed all the same
            "stated",
        ]
        assert set(BUILT_IN) < set(rows)

    def test_study_verifies_and_holds_the_plugins_runs(
        self, plugin_site: Path, tmp_path: Path
    ) -> None:
        """``repro protocol check``, ``repro study`` and ``repro verify`` on a coinflip protocol
        exit 0; the check's digest is the one the study records; the ledger pins the plugin's
        version; every run holds the tosses the plugin's rule gives for its slot's seed (so the
        worker processes rebuilt the plugin's adapter from its class)."""
        path = tmp_path / "coins.json"
        path.write_text(json.dumps(COINS), "utf-8")
        checked = _repro(plugin_site, tmp_path, "protocol", "check", str(path), "--json")
        assert checked.returncode == 0, checked.stderr
        summary = json.loads(checked.stdout)
        assert (summary["conditions"], summary["slots"]) == (4, 16)
        assert summary["adapter"]["version"] == "0.3.0"

        out = tmp_path / "bundle"
        studied = _repro(plugin_site, tmp_path, "study", str(path), "--out", str(out))
        assert studied.returncode == 0, studied.stderr
        verified = _repro(plugin_site, tmp_path, "verify", str(out))
        assert verified.returncode == 0, verified.stdout + verified.stderr

        data = out / "data"
        assert json.loads((data / "protocol.json").read_text())["sha256"] == summary["sha256"]
        ledger = json.loads((data / "source-ledger.json").read_text())
        assert ledger["adapter"]["name"] == "coinflip"
        assert {"kind": "package", "role": "simulator", "name": "repro-coinflip"}.items() <= (
            ledger["sources"][0].items()
        )
        assert ledger["sources"][0]["version"] == "0.3.0"
        seal = json.loads((data / "plans" / "seal.json").read_text())
        conditions = {c["id"]: c for c in seal["conditions"]}
        heads = {p["id"]: p["params"]["heads"] for p in COINS["participants"]}
        records = [
            json.loads(line)
            for runs in sorted((data / "runs").glob("*.jsonl"))
            for line in runs.read_text().splitlines()
        ]
        assert len(records) == 16
        for record in records:
            condition = conditions[record["condition"]]
            expected = _heads(
                derive_seed(3, record["slot"]),
                heads[condition["participant"]],
                condition["factors"]["flips"],
            )
            assert (record["status"], record["step_rewards"]) == ("valid", expected)
            assert record["measure"] == sum(expected)

    def test_a_plugins_refusal_is_bad_input(self, plugin_site: Path, tmp_path: Path) -> None:
        """A protocol the plugin refuses (stream seeding) exits 2 with the plugin's message and
        JSON path, from ``protocol check`` and ``study`` alike, writing nothing."""
        path = tmp_path / "coins.json"
        path.write_text(json.dumps({**COINS, "seeding": {"mode": "stream", "seed": 3}}), "utf-8")
        before = sorted(tmp_path.iterdir())
        for args in (("protocol", "check", str(path)), ("study", str(path), "--out", "b")):
            done = _repro(plugin_site, tmp_path, *args)
            assert done.returncode == 2, done.stderr
            assert "the coinflip adapter takes per-run seeding @ $.seeding.mode" in " ".join(
                done.stderr.split()
            )
            assert "Traceback" not in done.stderr
        assert sorted(tmp_path.iterdir()) == before
