"""Verify: a bundle checked offline in stages, cheapest first (the tree walk, integrity, then
content: strict parsing, the joins, every rule and derivation of the study applied again), every
problem a :class:`Finding` with a stable code (:mod:`~repro.verify._core`), then the signatures
beside the bag against the keys a reader trusts (:func:`verification`); and
:func:`open_verified`, the one way the other commands read a bundle.

The module is callable: ``repro.verify(path, *, trusted_keys=(), limits=None, jobs=None)`` is the
Python API's verify (:func:`repro.verify._api.verify`, docs/python-api.md), which takes a ``str``
or a path and returns a :class:`Verification`; its names stay this package's, so that both
``repro.verify(path)`` and ``from repro.verify import verify`` work whatever was imported first.
"""

import inspect as _inspect
import sys as _sys
import types as _types
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from repro._layout import bundle_sha256
from repro.verify import _api
from repro.verify._core import (
    BagVerification,
    Verification,
    VerifiedBundle,
    open_verified,
    read_signatures,
    verification,
    verify,
    verify_bag,
)
from repro.verify._findings import Finding
from repro.verify._limits import MAX_FILE_BYTES, Limits
from repro.verify._reader import BundleReader
from repro.verify._signatures import SignatureStatus

if _TYPE_CHECKING:
    from os import PathLike

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


class _CallableModule(_types.ModuleType):
    """This package's module, callable as the Python API's verify."""

    def __call__(self, path: "str | PathLike[str]", /, **options: _Any) -> Verification:
        """Verify the bundle at ``path``: :func:`repro.verify._api.verify`."""
        return _api.verify(path, **options)

    @property
    def __signature__(self) -> _inspect.Signature:
        """The signature of :func:`repro.verify._api.verify`, which a call takes (``help``,
        ``inspect.signature``)."""
        return _inspect.signature(_api.verify)


_sys.modules[__name__].__class__ = _CallableModule
