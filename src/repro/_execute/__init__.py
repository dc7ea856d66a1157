"""Execution: a study runs a sealed plan's slots in worker processes (:mod:`~repro._execute.worker`)
attempt by attempt (:mod:`~repro._execute.attempts`), serially or on N local workers
(:mod:`~repro._execute.local`) or on a Dask cluster (:mod:`~repro._execute.cluster`), stops
cleanly on a signal (:mod:`~repro._execute.interrupts`), and writes the bundle
(:mod:`~repro._execute.studies`); :mod:`~repro._execute.replay` re-executes one slot.

The names below load on first use: ``repro verify`` and the command line's option parsing
import :mod:`~repro._execute.backends` without the study machinery behind it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from repro._lazy import names_on_first_use

if TYPE_CHECKING:
    from repro._execute.backends import MAX_LOCAL_WORKERS, Backend, DaskCluster, LocalWorkers
    from repro._execute.studies import Progress, StudyResult, check_backend, prepare, study

__all__ = [
    "MAX_LOCAL_WORKERS",
    "Backend",
    "DaskCluster",
    "LocalWorkers",
    "Progress",
    "StudyResult",
    "check_backend",
    "prepare",
    "study",
]

_WHERE: dict[str, str] = {
    "MAX_LOCAL_WORKERS": "backends",
    "Backend": "backends",
    "DaskCluster": "backends",
    "LocalWorkers": "backends",
    "Progress": "studies",
    "StudyResult": "studies",
    "check_backend": "studies",
    "prepare": "studies",
    "study": "studies",
}

__getattr__ = names_on_first_use(__name__, _WHERE)
