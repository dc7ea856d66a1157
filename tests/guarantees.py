"""Figures about repro's guarantees that tests measure in this run, printed at the session's end.

A test adds to a named figure with :func:`record` (figures add up across tests), or keeps the
largest value of one with :func:`record_max`; the
``pytest_terminal_summary`` hook in conftest.py prints each under the heading
"repro guarantees (this run)". Only figures some test recorded are printed.
"""

from __future__ import annotations

__all__ = ["FIGURES", "record", "record_max"]

#: Figure name -> its running total (or largest value) in this pytest process, in the order
#: first recorded.
FIGURES: dict[str, float] = {}


def record(name: str, value: int) -> None:
    """Add ``value`` to the figure ``name`` (a figure starts at 0)."""
    FIGURES[name] = FIGURES.get(name, 0) + value


def record_max(name: str, value: float) -> None:
    """Keep the largest ``value`` recorded for the figure ``name`` (a slowest time, a largest
    peak)."""
    FIGURES[name] = max(FIGURES.get(name, value), value)
