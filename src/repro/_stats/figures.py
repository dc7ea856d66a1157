"""How verify compares a figure it re-derives with the one a bundle stores: the numeric policy
across library versions.

A figure is a float of a derived file. Most are the same bits wherever they are computed: those
repro makes with IEEE arithmetic, ``math.fsum`` and ``math.sqrt`` from the runs' values (means,
sds, standard errors, estimates, statistics, degrees of freedom), compared exactly. Some pass
through a library's special function or reduction (:data:`LIBRARY_FIGURES`): an interval's ends
(t quantiles from SciPy, a bootstrap's replicates from NumPy's means), a p-value (SciPy's t,
binomial and hypergeometric tails), rliable's statistics (NumPy's reductions of its resamples).
Their last bits move from one SciPy or NumPy to the next (a t quantile by some 1e-11 of itself
between SciPy 1.13 and 1.17), while what they are drawn from does not: every seeded
resampling's draws and percentiles are repro's own (:mod:`repro._stats.draws`,
:mod:`repro._stats.resampling`). So such a figure is accepted when it lies within
:data:`REL_TOLERANCE` of the stored one, relative to the larger, or within
:data:`ABS_TOLERANCE` of it: far below any difference a reader could act on, and far above the
drift of the libraries. Everything else of a derived file (counts, names, verdicts, the report's
text) is compared exactly, and what follows from a figure (a verdict, a rounded figure in a
sentence) is derived again from the stored figure, once that is accepted, so that a figure at a
verdict's threshold, within the tolerance, cannot make a genuine bundle fail.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from repro import _layout as layout

__all__ = ["ABS_TOLERANCE", "LIBRARY_FIGURES", "REL_TOLERANCE", "same_figure"]

#: How far a re-derived figure may lie from the stored one, relative to the larger of the two.
REL_TOLERANCE = 1e-9
#: How far it may lie in absolute terms: for figures at or near 0 (a difference of equal means,
#: a p-value of 1e-300), where a relative bound says nothing.
ABS_TOLERANCE = 1e-12


def same_figure(stored: float, derived: float) -> bool:
    """Whether ``derived`` is the figure ``stored`` under the policy: within the tolerances, or
    both the same infinity."""
    if stored == derived:
        return True
    return math.isclose(stored, derived, rel_tol=REL_TOLERANCE, abs_tol=ABS_TOLERANCE)


#: The figures of each derived file that a library computes, by the key they are stored under
#: (None: every figure of the file): the ones verify compares within the tolerance.
LIBRARY_FIGURES: Mapping[str, frozenset[str] | None] = {
    # The interval of each condition and of the estimand (t quantiles, a bootstrap's).
    layout.AGGREGATES: frozenset({"low", "high", "halfwidth"}),
    # The intervals recomputed at the family-wise level, and the published half-widths
    # rescaled by normal quantiles.
    layout.TIERS: frozenset({"low", "high", "halfwidth", "familywise_published_halfwidth"}),
    # Each contrast's interval and p-value (and the adjusted one, of those), and a bootstrap's
    # standard error (the sd of NumPy's means).
    layout.CONTRASTS: frozenset({"low", "high", "p_value", "p_adjusted", "se"}),
    # Each cell's Wilson interval (normal quantiles).
    layout.SCORES: frozenset({"low", "high"}),
    # rliable's statistics: NumPy's reductions of the resampled runs, throughout.
    layout.RL_AGGREGATES: None,
}
