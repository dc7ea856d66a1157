"""Verify: a bundle checked offline in stages, cheapest first (the tree walk, integrity, then
content: strict parsing, the joins, every rule and derivation of the study applied again), every
problem a :class:`Finding` with a stable code (:mod:`~repro.verify.core`), then the signatures
beside the bag against the keys a reader trusts (:func:`verification`); and
:func:`open_verified`, the one way the other commands read a bundle."""

from repro.verify.core import (
    BagVerification,
    Verification,
    VerifiedBundle,
    open_verified,
    read_signatures,
    verification,
    verify,
    verify_bag,
)
from repro.verify.findings import Finding
from repro.verify.limits import MAX_FILE_BYTES, Limits
from repro.verify.reader import BundleReader
from repro.verify.signatures import SignatureStatus
from repro.verify.walk import bundle_sha256

__all__ = [
    "MAX_FILE_BYTES",
    "BagVerification",
    "BundleReader",
    "Finding",
    "Limits",
    "SignatureStatus",
    "Verification",
    "VerifiedBundle",
    "bundle_sha256",
    "open_verified",
    "read_signatures",
    "verification",
    "verify",
    "verify_bag",
]
