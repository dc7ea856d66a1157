"""The ends of a percentile interval, by a formula repro owns: NumPy's ``linear`` quantile (its
method 7, Hyndman and Fan's), written out, so that an interval is the same floats whichever NumPy
or SciPy computes it."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["percentile_ends"]


def _linear(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile (``0 <= q <= 1``) of the values ``ordered`` (sorted), as NumPy's
    ``quantile(..., method="linear")`` computes it: at index ``(n - 1) * q``, between the two
    order statistics around it, ``a + (b - a) * g`` below ``g = 0.5`` and ``b - (b - a) * (1 -
    g)`` from it (NumPy's ``_lerp``)."""
    n = len(ordered)
    index = (n - 1) * q
    if index >= n - 1:
        return float(ordered[-1])
    below = math.floor(index)
    a, b = float(ordered[below]), float(ordered[below + 1])
    g = index - below
    difference = b - a
    return b - difference * (1 - g) if g >= 0.5 else a + difference * g


def percentile_ends(replicates: ArrayLike, level: float) -> tuple[float, float]:
    """The two-sided percentile interval of bootstrap ``replicates`` at ``level``: with ``a =
    (1 - level) / 2``, the quantiles at ``100 * a`` and ``100 * (1 - a)`` percent (each divided
    by 100 again, as ``numpy.percentile`` does), by the ``linear`` rule (:func:`_linear`), of
    the replicates sorted; independent of their order."""
    values = np.sort(np.asarray(replicates, dtype=np.float64).ravel())
    if values.size == 0:
        raise ValueError("no replicates")
    if not 0.0 < level < 1.0:
        raise ValueError("level must be strictly between 0 and 1")
    alpha = (1.0 - level) / 2
    ordered = values.tolist()
    return _linear(ordered, 100 * alpha / 100), _linear(ordered, 100 * (1.0 - alpha) / 100)
