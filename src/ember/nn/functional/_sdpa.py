"""``scaled_dot_product_attention`` as one operator: the backend's attention kernel forward and backward.

The node keeps the inputs, the probabilities and the dropout's bool mask (on torch without dropout: the output
and one log-sum-exp per query), never the scores, the masked scores or the dropped-out probabilities. Dropout
draws its bool mask of the scores' shape as ``F.dropout`` does (``_dropout_ops.keep_mask``), so the composite path
draws the same numbers.
"""

from __future__ import annotations

import math
from typing import Any

from ..._creation import zeros
from ..._dtype import bool_, float32
from ..._errors import DTypeError, ShapeError, ValueRangeError
from ..._tensor import Tensor
from ...autograd._autocast import autocast_op
from ...autograd._function import Op
from ...autograd._grad_mode import STATE
from ...ops._blas import matmul
from ...ops._indexing import where
from ...ops._indexing_view import _transpose, sum_to
from ...ops._other_shape import repeat_interleave
from ...ops._reduction import sum as _sum
from ...ops._util import broadcast_shapes, same_dtype, sum_to_array
from ._basic import softmax
from ._dropout_ops import keep_mask

__all__ = ["scaled_dot_product_attention"]


class ScaledDotProductAttention(Op):
    """``dropout(softmax(q k^T * scale + mask)) v``: inputs ``(q, k, v, mask, keep, causal, scale, p,
    mask_grad)``; ``mask`` None, bool (True = attend) or additive float (differentiable), ``keep`` the
    dropout's bool mask or None."""

    def value_needed(self, i: int) -> bool:  # q, k and v; the mask's value is never read back
        return i < 3

    def forward(
        self, q: Any, k: Any, v: Any, mask: Any, keep: Any, causal: bool, scale: float, p: float, mask_grad: bool
    ) -> Any:
        self.scale, self.p = scale, p
        out, self.saved = self.backend.attention(q, k, v, mask, causal, scale, keep, p, mask_grad)
        return out

    def backward_arrays(self, g: Any) -> tuple[Any, ...]:
        q, k, v, mask = self.inputs[:4]  # type: ignore[index]
        need = (self._req(0), self._req(1), self._req(2), self._req(3))
        grads = self.backend.attention_backward(g, q._data, k._data, v._data, self.saved, self.scale, self.p, need)
        shapes = (q.shape, k.shape, v.shape, None if mask is None else mask.shape)
        out = tuple(None if a is None else sum_to_array(a, s) for a, s in zip(grads, shapes, strict=True))
        return (*out, None, None, None, None, None)

    def backward(self, g: Tensor) -> tuple[Any, ...]:
        if not STATE.enabled:  # first order (anomaly mode): the kernels
            out = self.backward_arrays(g._data)
            return tuple(None if a is None else Tensor._make(a, self.backend) for a in out)
        # create_graph: the same gradients as a graph of the inputs (a fully masked row gives NaN here)
        q, k, v, mask, keep, causal, scale, p, _ = self.inputs  # type: ignore[misc]
        s = matmul(q, _transpose(k, -1, -2)) * scale
        add = mask
        if mask is None or mask.dtype is bool_ or causal:
            arr = self.backend.attention_mask(
                None if mask is None else mask._data, causal, tuple(s.shape[-2:]), s._data.dtype
            )
            add = None if arr is None else Tensor._make(arr, self.backend)
            if mask is not None and mask.dtype is not bool_:
                add = mask + add
        probs = softmax(s if add is None else s + add, -1)
        c = 0.0 if p >= 1.0 else 1.0 / (1.0 - p)
        pd = probs if keep is None else probs * keep * c
        dp = matmul(g, _transpose(v, -1, -2))
        if keep is not None:
            dp = dp * keep * c
        ds = probs * (dp - _sum(dp * probs, -1, keepdim=True))
        grads = (
            sum_to(matmul(ds, k) * scale, q.shape) if self._req(0) else None,
            sum_to(matmul(_transpose(ds, -1, -2), q) * scale, k.shape) if self._req(1) else None,
            sum_to(matmul(_transpose(pd, -1, -2), g), v.shape) if self._req(2) else None,
            sum_to(ds, mask.shape) if self._req(3) else None,
        )
        return (*grads, None, None, None, None, None)


def _fusable(q: Any, k: Any, v: Any, mask: Any) -> bool:
    ts = (q, k, v)
    if not all(isinstance(t, Tensor) and t.ndim >= 2 and t.dtype.is_floating_point for t in ts):
        return False
    return q.dtype is k.dtype is v.dtype and (mask is None or isinstance(mask, Tensor))


def _composite(q: Tensor, k: Tensor, v: Tensor, mask: Any, p: float, causal: bool, s: float) -> Tensor:
    """The operator as tensor operations (mixed dtypes, non-float inputs)."""
    from ._misc import dropout

    scores = matmul(q, _transpose(k, -1, -2)) * s
    L, S = q.shape[-2], k.shape[-2]
    if causal:
        mask = Tensor._make(q._backend.attention_mask(None, True, (L, S), scores._data.dtype), q._backend)
    if mask is not None:
        scores = where(mask, scores, -math.inf) if mask.dtype is bool_ else scores + mask
    attn = softmax(scores, -1)
    if p > 0.0:
        attn = dropout(attn, p, True)
    return matmul(attn, v)


@autocast_op("scaled_dot_product_attention")
def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """``softmax(q k^T * scale + mask) v``; a bool mask marks positions that may be attended to. A query whose
    every key is masked gets zeros (and zero gradients), as in PyTorch."""
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        hq, hk = query.shape[-3], key.shape[-3]
        if hk != value.shape[-3] or hq % hk:
            raise ShapeError(
                f"scaled_dot_product_attention: enable_gqa needs query heads ({hq}) to be a multiple of key/value "
                f"heads (key {hk}, value {value.shape[-3]})"
            )
        key = repeat_interleave(key, hq // hk, -3)
        value = repeat_interleave(value, hq // hk, -3)
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ShapeError(
            f"scaled_dot_product_attention: query {tuple(query.shape)}, key {tuple(key.shape)}, value "
            f"{tuple(value.shape)} do not match"
        )
    if is_causal and attn_mask is not None:
        raise ValueRangeError("scaled_dot_product_attention: give attn_mask or is_causal, not both")
    same_dtype("scaled_dot_product_attention", "query, key and value", query, key, value)
    if attn_mask is not None and attn_mask.dtype not in (bool_, float32, query.dtype):
        raise DTypeError(f"scaled_dot_product_attention: attn_mask must be bool, float32 or the query's dtype "
                         f"{query.dtype}, got {attn_mask.dtype}")  # fmt: skip
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueRangeError(f"scaled_dot_product_attention: dropout_p must be in [0, 1], got {dropout_p}")
    s = scale if scale is not None else 1.0 / math.sqrt(query.shape[-1])
    if not _fusable(query, key, value, attn_mask):
        return _composite(query, key, value, attn_mask, dropout_p, is_causal, s)
    if attn_mask is not None and attn_mask.dtype is not bool_ and attn_mask.dtype is not query.dtype:
        attn_mask = attn_mask.to(query.dtype)
    L, S = query.shape[-2], key.shape[-2]
    shapes = [tuple(query.shape[:-2]) + (L, S), tuple(key.shape[:-2]) + (L, S)]
    shape = broadcast_shapes(
        *shapes, *([attn_mask.shape] if attn_mask is not None else []), op="scaled_dot_product_attention"
    )  # the scores' (the dropout mask's)
    keep = None
    if dropout_p >= 1.0:  # everything dropped (no numbers drawn, as dropout's p=1)
        keep = zeros(*shape, dtype=bool_, device=query.device)
    elif dropout_p > 0.0:
        keep = keep_mask(query, dropout_p, shape=shape)
    mask_grad = attn_mask is not None and attn_mask.requires_grad and STATE.enabled
    return ScaledDotProductAttention.apply(
        query, key, value, attn_mask, keep, bool(is_causal), float(s), float(dropout_p), mask_grad
    )
