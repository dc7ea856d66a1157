"""The scored example study end to end: it verifies offline, ``repro compare`` finds a seeded
regression in a candidate release and stays quiet on a re-run of the same release, ``repro
publish`` writes its table only when every gate holds, and ``repro verify`` re-derives scores
and gates from the retained outcomes (a changed outcome, score or status is named)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import ROOT, _Quiet
from forge import reseal
from repro._cli.app import app
from repro._execute.studies import prepare, study
from repro.verify import verify

# Slow: scored studies end to end.
pytestmark = pytest.mark.slow

EXAMPLE = ROOT / "protocols" / "agent-gate-eval.json"
RELEASES = ROOT / "protocols" / "harness" / "releases"
runner = CliRunner()


def _study(root: Path, release: Path | None = None) -> Path:
    options = {"release": str(release)} if release is not None else {}
    study(prepare(EXAMPLE, options), root, _Quiet())
    return root


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The example study with release v1 twice, with the regressed candidate, and with a
    release that crashes on one scenario."""
    tmp = tmp_path_factory.mktemp("scored")
    crash = tmp / "crash-release"
    crash.mkdir()
    (crash / "release.json").write_text('{"crash": ["cache-purge"]}', "utf-8")
    return {
        "v1": _study(tmp / "v1"),
        "v1-again": _study(tmp / "v1-again"),
        "v2": _study(tmp / "v2", RELEASES / "v2-regressed"),
        "crash": _study(tmp / "crash", crash),
    }


def _json(path: Path) -> Any:
    return json.loads(path.read_text("utf-8"))


def test_every_bundle_verifies_offline(bundles: dict[str, Path]) -> None:
    """Each study of the example, even the one with failed runs, is a bundle that verifies."""
    for root in bundles.values():
        assert verify(root) == [], root


def test_compare_is_quiet_on_a_rerun_of_the_same_release(bundles: dict[str, Path]) -> None:
    """The same release run again: no regression, exit 0, every run equal, and the tier of
    observed states said to be unobserved rather than equal."""
    result = runner.invoke(app, ["compare", str(bundles["v1"]), str(bundles["v1-again"])])
    assert result.exit_code == 0, result.output
    assert "no regression, improvement where there is headroom" in result.output
    assert "identical" in result.output
    # The harness is a black box: no trace digest on either side, which is not an agreement.
    assert "tier state-observation: not observed in either bundle" in result.output
    assert "tier outcome-evaluation: equal" in result.output


def test_compare_finds_the_seeded_regression(bundles: dict[str, Path]) -> None:
    """The candidate that forgets the concept 'token expiry' is reported regressed on it, and
    the command exits 1; --json says the same."""
    args = ["compare", str(bundles["v1"]), str(bundles["v2"])]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert "concept 'token expiry': no longer covered in every run" in result.output
    report = json.loads(runner.invoke(app, [*args, "--json"]).output)
    assert report["regression"] is True
    concepts = {f["concept"] for f in report["scores"]["findings"] if f["kind"] == "regression"}
    assert "token expiry" in concepts


def test_publish_writes_the_table_when_every_gate_holds(
    bundles: dict[str, Path], tmp_path: Path
) -> None:
    """All gates hold for v1: the table is written, training and holdout apart, and each
    check's passes in it are those of scores.json."""
    out = tmp_path / "table.md"
    result = runner.invoke(app, ["publish", str(bundles["v1"]), "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text("utf-8")
    assert "## Training scenarios" in text and "## Holdout scenarios" in text
    scores = _json(bundles["v1"] / "data" / "scores.json")
    for cell in scores["cells"]:
        row = next(
            line
            for line in text.splitlines()
            if line.startswith(f"| {cell['factors']['scenario']} | {cell['factors']['model']} ")
            and f"| {cell['factors']['arm']} |" in line
        )
        for check in cell["checks"]:
            assert f"{check['passed']}/{check['runs']}" in row


def test_publish_refuses_a_broken_gate_and_writes_nothing(
    bundles: dict[str, Path], tmp_path: Path
) -> None:
    """With one scenario's runs all failed, completeness fails (grouped by cause) and the
    control floor has no control runs there: exit 1, each failed gate named, no file."""
    out = tmp_path / "table.md"
    result = runner.invoke(app, ["publish", str(bundles["crash"]), "--out", str(out)])
    assert result.exit_code == 1
    assert "gate completeness fails: 36 of 144 slots failed: harness-exit:3 (36)" in result.output
    assert "gate control-floor fails" in result.output
    assert not out.exists()


def test_publish_refuses_an_unscored_bundle(small_bundle: Path, tmp_path: Path) -> None:
    """A bundle without scoring has nothing to publish: exit 2, nothing written."""
    out = tmp_path / "table.md"
    result = runner.invoke(app, ["publish", str(small_bundle), "--out", str(out)])
    assert result.exit_code == 2
    assert not out.exists()


def test_compare_refuses_other_families(bundles: dict[str, Path], small_bundle: Path) -> None:
    """Bundles of different protocols are not compared: exit 2."""
    result = runner.invoke(app, ["compare", str(bundles["v1"]), str(small_bundle)])
    assert result.exit_code == 2
    assert "not one protocol family" in result.output


def test_compare_runs_two_bundles_of_any_protocol(small_bundle: Path, tmp_path: Path) -> None:
    """Two bundles of an unscored protocol are compared run by run: a copy is identical in
    every aspect, and equal in every tier (the simulator's trace digests observed on both)."""
    copy = tmp_path / "copy"
    shutil.copytree(small_bundle, copy)
    result = runner.invoke(app, ["compare", str(small_bundle), str(copy)])
    assert result.exit_code == 0, result.output
    assert "identical" in result.output
    for tier in ("execution-control", "state-observation", "outcome-evaluation"):
        assert f"tier {tier}: equal" in result.output


_FLIP = {"pass": "block", "block": "pass"}


def _edit_first_run(root: Path, change: Any) -> None:
    path = root / "data" / "runs" / "c00.jsonl"
    lines = path.read_text("utf-8").splitlines(keepends=True)
    record = json.loads(lines[0])
    change(record)
    lines[0] = json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n"
    path.write_text("".join(lines), "utf-8")
    reseal(root)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda r: r["outcome"].update(verdict=_FLIP[r["outcome"]["verdict"]]), "data/scores.json"),
        (lambda r: r.update(status="excluded", cause="superseded-scenario-version:1"), "c00-r0"),
    ],
)
def test_verify_rederives_scores_from_the_outcomes(
    bundles: dict[str, Path], tmp_path: Path, change: Any, named: str
) -> None:
    """An outcome changed (and the manifests regenerated) changes the re-derived scores, which
    no longer match scores.json; a run falsely marked superseded breaks the version verdict.
    Each is named."""
    root = tmp_path / "bundle"
    shutil.copytree(bundles["v1"], root)
    _edit_first_run(root, change)
    findings = verify(root)
    assert any(named in f.file or named in f.what or named in str(f.found) for f in findings), [
        f.as_dict() for f in findings
    ]


def test_verify_names_a_changed_score(bundles: dict[str, Path], tmp_path: Path) -> None:
    """A pass count edited in scores.json (manifests regenerated) is named."""
    root = tmp_path / "bundle"
    shutil.copytree(bundles["v1"], root)
    path = root / "data" / "scores.json"
    scores = _json(path)
    scores["cells"][0]["checks"][0]["passed"] += 1
    path.write_text(json.dumps(scores, sort_keys=True, separators=(",", ":")) + "\n", "utf-8")
    reseal(root)
    assert any(f.file == "data/scores.json" for f in verify(root))


def test_publish_has_no_empty_section(bundles: dict[str, Path], tmp_path: Path) -> None:
    """The published table's Gates section lists every declared gate and, for scores that
    declare none, says "None declared" rather than leaving an empty heading; every heading of
    the table has text under it."""
    import attrs

    from repro._present.publishing import table
    from repro.verify import open_verified

    v = open_verified(bundles["v1"])
    assert v.scores is not None and v.scores.gates
    declared = table(v.protocol, v.scores)
    none = table(v.protocol, attrs.evolve(v.scores, gates=()))
    for g in v.scores.gates:
        assert f"- {g.name}: holds (" in declared
    assert "None declared" not in declared
    gates = none.split("## Gates\n", 1)[1]
    assert gates.strip().startswith("None declared"), gates
    for text in (declared, none):
        sections = text.split("\n## ")[1:]
        assert all(s.split("\n", 1)[1].strip() for s in sections), text
