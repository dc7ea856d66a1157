"""Where and how a study ran (:class:`Environment`)."""

from __future__ import annotations

from typing import Literal

from attrs import field, frozen

from repro.models._constraints import OMIT_IF_DEFAULT, UTC_SECONDS

__all__ = ["BackendName", "Environment"]

BackendName = Literal["local", "dask"]
"""Where a study's partitions ran: on local worker processes, or on a Dask cluster."""


@frozen
class Environment:
    """environment.json: where and how the study ran, without host paths, user or host names
    (a cluster's address is not recorded either)."""

    schema: Literal["repro.environment/1"]
    repro_version: str
    python: str
    implementation: str
    platform: str
    machine: str
    packages: dict[str, str]
    started_utc: str = field(validator=UTC_SECONDS)
    finished_utc: str = field(validator=UTC_SECONDS)
    wall_seconds: float
    #: How the partitions ran: on local worker processes, or on a Dask cluster; and how many
    #: workers there were (for a cluster, when the study began).
    backend: BackendName | None = field(default=None, metadata=OMIT_IF_DEFAULT)
    workers: int | None = field(default=None, metadata=OMIT_IF_DEFAULT)
