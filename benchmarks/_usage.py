"""What several benchmarks measure the same way: the CPU time of the processes they ran."""

from __future__ import annotations

import resource


def children_cpu() -> float:
    """User and system CPU seconds of the child processes waited for so far, and of theirs that
    they waited for (a study's worker processes, verify's workers): read before and after a
    child runs, the difference is what it and its own children used."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
