"""CAGE-2 through csle-cyborg and the shared Scenario2 files, end to end on real data.

Skipped when csle-cyborg or ../shared/cage2 is absent, unless REPRO_REQUIRE_CYBORG is set (as the
nox tests session does), in which case their absence fails the run.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import bagit
import pytest
from typer.testing import CliRunner

from conftest import ROOT, bundle_digests, run_study
from repro._cli.app import app
from repro._derive.reproduction import reproduction
from repro._execute.studies import Backend, DaskCluster, LocalWorkers
from repro._json.serde import structure
from repro._protocol.freeze import freeze
from repro.models import Aggregates, FrozenProtocol
from repro.verify import verify
from study_driver import events_printed

SCENARIO = ROOT.parent / "shared" / "cage2" / "scenario"
REDUCED = ROOT / "protocols" / "cage2-ccs-sleeper-reduced.json"
PER_RUN = ROOT / "protocols" / "cage2-ccs-sleeper-per-run.json"
FULL = ROOT / "protocols" / "cage2-ccs-sleeper.json"
_missing = importlib.util.find_spec("csle_cyborg") is None or not SCENARIO.is_dir()
if _missing and os.environ.get("REPRO_REQUIRE_CYBORG"):
    raise RuntimeError(f"REPRO_REQUIRE_CYBORG is set but csle-cyborg or {SCENARIO} is missing")
# Slow: CAGE-2 studies on csle-cyborg and upstream CybORG.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(_missing, reason="csle-cyborg or ../shared/cage2 not available"),
]

runner = CliRunner()


def _study(
    protocol: dict[str, Any],
    tmp_path: Path,
    name: str = "bundle",
    backend: Backend | None = None,
    keep_going: bool = False,
) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(protocol))
    options = {"scenario_dir": str(SCENARIO)}
    return run_study(path, tmp_path / name, backend, options, keep_going)


def _small(runs: int) -> dict[str, Any]:
    data = json.loads(REDUCED.read_text())
    data["runs_per_condition"] = runs
    return data


def _cli_study(protocol: Path, out: Path) -> Path:
    """``repro study PROTOCOL --out OUT`` through the CLI on csle-cyborg and the shared
    scenario files; its exit code must be 0."""
    result = runner.invoke(
        app, ["study", str(protocol), "--out", str(out), "--option", f"scenario_dir={SCENARIO}"]
    )
    assert result.exit_code == 0, result.output
    return out


def _verify_without_cyborg(bundle: Path) -> subprocess.CompletedProcess[str]:
    """``repro verify BUNDLE`` in a process where neither CybORG distribution can be imported;
    its exit code must be 0."""
    code = (
        "import sys; sys.modules['csle_cyborg'] = None; sys.modules['CybORG'] = None\n"
        "from repro._cli.app import main; sys.argv = ['repro', 'verify', sys.argv[1]]; main()"
    )
    done = subprocess.run([sys.executable, "-c", code, str(bundle)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done


def _json(bundle: Path, name: str) -> Any:
    return json.loads((bundle / "data" / name).read_text())


def _at_thirty(data: dict[str, Any]) -> dict[str, Any]:
    """A CAGE-2 protocol of protocols/ at trial length 30 alone: its conditions against the
    three red agents, in the same loop order, judged against the published means of those (the
    published total is the nine conditions', so it goes) and with the contrasts between them."""
    data = json.loads(json.dumps(data))
    assert data["matrix"][0]["name"] == "trial_length"
    data["matrix"][0]["levels"] = [30]
    if "published" in data:
        published = data["published"]
        published["conditions"] = [
            c for c in published["conditions"] if c["factors"]["trial_length"] == 30
        ]
        del published["estimand"]
    if "contrasts" in data:
        family = data["contrasts"]["family"]
        data["contrasts"]["family"] = [c for c in family if c["a"]["factors"]["trial_length"] == 30]
    return data


@attrs.frozen
class _Counted:
    """A study run to the end through tests/study_driver.py: its protocol file, its bundle and
    how many bundle events it had (for choosing where to stop the same study)."""

    protocol: Path
    bundle: Path
    events: int


@pytest.fixture(scope="module")
def short_stream(tmp_path_factory: pytest.TempPathFactory) -> _Counted:
    """The reduced CCS Sleeper protocol at trial length 30 (:func:`_at_thirty`): 60 episodes
    on one random.seed(153) stream in three partitions, a state kept every 10 slots, as a
    continuation, a replay and an audit of every slot need them, at a sixth of the reduced
    protocol's steps. Run once through the driver, which counts its bundle events."""
    base = tmp_path_factory.mktemp("cage2-short")
    protocol = base / "short.json"
    protocol.write_text(json.dumps(_at_thirty(json.loads(REDUCED.read_text()))))
    done = _driven("0", "study", str(protocol), "--out", str(base / "bundle"))
    assert done.returncode == 0, done.stderr
    events = events_printed(done.stderr)
    return _Counted(protocol, base / "bundle", events)


def _driven(at: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``repro ARGS --option scenario_dir=...`` through tests/study_driver.py, which stops the
    study at bundle event ``at`` (``N:INT``, ``N`` for SIGKILL, ``0`` never)."""
    driver = Path(__file__).with_name("study_driver.py")
    return subprocess.run(
        [sys.executable, str(driver), at, "--", *args, "--option", f"scenario_dir={SCENARIO}"],
        capture_output=True,
        text=True,
        check=False,
        timeout=1800,
    )


class TestContinued:
    """The CCS Sleeper protocol (stream seeding), at trial length 30, stopped part-way and
    continued."""

    def test_continued_runs_are_the_uninterrupted_ones(
        self, short_stream: _Counted, tmp_path: Path
    ) -> None:
        """Stopped by SIGINT about half-way through its bundle events and by SIGKILL at a point
        drawn at random, each continued study's runs and checkpoint files equal the
        uninterrupted study's byte for byte, its account says where the stream was taken up
        again, and it verifies with the continuation tier passing and the uninterrupted
        study's reproduction class."""
        protocol, events = short_stream.protocol, short_stream.events
        runs = short_stream.bundle / "data" / "runs"
        expected = {p.name: p.read_bytes() for p in runs.iterdir()}
        assert len([name for name in expected if name.endswith(".jsonl")]) == 3
        point = random.Random("cage2-continue").randrange(events // 5, events * 4 // 5)
        for at in (f"{events // 2}:INT", str(point)):
            old, new = tmp_path / f"old-{at}", tmp_path / f"new-{at}"
            stopped = _driven(at, "study", str(protocol), "--out", str(old))
            assert stopped.returncode != 0, stopped.stderr
            result = runner.invoke(
                app,
                [
                    "study",
                    str(protocol),
                    "--out",
                    str(new),
                    "--continue-from",
                    str(old),
                    "--option",
                    f"scenario_dir={SCENARIO}",
                ],
            )
            assert result.exit_code == 0, result.output
            found = {p.name: p.read_bytes() for p in (new / "data" / "runs").iterdir()}
            assert found == expected, at
            account = _json(new, "continuation.json")
            assert account["schema"] == "repro.continuation/2" and account["carried"], account
            assert account["rejoined"]["partition"] == account["carried"][-1]["partition"]
            assert verify(new) == []
            tiers = _json(new, "tiers.json")
            assert {t["name"]: t["verdict"] for t in tiers["tiers"]}["continuation"] == "pass"
            assert (
                tiers["reproduction"]["verdict"]
                == _json(short_stream.bundle, "tiers.json")["reproduction"]["verdict"]
            )


class TestReplay:
    """repro replay and audit on the CCS Sleeper protocol at trial length 30 (stream mode)."""

    def test_last_slot_of_a_partition_replays_from_the_nearest_kept_state(
        self, short_stream: _Counted
    ) -> None:
        """Replaying the 20th episode of the second condition re-executes the 10 slots from the
        state kept before its 11th (one every 10 slots, the default), in a fresh session, and
        every record is byte-identical: a CAGE-2 run depends on the stream's state alone."""
        bundle = str(short_stream.bundle)
        result = runner.invoke(
            app, ["replay", bundle, "c01-r0019", "--option", f"scenario_dir={SCENARIO}"]
        )
        assert result.exit_code == 0, result.output
        assert (
            "replayed 10 slot(s) of c01 from its checkpoint (the state kept before c01-r0010)"
        ) in result.stdout
        assert "byte-identical" in result.stdout

    def test_an_audit_of_every_slot_chains_every_kept_state(self, short_stream: _Counted) -> None:
        """repro audit --all re-executes the 60 episodes stretch by stretch, each from a kept
        state in a fresh session, and each stretch ends in the next kept state (the next
        checkpoint, or the next partition's first): 5 links across three partitions, none
        broken."""
        result = runner.invoke(
            app,
            [
                "audit",
                str(short_stream.bundle),
                "--all",
                "--json",
                "--option",
                f"scenario_dir={SCENARIO}",
            ],
        )
        assert result.exit_code == 0, result.output
        found = json.loads(result.stdout)
        assert (found["identical"], found["attempts"], len(found["slots"])) == (True, 60, 60)
        assert [c["matched"] for c in found["chained"]] == [True] * 5


class TestReducedStudy:
    """The reduced CCS Sleeper protocol (published matrix, 20 episodes) on real data."""

    def test_verifies_offline(self, cage2_reduced: Path) -> None:
        """The bundle verifies, and bagit-python validates it."""
        assert verify(cage2_reduced) == []
        bagit.Bag(str(cage2_reduced)).validate()

    def test_verifies_without_cyborg(self, cage2_reduced: Path, tmp_path: Path) -> None:
        """A copied bundle verifies in a process where CybORG cannot be imported."""
        copy_ = tmp_path / "copy"
        shutil.copytree(cage2_reduced, copy_)
        done = _verify_without_cyborg(copy_)
        assert "verifies" in done.stdout

    def test_tier_verdicts(self, cage2_reduced: Path) -> None:
        """All six tiers: sources, contract, execution and outcome pass; state/observation is
        weakened because only the blue view is observed; disclosure passes."""
        verdicts = {t["name"]: t["verdict"] for t in _json(cage2_reduced, "tiers.json")["tiers"]}
        assert verdicts == {
            "authored-source": "pass",
            "contract": "pass",
            "execution-control": "pass",
            "state-observation": "weakened",
            "outcome-evaluation": "pass",
            "disclosure": "pass",
        }

    def test_class_on_twenty_episodes(self, cage2_reduced: Path) -> None:
        """With 20 episodes per condition the published total's narrow interval (n=1000)
        excludes the observed total, so mutual containment fails: class 'failed', while every
        observed interval still contains its published value."""
        rep = _json(cage2_reduced, "tiers.json")["reproduction"]
        assert rep["verdict"] == "failed"
        total = next(f for f in rep["figures"] if f["figure"] == "estimand value")
        assert total["published_interval_contains_observed"] is False
        assert all(f["observed_interval_contains_published"] is not False for f in rep["figures"])

    def test_pins_every_scenario_file(self, cage2_reduced: Path) -> None:
        """The ledger pins Scenario2.yaml and every image file by sha256, with no host path."""
        sources = {s["name"]: s for s in _json(cage2_reduced, "source-ledger.json")["sources"]}
        expected = hashlib.sha256((SCENARIO / "Scenario2.yaml").read_bytes()).hexdigest()
        assert sources["Scenario2.yaml"]["sha256"] == expected
        images = [n for n in sources if n.startswith("images/")]
        assert len(images) == len(list((SCENARIO / "images").glob("*.yaml")))
        assert str(SCENARIO) not in (cage2_reduced / "data/source-ledger.json").read_text()

    def test_records_the_source_disagreement(self, cage2_reduced: Path) -> None:
        """The shipped evaluator's 100 episodes and missing seed are recorded and reported."""
        ledger = _json(cage2_reduced, "source-ledger.json")
        assert "sets no seed" in ledger["disagreements"][0]["source"]
        assert "Source disagreement" in (cage2_reduced / "data/validation-report.md").read_text()


@pytest.fixture(scope="module")
def per_run_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The per-run protocol in protocols/, run once serially through the CLI."""
    out = tmp_path_factory.mktemp("cage2-per-run") / "bundle"
    return _cli_study(PER_RUN, out)


@pytest.fixture(scope="module")
def per_run_short(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The per-run protocol at trial length 30 (:func:`_at_thirty`: three conditions of 20
    episodes), run once serially: what other ways of running it must write byte for byte."""
    data = _at_thirty(json.loads(PER_RUN.read_text()))
    return _study(data, tmp_path_factory.mktemp("cage2-per-run-short"), "serial")


class TestPerRunStudy:
    """The per-run CCS Sleeper protocol: each episode a function of its slot's seed alone, so
    the partitions may run anywhere. CybORG draws from Python's global generator; this holds
    because the worker seeds it from the slot's seed before each run and the adapter resets the
    environment first."""

    def test_says_it_is_not_the_leaderboards_seeding(self) -> None:
        """The protocol is the reduced one with per-run seeding, and its title, description and
        recorded disagreement say that its episodes are not the leaderboard's."""
        data, reduced = json.loads(PER_RUN.read_text()), json.loads(REDUCED.read_text())
        assert data["seeding"] == {"mode": "per-run", "seed": 153}
        assert "not the leaderboard's seeding" in data["title"]
        assert "not the leaderboard's" in data["description"]
        assert "per-run" in data["disagreements"][0]["resolution"]
        same = {"adapter", "matrix", "participants", "measure", "estimand", "published"}
        assert {k: data[k] for k in same} == {k: reduced[k] for k in same}

    def test_verifies(self, per_run_bundle: Path) -> None:
        """The serial bundle verifies and records per-run seeding in execution-control."""
        assert verify(per_run_bundle) == []
        tiers = _json(per_run_bundle, "tiers.json")["tiers"]
        control = next(t for t in tiers if t["name"] == "execution-control")
        assert any("seeding per-run (master seed 153)" in e for e in control["evidence"])

    def test_two_workers_write_the_same_bundle(self, per_run_short: Path, tmp_path: Path) -> None:
        """Two local workers write the same bytes as serial execution in every file but
        environment.json and the tag files that digest it (the protocol at trial length 30,
        :func:`_at_thirty`); a slot in the middle of a partition then replays alone, byte for
        byte."""
        parallel = _study(
            _at_thirty(json.loads(PER_RUN.read_text())), tmp_path, "w2", LocalWorkers(2)
        )
        assert bundle_digests(parallel) == bundle_digests(per_run_short)
        result = runner.invoke(
            app, ["replay", str(parallel), "c02-r0003", "--option", f"scenario_dir={SCENARIO}"]
        )
        assert result.exit_code == 0, result.output
        assert "c02-r0003: replayed alone from its seed; 1 attempt(s); byte-identical" in (
            result.stdout
        )

    def test_a_dask_cluster_writes_the_same_bundle(
        self, per_run_short: Path, dask_scheduler: str, tmp_path: Path
    ) -> None:
        """A Dask cluster (2 worker processes) writes the same bytes as serial execution in
        every file but environment.json and the tag files that digest it (the protocol at
        trial length 30)."""
        data = _at_thirty(json.loads(PER_RUN.read_text()))
        on_dask = _study(data, tmp_path, "dask", DaskCluster(dask_scheduler))
        assert bundle_digests(on_dask) == bundle_digests(per_run_short)

    def test_an_episode_does_not_depend_on_the_ones_before(
        self, per_run_bundle: Path, tmp_path: Path
    ) -> None:
        """With the first two slots of every condition excluded, so that each condition's
        session starts at its third episode, every episode that runs in both studies has the
        same record (measure and trace digest) in both (at trial length 30 against the shipped
        protocol's bundle, whose first three conditions are those: a slot's seed is its own)."""
        data = _at_thirty(json.loads(PER_RUN.read_text()))
        data["runs_per_condition"] = 5
        data["exclusions"] = [
            {"slot": f"c{c:02d}-r{r:04d}", "reason": "r"} for c in range(3) for r in range(2)
        ]
        later = _study(data, tmp_path, "later")

        def lines(bundle: Path) -> dict[str, str]:
            return {
                json.loads(line)["slot"]: line
                for path in sorted((bundle / "data/runs").glob("*.jsonl"))
                for line in path.read_text().splitlines()
                if json.loads(line)["status"] != "excluded"
            }

        ran_later, ran_first = lines(later), lines(per_run_bundle)
        assert len(ran_later) == 9
        assert ran_later == {slot: ran_first[slot] for slot in ran_later}


class TestEvaluatorLoop:
    """The adapter runs exactly the leaderboard evaluator's loop."""

    def test_same_episodes_as_bare_loop(self, tmp_path: Path) -> None:
        """With random.seed(153) set once, repro's per-episode returns equal the bare
        evaluator loop's, episode by episode, up to summation rounding: three episodes of each
        red agent at trial length 30 (:func:`_at_thirty`), nine on one stream. (The nine
        conditions in the evaluator's order are the reduced study's, exact to the published
        figures: TestReducedStudy.)"""
        sys.path.insert(0, str(ROOT / "benchmarks"))
        try:
            from cage2_overhead import bare_loop
        finally:
            sys.path.remove(str(ROOT / "benchmarks"))
        out = _study(_at_thirty(_small(3)), tmp_path)
        repro = [
            [json.loads(line)["measure"] for line in path.read_text().splitlines()]
            for path in sorted((out / "data/runs").glob("c*.jsonl"))
        ]
        bare = bare_loop(SCENARIO, 3, trial_lengths=(30,))
        assert len(repro) == len(bare) == 3
        for ours, theirs in zip(repro, bare, strict=True):
            assert ours == pytest.approx(theirs, abs=1e-9)


class TestClassesOnRealData:
    """unavailable and bounded, on real CAGE-2 episodes."""

    def test_bounded_without_published_total(self, cage2_reduced: Path) -> None:
        """Judged against the published condition means alone (no total and so no published
        interval), the reduced study's real aggregates are bounded: every observed interval
        contains its published mean, and most means differ at two decimals."""
        fp = structure(_json(cage2_reduced, "protocol.json"), FrozenProtocol, what="protocol")
        published = attrs.evolve(fp.protocol.published, estimand=None)
        fp = freeze(attrs.evolve(fp.protocol, published=published))
        agg = structure(_json(cage2_reduced, "aggregates.json"), Aggregates, what="aggregates")
        rep = reproduction(fp, agg, 0)
        assert rep.verdict == "bounded", rep.reason

    def test_unavailable_when_incomplete(self, tmp_path: Path) -> None:
        """A blue agent class that fails every attempt leaves the plan incomplete: unavailable,
        with every slot recorded failed and listed as a loss (the study run whole, past the
        early stop)."""
        data = _small(2)
        data["participants"] = [
            {
                "id": "broken",
                "kind": "agent_class",
                "params": {"target": "repro_test_policies:BrokenBlue"},
            }
        ]
        out = _study(data, tmp_path, keep_going=True)
        rep = _json(out, "tiers.json")["reproduction"]
        assert rep["verdict"] == "unavailable" and "incomplete" in rep["reason"]
        losses = _json(out, "source-ledger.json")["losses"]
        assert len(losses) == 18
        # The agent failed, not the simulator: its own cause family.
        assert {loss["cause"] for loss in losses} == {"policy-error:RuntimeError"}
        assert verify(out) == []

    def test_unavailable_without_published(self, tmp_path: Path) -> None:
        """Without published figures the class is unavailable."""
        data = _small(2)
        del data["published"]
        rep = _json(_study(data, tmp_path), "tiers.json")["reproduction"]
        assert rep["verdict"] == "unavailable"


class TestPinsAndGuards:
    """Refusals before anything runs, and the narrow import guard."""

    def test_modified_scenario_file_refused(self, tmp_path: Path) -> None:
        """A scenario file whose sha256 differs from the protocol's pin refuses the run:
        exit 2, the file named, nothing written."""
        scenario = tmp_path / "scenario"
        shutil.copytree(SCENARIO, scenario)
        image = scenario / "images" / "Gateway_image.yaml"
        image.chmod(0o644)
        image.write_bytes(image.read_bytes() + b"\n")
        out = tmp_path / "out"
        result = runner.invoke(
            app, ["study", str(REDUCED), "--out", str(out), "--option", f"scenario_dir={scenario}"]
        )
        assert result.exit_code == 2
        assert "images/Gateway_image.yaml" in result.stderr
        assert "$.adapter.options.scenario_sha256" in result.stderr
        assert not out.exists()

    def test_unknown_red_agent_refused(self, tmp_path: Path) -> None:
        """An unknown red agent is refused with its JSON path."""
        data = _small(1)
        data["matrix"][1]["levels"][2] = "PurpleAgent"
        del data["published"]
        path = tmp_path / "p.json"
        path.write_text(json.dumps(data))
        result = runner.invoke(app, ["study", str(path), "--out", str(tmp_path / "o")])
        assert result.exit_code == 2 and "$.matrix[1].levels[2]" in result.stderr

    def test_import_guard_leaves_nothing_behind(self) -> None:
        """Loading csle-cyborg leaves no stand-in stable_baselines3 and no torch in
        sys.modules, and SciPy still works afterwards."""
        code = (
            "import sys\n"
            "from repro.adapters._cyborg import load_backend\n"
            "load_backend('csle-cyborg')\n"
            "assert 'stable_baselines3' not in sys.modules, 'stub left behind'\n"
            "assert 'torch' not in sys.modules, 'torch imported'\n"
            "from scipy import stats\n"
            "assert abs(stats.t.ppf(0.975, 10) - 2.228138851986274) < 1e-12\n"
            "print('ok')\n"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr

    def test_agent_class_pinned(self, tmp_path: Path) -> None:
        """An importable blue agent class is pinned by its module file's sha256 and runs."""
        data = _small(1)
        digest = hashlib.sha256((ROOT / "tests/repro_test_policies.py").read_bytes()).hexdigest()
        data["participants"] = [
            {
                "id": "sleepy",
                "kind": "agent_class",
                "params": {"target": "repro_test_policies:SleepyBlue", "sha256": digest},
            }
        ]
        del data["published"]
        out = _study(data, tmp_path)
        names = {s["name"]: s.get("sha256") for s in _json(out, "source-ledger.json")["sources"]}
        assert names["repro_test_policies.py"] == digest
        assert verify(out) == []

    def test_agent_class_next_to_the_protocol(self, tmp_path: Path) -> None:
        """A blue agent class in a module beside the protocol file, on no import path, is found
        there (in the study's parent and its worker), pinned by its file and runs valid."""
        (tmp_path / "cage_blue_beside.py").write_text(
            "class Sleeper:\n"
            "    def get_action(self, observation, action_space):\n"
            "        return 0\n\n"
            "    def end_episode(self):\n"
            "        pass\n",
            "utf-8",
        )
        data = _small(1)
        data["participants"] = [
            {
                "id": "beside",
                "kind": "agent_class",
                "params": {"target": "cage_blue_beside:Sleeper"},
            }
        ]
        del data["published"]
        out = _study(data, tmp_path)
        ledger = _json(out, "source-ledger.json")
        assert any(s["name"] == "cage_blue_beside.py" for s in ledger["sources"])
        assert ledger["losses"] == []
        assert verify(out) == []


#: The environment with upstream CybORG 2.1 at 606813b that the nox tests session makes
#: (noxfile.py, ``_upstream_cyborg``), or None.
UPSTREAM_PYTHON = os.environ.get("REPRO_UPSTREAM_PYTHON")
if UPSTREAM_PYTHON is None and os.environ.get("REPRO_REQUIRE_CYBORG"):
    raise RuntimeError("REPRO_REQUIRE_CYBORG is set but REPRO_UPSTREAM_PYTHON is not")
needs_upstream = pytest.mark.skipif(
    UPSTREAM_PYTHON is None, reason="no environment with upstream CybORG (REPRO_UPSTREAM_PYTHON)"
)


def _upstream_study(protocol: Path, out: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """``repro study`` in the upstream environment, with backend ``cyborg``: no scenario
    directory, as upstream finds its scenario files inside its package."""
    assert UPSTREAM_PYTHON is not None
    args = [UPSTREAM_PYTHON, "-m", "repro", "study", str(protocol), "--out", str(out)]
    args += ["--option", "backend=cyborg", *options]
    return subprocess.run(args, capture_output=True, text=True, cwd=ROOT)


def _run_files(bundle: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((bundle / "data/runs").glob("*.jsonl"))}


@pytest.fixture(scope="module")
def upstream_reduced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reduced CCS Sleeper protocol, run on upstream CybORG at 606813b."""
    out = tmp_path_factory.mktemp("upstream") / "bundle"
    done = _upstream_study(REDUCED, out)
    assert done.returncode == 0, done.stderr
    return out


@needs_upstream
class TestUpstreamBackend:
    """Upstream CybORG for real: the package at the leaderboard's commit, module ``CybORG``,
    its scenario files inside the package, its 4-value ``step``."""

    def test_finds_its_own_scenario_files(self, upstream_reduced: Path) -> None:
        """With no scenario directory given, upstream's own Scenario2 files are read, and they
        match every pin of the protocol (the same files as ../shared/cage2/scenario)."""
        assert verify(upstream_reduced) == []
        ledger = _json(upstream_reduced, "source-ledger.json")
        assert ledger["adapter"]["version"] == "CybORG 2.1"
        pins = json.loads(REDUCED.read_text())["adapter"]["options"]["scenario_sha256"]
        scenario = {s["name"]: s["sha256"] for s in ledger["sources"] if s["role"] == "scenario"}
        assert scenario == pins
        simulator = {s["role"]: s["name"] for s in ledger["sources"]}
        assert simulator["simulator Main"] == "CybORG/CybORG.py"

    def test_signed_and_audited_on_upstream(self, upstream_reduced: Path, tmp_path: Path) -> None:
        """The round trip on the reduced CCS Sleeper bundle made by upstream: the author signs
        it, a reviewer audits a sample of its 180 slots on upstream (each from the nearest kept
        state, chained to the next) and signs that, and verify with both keys trusted passes
        and reports the audit. Six slots, not the 59 the docs suggest: each drawn slot
        re-executes its whole stretch of up to ten episodes, and 59 draws re-execute nearly all
        180 episodes without checking anything six do not."""
        from test_signatures import openssh_key

        root = tmp_path / "bundle"
        shutil.copytree(upstream_reduced, root)
        author, reviewer = openssh_key(tmp_path / "author"), openssh_key(tmp_path / "reviewer")
        assert runner.invoke(app, ["sign", str(root), "--key", str(author[0])]).exit_code == 0
        assert UPSTREAM_PYTHON is not None
        args = [UPSTREAM_PYTHON, "-m", "repro", "audit", str(root), "--sample", "6", "--json"]
        args += ["--sign", str(reviewer[0]), "--option", "backend=cyborg"]
        done = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        found = json.loads(done.stdout)
        assert (found["identical"], found["population"], len(found["sampled"])) == (True, 180, 6)
        assert found["chained"] and all(c["matched"] for c in found["chained"])
        keys = ["--trusted-key", str(author[1]), "--trusted-key", str(reviewer[1])]
        checked = runner.invoke(app, ["verify", str(root), "--json", *keys])
        assert checked.exit_code == 0, checked.output
        statuses = json.loads(checked.stdout)["signatures"]
        assert sorted((s["kind"], s["status"]) for s in statuses) == [
            ("audit", "verified"),
            ("bundle", "verified"),
            ("provenance", "verified"),
            ("test-result", "verified"),
        ]

    def test_same_runs_byte_for_byte_as_the_fork(
        self, upstream_reduced: Path, cage2_reduced: Path
    ) -> None:
        """The reduced CCS Sleeper protocol gives the same run records, byte for byte, on
        upstream and on csle-cyborg (nine files, 180 episodes on one random.seed(153) stream),
        and so the same aggregates and tier verdicts (their evidence names other sources)."""
        assert _run_files(upstream_reduced) == _run_files(cage2_reduced)
        assert len(_run_files(cage2_reduced)) == 9
        assert _json(upstream_reduced, "aggregates.json") == _json(cage2_reduced, "aggregates.json")
        verdicts = [
            {t["name"]: t["verdict"] for t in _json(b, "tiers.json")["tiers"]}
            for b in (upstream_reduced, cage2_reduced)
        ]
        assert verdicts[0] == verdicts[1]

    def test_compare_says_so_per_tier(self, upstream_reduced: Path, cage2_reduced: Path) -> None:
        """``repro compare`` finds every run equal in every tier and names the simulator's
        sources that differ (the distribution and each pinned simulator file)."""
        result = runner.invoke(app, ["compare", str(cage2_reduced), str(upstream_reduced)])
        assert result.exit_code == 0, result.output
        out = result.stdout
        assert "equal: status 180/180, measure 180/180" in out and "; identical" in out
        for tier in ("execution-control", "state-observation", "outcome-evaluation"):
            assert f"tier {tier}: equal" in out
        assert (
            "source differs: simulator: package csle-cyborg version 0.0.3 in the baseline, "
            "package CybORG version 2.1 in the candidate"
        ) in out
        assert "source differs: simulator Main: file csle_cyborg/main.py" in out


REACT = ROOT / "protocols" / "cage2-sleeper-vs-react-reduced.json"
REACT_FULL = ROOT / "protocols" / "cage2-sleeper-vs-react.json"
#: The reactive agent's every episode against SleepAgent, fed the initial true state: one
#: Monitor then twelve Restores (each -1) in a 13-step cycle, whatever the seed.
SLEEP_CELLS = {30: -27.0, 50: -46.0, 100: -92.0}


@pytest.fixture(scope="module")
def react_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reduced sleeper-versus-React-Restore protocol in protocols/, through the CLI."""
    out = tmp_path_factory.mktemp("cage2-react") / "bundle"
    return _cli_study(REACT, out)


def _react(
    feed: str, red: str = "SleepAgent", lengths: tuple[int, ...] = (30,), runs: int = 2
) -> dict[str, Any]:
    """A small protocol of the shipped reactive agent alone, fed ``feed``."""
    data = json.loads(REACT.read_text())
    data["matrix"] = [
        {"name": "trial_length", "levels": list(lengths)},
        {"name": "red_agent", "levels": [red]},
    ]
    data["participants"] = [
        {
            "id": "react",
            "kind": "shipped",
            "params": {"agent": "BlueReactRestoreAgent", "observation": feed},
        }
    ]
    data["seeding"] = {"mode": "per-run", "seed": 7}
    data["runs_per_condition"] = runs
    del data["contrasts"]
    return data


def _conditions(bundle: Path) -> dict[str, dict[str, Any]]:
    """Each condition's factors and participant, by ID (from aggregates.json)."""
    return {c["condition"]: c for c in _json(bundle, "aggregates.json")["conditions"]}


def _measures(bundle: Path, condition: str) -> list[float]:
    text = (bundle / "data/runs" / f"{condition}.jsonl").read_text()
    return [json.loads(line)["measure"] for line in text.splitlines()]


class TestSleeperVersusReact:
    """The shipped BlueReactRestoreAgent against the Sleeping Agent, per condition, paired by
    common random numbers: the reactive agent fed as the CCS Heuristic row's harness fed it."""

    def test_verifies_offline(self, react_bundle: Path) -> None:
        """The bundle verifies, contrasts.json included, and bagit-python validates it."""
        assert verify(react_bundle) == []
        bagit.Bag(str(react_bundle)).validate()

    def test_sleep_cells_are_the_rows_exactly(self, react_bundle: Path) -> None:
        """Against SleepAgent the reactive agent scores the published row's -27, -46 and -92 in
        every episode (a Restore cycle that does not depend on the seed) and the sleeper 0."""
        for cid, condition in _conditions(react_bundle).items():
            factors = condition["factors"]
            if factors["red_agent"] != "SleepAgent":
                continue
            expected = SLEEP_CELLS[factors["trial_length"]]
            if condition["participant"] == "sleeper":
                expected = 0.0
            assert _measures(react_bundle, cid) == [expected] * 6

    def test_pairs_share_their_seeds(self, react_bundle: Path) -> None:
        """Under seeding.common on the participant, the two participants' slots of one
        condition and replicate have the same seed, and other conditions' differ."""
        seeds: dict[tuple[Any, ...], set[int]] = {}
        conditions = _conditions(react_bundle)
        for plan in sorted((react_bundle / "data/plans").glob("c*.json")):
            for entry in json.loads(plan.read_text())["entries"]:
                factors = conditions[entry["condition"]]["factors"]
                key = (factors["trial_length"], factors["red_agent"], entry["replicate"])
                seeds.setdefault(key, set()).add(entry["seed"])
        assert all(len(s) == 1 for s in seeds.values())
        assert len({next(iter(s)) for s in seeds.values()}) == len(seeds)

    def test_contrast_verdicts(self, react_bundle: Path) -> None:
        """Each condition's contrast is paired over its six replicates. The SleepAgent ones do
        not hold, their difference exactly the agent's cost with a zero-width interval; against
        B_lineAgent the reactive agent's gain holds after Holm's adjustment."""
        found = {c["id"]: c for c in _json(react_bundle, "contrasts.json")["contrasts"]}
        assert len(found) == 9 and _json(react_bundle, "contrasts.json")["multiplicity"] == "holm"
        for length, cost in SLEEP_CELLS.items():
            c = found[f"react-gain-{length}-sleep"]
            assert c["verdict"] == "does-not-hold"
            assert c["estimate"] == cost
            assert (c["interval"]["low"], c["interval"]["high"]) == (cost, cost)
        for length in SLEEP_CELLS:
            c = found[f"react-gain-{length}-bline"]
            assert c["verdict"] == "holds" and c["estimate"] > 0
        assert {c["pairs"] for c in found.values()} == {6}

    def test_ledger_pins_the_shipped_agent(self, react_bundle: Path) -> None:
        """The shipped agent's module is pinned by the sha256 of the installed file, and each
        reactive condition's contract names the agent and what it is fed."""
        import csle_cyborg.agents.simple_agents.blue_react_agent as shipped

        ledger = _json(react_bundle, "source-ledger.json")
        source = next(s for s in ledger["sources"] if s["role"] == "simulator blue agents")
        assert source["sha256"] == hashlib.sha256(Path(shipped.__file__).read_bytes()).hexdigest()
        feeds = {
            (c["participant"], c.get("agent"), c.get("observation"))
            for c in ledger["contracts"].values()
        }
        assert feeds == {
            ("sleeper", None, None),
            ("react-restore", "BlueReactRestoreAgent", "reset-true-state"),
        }

    def test_a_reactive_slot_replays_alone(self, react_bundle: Path) -> None:
        """A slot of the reactive agent replays alone from its seed, byte for byte."""
        reactive = sorted(
            cid for cid, c in _conditions(react_bundle).items() if c["participant"] != "sleeper"
        )
        slot = f"{reactive[1]}-r0004"
        result = runner.invoke(
            app, ["replay", str(react_bundle), slot, "--option", f"scenario_dir={SCENARIO}"]
        )
        assert result.exit_code == 0, result.output
        assert "byte-identical" in result.stdout

    def test_full_protocol_is_the_same_design(self) -> None:
        """The full protocol differs from the reduced one only in its runs, names and the
        seeding disagreement's count; it freezes as it stands."""
        full, reduced = json.loads(REACT_FULL.read_text()), json.loads(REACT.read_text())
        same = {"adapter", "matrix", "participants", "seeding", "measure", "contrasts"}
        assert {k: full[k] for k in same} == {k: reduced[k] for k in same}
        assert (full["runs_per_condition"], reduced["runs_per_condition"]) == (100, 6)
        result = runner.invoke(
            app,
            ["protocol", "check", str(REACT_FULL), "--option", f"scenario_dir={SCENARIO}"],
        )
        assert result.exit_code == 0, result.output

    @needs_upstream
    def test_upstream_differs_only_where_the_fork_s_fix_acts(self, tmp_path: Path) -> None:
        """The protocol at trial length 30 (:func:`_at_thirty`: six conditions of six paired
        episodes) on upstream at 606813b gives the fork's runs byte for byte in every condition
        but the reactive agent's RedMeanderAgent one: there the fork's later fix (3ead7fd: a
        restored User3 or User4 keeps Haraka's version) lets Meander exploit a restored host
        again, which 606813b's HarakaRCE cannot."""
        protocol = tmp_path / "react-30.json"
        protocol.write_text(json.dumps(_at_thirty(json.loads(REACT.read_text()))))
        fork = _cli_study(protocol, tmp_path / "fork")
        done = _upstream_study(protocol, tmp_path / "upstream")
        assert done.returncode == 0, done.stderr
        theirs, ours = _run_files(fork), _run_files(tmp_path / "upstream")
        differing = {name.removesuffix(".jsonl") for name in ours if ours[name] != theirs[name]}
        conditions = _conditions(fork)
        meander = {
            cid
            for cid, c in conditions.items()
            if c["participant"] == "react-restore"
            and c["factors"]["red_agent"] == "RedMeanderAgent"
        }
        assert len(ours) == 6 and set(ours) == set(theirs)
        assert len(meander) == 1 and differing == meander

    def test_the_feed_decides_the_episode(self, tmp_path: Path) -> None:
        """Fed its own raw step observations (blue-steps), the reactive agent against SleepAgent
        monitors, finds nothing and never restores: 0 per episode, not the true-state feed's
        -27."""
        out = _study(_react("blue-steps"), tmp_path, "steps")
        assert verify(out) == []
        (cid,) = _conditions(out)
        assert _measures(out, cid) == [0.0, 0.0]
        out = _study(_react("reset-true-state"), tmp_path, "true-state")
        (cid,) = _conditions(out)
        assert _measures(out, cid) == [-27.0, -27.0]

    def test_blue_steps_reacts_to_an_attack(self, tmp_path: Path) -> None:
        """Against B_lineAgent, fed its raw step observations, the reactive agent's episodes
        verify and differ from the Sleeping Agent's on the same seeds (it acts)."""
        data = _react("blue-steps", red="B_lineAgent", runs=3)
        data["participants"].append({"id": "sleeper", "kind": "sleep", "params": {}})
        data["seeding"]["common"] = ["participant"]
        out = _study(data, tmp_path)
        assert verify(out) == []
        by = {c["participant"]: cid for cid, c in _conditions(out).items()}
        assert _measures(out, by["react"]) != _measures(out, by["sleeper"])

    @pytest.mark.parametrize(
        ("params", "path"),
        [
            ({"agent": "BlueReactRestoreAgent"}, "$.participants[0].params.observation"),
            (
                {"agent": "BlueReactRestoreAgent", "observation": "challenge-wrapper"},
                "$.participants[0].params.observation",
            ),
            (
                {"agent": "BlueLoadAgent", "observation": "blue-steps"},
                "$.participants[0].params.agent",
            ),
            (
                {"agent": "BlueReactRestoreAgent", "observation": "true-state"},
                "$.participants[0].params.observation",
            ),
            (
                {"agent": "BlueReactRestoreAgent", "observation": "blue-steps", "target": "x:Y"},
                "$.participants[0].params",
            ),
        ],
    )
    def test_refused_participants(self, params: dict[str, Any], path: str, tmp_path: Path) -> None:
        """A shipped participant fed ChallengeWrapper's vector (by default or by name), an agent
        not shipped with both distributions, an unknown feed and an unknown key are refused
        before anything runs, exit 2, naming the JSON path."""
        data = _react("blue-steps")
        data["participants"][0]["params"] = params
        protocol = tmp_path / "p.json"
        protocol.write_text(json.dumps(data))
        result = runner.invoke(
            app, ["protocol", "check", str(protocol), "--option", f"scenario_dir={SCENARIO}"]
        )
        assert result.exit_code == 2, result.output
        assert f"@ {path}" in result.output


def test_canonical_observation() -> None:
    """A raw observation's digest bytes name enum members by type and name, addresses by type
    and text, keep the simulator's key order, and are the same for equal observations."""
    import enum
    import ipaddress

    from repro.adapters._cyborg import canonical_observation

    class Kind(enum.Enum):
        A = 1

    obs = {"success": Kind.A, "h": {"IP": ipaddress.IPv4Address("10.0.0.1"), "n": [1, "x"]}}
    assert canonical_observation(obs) == (
        b'{"success":"Kind.A","h":{"IP":"IPv4Address:10.0.0.1","n":[1,"x"]}}'
    )
    assert canonical_observation(dict(reversed(list(obs.items())))) != canonical_observation(obs)


HEURISTIC = ROOT / "protocols" / "cage2-ccs-heuristic.json"
HEURISTIC_REDUCED = ROOT / "protocols" / "cage2-ccs-heuristic-reduced.json"
PUBLISHED_HEURISTIC = ROOT.parent / "shared" / "cage2" / "published-ccs-heuristic.json"


@pytest.fixture(scope="module")
def heuristic_reduced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reduced CCS Heuristic protocol, run on upstream CybORG at 606813b."""
    out = tmp_path_factory.mktemp("heuristic") / "bundle"
    done = _upstream_study(HEURISTIC_REDUCED, out)
    assert done.returncode == 0, done.stderr
    return out


class TestCCSHeuristic:
    """The leaderboard row 'CCS Heuristic / Blue React Restore': the shipped agent fed the
    initial true state, on upstream CybORG pinned at the leaderboard's commit."""

    def test_protocol_is_the_published_row(self) -> None:
        """The full protocol has the row's matrix in leaderboard order, 1000 episodes per
        condition, random.seed(153) once, and every published figure as transcribed; the
        reduced one differs only in its episodes, names and the seeding resolution."""
        full, reduced = json.loads(HEURISTIC.read_text()), json.loads(HEURISTIC_REDUCED.read_text())
        published = json.loads(PUBLISHED_HEURISTIC.read_text())
        assert full["runs_per_condition"] == 1000 and reduced["runs_per_condition"] == 10
        assert full["seeding"] == {"mode": "stream", "seed": 153, "statement": "random.seed(153)"}
        cells = [
            ({"trial_length": c["trial_length"], "red_agent": c["red_agent"]}, c["mean"])
            for c in published["conditions"]
        ]
        assert [(c["factors"], c["mean"]) for c in full["published"]["conditions"]] == cells
        assert full["published"]["estimand"] == {"value": -823.89, "halfwidth": 1.03}
        same = {"adapter", "matrix", "participants", "seeding", "measure", "estimand"}
        same |= {"interval", "criteria", "published"}
        assert {k: full[k] for k in same} == {k: reduced[k] for k in same}
        assert full["criteria"]["bounded"] == "familywise-interval-containment"

    def test_the_fork_is_refused(self, tmp_path: Path) -> None:
        """The tree pin refuses csle-cyborg (it carries the later fix 3ead7fd) before
        anything runs: exit 2, naming the pin's JSON path, nothing written."""
        data = json.loads(HEURISTIC_REDUCED.read_text())
        data["adapter"]["options"]["backend"] = "csle-cyborg"
        protocol = tmp_path / "fork.json"
        protocol.write_text(json.dumps(data))
        out = tmp_path / "out"
        result = runner.invoke(
            app,
            ["study", str(protocol), "--out", str(out), "--option", f"scenario_dir={SCENARIO}"],
        )
        assert result.exit_code == 2, result.output
        assert "@ $.adapter.options.simulator_tree_sha256" in result.output
        assert not out.exists()

    @needs_upstream
    def test_sleep_cells_exact(self, heuristic_reduced: Path) -> None:
        """On upstream at 606813b the three SleepAgent cells equal the published -27, -46 and
        -92 at two decimals (every episode scores them), and the ledger pins the tree."""
        rep = _json(heuristic_reduced, "tiers.json")["reproduction"]
        exact = {f["figure"] for f in rep["figures"] if f["equal_at_precision"]}
        assert {"c02 mean", "c05 mean", "c08 mean"} <= exact
        for cid in ("c02", "c05", "c08"):
            assert len(set(_measures(heuristic_reduced, cid))) == 1
        ledger = _json(heuristic_reduced, "source-ledger.json")
        tree = next(s for s in ledger["sources"] if s["role"] == "simulator tree")
        pin = json.loads(HEURISTIC.read_text())["adapter"]["options"]["simulator_tree_sha256"]
        assert (tree["name"], tree["sha256"]) == ("CybORG", pin)

    @needs_upstream
    def test_verifies_without_cyborg(self, heuristic_reduced: Path, tmp_path: Path) -> None:
        """A copy verifies in a process where neither CybORG distribution can be imported;
        the reduced run's class is honestly failed (ten episodes per condition put its total
        outside the published total's narrow interval)."""
        copy_ = tmp_path / "copy"
        shutil.copytree(heuristic_reduced, copy_)
        _verify_without_cyborg(copy_)
        assert _json(copy_, "tiers.json")["reproduction"]["verdict"] == "failed"

    @needs_upstream
    def test_full_protocol_freezes_on_upstream(self) -> None:
        """The full protocol passes `repro protocol check` on upstream, its tree pin
        included."""
        assert UPSTREAM_PYTHON is not None
        done = subprocess.run(
            [UPSTREAM_PYTHON, "-m", "repro", "protocol", "check", str(HEURISTIC)],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        assert done.returncode == 0, done.stderr


def test_simulator_tree_digest(tmp_path: Path) -> None:
    """The simulator's tree digest covers every .py file by path, size and sha256, ignores
    __pycache__ and other files, changes with any source byte, and refuses a symlinked source."""
    from repro.adapters._cyborg import simulator_tree_source
    from repro.errors import BadInput

    pkg = tmp_path / "Sim"
    (pkg / "sub" / "__pycache__").mkdir(parents=True)
    (pkg / "a.py").write_text("x = 1\n")
    (pkg / "sub" / "b.py").write_text("y = 2\n")
    first = simulator_tree_source(pkg, "Sim")
    (pkg / "sub" / "__pycache__" / "b.cpython-311.pyc").write_bytes(b"\0")
    (pkg / "version.txt").write_text("2.1\n")
    assert simulator_tree_source(pkg, "Sim") == first
    assert (first.role, first.kind, first.size) == ("simulator tree", "directory", 12)
    (pkg / "sub" / "b.py").write_text("y = 3\n")
    assert simulator_tree_source(pkg, "Sim").sha256 != first.sha256
    (pkg / "c.py").symlink_to(pkg / "a.py")
    with pytest.raises(BadInput):
        simulator_tree_source(pkg, "Sim")
