"""The ledger's facts against the protocol (repro._derive.facts): the adapter's name, what a
built-in adapter says of itself, the roles of its pinned sources and each condition's contract.
The study refuses an adapter whose facts contradict the protocol; verify applies the same rules
to a bundle's own protocol and ledger, so a ledger forged with repro at hand (every derived file
re-derived, both manifests regenerated) is named with ``ledger-facts``."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from typer.testing import CliRunner

from conftest import ROOT, register_adapters
from forge import forge_ledger_facts
from repro._cli.app import app
from repro._derive.facts import contract_problems, facts_problems, ledger_fact_problems
from repro._json.serde import structure
from repro.models import Condition, FrozenProtocol, Ledger, Seal
from repro.verify import verify

runner = CliRunner()


def _copy(bundle: Path, tmp_path: Path) -> Path:
    out = tmp_path / "forged"
    shutil.copytree(bundle, out, symlinks=True)
    return out


def _codes(root: Path) -> list[str]:
    return [f.code for f in verify(root)]


def _read(root: Path) -> tuple[FrozenProtocol, Seal, Ledger]:
    def load(name: str, cls: type[Any]) -> Any:
        return structure(json.loads((root / "data" / name).read_bytes()), cls, what=name)

    return (
        load("protocol.json", FrozenProtocol),
        load("plans/seal.json", Seal),
        load("source-ledger.json", Ledger),
    )


class TestCleanBundles:
    """Every fact a genuine bundle's ledger holds agrees with its protocol."""

    @pytest.mark.parametrize("name", ["small_bundle", "scored_bundle", "contrasted_bundle"])
    def test_no_problem(self, name: str, request: pytest.FixtureRequest) -> None:
        """A study's own ledger has no fact the protocol contradicts."""
        fp, seal, ledger = _read(request.getfixturevalue(name))
        assert ledger_fact_problems(fp.protocol, seal.conditions, ledger) == []

    def test_the_shipped_bundle(self) -> None:
        """The bundle shipped with the docs, made by an earlier repro, has none either."""
        fp, seal, ledger = _read(ROOT / "docs" / "examples" / "quick-start-bundle")
        assert ledger_fact_problems(fp.protocol, seal.conditions, ledger) == []


Edit = Callable[[dict[str, Any]], None]


def _adapter_named(ledger: dict[str, Any]) -> None:
    ledger["adapter"]["name"] = "command"


def _scope_widened(ledger: dict[str, Any]) -> None:
    ledger["adapter"]["observation_scope"] = "partial"


def _version_changed(ledger: dict[str, Any]) -> None:
    ledger["adapter"]["version"] = "0.29.1"


def _policy_pinned(ledger: dict[str, Any]) -> None:
    ledger["sources"].append(
        {"kind": "file", "role": "policy ghost", "name": "ghost.py", "sha256": "0" * 64, "size": 1}
    )


def _environment_dropped(ledger: dict[str, Any]) -> None:
    ledger["sources"] = [s for s in ledger["sources"] if s["role"] != "environment CartPole-v1"]


def _contract_env(ledger: dict[str, Any]) -> None:
    ledger["contracts"]["c00"]["env_id"] = "Acrobot-v1"


def _contract_participant(ledger: dict[str, Any]) -> None:
    ledger["contracts"]["c00"]["participant"] = "push-left"


def _contract_of_no_condition(ledger: dict[str, Any]) -> None:
    ledger["contracts"]["c99"] = dict(ledger["contracts"]["c00"])


GYMNASIUM_EDITS: dict[str, Edit] = {
    "adapter-named-otherwise": _adapter_named,
    "observation-scope": _scope_widened,
    "version-not-the-simulator's": _version_changed,
    "a-source-of-no-participant": _policy_pinned,
    "an-environment-not-pinned": _environment_dropped,
    "contract-env-id": _contract_env,
    "contract-participant": _contract_participant,
    "contract-of-no-condition": _contract_of_no_condition,
}


class TestForgedLedger:
    """A ledger whose facts contradict the protocol, forged with repro at hand, is named."""

    @pytest.mark.parametrize("edit", GYMNASIUM_EDITS.values(), ids=list(GYMNASIUM_EDITS))
    def test_gymnasium(self, small_bundle: Path, tmp_path: Path, edit: Edit) -> None:
        """Each forged fact of a Gymnasium bundle's ledger gives ledger-facts, and only it."""
        forged = _copy(small_bundle, tmp_path)
        forge_ledger_facts(forged, edit)
        assert set(_codes(forged)) == {"ledger-facts"}

    @pytest.mark.parametrize("key", ["harness_sha256", "scenario_version", "participant"])
    def test_command_contract(self, scored_bundle: Path, tmp_path: Path, key: str) -> None:
        """A command bundle's contract whose harness digest is not the ledger's harness pin,
        whose scenario version is not the protocol's, or whose participant is another, is
        named: the harness a run says it ran is the one the ledger pins."""
        forged = _copy(scored_bundle, tmp_path)
        other = {"harness_sha256": "1" * 64, "scenario_version": 99, "participant": "other"}

        def edit(ledger: dict[str, Any]) -> None:
            for contract in ledger["contracts"].values():
                contract[key] = other[key]

        forge_ledger_facts(forged, edit)
        findings = verify(forged)
        assert {f.code for f in findings} == {"ledger-facts"}
        assert all(key in f.what for f in findings)

    def test_the_cli_exits_1(self, small_bundle: Path, tmp_path: Path) -> None:
        """Through the command line: exit 1, the finding in --json."""
        forged = _copy(small_bundle, tmp_path)
        forge_ledger_facts(forged, _adapter_named)
        result = runner.invoke(app, ["verify", str(forged), "--json"])
        assert result.exit_code == 1
        codes = [f["code"] for f in json.loads(result.stdout)["findings"]]
        assert codes == ["ledger-facts"]


class TestStudy:
    """The study applies the same rules: to the adapter's facts at freeze, to each contract as
    its session opens."""

    def test_an_adapter_that_says_it_is_another(
        self,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        small_protocol: dict[str, Any],
        write_protocol: Callable[..., Path],
    ) -> None:
        """An adapter whose facts give another name than the one it is registered under is
        refused before anything is written (exit 2, naming the ledger's field)."""
        site = tmp_path / "site"
        site.mkdir()
        # Registered as "misnamed", it reports the name of the class it derives from.
        (site / "bc_misnamed.py").write_text(
            "from repro.adapters._gymnasium import GymnasiumAdapter\n"
            "class Misnamed(GymnasiumAdapter):\n"
            "    pass\n",
            "utf-8",
        )
        register_adapters(monkeypatch, site, "bc-misnamed", {"misnamed": "bc_misnamed:Misnamed"})
        small_protocol["adapter"]["name"] = "misnamed"
        out = tmp_path / "bundle"
        result = runner.invoke(
            app, ["study", str(write_protocol(small_protocol)), "--out", str(out)]
        )
        assert result.exit_code == 2, result.output
        said = " ".join(result.stderr.split())
        assert "$.adapter.name" in said
        assert "'gymnasium'" in said
        assert not out.exists()

    def test_a_contract_that_contradicts_the_protocol(self, small_bundle: Path) -> None:
        """The rule the worker applies as a session opens: a contract naming another
        environment or participant than its condition's is inconsistent; its own is not."""
        fp, seal, ledger = _read(small_bundle)
        condition: Condition = seal.conditions[0]
        contract = dict(ledger.contracts[condition.id])
        assert contract_problems(fp.protocol, condition, contract, ledger.sources) == []
        contract["participant"] = "someone else"
        problems = contract_problems(fp.protocol, condition, contract, ledger.sources)
        assert [p.path for p in problems] == [f"$.contracts.{condition.id}.participant"]

    def test_facts_of_a_third_party(self, small_bundle: Path) -> None:
        """An adapter that is not built in is held to its name only."""
        fp, _, ledger = _read(small_bundle)
        protocol = fp.protocol

        other = attrs.evolve(protocol, adapter=attrs.evolve(protocol.adapter, name="elsewhere"))
        facts = attrs.evolve(ledger.adapter, name="elsewhere", observation_scope="none")
        assert facts_problems(other, facts, ()) == []
