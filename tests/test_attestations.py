"""Standard attestations: ``repro sign`` writes SLSA provenance v1 and an in-toto test-result
beside repro's own statement, each read here with the in-toto attestation framework's own
protobuf types (in-toto-attestation 0.9.3, Apache-2.0) and derived again by verify, which names a
forged one; ``repro verify --attest`` and ``repro audit --sign`` write an SLSA verification
summary (VSA) that securesystemslib and the framework's types check without repro."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import attrs
import pytest
from cryptography.hazmat.primitives import serialization
from google.protobuf import json_format
from in_toto_attestation.predicates.provenance.v1 import provenance_pb2
from in_toto_attestation.predicates.test_result.v0 import test_result_pb2
from in_toto_attestation.predicates.vsa.v1 import vsa_pb2
from in_toto_attestation.v1 import statement_pb2
from in_toto_attestation.v1.statement import Statement
from securesystemslib.dsse import Envelope
from securesystemslib.signer import SSlibKey
from typer.testing import CliRunner

from repro import _layout as layout
from repro._bundle import attestations
from repro._bundle.attestations import (
    PROVENANCE,
    STANDARD_TYPES,
    TEST_RESULT,
    named_information,
    purl,
)
from repro._bundle.signatures import (
    BUNDLE,
    SIGNED_KINDS,
    load_public_key,
    sign_statement,
    statement,
)
from repro._bundle.summaries import audit_policy, verify_policy
from repro._cli import app
from repro._json import canonical
from repro.errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_VERIFY_FAILED, BadInput
from repro.verify import Limits, open_verified, verification
from test_signatures import openssh_key

runner = CliRunner()
TYPES = {
    PROVENANCE: provenance_pb2.Provenance,
    TEST_RESULT: test_result_pb2.TestResult,
}


@pytest.fixture
def author(tmp_path: Path) -> tuple[Path, Path]:
    """The author's OpenSSH key pair (private, public)."""
    return openssh_key(tmp_path / "author")


def _copy(bundle: Path, tmp_path: Path) -> Path:
    root = tmp_path / "bundle"
    shutil.copytree(bundle, root)
    return root


def _signed(bundle: Path, tmp_path: Path, key: Path) -> Path:
    """A copy of ``bundle`` signed by ``key`` through ``repro sign``."""
    root = _copy(bundle, tmp_path)
    done = runner.invoke(app, ["sign", str(root), "--key", str(key)])
    assert done.exit_code == EXIT_OK, done.output
    return root


def _statement(path: Path) -> dict[str, Any]:
    envelope = json.loads(path.read_bytes())
    found: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))
    return found


def _file(root: Path, key: Path, kind: str) -> Path:
    """The signature file of ``kind`` by the public key ``key``."""
    digits = base64.b64decode(load_public_key(key).fingerprint.removeprefix("SHA256:") + "=").hex()[
        :12
    ]
    return root / layout.signature_file(digits, kind)


def _framework_statement(found: dict[str, Any]) -> None:
    """The statement as the framework reads it: its Statement type, validated."""
    pb = json_format.ParseDict(found, statement_pb2.Statement())
    Statement.copy_from_pb(pb).validate()


def _strict(predicate: dict[str, Any], message: Any) -> Any:
    """``predicate`` parsed into the framework's ``message`` with no unknown field allowed but
    extension fields, whose names are URIs (as the specifications let a producer add)."""

    def without_extensions(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: without_extensions(v) for k, v in value.items() if not k.startswith("https://")
            }
        if isinstance(value, list):
            return [without_extensions(v) for v in value]
        return value

    return json_format.ParseDict(without_extensions(predicate), message)


class TestSignedKinds:
    """repro sign writes the standard statements beside repro's own."""

    @pytest.mark.slow
    @pytest.mark.parametrize("fixture", ["small_bundle", "scored_bundle", "contrasted_bundle"])
    def test_each_kind_reads_as_the_framework_s_type(
        self,
        fixture: str,
        request: pytest.FixtureRequest,
        tmp_path: Path,
        author: tuple[Path, Path],
    ) -> None:
        """Three files, one per kind; the standard ones are Statements of their published
        predicate types, which parse into the framework's types with no unknown field; verify
        with the author's key checks all three."""
        root = _signed(request.getfixturevalue(fixture), tmp_path, author[0])
        b = open_verified(root)
        for kind in (PROVENANCE, TEST_RESULT):
            found = _statement(_file(root, author[1], kind))
            _framework_statement(found)
            assert found["predicateType"] == STANDARD_TYPES[kind]
            assert found["subject"] == [
                {"name": layout.TAGMANIFEST, "digest": {"sha256": b.bundle_sha256}}
            ]
            _strict(found["predicate"], TYPES[kind]())
        done = verification(root, [load_public_key(author[1])])
        assert done.findings == []
        assert [(s.kind, s.status) for s in done.signatures] == [
            (kind, "verified") for kind in SIGNED_KINDS
        ]

    def test_the_provenance_says_what_the_files_say(
        self, small_bundle: Path, tmp_path: Path, author: tuple[Path, Path]
    ) -> None:
        """The protocol is the one external parameter, by its sha256; each pinned source is a
        resolved dependency (a package by its purl, a file by its sha256); the builder is repro
        at the bundle's version; the run's start and end are the environment's."""
        root = _signed(small_bundle, tmp_path, author[0])
        b = open_verified(root)
        p = _statement(_file(root, author[1], PROVENANCE))["predicate"]
        definition, details = p["buildDefinition"], p["runDetails"]
        assert definition["externalParameters"] == {
            "protocol": {"name": b.protocol.protocol.id, "digest": {"sha256": b.protocol.sha256}}
        }
        assert [d["name"] for d in definition["resolvedDependencies"]] == [
            s.name for s in b.ledger.sources
        ]
        for d, s in zip(definition["resolvedDependencies"], b.ledger.sources, strict=True):
            if s.kind == "package":
                assert d["uri"] == purl(s.name, str(s.version))
            if s.kind == "file":
                assert d["digest"] == {"sha256": s.sha256}
        assert details["builder"]["version"] == {"repro-evidence": b.environment.repro_version}
        assert details["metadata"] == {
            "startedOn": b.environment.started_utc,
            "finishedOn": b.environment.finished_utc,
        }

    @pytest.mark.slow
    @pytest.mark.parametrize("fixture", ["small_bundle", "scored_bundle", "contrasted_bundle"])
    def test_the_test_result_sorts_every_verdict(
        self, fixture: str, request: pytest.FixtureRequest
    ) -> None:
        """Every tier, contrast and gate is one test, in the list its verdict sorts it into;
        the reproduction class is one unless unavailable; the result follows the lists."""
        b = open_verified(request.getfixturevalue(fixture))
        found = attestations.test_result_predicate(b.protocol, b.tiers, b.contrasts, b.scores)
        listed = found["passedTests"] + found["warnedTests"] + found["failedTests"]
        expected = [f"tier/{t.name}" for t in b.tiers.tiers]
        if b.tiers.reproduction.verdict != "unavailable":
            expected.append(f"reproduction/{b.tiers.reproduction.verdict}")
        expected += [f"contrast/{c.id}" for c in (b.contrasts.contrasts if b.contrasts else ())]
        expected += [f"gate/{g.name}" for g in (b.scores.gates if b.scores else ())]
        assert sorted(listed) == sorted(expected)
        for tier in b.tiers.tiers:
            where = {"pass": "passedTests", "weakened": "warnedTests", "fail": "failedTests"}
            assert f"tier/{tier.name}" in found[where[tier.verdict]]
        result = (
            "FAILED" if found["failedTests"] else "WARNED" if found["warnedTests"] else "PASSED"
        )
        assert found["result"] == result

    def test_purl(self) -> None:
        """A package URL as the purl type pypi writes it: the name lowered, _ and . as -, and
        a local version's + percent-encoded."""
        assert purl("Typing_Extensions", "4.12.2") == "pkg:pypi/typing-extensions@4.12.2"
        assert purl("zope.interface", "1.0+local") == "pkg:pypi/zope-interface@1.0%2Blocal"

    def test_named_information(self) -> None:
        """RFC 6920's example: the ni URI of sha-256 of "Hello World!"."""
        digest = hashlib.sha256(b"Hello World!").hexdigest()
        assert named_information(digest) == (
            "ni:///sha-256;f4OxZX_x_FO5LcGBSKHWXfwtSx-j1ncoSt3SABJtkGk"
        )


class TestForgedStandardStatements:
    """A standard statement whose claims are not what the files say is named, even signed by
    the author's own key."""

    @pytest.mark.parametrize(
        ("kind", "path", "value"),
        [
            (PROVENANCE, ("runDetails", "metadata", "startedOn"), "2000-01-01T00:00:00Z"),
            (PROVENANCE, ("buildDefinition", "resolvedDependencies"), []),
            (TEST_RESULT, ("result",), "FAILED"),
            (TEST_RESULT, ("failedTests",), ["tier/contract"]),
        ],
    )
    def test_a_forged_claim_is_named(
        self,
        small_bundle: Path,
        tmp_path: Path,
        author: tuple[Path, Path],
        kind: str,
        path: tuple[str, ...],
        value: Any,
    ) -> None:
        """verify with the author's key: signature-predicate, for the forged file only."""
        root = _signed(small_bundle, tmp_path, author[0])
        target = _file(root, author[1], kind)
        forged = _statement(target)
        place = forged["predicate"]
        for step in path[:-1]:
            place = place[step]
        assert place[path[-1]] != value
        place[path[-1]] = value
        target.unlink()
        sign_statement(root, forged, author[0], kind)
        done = verification(root, [load_public_key(author[1])])
        assert [(f.code, f.file) for f in done.findings] == [
            ("signature-predicate", target.relative_to(root).as_posix())
        ]

    def test_repro_s_own_type_for_a_standard_kind_is_refused(
        self, small_bundle: Path, tmp_path: Path, author: tuple[Path, Path]
    ) -> None:
        """A statement typed https://repro.invalid/attestation/provenance/v1 is no provenance:
        refused at signing, and named malformed when found in a bundle."""
        root = _signed(small_bundle, tmp_path, author[0])
        target = _file(root, author[1], PROVENANCE)
        forged = _statement(target)
        forged["predicateType"] = "https://repro.invalid/attestation/provenance/v1"
        with pytest.raises(BadInput) as refused:
            sign_statement(root, forged, author[0], PROVENANCE)
        assert [p.code for p in refused.value.problems] == ["not-allowed"]
        envelope = json.loads(target.read_bytes())
        envelope["payload"] = base64.b64encode(canonical.dumps(forged, newline=False)).decode()
        target.write_bytes(canonical.dumps(envelope))
        codes = [f.code for f in verification(root).findings]
        assert codes == ["signature-malformed"]

    def test_repro_s_own_statement_is_unchanged(
        self, small_bundle: Path, tmp_path: Path, author: tuple[Path, Path]
    ) -> None:
        """The bundle statement is byte for byte what signing it alone writes (earlier
        versions' statements keep verifying)."""
        root = _signed(small_bundle, tmp_path, author[0])
        b = open_verified(root)
        from repro._bundle.signatures import bundle_predicate, envelope_bytes, load_signing_key

        alone = statement(
            BUNDLE,
            b.bundle_sha256,
            bundle_predicate(b.protocol, b.aggregates, b.tiers, b.environment, b.contrasts),
        )
        expected = envelope_bytes(alone, load_signing_key(author[0]))
        assert _file(root, author[1], BUNDLE).read_bytes() == expected


def _checked_without_repro(path: Path, public: Path) -> dict[str, Any]:
    """The summary at ``path`` checked by securesystemslib with the public key as the
    cryptography package reads it, and its statement read by the in-toto framework's types:
    the statement."""
    raw = serialization.load_ssh_public_key(public.read_bytes())
    # The key's OpenSSH fingerprint, as ssh-keygen -lf prints it, is the envelope's keyid.
    blob = base64.b64decode(public.read_text().split()[1])
    keyid = "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
    key = SSlibKey.from_crypto(raw, keyid=keyid)
    envelope = Envelope.from_dict(json.loads(path.read_bytes()))
    assert list(envelope.verify([key], 1)) == [keyid]
    assert envelope.payload_type == "application/vnd.in-toto+json"
    found: dict[str, Any] = json.loads(envelope.payload)
    _framework_statement(found)
    assert found["predicateType"] == "https://slsa.dev/verification_summary/v1"
    # The framework's VSA proto (0.9.3) types verifiedLevels as one string, against the SLSA
    # specification's array (in-toto/attestation#425, where the maintainers hold the
    # specification authoritative): that field is held to the specification here instead.
    predicate = dict(found["predicate"])
    levels = predicate.pop("verifiedLevels")
    _strict(predicate, vsa_pb2.VerificationSummary())
    assert isinstance(levels, list) and levels
    assert all(isinstance(x, str) and not x.startswith("SLSA_") for x in levels)
    assert (predicate["verificationResult"] == "FAILED") == (levels == ["FAILED"])
    return found


class TestVerificationSummary:
    """repro verify --attest writes a signed VSA beside the bundle."""

    @pytest.mark.slow
    def test_a_verified_bundle(
        self, small_bundle: Path, tmp_path: Path, author: tuple[Path, Path]
    ) -> None:
        """PASSED, about the tag manifest by its sha256, under the verify policy of the limits
        and trusted keys used, with each signature file it checked as an input attestation;
        checked by securesystemslib without repro."""
        root = _signed(small_bundle, tmp_path, author[0])
        reviewer = openssh_key(tmp_path / "reviewer")
        done = runner.invoke(
            app,
            ["verify", str(root), "--trusted-key", str(author[1]), "--attest", str(reviewer[0])],
        )
        assert done.exit_code == EXIT_OK, done.output
        path = tmp_path / "bundle.vsa.dsse.json"
        found = _checked_without_repro(path, reviewer[1])
        digest = hashlib.sha256((root / layout.TAGMANIFEST).read_bytes()).hexdigest()
        assert found["subject"] == [{"name": layout.TAGMANIFEST, "digest": {"sha256": digest}}]
        p = found["predicate"]
        assert p["verificationResult"] == "PASSED"
        verdict = open_verified(root).tiers.reproduction.verdict.upper()
        assert p["verifiedLevels"] == [
            "REPRO_BUNDLE_VERIFIED",
            f"REPRO_REPRODUCTION_{verdict}",
            "REPRO_SIGNATURES_VERIFIED",
        ]
        assert p["resourceUri"] == named_information(digest)
        policy = verify_policy(attrs.asdict(Limits()), [load_public_key(author[1]).fingerprint])
        assert p["policy"] == {
            "uri": "https://repro.invalid/policy/verify/v1",
            "digest": {
                "sha256": hashlib.sha256(canonical.dumps(policy, newline=False)).hexdigest()
            },
        }
        assert p["inputAttestations"] == [
            {
                "uri": _file(root, author[1], kind).relative_to(root).as_posix(),
                "digest": {
                    "sha256": hashlib.sha256(_file(root, author[1], kind).read_bytes()).hexdigest()
                },
            }
            for kind in SIGNED_KINDS
        ]
        assert path.stat().st_mode & 0o777 == 0o644 & ~_umask()

    def test_a_bundle_that_fails(self, small_bundle: Path, tmp_path: Path) -> None:
        """A tampered bundle: exit 1, and the summary says FAILED (verifiedLevels FAILED), about
        the tag manifest as it is; --json output stays JSON."""
        root = _copy(small_bundle, tmp_path)
        runs = root / "data/runs/c00.jsonl"
        runs.write_bytes(runs.read_bytes().replace(b'"valid"', b'"failed"', 1))
        key = openssh_key(tmp_path / "reviewer")
        out = tmp_path / "elsewhere.json"
        done = runner.invoke(
            app, ["verify", "--json", str(root), "--attest", str(key[0]), "--vsa", str(out)]
        )
        assert done.exit_code == EXIT_VERIFY_FAILED
        assert json.loads(done.stdout)["ok"] is False
        p = _checked_without_repro(out, key[1])["predicate"]
        assert (p["verificationResult"], p["verifiedLevels"]) == ("FAILED", ["FAILED"])
        assert "inputAttestations" not in p

    def test_refusals_write_nothing(
        self, small_bundle: Path, tmp_path: Path, author: tuple[Path, Path]
    ) -> None:
        """An existing summary file, --vsa without --attest, --attest with --bagit-only and a
        public key given as the private one: exit 2, before verify runs, nothing written."""
        root = _copy(small_bundle, tmp_path)
        there = tmp_path / "there.json"
        there.write_bytes(b"kept")
        cases = [
            ["--attest", str(author[0]), "--vsa", str(there)],
            ["--vsa", str(tmp_path / "new.json")],
            ["--attest", str(author[0]), "--bagit-only"],
            ["--attest", str(author[1])],
            ["--attest", str(author[0]), "--vsa", str(tmp_path / "no/such/dir.json")],
        ]
        for extra in cases:
            done = runner.invoke(app, ["verify", str(root), *extra])
            assert done.exit_code == EXIT_BAD_INPUT, (extra, done.output)
        assert there.read_bytes() == b"kept"
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            ["author", "author.pub", "bundle", "there.json"]
        )


@pytest.mark.slow
class TestAuditSummary:
    """repro audit --sign writes a signed VSA too."""

    def test_a_clean_audit(self, small_bundle: Path, tmp_path: Path) -> None:
        """PASSED under the audit policy of the sample drawn, about the audited bundle;
        checked by securesystemslib without repro."""
        root = _copy(small_bundle, tmp_path)
        key = openssh_key(tmp_path / "reviewer")
        done = runner.invoke(app, ["audit", str(root), "--sample", "3", "--sign", str(key[0])])
        assert done.exit_code == EXIT_OK, done.output
        path = tmp_path / "bundle.audit.vsa.dsse.json"
        assert f"summary: wrote {path}" in done.stdout
        found = _checked_without_repro(path, key[1])
        digest = hashlib.sha256((root / layout.TAGMANIFEST).read_bytes()).hexdigest()
        assert found["subject"][0]["digest"] == {"sha256": digest}
        p = found["predicate"]
        assert (p["verificationResult"], p["verifiedLevels"]) == (
            "PASSED",
            ["REPRO_AUDIT_IDENTICAL"],
        )
        policy = canonical.dumps(audit_policy(3), newline=False)
        assert p["policy"]["digest"] == {"sha256": hashlib.sha256(policy).hexdigest()}


def _umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask
