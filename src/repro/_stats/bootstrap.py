"""The one bootstrap engine of repro: every seeded resampling a figure depends on (an interval of
a condition's mean or of the estimand, a contrast's, rliable's stratified ones) draws, computes
its replicates and reads its percentile interval here.

- :class:`Draws`: the indices of successive resamples from one stream, either repro's own draws
  of ``numpy.random.default_rng(seed)`` (:class:`repro._stats.draws.Stream`) or, ``legacy``,
  NumPy's ``RandomState(seed).choice`` (rliable's draws, whose streams NumPy keeps as they are,
  NEP 19). :meth:`Draws.iid` resamples samples with replacement; :meth:`Draws.stratified`
  resamples a (runs, tasks) matrix within each task.
- :func:`replicates`: a statistic of successive resamples, a batch at a time; a batch bounds the
  memory a bootstrap takes and changes no draw, so none of its figures.
- :func:`p_value`: a bootstrap p-value of a null boundary, counted from the same replicates.
- :func:`repro._stats.resampling.percentile_ends`: the two-sided percentile interval of the
  replicates, by repro's own ``linear`` percentiles, which every bootstrap reads its ends by.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from repro._stats.draws import Stream

__all__ = ["Draws", "p_value", "replicates"]


class Draws:
    """The run (and task) indices of successive resamples, from one stream."""

    def __init__(self, seed: int, legacy: bool = False) -> None:
        self._legacy = legacy
        if legacy:
            # NumPy keeps the legacy RandomState's streams as they are (NEP 19).
            self._state = np.random.RandomState(seed)
        else:
            self._stream = Stream(seed)

    def integers(self, high: int, shape: tuple[int, ...]) -> NDArray[np.int64]:
        """Indices in ``[0, high)`` filling ``shape`` in C order."""
        if self._legacy:
            # rliable: np.random.choice(self._num_items, self._args_shape, replace=True)
            out: NDArray[np.int64] = self._state.choice(high, shape, replace=True)
            return out
        return self._stream.integers(high, shape)

    def iid(self, samples: Sequence[NDArray[np.float64]], count: int) -> list[NDArray[np.float64]]:
        """The next ``count`` resamples of each one-dimensional sample, with replacement, one a
        row: ``Generator.integers(0, x.size, (count, x.size))``'s draws for each sample ``x`` in
        turn, as ``scipy.stats.bootstrap`` drew a batch."""
        return [x[self.integers(x.size, (count, x.size))] for x in samples]

    def stratified(self, x: NDArray[np.float64], task_bootstrap: bool) -> NDArray[np.float64]:
        """One resample of the (runs, tasks) matrix x: per task, N runs drawn with replacement
        (arch's ``_resample`` of rliable's indices: ``x[(runs, *strata)]``); with
        ``task_bootstrap``, the tasks drawn with replacement too."""
        n, m = x.shape
        runs = self.integers(n, (n, m))
        if task_bootstrap:
            tasks = self.integers(m, (1, m))
            return x[runs, tasks]
        return x[runs, np.arange(m)[None, :]]

    def stratified_batch(
        self, arrays: Sequence[NDArray[np.float64]], count: int, task_bootstrap: bool
    ) -> list[NDArray[np.float64]]:
        """The next ``count`` resamples of the matrices ``arrays`` (each resample draws each
        matrix in turn), one (resamples, runs, tasks) batch per matrix.

        Both generators draw each bounded integer from the stream's next 32-bit words whatever
        the call (NumPy keeps the spare half of a 64-bit word in the bit generator's state), so
        one call for the indices of many resamples draws what one call per resample draws, in
        the same order (tests/test_rl.py holds both generators to it). Where a resample's draws
        alternate between bounds (the tasks of ``task_bootstrap``, matrices of different runs),
        they are drawn a resample at a time."""
        n, m = arrays[0].shape
        if task_bootstrap or any(a.shape[0] != n for a in arrays):
            drawn = [[self.stratified(a, task_bootstrap) for a in arrays] for _ in range(count)]
            return [np.stack(resamples) for resamples in zip(*drawn, strict=True)]
        runs = self.integers(n, (count, len(arrays), n, m))
        tasks = np.arange(m)[None, None, :]
        return [a[runs[:, i], tasks] for i, a in enumerate(arrays)]


def replicates(
    draw: Callable[[int], Sequence[NDArray[np.float64]]],
    statistic: Callable[..., ArrayLike],
    resamples: int,
    step: int,
    width: int = 1,
    dtype: Any = np.float64,
) -> NDArray[Any]:
    """``statistic`` of ``resamples`` resamples, ``width`` values each (as ``dtype``), one row a
    replicate: ``step`` resamples at a time (at least one), ``draw(count)`` giving the next
    ``count`` of each sample and ``statistic`` their values, the samples' batches in turn."""
    results = np.zeros((resamples, width), dtype=dtype)
    step = max(1, step)
    for start in range(0, resamples, step):
        count = min(step, resamples - start)
        batches = draw(count)
        results[start : start + count] = np.asarray(statistic(*batches)).reshape(count, width)
    return results


def p_value(values: Iterable[float], null: float, two_sided: bool) -> float:
    """The bootstrap p-value of the boundary ``null`` from the replicates ``values`` (``B`` of
    them): ``(1 + k)`` over ``B + 1``, ``k`` of them at or below the boundary; two-sided, twice
    the smaller of that and its mirror (``k`` at or above the boundary), at most 1."""
    theta = np.asarray(values, dtype=np.float64)
    below = 1 + int(np.count_nonzero(theta <= null))
    if not two_sided:
        return below / (theta.size + 1)
    above = 1 + int(np.count_nonzero(theta >= null))
    return min(1.0, 2 * min(below, above) / (theta.size + 1))
