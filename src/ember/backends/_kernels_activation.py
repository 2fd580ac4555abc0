"""Activation kernels (reference implementation against ``self.xp``, shared by NumPy and CuPy)."""

from __future__ import annotations

from typing import Any

import numpy as np


class ActivationKernels:
    """The ReLU gradient. Mixed into ``Backend``; torch overrides it with its one-pass kernel."""

    xp: Any

    def relu_backward(self, g: Any, y: Any) -> Any:
        """0 where the ReLU output ``y`` is <= 0, ``g`` elsewhere: PyTorch's ``threshold_backward``, so a NaN
        output passes its gradient and a NaN gradient at a zero output becomes 0 (a select, not a product)."""
        xp = self.xp
        if (
            isinstance(y, np.ndarray)  # (ndarray subclasses too: ember.compile records through one)
            and isinstance(g, np.ndarray)
            and y.ndim
            and g.shape == y.shape
            and g.dtype == y.dtype
        ):
            # the same select without branches: NumPy's ``where`` on a random mask runs several times slower
            # (mispredicted branches; benchmarks/README.md): AND the gradient's bits with
            # a mask that is all ones where the gradient passes and 0 where it does not
            bits = np.dtype(f"i{g.dtype.itemsize}")
            keep = np.less_equal(y, 0).astype(bits)
            keep -= 1  # 0 where y <= 0, -1 (every bit set) elsewhere, NaN included
            np.bitwise_and(g.view(bits), keep, out=keep)
            return keep.view(g.dtype)
        return xp.where(y <= 0, 0, g)
