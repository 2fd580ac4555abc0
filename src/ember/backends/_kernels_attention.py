"""Attention and layer-norm kernels (reference implementation against ``self.xp``, shared by NumPy and CuPy).

``attention`` is ``softmax(q k^T * scale + mask) v`` with optional dropout on the probabilities, written to
keep few arrays of the scores' size: the scores become the probabilities in place, and backward keeps only
them (and the dropout's bool mask). A row whose every key is masked attends to nothing (zeros, zero
gradients), as PyTorch's ``scaled_dot_product_attention``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _kernels_fused as fused

_vecdot = getattr(np, "vecdot", None)  # NumPy >= 2


def _dropout_scale(p: float) -> float:
    return 0.0 if p >= 1.0 else 1.0 / (1.0 - p)


class AttentionKernels:
    """Scaled dot-product attention and layer norm, forward and backward. Mixed into ``Backend``; torch
    overrides them with its native kernels (``torch/attention_kernels.py``)."""

    xp: Any

    def _rowdot(self, a: Any, b: Any) -> Any:
        """``sum(a * b, -1, keepdims=True)`` without an ``a``-sized temporary where NumPy allows."""
        if self.xp is np and _vecdot is not None:
            return _vecdot(a, b)[..., None]
        return self.xp.sum(a * b, axis=-1, keepdims=True)

    # -- attention -------------------------------------------------------------------------------
    def attention_mask(self, mask: Any, causal: bool, shape: tuple[int, ...], dtype: Any) -> Any:
        """The additive mask (0 where attended, -inf where not) of a bool ``mask`` (True = attend), a float
        one (returned as it is) and/or ``causal`` (key j visible to query i when j <= i); None for neither."""
        xp = self.xp
        zero, ninf = xp.asarray(0.0, dtype=dtype), xp.asarray(-math.inf, dtype=dtype)
        if mask is not None and mask.dtype == xp.bool_:
            mask = xp.where(mask, zero, ninf)
        if causal:
            tri = xp.where(xp.tril(xp.ones(shape, dtype=xp.bool_)), zero, ninf)
            mask = tri if mask is None else mask + tri
        return mask

    def attention(
        self, q: Any, k: Any, v: Any, mask: Any, causal: bool, scale: float, keep: Any, p: float,
        mask_grad: bool = False,
    ) -> tuple[Any, Any]:  # fmt: skip
        """``(out, saved)``: ``out = dropout(softmax(q k^T * scale + mask)) v`` over the last two dims (batch
        dims broadcast), ``mask`` bool (True = attend) or additive float, ``keep`` the dropout's bool mask
        (or None) and ``p`` its probability; ``saved`` is what ``attention_backward`` needs (``mask_grad``: a
        gradient of the mask will be asked for)."""
        xp = self.xp
        if xp is np and fused.attention_splits(q, k, v, None, keep):
            add = self.attention_mask(mask, causal, (q.shape[-2], k.shape[-2]), q.dtype)
            if fused.attention_splits(q, k, v, add, keep):
                out, probs = fused.attention(q, k, v, add, scale, keep, _dropout_scale(p))
                return out, (probs, keep)
        s = xp.matmul(q, xp.swapaxes(k, -1, -2))
        s *= scale
        add = self.attention_mask(mask, causal, s.shape[-2:], s.dtype)
        if add is not None:
            s += add
        m = xp.max(s, axis=-1, keepdims=True)
        if add is not None:  # a row with every key masked: exp(-inf - finite) = 0, and 0 / tiny = 0
            m = xp.maximum(m, xp.finfo(s.dtype).min)
        s -= m
        xp.exp(s, out=s)
        d = xp.sum(s, axis=-1, keepdims=True)
        if add is not None:
            d = xp.maximum(d, xp.finfo(s.dtype).tiny)
        s /= d
        if keep is None:
            return xp.matmul(s, v), (s, None)
        pd = s * keep
        pd *= _dropout_scale(p)
        return xp.matmul(pd, v), (s, keep)

    def attention_backward(
        self, g: Any, q: Any, k: Any, v: Any, saved: Any, scale: float, p: float, need: tuple[bool, ...]
    ) -> tuple[Any, Any, Any, Any]:
        """The gradients ``(gq, gk, gv, gscores)`` of ``attention`` (None where ``need`` is False; ``need`` has
        four flags: q, k, v and the additive mask, whose gradient is that of the scores). Shapes are those of the
        broadcast batch: the caller sums them down to its inputs'."""
        xp = self.xp
        probs, keep = saved
        c = _dropout_scale(p)
        if xp is np and fused.attention_splits(q, k, v, None, keep) and g.dtype == q.dtype and probs.dtype == q.dtype:
            return fused.attention_backward(g, q, k, v, probs, keep, scale, c, tuple(need))
        gv = None
        if need[2]:
            pd = probs if keep is None else probs * keep
            gv = xp.matmul(xp.swapaxes(pd, -1, -2), g)
            if keep is not None:
                gv *= c
            del pd
        if not (need[0] or need[1] or need[3]):
            return None, None, gv, None
        ds = xp.matmul(g, xp.swapaxes(v, -1, -2))  # the gradient of the (dropped-out) probabilities
        if keep is not None:
            ds *= keep
            ds *= c
        ds -= self._rowdot(ds, probs)  # softmax backward: probs * (dp - sum(dp * probs))
        ds *= probs
        gq = gk = None
        if need[0]:
            gq = xp.matmul(ds, k)
            gq *= scale
        if need[1]:
            gk = xp.matmul(xp.swapaxes(ds, -1, -2), q)
            gk *= scale
        return gq, gk, gv, (ds if need[3] else None)  # the mask was added unscaled: its gradient is the scores'

    # -- layer norm ------------------------------------------------------------------------------
    def layer_norm(self, x: Any, ns: tuple[int, ...], weight: Any, bias: Any, eps: float) -> tuple[Any, Any]:
        """``(y, saved)``: ``y = (x - mean) * rstd * weight + bias`` with the statistics over the trailing dims
        ``ns`` (``weight``/``bias``: None or of shape ``ns``); ``saved`` = (mean, rstd), one value per row."""
        xp = self.xp
        n = math.prod(ns)
        if xp is np and _fused_rows(x, weight, bias):
            y, mean, rstd = fused.layer_norm(x, n, weight, bias, eps)
            return y, (mean, rstd)
        x2 = xp.reshape(x, (-1, n))
        mean = xp.mean(x2, axis=-1, keepdims=True)
        y = x2 - mean
        rstd = 1.0 / xp.sqrt(self._rowdot(y, y) / n + eps)
        y *= rstd
        if weight is not None:
            y *= xp.reshape(weight, (n,))
        if bias is not None:
            y += xp.reshape(bias, (n,))
        return xp.reshape(y, x.shape), (mean, rstd)

    def layer_norm_backward(
        self, g: Any, x: Any, ns: tuple[int, ...], saved: Any, weight: Any, need: tuple[bool, bool, bool]
    ) -> tuple[Any, Any, Any]:
        """The gradients ``(gx, gweight, gbias)`` of ``layer_norm`` (None where ``need`` is False), the
        normalised input recomputed from ``x`` and the saved statistics."""
        xp = self.xp
        n = math.prod(ns)
        mean, rstd = saved
        if xp is np and _fused_rows(x, weight, None, g, mean):
            gx, gw, gb = fused.layer_norm_backward(g, x, n, mean, rstd, weight, need[0], need[1], need[2])
            return gx, (None if gw is None else xp.reshape(gw, ns)), (None if gb is None else xp.reshape(gb, ns))
        g2 = xp.reshape(g, (-1, n))
        xhat = xp.reshape(x, (-1, n)) - mean
        xhat *= rstd
        gw = gb = gx = None
        if need[1] and weight is not None:
            gw = xp.reshape(xp.sum(g2 * xhat, axis=0), ns)
        if need[2]:
            gb = xp.reshape(xp.sum(g2, axis=0), ns)
        if need[0]:
            gxh = g2 * xp.reshape(weight, (n,)) if weight is not None else xp.array(g2, copy=True)
            a = xp.mean(gxh, axis=-1, keepdims=True)
            b = self._rowdot(gxh, xhat) / n
            xhat *= b
            xhat += a
            gxh -= xhat
            gxh *= rstd
            gx = xp.reshape(gxh, x.shape)
        return gx, gw, gb


def _fused_rows(x: Any, *others: Any) -> bool:
    """Whether the NumPy row kernels (``_kernels_fused``) serve a layer norm of ``x``: a non-empty float32/64
    NumPy array, and the other arrays given None or of its dtype."""
    if not isinstance(x, np.ndarray) or x.dtype not in (np.float32, np.float64) or x.size == 0:
        return False
    return all(a is None or (isinstance(a, np.ndarray) and a.dtype == x.dtype) for a in others)
