"""Where a study's partitions execute: on local worker processes or on a Dask cluster.

Plain values apart from :mod:`repro.execute.studies`, so that the command line can describe and
build them without importing the study machinery (commands that never run a study start
faster).
"""

from __future__ import annotations

from attrs import frozen

__all__ = ["MAX_LOCAL_WORKERS", "Backend", "DaskCluster", "LocalWorkers"]

#: The most worker processes ``repro study --workers`` starts on one host.
MAX_LOCAL_WORKERS = 64


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
