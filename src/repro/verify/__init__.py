"""The offline verifier: the tree walked without following a link, the BagIt layer, strict
parsing, the joins, and every rule and derivation of the study applied again
(:mod:`~repro.verify.core`)."""

from repro.verify.core import MAX_FILE_BYTES, BundleReader, Finding, Limits, bundle_sha256, verify

__all__ = ["MAX_FILE_BYTES", "BundleReader", "Finding", "Limits", "bundle_sha256", "verify"]
