"""Where a study's partitions execute: on local worker processes or on a Dask cluster.

Plain values apart from :mod:`repro._execute.studies`, so that the command line can describe and
build them without importing the study machinery (commands that never run a study start
faster).
"""

from __future__ import annotations

from attrs import frozen

__all__ = [
    "MAX_LOCAL_WORKERS",
    "MAX_THREAD_WORKERS",
    "Backend",
    "DaskCluster",
    "LocalWorkers",
    "backend_of",
    "local_worker_limit",
]

#: The most worker processes ``repro study --workers`` starts on one host.
MAX_LOCAL_WORKERS = 64
#: The most runs at once ``repro study --workers`` allows an adapter whose sessions run on
#: threads of the study process (``thread_sessions``, :mod:`repro._execute.threads`): a thread
#: that waits on a harness costs a few hundred KiB, a worker process tens of MiB.
MAX_THREAD_WORKERS = 256


def local_worker_limit(adapter: object, stream: bool) -> int:
    """The most local workers a study of ``adapter`` may ask for: :data:`MAX_THREAD_WORKERS`
    when its class says ``thread_sessions = True`` and the protocol seeds per run (not
    ``stream``), else :data:`MAX_LOCAL_WORKERS`."""
    threaded = getattr(type(adapter), "thread_sessions", False) is True and not stream
    return MAX_THREAD_WORKERS if threaded else MAX_LOCAL_WORKERS


@frozen
class LocalWorkers:
    """Partitions run on ``count`` worker processes of this host, taken in sealed order by
    whichever is free (1: one partition after another, the default)."""

    count: int = 1


@frozen
class DaskCluster:
    """Each partition runs as one task on the Dask cluster whose scheduler listens at
    ``address`` (e.g. ``tcp://127.0.0.1:8786``); needs the extra ``dask``."""

    address: str


#: Where a study's partitions execute.
Backend = LocalWorkers | DaskCluster


def backend_of(workers: int | None, scheduler: str | None) -> Backend:
    """Where a study runs, as ``--workers`` and ``--scheduler`` say (one of them at most):
    the Dask cluster at ``scheduler``, or ``workers`` local workers (default 1)."""
    if scheduler is not None:
        return DaskCluster(scheduler)
    return LocalWorkers(1 if workers is None else workers)
