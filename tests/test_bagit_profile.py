"""repro's BagIt profile (bagit-profiles specification 1.4.0): shipped in the package as
``repro/data/bagit-profile.json``, named in every new bundle's bag-info.txt, accepted for every
kind of bundle a study writes by the specification's reference validator (the ``bagit-profile``
distribution, given the shipped file: nothing is fetched), and checked by ``repro verify``.
Bundles written before it name no profile and verify as before."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import mimetypes
import shutil
import subprocess
from pathlib import Path
from typing import Any

import bagit
import bagit_profile
import pytest
from typer.testing import CliRunner

from conftest import ROOT
from forge import reseal, retag
from repro import _layout as layout
from repro._bundle.writer import BAGIT_TXT
from repro._cli.app import app
from repro.verify import verify, verify_bag
from repro.verify._profile import COVERED
from repro.verify._profile import bagit_profile as shipped_profile
from test_bagit import make_bag

SHIPPED = ROOT / "src" / "repro" / layout.BAGIT_PROFILE_FILE
#: A bundle written before the profile: it names none (tests/test_distribution.py pins it).
OLD_BUNDLE = ROOT / "docs" / "examples" / "quick-start-bundle"
runner = CliRunner()


def _profile() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SHIPPED.read_text("utf-8"))
    return data


def _stock() -> bagit_profile.Profile:
    """The reference validator of repro's profile, given the shipped file (never fetched)."""
    return bagit_profile.Profile(layout.BAGIT_PROFILE, profile=_profile())


def _codes(root: Path) -> list[str]:
    return sorted(f.code for f in verify(root))


def _info(root: Path) -> list[str]:
    return (root / layout.BAG_INFO).read_text("utf-8").splitlines()


def _write_info(root: Path, lines: list[str]) -> None:
    """bag-info.txt as ``lines``, the manifests and Payload-Oxum resealed over it."""
    (root / layout.BAG_INFO).write_text("\n".join(lines) + "\n", "utf-8")
    reseal(root)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stock validator fetches a profile by URL when it is given none: any attempt fails."""

    def refuse(url: str, *args: object, **kwargs: object) -> None:
        raise AssertionError(f"the profile validator tried to fetch {url}")

    monkeypatch.setattr(bagit_profile, "urlopen", refuse)


@pytest.fixture
def copy(small_bundle: Path, tmp_path: Path) -> Path:
    root = tmp_path / "bundle"
    shutil.copytree(small_bundle, root)
    return root


class TestTheProfile:
    """The shipped profile is a bagit-profiles 1.4.0 profile of what a study writes."""

    def test_the_package_ships_it_under_its_identifier(self) -> None:
        """The file the package reads is the one in the source tree, identified as bag-info
        names it, with every field the specification requires of BagIt-Profile-Info."""
        assert shipped_profile() == _profile()
        info = _profile()["BagIt-Profile-Info"]
        assert info["BagIt-Profile-Identifier"] == layout.BAGIT_PROFILE
        assert info["BagIt-Profile-Version"] == "1.4.0"
        for tag in ("Source-Organization", "External-Description", "Version"):
            assert isinstance(info[tag], str) and info[tag]
        assert layout.BAGIT_PROFILE.endswith("/v1.json") and info["Version"] == "1"

    def test_it_describes_what_a_study_writes(self, small_bundle: Path) -> None:
        """BagIt 1.0 as bagit.txt declares it; one payload and one tag manifest, sha256 only;
        no fetch.txt; the tag files a study writes and signatures; the payload files every
        bundle has required, the others allowed; bag-info's elements each once, as a study
        writes them; zip and tar, as ``repro pack`` writes and verify reads."""
        profile = _profile()
        # Every field verify answers for (a new one is a new rule to check, and a new version).
        assert set(profile) == {
            "BagIt-Profile-Info",
            "Bag-Info",
            "Manifests-Required",
            "Manifests-Allowed",
            "Tag-Manifests-Required",
            "Tag-Manifests-Allowed",
            "Tag-Files-Required",
            "Tag-Files-Allowed",
            "Payload-Files-Required",
            "Payload-Files-Allowed",
            "Allow-Fetch.txt",
            "Data-Empty",
            "Serialization",
            "Accept-Serialization",
            "Accept-BagIt-Version",
        }
        assert profile["Data-Empty"] is False
        assert BAGIT_TXT.decode().startswith(
            f"BagIt-Version: {profile['Accept-BagIt-Version'][0]}\n"
        )
        assert profile["Accept-BagIt-Version"] == ["1.0"]
        for field in ("Manifests", "Tag-Manifests"):
            assert profile[f"{field}-Required"] == profile[f"{field}-Allowed"] == ["sha256"]
        assert layout.MANIFEST == "manifest-sha256.txt"
        assert layout.TAGMANIFEST == "tagmanifest-sha256.txt"
        assert profile["Allow-Fetch.txt"] is False
        assert profile["Tag-Files-Required"] == []
        assert profile["Tag-Files-Allowed"] == [*layout.TAG_FILES, "signatures/*.dsse.json"]
        assert layout.is_signature("signatures/0123456789ab.bundle.dsse.json")
        required = sorted([*layout.FIXED_PAYLOAD, layout.SEAL, layout.CRATE])
        assert sorted(profile["Payload-Files-Required"]) == required
        written = [label for label, _, _ in (line.partition(": ") for line in _info(small_bundle))]
        assert sorted(written) == sorted([*profile["Bag-Info"], layout.BAGIT_PROFILE_LABEL])
        assert len(set(written)) == len(written)
        for rule in profile["Bag-Info"].values():
            # What verify's check reads of a rule (no "values" constraint: verify has none).
            assert set(rule) <= {"required", "repeatable", "description"}
            assert rule["required"] is True and rule["repeatable"] is False
        assert profile["Serialization"] == "optional"
        accepted = [mimetypes.guess_type(f"bundle.{suffix}")[0] for suffix in ("zip", "tar")]
        assert profile["Accept-Serialization"] == accepted

    def test_a_study_names_it(self, small_bundle: Path) -> None:
        """A new bundle's bag-info.txt names the profile once, before its Payload-Oxum."""
        info = _info(small_bundle)
        assert info.count(f"{layout.BAGIT_PROFILE_LABEL}: {layout.BAGIT_PROFILE}") == 1
        assert info[-1].startswith("Payload-Oxum: ")


def _payload_conforms(root: Path, profile: dict[str, Any]) -> list[str]:
    """What of the payload breaks Payload-Files-Required and -Allowed (specification 1.4.0,
    which bagit-profile 1.3.1 predates and does not check): glob patterns, ``*`` within a
    name."""
    names = [p.relative_to(root).as_posix() for p in (root / "data").rglob("*") if p.is_file()]

    def allowed(name: str) -> bool:
        return any(
            fnmatch.fnmatchcase(name, pattern) and name.count("/") == pattern.count("/")
            for pattern in profile["Payload-Files-Allowed"]
        )

    problems = [
        f"missing {name}" for name in profile["Payload-Files-Required"] if name not in names
    ]
    return problems + [f"not allowed {name}" for name in names if not allowed(name)]


class TestTheStockValidator:
    """bagit-profile 1.3.1, the specification's reference validator, on real bundles."""

    @pytest.mark.slow
    @pytest.mark.parametrize(
        "fixture", ["small_bundle", "published_bundle", "contrasted_bundle", "scored_bundle"]
    )
    def test_it_accepts_every_kind_of_bundle(
        self, fixture: str, request: pytest.FixtureRequest
    ) -> None:
        """A Gymnasium bundle, one with published figures and an exclusion, one with contrasts,
        a scored command study: each validates against the profile, as a directory."""
        root: Path = request.getfixturevalue(fixture)
        profile = _stock()
        assert profile.validate_serialization(str(root))
        assert profile.validate(bagit.Bag(str(root))), str(profile.report)
        assert str(profile.report) == "VALID"
        assert _payload_conforms(root, _profile()) == []
        assert verify(root) == []

    def test_it_accepts_a_signed_bundle(self, copy: Path, tmp_path: Path) -> None:
        """signatures/, a tag directory outside the manifests, is allowed."""
        key = tmp_path / "key"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        assert runner.invoke(app, ["sign", str(copy), "--key", str(key)]).exit_code == 0
        assert any((copy / "signatures").iterdir())
        profile = _stock()
        assert profile.validate(bagit.Bag(str(copy))), str(profile.report)

    @pytest.mark.parametrize("suffix", ["zip", "tar"])
    def test_it_accepts_a_packed_bundle(
        self, small_bundle: Path, tmp_path: Path, suffix: str
    ) -> None:
        """``repro pack``'s zip and tar are serializations the profile accepts."""
        out = tmp_path / f"bundle.{suffix}"
        assert runner.invoke(app, ["pack", str(small_bundle), "--out", str(out)]).exit_code == 0
        assert _stock().validate_serialization(str(out))

    def test_it_rejects_an_md5_manifest(self, copy: Path) -> None:
        """A payload manifest of md5 beside the sha256 one breaks Manifests-Allowed; verify
        names the file, which a bundle has no place for."""
        lines = [
            f"{hashlib.md5(p.read_bytes()).hexdigest()}  {p.relative_to(copy).as_posix()}"
            for p in sorted((copy / "data").rglob("*"))
            if p.is_file()
        ]
        (copy / "manifest-md5.txt").write_text("\n".join(lines) + "\n", "utf-8")
        bagit.Bag(str(copy)).validate()  # still a valid bag
        profile = _stock()
        assert not profile.validate(bagit.Bag(str(copy)))
        assert "Unexpected payload manifest type(s) '['md5']' present" in str(profile.report)
        assert _codes(copy) == ["outside-bag-layout"]

    def test_it_rejects_fetch_txt(self, copy: Path) -> None:
        """fetch.txt breaks Allow-Fetch.txt; verify names it likewise."""
        (copy / "fetch.txt").write_text("", "utf-8")
        profile = _stock()
        assert not profile.validate(bagit.Bag(str(copy)))
        assert "Fetch.txt is present but is not allowed" in str(profile.report)
        assert _codes(copy) == ["outside-bag-layout"]

    def test_it_rejects_a_bundle_that_names_no_profile(self, copy: Path) -> None:
        """A bundle written before the profile (it names none) is not one of the profile's
        bags, though it verifies: the profile is an addition."""
        _write_info(copy, [line for line in _info(copy) if "Profile" not in line])
        profile = _stock()
        assert not profile.validate(bagit.Bag(str(copy)))
        assert "Required 'BagIt-Profile-Identifier' tag is not in bag-info.txt" in str(
            profile.report
        )
        assert _codes(copy) == []


class TestVerifyChecksTheProfile:
    """``repro verify``: a bundle that names the profile names repro's and conforms to it; one
    that names none is read as before. Each forgery is resealed, so only the profile's rule
    can name it."""

    def test_an_older_bundle_names_none_and_verifies(self) -> None:
        """The shipped example predates the profile."""
        assert not any("Profile" in line for line in _info(OLD_BUNDLE))
        assert verify(OLD_BUNDLE) == []

    @pytest.mark.parametrize(
        "line",
        [
            "BagIt-Profile-Identifier: https://profiles.invalid/other.json",
            "BagIt-Profile-Identifier: https://repro.invalid/bagit-profile/v2.json",
            "BagIt-Profile-Identifier: ",
            "bagit-profile-identifier: https://repro.invalid/bagit-profile/v1.json",
        ],
    )
    def test_another_or_a_malformed_identifier(self, copy: Path, line: str) -> None:
        """Another profile, a later version, none given, a label cased otherwise."""
        info = [line if "Profile" in old else old for old in _info(copy)]
        _write_info(copy, info)
        assert _codes(copy) == ["bag-info-profile"]

    def test_the_identifier_twice(self, copy: Path) -> None:
        """repro's profile, named twice (or beside another: the profile is repro's alone)."""
        for other in (layout.BAGIT_PROFILE, "https://profiles.invalid/other.json"):
            info = _info(copy)
            info.insert(0, f"{layout.BAGIT_PROFILE_LABEL}: {other}")
            _write_info(copy, info)
            assert _codes(copy) == ["bag-info-profile"]
            _write_info(copy, info[1:])
            assert _codes(copy) == []

    @pytest.mark.parametrize("tag", ["Bag-Software-Agent", "Bagging-Date", "External-Identifier"])
    def test_a_required_element_dropped(self, copy: Path, tag: str) -> None:
        """An element the profile requires, dropped: named under the profile, and not in a
        bundle that names none (one written before the profile keeps verifying as it did)."""
        info = [line for line in _info(copy) if not line.startswith(f"{tag}:")]
        _write_info(copy, info)
        [finding] = verify(copy)
        assert finding.code == "bag-info-profile-tag-missing" and tag in finding.what
        _write_info(copy, [line for line in info if "Profile" not in line])
        assert _codes(copy) == []

    def test_the_description_dropped(self, copy: Path) -> None:
        """The title's element too (External-Description)."""
        info = [line for line in _info(copy) if not line.startswith(layout.DESCRIPTION_LABEL)]
        _write_info(copy, info)
        assert _codes(copy) == ["bag-info-profile-tag-missing"]

    def test_an_element_repeated(self, copy: Path) -> None:
        """An element the profile allows once, twice."""
        info = _info(copy)
        info.insert(1, next(line for line in info if line.startswith("Bagging-Date:")))
        _write_info(copy, info)
        [finding] = verify(copy)
        assert finding.code == "bag-info-profile-tag-repeated" and "Bagging-Date" in finding.what
        assert "Bagging-Date" in str(_fails_stock(copy))

    def test_payload_oxum_is_the_bag_info_check_s(self, copy: Path) -> None:
        """Payload-Oxum, which the profile requires, is named by the check every bundle gets,
        once."""
        assert COVERED == {"Payload-Oxum"} <= set(_profile()["Bag-Info"])
        info = [line for line in _info(copy) if not line.startswith("Payload-Oxum:")]
        (copy / layout.BAG_INFO).write_text("\n".join(info) + "\n", "utf-8")
        retag(copy)
        assert _codes(copy) == ["payload-oxum"]

    def test_the_cli_names_it(self, copy: Path) -> None:
        """The finding's code on the command line, exit 1."""
        info = [line if "Profile" not in line else f"{line}x" for line in _info(copy)]
        _write_info(copy, info)
        result = runner.invoke(app, ["verify", "--json", str(copy)])
        assert result.exit_code == 1
        assert [f["code"] for f in json.loads(result.stdout)["findings"]] == ["bag-info-profile"]


def _fails_stock(root: Path) -> bagit_profile.ProfileValidationReport:
    profile = _stock()
    assert not profile.validate(bagit.Bag(str(root)))
    report: bagit_profile.ProfileValidationReport = profile.report
    return report


class TestBagitOnly:
    """``--bagit-only`` checks BagIt alone: a profile a bag names, any, is one of its metadata
    elements, neither a finding nor a warning."""

    @pytest.mark.parametrize(
        "identifier", ["https://profiles.invalid/other.json", layout.BAGIT_PROFILE]
    )
    def test_a_foreign_bag_naming_a_profile(self, tmp_path: Path, identifier: str) -> None:
        """A bag naming another profile, or repro's while breaking it (an md5 manifest, no
        element the profile requires): valid, no warning."""
        payload = {"data/a.txt": b"a\n"}
        root = make_bag(
            tmp_path / "bag",
            payload,
            algorithms=("md5",),
            info=[f"BagIt-Profile-Identifier: {identifier}", "Payload-Oxum: 2.1"],
        )
        result = verify_bag(root)
        assert result.findings == [] and result.warnings == []

    def test_a_bundle_naming_another_profile(self, copy: Path) -> None:
        """A repro bundle naming another profile: a valid bag (plain verify names it)."""
        info = [
            line
            if "Profile" not in line
            else "BagIt-Profile-Identifier: https://profiles.invalid/other.json"
            for line in _info(copy)
        ]
        _write_info(copy, info)
        result = verify_bag(copy)
        assert result.findings == [] and result.warnings == []
        assert _codes(copy) == ["bag-info-profile"]
