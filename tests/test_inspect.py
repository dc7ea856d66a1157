"""The inspect adapter: an inspect_ai task's samples run under a protocol, offline, on
inspect's mock model with custom outputs that set their own token usage. A study verifies and
is byte-identical when run again; each record keeps the sample's scores, the model's output,
the message count, the token usage and the digest of what the eval log says of the sample; a
sample inspect records as failed fails its run with a short cause; the ledger pins inspect_ai's
version and the task's source file; freeze refuses what the adapter cannot run, naming the JSON
path. Skipped where inspect_ai is not installed (it is the optional extra ``inspect``)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, bundle_digests, register_adapters, run_study
from repro._execute.studies import prepare
from repro.adapters import get_adapter, registered_adapters
from repro.adapters._base import targets_in
from repro.errors import BadInput
from repro.verify import verify

if os.environ.get("REPRO_REQUIRE_EXTRAS"):  # CI: the extra must be there, never skipped
    import inspect_ai  # noqa: F401
pytest.importorskip("inspect_ai", reason="inspect_ai is not installed (the 'inspect' extra)")

from repro.adapters._inspect_eval import MAX_TEXT, _text

# Slow: studies through inspect_ai.
pytestmark = pytest.mark.slow

EXAMPLE = ROOT / "protocols" / "inspect-arithmetic.json"
TASKS = ROOT / "protocols" / "inspect_arithmetic.py"

#: A model that raises in every generate: inspect records the sample as failed.
FAULTS = """
from inspect_ai.model import get_model


def _raise(messages, tools, tool_choice, config):
    raise RuntimeError("the mock model fails")


def broken():
    return get_model("mockllm/model", custom_outputs=_raise, memoize=False)
"""


def _small() -> dict[str, Any]:
    """The example protocol cut down: two models, the task's own solver, two samples, two
    epochs (8 runs), no holdout gate (too few scenarios)."""
    protocol: dict[str, Any] = json.loads(EXAMPLE.read_text("utf-8"))
    protocol["id"] = "inspect-small"
    protocol["matrix"][2]["levels"] = ["default"]
    protocol["matrix"][3]["levels"] = ["add", "mul"]
    protocol["runs_per_condition"] = 2
    protocol["scenarios"] = [s for s in protocol["scenarios"] if s["id"] in ("add", "mul")]
    del protocol["gates"]
    return protocol


def _records(bundle: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in sorted((bundle / "data" / "runs").glob("*.jsonl"))
        for line in path.read_text("utf-8").splitlines()
    ]


@pytest.fixture(scope="module")
def tasks_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One directory for every protocol of this module, beside the example's task module and
    the failing model's (a module name is imported from one directory per process)."""
    directory = tmp_path_factory.mktemp("inspect")
    shutil.copy(TASKS, directory / TASKS.name)
    (directory / "inspect_faults.py").write_text(FAULTS, "utf-8")
    return directory


@pytest.fixture(scope="module", autouse=True)
def _registered(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The adapter registered under ``inspect``, as pyproject.toml does, for an environment
    whose installed repro metadata predates it."""
    if any(r.name == "inspect" for r in registered_adapters()):
        yield
        return
    with pytest.MonkeyPatch.context() as monkeypatch:
        register_adapters(
            monkeypatch,
            tmp_path_factory.mktemp("site"),
            "repro-inspect-registration",
            {"inspect": "repro.adapters._inspect_eval:InspectAdapter"},
        )
        yield


def _study(directory: Path, protocol: dict[str, Any], name: str) -> Path:
    path = directory / f"{name}.json"
    path.write_text(json.dumps(protocol), "utf-8")
    return run_study(path, directory / f"{name}-bundle")


@pytest.fixture(scope="module")
def small_bundle(tasks_dir: Path) -> Path:
    """The cut-down example, run once."""
    return _study(tasks_dir, _small(), "small")


class TestStudy:
    def test_bundle_verifies(self, small_bundle: Path) -> None:
        """The study's bundle verifies with no finding, and every run is valid."""
        assert [f.code for f in verify(small_bundle)] == []
        records = _records(small_bundle)
        assert len(records) == 8
        assert {r["status"] for r in records} == {"valid"}

    def test_run_again_is_byte_identical(self, tasks_dir: Path, small_bundle: Path) -> None:
        """The same protocol studied again gives the same bytes in every file that does not
        record when it ran: each run is a function of its seed, and the eval log's random IDs
        and clock times reach no record."""
        again = _study(tasks_dir, _small(), "small-again")
        assert bundle_digests(again) == bundle_digests(small_bundle)

    def test_record_keeps_what_inspect_recorded(self, small_bundle: Path) -> None:
        """Each record's outcome holds the sample, its match score (value and float, the
        measure), the model's output text, the message count (prompt and answer), the token
        usage per model and summed, the sample's scenario version and the digest of the
        sample, which is the record's trace digest."""
        for record in _records(small_bundle):
            outcome = record["outcome"]
            assert outcome["sample"] in ("add", "mul")
            match = outcome["scores"]["match"]
            assert match["value"] in ("C", "I")
            assert outcome["score"] == match["float"] == (1.0 if match["value"] == "C" else 0.0)
            assert record["measure"] == outcome["score"]
            assert outcome["completion"].startswith("The answer is ")
            assert outcome["completion_chars"] == len(outcome["completion"])
            completion = outcome["completion"].encode()
            assert outcome["completion_sha256"] == hashlib.sha256(completion).hexdigest()
            assert outcome["messages"] == 2
            usage = outcome["usage"]["mockllm/model"]
            assert outcome["total_tokens"] == usage["total_tokens"] > 0
            assert usage["input_tokens"] + usage["output_tokens"] == usage["total_tokens"]
            assert outcome["scenario_version"] == 1
            assert outcome["eval_sample_sha256"] == record["trace_sha256"]

    def test_scores_and_contrast_are_derived(self, small_bundle: Path) -> None:
        """The scored study's scores and its pre-registered contrast are written: repro's
        checks, taxonomy and contrasts read the inspect runs' outcomes as any other."""
        scores = json.loads((small_bundle / "data" / "scores.json").read_bytes())
        assert {c["checks"][0]["name"] for c in scores["cells"]} == {"correct"}
        contrasts = json.loads((small_bundle / "data" / "contrasts.json").read_bytes())
        assert "careful-right-more-often" in json.dumps(contrasts)

    def test_ledger_pins_inspect_and_the_task(self, small_bundle: Path) -> None:
        """The ledger pins inspect_ai by its installed version and the task module (which holds
        the models too) once, by the sha256 of its bytes."""
        ledger = json.loads((small_bundle / "data" / "source-ledger.json").read_bytes())
        version = importlib.metadata.version("inspect_ai")
        assert ledger["adapter"]["version"] == version
        pins = [(s["kind"], s["name"], s["sha256"] or s["version"]) for s in ledger["sources"]]
        assert pins == [
            ("package", "inspect_ai", version),
            ("file", TASKS.name, hashlib.sha256(TASKS.read_bytes()).hexdigest()),
        ]


class TestCost:
    def test_the_distribution_scan_runs_once_a_process(
        self, tasks_dir: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """inspect's scan of every installed distribution, which it runs at each eval() of a
        task from a local file, runs once however many runs a session runs (it was most of a
        run's cost), and each run still evaluates its sample."""
        from inspect_ai._util import package

        calls: list[None] = []
        scan = package.packages_distributions

        def counted() -> Any:
            calls.append(None)
            return scan()

        monkeypatch.setattr(package, "packages_distributions", counted)
        path = tasks_dir / "cost.json"
        path.write_text(json.dumps(_small()), "utf-8")
        prepared = prepare(path, {})
        condition = prepared.plan.seal.conditions[0]
        entries = [e for e in prepared.plan.entries() if e.condition == condition.id]
        with targets_in(prepared.target_root):
            session = prepared.adapter.open(prepared.protocol, condition, prepared.frozen)
            evidence = [session.run(entry) for entry in entries]
        assert len(evidence) == 2
        assert [e.outcome["sample"] for e in evidence] == [condition.factors["sample"]] * 2  # type: ignore[index]
        assert len(calls) <= 1


class TestFailures:
    def test_failed_sample_fails_the_run_with_its_cause(
        self, tasks_dir: Path, capfd: pytest.CaptureFixture[str]
    ) -> None:
        """A model that raises: inspect records the sample's error; every attempt is failed
        with cause harness-error:RuntimeError (the exception's type, never its message), retried
        as the protocol says, and the bundle still verifies. inspect prints nothing of it (its
        log lines would carry the traceback, host paths with it)."""
        protocol = _small()
        protocol["id"] = "inspect-faults"
        protocol["matrix"][1]["levels"] = ["inspect_faults:broken"]
        protocol["matrix"][3]["levels"] = ["add"]
        protocol["runs_per_condition"] = 1
        protocol["scenarios"] = protocol["scenarios"][:1]
        del protocol["contrasts"]
        bundle = _study(tasks_dir, protocol, "faults")
        records = _records(bundle)
        assert [(r["status"], r["cause"]) for r in records] == [
            ("failed", "harness-error:RuntimeError")
        ] * protocol["retry"]["max_attempts"]
        assert [f.code for f in verify(bundle)] == []
        printed = capfd.readouterr()
        assert "Traceback" not in printed.err + printed.out


def _refusal(
    directory: Path, protocol: dict[str, Any], options: dict[str, str] | None = None
) -> str:
    path = directory / "refused.json"
    path.write_text(json.dumps(protocol), "utf-8")
    with pytest.raises(BadInput) as caught:
        prepare(path, options or {})
    return str(caught.value)


class TestFreeze:
    @pytest.mark.parametrize(
        ("change", "where"),
        [
            (lambda p: p["retry"].pop("timeout_seconds"), "@ $.retry.timeout_seconds"),
            (lambda p: p["matrix"].append({"name": "temp", "levels": [1]}), "@ $.matrix[4].name"),
            (lambda p: p["matrix"][3]["levels"].append("nope"), "@ $.matrix[3].levels[2]"),
            (lambda p: p["matrix"][0]["levels"].__setitem__(0, "a/b"), "@ $.matrix[0].levels[0]"),
            (lambda p: p["participants"][0].__setitem__("kind", "x"), "@ $.participants[0].kind"),
            (
                lambda p: p["participants"][0]["params"]["config"].__setitem__("seed", 1),
                "@ $.participants[0].params.config.seed",
            ),
            (
                lambda p: p["participants"][0]["params"]["config"].__setitem__("nope", 1),
                "@ $.participants[0].params.config.nope",
            ),
            (
                lambda p: p["adapter"]["options"].__setitem__("log_dir", "x"),
                "@ $.adapter.options.log_dir",
            ),
        ],
    )
    def test_refusals_name_the_json_path(self, tasks_dir: Path, change: Any, where: str) -> None:
        """What the adapter cannot run is refused before anything is written, the message
        ending in the JSON path of the culprit: no per-run timeout, an unknown factor, a sample
        the task does not have, a task that is no target, a participant kind other than agent,
        a seed or unknown field in the generate config, an option in the protocol."""
        protocol = _small()
        change(protocol)
        assert _refusal(tasks_dir, protocol).endswith(where)

    def test_scenarios_need_sample_versions(self, tasks_dir: Path) -> None:
        """In a protocol with scenarios, a sample whose metadata gives no scenario_version is
        refused at freeze (a run could never be judged current), naming the task's level."""
        (tasks_dir / "inspect_unversioned.py").write_text(
            "from inspect_ai import Task, task\nfrom inspect_ai.dataset import Sample\n"
            "from inspect_ai.scorer import match\n\n@task\ndef plain():\n"
            "    return Task(dataset=[Sample(id='add', input='1+1?', target='2'), "
            "Sample(id='mul', input='2*2?', target='4')], scorer=match())\n",
            "utf-8",
        )
        protocol = _small()
        protocol["matrix"][0]["levels"] = ["inspect_unversioned:plain"]
        assert _refusal(tasks_dir, protocol).endswith("@ $.matrix[0].levels[0]")

    def test_example_freezes_and_is_registered(self, tasks_dir: Path) -> None:
        """The shipped example protocol freezes beside (a byte-identical copy of) its task
        module, all 60 of its slots sealed; the adapter is found by its name."""
        path = tasks_dir / EXAMPLE.name
        shutil.copy(EXAMPLE, path)
        assert len(prepare(path, {}).plan.entries()) == 60
        assert type(get_adapter("inspect")).__name__ == "InspectAdapter"


class TestTexts:
    def test_long_text_kept_as_length_and_digest(self) -> None:
        """A text up to MAX_TEXT characters is kept whole; a longer one as its length and
        sha256 only, so a record stays bounded whatever the model wrote."""
        short, long = "x" * MAX_TEXT, "y" * (MAX_TEXT + 1)
        assert _text(short)["text"] == short
        kept = _text(long)
        assert kept["text"] is None
        assert kept["chars"] == MAX_TEXT + 1
        assert kept["sha256"] == hashlib.sha256(long.encode()).hexdigest()
