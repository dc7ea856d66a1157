"""``repro protocol check`` and ``repro protocol new``, and ``$comment`` keys in protocols:
check freezes exactly as a study does and writes nothing; new writes commented starting
protocols that check as written; comments never change a frozen protocol or its digest."""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from conftest import ROOT, SMALL, run_study
from repro._cli.app import app
from repro._cli.started import command, started
from repro._protocol.freeze import freeze
from repro._protocol.load import parse_protocol
from repro.verify import verify
from test_bad_protocols import UNKNOWN_KEYS, WRONG_TYPES, Case, Draft

runner = CliRunner()

PROTOCOLS = sorted((ROOT / "protocols").glob("*.json"))
SCENARIO = ROOT.parent / "shared" / "cage2" / "scenario"
ADAPTERS = ("gymnasium", "command", "cyborg")


def _invoke(*args: str) -> Result:
    return runner.invoke(app, list(args))


def _flat(text: str) -> str:
    return " ".join(text.split())


def _tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def _uncommented(value: Any) -> Any:
    """``value`` with every ``$comment`` key removed: the test's own, independent stripping."""
    if isinstance(value, dict):
        return {k: _uncommented(v) for k, v in value.items() if k != "$comment"}
    if isinstance(value, list):
        return [_uncommented(v) for v in value]
    return value


def _objects(value: Any) -> list[dict[str, Any]]:
    """Every JSON object in ``value``, outermost first."""
    if isinstance(value, dict):
        return [value, *(o for v in value.values() for o in _objects(v))]
    if isinstance(value, list):
        return [o for v in value for o in _objects(v)]
    return []


def _digest(data: Any) -> str:
    return freeze(parse_protocol(json.dumps(data).encode())).sha256


# --------------------------------------------------------------------------- comments


class TestComments:
    """``$comment`` keys are notes for readers, removed before validation."""

    @pytest.mark.slow
    @settings(max_examples=60, deadline=None)
    @given(
        protocol=st.sampled_from(PROTOCOLS),
        picks=st.lists(st.tuples(st.integers(min_value=0), st.text(max_size=30)), max_size=40),
    )
    def test_comments_never_change_the_digest(
        self, protocol: Path, picks: list[tuple[int, str]]
    ) -> None:
        """Comments added to any objects of a shipped protocol (top level, options, factors,
        participants' free-form params, scenarios, an embedded JSON Schema...) leave the frozen
        protocol, and so its sha256, exactly as without them."""
        plain = json.loads(protocol.read_text("utf-8"))
        commented = copy.deepcopy(plain)
        objects = _objects(commented)
        for index, text in picks:
            objects[index % len(objects)]["$comment"] = text
        assert parse_protocol(json.dumps(commented).encode()) == parse_protocol(
            json.dumps(plain).encode()
        )
        assert _digest(commented) == _digest(plain)

    def test_every_object_may_carry_one(self) -> None:
        """A comment in every single object of the small protocol is accepted, and the study's
        digest is that of the protocol without them."""
        commented = copy.deepcopy(SMALL)
        for number, obj in enumerate(_objects(commented)):
            obj["$comment"] = f"note {number}"
        assert len(_objects(commented)) > 10
        assert _digest(commented) == _digest(SMALL)

    @pytest.mark.slow
    def test_the_digest_a_study_records(self, tmp_path: Path) -> None:
        """A commented protocol and its uncommented twin give bundles whose protocol.json are
        byte-identical, and the commented one verifies."""
        commented = copy.deepcopy(SMALL)
        commented["runs_per_condition"] = 2
        plain = _uncommented(commented)
        commented["$comment"] = "a note at the top"
        commented["participants"][1]["params"]["$comment"] = "in free-form params"
        paths = []
        for name, data in (("commented", commented), ("plain", plain)):
            path = tmp_path / f"{name}.json"
            path.write_text(json.dumps(data), "utf-8")
            paths.append(run_study(path, tmp_path / name))
        first, second = ((p / "data" / "protocol.json").read_bytes() for p in paths)
        assert first == second and b"$comment" not in first
        assert verify(paths[0]) == []


# --------------------------------------------------------------------------- protocol check


def _check(path: Path, *args: str) -> dict[str, Any]:
    result = _invoke("protocol", "check", str(path), "--json", *args)
    assert result.exit_code == 0, result.output
    summary: dict[str, Any] = json.loads(result.stdout)
    return summary


class TestCheck:
    """``repro protocol check`` goes through the code a study runs before it writes."""

    @pytest.mark.slow
    def test_summary_is_what_the_study_records(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The digest, adapter facts, plan size, sources and their digest the check prints are
        those of the bundle a study of the same protocol writes, with the warnings the study
        prints (this small protocol sums two environments' returns); the check itself writes
        nothing, not even in its working directory."""
        path = tmp_path / "protocol.json"
        path.write_text(json.dumps(SMALL), "utf-8")
        monkeypatch.chdir(tmp_path)
        before = _tree(tmp_path)
        summary = _check(path)
        assert _tree(tmp_path) == before

        data = run_study(path, tmp_path / "bundle") / "data"
        seal = json.loads((data / "plans" / "seal.json").read_text())
        ledger = json.loads((data / "source-ledger.json").read_text())
        slots = sum(
            len(json.loads(p.read_text())["entries"]) for p in (data / "plans").glob("c*.json")
        )
        assert summary == {
            "protocol": "small",
            "sha256": json.loads((data / "protocol.json").read_text())["sha256"],
            "adapter": ledger["adapter"],
            "conditions": len(seal["conditions"]),
            "partitions": len(seal["partitions"]),
            "slots": slots,
            "sources_sha256": seal["sources_sha256"],
            "sources": ledger["sources"],
            "warnings": summary["warnings"],
        }
        assert [w.split(":")[0] for w in summary["warnings"]] == ["$.estimand"]
        assert (summary["conditions"], summary["slots"]) == (4, 32)

    def test_text_output(self, tmp_path: Path) -> None:
        """Without --json the check prints the same facts as lines: digest, adapter, plan size
        and one line per pinned source."""
        path = tmp_path / "protocol.json"
        path.write_text(json.dumps(SMALL), "utf-8")
        summary = _check(path)
        result = _invoke("protocol", "check", str(path))
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        assert lines[0] == f"OK: {path} is valid (nothing was run or written)"
        assert f"sha256    {summary['sha256']}" in lines
        assert "plan      4 conditions, 4 partitions, 32 slots" in lines
        assert lines[-len(summary["sources"]) :] == [
            f"  {s['role']}: {s['kind']} {s['name']} "
            + (s["version"] if s["sha256"] is None else f"sha256 {s['sha256']}")
            for s in summary["sources"]
        ]

    def test_options_reach_the_adapter(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """--option is the study's: another release pins other sources under the same protocol
        digest, and an option the adapter does not take exits 2 as a study would."""
        monkeypatch.chdir(ROOT)
        example = ROOT / "protocols" / "agent-gate-eval.json"
        v1 = _check(example)
        v2 = _check(example, "--option", "release=protocols/harness/releases/v2-regressed")
        assert v1["sha256"] == v2["sha256"]
        assert v1["sources_sha256"] != v2["sources_sha256"]
        refused = _invoke("protocol", "check", str(example), "--option", "colour=blue")
        assert refused.exit_code == 2
        assert "--option colour: the command adapter takes harness and release" in _flat(
            refused.stderr
        )

    def test_json_refusal_names_each_problem(self, tmp_path: Path) -> None:
        """Refused with --json, the check exits 2, names the problems on stderr as without it,
        and prints on stdout one object, ok false, each problem's JSON path, message and code:
        a wrong type, an unknown key and a rule the protocol breaks as a whole."""
        data = copy.deepcopy(SMALL)
        data["runs_per_condition"] = "eight"
        data["colour"] = "blue"
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(data), "utf-8")
        refused = _invoke("protocol", "check", str(path), "--json")
        assert refused.exit_code == 2
        report = json.loads(refused.stdout)
        assert report["ok"] is False
        found = {(p["path"], p["code"]) for p in report["problems"]}
        assert found == {("$.runs_per_condition", "wrong-type"), ("$", "unknown-field")}
        plain = _invoke("protocol", "check", str(path))
        assert plain.exit_code == 2 and plain.stdout == ""
        assert _flat(refused.stderr) == _flat(plain.stderr)
        for problem in report["problems"]:
            assert f"{problem['message']} @ {problem['path']}" in _flat(plain.stderr)

        data = copy.deepcopy(SMALL)
        data["participants"].append(copy.deepcopy(data["participants"][-1]))
        path.write_text(json.dumps(data), "utf-8")
        last = f"$.participants[{len(data['participants']) - 1}].id"
        report = json.loads(_invoke("protocol", "check", str(path), "--json").stdout)
        assert [(p["path"], p["code"]) for p in report["problems"]] == [(last, "duplicate")]

    def test_json_refusal_without_a_path(self, tmp_path: Path) -> None:
        """A protocol that cannot be read is one problem at ``$``, code ``unreadable``; a bad
        ``--option`` (no JSON path at all) one of code ``bad-input``, its message the whole
        text; both exit 2."""
        missing = _invoke("protocol", "check", str(tmp_path / "none.json"), "--json")
        assert missing.exit_code == 2
        [problem] = json.loads(missing.stdout)["problems"]
        assert (problem["path"], problem["code"]) == ("$", "unreadable")
        path = tmp_path / "protocol.json"
        path.write_text(json.dumps(SMALL), "utf-8")
        bad = _invoke("protocol", "check", str(path), "--json", "--option", "novalue")
        assert bad.exit_code == 2
        assert json.loads(bad.stdout) == {
            "ok": False,
            "problems": [
                {
                    "path": "$",
                    "message": "--option takes KEY=VALUE, not 'novalue'",
                    "code": "bad-input",
                }
            ],
        }

    @pytest.mark.parametrize("case", UNKNOWN_KEYS + WRONG_TYPES, ids=lambda c: c.name)
    def test_refuses_as_a_study_does(
        self, case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Each bad protocol of these tables of tests/test_bad_protocols.py exits 2 from the
        check with exactly the message the study gives, and nothing is written."""
        draft = Draft(copy.deepcopy(SMALL), tmp_path)
        case.mutate(draft)
        path = draft.materialise()
        monkeypatch.chdir(tmp_path)
        before = _tree(tmp_path)
        checked = _invoke("protocol", "check", str(path))
        assert checked.exit_code == 2, checked.output
        assert "Traceback" not in checked.output
        assert _tree(tmp_path) == before
        studied = _invoke("study", str(path), "--out", str(tmp_path / "out"))
        assert _flat(checked.stderr) == _flat(studied.stderr)


# --------------------------------------------------------------------------- protocol new


def _new(tmp_path: Path, adapter: str) -> Path:
    out = tmp_path / f"{adapter}.json"
    result = _invoke("protocol", "new", "--adapter", adapter, "--out", str(out))
    assert result.exit_code == 0, result.output
    check = command(["protocol", "check", str(out)], started())  # as repro was started
    beside = f" and {tmp_path / 'harness.py'}" if adapter == "command" else ""
    assert result.stdout == f"wrote {out}{beside}; check it with: {check}\n"
    return out


@pytest.mark.slow
class TestNew:
    """``repro protocol new`` writes a commented starting protocol."""

    @pytest.mark.parametrize("adapter", ADAPTERS)
    def test_stdout_and_file_agree_and_are_commented(self, adapter: str, tmp_path: Path) -> None:
        """Without --out the template goes to stdout, byte for byte what --out writes; it names
        its adapter and explains itself in $comment keys, the first one at the top."""
        printed = _invoke("protocol", "new", "--adapter", adapter)
        assert printed.exit_code == 0, printed.output
        written = _new(tmp_path, adapter).read_text("utf-8")
        assert printed.stdout == written
        data = json.loads(written)
        assert data["adapter"]["name"] == adapter
        assert "repro protocol check" in data["$comment"]
        assert sum("$comment" in o for o in _objects(data)) >= 3

    def test_gymnasium_checks_and_runs_as_written(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The gymnasium template passes the check from any directory, and a study of it
        verifies; its digest is that of the template without comments."""
        monkeypatch.chdir(tmp_path)
        path = _new(tmp_path, "gymnasium")
        summary = _check(path)
        assert summary["sha256"] == _digest(_uncommented(json.loads(path.read_text())))
        bundle = run_study(path, tmp_path / "bundle")
        assert verify(bundle) == []

    def test_command_writes_its_harness_beside_it(self, tmp_path: Path) -> None:
        """The command template names harness.py, which --out writes beside it from the copy
        shipped in repro/templates (not from repro's tests), and a $comment says to replace
        it and points at the contract."""
        from importlib.resources import files

        path = _new(tmp_path, "command")
        options = json.loads(path.read_text())["adapter"]["options"]
        assert options["harness"] == "harness.py"
        assert "release" not in options
        assert "Replace harness.py with your own program" in options["$comment"]
        assert "docs/harness.md" in options["$comment"]
        shipped = files("repro").joinpath("templates", "command_harness.py").read_text("utf-8")
        assert (tmp_path / "harness.py").read_text("utf-8") == shipped
        assert _tree(tmp_path) == ["command.json", "harness.py"]

    def test_command_checks_and_runs_from_elsewhere(self, tmp_path: Path) -> None:
        """What protocol new writes for the command adapter passes the check, and a study of
        it verifies and replays byte-identical, all from a working directory outside the
        source tree and outside the protocol's folder, in a fresh interpreter (as the
        installed command runs)."""
        folder, elsewhere = tmp_path / "study", tmp_path / "elsewhere"
        folder.mkdir()
        elsewhere.mkdir()
        repro = [sys.executable, "-m", "repro"]
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            done = subprocess.run(
                [*repro, *args], cwd=elsewhere, env=env, capture_output=True, text=True
            )
            assert done.returncode == 0, done.stdout + done.stderr
            return done

        run("protocol", "new", "--adapter", "command", "--out", str(folder / "p.json"))
        checked = json.loads(run("protocol", "check", str(folder / "p.json"), "--json").stdout)
        assert checked["adapter"]["name"] == "command"
        assert [s["name"] for s in checked["sources"] if s["role"] == "harness"] == ["harness.py"]
        run("study", str(folder / "p.json"), "--out", str(tmp_path / "bundle"))
        assert verify(tmp_path / "bundle") == []
        replayed = run("replay", str(tmp_path / "bundle"), "c00-r0000", "--sources", str(folder))
        assert "byte-identical" in replayed.stdout
        assert os.listdir(elsewhere) == []

    def test_command_without_out_says_what_it_leaves_out(self) -> None:
        """To stdout, the command template goes alone, and stderr says the harness it names
        is written only with --out."""
        printed = _invoke("protocol", "new", "--adapter", "command")
        assert printed.exit_code == 0
        assert "harness.py" in printed.stderr and "--out" in printed.stderr

    def test_command_never_overwrites_a_harness(self, tmp_path: Path) -> None:
        """An existing harness.py beside --out is refused with exit 2 before anything is
        written: neither the protocol nor the harness."""
        (tmp_path / "harness.py").write_text("mine", "utf-8")
        result = _invoke(
            "protocol", "new", "--adapter", "command", "--out", str(tmp_path / "p.json")
        )
        assert result.exit_code == 2
        assert "harness.py exists: repro protocol new never overwrites a file" in _flat(
            result.stderr
        )
        assert _tree(tmp_path) == ["harness.py"]
        assert (tmp_path / "harness.py").read_text("utf-8") == "mine"

    @pytest.mark.skipif(
        importlib.util.find_spec("csle_cyborg") is None or not SCENARIO.is_dir(),
        reason="the cyborg extra (csle-cyborg) or ../shared/cage2 is not available",
    )
    def test_cyborg_checks_with_a_scenario_directory(self, tmp_path: Path) -> None:
        """The cyborg template checks with the scenario directory given as --option, as its
        top $comment says."""
        path = _new(tmp_path, "cyborg")
        assert "--option scenario_dir=DIR" in json.loads(path.read_text())["$comment"]
        summary = _check(path, "--option", f"scenario_dir={SCENARIO}")
        assert summary["adapter"]["name"] == "cyborg"

    def test_never_overwrites(self, tmp_path: Path) -> None:
        """An existing --out is refused with exit 2 and left as it was."""
        out = tmp_path / "mine.json"
        out.write_text("my own protocol", "utf-8")
        result = _invoke("protocol", "new", "--adapter", "gymnasium", "--out", str(out))
        assert result.exit_code == 2
        assert "exists: repro protocol new never overwrites a file" in _flat(result.stderr)
        assert out.read_text("utf-8") == "my own protocol"

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (
                ["--adapter", "mujoco"],
                "no template for adapter 'mujoco' (command, cyborg, gymnasium)",
            ),
            (["--adapter", "gymnasium", "--out", "missing/p.json"], "cannot write"),
        ],
        ids=["unknown-adapter", "missing-directory"],
    )
    def test_bad_input_writes_nothing(
        self, args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An adapter without a template, or an --out in a missing directory, exits 2 with the
        reason and writes nothing."""
        monkeypatch.chdir(tmp_path)
        result = _invoke("protocol", "new", *args)
        assert result.exit_code == 2
        assert message in _flat(result.stderr)
        assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------- outcome schema


def _scored(tmp_path: Path, change: Any) -> Path:
    """The command template and its harness, written by protocol new into ``tmp_path``, the
    protocol then changed by ``change`` (its $comment keys dropped)."""
    path = _new(tmp_path, "command")
    data = _uncommented(json.loads(path.read_text("utf-8")))
    change(data)
    path.write_text(json.dumps(data), "utf-8")
    return path


def _without_version(data: dict[str, Any]) -> None:
    """The trap: a harness whose outcome lacks scenario_version, under a schema that does not
    require it."""
    schema = data["adapter"]["options"]["outcome_schema"]
    schema["required"].remove("scenario_version")
    del schema["properties"]["scenario_version"]


class TestOutcomeSchemaCoversScoring:
    """A scored command protocol whose outcome_schema does not require every outcome key its
    rules read is refused by check and by study alike (exit 2, nothing written), naming the
    schema's JSON path and the rule's."""

    @pytest.mark.parametrize(
        ("change", "rule", "key"),
        [
            (_without_version, "$.scenarios", "scenario_version"),
            (
                lambda d: d["adapter"]["options"]["outcome_schema"]["required"].remove("verdict"),
                "$.scoring.checks[1].key",
                "verdict",
            ),
            (
                lambda d: d["adapter"]["options"]["outcome_schema"]["required"].remove("findings"),
                "$.scoring.checks[0].keys[1]",
                "findings",
            ),
            (
                lambda d: d["adapter"]["options"]["outcome_schema"]["required"].remove(
                    "blocking_questions"
                ),
                "$.measure.key",
                "blocking_questions",
            ),
            (
                lambda d: d["scoring"].update(
                    taxonomy={
                        "name": "kind",
                        "categories": ["sure", "other"],
                        "rules": [
                            {"category": "sure", "values": {"confidence": "high"}},
                            {"category": "other"},
                        ],
                    }
                ),
                "$.scoring.taxonomy.rules[0].values.confidence",
                "confidence",
            ),
        ],
        ids=["scenario-version", "check-key", "check-keys", "measure-key", "taxonomy-value"],
    )
    def test_a_key_read_but_not_required_is_refused(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: Any, rule: str, key: str
    ) -> None:
        """Each rule that reads an outcome key the schema does not require: check and study
        exit 2 with the same message, naming the key, the rule's JSON path and
        $.adapter.options.outcome_schema.required; the study writes nothing."""
        path = _scored(tmp_path, change)
        monkeypatch.chdir(tmp_path)
        before = _tree(tmp_path)
        checked = _invoke("protocol", "check", str(path))
        studied = _invoke("study", str(path), "--out", str(tmp_path / "out"))
        for result in (checked, studied):
            assert result.exit_code == 2, result.output
            said = _flat(result.stderr)
            assert f"outcome_schema does not require {key!r}, which {rule} reads" in said
            assert said.endswith("@ $.adapter.options.outcome_schema.required")
        assert _flat(checked.stderr) == _flat(studied.stderr)
        assert _tree(tmp_path) == before

    def test_a_scored_protocol_without_a_schema_is_refused(self, tmp_path: Path) -> None:
        """A scored command protocol with no outcome_schema at all is refused, naming every
        key its rules read and $.adapter.options.outcome_schema."""
        path = _scored(tmp_path, lambda d: d["adapter"]["options"].pop("outcome_schema"))
        checked = _invoke("protocol", "check", str(path))
        assert checked.exit_code == 2
        said = _flat(checked.stderr)
        assert "(blocking_questions, findings, scenario_version, summary, verdict)" in said
        assert said.endswith("@ $.adapter.options.outcome_schema")

    @pytest.mark.slow
    def test_the_trap_fails_every_run_without_the_rule(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Why the rule: the trap's harness (its outcome without scenario_version), had the
        protocol been accepted, leaves every slot invalid as
        outcome-scenario-version-missing (run whole, past the early stop that would end it after
        three slots). The bundle it made still verifies and replays
        byte-identical: replay and verify do not apply the rule to a sealed protocol."""
        import repro.adapters._command as command_adapter

        path = _scored(tmp_path, _without_version)
        harness = tmp_path / "harness.py"
        harness.write_text(
            harness.read_text("utf-8").replace('"scenario_version": scenario["version"],', ""),
            "utf-8",
        )
        monkeypatch.setattr(command_adapter, "outcome_schema_problems", lambda *a: [])
        bundle = run_study(path, tmp_path / "bundle", keep_going=True)
        monkeypatch.undo()
        runs = [
            json.loads(line)
            for file in sorted((bundle / "data" / "runs").glob("*.jsonl"))
            for line in file.read_text("utf-8").splitlines()
        ]
        assert {(r["status"], r["cause"]) for r in runs} == {
            ("invalid", "outcome-scenario-version-missing")
        }
        assert verify(bundle) == []
        replayed = _invoke("replay", str(bundle), "c00-r0000", "--sources", str(tmp_path))
        assert replayed.exit_code == 0, replayed.output
        assert "byte-identical" in replayed.stdout
