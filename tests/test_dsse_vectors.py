"""The DSSE project's published test vector (tests/data/dsse/, its README names the source):
repro's reading of a JSON envelope, securesystemslib's pre-authentication encoding and its
verification, which repro's signatures use, agree with what the spec says of its example."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import UnverifiedSignatureError
from securesystemslib.signer import Signature, SSlibKey

from repro._bundle.signatures import DsseEnvelope, read_envelope

DATA = Path(__file__).parent / "data" / "dsse"
VECTOR: dict[str, Any] = json.loads((DATA / "protocol-test-vector.json").read_bytes())
ENVELOPES = ["protocol-envelope.json", "signing-spec-envelope.json"]


def _envelope(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / name).read_bytes())
    return data


def _spec_key() -> SSlibKey:
    """The vector's public key (ECDSA P-256), as securesystemslib's key."""
    k = VECTOR["key"]
    public = ec.EllipticCurvePublicNumbers(int(k["x"]), int(k["y"]), ec.SECP256R1()).public_key()
    return SSlibKey.from_crypto(public, keyid="spec")


def _verifies(envelope: DsseEnvelope) -> bool:
    """Whether the envelope's first signature is the vector key's over the envelope's PAE, by
    securesystemslib (the raw r || s the spec's example signs with is given to it as DER)."""
    raw = envelope.signatures[0].sig
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    single = Envelope(
        envelope.payload, envelope.payload_type, {"spec": Signature("spec", der.hex())}
    )
    try:
        single.verify([_spec_key()], 1)
    except UnverifiedSignatureError:
        return False
    return True


def _url_safe_unpadded(value: str) -> str:
    return value.replace("+", "-").replace("/", "_").rstrip("=")


def test_the_pae_is_the_spec_s() -> None:
    """The PAE repro's signatures are over (securesystemslib's) is byte for byte the spec's
    for its example's payload type and body."""
    envelope = DsseEnvelope(VECTOR["serialized_body"].encode(), VECTOR["payload_type"], ())
    assert envelope.pae() == VECTOR["pae"].encode()


@pytest.mark.parametrize("name", ENVELOPES)
def test_the_spec_s_envelope_reads_as_the_spec_says(name: str) -> None:
    """repro reads the spec's example envelope (not canonical JSON, one signature, a keyid or
    none) to the spec's payload type and body, and its PAE is the spec's."""
    envelope = read_envelope(_envelope(name), max_signatures=16)
    assert envelope.payload_type == VECTOR["payload_type"]
    assert envelope.payload == VECTOR["serialized_body"].encode()
    assert envelope.pae() == VECTOR["pae"].encode()
    (signature,) = envelope.signatures
    assert signature.keyid == _envelope(name)["signatures"][0].get("keyid")
    assert len(signature.sig) == 64


@pytest.mark.parametrize("name", ENVELOPES)
def test_the_spec_s_signature_verifies(name: str) -> None:
    """The example's signature verifies with the example's key over the PAE of the envelope as
    repro reads it; over a payload one byte changed, it does not."""
    envelope = read_envelope(_envelope(name), max_signatures=16)
    assert _verifies(envelope)
    changed = DsseEnvelope(b"hello World", envelope.payload_type, envelope.signatures)
    assert not _verifies(changed)


def test_url_safe_unpadded_reads_to_the_same_bytes() -> None:
    """The spec lets a signer write URL-safe base64 (a verifier MUST accept either): the
    example re-encoded URL-safe and unpadded reads to the same payload and signature bytes, and
    still verifies."""
    data = _envelope("protocol-envelope.json")
    standard = read_envelope(data, max_signatures=16)
    sig = data["signatures"][0]["sig"]
    assert "+" in sig, "the vector's signature no longer exercises the URL-safe alphabet"
    data["payload"] = _url_safe_unpadded(data["payload"])
    data["signatures"][0]["sig"] = _url_safe_unpadded(sig)
    url_safe = read_envelope(data, max_signatures=16)
    assert url_safe == standard
    assert (
        base64.urlsafe_b64encode(url_safe.signatures[0].sig).decode().rstrip("=")
        == (data["signatures"][0]["sig"])
    )
    assert _verifies(url_safe)
