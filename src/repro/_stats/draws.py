"""Seeded random draws that do not depend on the NumPy that makes them.

NumPy keeps a bit generator's raw stream the same across its versions (PCG64 seeded through
``SeedSequence``), but not the streams of ``Generator``'s methods (NEP 19): a later NumPy may draw
``integers`` or ``choice`` otherwise from the same raw bits. Every resampling a bundle's figures
depend on (a bootstrap's resamples, rliable's, an audit's sample) draws here instead, from PCG64's
raw 64-bit outputs, by fixed algorithms written out below. They are the algorithms NumPy's
``Generator`` used when repro adopted them (NumPy 1.26 to 2.4 alike), so a bundle made by an
earlier repro through ``numpy.random.default_rng(seed)`` is drawn the same here (the tests hold
each to NumPy's own call); what NumPy does later changes nothing.

- :meth:`Stream.integers`: ``Generator.integers(0, high, size)`` for ``high`` up to 2**32:
  Lemire's multiply-and-reject on the 32-bit stream (each raw output's low half, then its high
  half), as NumPy's ``buffered_bounded_lemire_uint32``; ``high`` 1 draws nothing.
- :meth:`Stream.bounded`: one such draw in ``[0, rng]``.
- :meth:`Stream.choice`: ``Generator.choice(population, size, replace=False)`` (shuffled, as
  by default): Floyd's algorithm, or for a large sample of a large population a tail shuffle.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["Stream"]

_MASK32 = 0xFFFFFFFF
#: 32-bit outputs taken at a time for draws made one by one.
_BLOCK = 1024


class Stream:
    """The draws of ``numpy.random.default_rng(seed)`` made from its raw stream: a PCG64 seeded
    through ``SeedSequence(seed)``, read as 32-bit halves (low, then high) in order."""

    def __init__(self, seed: int) -> None:
        self._bits = np.random.PCG64(seed)
        #: 32-bit outputs drawn from the raw stream and not yet used, in order.
        self._pending: NDArray[np.uint64] = np.empty(0, dtype=np.uint64)

    def _u32(self, count: int) -> NDArray[np.uint64]:
        """The next ``count`` 32-bit outputs (held as uint64, for the products below)."""
        if count > self._pending.size:
            raw = self._bits.random_raw((count - self._pending.size + 1) // 2)
            halves = np.empty(raw.size * 2, dtype=np.uint64)
            halves[0::2] = raw & _MASK32
            halves[1::2] = raw >> np.uint64(32)
            self._pending = np.concatenate([self._pending, halves])
        out, self._pending = self._pending[:count], self._pending[count:]
        return out

    def integers(self, high: int, shape: Any) -> NDArray[np.int64]:
        """``Generator.integers(0, high, size=shape)`` (dtype int64), for ``1 <= high <=
        2**32``: each value in ``[0, high)``, the array filled in C order."""
        count = int(np.prod(shape, dtype=np.int64))
        if not 1 <= high <= 1 << 32:
            raise ValueError(f"high must be from 1 to 2**32, not {high}")
        if high == 1 or count == 0:  # a range of one value draws nothing
            return np.zeros(shape, dtype=np.int64)
        if high == 1 << 32:
            return self._u32(count).astype(np.int64).reshape(shape)
        bound = np.uint64(high)
        threshold = np.uint64(((1 << 32) - high) % high)
        out = np.empty(count, dtype=np.int64)
        filled = 0
        while filled < count:
            # Enough for the outputs wanted, with room for the few a rejection costs; the
            # draws not used stay pending, in order.
            want = count - filled
            drawn = self._u32(want + want // 16 + 8)
            products = drawn * bound
            accepted = (products & np.uint64(_MASK32)) >= threshold
            kept = np.flatnonzero(accepted)[:want]
            used = int(kept[-1]) + 1 if kept.size == want else drawn.size
            out[filled : filled + kept.size] = (products[kept] >> np.uint64(32)).astype(np.int64)
            filled += kept.size
            self._pending = np.concatenate([drawn[used:], self._pending])
        return out.reshape(shape)

    def bounded(self, rng: int) -> int:
        """One draw in ``[0, rng]`` (``rng`` below 2**32 - 1), as NumPy's
        ``random_bounded_uint64(0, rng)``: none for ``rng`` 0."""
        with self._one_by_one() as bounded:
            return bounded(rng)

    @contextlib.contextmanager
    def _one_by_one(self) -> Iterator[Callable[[int], int]]:
        """Single draws in ``[0, rng]`` one after another, each range its own (a shuffle's, a
        Floyd's step's), made in Python from 32-bit outputs taken a block at a time; those not
        used go back to the stream, in order, when the block ends."""
        block: list[int] = []
        at = 0

        def bounded(rng: int) -> int:
            nonlocal block, at
            if rng == 0:
                return 0
            bound = rng + 1
            threshold = ((1 << 32) - bound) % bound
            while True:
                if at == len(block):
                    block, at = self._u32(_BLOCK).tolist(), 0
                product = block[at] * bound
                at += 1
                if product & _MASK32 >= threshold:
                    return product >> 32

        try:
            yield bounded
        finally:
            rest = np.asarray(block[at:], dtype=np.uint64)
            self._pending = np.concatenate([rest, self._pending])

    def choice(self, population: int, size: int) -> list[int]:
        """``Generator.choice(population, size, replace=False)``, shuffled: ``size`` distinct
        values of ``[0, population)`` (a population below 2**32)."""
        if not 0 <= size <= population < 1 << 32:
            raise ValueError(f"cannot take {size} of {population} without replacement")
        with self._one_by_one() as bounded:
            if population > 10_000 and size > population // 50:
                # A tail shuffle of the whole range: its last ``size`` values.
                values = list(range(population))
                for i in reversed(range(max(population - size, 1), population)):
                    j = bounded(i)
                    values[i], values[j] = values[j], values[i]
                return values[population - size :]
            # Floyd's algorithm, then a shuffle of what it drew.
            drawn: list[int] = []
            seen: set[int] = set()
            for j in range(population - size, population):
                value = bounded(j)
                value = j if value in seen else value
                seen.add(value)
                drawn.append(value)
            for i in reversed(range(1, size)):
                j = bounded(i)
                drawn[i], drawn[j] = drawn[j], drawn[i]
            return drawn
