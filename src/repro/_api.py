"""repro from Python: :func:`study`, :func:`verify` and :func:`open_verified`, what ``repro study``
and ``repro verify`` (and every command that reads a bundle) do, without a subprocess.

The package exports them (``repro.study``, ``repro.verify``, ``repro.open_verified``); this module
is where ``study`` and ``open_verified`` are written. It imports nothing heavy itself: each
function imports what it runs when it is called, so that ``import repro`` stays as cheap as it
was (``tests/test_startup.py``). ``repro.verify`` is the subpackage :mod:`repro.verify`, made
callable: calling it calls :func:`repro.verify._api.verify`, written in the verifier's layer (so
that the subpackage imports nothing above it) and given here as ``verify`` on first use.
docs/python-api.md is the user's page.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from repro._files import PathArg, path_of
from repro.errors import BadInput, SlotsLost

if TYPE_CHECKING:
    from repro._execute.studies import StudyResult
    from repro.verify._api import verify as verify
    from repro.verify._core import VerifiedBundle
    from repro.verify._limits import Limits

__all__ = ["open_verified", "study", "verify"]


def study(
    protocol: PathArg,
    out: PathArg,
    *,
    options: Mapping[str, str] | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    strict: bool = False,
    keep_going: bool = False,
    continue_from: PathArg | None = None,
) -> StudyResult:
    """Freeze and seal the protocol file ``protocol``, run every slot into the fresh root ``out``
    and bundle the evidence, as ``repro study PROTOCOL --out OUT`` does; returns the
    :class:`~repro._execute.studies.StudyResult` (``root``, ``derived``: the aggregates, tiers,
    ledger and report the bundle holds, ``wall_seconds``, ``lost_opens``).

    ``options``: the adapter's options (``--option KEY=VALUE``). ``workers``: local worker
    processes (``--workers``; default 1), or threads for an adapter whose sessions run on them.
    ``scheduler``: a Dask scheduler's address (``--scheduler``), exclusive with ``workers``.
    ``strict``: raise :class:`~repro.errors.SlotsLost` (the bundle written whole) when a slot
    that ran did not end valid, where ``repro study`` exits 4 (without it, the result's
    ledger lists the losses: the result's ``lost`` counts them).
    ``keep_going``: run the whole plan even when its first slots all fail the same structural
    way (``--keep-going``; :mod:`repro._execute.stopping`).
    ``continue_from``: an interrupted study's root (``--continue-from``; never written): what
    it finished is checked and carried into ``out``, the rest runs (data/continuation.json).

    Raises :class:`~repro.errors.BadInput` before anything is written (a bad protocol, named
    with its JSON path; ``out`` exists or its parent does not; a bad option or worker count;
    an unreachable scheduler), and :class:`~repro.errors.StudyStopped` when a signal (the study
    run from the main thread), an I/O error, a failed cluster or the early stop stops the study
    after ``out`` was created: ``out`` is then incomplete and never verifies."""
    protocol_path, root = path_of(protocol, "protocol"), path_of(out, "out")
    old = None if continue_from is None else path_of(continue_from, "continue_from")
    adapter_options = _options(options)
    _check_where(workers, scheduler)
    # Lazy: `import repro` stays without the study machinery; only a study runs it.
    from repro._execute.backends import backend_of
    from repro._execute.continuation import carry_from
    from repro._execute.spares import Spares, runs_on_threads
    from repro._execute.studies import Prestart, prepare
    from repro._execute.studies import study as run_study

    backend = backend_of(workers, scheduler)
    with Spares() as spares:
        if scheduler is None and not runs_on_threads(protocol_path):
            # As repro study does: the first worker process starts while the study prepares.
            spares.start(1)
        prepared = prepare(protocol_path, adapter_options, Prestart(backend, spares).early)
        carry = None if old is None else carry_from(old, root, prepared)
        result = run_study(
            prepared, root, _Silent(), backend, spares, keep_going=keep_going, carry=carry
        )
    if strict and result.lost:
        raise SlotsLost(result, result.lost)
    return result


def _check_where(workers: object, scheduler: str | None) -> None:
    """``workers`` an int (not a bool) or None, and not given with ``scheduler``."""
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)):
        raise TypeError(f"workers must be an int, not {type(workers).__name__}")
    if scheduler is not None and workers is not None:
        raise BadInput(
            "workers and scheduler exclude each other: the cluster's workers run the partitions"
        )


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
    """A study's progress, not shown (:class:`repro._execute.studies.Progress`)."""

    def start(self, total: int) -> None:
        del total

    def advance(self, condition: str, end: str) -> None:
        del condition, end

    def finish(self) -> None:
        pass


def open_verified(
    path: PathArg, *, limits: Mapping[str, int] | Limits | None = None
) -> VerifiedBundle:
    """Verify the bundle at ``path`` and return what verify parsed, the one way repro's own
    commands read a bundle: a :class:`~repro.verify._core.VerifiedBundle` (``protocol``,
    ``seal``, ``ledger``, ``aggregates``, ``tiers``, ``environment``, ``scores``,
    ``contrasts``, ``rl``, ``bundle_sha256``; and ``partitions()``, ``records()``,
    ``all_records()``, read later by verify's own reader). ``limits`` as for :func:`verify`.

    Raises :class:`~repro.errors.NotVerified` (its ``findings``, each with its ``code``) when
    the bundle does not verify, or when a file read later has changed since; and
    :class:`~repro.errors.BadInput` when ``path`` is not a bundle (see :func:`verify`)."""
    root = path_of(path, "path")
    # Lazy, as every import here: ``import repro`` and ``repro.study`` load no verifier.
    from repro.verify._api import limits_of
    from repro.verify._core import open_verified as opened

    return opened(root, limits_of(limits))


def __getattr__(name: str) -> Any:
    """``verify``: the verifier's own :func:`repro.verify._api.verify`, imported when first asked
    for (PEP 562), as ``repro.verify`` is."""
    if name == "verify":
        # Lazy (PEP 562): `import repro` stays without the verifier until `verify` is asked for.
        from repro.verify._api import verify

        return verify
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
