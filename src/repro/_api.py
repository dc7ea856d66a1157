"""repro from Python: :func:`study`, :func:`verify` and :func:`open_verified`, what ``repro study``
and ``repro verify`` (and every command that reads a bundle) do, without a subprocess.

The package exports them (``repro.study``, ``repro.verify``, ``repro.open_verified``); this module
is where they are written. It imports nothing heavy itself: each function imports what it runs
when it is called, so that ``import repro`` stays as cheap as it was (``tests/test_startup.py``).
``repro.verify`` is the subpackage :mod:`repro.verify`, made callable: calling it calls
:func:`verify` here (see ``repro/verify/__init__.py``). docs/python-api.md is the user's page.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from repro.errors import BadInput

if TYPE_CHECKING:
    from repro.bundle.signatures import PublicKey
    from repro.execute.studies import StudyResult
    from repro.verify.core import Verification, VerifiedBundle
    from repro.verify.limits import Limits

__all__ = ["open_verified", "study", "verify"]

#: What the functions take as a path: a ``str`` or any ``os.PathLike`` of one (``pathlib.Path``).
PathArg = str | os.PathLike[str]


def _path(value: object, what: str) -> Path:
    """``value`` as a :class:`Path`; a value that is no path (bytes among them) is a
    :class:`TypeError` naming the argument ``what``."""
    if isinstance(value, str | os.PathLike):
        path = os.fspath(value)
        if isinstance(path, str):
            return Path(path)
    raise TypeError(f"{what} must be a str or an os.PathLike of one, not {type(value).__name__}")


def _paths(values: object, what: str) -> list[Path]:
    """Each path of the sequence ``values``; one path alone (a ``str`` would be iterated as its
    characters) is a :class:`TypeError`."""
    if isinstance(values, str | bytes | os.PathLike) or not isinstance(values, Iterable):
        raise TypeError(f"{what} must be a sequence of paths, not {type(values).__name__}")
    return [_path(value, f"each of {what}") for value in values]


def study(
    protocol: PathArg,
    out: PathArg,
    *,
    options: Mapping[str, str] | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    strict: bool = False,
    keep_going: bool = False,
) -> StudyResult:
    """Freeze and seal the protocol file ``protocol``, run every slot into the fresh root ``out``
    and bundle the evidence, as ``repro study PROTOCOL --out OUT`` does; returns the
    :class:`~repro.execute.studies.StudyResult` (``root``, ``derived``: the aggregates, tiers,
    ledger and report the bundle holds, ``wall_seconds``, ``lost_opens``).

    ``options``: the adapter's options (``--option KEY=VALUE``). ``workers``: local worker
    processes (``--workers``; default 1), or threads for an adapter whose sessions run on them.
    ``scheduler``: a Dask scheduler's address (``--scheduler``), exclusive with ``workers``.
    ``strict``: raise :class:`~repro.errors.SlotsLost` (the bundle written whole) when a slot
    that ran did not end valid, where ``repro study`` exits 4 (without it, the result's
    ledger lists the losses: :func:`~repro.execute.studies.lost_slots` counts them).
    ``keep_going``: run the whole plan even when its first slots all fail the same structural
    way (``--keep-going``; :mod:`repro.execute.stopping`).

    Raises :class:`~repro.errors.BadInput` before anything is written (a bad protocol, named
    with its JSON path; ``out`` exists or its parent does not; a bad option or worker count;
    an unreachable scheduler), and :class:`~repro.errors.StudyStopped` when a signal (the study
    run from the main thread), an I/O error, a failed cluster or the early stop stops the study
    after ``out`` was created: ``out`` is then incomplete and never verifies."""
    protocol_path, root = _path(protocol, "protocol"), _path(out, "out")
    adapter_options = _options(options)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)):
        raise TypeError(f"workers must be an int, not {type(workers).__name__}")
    if scheduler is not None and workers is not None:
        raise BadInput(
            "workers and scheduler exclude each other: the cluster's workers run the partitions"
        )
    from repro.errors import SlotsLost
    from repro.execute.backends import Backend, DaskCluster, LocalWorkers
    from repro.execute.spares import Spares, runs_on_threads
    from repro.execute.studies import Prestart, lost_slots, prepare
    from repro.execute.studies import study as run_study

    backend: Backend = (
        DaskCluster(scheduler)
        if scheduler is not None
        else LocalWorkers(1 if workers is None else workers)
    )
    with Spares() as spares:
        if scheduler is None and not runs_on_threads(protocol_path):
            # As repro study does: the first worker process starts while the study prepares.
            spares.start(1)
        prepared = prepare(protocol_path, adapter_options, Prestart(backend, spares).early)
        result = run_study(prepared, root, _Silent(), backend, spares, keep_going=keep_going)
    lost = lost_slots(result.derived.ledger)
    if strict and lost:
        raise SlotsLost(result, lost)
    return result


def _options(options: object) -> dict[str, str]:
    """The adapter options, each key and value a string (``--option KEY=VALUE``)."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"options must be a mapping, not {type(options).__name__}")
    for key, value in options.items():
        if not isinstance(key, str) or not key or not isinstance(value, str):
            raise BadInput(
                f"options: {key!r}: {value!r}: each adapter option is a non-empty str key and a "
                "str value, as --option KEY=VALUE gives them"
            )
    return dict(options)


class _Silent:
    """A study's progress, not shown (:class:`repro.execute.studies.Progress`)."""

    def start(self, total: int) -> None:
        del total

    def advance(self, condition: str, end: str) -> None:
        del condition, end

    def finish(self) -> None:
        pass


def _limits(limits: object) -> Limits:
    """The verifier's :class:`~repro.verify.limits.Limits`: the defaults, or a ``Limits``, or
    the defaults with each name of a mapping set to its value (``--limit NAME=N``)."""
    import attrs

    from repro.verify.limits import Limits, limit_names

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

    Returns a :class:`~repro.verify.core.Verification`: ``ok`` (no finding), ``findings``
    (each a :class:`~repro.verify.findings.Finding` with its stable ``code``; a bundle that
    does not verify is a result, not an exception), ``signatures`` (each signature file's
    status) and ``bundle_sha256`` (None unless it verifies).

    ``trusted_keys``: Ed25519 public key files (OpenSSH .pub or PEM, ``--trusted-key``): every
    signature must be by one of them and check, and one at least must be there. ``limits``:
    what verify reads and re-derives at most, by name (``--limit NAME=N``), or a
    :class:`~repro.verify.limits.Limits`. ``jobs``: jobs run at a time (``--jobs``).

    Raises :class:`~repro.errors.BadInput` when ``path`` is not a bundle (neither a directory
    nor a zip or tar file, a tree with none of BagIt's tag files, a valid BagIt bag that is no
    repro bundle), for a trusted key that is not an Ed25519 public key, or a bad limit or job
    count."""
    root = _path(path, "path")
    keys = _paths(trusted_keys, "trusted_keys")
    from repro.verify.core import verification

    return verification(root, _trusted(keys), _limits(limits), jobs=_jobs(jobs))


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
    from repro.bundle.signatures import load_public_keys

    return load_public_keys(paths)


def open_verified(
    path: PathArg, *, limits: Mapping[str, int] | Limits | None = None
) -> VerifiedBundle:
    """Verify the bundle at ``path`` and return what verify parsed, the one way repro's own
    commands read a bundle: a :class:`~repro.verify.core.VerifiedBundle` (``protocol``,
    ``seal``, ``ledger``, ``aggregates``, ``tiers``, ``environment``, ``scores``,
    ``contrasts``, ``rl``, ``bundle_sha256``; and ``partitions()``, ``records()``,
    ``all_records()``, read later by verify's own reader). ``limits`` as for :func:`verify`.

    Raises :class:`~repro.errors.NotVerified` (its ``findings``, each with its ``code``) when
    the bundle does not verify, or when a file read later has changed since; and
    :class:`~repro.errors.BadInput` when ``path`` is not a bundle (see :func:`verify`)."""
    root = _path(path, "path")
    from repro.verify.core import open_verified as opened

    return opened(root, _limits(limits))
