"""Normalisation kernels (reference implementation against ``self.xp``, shared by NumPy and CuPy)."""

from __future__ import annotations

from typing import Any

import numpy as np

_vecdot = getattr(np, "vecdot", None)  # NumPy >= 2


def params_dtype(x: Any, weight: Any, bias: Any, running: tuple[Any, Any, float] | None) -> Any:
    """The dtype training-mode batch norm computes in: its parameters' and statistics' (float32 ones with a
    float16/bfloat16 ``x``: mixed precision), ``x``'s when it has none."""
    return next((a for a in (weight, bias, *(running or ())[:2]) if a is not None), x).dtype


class NormKernels:
    """Batch norm, with fixed statistics (evaluation) and over the batch (training, forward and backward).
    Mixed into ``Backend``; torch overrides them with its native kernels."""

    xp: Any

    def _channel_dot(self, a: Any, b: Any) -> Any:
        """Per channel (dim 1) ``sum(a * b)`` over every other dim, without an (N, C, ...) temporary."""
        xp = self.xp
        if xp is np and _vecdot is not None and a.flags.c_contiguous and b.flags.c_contiguous:
            n, c = a.shape[:2]
            return _vecdot(a.reshape(n, c, -1), b.reshape(n, c, -1)).sum(0)  # BLAS dots: fast and accurate
        return xp.sum(a * b, axis=(0, *range(2, a.ndim)))

    def batch_norm_train(
        self, x: Any, weight: Any, bias: Any, eps: float, running: tuple[Any, Any, float] | None = None
    ) -> tuple[Any, Any, Any, Any]:
        """Batch norm over the batch statistics: ``(y, mean, var, saved)``, with the per-channel batch mean
        and biased variance (for the running statistics) and what ``batch_norm_train_backward`` needs.
        ``running = (running_mean, running_var, momentum)`` (arrays of ``x``'s dtype) are updated in place,
        PyTorch's rule: ``running = (1 - momentum) * running + momentum * batch`` with the unbiased variance.

        ``y = (x - mean) * rstd * weight + bias`` in five passes over the input: the mean, the centring,
        the variance as per-channel dot products, the normalisation in place (kept for backward) and the
        affine part into the output. Parameters of another dtype than ``x`` (float32 ones with a float16 ``x``:
        mixed precision) make it compute in theirs; ``y`` has ``x``'s dtype, the statistics the parameters'.
        """
        xp = self.xp
        out_dtype = x.dtype
        x = x.astype(params_dtype(x, weight, bias, running), copy=False)
        c = x.shape[1]
        shape = (1, c) + (1,) * (x.ndim - 2)
        mean = xp.mean(x, axis=(0, *range(2, x.ndim)))
        xhat = x - xp.reshape(mean, shape)
        var = self._channel_dot(xhat, xhat) / (x.size // c)
        rstd = 1.0 / xp.sqrt(var + eps)
        xhat *= xp.reshape(rstd, shape)
        if weight is None:
            y = xhat + xp.reshape(bias, shape) if bias is not None else xp.array(xhat, copy=True)
        else:
            y = xhat * xp.reshape(weight, shape)
            if bias is not None:
                y += xp.reshape(bias, shape)
        if running is not None:
            rm, rv, momentum = running
            n = x.size // c
            rm *= 1 - momentum
            rm += mean * momentum
            rv *= 1 - momentum
            rv += var * (n / max(n - 1, 1)) * momentum
        return y.astype(out_dtype, copy=False), mean, var, (xhat, rstd)

    def batch_norm_train_backward(
        self, g: Any, saved: Any, weight: Any, need_x: bool, need_w: bool, need_b: bool
    ) -> tuple[Any, Any, Any]:
        """The gradients ``(gx, gw, gb)`` (``None`` where not needed) of ``batch_norm_train``'s output:
        ``gb = sum g``, ``gw = sum g * xhat`` and ``gx = weight * rstd * (g - gb / n - xhat * gw / n)``."""
        xp = self.xp
        xhat, rstd = saved
        out_dtype = g.dtype
        g = g.astype(xhat.dtype, copy=False)  # (mixed precision: the gradients in float32, gx in g's dtype)
        c = xhat.shape[1]
        shape = (1, c) + (1,) * (xhat.ndim - 2)
        n = xhat.size // c
        gb = xp.sum(g, axis=(0, *range(2, g.ndim)))
        gw = self._channel_dot(g, xhat)
        gx = None
        if need_x:
            k = rstd if weight is None else rstd * weight
            gx = xhat * xp.reshape(gw / n, shape)
            gx += xp.reshape(gb / n, shape)
            xp.subtract(g, gx, out=gx)
            gx *= xp.reshape(k, shape)
            gx = gx.astype(out_dtype, copy=False)
        return gx, (gw if need_w else None), (gb if need_b else None)

    def batch_norm_eval(self, x: Any, mean: Any, var: Any, weight: Any, bias: Any, eps: float) -> Any:
        """``(x - mean) / sqrt(var + eps) * weight + bias`` per channel (dim 1), the per-channel arrays of
        ``x``'s dtype or (mixed precision: float16 ``x``) all float32, the output in ``x``'s dtype.

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
        return y.astype(x.dtype, copy=False)
