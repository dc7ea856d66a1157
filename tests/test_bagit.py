"""``repro verify --bagit-only``: any bag checked as BagIt 1.0 or 0.97 alone, whoever wrote it.

Every case of the Library of Congress's BagIt conformance suite (``tests/data/bagit-conformance``)
gets the verdict its directory gives it, as a directory and packed; plain ``repro verify`` calls
each valid one a bag that is no repro bundle; a repro bundle is a valid bag, and a tampered one
fails with BagIt's codes. Then the rules one at a time, on bags made here: every manifest
algorithm, tag-file encodings, percent-encoded names, whitespace, fetch.txt (nothing fetched),
paths out of scope (nothing read outside the bag), collisions, Payload-Oxum, the limits."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sys
import tarfile
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from guarantees import record
from repro._cli.app import app
from repro.errors import BadInput
from repro.verify import BagVerification, Limits, verify, verify_bag
from repro.verify._walk import folded
from test_corpus import _READS, _audit, _outside_reads

runner = CliRunner()

SUITE = Path(__file__).resolve().parent / "data" / "bagit-conformance"

#: The labels of the suite's cases a validator must refuse.
REFUSED = ("invalid", "linux-only", "windows-only")

#: For each case the suite labels invalid, linux-only or windows-only, the code of the finding
#: that names its fault. windows-only cases name paths with backslashes: refused on every system
#: (a Windows reader takes them as separators, and RFC 8493 makes "/" the only one).
FAULTS = {
    "v0.97/invalid/baginfo-missing-encoding": "bagit-txt-content",
    "v0.97/invalid/bom-in-bagit.txt": "bagit-txt-bom",
    "v0.97/invalid/corrupt-data-file": "digest-mismatch",
    "v0.97/invalid/corrupt-tag-file": "digest-mismatch",
    "v0.97/invalid/extra-file-in-bag": "not-listed",
    "v0.97/invalid/invalid-version-number": "bagit-version",
    "v0.97/invalid/missing-baginfo": "listed-but-missing",
    "v0.97/invalid/missing-bagit.txt": "bagit-txt-missing",
    "v0.97/invalid/out-of-scope-file-paths-using-dot-notation": "manifest-path-unsafe",
    "v0.97/invalid/out-of-scope-file-paths-using-dot-notation-for-fetch": "fetch-path-unsafe",
    "v0.97/invalid/same-filename-listed-twice-with-different-hashes": "manifest-path-repeated",
    "v0.97/linux-only/out-of-scope-file-paths-using-absolute-path": "manifest-path-unsafe",
    "v0.97/linux-only/out-of-scope-file-paths-using-absolute-path-for-fetch": "fetch-path-unsafe",
    "v0.97/linux-only/out-of-scope-file-paths-using-shortcut": "manifest-path-unsafe",
    "v0.97/linux-only/out-of-scope-file-paths-using-shortcut-for-fetch": "fetch-path-unsafe",
    "v0.97/linux-only/out-of-scope-file-paths-using-shortcut-username": "manifest-path-unsafe",
    "v0.97/linux-only/out-of-scope-file-paths-using-shortcut-username-for-fetch": (
        "fetch-path-unsafe"
    ),
    "v0.97/windows-only/out-of-scope-file-paths-using-absolute-path": "manifest-path-unsafe",
    "v0.97/windows-only/out-of-scope-file-paths-using-absolute-path-for-fetch": (
        "fetch-path-unsafe"
    ),
    "v0.97/windows-only/out-of-scope-file-paths-using-shortcut": "manifest-path-unsafe",
    "v0.97/windows-only/out-of-scope-file-paths-using-shortcut-for-fetch": "fetch-path-unsafe",
    "v0.97/windows-only/out-of-scope-file-paths-using-unc": "manifest-path-unsafe",
    "v0.97/windows-only/out-of-scope-file-paths-using-unc-for-fetch": "fetch-path-unsafe",
    "v1.0/invalid/bagit-with-invalid-whitespace": "bagit-txt-content",
    "v1.0/invalid/notAllManifestsListAllFiles": "not-listed",
    "v1.0/invalid/same-filename-listed-twice-with-different-hashes": "manifest-path-repeated",
    "v1.0/invalid/same-filename-listed-twice-with-the-same-hash": "manifest-path-repeated",
}

_OLDER = "bagit-version-older"

#: For each case the suite labels valid or warning, the codes of the warnings it gets (a
#: warning case one at least). Drafts before 0.97 are read by 0.97's rules, which says so.
WARNINGS: dict[str, set[str]] = {
    **{f"v0.9{v}/valid/{case}": {_OLDER} for v in (3, 4, 5) for case in ("basic-bag",)},
    **{f"v0.9{v}/valid/duplicate-metadata-entries": {_OLDER} for v in (3, 4, 5)},
    **{
        f"v0.96/valid/{case}": {_OLDER}
        for case in (
            "bag-in-a-bag",
            "bag-with-encoded-names",
            "bag-with-escapable-characters",
            "bag-with-space",
            "basic-bag",
            "duplicate-metadata-entries",
            "holey-bag",
        )
    },
    "v0.96/valid/bag-with-leading-dot-slash-in-manifest": {_OLDER, "bagit-path-dot-slash"},
    **{
        f"v0.97/valid/{case}": set()
        for case in (
            "ISO-8859-1-encoded-tag-files",
            "UTF-16-encoded-tag-files",
            "bag-in-a-bag",
            "bag-with-encoded-names",
            "bag-with-escapable-characters",
            "bag-with-space",
            "basic-bag",
            "duplicate-metadata-entries",
            "holey-bag",
            "minimal-bag",
            "uncommon-metadata-separators",
        )
    },
    "v0.97/valid/bag-with-leading-dot-slash-in-manifest": {"bagit-path-dot-slash"},
    "v0.97/warning/duplicate-file-with-different-case": {"bagit-name-collision"},
    "v0.97/warning/made-with-md5sum-tools": {"bagit-md5sum-binary-flag"},
    "v0.97/warning/relative-path": {"bagit-path-dot-slash"},
    "v0.97/warning/same-filename-listed-twice-with-different-normalization": {
        _OLDER,
        "bagit-name-collision",
    },
    "v0.97/warning/same-filename-listed-twice-with-the-same-hash": {"bagit-path-repeated"},
    "v0.97/warning/special-system-files": {"bagit-system-file"},
    "v1.0/valid/basicBag": set(),
}


def _cases() -> list[str]:
    """Every case directory of the vendored suite, by its path (``v0.97/valid/basic-bag``)."""
    return sorted(p.relative_to(SUITE).as_posix() for p in SUITE.glob("v*/*/*") if p.is_dir())


def _label(case: str) -> str:
    return case.split("/")[1]


VALID = [case for case in _cases() if _label(case) in ("valid", "warning")]


def _bagit(*args: str | Path) -> Result:
    return runner.invoke(app, ["verify", "--bagit-only", *map(str, args)])


def _codes(found: Iterable[Any]) -> set[str]:
    return {f.code for f in found}


def _verdict(done: BagVerification) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """What a verification says, by code and file: its findings and its warnings."""
    return [(f.code, f.file) for f in done.findings], [(w.code, w.file) for w in done.warnings]


def _pack(bag: Path, archive: Path) -> Path:
    """``bag`` as a zip or tar file of one top-level directory named after it, as BagIt
    serializes a bag."""
    files = sorted(p for p in bag.rglob("*") if p.is_file())
    if archive.suffix == ".zip":
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as out:
            for path in files:
                out.write(path, f"{bag.name}/{path.relative_to(bag).as_posix()}")
    else:
        with tarfile.open(archive, "w", format=tarfile.GNU_FORMAT) as out:
            out.add(bag, bag.name)
    return archive


class TestConformanceSuite:
    """Each case gets the verdict its label gives: valid and warning cases exit 0 (a warning
    case with a warning on stderr and in --json), invalid, linux-only and windows-only cases
    exit 1 with the finding that names their fault."""

    def test_every_case_is_judged(self) -> None:
        """The tables cover exactly the vendored cases, each under a label of its kind, and
        every warning case expects a warning."""
        assert set(FAULTS) | set(WARNINGS) == set(_cases())
        assert {_label(case) for case in FAULTS} <= set(REFUSED)
        assert {_label(case) for case in WARNINGS} <= {"valid", "warning"}
        assert all(WARNINGS[case] for case in WARNINGS if _label(case) == "warning")

    @pytest.mark.parametrize("case", _cases())
    def test_case(self, case: str) -> None:
        """The labelled verdict: exit code, the fault's finding, the warnings."""
        done = _bagit("--json", SUITE / case)
        report = json.loads(done.stdout)
        codes = {f["code"] for f in report["findings"]}
        warned = {w["code"] for w in report["warnings"]}
        record("BagIt conformance cases run", 1)
        if _label(case) in REFUSED:
            assert done.exit_code == 1, done.output
            assert not report["ok"] and FAULTS[case] in codes, report
            return
        assert done.exit_code == 0, done.output
        assert report["ok"] and not codes, report
        assert warned == WARNINGS[case]
        text = _bagit(SUITE / case)
        assert text.exit_code == 0 and text.stdout.startswith("OK: ")
        assert bool(text.stderr) == bool(WARNINGS[case]), text.stderr
        assert all(line.startswith("WARN ") for line in text.stderr.splitlines())

    @pytest.mark.parametrize("suffix", [".zip", ".tar"])
    @pytest.mark.parametrize("case", _cases())
    def test_packed(self, case: str, suffix: str, tmp_path: Path) -> None:
        """Packed in one top-level directory, a case gets the findings and warnings it gets as
        a directory."""
        archive = _pack(SUITE / case, tmp_path / f"bag{suffix}")
        assert _verdict(verify_bag(archive)) == _verdict(verify_bag(SUITE / case))


class TestPlainVerify:
    """Plain ``repro verify`` tells a bag that is not a repro bundle from a bundle."""

    @pytest.mark.parametrize("case", VALID)
    @pytest.mark.parametrize("as_json", [False, True])
    def test_a_valid_bag_is_not_a_bundle(self, case: str, as_json: bool) -> None:
        """A valid bag exits 2 with one line saying it is a valid bag, not a repro bundle, and
        which test says so; never that a study did not finish."""
        done = runner.invoke(app, ["verify", *(["--json"] if as_json else []), str(SUITE / case)])
        assert done.exit_code == 2, done.output
        flat = " ".join(done.stderr.split())
        assert "a valid BagIt bag, not a repro bundle: it holds no data/protocol.json" in flat
        assert "did not finish" not in done.output and "INCOMPLETE" not in done.output
        assert done.stdout == ""

    @pytest.mark.parametrize("suffix", [".zip", ".tar"])
    def test_a_packed_valid_bag_is_not_a_bundle(self, suffix: str, tmp_path: Path) -> None:
        """A valid bag packed in one top-level directory is refused alike."""
        archive = _pack(SUITE / "v1.0/valid/basicBag", tmp_path / f"bag{suffix}")
        with pytest.raises(BadInput, match="a valid BagIt bag, not a repro bundle"):
            verify(archive)

    def test_a_bag_holding_a_protocol_is_judged_as_a_bundle(self, tmp_path: Path) -> None:
        """A valid bag whose payload holds data/protocol.json is verified as a bundle: its
        findings, not a refusal (the protocol is what a study writes right after bagit.txt)."""
        bag = make_bag(tmp_path / "bag", {"data/protocol.json": b"{}\n"})
        assert verify_bag(bag).findings == []
        assert verify(bag)

    @pytest.mark.parametrize("case", [case for case in _cases() if _label(case) in REFUSED])
    def test_an_invalid_bag_is_named_by_its_bagit_fault(self, case: str) -> None:
        """An invalid bag that is no repro bundle exits 2, not a repro bundle, naming the BagIt
        finding that its label gives (the fault --bagit-only names), never that a study did
        not finish nor a bundle's findings."""
        done = runner.invoke(app, ["verify", str(SUITE / case)])
        assert done.exit_code == 2, done.output
        flat = " ".join(done.stderr.split())
        assert "not a repro bundle" in flat and "an invalid BagIt bag" in flat, flat
        assert FAULTS[case] in flat, (FAULTS[case], flat)
        assert "did not finish" not in done.output and done.stdout == ""

    @pytest.mark.slow
    def test_a_bundle_without_its_protocol_is_judged_as_a_bundle(self, bundle_copy: Path) -> None:
        """A repro bundle whose protocol was removed is still a bundle (it holds its plan and
        runs): its findings are named, exit 1, not a refusal as a foreign bag."""
        (bundle_copy / "data" / "protocol.json").unlink()
        done = runner.invoke(app, ["verify", str(bundle_copy)])
        assert done.exit_code == 1, done.output
        assert "not a repro bundle" not in done.output

    def test_the_refusal_is_bad_input(self) -> None:
        """The Python face raises BadInput, as for any root that is not a bundle."""
        with pytest.raises(BadInput, match="a valid BagIt bag, not a repro bundle"):
            verify(SUITE / "v1.0/valid/basicBag")


class TestReproBundle:
    """A repro bundle is a valid BagIt bag; a tampered one fails with BagIt's codes."""

    def test_a_bundle_is_a_valid_bag(self, small_bundle: Path, tmp_path: Path) -> None:
        """--bagit-only passes a bundle, as a directory and packed, with no warning."""
        for bag in (
            small_bundle,
            _pack(small_bundle, tmp_path / "bundle.zip"),
            _pack(small_bundle, tmp_path / "bundle.tar"),
        ):
            done = verify_bag(bag)
            assert (done.findings, done.warnings, done.version) == ([], [], "1.0")

    @pytest.mark.parametrize(
        ("tamper", "code"),
        [
            ("flip a payload byte", "digest-mismatch"),
            ("delete a payload file", "listed-but-missing"),
            ("add a payload file", "not-listed"),
            ("edit bag-info.txt", "digest-mismatch"),
            ("delete bagit.txt", "bagit-txt-missing"),
            ("delete the payload manifest", "manifest-missing"),
        ],
    )
    def test_a_tampered_bundle_fails(self, bundle_copy: Path, tamper: str, code: str) -> None:
        """Each change is named by its BagIt code, and exits 1."""
        if tamper == "flip a payload byte":
            path = bundle_copy / "data/aggregates.json"
            data = bytearray(path.read_bytes())
            data[5] ^= 0x01
            path.write_bytes(bytes(data))
        elif tamper == "delete a payload file":
            (bundle_copy / "data/tiers.json").unlink()
        elif tamper == "add a payload file":
            (bundle_copy / "data/extra.txt").write_bytes(b"x\n")
        elif tamper == "edit bag-info.txt":
            with (bundle_copy / "bag-info.txt").open("ab") as info:
                info.write(b"Contact-Name: someone\n")
        elif tamper == "delete bagit.txt":
            (bundle_copy / "bagit.txt").unlink()
        else:
            (bundle_copy / "manifest-sha256.txt").unlink()
        assert code in _codes(verify_bag(bundle_copy).findings)
        done = _bagit(bundle_copy)
        assert done.exit_code == 1 and "is not a valid BagIt bag" in " ".join(done.stderr.split())

    def test_no_trusted_key_with_bagit_only(self, small_bundle: Path, tmp_path: Path) -> None:
        """--bagit-only reads no signature: a --trusted-key beside it is bad input."""
        done = _bagit("--trusted-key", tmp_path / "key.pub", small_bundle)
        assert done.exit_code == 2, done.output


# --------------------------------------------------------------------------- bags made here


def _encoded(path: str, version: str) -> str:
    """``path`` as a manifest of ``version`` writes it: BagIt 1.0 percent-encodes %, CR, LF."""
    if version != "1.0":
        return path
    return path.replace("%", "%25").replace("\n", "%0A").replace("\r", "%0D")


def make_bag(
    root: Path,
    payload: Mapping[str, bytes],
    *,
    version: str = "1.0",
    encoding: str = "UTF-8",
    algorithms: Iterable[str] = ("sha256",),
    separator: str = "  ",
    newline: str = "\n",
    info: Iterable[str] | None = None,
    tag_files: Mapping[str, str] | None = None,
) -> Path:
    """A bag at ``root`` of ``payload`` (paths from ``data/``), written as a careful BagIt tool
    writes it: a payload and a tag manifest of each algorithm, lines ending in ``newline``, tag
    files in ``encoding``, bag-info.txt of ``info`` (by default the Payload-Oxum); each of
    ``tag_files`` (name to text) written after the manifests, before the tag manifests."""
    (root / "data").mkdir(parents=True)
    for name, data in payload.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (root / "bagit.txt").write_bytes(
        f"BagIt-Version: {version}\nTag-File-Character-Encoding: {encoding}\n".encode()
    )

    def write(name: str, lines: Iterable[str]) -> None:
        (root / name).write_bytes("".join(line + newline for line in lines).encode(encoding))

    octets = sum(len(data) for data in payload.values())
    write("bag-info.txt", [f"Payload-Oxum: {octets}.{len(payload)}"] if info is None else info)
    algorithms = list(algorithms)
    for algorithm in algorithms:
        write(
            f"manifest-{algorithm}.txt",
            [
                f"{hashlib.new(algorithm, data).hexdigest()}{separator}{_encoded(name, version)}"
                for name, data in sorted(payload.items())
            ],
        )
    for name, text in (tag_files or {}).items():
        (root / name).write_bytes(text.encode(encoding))
    tags = sorted(p.name for p in root.iterdir() if p.is_file())
    for algorithm in algorithms:
        write(
            f"tagmanifest-{algorithm}.txt",
            [
                f"{hashlib.new(algorithm, (root / name).read_bytes()).hexdigest()}  {name}"
                for name in tags
            ],
        )
    return root


def _rewrite(path: Path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new))


def _untagged(root: Path) -> Path:
    """The bag without its tag manifests (optional in BagIt), after its tag files changed."""
    for path in root.glob("tagmanifest-*.txt"):
        path.unlink()
    return root


_ALGORITHMS = ("md5", "sha1", "sha256", "sha512")

#: Names a bag is warned of wherever they are in the payload.
_SYSTEM_FILES = (".DS_Store", "Thumbs.db", "desktop.ini", "ehthumbs.db")


@st.composite
def _bags(draw: st.DrawFn) -> dict[str, Any]:
    """A bag's payload and how it is written: any version verify reads, any of the suite's
    encodings, a non-empty set of manifest algorithms, any run of spaces and tabs between digest
    and path, any line end; names of any character the encoding holds (a 1.0 bag's CR and LF
    among them, a backslash not), none two names for one file."""
    version = draw(st.sampled_from(["1.0", "0.97"]))
    encoding = draw(st.sampled_from(["UTF-8", "UTF-16", "ISO-8859-1"]))
    # A backslash is refused in every name (a Windows reader takes it as a separator).
    excluded = "/\\\x00" + ("" if version == "1.0" else "\r\n")
    top = 0x2FF if encoding != "ISO-8859-1" else 0xFF
    part = st.text(
        st.characters(min_codepoint=1, max_codepoint=top, exclude_characters=excluded),
        min_size=1,
        max_size=12,
    ).filter(lambda p: p not in (".", "..", *_SYSTEM_FILES) and len(p.encode()) < 200)
    names = draw(
        st.lists(
            st.lists(part, min_size=1, max_size=3).map(lambda ps: "data/" + "/".join(ps)),
            min_size=1,
            max_size=5,
            unique_by=folded,
        )
    )
    # A name that is also a directory of another cannot be both.
    assume(not any(a != b and b.startswith(a + "/") for a in names for b in names))
    assume(len({folded(n) for n in names}) == len(names))
    return {
        "payload": {name: draw(st.binary(max_size=64)) for name in names},
        "version": version,
        "encoding": encoding,
        "algorithms": draw(st.lists(st.sampled_from(_ALGORITHMS), min_size=1, unique=True)),
        "separator": draw(st.text(st.sampled_from(" \t"), min_size=1, max_size=3)),
        "newline": draw(st.sampled_from(["\n", "\r\n", "\r"])),
    }


class TestEveryManifest:
    """Every manifest, of every algorithm, lists every payload file, and every digest in it is
    the file's."""

    @pytest.mark.slow
    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(bag=_bags(), data=st.data())
    def test_a_careful_bag_is_valid_and_a_flipped_byte_is_named_by_each(
        self, bag: dict[str, Any], data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
    ) -> None:
        """A bag as a careful tool writes it is valid, with no warning; a byte flipped in one
        payload file is a digest mismatch in every payload manifest, and nothing else."""
        root = make_bag(tmp_path_factory.mktemp("bag") / "bag", **bag)
        assert _verdict(verify_bag(root)) == ([], [])
        record("BagIt bags made and checked", 1)
        full = [name for name, content in bag["payload"].items() if content]
        assume(full)
        name = data.draw(st.sampled_from(sorted(full)))
        path = root / name
        content = bytearray(path.read_bytes())
        content[data.draw(st.integers(0, len(content) - 1))] ^= 0x01
        path.write_bytes(bytes(content))
        found = verify_bag(root)
        assert {(f.code, f.file, f.what) for f in found.findings} == {
            ("digest-mismatch", name, f"{a} differs from manifest-{a}.txt")
            for a in bag["algorithms"]
        }

    def test_a_manifest_missing_a_file(self, tmp_path: Path) -> None:
        """A file missing from one manifest of four is named as not listed in that one."""
        root = make_bag(tmp_path / "bag", {"data/a": b"a", "data/b": b"b"}, algorithms=_ALGORITHMS)
        manifest = root / "manifest-sha1.txt"
        manifest.write_bytes(b"".join(manifest.read_bytes().splitlines(keepends=True)[:1]))
        found = verify_bag(root).findings
        assert ("not-listed", "data/b", "not listed in manifest-sha1.txt") in {
            (f.code, f.file, f.what) for f in found
        }

    def test_an_algorithm_verify_does_not_know(self, tmp_path: Path) -> None:
        """A manifest of another algorithm cannot be checked: named; a bag without a payload
        manifest is named too."""
        root = make_bag(tmp_path / "bag", {"data/a": b"a"})
        os.rename(root / "manifest-sha256.txt", root / "manifest-whirlpool.txt")
        assert {"manifest-algorithm"} <= _codes(verify_bag(root).findings)
        (root / "manifest-whirlpool.txt").unlink()
        assert "manifest-missing" in _codes(verify_bag(root).findings)

    def test_a_tag_manifest_lists_tag_files_only(self, tmp_path: Path) -> None:
        """A tag manifest listing a payload file, and a payload manifest listing a tag file,
        are named."""
        root = make_bag(tmp_path / "bag", {"data/a": b"a"})
        digest = hashlib.sha256(b"a").hexdigest()
        with (root / "tagmanifest-sha256.txt").open("a") as tags:
            tags.write(f"{digest}  data/a\n")
        with (root / "manifest-sha256.txt").open("a") as payload:
            payload.write(f"{digest}  bag-info.txt\n")
        codes = _codes(verify_bag(root).findings)
        assert {"tagmanifest-lists-payload", "manifest-path-outside-payload"} <= codes


_TAG_TEXT = st.lists(
    st.one_of(
        st.binary(max_size=40),
        st.sampled_from([b"  data/a", b"\t", b"./", b"*", b"%0A", b"%25", b"~", b"../", b"\r\n"]),
        st.sampled_from([b"0" * n for n in (32, 40, 56, 64, 96, 128)]),
    ),
    max_size=12,
).map(b"".join)


class TestNeverCrashes:
    """Whatever its tag files hold, a bag's check ends in findings and warnings."""

    @pytest.mark.slow
    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        declaration=st.one_of(
            _TAG_TEXT,
            st.sampled_from(["UTF-8", "UTF-16", "ISO-8859-1", "cp037", "utf-32", "zlib"]).map(
                lambda e: f"BagIt-Version: 1.0\nTag-File-Character-Encoding: {e}\n".encode()
            ),
        ),
        files=st.dictionaries(
            st.sampled_from(
                ["manifest-md5.txt", "tagmanifest-sha1.txt", "fetch.txt", "bag-info.txt"]
            ),
            _TAG_TEXT,
        ),
    )
    def test_arbitrary_tag_files(
        self,
        declaration: bytes,
        files: dict[str, bytes],
        tmp_path_factory: pytest.TempPathFactory,
    ) -> None:
        """bagit.txt, a manifest, a tag manifest, fetch.txt and bag-info.txt of arbitrary
        bytes (lines of digests, separators, paths and escapes among them): no exception, and
        a bag without a payload manifest it can read is never valid."""
        root = make_bag(tmp_path_factory.mktemp("bag") / "bag", {"data/a": b"a"})
        (root / "manifest-sha256.txt").unlink()
        _untagged(root)
        (root / "bagit.txt").write_bytes(declaration)
        for name, data in files.items():
            (root / name).write_bytes(data)
        done = verify_bag(root)
        record("BagIt bags of arbitrary tag files checked", 1)
        assert done.findings


class TestTagFiles:
    """Tag files in the encoding bagit.txt declares, the declaration's and bag-info.txt's
    whitespace, byte-order marks."""

    def test_utf16_without_a_bom_is_big_endian(self, tmp_path: Path) -> None:
        """UTF-16 tag files without a byte-order mark are read big-endian (RFC 2781)."""
        root = make_bag(tmp_path / "bag", {"data/a": b"a"}, encoding="UTF-16BE")
        _rewrite(root / "bagit.txt", b"UTF-16BE", b"UTF-16")
        assert _verdict(verify_bag(_untagged(root))) == ([], [])

    def test_a_bom_in_a_utf8_manifest_is_a_warning(self, tmp_path: Path) -> None:
        """A UTF-8 manifest that begins with a byte-order mark is read past it, with a warning;
        in bagit.txt it is a fault."""
        root = make_bag(tmp_path / "bag", {"data/a": b"a"})
        manifest = root / "manifest-sha256.txt"
        manifest.write_bytes(b"\xef\xbb\xbf" + manifest.read_bytes())
        done = verify_bag(_untagged(root))
        assert (done.findings, _codes(done.warnings)) == ([], {"bagit-tag-file-bom"})
        (root / "bagit.txt").write_bytes(b"\xef\xbb\xbf" + (root / "bagit.txt").read_bytes())
        assert _codes(verify_bag(root).findings) == {"bagit-txt-bom"}

    def test_a_tag_file_not_in_its_encoding(self, tmp_path: Path) -> None:
        """A tag file whose bytes are not in the declared encoding is named."""
        root = make_bag(tmp_path / "bag", {"data/a": b"a"}, encoding="UTF-16")
        with (root / "bag-info.txt").open("ab") as info:
            info.write(b"\x00")
        assert _codes(verify_bag(_untagged(root)).findings) == {"tag-file-not-decodable"}

    @pytest.mark.parametrize(
        ("version", "encoding", "code"),
        [
            ("BagIt-Version: 1.0\n", "Tag-File-Character-Encoding: UTF-8\n", None),
            ("BagIt-Version: 1.0\r\n", "Tag-File-Character-Encoding: UTF-8", None),
            ("BagIt-Version: 1.0\r", "Tag-File-Character-Encoding: UTF-8\r", None),
            ("BagIt-Version: 1.0\n", "Tag-File-Character-Encoding:  UTF-8\n", "bagit-txt-content"),
            ("BagIt-Version:\t1.0\n", "Tag-File-Character-Encoding: UTF-8\n", "bagit-txt-content"),
            ("BagIt-Version: 1.0\n", "Tag-File-Character-Encoding: UTF-8\n\n", "bagit-txt-content"),
            ("Tag-File-Character-Encoding: UTF-8\n", "BagIt-Version: 1.0\n", "bagit-txt-content"),
            ("BagIt-Version: 2.0\n", "Tag-File-Character-Encoding: UTF-8\n", "bagit-version"),
            *(
                ("BagIt-Version: 1.0\n", f"Tag-File-Character-Encoding: {name}\n", code)
                for name, code in (
                    ("X-9", "bagit-encoding-unknown"),
                    ("zlib", "bagit-encoding-unknown"),
                    ("punycode", "bagit-encoding-unknown"),
                    ("cp1252", None),
                )
            ),
        ],
    )
    def test_the_declaration(
        self, tmp_path: Path, version: str, encoding: str, code: str | None
    ) -> None:
        """bagit.txt is exactly two lines, one space after each colon, a version verify
        reads and a character set it knows, not any codec of Python's (its lines may end in LF,
        CR LF or CR)."""
        root = make_bag(tmp_path / "bag", {"data/a": b"a"})
        (root / "bagit.txt").write_bytes((version + encoding).encode())
        codes = _codes(verify_bag(_untagged(root)).findings)
        assert codes == (set() if code is None else {code})

    @pytest.mark.parametrize(
        ("version", "line", "malformed"),
        [
            ("1.0", "Contact-Name: Ann", False),
            ("1.0", "Contact-Name:\tAnn", False),
            ("1.0", "Contact Name: Ann", False),
            ("1.0", "Contact-Name : Ann", True),
            ("1.0", ": Ann", True),
            ("1.0", "Contact-Name:Ann", True),
            ("1.0", "Contact-Name Ann", True),
            ("0.97", "Contact-Name : Ann", False),
            ("0.97", "Contact-Name   :Ann", False),
            ("0.97", "Contact-Name Ann", True),
        ],
    )
    def test_bag_info_lines(self, tmp_path: Path, version: str, line: str, malformed: bool) -> None:
        """A metadata element is LABEL, a colon, one space or tab, VALUE (RFC 8493 section
        2.2.2); the drafts before 1.0 allow whitespace around the colon. An indented line
        continues the value before it."""
        payload = {"data/a": b"a"}
        info = ["Payload-Oxum: 1.1", line, "  continued"]
        root = make_bag(tmp_path / "bag", payload, version=version, info=info)
        codes = _codes(verify_bag(root).findings)
        assert codes == ({"bag-info-line-malformed"} if malformed else set())

    def test_payload_oxum(self, tmp_path: Path) -> None:
        """A Payload-Oxum other than the payload's octets and files is named; none is fine."""
        root = make_bag(tmp_path / "bag", {"data/a": b"abc"}, info=["Payload-Oxum: 4.1"])
        assert _codes(verify_bag(root).findings) == {"payload-oxum"}
        root = make_bag(tmp_path / "none", {"data/a": b"abc"}, info=["Contact-Name: Ann"])
        assert _verdict(verify_bag(root)) == ([], [])


class TestPaths:
    """Manifest paths: percent-encoding, whitespace, leading ./, duplicates, collisions, and
    paths out of scope, which are named and never read."""

    def test_percent_encoded_names(self, tmp_path: Path) -> None:
        """In BagIt 1.0, %0A, %0D and %25 (either case) stand for LF, CR and %, and only
        those: a name holding them verifies. Before 1.0 a path is as written."""
        payload = {"data/a\nb": b"1", "data/c\rd": b"2", "data/e%f": b"3", "data/g%7Eh": b"4"}
        root = make_bag(tmp_path / "bag", payload)
        assert _verdict(verify_bag(root)) == ([], [])
        _rewrite(root / "manifest-sha256.txt", b"a%0Ab", b"a%0ab")
        assert _verdict(verify_bag(_untagged(root))) == ([], [])
        draft = make_bag(tmp_path / "draft", {"data/e%25f": b"3"}, version="0.97")
        assert _verdict(verify_bag(draft)) == ([], [])

    @pytest.mark.parametrize("separator", [" ", "  ", "\t", " \t "])
    def test_whitespace_between_digest_and_path(self, tmp_path: Path, separator: str) -> None:
        """One or more spaces or tabs separate digest and path (RFC 8493 section 2.1.3), and a
        path may hold spaces."""
        root = make_bag(tmp_path / "bag", {"data/a b  c": b"a"}, separator=separator)
        assert _verdict(verify_bag(root)) == ([], [])

    def test_no_separator_is_malformed(self, tmp_path: Path) -> None:
        """A digest run into its path, or of the wrong length, is a malformed line."""
        root = make_bag(tmp_path / "bag", {"data/a": b"a"}, separator="")
        assert "manifest-line-malformed" in _codes(verify_bag(root).findings)

    @pytest.mark.parametrize(
        ("version", "same", "code", "warned"),
        [
            ("1.0", True, "manifest-path-repeated", False),
            ("1.0", False, "manifest-path-repeated", False),
            ("0.97", True, "bagit-path-repeated", True),
            ("0.97", False, "manifest-path-repeated", False),
        ],
    )
    def test_a_path_listed_twice(
        self, tmp_path: Path, version: str, same: bool, code: str, warned: bool
    ) -> None:
        """BagIt 1.0 lists a path once; a draft's bag may list it twice with one digest (a
        warning), never with two."""
        root = make_bag(tmp_path / "bag", {"data/a": b"a"}, version=version)
        manifest = root / "manifest-sha256.txt"
        line = manifest.read_bytes()
        other = line if same else b"0" * 64 + line[64:]
        manifest.write_bytes(line + other)
        done = verify_bag(_untagged(root))
        assert code in _codes(done.warnings if warned else done.findings)
        assert bool(done.findings) != warned

    def test_names_one_file_on_a_case_insensitive_system(self, tmp_path: Path) -> None:
        """Two payload files whose names fold alike are a warning, and the bag valid."""
        root = make_bag(tmp_path / "bag", {"data/Read.me": b"a", "data/read.ME": b"b"})
        done = verify_bag(root)
        assert (done.findings, _codes(done.warnings)) == ([], {"bagit-name-collision"})

    @pytest.mark.parametrize(
        "line",
        ["../outside/secret", "/OUTSIDE/secret", "~/secret", "~root/secret", "C:/secret"],
    )
    @pytest.mark.parametrize("where", ["manifest-sha256.txt", "fetch.txt"])
    def test_out_of_scope_paths_are_named_and_never_read(
        self, tmp_path: Path, line: str, where: str
    ) -> None:
        """A path outside the bag (.., absolute, a home directory, a Windows drive) in a
        manifest or fetch.txt is named as unsafe, and verify opens nothing outside the bag."""
        outside = tmp_path / "outside"
        outside.mkdir()
        (outside / "secret").write_bytes(b"secret")
        path = line.replace("/OUTSIDE", str(outside))
        root = make_bag(tmp_path / "bag", {"data/a": b"a"})
        digest = hashlib.sha256(b"secret").hexdigest()
        entry = f"{digest}  {path}\n" if where != "fetch.txt" else f"http://x/y 6 {path}\n"
        with (root / where).open("a") as out:
            out.write(entry)
        with _watching() as events:
            done = verify_bag(root)
        names = {p.relative_to(root).as_posix() for p in root.rglob("*")}
        names |= {part for name in list(names) for part in name.split("/")}
        assert events and list(_outside_reads(events, root, names)) == []
        unsafe = "fetch-path-unsafe" if where == "fetch.txt" else "manifest-path-unsafe"
        assert unsafe in _codes(done.findings)


@contextmanager
def _watching() -> Iterator[list[tuple[str, Any, Any]]]:
    """The paths opened or listed while the block runs, by tests/test_corpus.py's audit hook
    (installed once per process: a hook cannot be removed)."""
    if not _READS.installed:
        sys.addaudithook(_audit)
        _READS.installed = True
    _READS.events.clear()
    _READS.watching = True
    try:
        yield _READS.events
    finally:
        _READS.watching = False


class TestFetch:
    """fetch.txt: verify fetches nothing; a listed file the bag lacks leaves it incomplete."""

    def test_an_absent_file_is_incomplete_and_nothing_is_fetched(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A file fetch.txt lists and the bag lacks is named once as unfetched (not as missing
        from each manifest); no connection is tried. Present, it verifies."""
        payload = {"data/here": b"here", "data/remote": b"remote"}
        fetch = {"fetch.txt": "http://127.0.0.1:9/remote - data/remote\n"}
        root = make_bag(tmp_path / "bag", payload, algorithms=("md5", "sha256"), tag_files=fetch)
        assert _verdict(verify_bag(root)) == ([], [])
        (root / "data/remote").unlink()
        tried: list[object] = []
        monkeypatch.setattr(socket.socket, "connect", lambda *a: tried.append(a))
        done = verify_bag(root)
        assert [(f.code, f.file) for f in done.findings if f.file == "data/remote"] == [
            ("fetch-file-missing", "data/remote")
        ]
        assert tried == []

    @pytest.mark.parametrize(
        ("line", "code"),
        [
            ("http://x/a 1 bagit.txt", "fetch-path-outside-payload"),
            ("http://x/a 1 data/elsewhere", "fetch-path-not-listed"),
            ("no-scheme 1 data/a", "fetch-line-malformed"),
            ("http://x/a one data/a", "fetch-line-malformed"),
        ],
    )
    def test_a_fetch_line(self, tmp_path: Path, line: str, code: str) -> None:
        """Each fetch.txt line is a URL with its scheme, a length or -, a payload path that
        every payload manifest lists."""
        root = make_bag(tmp_path / "bag", {"data/a": b"a"}, tag_files={"fetch.txt": line + "\n"})
        assert code in _codes(verify_bag(root).findings)


class TestWithinLimits:
    """A bag is read within verify's limits, as a bundle is."""

    def test_a_manifest_past_the_held_limit(self, tmp_path: Path) -> None:
        """A manifest larger than max_held_file_bytes is named and not parsed."""
        root = make_bag(tmp_path / "bag", {"data/a": b"a"})
        done = verify_bag(root, Limits(max_held_file_bytes=50))
        assert "held-file-bytes-limit" in _codes(done.findings)

    def test_more_files_than_the_limit(self, tmp_path: Path) -> None:
        """A tree of more entries than max_files is named and nothing is read."""
        root = make_bag(tmp_path / "bag", {f"data/{i}": b"x" for i in range(20)})
        done = verify_bag(root, Limits(max_files=10))
        assert _codes(done.findings) == {"scan-entries-limit"}

    def test_an_empty_directory_is_a_warning(self, tmp_path: Path) -> None:
        """An empty directory, which no manifest can list, is a warning in a bag."""
        root = make_bag(tmp_path / "bag", {"data/a": b"a"})
        (root / "data/empty").mkdir()
        done = verify_bag(root)
        assert (done.findings, _codes(done.warnings)) == ([], {"empty-directory"})

    def test_no_payload_directory(self, tmp_path: Path) -> None:
        """A bag without its data/ directory is named."""
        root = make_bag(tmp_path / "bag", {})
        (root / "data").rmdir()
        assert "payload-directory-missing" in _codes(verify_bag(root).findings)
