"""The command adapter: an external harness drives each run; every way it can misbehave ends as
one recorded attempt with the right status and cause, its stderr never enters the bundle, the
release under test is pinned, and runs on a superseded scenario version are excluded."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import ROOT, _Quiet
from repro._cli.app import app
from repro._execute.studies import prepare, study
from repro.errors import BadInput
from repro.verify import verify

HARNESS = ROOT / "tests" / "harness"
EXAMPLE = ROOT / "protocols" / "agent-gate-eval.json"
RELEASES = ROOT / "protocols" / "harness" / "releases"

BAD: dict[str, Any] = {
    "schema": "repro.protocol/1",
    "id": "bad-harness",
    "title": "Misbehaving harness",
    "adapter": {
        "name": "command",
        "options": {
            # Relative to the protocol's folder, as a protocol names it (:func:`_study` copies
            # it there): an absolute path under a host root (/tmp, /home) is refused as a
            # disclosure.
            "harness": "bad_harness.py",
            "outcome_schema": {
                "type": "object",
                "required": ["score"],
                "properties": {"score": {"type": "integer"}},
            },
        },
    },
    "matrix": [{"name": "case", "levels": ["one"]}],
    "participants": [
        {"id": mode, "kind": "agent", "params": {"mode": mode}}
        for mode in ("ok", "exit", "sleep", "garbage", "array", "schema")
    ],
    "runs_per_condition": 2,
    "seeding": {"mode": "per-run", "seed": 5},
    "measure": {"name": "outcome_value", "key": "score", "description": "the harness's score"},
    "estimand": "mean-of-condition-means",
    "interval": {"method": "normal", "level": 0.95},
    "retry": {"max_attempts": 2, "timeout_seconds": 2},
}


def _study(tmp_path: Path, protocol: dict[str, Any], options: dict[str, str] | None = None) -> Path:
    path = tmp_path / "protocol.json"
    path.write_text(json.dumps(protocol), "utf-8")
    shutil.copy(HARNESS / "bad_harness.py", tmp_path / "bad_harness.py")
    out = tmp_path / "out"
    study(prepare(path, options or {}), out, _Quiet())
    return out


def _records(bundle: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in sorted((bundle / "data" / "runs").glob("*.jsonl"))
        for line in path.read_text("utf-8").splitlines()
    ]


@pytest.fixture(scope="module")
def bad_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One study whose participants are the harness's ways to misbehave."""
    return _study(tmp_path_factory.mktemp("bad"), BAD)


@pytest.mark.slow
class TestHarnessFaults:
    def test_each_fault_gets_its_status_and_cause(self, bad_bundle: Path) -> None:
        """ok: valid; non-zero exit: failed harness-exit:3; past the timeout: failed timeout;
        not JSON: invalid outcome-not-json; not an object: invalid outcome-not-object; breaks
        the outcome schema: invalid outcome-schema. Every slot is tried max_attempts times."""
        seen = {(r["condition"], r["status"], r["cause"]) for r in _records(bad_bundle)}
        assert seen == {
            ("c00", "valid", None),
            ("c01", "failed", "harness-exit:3"),
            ("c02", "failed", "timeout"),
            ("c03", "invalid", "outcome-not-json"),
            ("c04", "invalid", "outcome-not-object"),
            ("c05", "invalid", "outcome-schema"),
        }
        assert verify(bad_bundle) == []

    def test_valid_runs_keep_their_outcome_and_harness_facts(self, bad_bundle: Path) -> None:
        """A valid run keeps the outcome object, its measure from the outcome's key, the exit
        code and the stderr's length and sha256."""
        valid = [r for r in _records(bad_bundle) if r["status"] == "valid"]
        assert len(valid) == 2
        for r in valid:
            assert r["outcome"]["echo"] == r["slot"]
            assert r["measure"] == float(r["outcome"]["score"])
            assert r["harness"]["exit_code"] == 0
            assert r["harness"]["stderr_bytes"] > 0
            assert len(r["harness"]["stderr_sha256"]) == 64

    def test_stderr_never_enters_the_bundle(self, bad_bundle: Path) -> None:
        """The harness's stderr text (here with a host path) is in no bundle file."""
        for path in bad_bundle.rglob("*"):
            if path.is_file():
                assert b"secret stderr text" not in path.read_bytes(), path

    def test_no_harness_outlives_the_study(self, bad_bundle: Path) -> None:
        """The harness that hung past the timeout was killed with its process group."""
        for proc in Path("/proc").iterdir():
            cmdline = proc / "cmdline"
            if proc.name.isdigit() and cmdline.exists():
                try:
                    assert b"bad_harness.py" not in cmdline.read_bytes()
                except OSError:
                    continue


class TestSpecOnStdin:
    def test_a_spec_the_pipe_holds_is_written_before_the_harness_starts(self) -> None:
        """A spec that fits the pipe is in it, whole and ended, before the harness starts: the
        harness reads it at once, with nothing left for the study to write."""
        from repro.adapters._command import _filled_pipe

        fd, feed, rest = _filled_pipe(b'{"slot":"c00-r0000"}\n')
        try:
            assert feed is None and rest is None
            assert os.read(fd, 1 << 16) == b'{"slot":"c00-r0000"}\n'
            assert os.read(fd, 1) == b""  # the write end is closed: the harness sees its end
        finally:
            os.close(fd)

    def test_a_spec_longer_than_the_pipe_is_written_as_the_harness_reads(self) -> None:
        """A spec longer than a pipe holds: the pipe (this process's own, which the reaper
        knows the harness by) holds what it could take, and the rest is left for the study to
        write through its write end, which blocks as subprocess's own pipes do."""
        from repro.adapters._command import _filled_pipe

        spec = b"x" * (4 << 20)
        fd, feed, rest = _filled_pipe(spec)
        try:
            assert feed is not None and rest is not None and os.get_blocking(feed)
            os.set_blocking(fd, False)
            held = bytearray()
            with contextlib.suppress(BlockingIOError):
                while block := os.read(fd, 1 << 16):
                    held += block
            assert held and bytes(held) + rest == spec
        finally:
            os.close(fd)
            if feed is not None:
                os.close(feed)

    def test_the_harness_reads_a_long_spec_whole(self, tmp_path: Path) -> None:
        """A participant whose params make the spec longer than a pipe holds: every run's
        harness parses the whole spec (it reports the length of what it read)."""
        protocol = copy.deepcopy(BAD)
        del protocol["adapter"]["options"]["outcome_schema"]
        pad = "p" * (300 << 10)
        protocol["participants"] = [
            {"id": "long", "kind": "agent", "params": {"mode": "pad", "pad": pad}},
            {"id": "short", "kind": "agent", "params": {"mode": "pad", "pad": "p"}},
        ]
        records = _records(_study(tmp_path, protocol))
        assert {(r["condition"], r["status"], r["outcome"]["score"]) for r in records} == {
            ("c00", "valid", len(pad)),
            ("c01", "valid", 1),
        }


class TestRelease:
    def test_the_release_is_pinned_by_its_tree(self, tmp_path: Path) -> None:
        """The release directory is pinned in the ledger by the digest of its tree: a changed
        file changes it, a candidate given with --option release=DIR is pinned instead."""
        release = tmp_path / "release"
        shutil.copytree(RELEASES / "v1", release)
        protocol = copy.deepcopy(BAD)
        protocol["participants"] = protocol["participants"][:1]
        protocol_path = tmp_path / "p.json"
        protocol_path.write_text(json.dumps(protocol), "utf-8")
        shutil.copy(HARNESS / "bad_harness.py", tmp_path / "bad_harness.py")

        def pinned() -> Any:
            frozen = prepare(protocol_path, {"release": str(release)}).frozen
            return next(s for s in frozen.sources if s.role == "release")

        first = pinned()
        assert (first.kind, first.name) == ("directory", "release")
        (release / "release.json").write_text('{"version": "1.0.1"}', "utf-8")
        assert pinned().sha256 != first.sha256

    @pytest.mark.parametrize(
        ("change", "message"),
        [
            (lambda p: p["adapter"]["options"].pop("harness"), "needs a harness"),
            (lambda p: p["retry"].pop("timeout_seconds"), "needs a per-run timeout"),
            (lambda p: p["participants"][0].update(kind="robot"), "unknown participant kind"),
            (lambda p: p["adapter"]["options"].update(extra="1"), "takes no option 'extra'"),
            (
                lambda p: p["adapter"]["options"].update(outcome_schema={"type": 3}),
                "not a valid JSON Schema",
            ),
            (lambda p: p["adapter"]["options"].update(harness="no/such/file.py"), "is not a file"),
        ],
    )
    def test_bad_command_protocols_are_refused(
        self, tmp_path: Path, change: Any, message: str
    ) -> None:
        """Each mistake in a command protocol is refused before anything runs, saying what."""
        protocol = copy.deepcopy(BAD)
        change(protocol)
        path = tmp_path / "p.json"
        path.write_text(json.dumps(protocol), "utf-8")
        with pytest.raises(BadInput, match=message):
            prepare(path, {})


@pytest.mark.slow
class TestExample:
    def test_the_example_study_verifies_and_scores(self, tmp_path: Path) -> None:
        """The example protocol runs 144 harness calls into a bundle that verifies, with a
        scores.json that names every check per cell."""
        out = tmp_path / "out"
        study(prepare(EXAMPLE, {}), out, _Quiet())
        assert verify(out) == []
        scores = json.loads((out / "data" / "scores.json").read_text("utf-8"))
        assert len(scores["cells"]) == 24
        assert {c["name"] for c in scores["cells"][0]["checks"]} == {
            "concepts",
            "domains",
            "blocking",
            "verdict",
        }

    def test_superseded_runs_are_excluded_and_listed(self, tmp_path: Path) -> None:
        """Runs a release makes on an old scenario version are recorded excluded with their
        version, left out of every aggregate, and the bundle still verifies."""
        release = tmp_path / "stale"
        release.mkdir()
        (release / "release.json").write_text('{"stale": ["auth-token"]}', "utf-8")
        out = tmp_path / "out"
        study(prepare(EXAMPLE, {"release": str(release)}), out, _Quiet())
        assert verify(out) == []
        stale = [r for r in _records(out) if r["status"] == "excluded"]
        assert len(stale) == 36  # auth-token: 2 models x 3 arms x 6 runs
        assert {r["cause"] for r in stale} == {"superseded-scenario-version:1"}
        scores = json.loads((out / "data" / "scores.json").read_text("utf-8"))
        auth = [c for c in scores["cells"] if c["factors"]["scenario"] == "auth-token"]
        assert all(c["valid_runs"] == 0 and c["superseded_runs"] == 6 for c in auth)


class TestDisclosingOutcome:
    """A study never writes a bundle its own verify rejects: an outcome that would disclose a
    host path is withheld, not written."""

    def test_an_outcome_naming_the_host_is_withheld(self, tmp_path: Path) -> None:
        """A harness that echoes its user, working and home directories in its outcome: each
        such attempt is invalid (``outcome-discloses:host-path``), its outcome withheld and only
        its sha256 kept; the bundle verifies and holds none of those paths."""
        protocol = copy.deepcopy(BAD)
        protocol["participants"] = [
            {"id": "echo", "kind": "agent", "params": {"mode": "echo-host"}}
        ]
        protocol["retry"]["max_attempts"] = 1
        out = _study(tmp_path, protocol)
        records = _records(out)
        assert {(r["status"], r["cause"]) for r in records} == {
            ("invalid", "outcome-discloses:host-path")
        }
        assert all("outcome" not in r and len(r["outcome_sha256"]) == 64 for r in records)
        assert verify(out) == []
        home, cwd = str(Path.home()).encode(), str(Path.cwd()).encode()
        for path in out.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                assert home not in data and cwd not in data, path


class TestPinNames:
    """A pinned file or directory is named by what the protocol says, never by a path given on
    the command line."""

    def test_a_release_given_on_the_command_line_is_named_by_its_role(self, tmp_path: Path) -> None:
        """``--option release=/abs/alice-candidate`` pins the tree under the name ``release``:
        the directory's own name (the user's choice) is in no bundle file."""
        release = tmp_path / "alice-candidate"
        shutil.copytree(RELEASES / "v1", release)
        protocol = copy.deepcopy(BAD)
        protocol["participants"] = protocol["participants"][:1]
        out = _study(tmp_path, protocol, {"release": str(release)})
        ledger = json.loads((out / "data" / "source-ledger.json").read_text("utf-8"))
        assert [s["name"] for s in ledger["sources"] if s["role"] == "release"] == ["release"]
        for path in out.rglob("*"):
            if path.is_file():
                assert b"alice-candidate" not in path.read_bytes(), path
        assert verify(out) == []


class TestHarnessPath:
    """A harness (and release) the protocol names is found from the protocol's folder, as a
    policy module is; one given with --option, from the working directory."""

    def _protocol(self, folder: Path, harness: str) -> Path:
        protocol = copy.deepcopy(BAD)
        protocol["participants"] = protocol["participants"][:1]
        protocol["adapter"]["options"]["harness"] = harness
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "p.json"
        path.write_text(json.dumps(protocol), "utf-8")
        return path

    def test_found_from_the_protocols_folder_not_the_working_directory(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A protocol naming tools/h.py runs the harness in its own folder's tools/, from a
        working directory that holds another tools/h.py; its ledger pins the folder's one."""
        folder, elsewhere = tmp_path / "study", tmp_path / "elsewhere"
        for place, extra in ((folder, ""), (elsewhere, "# the working directory's\n")):
            (place / "tools").mkdir(parents=True)
            code = (HARNESS / "bad_harness.py").read_text("utf-8") + extra
            (place / "tools" / "h.py").write_text(code, "utf-8")
        path = self._protocol(folder, "tools/h.py")
        monkeypatch.chdir(elsewhere)
        prepared = prepare(path, {})
        pinned = next(s for s in prepared.frozen.sources if s.role == "harness")
        assert pinned.sha256 == hashlib.sha256((folder / "tools" / "h.py").read_bytes()).hexdigest()
        out = tmp_path / "out"
        study(prepared, out, _Quiet())
        assert {r["status"] for r in _records(out)} == {"valid"}

    def test_a_missing_harness_names_the_folder_and_the_json_path(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A harness that is not in the protocol's folder (though it is in the working
        directory) exits 2 from check and study, naming the folder searched and
        $.adapter.options.harness; nothing is written."""
        folder, elsewhere = tmp_path / "study", tmp_path / "elsewhere"
        elsewhere.mkdir()
        shutil.copy(HARNESS / "bad_harness.py", elsewhere / "h.py")
        path = self._protocol(folder, "h.py")
        monkeypatch.chdir(elsewhere)
        for args in (["protocol", "check", str(path)], ["study", str(path), "--out", "out"]):
            result = CliRunner().invoke(app, args)
            assert result.exit_code == 2, result.output
            said = " ".join(result.stderr.split())
            assert f"looked up in the protocol's folder {folder}" in said
            assert said.endswith("@ $.adapter.options.harness")
        assert sorted(os.listdir(elsewhere)) == ["h.py"]
        assert sorted(os.listdir(folder)) == ["p.json"]

    def test_an_option_is_found_from_the_working_directory(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """--option harness=PATH is the user's, found from the working directory as any
        command-line path; a missing one names --option and that directory."""
        folder, elsewhere = tmp_path / "study", tmp_path / "elsewhere"
        elsewhere.mkdir()
        shutil.copy(HARNESS / "bad_harness.py", elsewhere / "mine.py")
        path = self._protocol(folder, "absent.py")
        monkeypatch.chdir(elsewhere)
        prepared = prepare(path, {"harness": "mine.py"})
        assert [s.name for s in prepared.frozen.sources if s.role == "harness"] == ["harness"]
        with pytest.raises(BadInput) as refused:
            prepare(path, {"harness": "other.py"})
        assert str(refused.value) == (
            f"--option harness: 'other.py' is not a file (looked up in the working directory "
            f"{elsewhere})"
        )

    @pytest.mark.slow
    def test_a_bundle_naming_a_working_directory_path_verifies_and_replays(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A bundle made before harness paths were the protocol's folder's (its protocol named
        tests/h.py from a checkout's root, the protocol itself in protocols/) holds the same
        bytes as one made now from the checkout's root: it verifies with no harness anywhere,
        and replays byte-identical with --sources at the directory the path was relative to."""
        checkout = tmp_path / "checkout"
        (checkout / "tests").mkdir(parents=True)
        shutil.copy(HARNESS / "bad_harness.py", checkout / "tests" / "h.py")
        path = self._protocol(checkout, "tests/h.py")
        bundle = tmp_path / "bundle"
        study(prepare(path, {}), bundle, _Quiet())
        shutil.rmtree(checkout / "tests")
        monkeypatch.chdir(tmp_path)
        assert verify(bundle) == []
        (checkout / "tests").mkdir()
        shutil.copy(HARNESS / "bad_harness.py", checkout / "tests" / "h.py")
        replayed = CliRunner().invoke(
            app, ["replay", str(bundle), "c00-r0001", "--sources", str(checkout)]
        )
        assert replayed.exit_code == 0, replayed.output
        assert "byte-identical" in replayed.stdout


#: A harness that says why it fails on stderr, then exits 1.
_FAILING = """import sys
sys.stdin.read()
sys.stderr.write("harness: the model endpoint refused the key (HTTP 401)\\n")
sys.exit(1)
"""


@pytest.mark.slow
class TestReplayShowsHarnessStderr:
    def test_replay_traceback_prints_the_harness_stderr_and_records_nothing(
        self, tmp_path: Path
    ) -> None:
        """``repro replay DIR SLOT --traceback`` of a slot whose harness exited 1 prints the
        replayed harness's stderr on repro's stderr, under a heading that says no bundle keeps
        it; the slot still replays byte-identical (harness-exit:1), without --traceback the
        line is not printed, and no byte of the bundle changes or holds it."""
        folder = tmp_path / "study"
        folder.mkdir()
        (folder / "fails.py").write_text(_FAILING, "utf-8")
        protocol = copy.deepcopy(BAD)
        protocol["participants"] = protocol["participants"][:1]
        protocol["adapter"]["options"]["harness"] = "fails.py"
        (folder / "p.json").write_text(json.dumps(protocol), "utf-8")
        bundle = tmp_path / "bundle"
        study(prepare(folder / "p.json", {}), bundle, _Quiet())
        assert {r["cause"] for r in _records(bundle)} == {"harness-exit:1"}
        before = {p: p.read_bytes() for p in bundle.rglob("*") if p.is_file()}
        line = "harness: the model endpoint refused the key (HTTP 401)"
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        replay = [sys.executable, "-m", "repro", "replay", str(bundle), "c00-r0000"]
        replay += ["--sources", str(folder)]
        shown = subprocess.run(
            [*replay, "--traceback"], capture_output=True, text=True, env=env, timeout=300
        )
        assert shown.returncode == 0, shown.stderr
        assert "byte-identical" in shown.stdout
        said = shown.stderr.splitlines()
        heading = next(i for i, text in enumerate(said) if "harness stderr" in text)
        assert "not recorded in the bundle" in said[heading]
        assert said[heading + 1] == line
        assert "RunFailed: harness-exit:1" in shown.stderr
        plain = subprocess.run(replay, capture_output=True, text=True, env=env, timeout=300)
        assert plain.returncode == 0 and line not in plain.stderr
        assert {p: p.read_bytes() for p in bundle.rglob("*") if p.is_file()} == before
        assert not any(line.encode() in data for data in before.values())
