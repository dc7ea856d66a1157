"""Packed bundles: ``repro pack`` writes a verified bundle as one zip or tar file, the same bytes
every time, and ``repro verify`` (and every command that reads a bundle) reads it in place with
every guarantee of a directory: each hostile archive is a named finding, never an escape or a
crash, and a compression bomb is named without being inflated."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import stat
import subprocess
import tarfile
import tracemalloc
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from conftest import ROOT
from corpus_findings import PACKED, TOP, _member, _write_tar, _write_zip, base_files
from repro._cli.app import app
from repro._layout import TAGMANIFEST
from repro.verify import Limits, open_verified, verify

runner = CliRunner()


def _invoke(*args: str | Path) -> Result:
    return runner.invoke(app, [str(a) for a in args])


def _codes(path: Path, limits: Limits | None = None) -> set[str]:
    return {f.code for f in verify(path, limits or Limits())}


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def packed(small_bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The small bundle packed once as a zip and once as a tar."""
    out = tmp_path_factory.mktemp("packed")
    for suffix in ("zip", "tar"):
        result = _invoke("pack", small_bundle, "--out", out / f"small.{suffix}")
        assert result.exit_code == 0, result.output
    return {suffix: out / f"small.{suffix}" for suffix in ("zip", "tar")}


class TestPack:
    """``repro pack`` writes what verify reads back as the same bundle."""

    @pytest.mark.parametrize("suffix", ["zip", "tar"])
    def test_packed_verifies_as_the_same_bundle(
        self, suffix: str, packed: dict[str, Path], small_bundle: Path
    ) -> None:
        """The packed bundle verifies with no finding and the directory's bundle sha256."""
        result = _invoke("verify", "--json", packed[suffix])
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        digest = hashlib.sha256((small_bundle / TAGMANIFEST).read_bytes()).hexdigest()
        assert report == {"ok": True, "bundle_sha256": digest, "findings": []}

    @pytest.mark.parametrize("suffix", ["zip", "tar"])
    def test_one_top_level_directory_of_every_file(
        self, suffix: str, packed: dict[str, Path], small_bundle: Path
    ) -> None:
        """Every file of the bundle, and nothing else, below one directory named after the
        bundle's, in sorted order, with fixed times and modes."""
        top = small_bundle.name
        expected = [f"{top}/{name}" for name in sorted(_files(small_bundle))]
        if suffix == "zip":
            with zipfile.ZipFile(packed[suffix]) as archive:
                infos = archive.infolist()
                assert [i.filename for i in infos] == expected
                assert {(i.date_time, i.external_attr >> 16) for i in infos} == {
                    ((1980, 1, 1, 0, 0, 0), stat.S_IFREG | 0o644)
                }
        else:
            with tarfile.open(packed[suffix]) as archive:
                members = archive.getmembers()
                assert [m.name for m in members] == expected
                assert {(m.mtime, m.mode, m.uid, m.type) for m in members} == {
                    (315_532_800, 0o644, 0, tarfile.REGTYPE)
                }

    @pytest.mark.parametrize("suffix", ["zip", "tar"])
    def test_packing_twice_gives_the_same_bytes(
        self, suffix: str, packed: dict[str, Path], small_bundle: Path, tmp_path: Path
    ) -> None:
        """A copy of the bundle, under the same name elsewhere, packs to the same bytes."""
        copy = tmp_path / small_bundle.name
        shutil.copytree(small_bundle, copy)
        again = tmp_path / f"again.{suffix}"
        assert _invoke("pack", copy, "--out", again).exit_code == 0
        assert again.read_bytes() == packed[suffix].read_bytes()

    def test_the_stock_tools_read_it(self, packed: dict[str, Path], tmp_path: Path) -> None:
        """Python's own extractor unpacks the zip into the same bundle, which verifies."""
        with zipfile.ZipFile(packed["zip"]) as archive:
            archive.extractall(tmp_path)
        [root] = tmp_path.iterdir()
        assert verify(root) == []

    def test_signatures_are_packed(self, small_bundle: Path, tmp_path: Path) -> None:
        """A signed bundle packs with its signatures/, and verify checks them in the zip with
        the trusted key; signing the zip itself is refused (exit 2, nothing written)."""
        root = tmp_path / "signed"
        shutil.copytree(small_bundle, root)
        key = tmp_path / "key"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        assert _invoke("sign", root, "--key", key).exit_code == 0
        out = tmp_path / "signed.zip"
        assert _invoke("pack", root, "--out", out).exit_code == 0
        result = _invoke("verify", "--json", "--trusted-key", f"{key}.pub", out)
        assert result.exit_code == 0, result.output
        signatures = json.loads(result.stdout)["signatures"]
        assert [s["kind"] for s in signatures] == ["bundle", "provenance", "test-result"]
        assert {s["status"] for s in signatures} == {"verified"}
        before = out.read_bytes()
        refused = _invoke("sign", out, "--key", key)
        assert refused.exit_code == 2 and "packed bundle" in refused.output
        assert out.read_bytes() == before

    def test_refusals_write_nothing(
        self, bundle_copy: Path, packed: dict[str, Path], tmp_path: Path
    ) -> None:
        """An existing --out, another suffix, a packed bundle and a bundle that does not verify
        are refused with exit 2, and no file (not even a partial one) is left."""
        before = set(tmp_path.iterdir())
        existing = packed["zip"].read_bytes()
        assert _invoke("pack", bundle_copy, "--out", packed["zip"]).exit_code == 2
        assert packed["zip"].read_bytes() == existing
        assert _invoke("pack", bundle_copy, "--out", tmp_path / "x.tar.gz").exit_code == 2
        assert _invoke("pack", packed["zip"], "--out", tmp_path / "x.zip").exit_code == 2
        (bundle_copy / "data/aggregates.json").write_bytes(b"{}\n")
        result = _invoke("pack", bundle_copy, "--out", tmp_path / "y.zip")
        assert result.exit_code == 2 and "does not verify" in result.output
        assert set(tmp_path.iterdir()) == before


@pytest.mark.slow
class TestReadPacked:
    """The commands that read a bundle read a packed one as they read a directory."""

    def test_show_a_zip(self, packed: dict[str, Path]) -> None:
        """``repro show`` on the zip prints the bundle's table and its identity."""
        result = _invoke("show", packed["zip"])
        assert result.exit_code == 0, result.output
        assert f"verified: {packed['zip']}" in " ".join(result.output.split())

    def test_compare_a_zip_with_its_directory(
        self, packed: dict[str, Path], small_bundle: Path
    ) -> None:
        """``repro compare`` of the directory and its tar finds every run equal."""
        result = _invoke("compare", "--json", small_bundle, packed["tar"])
        assert result.exit_code == 0, result.output

    def test_open_verified_reads_the_records(
        self, packed: dict[str, Path], small_bundle: Path
    ) -> None:
        """open_verified on the zip gives the run records the directory gives."""
        assert list(open_verified(packed["zip"]).all_records()) == list(
            open_verified(small_bundle).all_records()
        )

    def test_publish_and_audit_a_packed_bundle(self, scored_bundle: Path, tmp_path: Path) -> None:
        """``repro publish`` writes a packed scored bundle's table, the same bytes as the
        directory's; ``repro audit`` re-executes a sample of the packed bundle's slots."""
        packed_zip = tmp_path / "scored.zip"
        assert _invoke("pack", scored_bundle, "--out", packed_zip).exit_code == 0
        tables = []
        for i, source in enumerate((scored_bundle, packed_zip)):
            out = tmp_path / f"table{i}.md"
            result = _invoke("publish", source, "--out", out)
            assert result.exit_code == 0, result.output
            tables.append(out.read_bytes())
        assert tables[0] == tables[1]
        # The example's harness is named from the protocol's folder.
        sources = ROOT / "protocols"
        audited = _invoke("audit", packed_zip, "--sample", "3", "--json", "--sources", sources)
        assert audited.exit_code == 0, audited.output

    def test_a_file_that_is_no_archive(self, tmp_path: Path) -> None:
        """A file that is neither a zip nor a tar is not a bundle: exit 2."""
        path = tmp_path / "x.zip"
        path.write_bytes(b"PK\x03\x04 and nothing else")
        result = _invoke("verify", path)
        assert result.exit_code == 2 and "not a bundle" in result.output


#: The codes each hostile packed bundle of tests/corpus_findings.py must be named by (its
#: findings are recorded there in full, tests/test_verify_streaming.py compares them).
EXPECTED = {
    "zip-outside-top": "archive-outside-top",
    "zip-absolute-name": "archive-name-unsafe",
    "zip-dotdot-name": "archive-name-unsafe",
    "zip-backslash-name": "archive-name-unsafe",
    "zip-repeated-name": "archive-name-repeated",
    "zip-case-collision": "archive-name-collision",
    "zip-nfc-collision": "archive-name-collision",
    "zip-symlink": "symlink",
    "zip-special-file": "special-file",
    "zip-empty-directory": "empty-directory",
    "zip-ratio-bomb": "archive-ratio-limit",
    "zip-overlap": "archive-overlap",
    "zip-bzip2-member": "archive-member-method",
    "tar-symlink": "symlink",
    "tar-hard-link": "hard-link",
    "tar-device": "special-file",
    "tar-dotdot-name": "archive-name-unsafe",
    "tar-repeated-name": "archive-name-repeated",
    "tar-outside-top": "archive-outside-top",
}


class TestHostileArchives:
    """Each hostile packed bundle is named by its finding, through the CLI too."""

    def test_every_case_has_its_code(self) -> None:
        """Every packed case of the corpus is expected to be named by a code."""
        assert set(EXPECTED) == set(PACKED)

    @pytest.mark.parametrize("name", sorted(PACKED))
    def test_named(self, name: str, tmp_path: Path) -> None:
        """verify names the case by its code, and the CLI exits 1 printing it."""
        archive = tmp_path / f"{TOP}.{name[:3]}"
        PACKED[name](archive, base_files())
        findings = verify(archive)
        assert EXPECTED[name] in {f.code for f in findings}
        result = _invoke("verify", "--json", archive)
        assert result.exit_code == 1
        assert EXPECTED[name] in {f["code"] for f in json.loads(result.stdout)["findings"]}


class TestBombs:
    """What an archive declares bounds what verify inflates and lists."""

    @pytest.mark.slow
    def test_a_bomb_is_named_without_inflating_it(self, tmp_path: Path) -> None:
        """A member of 64 MiB of zeros (deflated to some 64 KiB) is named by its ratio, and
        verify holds far less than the member while it does so."""
        archive = tmp_path / "bomb.zip"
        zeros = bytes(64 << 20)
        _write_zip(archive, base_files(), [(_member(f"{TOP}/data/zeros.json"), zeros)])
        del zeros
        tracemalloc.start()
        try:
            codes = _codes(archive)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert "archive-ratio-limit" in codes
        assert peak < 16 << 20, peak

    def test_a_member_past_max_file_bytes_is_not_read(self, tmp_path: Path) -> None:
        """A member declaring more than max_file_bytes (a runs file swapped for 1 MiB that does
        not deflate) is named by that limit."""
        archive = tmp_path / "big.zip"
        files = base_files() | {"data/runs/c02.jsonl": random.Random(0).randbytes(1 << 20)}
        _write_zip(archive, files)
        assert "file-bytes-limit" in _codes(archive, Limits(max_file_bytes=1 << 16))

    def test_total_bytes_stop_the_listing(self, tmp_path: Path) -> None:
        """Members declaring more bytes in all than max_total_bytes stop the listing."""
        archive = tmp_path / "total.tar"
        _write_tar(archive, base_files())
        assert _codes(archive, Limits(max_total_bytes=1000)) == {"scan-bytes-limit"}

    def test_members_stop_the_listing(self, tmp_path: Path) -> None:
        """More members than max_files stop the listing."""
        archive = tmp_path / "many.zip"
        _write_zip(archive, base_files())
        assert _codes(archive, Limits(max_files=5)) == {"scan-entries-limit"}

    def test_a_large_index_is_not_read(self, tmp_path: Path) -> None:
        """A zip index past max_archive_index_bytes is named, nothing listed."""
        archive = tmp_path / "index.zip"
        _write_zip(archive, base_files())
        assert _codes(archive, Limits(max_archive_index_bytes=100)) == {"archive-index-limit"}

    def test_deep_members_are_named(self, tmp_path: Path) -> None:
        """A member deeper than max_depth is named by the limit, as the walk names one."""
        archive = tmp_path / "deep.zip"
        deep = f"{TOP}/data/" + "d/" * 9 + "x.json"
        _write_zip(archive, base_files(), [(_member(deep), b"{}\n")])
        assert "depth-limit" in _codes(archive)
