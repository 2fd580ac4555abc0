"""Normalisation kernels (reference implementation against ``self.xp``, shared by NumPy and CuPy)."""

from __future__ import annotations

from typing import Any


class NormKernels:
    """Batch norm with fixed statistics (evaluation mode). Mixed into ``Backend``; torch overrides it."""

    xp: Any

    def batch_norm_eval(self, x: Any, mean: Any, var: Any, weight: Any, bias: Any, eps: float) -> Any:
        """``(x - mean) / sqrt(var + eps) * weight + bias`` per channel (dim 1), all arrays of one dtype.

        The per-channel statistics fold into one scale and shift first (channel-sized work), so the
        input is read once and the output written in two passes instead of four.
        """
        xp = self.xp
        scale = 1.0 / xp.sqrt(var + eps)
        if weight is not None:
            scale = scale * weight
        shift = -mean * scale
        if bias is not None:
            shift = shift + bias
        shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        y = x * xp.reshape(scale, shape)
        y += xp.reshape(shift, shape)
        return y
