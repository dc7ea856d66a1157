"""Findings that point at the cause: when a file the derivations read changed, each derived
file's difference from its re-derivation follows from that change (the stored value may well be
the study's own), and verify says so: ``follows_from`` in ``--json``, grouped under the cause in
the text, with the stored value and the one re-derived from the bundle's runs named as such. A
derived file that differs while its inputs are intact is its own root cause."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from forge import reseal
from repro import _layout as layout
from repro._cli.app import app
from repro._json import canonical
from repro.verify import verify
from repro.verify._findings import CONSEQUENCES

runner = CliRunner()


def _copy(bundle: Path, tmp_path: Path) -> Path:
    root = tmp_path / "b"
    shutil.copytree(bundle, root)
    return root


def _edit_first_record(root: Path) -> str:
    """One run record's first step reward and its measure moved by 1 (consistently: the record
    keeps its rules), the manifests left as they were; the runs file's name."""
    runs = sorted((root / "data" / "runs").glob("*.jsonl"))[0]
    lines = runs.read_bytes().splitlines(keepends=True)
    record: dict[str, Any] = json.loads(lines[0])
    record["step_rewards"][0] += 1.0
    record["measure"] += 1.0
    lines[0] = canonical.dumps(record)
    runs.write_bytes(b"".join(lines))
    return runs.relative_to(root).as_posix()


class TestOneRecordEdited:
    """One edited run record gives one root-cause finding, and every re-derivation it moves
    marked as following from it."""

    @pytest.mark.slow
    def test_one_root_the_rest_follow(self, contrasted_bundle: Path, tmp_path: Path) -> None:
        """The runs file's digest is the one root cause; every other finding is a derived
        file's difference that follows from it."""
        root = _copy(contrasted_bundle, tmp_path)
        runs = _edit_first_record(root)
        findings = verify(root)
        roots = [f for f in findings if not f.follows_from]
        assert [(f.code, f.file) for f in roots] == [("digest-mismatch", runs)]
        following = [f for f in findings if f.follows_from]
        assert len(following) >= 10
        assert {f.code for f in following} <= CONSEQUENCES
        assert {f.file for f in following} >= {layout.AGGREGATES, layout.CONTRASTS}
        assert all(f.follows_from == (("digest-mismatch", runs),) for f in following)

    def test_json_and_text(self, contrasted_bundle: Path, tmp_path: Path) -> None:
        """--json gives each consequence its ``follows_from`` (code and file); the text puts
        them after the cause, each naming the stored value and the re-derived one as such."""
        root = _copy(contrasted_bundle, tmp_path)
        runs = _edit_first_record(root)
        result = runner.invoke(app, ["verify", str(root), "--json"])
        assert result.exit_code == 1
        found = json.loads(result.stdout)["findings"]
        assert "follows_from" not in found[0]
        assert all(
            f["follows_from"] == [{"code": "digest-mismatch", "file": runs}] for f in found[1:]
        )
        text = runner.invoke(app, ["verify", str(root)]).stderr.splitlines()
        assert text[0].startswith(f"FAIL {runs}: ")
        assert f"({runs} (digest-mismatch))" in text[1]
        follows = [line for line in text if line.startswith("  FOLLOWS ")]
        assert len(follows) == len(found) - 1
        differs = [line for line in follows if "re-derived value differs" in line]
        assert differs and all(
            ": stored " in line and ", re-derived from the bundle's runs " in line
            for line in differs
        )
        assert not any("expected" in line for line in differs)


class TestDerivedFileEdited:
    """A derived file edited, its inputs intact, is named as the root cause."""

    def test_its_own_root(self, contrasted_bundle: Path, tmp_path: Path) -> None:
        """aggregates.json's first mean moved, manifests regenerated: rederived-differs on it,
        following from nothing, worded as stored against re-derived."""
        root = _copy(contrasted_bundle, tmp_path)
        path = root / layout.AGGREGATES
        value = json.loads(path.read_bytes())
        value["conditions"][0]["mean"] += 1.0
        path.write_bytes(canonical.dumps(value))
        reseal(root)
        findings = verify(root)
        assert findings and all(not f.follows_from for f in findings)
        assert (findings[0].code, findings[0].file) == ("rederived-differs", layout.AGGREGATES)
        text = runner.invoke(app, ["verify", str(root)]).stderr
        assert (
            "FAIL data/aggregates.json: re-derived value differs @ $.conditions[0].mean: " in text
        )
        assert "stored " in text and "re-derived from the bundle's runs" in text
