"""Signed attestations: ``repro sign`` writes a DSSE envelope of an in-toto statement about the
bundle beside the bag, and ``repro verify --trusted-key`` checks it. The envelopes are checked
independently too (libsodium through PyNaCl over a PAE computed here from the DSSE spec, and
securesystemslib's own reading of the file), and every forgery of a bundle is caught with the
author's key."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bagit
import nacl.signing
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from securesystemslib.dsse import Envelope
from securesystemslib.signer import SSlibKey
from typer.testing import CliRunner

from conftest import SMALL, study_once
from forge import forge, forge_plan, rederive, reseal, retag
from repro import _layout as layout
from repro._bundle.signatures import (
    PASSPHRASE_VARIABLE,
    PublicKey,
    SigningKey,
    bundle_predicate,
    envelope_bytes,
    fingerprint,
    load_public_key,
    load_signing_key,
    predicate_type,
    sign_bundle,
    sign_statement,
    statement,
)
from repro._cli import app
from repro._json import canonical
from repro.errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_VERIFY_FAILED, BadInput
from repro.verify import Limits, bundle_sha256, open_verified, verification, verify
from test_hostile import UNSEEN

#: CartPole and Pendulum (whose rewards differ step to step, as test_hostile's cheap edits need).
SIGNED: dict[str, Any] = {
    **SMALL,
    "id": "signed",
    "matrix": [{"name": "env_id", "levels": ["CartPole-v1", "Pendulum-v1"]}],
    "participants": [{"id": "random", "kind": "random", "params": {}}],
    "runs_per_condition": 4,
}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real, unsigned bundle of :data:`SIGNED`, made once; copy it before changing it."""
    return study_once(tmp_path_factory, "signed", SIGNED)


@pytest.fixture
def root(base: Path, tmp_path: Path) -> Path:
    """A private copy of the base bundle."""
    target = tmp_path / "bundle"
    shutil.copytree(base, target)
    return target


def openssh_key(path: Path, key: Ed25519PrivateKey | None = None) -> tuple[Path, Path]:
    """A new Ed25519 key written as OpenSSH private key ``path`` and ``path.pub``."""
    key = key or Ed25519PrivateKey.generate()
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )
    )
    public = path.with_name(path.name + ".pub")
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        )
        + b" author@example\n"
    )
    return path, public


def pem_key(path: Path) -> tuple[Path, Path]:
    """A new Ed25519 key written as a PKCS#8 PEM file ``path`` and its PEM public key."""
    key = Ed25519PrivateKey.generate()
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    public = path.with_name(path.name + ".pub.pem")
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return path, public


@pytest.fixture
def author(tmp_path: Path) -> tuple[Path, Path]:
    """The author's OpenSSH key pair (private, public)."""
    return openssh_key(tmp_path / "author")


def _codes(root: Path, *public: Path) -> set[str]:
    keys = [load_public_key(p) for p in public]
    return {f.code for f in verification(root, keys).findings}


def _envelope(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_bytes())
    return data


def _rewrite(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    envelope = _envelope(path)
    change(envelope)
    path.write_bytes(canonical.dumps(envelope))


class TestRoundTrip:
    """A signed bundle verifies with the signer's key, in either key format."""

    @pytest.mark.slow
    @pytest.mark.parametrize("make", [openssh_key, pem_key], ids=["openssh", "pem"])
    def test_sign_then_verify(self, root: Path, tmp_path: Path, make: Any) -> None:
        """The signature file is named after the key and the kind, outside every manifest, and
        checks against the public key: the bundle verifies with it."""
        private, public = make(tmp_path / "key")
        (path,) = sign_bundle(root, private, open_verified)
        key = load_public_key(public)
        digits = base64.b64decode(key.fingerprint.removeprefix("SHA256:") + "=").hex()[:12]
        assert path.relative_to(root).as_posix() == layout.signature_file(digits, "bundle")
        assert path.stat().st_mode & 0o777 == 0o600
        assert "signatures/" not in (root / layout.MANIFEST).read_text()
        assert "signatures/" not in (root / layout.TAGMANIFEST).read_text()
        done = verification(root, [key])
        assert done.findings == []
        assert [(s.status, s.kind, s.keyid) for s in done.signatures] == [
            ("verified", "bundle", key.fingerprint)
        ]

    def test_the_statement(self, root: Path, author: tuple[Path, Path]) -> None:
        """The payload is the in-toto Statement v1 about the tag manifest by the bundle's
        sha256, and its predicate says what the bundle's files say."""
        (path,) = sign_bundle(root, author[0], open_verified)
        envelope = _envelope(path)
        assert envelope["payloadType"] == "application/vnd.in-toto+json"
        s = json.loads(base64.b64decode(envelope["payload"]))
        assert s["_type"] == "https://in-toto.io/Statement/v1"
        assert s["subject"] == [
            {"name": "tagmanifest-sha256.txt", "digest": {"sha256": bundle_sha256(root)}}
        ]
        assert s["predicateType"] == "https://repro.invalid/attestation/bundle/v1"
        b = open_verified(root)
        e = b.aggregates.estimand
        assert e.interval is not None
        assert s["predicate"] == {
            "protocol": {"name": "signed", "digest": {"sha256": b.protocol.sha256}},
            "reproduction": b.tiers.reproduction.verdict,
            "estimand": {
                "name": e.kind,
                "value": e.value,
                "interval": [e.interval.low, e.interval.high],
                "level": 0.95,
            },
            "repro_version": b.environment.repro_version,
        }

    def test_contrast_verdicts_are_claimed(
        self, contrasted_bundle: Path, tmp_path: Path, author: tuple[Path, Path]
    ) -> None:
        """A bundle with contrasts claims each contrast's verdict, in the protocol's order."""
        target = tmp_path / "contrasted"
        shutil.copytree(contrasted_bundle, target)
        (path,) = sign_bundle(target, author[0], open_verified)
        predicate = json.loads(base64.b64decode(_envelope(path)["payload"]))["predicate"]
        b = open_verified(target)
        assert b.contrasts is not None
        assert predicate["contrasts"] == [
            {"id": c.id, "verdict": c.verdict} for c in b.contrasts.contrasts
        ]
        assert _codes(target, author[1]) == set()

    def test_signing_again_writes_the_same_bytes(
        self, root: Path, author: tuple[Path, Path]
    ) -> None:
        """Ed25519 and the statement are deterministic: signing twice changes nothing."""
        (path,) = sign_bundle(root, author[0], open_verified)
        first = path.read_bytes()
        assert sign_bundle(root, author[0], open_verified) == [path]
        assert path.read_bytes() == first
        assert sorted(p.name for p in path.parent.iterdir()) == [path.name]

    def test_another_envelope_by_the_same_key_is_not_replaced(
        self, root: Path, author: tuple[Path, Path]
    ) -> None:
        """A signature file by this key that holds other bytes is refused, never replaced; and
        a bundle holding a statement its files contradict does not verify, so sign_bundle
        refuses it before that."""
        claim = statement("bundle", bundle_sha256(root), {"reproduction": "exact"})
        path = sign_statement(root, claim, author[0], "bundle")
        changed = path.read_bytes()
        other = statement("bundle", bundle_sha256(root), {"reproduction": "bounded"})
        with pytest.raises(BadInput, match="never replaces"):
            sign_statement(root, other, author[0], "bundle")
        with pytest.raises(BadInput, match="does not verify"):
            sign_bundle(root, author[0], open_verified)
        assert path.read_bytes() == changed

    def test_ssh_keygen_key(self, root: Path, tmp_path: Path) -> None:
        """A key made by ssh-keygen signs, and its fingerprint is what ssh-keygen -lf prints."""
        if shutil.which("ssh-keygen") is None:
            pytest.skip("ssh-keygen is not installed")
        key = tmp_path / "repro-key"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-f", str(key), "-N", ""],
            check=True,
            timeout=60,
        )
        listed = subprocess.run(
            ["ssh-keygen", "-lf", f"{key}.pub"], check=True, capture_output=True, text=True
        ).stdout.split()[1]
        assert load_public_key(Path(f"{key}.pub")).fingerprint == listed
        sign_bundle(root, key, open_verified)
        assert _codes(root, Path(f"{key}.pub")) == set()

    @pytest.mark.slow
    def test_encrypted_key_with_the_passphrase_variable(
        self, root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An encrypted key is refused without REPRO_KEY_PASSPHRASE and signs with it."""
        key = Ed25519PrivateKey.generate()
        path = tmp_path / "encrypted"
        path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.OpenSSH,
                serialization.BestAvailableEncryption(b"s3cret"),
            )
        )
        monkeypatch.delenv(PASSPHRASE_VARIABLE, raising=False)
        with pytest.raises(BadInput, match=PASSPHRASE_VARIABLE):
            load_signing_key(path)
        monkeypatch.setenv(PASSPHRASE_VARIABLE, "s3cret")
        assert load_signing_key(path).public.fingerprint == fingerprint(key.public_key())
        sign_bundle(root, path, open_verified)


class TestStockTools:
    """Signatures leave the bag a bag."""

    def test_bagit_validates_a_signed_bag(
        self, root: Path, author: tuple[Path, Path], tmp_path: Path
    ) -> None:
        """The bagit package validates a bag with two signatures beside it."""
        sign_bundle(root, author[0], open_verified)
        sign_bundle(root, pem_key(tmp_path / "reviewer")[0], open_verified)
        assert len(list((root / "signatures").iterdir())) == 2
        bagit.Bag(str(root)).validate()

    def test_an_unsigned_bundle_verifies_as_before(self, root: Path) -> None:
        """A bundle without signatures/ verifies with no finding and lists no signature."""
        done = verification(root)
        assert (done.findings, done.signatures) == ([], [])
        assert verify(root) == []


class TestSideBySide:
    """The author's and a reviewer's signatures sit side by side."""

    def test_two_signatures(self, root: Path, author: tuple[Path, Path], tmp_path: Path) -> None:
        """Both keys trusted: both verify. One trusted: the other is untrusted (exit 1)."""
        reviewer = pem_key(tmp_path / "reviewer")
        sign_bundle(root, author[0], open_verified)
        sign_bundle(root, reviewer[0], open_verified)
        assert _codes(root, author[1], reviewer[1]) == set()
        assert _codes(root, author[1]) == {"signature-untrusted"}

    def test_without_keys_each_is_not_checked(
        self, root: Path, author: tuple[Path, Path], tmp_path: Path
    ) -> None:
        """Without a trusted key verify passes and names each signature's key as not checked,
        in the text and in --json."""
        sign_bundle(root, author[0], open_verified)
        sign_bundle(root, pem_key(tmp_path / "reviewer")[0], open_verified)
        done = CliRunner().invoke(app, ["verify", str(root)])
        assert done.exit_code == EXIT_OK, done.output
        lines = [line for line in done.stdout.splitlines() if line.startswith("signature ")]
        assert len(lines) == 2
        assert all(line.endswith("not checked") and " key SHA256:" in line for line in lines)
        report = json.loads(CliRunner().invoke(app, ["verify", "--json", str(root)]).stdout)
        assert [s["status"] for s in report["signatures"]] == ["not-checked", "not-checked"]


class TestIndependently:
    """repro's envelopes check with code that is not repro's."""

    def test_pynacl_over_the_spec_s_pae(self, root: Path, author: tuple[Path, Path]) -> None:
        """libsodium (PyNaCl) verifies the signature over PAE(type, payload) as the DSSE spec
        defines it: "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body."""
        envelope = _envelope(sign_bundle(root, author[0], open_verified)[0])
        payload = base64.b64decode(envelope["payload"])
        kind = envelope["payloadType"].encode()
        pae = b"DSSEv1 " + b" ".join(
            [str(len(kind)).encode(), kind, str(len(payload)).encode(), payload]
        )
        (signature,) = envelope["signatures"]
        raw = load_public_key(author[1]).key.public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        nacl.signing.VerifyKey(raw).verify(pae, base64.b64decode(signature["sig"]))
        with pytest.raises(nacl.exceptions.BadSignatureError):
            nacl.signing.VerifyKey(raw).verify(pae + b" ", base64.b64decode(signature["sig"]))

    def test_securesystemslib_reads_the_file(self, root: Path, author: tuple[Path, Path]) -> None:
        """securesystemslib's own reading of the file (Envelope.from_dict) verifies it with the
        author's key, and refuses it with another."""
        (path,) = sign_bundle(root, author[0], open_verified)
        public = load_public_key(author[1])
        key = SSlibKey.from_crypto(public.key, keyid=public.fingerprint)
        accepted = Envelope.from_dict(_envelope(path)).verify([key], 1)
        assert list(accepted) == [public.fingerprint]
        other = Ed25519PrivateKey.generate().public_key()
        impostor = SSlibKey.from_crypto(other, keyid=public.fingerprint)
        with pytest.raises(Exception, match="threshold"):
            Envelope.from_dict(_envelope(path)).verify([impostor], 1)


def _environment_edited(root: Path) -> None:
    path = root / layout.ENVIRONMENT
    path.write_bytes(path.read_bytes().replace(b'"platform":"', b'"platform":"x', 1))
    reseal(root)


def _description_edited(root: Path) -> None:
    path = root / layout.BAG_INFO
    path.write_text(path.read_text().replace("External-Description:", "External-Description: x"))
    retag(root)


def _records_reordered(root: Path) -> None:
    forge(root, lambda records: records.reverse())


def _seeds_changed(root: Path) -> None:
    def edit(partition: str, entries: list[dict[str, Any]]) -> None:
        entries[0]["seed"] += 1

    forge_plan(root, edit)


def _rederived_after_a_record_dropped(root: Path) -> None:
    path = root / "data/runs/c00.jsonl"
    path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:-1]))
    rederive(root)


def _unseen(case: str) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        UNSEEN[case](root)
        reseal(root)

    return edit


#: The forgeries of the trust issue: files edited, re-derived with repro's own code, both
#: manifests regenerated. Some verify alone does not see (True): only the signature does.
FORGERIES: dict[str, tuple[Callable[[Path], None], bool]] = {
    **{f"unseen offline: {case}": (_unseen(case), True) for case in UNSEEN},
    "environment.json edited, manifests regenerated": (_environment_edited, True),
    "bag-info.txt's description edited, tag manifest regenerated": (_description_edited, True),
    "records reordered and re-derived": (_records_reordered, False),
    "seeds changed and re-derived": (_seeds_changed, False),
    "a record dropped and re-derived": (_rederived_after_a_record_dropped, False),
}


class TestForgeries:
    """Every forgery is caught with the author's trusted key: the forger cannot re-sign."""

    @pytest.mark.parametrize("case", list(FORGERIES))
    def test_caught_by_the_signature(
        self, root: Path, author: tuple[Path, Path], case: str
    ) -> None:
        """After the forgery the author's signature is about another bundle: with the author's
        key, and, the signature left in place, without any key too (it is stale). A forgery
        verify alone does not see is invisible once the forger removes the signature."""
        sign_bundle(root, author[0], open_verified)
        edit, unseen = FORGERIES[case]
        edit(root)
        assert "signature-subject" in _codes(root, author[1])
        assert "signature-subject" in {f.code for f in verify(root)}
        if unseen:
            shutil.rmtree(root / "signatures")
            assert verify(root) == [], "the forgery was to be invisible without the signature"

    def test_re_signed_by_the_forger(
        self, root: Path, author: tuple[Path, Path], tmp_path: Path
    ) -> None:
        """A forger who signs the forged bundle with their own key and deletes the author's
        signature leaves a signature by an untrusted key and none by the author's."""
        sign_bundle(root, author[0], open_verified)
        _environment_edited(root)
        shutil.rmtree(root / "signatures")
        sign_bundle(root, openssh_key(tmp_path / "forger")[0], open_verified)
        assert _codes(root, author[1]) == {"signature-untrusted", "signature-missing"}

    def test_subject_rewritten_in_the_envelope(self, root: Path, author: tuple[Path, Path]) -> None:
        """A forger who rewrites the statement's subject to the forged bundle's digest breaks
        the signature."""
        (path,) = sign_bundle(root, author[0], open_verified)
        _environment_edited(root)

        def resubject(envelope: dict[str, Any]) -> None:
            s = json.loads(base64.b64decode(envelope["payload"]))
            s["subject"][0]["digest"]["sha256"] = bundle_sha256(root)
            envelope["payload"] = base64.b64encode(canonical.dumps(s, newline=False)).decode()

        _rewrite(path, resubject)
        assert _codes(root, author[1]) == {"signature-invalid"}

    def test_deleted_signature(self, root: Path, author: tuple[Path, Path]) -> None:
        """A trusted key given and no signature by it: signature-missing."""
        sign_bundle(root, author[0], open_verified)
        shutil.rmtree(root / "signatures")
        assert _codes(root, author[1]) == {"signature-missing"}
        assert _codes(root) == set()

    def test_another_key_only(self, root: Path, author: tuple[Path, Path], tmp_path: Path) -> None:
        """A signature by a key the reader does not trust is named, and the trusted key's is
        missing."""
        sign_bundle(root, openssh_key(tmp_path / "other")[0], open_verified)
        assert _codes(root, author[1]) == {"signature-untrusted", "signature-missing"}

    def test_a_claim_that_is_not_the_bundle_s(self, root: Path, author: tuple[Path, Path]) -> None:
        """A statement about this bundle whose predicate claims another reproduction class is
        signed (sign_statement takes any statement) but named by verify."""
        b = open_verified(root)
        claim = {"protocol": {"name": "signed"}, "reproduction": "exact"}
        sign_statement(root, statement("bundle", b.bundle_sha256, claim), author[0], "bundle")
        assert _codes(root, author[1]) == {"signature-predicate"}


#: Envelope bytes of one signed bundle, shared by the hypothesis examples.
_FLIPS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


class TestTamperedEnvelope:
    """Any change to an envelope's payload or signature is caught."""

    @pytest.mark.slow
    @_FLIPS
    @given(where=st.floats(0, 1, exclude_max=True), bit=st.integers(0, 7), part=st.booleans())
    def test_any_flipped_bit(
        self,
        base: Path,
        tmp_path_factory: pytest.TempPathFactory,
        where: float,
        bit: int,
        part: bool,
    ) -> None:
        """One bit flipped anywhere in the payload or the signature (re-encoded in canonical
        base64) makes the envelope invalid or unreadable."""
        root = _signed_copy(base, tmp_path_factory)
        path = next((root / "signatures").iterdir())
        original = path.read_bytes()
        envelope = json.loads(original)
        field = envelope if part else envelope["signatures"][0]
        key = "payload" if part else "sig"
        raw = bytearray(base64.b64decode(field[key]))
        raw[int(where * len(raw))] ^= 1 << bit
        field[key] = base64.b64encode(bytes(raw)).decode()
        path.write_bytes(canonical.dumps(envelope))
        try:
            codes = _codes(root, _KEYS[root][1])
            assert codes & {"signature-invalid", "signature-malformed"}, codes
        finally:
            path.write_bytes(original)

    def test_not_an_envelope(self, root: Path, author: tuple[Path, Path]) -> None:
        """A signature file that is no envelope is named even without a trusted key."""
        (path,) = sign_bundle(root, author[0], open_verified)
        path.write_bytes(b'{"payload":"x"}\n')
        assert _codes(root) == {"signature-malformed"}

    def test_a_name_that_is_not_its_key_s(self, root: Path, author: tuple[Path, Path]) -> None:
        """An envelope renamed after another key is malformed."""
        (path,) = sign_bundle(root, author[0], open_verified)
        path.rename(path.with_name("000000000000.bundle.dsse.json"))
        assert _codes(root) == {"signature-malformed"}

    def test_other_files_in_signatures(self, root: Path) -> None:
        """A file in signatures/ that is not named as a signature file is outside the bag."""
        (root / "signatures").mkdir()
        (root / "signatures/notes.txt").write_text("trust me\n")
        assert _codes(root) == {"outside-bag-layout"}


_KEYS: dict[Path, tuple[Path, Path]] = {}


def _signed_copy(base: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One signed copy of the base bundle for the whole module, and its key."""
    for root in _KEYS:
        return root
    root = tmp_path_factory.mktemp("flips") / "bundle"
    shutil.copytree(base, root)
    keys = openssh_key(root.parent / "key")
    sign_bundle(root, keys[0], open_verified)
    _KEYS[root] = keys
    return root


class TestOtherKinds:
    """A kind of statement verify does not derive is signed and checked the same way: its
    signature and subject (an audit's is in tests/test_audit.py)."""

    def test_another_kind_of_statement(self, root: Path, author: tuple[Path, Path]) -> None:
        """A reviewer's statement of a kind repro does not know is written beside the bundle's
        and verified by its signature and subject, its predicate not re-derived."""
        s = statement("review", bundle_sha256(root), {"read": ["validation-report.md"]})
        assert s["predicateType"] == predicate_type("review")
        path = sign_statement(root, s, author[0], "review")
        assert path.name.endswith(".review.dsse.json")
        done = verification(root, [load_public_key(author[1])])
        assert done.findings == []
        assert [(x.kind, x.status) for x in done.signatures] == [("review", "verified")]
        _environment_edited(root)
        assert _codes(root, author[1]) == {"signature-subject"}

    def test_a_statement_about_another_bundle_is_not_signed(
        self, root: Path, author: tuple[Path, Path]
    ) -> None:
        """sign_statement refuses a statement whose subject is not the bundle at root."""
        with pytest.raises(BadInput, match="another bundle"):
            sign_statement(root, statement("audit", "0" * 64, {}), author[0], "audit")
        assert not (root / "signatures").exists()


class TestLimits:
    """Signature files are read within stated bounds."""

    def test_too_many_signature_files(self, root: Path, author: tuple[Path, Path]) -> None:
        """Past max_signatures the rest are named in one finding and not read."""
        (path,) = sign_bundle(root, author[0], open_verified)
        shutil.copy(path, path.with_name("ffffffffffff.bundle.dsse.json"))
        findings = verification(root, limits=Limits(max_signatures=1)).findings
        assert [f.code for f in findings] == ["signature-count-limit"]

    def test_a_signature_file_too_large(self, root: Path, author: tuple[Path, Path]) -> None:
        """A signature file past max_signature_bytes is named and not read."""
        (path,) = sign_bundle(root, author[0], open_verified)
        findings = verification(root, limits=Limits(max_signature_bytes=100)).findings
        assert [f.code for f in findings] == ["signature-file-limit"]
        assert path.stat().st_size > 100


class TestCommandLine:
    """repro sign and repro verify --trusted-key, with the project's exit codes."""

    def test_sign_and_verify(self, root: Path, author: tuple[Path, Path]) -> None:
        """sign prints the file and the fingerprint; verify with the key exits 0 and says the
        statement verified; with another key it exits 1."""
        done = CliRunner().invoke(app, ["sign", str(root), "--key", str(author[0])])
        assert done.exit_code == EXIT_OK, done.output
        fp = load_public_key(author[1]).fingerprint
        assert fp in done.stdout and "signatures/" in done.stdout
        done = CliRunner().invoke(app, ["verify", str(root), "--trusted-key", str(author[1])])
        assert done.exit_code == EXIT_OK, done.output
        assert f"key {fp} bundle statement verified" in done.stdout
        _, other = openssh_key(author[0].parent / "other")
        done = CliRunner().invoke(app, ["verify", "--json", str(root), "--trusted-key", str(other)])
        assert done.exit_code == EXIT_VERIFY_FAILED
        codes = {f["code"] for f in json.loads(done.stdout)["findings"]}
        assert codes == {"signature-untrusted", "signature-missing"}

    def test_a_key_that_is_not_ed25519(self, root: Path, tmp_path: Path) -> None:
        """An RSA key is refused with exit 2, naming the key type; nothing is written."""
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        path = tmp_path / "rsa"
        path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.OpenSSH,
                serialization.NoEncryption(),
            )
        )
        done = CliRunner().invoke(app, ["sign", str(root), "--key", str(path)])
        assert done.exit_code == EXIT_BAD_INPUT
        assert "RSA" in done.output
        assert not (root / "signatures").exists()

    def test_a_public_key_given_as_the_private_one(
        self, root: Path, author: tuple[Path, Path]
    ) -> None:
        """--key with a .pub file is bad input, nothing written."""
        done = CliRunner().invoke(app, ["sign", str(root), "--key", str(author[1])])
        assert done.exit_code == EXIT_BAD_INPUT
        assert not (root / "signatures").exists()

    def test_a_bundle_that_does_not_verify_is_not_signed(
        self, root: Path, author: tuple[Path, Path]
    ) -> None:
        """Signing a tampered bundle is refused (exit 2, the finding count named)."""
        path = root / "data/runs/c00.jsonl"
        path.write_bytes(path.read_bytes().replace(b'"valid"', b'"failed"', 1))
        done = CliRunner().invoke(app, ["sign", str(root), "--key", str(author[0])])
        assert done.exit_code == EXIT_BAD_INPUT
        assert "finding(s)" in done.output
        assert not (root / "signatures").exists()

    def test_a_trusted_key_that_is_no_key(self, root: Path, tmp_path: Path) -> None:
        """--trusted-key with a file that is no public key is bad input."""
        junk = tmp_path / "junk.pub"
        junk.write_text("not a key\n")
        done = CliRunner().invoke(app, ["verify", str(root), "--trusted-key", str(junk)])
        assert done.exit_code == EXIT_BAD_INPUT


def _statement_of(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(base64.b64decode(_envelope(path)["payload"]))
    return data


def _cosign(root: Path, path: Path, key: Path, keyid: bool = True) -> None:
    """Add ``key``'s signature over the statement in ``path`` to its envelope, as repro's own
    writer makes it (written as a second file, moved into the first, removed)."""
    kind = _statement_of(path)["predicateType"].split("/")[-2]
    other = sign_statement(root, _statement_of(path), key, kind)
    (signature,) = _envelope(other)["signatures"]
    other.unlink()
    if not keyid:
        del signature["keyid"]
    _rewrite(path, lambda e: e["signatures"].append(signature))


def _signed_in_both_alphabets(root: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The bundle signed with a new key whose signature's standard base64 holds ``+`` or ``/``
    after its first character, so that it differs URL-safe (keys are drawn until one does: each
    does with probability over 0.9); the signature file and the public key."""
    b = open_verified(root)
    predicate = bundle_predicate(b.protocol, b.aggregates, b.tiers, b.environment, b.contrasts)
    claim = statement("bundle", b.bundle_sha256, predicate)
    for _ in range(64):
        key = Ed25519PrivateKey.generate()
        public = PublicKey(key.public_key(), fingerprint(key.public_key()), "drawn")
        envelope = json.loads(envelope_bytes(claim, SigningKey(key, public)))
        if set(envelope["signatures"][0]["sig"][1:]) & set("+/"):
            private, pub = openssh_key(tmp_path / "drawn", key)
            return sign_statement(root, claim, private, "bundle"), pub
    raise AssertionError("no key of 64 drawn signs with + or /")


def _recode(value: str, url_safe: bool, padded: bool) -> str:
    if url_safe:
        value = value.replace("+", "-").replace("/", "_")
    return value if padded else value.rstrip("=")


class TestEnvelopeAsDsseSaysIt:
    """Envelopes as the DSSE spec (v1.0.2) defines them, not only as repro writes them: base64
    in either alphabet, padded or not; keyid optional; fields it does not define ignored."""

    @pytest.mark.parametrize(
        ("url_safe", "padded"),
        [(True, True), (True, False), (False, False)],
        ids=["url-safe", "url-safe-unpadded", "standard-unpadded"],
    )
    def test_base64_either_way_verifies(
        self, root: Path, tmp_path: Path, url_safe: bool, padded: bool
    ) -> None:
        """The payload and signature re-encoded URL-safe and/or without padding read to the same
        bytes: the statement verifies with the signer's key, and the edited envelope really is
        in the other form."""
        path, public = _signed_in_both_alphabets(root, tmp_path)

        def recode(e: dict[str, Any]) -> None:
            e["payload"] = _recode(e["payload"], url_safe, padded)
            for s in e["signatures"]:
                s["sig"] = _recode(s["sig"], url_safe, padded)

        _rewrite(path, recode)
        sig = _envelope(path)["signatures"][0]["sig"]
        assert ("=" in sig) == padded
        assert bool(set(sig) & set("-_")) == url_safe
        done = verification(root, [load_public_key(public)])
        assert done.findings == []
        assert [s.status for s in done.signatures] == ["verified"]

    def test_keyid_is_optional(self, root: Path, author: tuple[Path, Path]) -> None:
        """An envelope whose signature has no keyid verifies with the author's key, which is
        then the key named; without a key it is not checked and names no key."""
        (path,) = sign_bundle(root, author[0], open_verified)
        _rewrite(path, lambda e: e["signatures"][0].pop("keyid"))
        public = load_public_key(author[1])
        done = verification(root, [public])
        assert done.findings == []
        assert [(s.status, s.keyid) for s in done.signatures] == [("verified", public.fingerprint)]
        done = verification(root)
        assert [(s.status, s.keyid) for s in done.signatures] == [("not-checked", None)]
        output = CliRunner().invoke(app, ["verify", str(root)]).stdout
        assert "key (no keyid) not checked" in output

    def test_fields_dsse_does_not_define_are_ignored(
        self, root: Path, author: tuple[Path, Path]
    ) -> None:
        """Fields the spec does not define, in the envelope and in a signature, are ignored (as
        DSSE requires of a consumer), and the envelope need not be canonical JSON."""
        (path,) = sign_bundle(root, author[0], open_verified)
        envelope = _envelope(path)
        envelope["comment"] = "made elsewhere"
        envelope["signatures"][0]["cert"] = ""
        path.write_text(json.dumps(envelope, indent=2))
        assert _codes(root, author[1]) == set()

    def test_an_ignored_field_is_scanned_for_disclosures(
        self, root: Path, author: tuple[Path, Path]
    ) -> None:
        """A field DSSE does not define, though ignored, is text a reader sees: a host path in it
        (or in a keyid of another form) is a disclosure finding, with or without a key; repro's
        own envelope (base64 and fingerprints) is not."""
        (path,) = sign_bundle(root, author[0], open_verified)
        assert _codes(root) == set()
        _rewrite(path, lambda e: e.update(comment="made in /home/alice/keys"))
        codes = _codes(root)
        assert codes and codes == _codes(root, author[1])
        assert "signature-malformed" not in codes
        _rewrite(path, lambda e: e.pop("comment"))
        assert _codes(root) == set()
        _rewrite(path, lambda e: e["signatures"].append({"keyid": "/home/alice", "sig": ""}))
        assert _codes(root) == codes

    def test_a_mixed_alphabet_is_malformed(self, root: Path, tmp_path: Path) -> None:
        """A signature in both alphabets at once (its first character made ``-``) is named
        (signature-malformed), with or without a key, and verifies no statement."""
        path, public = _signed_in_both_alphabets(root, tmp_path)
        _rewrite(path, lambda e: e["signatures"][0].update(sig="-" + e["signatures"][0]["sig"][1:]))
        assert _codes(root) == {"signature-malformed"}
        assert _codes(root, public) == {"signature-malformed", "signature-missing"}


class TestMultipleSignatures:
    """An envelope of several signatures: its statement verifies when a trusted key's signature
    over it is valid; the key the file is named after, when trusted, must be among them."""

    def test_two_signatures_one_by_a_trusted_key(
        self, root: Path, author: tuple[Path, Path], tmp_path: Path
    ) -> None:
        """The author's envelope co-signed by a reviewer verifies with either key trusted, or
        both; each signature is reported (--json ``signers``)."""
        reviewer = pem_key(tmp_path / "reviewer")
        (path,) = sign_bundle(root, author[0], open_verified)
        _cosign(root, path, reviewer[0])
        a, r = load_public_key(author[1]), load_public_key(reviewer[1])
        for trusted in ([a], [r], [a, r]):
            done = verification(root, trusted)
            assert done.findings == [], trusted
            (status,) = done.signatures
            assert status.status == "verified"
            assert status.keyid == trusted[0].fingerprint
            assert [(s.keyid, s.status) for s in status.signers] == [
                (a.fingerprint, "verified" if a in trusted else "untrusted"),
                (r.fingerprint, "verified" if r in trusted else "untrusted"),
            ]
        done = CliRunner().invoke(app, ["verify", "--json", str(root), "--trusted-key", author[1]])
        assert done.exit_code == EXIT_OK, done.output
        (listed,) = json.loads(done.stdout)["signatures"]
        assert [s["status"] for s in listed["signers"]] == ["verified", "untrusted"]

    def test_a_trusted_signature_without_keyid(
        self, root: Path, author: tuple[Path, Path], tmp_path: Path
    ) -> None:
        """A co-signature with no keyid is tried against every trusted key: the reviewer's key
        alone trusted, the statement verifies by it."""
        reviewer = openssh_key(tmp_path / "reviewer")
        (path,) = sign_bundle(root, author[0], open_verified)
        _cosign(root, path, reviewer[0], keyid=False)
        r = load_public_key(reviewer[1])
        (status,) = verification(root, [r]).signatures
        assert (status.status, status.keyid) == ("verified", r.fingerprint)
        assert [s.status for s in status.signers] == ["untrusted", "verified"]

    def test_no_signature_by_a_trusted_key(
        self, root: Path, author: tuple[Path, Path], tmp_path: Path
    ) -> None:
        """Two signatures, neither by the trusted key: the statement does not verify
        (signature-untrusted), and the trusted key's signature is missing."""
        (path,) = sign_bundle(root, author[0], open_verified)
        _cosign(root, path, pem_key(tmp_path / "reviewer")[0])
        _, third = openssh_key(tmp_path / "third")
        done = verification(root, [load_public_key(third)])
        assert {f.code for f in done.findings} == {"signature-untrusted", "signature-missing"}
        assert [s.status for s in done.signatures] == ["failed"]

    def test_the_named_key_s_signature_must_be_valid(
        self, root: Path, author: tuple[Path, Path], tmp_path: Path
    ) -> None:
        """The file is named after the author's key: with it trusted, a broken author's
        signature is signature-invalid although a trusted reviewer's beside it is valid."""
        reviewer = pem_key(tmp_path / "reviewer")
        (path,) = sign_bundle(root, author[0], open_verified)
        _cosign(root, path, reviewer[0])

        def garble(e: dict[str, Any]) -> None:
            raw = bytearray(base64.b64decode(e["signatures"][0]["sig"]))
            raw[0] ^= 1
            e["signatures"][0]["sig"] = base64.b64encode(bytes(raw)).decode()

        _rewrite(path, garble)
        assert _codes(root, author[1], reviewer[1]) == {"signature-invalid"}
        assert _codes(root, author[1]) == {"signature-invalid"}

    @pytest.mark.parametrize("claims_author", [True, False], ids=["keyid-author", "no-keyid"])
    def test_a_forged_signature_does_not_make_a_bad_statement_good(
        self, root: Path, author: tuple[Path, Path], tmp_path: Path, claims_author: bool
    ) -> None:
        """A statement rewritten after the author signed it, with the forger's valid signature
        over the new statement added (its keyid the author's, or none) and random bytes as a
        third: with the author's key trusted it does not verify."""
        (path,) = sign_bundle(root, author[0], open_verified)
        _environment_edited(root)
        forger = openssh_key(tmp_path / "forger")

        def resubject(envelope: dict[str, Any]) -> None:
            s = json.loads(base64.b64decode(envelope["payload"]))
            s["subject"][0]["digest"]["sha256"] = bundle_sha256(root)
            envelope["payload"] = base64.b64encode(canonical.dumps(s, newline=False)).decode()

        _rewrite(path, resubject)
        _cosign(root, path, forger[0])
        fake = base64.urlsafe_b64encode(bytes(range(64))).decode()
        _rewrite(path, lambda e: e["signatures"].append({"sig": fake}))
        if claims_author:
            keyid = load_public_key(author[1]).fingerprint
            _rewrite(path, lambda e: e["signatures"][1].update(keyid=keyid))
        else:
            _rewrite(path, lambda e: e["signatures"][1].pop("keyid"))
        done = verification(root, [load_public_key(author[1])])
        assert {f.code for f in done.findings} == {"signature-invalid"}
        (status,) = done.signatures
        assert status.status == "failed"
        assert "verified" not in {s.status for s in status.signers}

    def test_signatures_in_one_envelope_past_the_limit(
        self, root: Path, author: tuple[Path, Path]
    ) -> None:
        """An envelope of more signatures than max_envelope_signatures is named
        (signature-malformed) and none of its signatures is checked; within the limit the same
        envelope verifies."""
        (path,) = sign_bundle(root, author[0], open_verified)
        _rewrite(path, lambda e: e["signatures"].extend(e["signatures"] * 2))
        public = load_public_key(author[1])
        over = verification(root, [public], limits=Limits(max_envelope_signatures=2))
        assert {f.code for f in over.findings} == {"signature-malformed", "signature-missing"}
        assert "max_envelope_signatures" in next(
            f.found for f in over.findings if f.code == "signature-malformed"
        )
        assert verification(root, [public], limits=Limits(max_envelope_signatures=3)).findings == []
