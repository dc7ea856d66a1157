"""The Python API's verify (docs/python-api.md): ``repro.verify(path, ...)``, the call of the
callable subpackage :mod:`repro.verify`, which :mod:`repro._api` gives as its ``verify`` too; and
:func:`limits_of`, the limits an API call names, which ``repro.open_verified`` takes as well. It
is written here, in the verifier's own layer, so that the subpackage's call needs nothing above
it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from repro._files import PathArg, path_of, paths_of
from repro.errors import BadInput
from repro.verify._core import Verification, verification
from repro.verify._limits import Limits, limit_names

if TYPE_CHECKING:
    from repro._bundle.signatures import PublicKey

__all__ = ["limits_of", "verify"]


def limits_of(limits: object) -> Limits:
    """The verifier's :class:`~repro.verify._limits.Limits`: the defaults, or a ``Limits``, or
    the defaults with each name of a mapping set to its value (``--limit NAME=N``)."""
    if limits is None:
        return Limits()
    if isinstance(limits, Limits):
        return limits
    if not isinstance(limits, Mapping):
        raise TypeError(f"limits must be a mapping or a Limits, not {type(limits).__name__}")
    names = limit_names()
    for name, value in limits.items():
        if name not in names:
            raise BadInput(f"limits: {name!r} is not a limit; the limits are {', '.join(names)}")
        if isinstance(value, bool) or not isinstance(value, int):
            raise BadInput(f"limits: {name}: {value!r} is not a whole number")
    try:
        return attrs.evolve(Limits(), **limits)
    except ValueError as exc:
        raise BadInput(f"limits: {exc}") from None


def verify(
    path: PathArg,
    *,
    trusted_keys: Iterable[PathArg] = (),
    limits: Mapping[str, int] | Limits | None = None,
    jobs: int | None = None,
) -> Verification:
    """Check the bundle at ``path`` (a directory, or a packed bundle: a .zip or .tar file)
    offline, as ``repro verify PATH`` does: integrity, strict parse and schema, joins,
    re-derivations, and with ``trusted_keys`` its signatures.

    Returns a :class:`~repro.verify._core.Verification`: ``ok`` (no finding), ``findings``
    (each a :class:`~repro.verify._findings.Finding` with its stable ``code``; a bundle that
    does not verify is a result, not an exception), ``signatures`` (each signature file's
    status) and ``bundle_sha256`` (None unless it verifies).

    ``trusted_keys``: Ed25519 public key files (OpenSSH .pub or PEM, ``--trusted-key``): every
    signature must be by one of them and check, and one at least must be there. ``limits``:
    what verify reads and re-derives at most, by name (``--limit NAME=N``), or a
    :class:`~repro.verify._limits.Limits`. ``jobs``: jobs run at a time (``--jobs``).

    Raises :class:`~repro.errors.BadInput` when ``path`` is not a bundle (neither a directory
    nor a zip or tar file, a tree with none of BagIt's tag files, a valid BagIt bag that is no
    repro bundle), for a trusted key that is not an Ed25519 public key, or a bad limit or job
    count."""
    root = path_of(path, "path")
    keys = paths_of(trusted_keys, "trusted_keys")
    return verification(root, _trusted(keys), limits_of(limits), jobs=_jobs(jobs))


def _jobs(jobs: object) -> int | None:
    if jobs is None:
        return None
    if isinstance(jobs, bool) or not isinstance(jobs, int):
        raise TypeError(f"jobs must be an int, not {type(jobs).__name__}")
    if jobs < 1:
        raise BadInput(f"jobs: {jobs} is not a positive integer")
    return jobs


def _trusted(paths: list[Path]) -> list[PublicKey]:
    """The public keys in ``paths``, each once (as ``--trusted-key`` loads them)."""
    if not paths:
        return []
    # Lazy: cryptography and securesystemslib are imported only when a key is to be read.
    from repro._bundle.signatures import load_public_keys

    return load_public_keys(paths)
