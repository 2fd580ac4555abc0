"""Samplers that need more than uniform or normal draws (Poisson, binomial, dropout's keep mask): the reference for
NumPy and CuPy draws on the host from Ember's seeded NumPy generator; torch overrides them with its device samplers.

Dropout's keep mask (:func:`keep_mask`) is the one sampler on the hot path of training: a transformer encoder step
draws ~126M of them. It is defined on the generator's raw 64-bit stream, each output split into two 32-bit draws
(low half first), an element kept where its draw is at least ``ceil(p * 2**32)``; the generator advances by
``ceil(n / 2)`` outputs. PCG64 can jump ahead (``advance``), so fixed blocks of the stream are drawn on Ember's
kernel threads, each from a copy of the generator's state advanced to the block's start: the same bits at every
thread count, the same bits as one serial ``random_raw`` (another bit generator than Ember's PCG64 gets
``integers(0, 2**32)`` draws, serially). (The earlier mask, ``rand(shape) >= p``, drew float64
numbers on one thread and converted them: 67 ms for 8.4M elements against 27 ms on one thread, 14-16 on two.)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._kernels_threads import parallel_rows

#: elements of the keep mask a block of the raw stream makes (even: a block starts on a whole 64-bit output)
_KEEP_BLOCK = 1 << 18


def _fill(out: np.ndarray, bits: Any, lo: int, hi: int, thr: int) -> None:
    """Blocks ``lo:hi`` of the keep mask ``out`` (flat), drawn in turn from ``bits`` (at block ``lo``'s start)."""
    n = out.size
    for i in range(lo, hi):
        a, b = i * _KEEP_BLOCK, min(n, (i + 1) * _KEEP_BLOCK)
        draws = bits.random_raw(-(-(b - a) // 2)).view(np.uint32)[: b - a]
        if thr < 2**32:
            np.greater_equal(draws, np.uint32(max(thr, 0)), out=out[a:b])
        else:  # p = 1: nothing kept (the numbers are still drawn)
            out[a:b] = False


def keep_mask(gen: np.random.Generator, shape: tuple[int, ...], p: float) -> np.ndarray:
    """The bool mask of the elements dropout keeps, each with probability ``1 - p`` (to 2**-32), from ``gen``'s
    raw stream (module docstring); ``gen`` advances by ``ceil(n / 2)`` 64-bit outputs."""
    out = np.empty(math.prod(shape), dtype=bool)
    bits = gen.bit_generator
    thr = math.ceil(p * 2**32)  # (p * 2**32 is exact: a power-of-two scaling)
    blocks = -(-out.size // _KEEP_BLOCK)
    if not isinstance(bits, np.random.PCG64):  # not Ember's generator: 32-bit draws, serially
        draws = gen.integers(0, 2**32, size=out.size, dtype=np.uint32)
        return (draws.astype(np.int64) >= thr).reshape(shape)
    start = bits.state

    def part(lo: int, hi: int) -> None:
        copy = np.random.PCG64()
        copy.state = start
        copy.advance(lo * (_KEEP_BLOCK // 2))
        _fill(out, copy, lo, hi, thr)

    parallel_rows(blocks, out.size, part)
    bits.advance(-(-out.size // 2))
    return out.reshape(shape)


class RandomKernels:
    """Mixin of ``Backend`` (``to_numpy``/``from_numpy``/``astype``/``dtype_of`` come from it)."""

    def poisson(self, gen: np.random.Generator, rate: Any) -> Any:
        """Poisson(rate) counts of ``rate``'s shape and dtype."""
        r = self.to_numpy(rate).astype(np.float64)  # type: ignore[attr-defined]
        return self.astype(self.from_numpy(gen.poisson(r).astype(np.float64)), self.dtype_of(rate))  # type: ignore[attr-defined]

    def binomial(self, gen: np.random.Generator, count: Any, prob: Any) -> Any:
        """Binomial(count, prob) draws of ``count``'s shape and dtype."""
        n = self.to_numpy(count).astype(np.int64)  # type: ignore[attr-defined]
        p = np.clip(self.to_numpy(prob).astype(np.float64), 0.0, 1.0)  # type: ignore[attr-defined]
        draws = gen.binomial(n, p).astype(np.float64)
        return self.astype(self.from_numpy(draws), self.dtype_of(count))  # type: ignore[attr-defined]

    def dropout_mask(self, gen: np.random.Generator, shape: tuple[int, ...], p: float, dtype: Any) -> Any:
        """Dropout's bool keep mask of ``shape`` (each element kept with probability ``1 - p``), drawn from ``gen``
        by :func:`keep_mask`. ``dtype`` (the dropped tensor's) is for backends whose draw depends on it (torch)."""
        return self.from_numpy(keep_mask(gen, tuple(shape), p))  # type: ignore[attr-defined]
