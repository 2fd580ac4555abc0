"""Normalisation kernels (reference implementation against ``self.xp``, shared by NumPy and CuPy)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._kernels_threads import parallel_blocks

_vecdot: Any = getattr(np, "vecdot", None)  # NumPy >= 2
#: NumPy's batch norm works on blocks of channels of about this many elements (every batch entry's rows of those
#: channels: each pass over a block runs in the cache); the blocks are fixed, so the bits do not depend on threads
_BN_BLOCK = 1 << 17


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

        ``y = (x - mean) * (rstd * weight) + bias`` in four passes over the input: the mean, the centring (the
        centred input is what backward keeps, with ``rstd``: ``xhat = (x - mean) * rstd`` is never written), the
        variance as per-channel dot products and the scale and shift into the output. Parameters of another dtype
        than ``x`` (float32 ones with a float16 ``x``: mixed precision) make it compute in theirs; ``y`` has
        ``x``'s dtype, the statistics the parameters'.
        """
        xp = self.xp
        if _blocked(xp, x, params_dtype(x, weight, bias, running)):
            y, mean, var, saved = _bn_train_blocks(x, weight, bias, eps)
            if running is not None:
                _update_running(running, mean, var, x.size // x.shape[1])
            return y, mean, var, saved
        out_dtype = x.dtype
        x = x.astype(params_dtype(x, weight, bias, running), copy=False)
        c = x.shape[1]
        shape = (1, c) + (1,) * (x.ndim - 2)
        mean = xp.mean(x, axis=(0, *range(2, x.ndim)))
        xc = x - xp.reshape(mean, shape)
        var = self._channel_dot(xc, xc) / (x.size // c)
        rstd = 1.0 / xp.sqrt(var + eps)
        y = xc * xp.reshape(rstd if weight is None else rstd * weight, shape)
        if bias is not None:
            y += xp.reshape(bias, shape)
        if running is not None:
            _update_running(running, mean, var, x.size // c)
        return y.astype(out_dtype, copy=False), mean, var, (xc, rstd)

    def batch_norm_train_backward(
        self, g: Any, saved: Any, weight: Any, need_x: bool, need_w: bool, need_b: bool
    ) -> tuple[Any, Any, Any]:
        """The gradients ``(gx, gw, gb)`` (``None`` where not needed) of ``batch_norm_train``'s output:
        ``gb = sum g``, ``gw = sum g * xhat`` and ``gx = weight * rstd * (g - gb / n - xhat * gw / n)``, from the
        centred input ``xc`` (``xhat = xc * rstd``) that the forward kept."""
        xp = self.xp
        xc, rstd = saved
        if g.dtype == xc.dtype and _blocked(xp, xc, xc.dtype):
            gx, gw, gb = _bn_backward_blocks(g, xc, rstd, weight, need_x)
            return gx, (gw if need_w else None), (gb if need_b else None)
        out_dtype = g.dtype
        g = g.astype(xc.dtype, copy=False)  # (mixed precision: the gradients in float32, gx in g's dtype)
        c = xc.shape[1]
        shape = (1, c) + (1,) * (xc.ndim - 2)
        n = xc.size // c
        gb = xp.sum(g, axis=(0, *range(2, g.ndim)))
        gw = self._channel_dot(g, xc) * rstd
        gx = None
        if need_x:
            k = rstd if weight is None else rstd * weight
            gx = xc * xp.reshape(gw * rstd / n, shape)
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


def _update_running(running: tuple[Any, Any, float], mean: Any, var: Any, n: int) -> None:
    """PyTorch's rule, in place: ``running = (1 - momentum) * running + momentum * batch`` (unbiased variance)."""
    rm, rv, momentum = running
    rm *= 1 - momentum
    rm += mean * momentum
    rv *= 1 - momentum
    rv += var * (n / max(n - 1, 1)) * momentum


def _blocked(xp: Any, x: Any, dtype: Any) -> bool:
    """Whether batch norm takes NumPy's blocked kernels: float32/float64 ``x`` of the parameters' dtype, with a
    spatial dim and some elements (the general passes serve the rest)."""
    if xp is not np or _vecdot is None or x.ndim < 3 or x.size == 0 or x.dtype != dtype:
        return False
    return bool(x.dtype.kind == "f" and x.dtype.itemsize >= 4)


def _blocks_of(n: int, c: int, hw: int) -> list[tuple[int, int]]:
    cb = max(1, _BN_BLOCK // (n * hw))
    return [(c0, min(c, c0 + cb)) for c0 in range(0, c, cb)]


def _per_channel(a: Any, n: int, hw: int) -> Any:
    """A per-channel vector to broadcast over (N, cc, HW): as whole rows (cc, HW) for a batch of several (ufuncs
    with a row operand run ~1.5x faster than with a per-row scalar), else (1, cc, 1)."""
    if n < 4:
        return a.reshape(1, -1, 1)
    return np.repeat(a, hw).reshape(-1, hw)


def _bn_train_blocks(x: Any, weight: Any, bias: Any, eps: float) -> tuple[Any, Any, Any, Any]:
    """``batch_norm_train`` on NumPy by blocks of channels (``_BN_BLOCK``): each block's statistics (per-row sums,
    then over the batch; the variance by dot products of the centred rows) and scale and shift run while the block
    is in the cache, the blocks on the kernel threads. 8x64x32x32 float32, one thread, in-process A/B: forward 0.97
    -> 0.75 ms, backward 0.94 -> 0.70 (blocks of 8 channels; 1-2 channels lost to the calls' overhead, one block of
    all 64 to the memory passes); keeping the centred rows rather than ``xhat`` (one in-place pass fewer): forward
    0.72 -> 0.65 ms on one thread, 0.47 -> 0.42 on two, backward unchanged. (Row sums as dot products with a row of
    ones ran faster on one thread, 0.65 -> 0.57, but slower on two, 0.42 -> 0.43, backward 0.44 -> 0.49.)"""
    n, c = x.shape[:2]
    hw = x.size // (n * c)
    m = n * hw
    x3 = np.ascontiguousarray(x).reshape(n, c, hw)
    xc, y = np.empty_like(x3), np.empty_like(x3)
    mean, var, rstd = (np.empty(c, dtype=x.dtype) for _ in range(3))
    blocks = _blocks_of(n, c, hw)

    def part(i0: int, i1: int) -> None:
        for c0, c1 in blocks[i0:i1]:
            xs, xcs, ys = x3[:, c0:c1], xc[:, c0:c1], y[:, c0:c1]
            mu = np.add.reduce(xs, axis=2).sum(0) / m
            np.subtract(xs, _per_channel(mu, n, hw), out=xcs)
            v = _vecdot(xcs, xcs).sum(0) / m
            r = 1.0 / np.sqrt(v + eps)
            np.multiply(xcs, _per_channel(r if weight is None else r * weight[c0:c1], n, hw), out=ys)
            if bias is not None:
                ys += _per_channel(bias[c0:c1], n, hw)
            mean[c0:c1], var[c0:c1], rstd[c0:c1] = mu, v, r

    parallel_blocks(np, len(blocks), x.size, part)
    return y.reshape(x.shape), mean, var, (xc.reshape(x.shape), rstd)


def _bn_backward_blocks(g: Any, xc: Any, rstd: Any, weight: Any, need_x: bool) -> tuple[Any, Any, Any]:
    """``batch_norm_train_backward`` on NumPy by blocks of channels (as ``_bn_train_blocks``), from the centred
    input ``xc``: ``(gx or None, gw, gb)``."""
    n, c = xc.shape[:2]
    hw = xc.size // (n * c)
    m = n * hw
    g3, xc3 = np.ascontiguousarray(g).reshape(n, c, hw), xc.reshape(n, c, hw)
    gx = np.empty_like(g3) if need_x else None
    gw, gb = np.empty(c, dtype=g.dtype), np.empty(c, dtype=g.dtype)
    k = rstd if weight is None else rstd * weight
    blocks = _blocks_of(n, c, hw)

    def part(i0: int, i1: int) -> None:
        for c0, c1 in blocks[i0:i1]:
            gs, xcs, r = g3[:, c0:c1], xc3[:, c0:c1], rstd[c0:c1]
            sb, sw = np.add.reduce(gs, axis=2).sum(0), _vecdot(gs, xcs).sum(0) * r
            gb[c0:c1], gw[c0:c1] = sb, sw
            if gx is not None:  # gx = k (g - gb / m - xhat gw / m), xhat = xc rstd
                o = gx[:, c0:c1]
                np.multiply(xcs, _per_channel(sw * r / m, n, hw), out=o)
                o += _per_channel(sb / m, n, hw)
                np.subtract(gs, o, out=o)
                o *= _per_channel(k[c0:c1], n, hw)

    parallel_blocks(np, len(blocks), g3.size, part)
    return (None if gx is None else gx.reshape(xc.shape)), gw, gb
