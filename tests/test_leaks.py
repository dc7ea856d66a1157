"""Leaks: a study discloses nothing of the host it ran on, and verify flags what a bundle
discloses.

The sentinel study runs ``repro study`` in a child process whose home, working, temporary and
output directories, user name, environment and (where a UTS namespace can be entered) host name
all carry one unique string, with a participant whose failures put that string into exception
messages; then every byte and every name in the bundle is searched for it.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from attrs import frozen
from typer.testing import CliRunner

from conftest import ROOT, SMALL
from forge import reseal
from repro._cli.app import app
from repro._json import canonical

# Slow: probes studies' processes for leaks.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="the probe uses POSIX tools"),
]

runner = CliRunner()

#: Lower-case letters and digits only, so that it is a valid host name and user name too.
SENTINEL = f"zq{uuid.uuid4().hex[:12]}"


def _leak_protocol() -> dict[str, Any]:
    protocol = copy.deepcopy(SMALL)
    protocol["id"] = "leak-probe"
    protocol["matrix"] = [{"name": "env_id", "levels": ["CartPole-v1"]}]
    protocol["participants"] = [
        {"id": "leaky", "kind": "callable", "params": {"target": "repro_test_policies:leaky"}},
        {"id": "random", "kind": "random", "params": {}},
    ]
    protocol["runs_per_condition"] = 10
    protocol["retry"] = {"max_attempts": 2}
    return protocol


@frozen
class Probe:
    """The sentinel study: its bundle, the child's results and whether the host name was set
    (``host_name_skipped`` gives the reason when it was not)."""

    bundle: Path
    study: subprocess.CompletedProcess[str]
    verify: subprocess.CompletedProcess[str]
    host_name_seen: str | None
    host_name_skipped: str | None


def _uts_namespace(command: list[str], seen: Path) -> tuple[list[str], str | None]:
    """``command`` run in a new UTS namespace whose host name is the sentinel (the name the
    child sees is written to ``seen``), or ``command`` unchanged and the reason why not."""
    unshare, hostname = shutil.which("unshare"), shutil.which("hostname")
    if unshare is None or hostname is None:
        return command, "unshare or hostname is not installed"
    trial = subprocess.run(
        [unshare, "--uts", hostname, SENTINEL], capture_output=True, text=True, check=False
    )
    if trial.returncode != 0:
        return command, f"cannot enter a UTS namespace here: {trial.stderr.strip()}"
    script = 'hostname "$0" && uname -n > "$REPRO_PROBE_SEEN" && exec "$@"'
    return [unshare, "--uts", "sh", "-c", script, SENTINEL, *command], None


@pytest.fixture(scope="class")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Probe:
    """Run the sentinel study once for the class, and verify its bundle."""
    base = tmp_path_factory.mktemp("leaks")
    home, work, tmp = (base / f"{role}-{SENTINEL}" for role in ("home", "work", "tmp"))
    for directory in (home, work, tmp):
        directory.mkdir()
    (work / "protocol.json").write_text(json.dumps(_leak_protocol()), "utf-8")
    seen = base / "host-name-seen"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(ROOT / "tests"),
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "USER": SENTINEL,
        "LOGNAME": SENTINEL,
        "REPRO_PROBE_VALUE": f"value-{SENTINEL}",
        "AWS_SECRET_ACCESS_KEY": f"{SENTINEL}wJalrXUtnFEMIK7MDENG",
        "REPRO_PROBE_SEEN": str(seen),
    }
    out = f"out-{SENTINEL}/bundle"
    # The sentinel in a directory name above the root too: repro creates the root alone.
    (work / f"out-{SENTINEL}").mkdir()
    # Slots are lost on purpose (the leaky participant fails some for good).
    study = [
        *(sys.executable, "-m", "repro", "study", "protocol.json", "--out", out),
        "--accept-losses",
    ]
    command, skipped = _uts_namespace(study, seen)
    done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, check=False)
    verify = subprocess.run(
        [sys.executable, "-m", "repro", "verify", "--json", out],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return Probe(
        bundle=work / out,
        study=done,
        verify=verify,
        host_name_seen=seen.read_text().strip() if seen.exists() else None,
        host_name_skipped=skipped,
    )


class TestSentinelStudy:
    """A study run with the sentinel planted everywhere the host could leak discloses none of
    it."""

    def test_study_ran_with_failed_attempts(self, probe: Probe) -> None:
        """The study exits 0 (its losses accepted), and the leaky participant's exceptions were
        recorded: some slots failed for good, some recovered on their retry, every cause a
        short code."""
        assert probe.study.returncode == 0, probe.study.stderr
        records = [
            json.loads(line)
            for path in sorted((probe.bundle / "data/runs").iterdir())
            for line in path.read_text().splitlines()
        ]
        failed = [r for r in records if r["status"] == "failed"]
        assert failed and {r["cause"] for r in failed} == {"policy-error:RuntimeError"}
        recovered = [r for r in records if r["status"] == "valid" and r["predecessor"]]
        assert recovered
        ledger = json.loads((probe.bundle / "data/source-ledger.json").read_text())
        assert ledger["losses"]
        assert "repro_test_policies.py" in {s["name"] for s in ledger["sources"]}

    def test_no_sentinel_or_traceback_anywhere(self, probe: Probe) -> None:
        """No file name and no byte of any file in the bundle holds the sentinel (in any case)
        or a traceback."""
        paths = sorted(probe.bundle.rglob("*"))
        files = [p for p in paths if p.is_file()]
        assert len(files) >= 10
        for path in paths:
            assert SENTINEL not in path.relative_to(probe.bundle).as_posix().lower()
        for path in files:
            data = path.read_bytes()
            assert SENTINEL.encode() not in data.lower(), path
            assert b"Traceback" not in data, path

    def test_host_name_planted(self, probe: Probe) -> None:
        """The child ran under the sentinel as its host name (skipped, with the reason, where
        no UTS namespace can be entered); the search above then covers the host name too."""
        if probe.host_name_skipped is not None:
            pytest.skip(probe.host_name_skipped)
        assert probe.host_name_seen == SENTINEL

    def test_verify_passes_and_disclosure_holds(self, probe: Probe) -> None:
        """repro verify exits 0 with no findings, and the disclosure tier is not 'fail'."""
        assert probe.verify.returncode == 0, probe.verify.stdout + probe.verify.stderr
        report = json.loads(probe.verify.stdout)
        assert (report["ok"], report["findings"]) == (True, [])
        tiers = json.loads((probe.bundle / "data/tiers.json").read_text())
        verdicts = {t["name"]: t["verdict"] for t in tiers["tiers"]}
        assert verdicts["disclosure"] != "fail"


def _plant_in_environment(text: str) -> Callable[[Path], None]:
    def plant(bundle: Path) -> None:
        path = bundle / "data/environment.json"
        environment = json.loads(path.read_bytes())
        environment["platform"] = f"Linux {text}"
        path.write_bytes(canonical.dumps(environment))

    return plant


def _plant_in_cause(text: str) -> Callable[[Path], None]:
    def plant(bundle: Path) -> None:
        path = bundle / "data/runs/c00.jsonl"
        lines = path.read_bytes().splitlines(keepends=True)
        record = json.loads(lines[0])
        record["cause"] = f"environment-error: {text}"
        path.write_bytes(canonical.dumps(record) + b"".join(lines[1:]))

    return plant


#: What is planted: (the text, where it goes, the kind the finding names).
PLANTS = [
    ("/home/alice/.cache/run", _plant_in_environment, "host-path"),
    ("ghp_" + "a1B2c3D4e5" * 4, _plant_in_environment, "credential"),
    ('Traceback (most recent call last): File "x.py", line 3', _plant_in_environment, "traceback"),
    (r"C:\Users\alice\run.py", _plant_in_cause, "host-path"),
    ("password=hunter22", _plant_in_cause, "credential"),
]


class TestPlantedDisclosure:
    """Content planted into a real bundle, with both manifests regenerated, is flagged by verify,
    and the stored disclosure tier no longer re-derives."""

    @pytest.mark.parametrize(
        ("text", "plant", "kind"),
        PLANTS,
        ids=["env-host-path", "env-token", "env-traceback", "cause-windows-path", "cause-password"],
    )
    def test_verify_flags_and_tier_rederives_fail(
        self,
        bundle_copy: Path,
        text: str,
        plant: Callable[[str], Callable[[Path], None]],
        kind: str,
    ) -> None:
        """verify exits 1 with a disclosure finding naming the file, the kind and the byte where
        the planted text starts, never echoing it; the re-derived disclosure tier is 'fail'
        where the stored one says 'pass'."""
        plant(text)(bundle_copy)
        reseal(bundle_copy)
        file = "data/environment.json" if plant is _plant_in_environment else "data/runs/c00.jsonl"
        offset = (bundle_copy / file).read_bytes().index(canonical.dumps(text, newline=False)[1:9])
        result = runner.invoke(app, ["verify", "--json", str(bundle_copy)])
        assert result.exit_code == 1, result.output
        findings = json.loads(result.stdout)["findings"]
        assert {
            "file": file,
            "what": f"disclosure: {kind} at byte {offset}",
            "expected": "no host path, traceback or credential-looking string",
        }.items() <= next(f for f in findings if f["what"].startswith("disclosure")).items()
        assert not [f for f in findings if "manifest" in f["what"] or "Payload" in f["what"]]
        assert all(text[-8:] not in value for f in findings for value in f.values())
        stored = json.loads((bundle_copy / "data/tiers.json").read_text())["tiers"][5]
        assert stored["name"] == "disclosure" and stored["verdict"] == "pass"
        tier = [f for f in findings if f["file"] == "data/tiers.json"]
        assert {"what": "re-derived value differs @ $.tiers[5].verdict"}.items() <= next(
            f for f in tier if f["what"].endswith("verdict")
        ).items()
        assert [f["expected"] for f in tier if f["what"].endswith("verdict")] == ['"fail"']

    def test_many_hits_are_bounded(self, bundle_copy: Path) -> None:
        """Thirty planted paths give 25 findings one by one and one that counts the other 5; the
        re-derived tier's reason counts all thirty."""
        _plant_in_environment(" ".join(f"/tmp/x{i}" for i in range(30)))(bundle_copy)
        reseal(bundle_copy)
        result = runner.invoke(app, ["verify", "--json", str(bundle_copy)])
        assert result.exit_code == 1, result.output
        findings = json.loads(result.stdout)["findings"]
        mine = [f for f in findings if f["file"] == "data/environment.json"]
        assert [f["what"].split(" at ")[0] for f in mine] == ["disclosure: host-path"] * 25 + [
            "5 further disclosure hits"
        ]
        tier = next(
            f for f in findings if f["what"] == "re-derived value differs @ $.tiers[5].reason"
        )
        assert tier["expected"].startswith('"30 hit(s) in 1 input file(s)')
