"""Comparison of two verified bundles of one protocol family: a scored study's regressions
(:mod:`~repro._compare.scores`), and run-by-run equality per tier
(:mod:`~repro._compare.bundles`)."""

from repro._compare.bundles import CompareResult, compare

__all__ = ["CompareResult", "compare"]
