"""The protocol's pins against the ledger's sources (repro._protocol.pins): the rule itself, and
verify applying it to a CAGE-2 bundle whose ledger a forger rewrote to record another simulator
tree or scenario file than its protocol pins."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from conftest import ROOT, run_study
from forge import forge_ledger
from repro import errors
from repro._cli.app import app
from repro._protocol.load import parse_protocol
from repro._protocol.pins import (
    SCENARIO_ROLE,
    TREE_ROLE,
    PinProblem,
    agent_role,
    ledger_problems,
    policy_role,
)
from repro.models import Participant, Protocol, Source
from repro.verify import verify

REDUCED = ROOT / "protocols" / "cage2-ccs-sleeper-reduced.json"
SCENARIO = ROOT.parent / "shared" / "cage2" / "scenario"
_PINS = "$.adapter.options.scenario_sha256"
_TREE = "$.adapter.options.simulator_tree_sha256"

_digests = st.text("0123456789abcdef", min_size=64, max_size=64)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _cyborg(
    scenario: dict[str, str], tree: str | None, agent_pin: str | None = None
) -> tuple[Protocol, list[Source]]:
    """The reduced CAGE-2 protocol pinning ``scenario`` and ``tree`` (and, with ``agent_pin``,
    an agent_class participant ``mine`` pinned so), with the sources that match every pin."""
    protocol = parse_protocol(REDUCED.read_bytes())
    options: dict[str, Any] = {"backend": "auto", "scenario_sha256": dict(scenario)}
    sources = [Source("file", SCENARIO_ROLE, name, sha, 1) for name, sha in scenario.items()]
    sources.append(Source("package", "simulator", "csle-cyborg", version="0.1"))
    if tree is not None:
        options["simulator_tree_sha256"] = tree
        sources.append(Source("directory", TREE_ROLE, "csle_cyborg", tree, 10))
    participants = list(protocol.participants)
    if agent_pin is not None:
        params = {"target": "mine:Agent", "sha256": agent_pin}
        participants.append(Participant("mine", "agent_class", params))
        sources.append(Source("file", agent_role("mine"), "mine.py", agent_pin, 3))
    protocol = attrs.evolve(
        protocol,
        adapter=attrs.evolve(protocol.adapter, options=options),
        participants=tuple(participants),
    )
    return protocol, sources


_scenarios = st.dictionaries(
    st.sampled_from(["Scenario2.yaml", *(f"images/h{i}.yaml" for i in range(6))]),
    _digests,
    min_size=1,
)


@pytest.mark.slow
@given(_scenarios, st.none() | _digests, st.none() | _digests)
def test_matching_sources_have_no_problem(
    scenario: dict[str, str], tree: str | None, agent: str | None
) -> None:
    """A ledger that records every pinned digest under its pin's role (and name) gives no
    problem, in whatever order its sources come."""
    protocol, sources = _cyborg(scenario, tree, agent)
    assert ledger_problems(protocol, sources) == []
    assert ledger_problems(protocol, sources[::-1]) == []


@pytest.mark.slow
@given(_scenarios, _digests, _digests, st.data())
def test_each_changed_source_is_exactly_its_problem(
    scenario: dict[str, str], tree: str, agent: str, data: st.DataObject
) -> None:
    """A ledger source whose digest is not its pin's gives exactly one problem: that pin's JSON
    path, the pinned digest and the digest recorded."""
    protocol, sources = _cyborg(scenario, tree, agent)
    i = data.draw(st.sampled_from([i for i, s in enumerate(sources) if s.sha256 is not None]))
    other = data.draw(_digests.filter(lambda d: d != sources[i].sha256))
    changed = sources.copy()
    changed[i] = attrs.evolve(sources[i], sha256=other)
    source = sources[i]
    if source.role == SCENARIO_ROLE:
        path = f'{_PINS}["{source.name}"]'
    elif source.role == TREE_ROLE:
        path = _TREE
    else:
        path = f"$.participants[{len(protocol.participants) - 1}].params.sha256"
    assert ledger_problems(protocol, changed) == [
        PinProblem(path, ledger_problems(protocol, changed)[0].what, str(source.sha256), other)
    ]


def test_a_missing_or_unpinned_source_is_a_problem() -> None:
    """A pinned source the ledger lacks is 'missing'; a scenario file the ledger records that
    the pins leave out is pinned at 'nothing'; two tree sources are both named."""
    scenario = {"Scenario2.yaml": _sha("s"), "images/a.yaml": _sha("a")}
    protocol, sources = _cyborg(scenario, _sha("tree"))
    without_tree = [s for s in sources if s.role != TREE_ROLE]
    assert ledger_problems(protocol, without_tree) == [
        PinProblem(_TREE, "the simulator's tree", _sha("tree"), "missing")
    ]
    extra = [*sources, Source("file", SCENARIO_ROLE, "images/b.yaml", _sha("b"), 1)]
    assert ledger_problems(protocol, extra) == [
        PinProblem(_PINS, "scenario file images/b.yaml", "nothing", _sha("b"))
    ]
    twice = [*sources, Source("directory", TREE_ROLE, "CybORG", _sha("other"), 1)]
    assert ledger_problems(protocol, twice) == [
        PinProblem(_TREE, "the simulator's tree", _sha("tree"), f"{_sha('tree')}, {_sha('other')}")
    ]


@pytest.mark.parametrize(
    ("options", "path"),
    [
        ({"scenario_sha256": []}, _PINS),
        ({"scenario_sha256": {}}, _PINS),
        ({"scenario_sha256": {"Scenario2.yaml": 7}}, f'{_PINS}["Scenario2.yaml"]'),
        ({"simulator_tree_sha256": "ABC"}, _TREE),
    ],
)
def test_malformed_pins_in_a_bundle_are_problems(options: dict[str, Any], path: str) -> None:
    """A bundle's protocol may hold pins its freeze would have refused: each is a problem at
    its path, never an exception."""
    protocol, sources = _cyborg({"Scenario2.yaml": _sha("s")}, None)
    protocol = attrs.evolve(protocol, adapter=attrs.evolve(protocol.adapter, options=options))
    problems = ledger_problems(protocol, sources)
    assert problems is not None and len(problems) == 1
    assert problems[0].path.startswith(path)


def test_gymnasium_policy_pins_and_unknown_adapters() -> None:
    """A gymnasium callable's params.sha256 names its 'policy ID' source; the command adapter
    pins nothing in its protocol; an adapter without a rule (a third party's) is not checked."""
    protocol = parse_protocol(REDUCED.read_bytes())
    pin = _sha("policy")
    gym = attrs.evolve(
        protocol,
        adapter=attrs.evolve(protocol.adapter, name="gymnasium", options={}),
        participants=(Participant("p", "callable", {"target": "m:f", "sha256": pin}),),
    )
    source = Source("file", policy_role("p"), "m.py", pin, 1)
    assert ledger_problems(gym, [source]) == []
    assert ledger_problems(gym, [attrs.evolve(source, sha256=_sha("x"))]) == [
        PinProblem("$.participants[0].params.sha256", "policy p", pin, _sha("x"))
    ]
    command = attrs.evolve(gym, adapter=attrs.evolve(gym.adapter, name="command"))
    assert ledger_problems(command, []) == []
    third = attrs.evolve(gym, adapter=attrs.evolve(gym.adapter, name="dice"))
    assert ledger_problems(third, []) is None


_missing = importlib.util.find_spec("csle_cyborg") is None or not SCENARIO.is_dir()
if _missing and os.environ.get("REPRO_REQUIRE_CYBORG"):
    raise RuntimeError(f"REPRO_REQUIRE_CYBORG is set but csle-cyborg or {SCENARIO} is missing")
needs_cyborg = pytest.mark.skipif(_missing, reason="csle-cyborg or ../shared/cage2 not available")


@pytest.fixture(scope="module")
def tree_pinned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reduced CCS Sleeper protocol, two episodes per condition, on csle-cyborg with its
    tree pinned as well as every scenario file."""
    from repro.adapters._cyborg import simulator_tree_source

    spec = importlib.util.find_spec("csle_cyborg")
    assert spec is not None and spec.origin is not None
    package = Path(spec.origin).parent
    data = json.loads(REDUCED.read_text())
    data["runs_per_condition"] = 2
    data["adapter"]["options"]["backend"] = "csle-cyborg"
    tree = simulator_tree_source(package, package.name).sha256
    data["adapter"]["options"]["simulator_tree_sha256"] = tree
    root = tmp_path_factory.mktemp("pins")
    protocol = root / "pinned.json"
    protocol.write_text(json.dumps(data))
    return run_study(protocol, root / "bundle", None, {"scenario_dir": str(SCENARIO)})


def _forged(bundle: Path, tmp_path: Path, role: str, name: str | None = None) -> Path:
    """A copy of ``bundle`` whose ledger records another digest for the source of ``role``
    (and ``name``), sealed and re-derived as a forger with repro at hand would."""
    copy_ = tmp_path / "forged"
    shutil.copytree(bundle, copy_)

    def edit(sources: list[dict[str, Any]]) -> None:
        hits = [s for s in sources if s["role"] == role and name in (None, s["name"])]
        assert len(hits) == 1
        hits[0]["sha256"] = _sha("another simulator")

    forge_ledger(copy_, edit)
    return copy_


@needs_cyborg
@pytest.mark.slow  # each test needs a CAGE-2 study (tree_pinned)
class TestForgedLedger:
    """verify applies the pins to the bundle's own ledger."""

    def test_the_pinned_bundle_verifies(self, tree_pinned: Path) -> None:
        """The study's bundle, tree pinned, verifies with no finding."""
        assert verify(tree_pinned) == []

    def test_another_simulator_tree_is_named(self, tree_pinned: Path, tmp_path: Path) -> None:
        """A ledger rewritten to record another simulator tree than the protocol pins, every
        derived file and both manifests regenerated, fails with ledger-pin alone (exit 1)."""
        forged = _forged(tree_pinned, tmp_path, TREE_ROLE)
        findings = verify(forged)
        assert [(f.code, f.expected, f.found) for f in findings] == [
            (
                "ledger-pin",
                json.loads((forged / "data/protocol.json").read_text())["protocol"]["adapter"][
                    "options"
                ]["simulator_tree_sha256"],
                _sha("another simulator"),
            )
        ]
        assert findings[0].file == "data/source-ledger.json"
        done = CliRunner().invoke(app, ["verify", "--json", str(forged)])
        assert done.exit_code == errors.EXIT_VERIFY_FAILED
        assert [f["code"] for f in json.loads(done.stdout)["findings"]] == ["ledger-pin"]

    def test_another_scenario_file_is_named(self, tree_pinned: Path, tmp_path: Path) -> None:
        """A ledger rewritten to record another digest of one scenario file fails with
        ledger-pin at that file's pin."""
        forged = _forged(tree_pinned, tmp_path, SCENARIO_ROLE, "images/Gateway_image.yaml")
        findings = verify(forged)
        assert [f.code for f in findings] == ["ledger-pin"]
        assert '["images/Gateway_image.yaml"]' in findings[0].what
        assert findings[0].found == _sha("another simulator")
