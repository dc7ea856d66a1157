"""Signed attestations beside a bundle: in-toto Statements (v1) in DSSE envelopes, signed with
Ed25519 keys in the formats researchers have (OpenSSH, PEM).

A statement's subject is the bundle: its tag manifest by its sha256, which pins every other
file. Its predicate says what the bundle claims (:func:`bundle_predicate`, a pure function of
the bundle's parsed files, which ``repro verify`` runs again), or, for another kind of statement
(an audit's), whatever its maker puts there. Each envelope is one file of the tag directory
``signatures/``, outside every manifest (:func:`repro._layout.signature_file`), so that
several can sit side by side and stock BagIt tools see the bag unchanged.

The cryptography is `cryptography`'s (keys, Ed25519) and the envelope securesystemslib's
(:class:`~securesystemslib.dsse.Envelope`: its pre-authentication encoding, signing and
verifying); repro only shapes the statement and reads the envelope as DSSE v1.0.2 defines it
(either base64 alphabet, padded or not; any number of signatures within a limit; keyid an
optional hint), while it writes its own one canonical form."""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attrs import frozen
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, rsa, x448, x25519
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import UnverifiedSignatureError
from securesystemslib.signer import CryptoSigner, Signature, SSlibKey

from repro import _layout as layout
from repro._bundle.attestations import (
    PROVENANCE,
    STANDARD_TYPES,
    TEST_RESULT,
    protocol_descriptor,
    provenance_predicate,
    test_result_predicate,
)
from repro._disclosure import scan_hits
from repro._files import write_atomically
from repro._json import canonical
from repro.errors import BadInput, NotVerified, Problem

if TYPE_CHECKING:
    from repro.models import (
        Aggregates,
        ContrastsFile,
        Environment,
        FrozenProtocol,
        Ledger,
        Scores,
        Tiers,
    )
    from repro.verify._core import VerifiedBundle

__all__ = [
    "BUNDLE",
    "PASSPHRASE_VARIABLE",
    "PAYLOAD_TYPE",
    "SIGNED_KINDS",
    "STATEMENT_TYPE",
    "SUBJECT_NAME",
    "DsseEnvelope",
    "EnvelopeSignature",
    "PublicKey",
    "SignedStatement",
    "SigningKey",
    "bundle_predicate",
    "claims",
    "envelope_bytes",
    "fingerprint",
    "key_digits",
    "load_public_key",
    "load_signing_key",
    "parse_envelope",
    "predicate_type",
    "read_envelope",
    "refuse_packed",
    "sign_bundle",
    "sign_statement",
    "signature_valid",
    "signers",
    "statement",
]

#: The DSSE payload type of an in-toto Statement.
PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
#: The kind of statement ``repro sign`` makes: what the bundle claims.
BUNDLE = "bundle"
#: The subject's name: the file whose sha256 is the subject's digest, the bundle's identity.
SUBJECT_NAME = layout.TAGMANIFEST
#: The environment variable an encrypted private key's passphrase is read from (never asked
#: for at a prompt).
PASSPHRASE_VARIABLE = "REPRO_KEY_PASSPHRASE"
#: Bytes of a key file at most: an Ed25519 key in any format is well under 1 KiB.
_MAX_KEY_BYTES = 64 << 10
#: repro's predicate types: one per kind of statement, versioned; ``.invalid`` is a domain that
#: can never resolve (RFC 2606), so the URI names repro's format and points nowhere.
_PREDICATE_TYPE = re.compile(r"^https://repro\.invalid/attestation/([a-z][a-z0-9-]{0,31})/v1$")
#: OpenSSH's fingerprint of a key: ``SHA256:`` and the unpadded base64 of a sha256.
_FINGERPRINT = re.compile(r"^SHA256:[A-Za-z0-9+/]{43}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def predicate_type(kind: str) -> str:
    """The predicate type URI of a statement of ``kind``: a standard one's
    (:data:`~repro._bundle.attestations.STANDARD_TYPES`: ``provenance``, ``test-result``), else
    repro's own (``bundle``, ``audit``)."""
    if kind in STANDARD_TYPES:
        return STANDARD_TYPES[kind]
    uri = f"https://repro.invalid/attestation/{kind}/v1"
    if not _PREDICATE_TYPE.match(uri):
        raise ValueError(f"not a statement kind: {kind!r}")
    return uri


def fingerprint(key: Ed25519PublicKey) -> str:
    """OpenSSH's fingerprint of ``key`` (what ``ssh-keygen -lf key.pub`` prints): ``SHA256:``
    and the unpadded base64 of the sha256 of its SSH wire blob. It is the envelope's keyid."""
    line = key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    blob = base64.b64decode(line.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def key_digits(keyid: str) -> str:
    """The first 12 hex digits of the digest a fingerprint encodes: a signature file's name."""
    return base64.b64decode(keyid.removeprefix("SHA256:") + "=").hex()[:12]


@frozen
class PublicKey:
    """An Ed25519 public key with its fingerprint, and the file it was read from."""

    key: Ed25519PublicKey
    fingerprint: str
    source: str

    def sslib(self) -> SSlibKey:
        """securesystemslib's key, its keyid the fingerprint."""
        return SSlibKey.from_crypto(self.key, keyid=self.fingerprint)


@frozen
class SigningKey:
    """An Ed25519 private key, and its public half."""

    key: Ed25519PrivateKey
    public: PublicKey


def _key_bytes(path: Path) -> bytes:
    try:
        with open(path, "rb") as fh:
            data = fh.read(_MAX_KEY_BYTES + 1)
    except OSError as exc:
        raise BadInput(f"key {path}: cannot read ({exc.strerror or type(exc).__name__})") from None
    if len(data) > _MAX_KEY_BYTES:
        raise BadInput(f"key {path}: over {_MAX_KEY_BYTES} bytes, no key file is that large")
    return data


def _key_type(key: object) -> str:
    """What kind of key ``key`` is, in the words its format uses."""
    if isinstance(key, rsa.RSAPrivateKey | rsa.RSAPublicKey):
        return f"RSA ({key.key_size} bits)"
    if isinstance(key, ec.EllipticCurvePrivateKey | ec.EllipticCurvePublicKey):
        return f"ECDSA ({key.curve.name})"
    if isinstance(key, dsa.DSAPrivateKey | dsa.DSAPublicKey):
        return "DSA"
    if isinstance(key, ed448.Ed448PrivateKey | ed448.Ed448PublicKey):
        return "Ed448"
    if isinstance(key, x25519.X25519PrivateKey | x25519.X25519PublicKey):
        return "X25519"
    if isinstance(key, x448.X448PrivateKey | x448.X448PublicKey):
        return "X448"
    return type(key).__name__


def _refuse_type(path: Path, key: object) -> BadInput:
    return BadInput(
        f"key {path}: an {_key_type(key)} key; repro signs with Ed25519 keys only "
        "(ssh-keygen -t ed25519, or openssl genpkey -algorithm ed25519)"
    )


def load_signing_key(path: Path) -> SigningKey:
    """The Ed25519 private key in ``path``: an OpenSSH private key (``ssh-keygen -t ed25519``)
    or a PEM one (PKCS#8, ``openssl genpkey -algorithm ed25519``). An encrypted key is opened
    with the passphrase in :data:`PASSPHRASE_VARIABLE`. Raises :class:`BadInput` for anything
    else, naming the key type found."""
    data = _key_bytes(path)
    openssh = data.lstrip().startswith(b"-----BEGIN OPENSSH PRIVATE KEY-----")
    load = serialization.load_ssh_private_key if openssh else serialization.load_pem_private_key
    passphrase = os.environ.get(PASSPHRASE_VARIABLE)
    try:
        try:
            key: object = load(data, password=None)
        except TypeError:  # encrypted: cryptography says so with a TypeError
            if passphrase is None:
                raise BadInput(
                    f"key {path}: the private key is encrypted; set {PASSPHRASE_VARIABLE} to "
                    "its passphrase"
                ) from None
            key = load(data, password=passphrase.encode("utf-8"))
    except (ValueError, UnsupportedAlgorithm, TypeError) as exc:
        hint = (
            " (--key takes a private key; a .pub file is its public half)"
            if (data.lstrip().startswith((b"ssh-", b"ecdsa-", b"-----BEGIN PUBLIC KEY")))
            else ""
        )
        raise BadInput(f"key {path}: not an OpenSSH or PEM private key ({exc}){hint}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise _refuse_type(path, key)
    public = key.public_key()
    return SigningKey(key, PublicKey(public, fingerprint(public), str(path)))


def load_public_keys(paths: Sequence[Path]) -> list[PublicKey]:
    """The public keys in ``paths`` (:func:`load_public_key`), each once, in the order first
    given: what ``repro verify --trusted-key`` and ``repro.verify(trusted_keys=...)`` trust."""
    keys: dict[str, PublicKey] = {}
    for path in paths:
        key = load_public_key(path)
        keys.setdefault(key.fingerprint, key)
    return list(keys.values())


def load_public_key(path: Path) -> PublicKey:
    """The Ed25519 public key in ``path``: an OpenSSH public key line (``key.pub``) or a PEM
    public key (SubjectPublicKeyInfo, ``openssl pkey -pubout``). Raises :class:`BadInput` for
    anything else, naming the key type found."""
    data = _key_bytes(path)
    pem = data.lstrip().startswith(b"-----BEGIN")
    try:
        key: object = (
            serialization.load_pem_public_key(data)
            if pem
            else serialization.load_ssh_public_key(data)
        )
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise BadInput(f"key {path}: not an OpenSSH or PEM public key ({exc})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise _refuse_type(path, key)
    return PublicKey(key, fingerprint(key), str(path))


def statement(kind: str, bundle_sha256: str, predicate: dict[str, Any]) -> dict[str, Any]:
    """The in-toto Statement (v1) of ``kind`` about the bundle whose identity is
    ``bundle_sha256``: its subject the tag manifest by that digest, its predicate ``predicate``."""
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": SUBJECT_NAME, "digest": {"sha256": bundle_sha256}}],
        "predicateType": predicate_type(kind),
        "predicate": predicate,
    }


def bundle_predicate(
    protocol: FrozenProtocol,
    aggregates: Aggregates,
    tiers: Tiers,
    environment: Environment,
    contrasts: ContrastsFile | None,
) -> dict[str, Any]:
    """What a bundle claims, from its parsed files: the protocol (an in-toto ResourceDescriptor:
    its id and frozen sha256), the reproduction class, the primary estimand with its interval
    and level, each contrast's verdict (when the protocol declares contrasts), and the version
    of repro that made the bundle. ``repro sign`` signs it and ``repro verify`` derives it
    again from the files to compare; no time is in it, so signing is repeatable."""
    e = aggregates.estimand
    predicate: dict[str, Any] = {
        "protocol": protocol_descriptor(protocol),
        "reproduction": tiers.reproduction.verdict,
        "estimand": {
            "name": e.kind,
            "value": e.value,
            "interval": None if e.interval is None else [e.interval.low, e.interval.high],
            "level": None if e.interval is None else e.interval.level,
        },
        "repro_version": environment.repro_version,
    }
    if contrasts is not None:
        predicate["contrasts"] = [{"id": c.id, "verdict": c.verdict} for c in contrasts.contrasts]
    return predicate


def envelope_bytes(statement: dict[str, Any], key: SigningKey) -> bytes:
    """The DSSE envelope of ``statement`` signed by ``key``, as canonical JSON: the payload is
    the statement's canonical bytes, the keyid the key's fingerprint. Ed25519 is deterministic:
    one statement and one key always give the same bytes."""
    payload = canonical.dumps(statement, newline=False)
    envelope = Envelope(payload, PAYLOAD_TYPE, {})
    envelope.sign(CryptoSigner(key.key, key.public.sslib()))
    return canonical.dumps(envelope.to_dict())


@frozen
class EnvelopeSignature:
    """One signature of a DSSE envelope as read: its keyid (None when absent or empty: DSSE
    makes it optional, and it is an unauthenticated hint, never trusted) and its bytes."""

    keyid: str | None
    sig: bytes


@frozen
class DsseEnvelope:
    """A DSSE envelope as read (:func:`read_envelope`): the payload's bytes, its type, and at
    least one signature. It says nothing of who signed: :func:`signature_valid` checks one
    signature against one key."""

    payload: bytes
    payload_type: str
    signatures: tuple[EnvelopeSignature, ...]

    def pae(self) -> bytes:
        """The pre-authentication encoding the signatures are over (securesystemslib's)."""
        return Envelope(self.payload, self.payload_type, {}).pae()


@frozen
class SignedStatement:
    """One signature file as read: its name, the statement's kind and the statement, and the
    envelope whose signatures are checked against trusted keys."""

    file: str
    kind: str
    statement: dict[str, Any]
    envelope: DsseEnvelope
    #: The envelope's JSON with its base64 values and fingerprint keyids emptied: the text a
    #: reader sees beside the statement (other keyids, fields DSSE does not define), which
    #: verify scans for disclosures as it does the statement.
    rest: bytes = b""

    @property
    def named(self) -> str:
        """The key digits the file's name gives (:func:`key_digits` of a fingerprint)."""
        found = layout.is_signature(self.file)
        assert found is not None
        return found[0]

    @property
    def keyid(self) -> str | None:
        """The fingerprint of the key the file is named after, when a signature's keyid says
        it (as every envelope repro writes does), else None. A hint to show, never trusted."""
        for s in self.envelope.signatures:
            if (
                s.keyid is not None
                and _FINGERPRINT.match(s.keyid)
                and (key_digits(s.keyid) == self.named)
            ):
                return s.keyid
        return None

    @property
    def subject_sha256(self) -> str:
        """The digest the statement is about."""
        digest: str = self.statement["subject"][0]["digest"]["sha256"]
        return digest


def _refused(where: str, message: str, code: str) -> BadInput:
    """A signature file's problem at the JSON path ``where`` (``payload $...`` inside its
    payload), as data and as the text ``message @ where``."""
    problem = Problem(where, message, code)
    return BadInput(str(problem), (problem,))


def _exact(value: Any, keys: set[str], where: str) -> dict[str, Any]:
    if not isinstance(value, dict) or set(value) != keys:
        found = sorted(value) if isinstance(value, dict) else type(value).__name__
        code = (
            "wrong-type"
            if not isinstance(value, dict)
            else "missing-field"
            if keys - set(value)
            else "unknown-field"
        )
        raise _refused(where, f"expected an object of exactly {sorted(keys)}, found {found}", code)
    return value


def _text(value: Any, pattern: re.Pattern[str] | str, where: str) -> str:
    ok = isinstance(value, str) and (
        value == pattern if isinstance(pattern, str) else pattern.match(value) is not None
    )
    if not ok:
        wanted = pattern if isinstance(pattern, str) else pattern.pattern
        code = "not-allowed" if isinstance(value, str) else "wrong-type"
        raise _refused(where, f"expected {wanted}, found {str(value)[:80]!r}", code)
    assert isinstance(value, str)
    return value


#: Base64 of RFC 4648 without its padding, in one alphabet: the standard one (``+/``, section 4)
#: or the URL-safe one (``-_``, section 5); a string of letters and digits alone is both.
_STANDARD_BASE64 = re.compile(r"[A-Za-z0-9+/]*")
_URLSAFE_BASE64 = re.compile(r"[A-Za-z0-9_-]*")


def _base64(value: Any, where: str) -> bytes:
    """The bytes of a DSSE base64 field, which the spec lets a signer write in standard or
    URL-safe base64 (a verifier MUST accept either): one alphabet throughout, padded with all
    its ``=`` or with none, and in the one form that encodes its bytes (the unused bits of the
    last character zero, which RFC 4648 section 3.5 lets a decoder require). Anything else,
    whitespace, two alphabets mixed, partial padding, is refused: no string means two things."""
    if isinstance(value, str):
        body = value.rstrip("=")
        padding = len(value) - len(body)
        standard = _STANDARD_BASE64.fullmatch(body) is not None
        if (
            (standard or _URLSAFE_BASE64.fullmatch(body) is not None)
            and len(body) % 4 != 1
            and padding in (0, -len(body) % 4)
        ):
            altchars = b"+/" if standard else b"-_"
            filled = body + "=" * (-len(body) % 4)
            with contextlib.suppress(binascii.Error, ValueError):
                raw = base64.b64decode(filled, altchars=altchars, validate=True)
                if base64.b64encode(raw, altchars=altchars).decode() == filled:
                    return raw
    raise _refused(
        where,
        "not base64 (standard or URL-safe, padded or not, one alphabet, unused bits zero)",
        "not-allowed",
    )


def _one(value: Any, where: str) -> Any:
    if not isinstance(value, list) or len(value) != 1:
        code = "not-allowed" if isinstance(value, list) else "wrong-type"
        raise _refused(where, "expected a list of exactly one item", code)
    return value[0]


def _statement_kind(value: Any) -> str:
    """The kind of an in-toto Statement (v1) about a bundle that repro reads; raises
    :class:`BadInput` naming the JSON path of what it is not."""
    s = _exact(value, {"_type", "subject", "predicateType", "predicate"}, "payload $")
    _text(s["_type"], STATEMENT_TYPE, "payload $._type")
    subject = _exact(
        _one(s["subject"], "payload $.subject"), {"name", "digest"}, "payload $.subject[0]"
    )
    _text(subject["name"], SUBJECT_NAME, "payload $.subject[0].name")
    digest = _exact(subject["digest"], {"sha256"}, "payload $.subject[0].digest")
    _text(digest["sha256"], _SHA256, "payload $.subject[0].digest.sha256")
    standard = {uri: kind for kind, uri in STANDARD_TYPES.items()}
    found = s["predicateType"]
    if not (isinstance(found, str) and found in standard):
        _text(found, _PREDICATE_TYPE, "payload $.predicateType")
    if not isinstance(s["predicate"], dict):
        raise _refused("payload $.predicate", "expected an object", "wrong-type")
    if found in standard:
        return standard[found]
    kind = _PREDICATE_TYPE.match(found)
    assert kind is not None
    if kind.group(1) in STANDARD_TYPES:  # a standard kind has its standard type only
        raise _refused(
            "payload $.predicateType",
            f"a {kind.group(1)} statement has the predicate type {STANDARD_TYPES[kind.group(1)]}",
            "not-allowed",
        )
    return kind.group(1)


def _signatures(value: Any, max_signatures: int) -> tuple[EnvelopeSignature, ...]:
    """The envelope's ``signatures``: a list of 1 to ``max_signatures`` objects, each with a
    ``sig`` and, optionally, a string ``keyid``; other fields ignored, as DSSE says."""
    if not isinstance(value, list):
        raise _refused("$.signatures", "expected a list of signatures", "wrong-type")
    if not value:
        raise _refused("$.signatures", "expected at least one signature", "not-allowed")
    if len(value) > max_signatures:
        raise _refused(
            "$.signatures",
            f"{len(value)} signatures, over the limit max_envelope_signatures "
            f"({max_signatures}): none is checked",
            "over-limit",
        )
    out = []
    for i, item in enumerate(value):
        where = f"$.signatures[{i}]"
        if not isinstance(item, dict):
            raise _refused(where, "expected an object", "wrong-type")
        if "sig" not in item:
            raise _refused(where, "expected a sig", "missing-field")
        keyid = item.get("keyid")
        if keyid is not None and not isinstance(keyid, str):
            raise _refused(f"{where}.keyid", "expected a string", "wrong-type")
        sig = _base64(item["sig"], f"{where}.sig")
        out.append(EnvelopeSignature(keyid or None, sig))
    return tuple(out)


def read_envelope(value: Any, max_signatures: int) -> DsseEnvelope:
    """A JSON envelope as DSSE (envelope.md 1.0.2) defines it, parsed: an object with
    ``payload`` and ``sig`` in standard or URL-safe base64 (:func:`_base64`), a string
    ``payloadType``, and 1 to ``max_signatures`` signatures, each one's ``keyid`` optional;
    fields DSSE does not define are ignored, as it requires. Raises :class:`BadInput` with the
    JSON path of what it is not; checks no signature and no payload type."""
    if not isinstance(value, dict):
        raise _refused("$", "expected an object", "wrong-type")
    missing = sorted({"payload", "payloadType", "signatures"} - set(value))
    if missing:
        raise _refused("$", f"expected {missing} too", "missing-field")
    if not isinstance(value["payloadType"], str):
        raise _refused("$.payloadType", "expected a string", "wrong-type")
    signatures = _signatures(value["signatures"], max_signatures)
    payload = _base64(value["payload"], "$.payload")
    return DsseEnvelope(payload, value["payloadType"], signatures)


def parse_envelope(name: str, data: bytes, *, max_signatures: int) -> SignedStatement:
    """The signature file ``name`` (``signatures/<key>.<kind>.dsse.json``) read strictly: the
    JSON of a DSSE envelope (:func:`read_envelope`) of at most ``max_signatures`` signatures,
    of payload type :data:`PAYLOAD_TYPE`, over the canonical JSON of an in-toto Statement about
    a bundle of the kind the name gives. When any signature's keyid is an OpenSSH fingerprint,
    one of them must be the key the name gives. Raises :class:`BadInput` naming what it is not;
    checks no signature."""
    named = layout.is_signature(name)
    if named is None:
        raise BadInput(f"{name}: not a signature file name (signatures/<key>.<kind>.dsse.json)")
    value = canonical.loads(data, what=name, max_bytes=len(data))
    try:
        envelope = read_envelope(value, max_signatures)
        _text(envelope.payload_type, PAYLOAD_TYPE, "$.payloadType")
        payload = envelope.payload
        parsed = canonical.loads(payload, what="payload", max_bytes=len(payload))
        if canonical.dumps(parsed, newline=False) != payload:
            raise _refused("payload $", "not canonical JSON", "not-allowed")
        kind = _statement_kind(parsed)
    except BadInput as exc:
        raise BadInput(f"{name}: {exc}", exc.problems) from None
    fingerprints = [
        s.keyid
        for s in envelope.signatures
        if s.keyid is not None and _FINGERPRINT.match(s.keyid) is not None
    ]
    digits = {key_digits(keyid) for keyid in fingerprints}
    if named[1] != kind or (digits and named[0] not in digits):
        which = layout.signature_file(key_digits(fingerprints[0]) if digits else named[0], kind)
        raise BadInput.at(
            "$",
            f"the name does not agree with the envelope, which is {which}",
            "inconsistent",
            name,
        )
    return SignedStatement(name, kind, parsed, envelope, _rest(value))


def _rest(value: dict[str, Any]) -> bytes:
    """The envelope ``value`` (read already) without what is base64 or a fingerprint, whose
    random letters a disclosure scan would misread: the rest is text someone wrote."""
    rest = dict(value, payload="")
    rest["signatures"] = [
        dict(
            s,
            sig="",
            keyid="" if _FINGERPRINT.match(str(s.get("keyid") or "")) else s.get("keyid"),
        )
        for s in value["signatures"]
    ]
    return canonical.dumps(rest)


def signature_valid(envelope: DsseEnvelope, signature: EnvelopeSignature, key: PublicKey) -> bool:
    """Whether ``signature`` is ``key``'s over the envelope's payload (Ed25519 over the DSSE
    pre-authentication encoding, checked by securesystemslib), whatever keyid it carries: the
    keyid is a hint, so the signature is put under the key's own id for securesystemslib,
    which matches the two before it verifies."""
    single = Envelope(
        envelope.payload,
        envelope.payload_type,
        {key.fingerprint: Signature(key.fingerprint, signature.sig.hex())},
    )
    try:
        single.verify([key.sslib()], 1)
    except UnverifiedSignatureError:  # VerificationError, the threshold not met, is one
        return False
    return True


def signers(envelope: DsseEnvelope, trusted: Sequence[PublicKey]) -> list[PublicKey | None]:
    """For each of the envelope's signatures, in order, the trusted key whose valid signature it
    is, or None. A signature whose keyid is an OpenSSH fingerprint is tried against the trusted
    key of that fingerprint alone (DSSE lets a verifier narrow the keys by keyid); any other,
    keyid absent or of another form, against every trusted key. At most signatures x keys
    checks, both bounded."""
    by_key = {key.fingerprint: key for key in trusted}
    found: list[PublicKey | None] = []
    for s in envelope.signatures:
        hinted = s.keyid is not None and _FINGERPRINT.match(s.keyid) is not None
        candidates = [by_key[s.keyid]] if hinted and s.keyid in by_key else []
        if not hinted:
            candidates = list(by_key.values())
        found.append(next((k for k in candidates if signature_valid(envelope, s, k)), None))
    return found


def refuse_packed(root: Path) -> None:
    """Raise :class:`BadInput` when ``root`` is a packed bundle (a file, not a directory): a
    signature is a file written beside the bag, which a packed bundle has no room for."""
    if layout.is_packed(root):
        raise BadInput(
            f"{root} is a packed bundle: a signature is written beside the bag, in its "
            "signatures/ directory; sign the bundle directory, then pack it again"
        )


def sign_statement(root: Path, statement: dict[str, Any], key_path: Path, kind: str) -> Path:
    """Sign ``statement`` (of ``kind``, about the bundle at ``root``: its subject the bundle's
    current sha256) with the private key at ``key_path`` and write the envelope to
    ``root/signatures/<key>.<kind>.dsse.json``, atomically, mode 0600; return its path. Signing
    again with the same key writes the same bytes and changes nothing; a different envelope by
    the same key for the same kind is refused, never replaced. Raises :class:`BadInput`."""
    refuse_packed(root)
    if _statement_kind(statement) != kind:
        raise _refused(
            "payload $.predicateType", f"the statement is not of kind {kind!r}", "not-allowed"
        )
    try:
        digest = layout.bundle_sha256(root)
    except OSError as exc:
        raise BadInput(f"{root}: no bundle's tag manifest ({exc.strerror})") from None
    if statement["subject"][0]["digest"]["sha256"] != digest:
        raise BadInput.at(
            "payload $.subject[0].digest.sha256",
            f"the statement is about another bundle (sha256 "
            f"{statement['subject'][0]['digest']['sha256']}, this one's {digest})",
            "inconsistent",
            str(root),
        )
    key = load_signing_key(key_path)
    data = envelope_bytes(statement, key)
    name = layout.signature_file(key_digits(key.public.fingerprint), kind)
    hits = scan_hits(name, canonical.dumps(statement, newline=False))
    if hits.count:
        kinds = ", ".join(sorted(hits.kinds))
        raise _refused(
            "payload $", f"the statement discloses what no bundle file may ({kinds})", "not-allowed"
        )
    return _write_signature(root, name, data)


def _write_signature(root: Path, name: str, data: bytes) -> Path:
    """Write ``data`` as ``name`` below ``root``, mode 0600: under a temporary name, then
    renamed."""
    directory = root / layout.SIGNATURES.rstrip("/")
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory, 0o700)
        if directory.is_symlink() or not directory.is_dir():
            raise BadInput(f"{directory}: not a directory")
        path = root / name
        if os.path.lexists(path):
            if not path.is_symlink() and path.is_file() and path.read_bytes() == data:
                return path
            raise BadInput(
                f"{path} exists and holds another signature by this key: repro never replaces "
                "a signature (remove it first to sign again)"
            )
        with write_atomically(path, mode=0o600) as fh:
            fh.write(data)
    except OSError as exc:
        raise BadInput(
            f"{directory}: cannot write ({exc.strerror or type(exc).__name__})"
        ) from None
    return path


#: The kinds of statement ``repro sign`` writes, each in its own envelope: repro's own (what the
#: bundle claims, which every version reads), SLSA provenance and the in-toto test-result.
SIGNED_KINDS = (BUNDLE, PROVENANCE, TEST_RESULT)


def claims(
    protocol: FrozenProtocol,
    ledger: Ledger,
    aggregates: Aggregates,
    tiers: Tiers,
    environment: Environment,
    contrasts: ContrastsFile | None,
    scores: Scores | None,
) -> dict[str, dict[str, Any]]:
    """The predicate of each kind in :data:`SIGNED_KINDS`, from the bundle's parsed files:
    what ``repro sign`` signs and ``repro verify`` derives again to compare."""
    return {
        BUNDLE: bundle_predicate(protocol, aggregates, tiers, environment, contrasts),
        PROVENANCE: provenance_predicate(protocol, ledger, environment),
        TEST_RESULT: test_result_predicate(protocol, tiers, contrasts, scores),
    }


def sign_bundle(
    root: Path,
    key_path: Path,
    open_verified: Callable[[Path], VerifiedBundle],
    kinds: Sequence[str] = (BUNDLE,),
) -> list[Path]:
    """Sign what the bundle at ``root`` claims, one statement of each of ``kinds`` (of
    :data:`SIGNED_KINDS`; :func:`claims`), with the private key at ``key_path``
    (:func:`sign_statement`); return the signature files' paths, in the order of ``kinds``.
    The bundle is read with ``open_verified`` (:func:`repro.verify.open_verified`, which the
    caller passes: verify is above the bundle layer, and reads this module); one that does not
    verify is refused (:class:`BadInput`, naming how many findings)."""
    refuse_packed(root)
    load_signing_key(key_path)  # a bad key is named before the bundle is read
    try:
        b = open_verified(root)
    except NotVerified as exc:
        raise BadInput(
            f"{root} does not verify ({len(exc.findings)} finding(s)): only a bundle that "
            f"verifies is signed; see repro verify {root}"
        ) from None
    predicates = claims(
        b.protocol, b.ledger, b.aggregates, b.tiers, b.environment, b.contrasts, b.scores
    )
    return [
        sign_statement(root, statement(kind, b.bundle_sha256, predicates[kind]), key_path, kind)
        for kind in kinds
    ]
