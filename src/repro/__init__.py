"""repro: turn a frozen experiment protocol into a sealed, offline-verifiable evidence bundle.

From Python (docs/python-api.md): :func:`study` runs a protocol into a bundle, ``verify(path)``
checks one and :func:`open_verified` reads one that verifies. ``repro.verify`` is also the
subpackage of the verifier (``from repro.verify import Finding`` works as it always did): the
module is callable, and calling it verifies. ``__all__`` is the whole public face of this
package; the functions are imported on first use, so ``import repro`` imports nothing else.
"""

import importlib as _importlib
import typing as _typing
from typing import Any as _Any

__version__ = "0.1.0"

#: The distribution (the name on the package index and in ``importlib.metadata``) that provides
#: the ``repro`` import package and command. Not ``repro``: that name on the index belongs to
#: another project, whose distribution installs an import package and a command named ``repro``
#: too, so the two cannot share one environment (README, "Install").
DISTRIBUTION = "repro-evidence"

__all__ = ["DISTRIBUTION", "__version__", "open_verified", "study", "verify", "version"]

if _typing.TYPE_CHECKING:  # spelt so, lint-imports sees these imports are for types alone
    # What a type checker sees: the functions. At run time ``repro.verify`` is the subpackage,
    # whose module is callable with the same signature (repro/verify/__init__.py).
    from repro._api import open_verified as open_verified
    from repro._api import study as study
    from repro._api import verify as verify


def version() -> str:
    """repro's version as installed (the distribution's metadata), or the package's own
    ``__version__`` when it runs from a source tree that is not installed."""
    # Lazy: importlib.metadata (email, zipfile, csv...) would weigh on every `import repro`.
    import importlib.metadata

    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return __version__


def __getattr__(name: str) -> _Any:
    """The API's functions, imported when first asked for (PEP 562): ``verify`` is the callable
    subpackage :mod:`repro.verify` (once imported, the import system binds it here itself),
    ``study`` and ``open_verified`` come from :mod:`repro._api`."""
    if name == "verify":
        return _importlib.import_module("repro.verify")
    if name in ("study", "open_verified"):
        return getattr(_importlib.import_module("repro._api"), name)
    raise AttributeError(f"module 'repro' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
