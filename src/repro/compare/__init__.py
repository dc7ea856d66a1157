"""Comparison of two verified bundles of one protocol family: a scored study's regressions
(:mod:`~repro.compare.scores`), and run-by-run equality per tier (:mod:`~repro.compare.bundles`)."""

from repro.compare.bundles import CompareResult, compare

__all__ = ["CompareResult", "compare"]
