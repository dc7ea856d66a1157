"""Tamper corpus: every change to a sealed bundle makes ``repro verify`` fail and name it."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bagit
import pytest
from typer.testing import CliRunner, Result

from conftest import ROOT, deadline
from forge import reseal, retag, sha256
from repro._bundle.writer import BAGIT_TXT
from repro._cli.app import app
from repro._json import canonical
from repro._layout import MANIFEST, TAGMANIFEST
from repro.verify import verify

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="symlinks, FIFOs and SIGALRM need POSIX"
)

runner = CliRunner()

#: Every file a bundle of the small protocol holds (two environments x two participants).
BUNDLE_FILES = (
    "bag-info.txt",
    "bagit.txt",
    "data/aggregates.json",
    "data/environment.json",
    "data/plans/c00.json",
    "data/plans/c01.json",
    "data/plans/c02.json",
    "data/plans/c03.json",
    "data/plans/seal.json",
    "data/protocol.json",
    "data/ro-crate-metadata.json",
    "data/runs/c00.jsonl",
    "data/runs/c01.jsonl",
    "data/runs/c02.jsonl",
    "data/runs/c03.jsonl",
    "data/source-ledger.json",
    "data/tiers.json",
    "data/times/c00.jsonl",
    "data/times/c01.jsonl",
    "data/times/c02.jsonl",
    "data/times/c03.jsonl",
    "data/validation-report.md",
    MANIFEST,
    TAGMANIFEST,
)

Finding = dict[str, str]


# --------------------------------------------------------------------------- helpers


def _invoke(*args: str) -> Result:
    return runner.invoke(app, list(args))


def _flat(text: str) -> str:
    """Output with runs of white space collapsed: Rich wraps long lines at the console width."""
    return " ".join(text.split())


def _failing(root: Path) -> tuple[str, list[Finding]]:
    """Run ``verify`` in text and JSON mode; both must exit 1. Returns the flattened text output
    and the JSON findings, whose structure is checked on the way."""
    text = _invoke("verify", str(root))
    assert text.exit_code == 1, text.output
    as_json = _invoke("verify", "--json", str(root))
    assert as_json.exit_code == 1, as_json.output
    report = json.loads(as_json.stdout)
    assert set(report) == {"ok", "bundle_sha256", "findings"}
    assert report["bundle_sha256"] is None
    assert report["ok"] is False
    assert report["findings"], "exit 1 without a single finding"
    for finding in report["findings"]:
        location = finding.pop("location")
        # What a finding follows from, where it does: each a finding's code and file.
        causes = finding.get("follows_from", [])
        assert all(set(c) == {"code", "file"} for c in causes)
        fields = set(finding) - {"follows_from"}
        assert fields == {"code", "file", "what", "expected", "found"}
        assert all(isinstance(finding[k], str) for k in fields)
        # Where in the file, as data: a line, a JSON path, a slot or attempt ID, or null.
        assert set(location) == {"line", "path", "item"}
        assert location["line"] is None or isinstance(location["line"], int)
        assert all(v is None or isinstance(v, str) for k, v in location.items() if k != "line")
    return _flat(text.output), report["findings"]


def _named(text: str, findings: list[Finding], file: str, phrase: str) -> Finding:
    """The finding for ``file`` whose ``what`` contains ``phrase``; the text output must show it
    (as a root finding, or as one that follows from another)."""
    hits = [f for f in findings if f["file"] == file and phrase in f["what"]]
    assert hits, f"no finding for {file} with {phrase!r}: {findings}"
    assert f"{'FOLLOWS' if hits[0].get('follows_from') else 'FAIL'} {file}: " in text
    assert _flat(hits[0]["what"]) in text
    return hits[0]


def _integrity_findings(findings: list[Finding]) -> list[Finding]:
    words = ("manifest", "Payload-Oxum", "BagIt", "outside the bag", "symbolic", "special")
    return [f for f in findings if any(w in f["what"] for w in words)]


def _edit_lines(path: Path, edit: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> None:
    """Parse a JSON Lines file, apply ``edit`` and write it back in canonical form."""
    data = path.read_bytes()
    records = [json.loads(line) for line in data.splitlines()]
    # The re-serialisation itself must not be a change: canonical in, canonical out.
    assert b"".join(canonical.dumps(r) for r in records) == data
    path.write_bytes(b"".join(canonical.dumps(r) for r in edit(records)))


def _edit_json(path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Parse a canonical JSON file, apply ``edit`` in place and write it back canonically."""
    value = json.loads(path.read_bytes())
    assert canonical.dumps(value) == path.read_bytes()
    edit(value)
    path.write_bytes(canonical.dumps(value))


def _flip_middle_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


# --------------------------------------------------------------------------- tests


class TestUntouched:
    """A bundle as ``repro study`` wrote it verifies, with repro and with the bagit package."""

    def test_copy_verifies(self, bundle_copy: Path) -> None:
        """An untouched copy verifies: exit 0 and an OK line."""
        result = _invoke("verify", str(bundle_copy))
        assert result.exit_code == 0, result.output
        assert "OK:" in result.stdout

    def test_copy_verifies_as_json(self, bundle_copy: Path) -> None:
        """``--json`` on an untouched copy reports ok true, no findings and the bundle's
        identity: the sha256 of its tag manifest, the same as the original's."""
        result = _invoke("verify", "--json", str(bundle_copy))
        assert result.exit_code == 0, result.output
        tag_manifest = (bundle_copy / TAGMANIFEST).read_bytes()
        assert json.loads(result.stdout) == {
            "ok": True,
            "bundle_sha256": hashlib.sha256(tag_manifest).hexdigest(),
            "findings": [],
        }

    def test_file_list_is_the_corpus(self, small_bundle: Path) -> None:
        """The bundle holds exactly the files the byte-flip corpus covers."""
        found = sorted(
            p.relative_to(small_bundle).as_posix() for p in small_bundle.rglob("*") if p.is_file()
        )
        assert found == sorted(BUNDLE_FILES)

    def test_bagit_package_validates(self, small_bundle: Path) -> None:
        """The reference bagit implementation validates the bundle (manifests, oxum, tags)."""
        bagit.Bag(str(small_bundle)).validate()

    def test_bagit_package_sees_a_payload_flip(self, bundle_copy: Path) -> None:
        """After one payload byte flips, the bagit package no longer finds the bag valid."""
        _flip_middle_byte(bundle_copy / "data/aggregates.json")
        assert not bagit.Bag(str(bundle_copy)).is_valid()


class TestByteFlips:
    """Changing any single byte of any file of the bundle fails verification and names the file."""

    @pytest.mark.parametrize("name", BUNDLE_FILES)
    def test_flip_is_named(self, bundle_copy: Path, name: str) -> None:
        """XOR 0x01 on the middle byte of the file: exit 1, and the output names that file."""
        _flip_middle_byte(bundle_copy / name)
        text, findings = _failing(bundle_copy)
        assert any(f["file"] == name or name in f["what"] for f in findings), findings
        assert name in text

    @pytest.mark.parametrize("name", [n for n in BUNDLE_FILES if n.startswith("data/")])
    def test_payload_flip_is_a_digest_mismatch(self, bundle_copy: Path, name: str) -> None:
        """A flipped payload byte is reported as a sha256 mismatch against the manifest."""
        listed = sha256(bundle_copy / name)
        _flip_middle_byte(bundle_copy / name)
        text, findings = _failing(bundle_copy)
        finding = _named(text, findings, name, "sha256 differs")
        assert finding["expected"] == listed
        assert finding["found"] == sha256(bundle_copy / name)

    def test_forged_tagmanifest_digest_is_named(self, bundle_copy: Path) -> None:
        """A well-formed but wrong digest in tagmanifest-sha256.txt names the tag manifest."""
        tagmanifest = bundle_copy / TAGMANIFEST
        lines = tagmanifest.read_text("utf-8").splitlines(keepends=True)
        digest, path = lines[0].split("  ", 1)
        forged = ("0" if digest[0] != "0" else "1") + digest[1:]
        tagmanifest.write_text("".join([f"{forged}  {path}", *lines[1:]]), "utf-8")
        text, findings = _failing(bundle_copy)
        assert _integrity_findings(findings)
        assert any(TAGMANIFEST in (f["file"] + f["what"]) for f in findings), findings
        assert TAGMANIFEST in text

    def test_bagit_declaration_flip(self, bundle_copy: Path) -> None:
        """A changed bagit.txt is reported as a wrong BagIt declaration."""
        _flip_middle_byte(bundle_copy / "bagit.txt")
        text, findings = _failing(bundle_copy)
        _named(text, findings, "bagit.txt", "BagIt declaration")


class TestMissingFiles:
    """Deleting a payload or tag file fails verification and names the file."""

    @pytest.mark.parametrize(
        "name", ["data/aggregates.json", "data/runs/c00.jsonl", "data/plans/c01.json"]
    )
    def test_payload_deleted(self, bundle_copy: Path, name: str) -> None:
        """A deleted payload file is listed in the manifest but missing."""
        (bundle_copy / name).unlink()
        text, findings = _failing(bundle_copy)
        _named(text, findings, name, f"listed in {MANIFEST} but missing")
        _named(text, findings, name, "expected bundle file is missing")

    def test_manifest_deleted(self, bundle_copy: Path) -> None:
        """A deleted manifest-sha256.txt is a missing manifest, and missing per the tag manifest."""
        (bundle_copy / MANIFEST).unlink()
        text, findings = _failing(bundle_copy)
        _named(text, findings, MANIFEST, "missing manifest")
        _named(text, findings, MANIFEST, f"listed in {TAGMANIFEST} but missing")

    def test_tagmanifest_deleted(self, bundle_copy: Path) -> None:
        """A deleted tagmanifest-sha256.txt is a missing manifest."""
        (bundle_copy / TAGMANIFEST).unlink()
        text, findings = _failing(bundle_copy)
        _named(text, findings, TAGMANIFEST, "missing manifest")

    def test_bagit_txt_deleted(self, bundle_copy: Path) -> None:
        """A deleted bagit.txt is a missing BagIt declaration."""
        (bundle_copy / "bagit.txt").unlink()
        text, findings = _failing(bundle_copy)
        _named(text, findings, "bagit.txt", "missing BagIt declaration")

    def test_bag_info_deleted(self, bundle_copy: Path) -> None:
        """A deleted bag-info.txt is reported missing."""
        (bundle_copy / "bag-info.txt").unlink()
        text, findings = _failing(bundle_copy)
        _named(text, findings, "bag-info.txt", "missing bag-info.txt")


class TestAddedFiles:
    """Any file the sealed bundle did not contain fails verification and is named."""

    def test_extra_payload_file(self, bundle_copy: Path) -> None:
        """data/extra.json is not listed in the manifest, and the Payload-Oxum no longer holds."""
        (bundle_copy / "data/extra.json").write_bytes(b"{}\n")
        text, findings = _failing(bundle_copy)
        _named(text, findings, "data/extra.json", f"not listed in {MANIFEST}")
        _named(text, findings, "bag-info.txt", "Payload-Oxum")

    def test_extra_file_at_root(self, bundle_copy: Path) -> None:
        """A file beside the tag files is outside the bag layout."""
        (bundle_copy / "NOTES.txt").write_text("trust me\n", "utf-8")
        text, findings = _failing(bundle_copy)
        _named(text, findings, "NOTES.txt", "outside the bag layout")

    def test_extra_directory_at_root(self, bundle_copy: Path) -> None:
        """A file in a new top-level directory is outside the bag layout."""
        (bundle_copy / "more").mkdir()
        (bundle_copy / "more/runs.jsonl").write_text("{}\n", "utf-8")
        text, findings = _failing(bundle_copy)
        _named(text, findings, "more/runs.jsonl", "outside the bag layout")

    def test_extra_runs_file_with_forged_manifest(self, bundle_copy: Path) -> None:
        """A runs file the seal does not name fails even when the manifests list it."""
        shutil.copyfile(bundle_copy / "data/runs/c00.jsonl", bundle_copy / "data/runs/c99.jsonl")
        reseal(bundle_copy)
        text, findings = _failing(bundle_copy)
        _named(text, findings, "data/runs/c99.jsonl", "file not named by the seal")
        assert _integrity_findings(findings) == []


class TestLinksAndSpecialFiles:
    """Only regular files and directories belong in a bundle."""

    def test_file_replaced_by_symlink(self, bundle_copy: Path, tmp_path: Path) -> None:
        """A payload file replaced by a symlink to an identical copy outside is refused."""
        name = "data/aggregates.json"
        outside = tmp_path / "outside" / "aggregates.json"
        outside.parent.mkdir()
        shutil.copyfile(bundle_copy / name, outside)
        (bundle_copy / name).unlink()
        (bundle_copy / name).symlink_to(outside)
        text, findings = _failing(bundle_copy)
        finding = _named(text, findings, name, "symbolic link")
        assert finding["found"] == "a symlink"

    def test_tag_file_replaced_by_symlink(self, bundle_copy: Path, tmp_path: Path) -> None:
        """A tag file replaced by a symlink to an identical copy outside is refused."""
        outside = tmp_path / "bagit.txt"
        shutil.copyfile(bundle_copy / "bagit.txt", outside)
        (bundle_copy / "bagit.txt").unlink()
        (bundle_copy / "bagit.txt").symlink_to(outside)
        text, findings = _failing(bundle_copy)
        _named(text, findings, "bagit.txt", "symbolic link")

    def test_directory_replaced_by_symlink(self, bundle_copy: Path, tmp_path: Path) -> None:
        """data/runs replaced by a symlink to an identical directory outside is refused."""
        outside = tmp_path / "runs"
        shutil.copytree(bundle_copy / "data/runs", outside)
        shutil.rmtree(bundle_copy / "data/runs")
        (bundle_copy / "data/runs").symlink_to(outside, target_is_directory=True)
        text, findings = _failing(bundle_copy)
        _named(text, findings, "data/runs", "symbolic link")

    def test_fifo_in_payload(self, bundle_copy: Path) -> None:
        """A FIFO in data/ is named as a special file, and verify does not block on it."""
        os.mkfifo(bundle_copy / "data/pipe")
        with deadline(20):
            text, findings = _failing(bundle_copy)
        _named(text, findings, "data/pipe", "special file")


class TestForgedContent:
    """Edits with manifests regenerated (integrity holds) are still caught by re-derivation."""

    def test_measure_edited(self, bundle_copy: Path) -> None:
        """A run's measure changed alone: the measure/step-rewards mismatch and the aggregates
        difference are both named."""
        runs = bundle_copy / "data/runs/c00.jsonl"
        edited: dict[str, Any] = {}

        def edit(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
            first = records[0]
            assert first["status"] == "valid"
            first["measure"] = float(first["measure"]) + 1000.5
            edited.update(first)
            return records

        _edit_lines(runs, edit)
        reseal(bundle_copy)
        assert bagit.Bag(str(bundle_copy)).is_valid()
        text, findings = _failing(bundle_copy)
        assert _integrity_findings(findings) == []
        mismatch = _named(
            text,
            findings,
            "data/runs/c00.jsonl",
            f"{edited['attempt_id']}: measure differs from the sum of its step rewards",
        )
        assert mismatch["found"] == repr(edited["measure"])
        assert mismatch["expected"] == repr(math.fsum(edited["step_rewards"]))
        _named(text, findings, "data/aggregates.json", "re-derived value differs @ $.conditions[0]")

    def test_measure_and_step_rewards_edited(self, bundle_copy: Path) -> None:
        """A run's measure and step rewards changed consistently: aggregates.json no longer
        matches its re-derivation."""
        runs = bundle_copy / "data/runs/c00.jsonl"

        def edit(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
            first = records[0]
            first["step_rewards"] = [*first["step_rewards"][:-1], 250.0]
            first["measure"] = math.fsum(first["step_rewards"])
            return records

        _edit_lines(runs, edit)
        reseal(bundle_copy)
        assert bagit.Bag(str(bundle_copy)).is_valid()
        text, findings = _failing(bundle_copy)
        assert _integrity_findings(findings) == []
        assert not [f for f in findings if "measure differs" in f["what"]]
        finding = _named(
            text, findings, "data/aggregates.json", "re-derived value differs @ $.conditions[0]"
        )
        assert finding["expected"] != finding["found"]

    def test_run_line_removed(self, bundle_copy: Path) -> None:
        """A slot's run records removed: that slot is named as having no terminal outcome."""
        runs = bundle_copy / "data/runs/c00.jsonl"
        removed: list[str] = []

        def edit(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
            removed.append(records[0]["slot"])
            return [r for r in records if r["slot"] != removed[0]]

        _edit_lines(runs, edit)
        reseal(bundle_copy)
        text, findings = _failing(bundle_copy)
        assert _integrity_findings(findings) == []
        finding = _named(
            text, findings, "data/runs/c00.jsonl", f"{removed[0]}: slot has no terminal outcome"
        )
        assert finding["found"] == "0 records"

    def test_tier_verdict_edited(self, bundle_copy: Path) -> None:
        """A tier verdict changed to fail: tiers.json is named with the differing path."""

        def edit(tiers: dict[str, Any]) -> None:
            assert tiers["tiers"][0]["verdict"] == "pass"
            tiers["tiers"][0]["verdict"] = "fail"

        _edit_json(bundle_copy / "data/tiers.json", edit)
        reseal(bundle_copy)
        text, findings = _failing(bundle_copy)
        assert _integrity_findings(findings) == []
        finding = _named(text, findings, "data/tiers.json", "re-derived value differs")
        assert finding["what"].endswith("@ $.tiers[0].verdict")
        assert (finding["expected"], finding["found"]) == ('"pass"', '"fail"')

    def test_reproduction_verdict_edited(self, bundle_copy: Path) -> None:
        """The reproduction class upgraded by hand: tiers.json is named."""

        def edit(tiers: dict[str, Any]) -> None:
            tiers["reproduction"]["verdict"] = "exact"

        _edit_json(bundle_copy / "data/tiers.json", edit)
        reseal(bundle_copy)
        text, findings = _failing(bundle_copy)
        _named(text, findings, "data/tiers.json", "@ $.reproduction.verdict")

    def test_non_canonical_bytes(self, bundle_copy: Path) -> None:
        """The same aggregates re-serialised with indentation are refused as non-canonical."""
        path = bundle_copy / "data/aggregates.json"
        path.write_text(json.dumps(json.loads(path.read_bytes()), indent=2) + "\n", "utf-8")
        reseal(bundle_copy)
        text, findings = _failing(bundle_copy)
        _named(text, findings, "data/aggregates.json", "not in canonical form")


class TestMalformedManifests:
    """A malformed manifest line is a failure, never a log message."""

    def test_garbage_line(self, bundle_copy: Path) -> None:
        """An appended garbage line is named with its line number."""
        manifest = bundle_copy / MANIFEST
        lines = manifest.read_bytes().count(b"\n")
        with open(manifest, "ab") as fh:
            fh.write(b"garbage\n")
        retag(bundle_copy)
        text, findings = _failing(bundle_copy)
        finding = _named(text, findings, MANIFEST, f"malformed manifest line {lines + 1}")
        assert "garbage" in finding["found"]

    def test_path_listed_twice(self, bundle_copy: Path) -> None:
        """A manifest line repeated is named as a path listed twice."""
        manifest = bundle_copy / MANIFEST
        first = manifest.read_bytes().splitlines(keepends=True)[0]
        manifest.write_bytes(manifest.read_bytes() + first)
        retag(bundle_copy)
        text, findings = _failing(bundle_copy)
        _named(text, findings, MANIFEST, "path listed twice")

    def test_no_final_newline(self, bundle_copy: Path) -> None:
        """A manifest without its final newline is refused."""
        manifest = bundle_copy / MANIFEST
        manifest.write_bytes(manifest.read_bytes().rstrip(b"\n"))
        retag(bundle_copy)
        text, findings = _failing(bundle_copy)
        _named(text, findings, MANIFEST, "does not end with a newline")


class TestNotABundle:
    """Input that is not a bundle directory at all is bad input: exit 2."""

    def test_missing_path(self, tmp_path: Path) -> None:
        """A path that does not exist exits 2 and names the path."""
        missing = tmp_path / "nowhere"
        result = _invoke("verify", str(missing))
        assert result.exit_code == 2, result.output
        assert "not a bundle directory" in _flat(result.output)
        assert missing.name in result.output

    def test_regular_file(self, tmp_path: Path) -> None:
        """A regular file exits 2."""
        path = tmp_path / "bundle.zip"
        path.write_bytes(b"PK\x03\x04")
        result = _invoke("verify", str(path))
        assert result.exit_code == 2, result.output
        assert "not a bundle directory" in _flat(result.output)

    def test_symlinked_root(self, bundle_copy: Path, tmp_path: Path) -> None:
        """A symlink to a valid bundle is not itself a bundle directory: exit 2."""
        link = tmp_path / "link"
        link.symlink_to(bundle_copy, target_is_directory=True)
        result = _invoke("verify", str(link))
        assert result.exit_code == 2, result.output

    def test_empty_directory(self, tmp_path: Path) -> None:
        """An empty directory is not a bundle, nor an unfinished study (a study writes bagit.txt
        first): exit 2 in one line, not a list of missing files."""
        empty = tmp_path / "empty"
        empty.mkdir()
        result = _invoke("verify", str(empty))
        assert result.exit_code == 2, result.output
        assert "not a bundle" in result.output and "INCOMPLETE" not in result.output

    def test_a_source_checkout(self, tmp_path: Path) -> None:
        """A directory of source files (this project's src/ and tests/, copied) is not a bundle:
        exit 2, with no findings and no word of an unfinished study."""
        checkout = tmp_path / "checkout"
        shutil.copytree(ROOT / "src", checkout / "src")
        shutil.copytree(ROOT / "tests" / "harness", checkout / "tests" / "harness")
        (checkout / "README.md").write_text("# a project\n", "utf-8")
        for args in (["verify", str(checkout)], ["verify", "--json", str(checkout)]):
            result = _invoke(*args)
            assert result.exit_code == 2, result.output
            assert "not a bundle" in result.output and "INCOMPLETE" not in result.output

    def test_a_started_study_is_unfinished_not_foreign(self, tmp_path: Path) -> None:
        """A root holding only the bagit.txt a study writes first is an unfinished study: exit
        1, and the first finding says incomplete."""
        root = tmp_path / "started"
        root.mkdir()
        (root / "bagit.txt").write_bytes(BAGIT_TXT)
        findings = verify(root)
        assert findings and findings[0].code == "incomplete"
        result = _invoke("verify", str(root))
        assert result.exit_code == 1 and "INCOMPLETE" in result.output
