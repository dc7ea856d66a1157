"""Verify: a bundle checked offline in stages, cheapest first (the tree walk, integrity, then
content: strict parsing, the joins, every rule and derivation of the study applied again), every
problem a :class:`Finding` with a stable code (:mod:`~repro.verify.core`); and
:func:`open_verified`, the one way the other commands read a bundle."""

from repro.verify.core import VerifiedBundle, open_verified, verify
from repro.verify.findings import Finding
from repro.verify.limits import MAX_FILE_BYTES, Limits
from repro.verify.reader import BundleReader
from repro.verify.walk import bundle_sha256

__all__ = [
    "MAX_FILE_BYTES",
    "BundleReader",
    "Finding",
    "Limits",
    "VerifiedBundle",
    "bundle_sha256",
    "open_verified",
    "verify",
]
