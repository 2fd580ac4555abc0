"""Samplers that need more than uniform or normal draws (Poisson, binomial): the reference for NumPy and CuPy draws
on the host from Ember's seeded NumPy generator; torch overrides them with its device samplers."""

from __future__ import annotations

from typing import Any

import numpy as np


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
