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
from repro._lazy import names_on_first_use as _names_on_first_use

if _TYPE_CHECKING:
    from os import PathLike

    from repro.verify._bag import BagVerification as BagVerification
    from repro.verify._bag import verify_bag as verify_bag
    from repro.verify._core import Verification as Verification
    from repro.verify._core import VerifiedBundle as VerifiedBundle
    from repro.verify._core import open_verified as open_verified
    from repro.verify._core import read_signatures as read_signatures
    from repro.verify._core import verification as verification
    from repro.verify._core import verify as verify
    from repro.verify._findings import Finding as Finding
    from repro.verify._limits import MAX_FILE_BYTES as MAX_FILE_BYTES
    from repro.verify._limits import Limits as Limits
    from repro.verify._reader import BundleReader as BundleReader
    from repro.verify._signatures import SignatureStatus as SignatureStatus

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

    def __call__(self, path: "str | PathLike[str]", /, **options: _Any) -> "Verification":
        """Verify the bundle at ``path``: :func:`repro.verify._api.verify`."""
        # Lazy: the API's verify imports the whole verifier, which a name of this package need
        # not (``--bagit-only`` imports the BagIt stage alone).
        from repro.verify._api import verify

        return verify(path, **options)

    @property
    def __signature__(self) -> _inspect.Signature:
        """The signature of :func:`repro.verify._api.verify`, which a call takes (``help``,
        ``inspect.signature``)."""
        # Lazy: as in __call__.
        from repro.verify._api import verify

        return _inspect.signature(verify)


#: Each public name is imported from its submodule when first asked for (PEP 562), so that a
#: command that needs one stage imports no other: ``repro verify --bagit-only`` needs the BagIt
#: stage alone (:mod:`~repro.verify._bag`), not the content stage (tests/test_startup.py).
__getattr__ = _names_on_first_use(
    __name__,
    {
        "BagVerification": "_bag",
        "verify_bag": "_bag",
        "Verification": "_core",
        "VerifiedBundle": "_core",
        "open_verified": "_core",
        "read_signatures": "_core",
        "verification": "_core",
        "verify": "_core",
        "Finding": "_findings",
        "MAX_FILE_BYTES": "_limits",
        "Limits": "_limits",
        "BundleReader": "_reader",
        "SignatureStatus": "_signatures",
    },
)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


_sys.modules[__name__].__class__ = _CallableModule
