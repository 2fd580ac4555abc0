"""``multi_head_attention_forward``: PyTorch's functional multi-head attention (what ``nn.MultiheadAttention`` runs).

Inputs are (L, N, E) (or unbatched (L, E)). The projections are packed (``in_proj_weight``) or separate
(``q/k/v_proj_weight``, for key/value sizes other than E); ``bias_k``/``bias_v`` append one learned key and
value, ``add_zero_attn`` one zero key and value; masks follow PyTorch's conventions (a bool mask marks the
positions that may NOT be attended, a float mask is added to the scores).
"""

from __future__ import annotations

import math
from typing import Any

from ..._creation import ones, zeros
from ..._dtype import bool_
from ..._errors import ShapeError
from ..._tensor import Tensor
from ...ops import cat, tril, where
from ._basic import softmax
from ._dropout_ops import release_values
from ._misc import dropout, linear
from ._sdpa import scaled_dot_product_attention

__all__ = ["multi_head_attention_forward"]


def _additive(mask: Tensor | None, like: Tensor) -> Tensor | None:
    """A bool mask (True = not allowed) as -inf/0, a float mask as it is, in ``like``'s dtype."""
    if mask is None:
        return None
    if mask.dtype is bool_:
        return where(mask, -math.inf, 0.0).to(like.dtype)
    return mask.to(like.dtype)


def _pad_last(mask: Tensor | None) -> Tensor | None:
    """A mask with one more (allowed) key position."""
    if mask is None:
        return None
    extra = zeros(*mask.shape[:-1], 1, dtype=mask.dtype, device=mask.device)
    return cat([mask, extra], -1)


def _merged(mask: Tensor | None, kpm: Tensor | None, nhls: tuple[int, int, int, int]) -> Tensor | None:
    """The additive attention mask and key-padding mask as one mask broadcasting to (N, h, L, S)."""
    if mask is not None and mask.ndim == 3:
        mask = mask.reshape(nhls)
    if kpm is None:
        return mask
    kpm = kpm.reshape(nhls[0], 1, 1, nhls[3])
    return kpm if mask is None else mask + kpm


def _out_proj(o: Tensor, L: int, N: int, E: int, w: Tensor, b: Tensor | None) -> Tensor:  # noqa: N803
    """The output projection of the heads ``o`` (N, h, L, d), as (L, N, E)."""
    perm = o.permute(2, 0, 1, 3)
    o = perm.reshape(L, N, E)
    if o._view is None:  # a copy: neither node reads the attention's output again, which can go now
        release_values(o, 0)
        release_values(perm, 0)
    return linear(o, w, b)


def multi_head_attention_forward(
    query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
    in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None, bias_v: Tensor | None,
    add_zero_attn: bool, dropout_p: float, out_proj_weight: Tensor, out_proj_bias: Tensor | None,
    training: bool = True, key_padding_mask: Tensor | None = None, need_weights: bool = True,
    attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False, q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None, v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
    static_v: Tensor | None = None, average_attn_weights: bool = True, is_causal: bool = False,
) -> tuple[Tensor, Tensor | None]:  # fmt: skip
    """Attention of ``query`` over ``key``/``value`` with ``num_heads`` heads; returns (output, weights or None)."""
    unbatched = query.ndim == 2
    if unbatched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    L, N, E = query.shape
    if embed_dim_to_check != E:
        raise ShapeError(f"multi_head_attention_forward: expected embed_dim {embed_dim_to_check}, got query "
                         f"{tuple(query.shape)}")  # fmt: skip
    h = num_heads
    d = E // h
    if d * h != E:
        raise ShapeError(f"multi_head_attention_forward: embed_dim {E} is not divisible by num_heads {h}")
    bq = bk = bv = None
    if in_proj_bias is not None:
        bq, bk, bv = in_proj_bias.chunk(3, 0)
    if not use_separate_proj_weight and in_proj_weight is not None and query is key and key is value:
        q, k, v = linear(query, in_proj_weight, in_proj_bias).chunk(3, -1)  # self-attention: one GEMM
    elif use_separate_proj_weight:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise ShapeError("multi_head_attention_forward: use_separate_proj_weight needs q/k/v_proj_weight")
        wq, wk, wv = q_proj_weight, k_proj_weight, v_proj_weight
    else:
        if in_proj_weight is None:
            raise ShapeError("multi_head_attention_forward: in_proj_weight is None without use_separate_proj_weight")
        wq, wk, wv = in_proj_weight.chunk(3, 0)
    if use_separate_proj_weight or not (query is key and key is value):
        q, k, v = linear(query, wq, bq), linear(key, wk, bk), linear(value, wv, bv)
    if is_causal and attn_mask is None:
        S0 = k.shape[0]
        attn_mask = ~tril(ones(L, S0, dtype=bool_, device=query.device))
    mask = _additive(attn_mask, q)
    kpm = _additive(key_padding_mask, q)
    p = dropout_p if training else 0.0
    if not need_weights and bias_k is None and static_k is None and static_v is None and not add_zero_attn:
        S = k.shape[0]  # the heads as (N, h, L, d) views of the projections: no copy
        qh, kh, vh = (t.reshape(t.shape[0], N, h, d).permute(1, 2, 0, 3) for t in (q, k, v))
        o = scaled_dot_product_attention(qh, kh, vh, _merged(mask, kpm, (N, h, L, S)), p, scale=1.0 / math.sqrt(d))
        out = _out_proj(o, L, N, E, out_proj_weight, out_proj_bias)
        return (out.squeeze(1) if unbatched else out), None
    if bias_k is not None and bias_v is not None:
        k = cat([k, bias_k.reshape(1, 1, E).expand(1, N, E)], 0)
        v = cat([v, bias_v.reshape(1, 1, E).expand(1, N, E)], 0)
        mask, kpm = _pad_last(mask), _pad_last(kpm)
    q = q.reshape(L, N * h, d).transpose(0, 1)  # (N*h, L, d)
    k = static_k if static_k is not None else k.reshape(k.shape[0], N * h, d).transpose(0, 1)
    v = static_v if static_v is not None else v.reshape(v.shape[0], N * h, d).transpose(0, 1)
    if add_zero_attn:
        k = cat([k, zeros(N * h, 1, d, dtype=k.dtype, device=k.device)], 1)
        v = cat([v, zeros(N * h, 1, d, dtype=v.dtype, device=v.device)], 1)
        mask, kpm = _pad_last(mask), _pad_last(kpm)
    S = k.shape[1]
    if not need_weights:  # one fused operator over (N, h, L, d): nothing of the scores' size kept but the probabilities
        qh, kh, vh = (t.reshape(N, h, t.shape[1], d) for t in (q, k, v))
        o = scaled_dot_product_attention(qh, kh, vh, _merged(mask, kpm, (N, h, L, S)), p, scale=1.0 / math.sqrt(d))
        out = _out_proj(o, L, N, E, out_proj_weight, out_proj_bias)
        return (out.squeeze(1) if unbatched else out), None
    q = q * (1.0 / math.sqrt(d))
    scores = q @ k.transpose(1, 2)  # (N*h, L, S)
    if mask is not None:
        scores = scores + (mask if mask.ndim == 2 else mask.reshape(N * h, L, S))
    if kpm is not None:
        scores = (scores.reshape(N, h, L, S) + kpm.reshape(N, 1, 1, S)).reshape(N * h, L, S)
    attn = softmax(scores, -1)
    if dropout_p > 0.0 and training:
        attn = dropout(attn, dropout_p, True)
    out = linear((attn @ v).transpose(0, 1).reshape(L * N, E), out_proj_weight, out_proj_bias).reshape(L, N, E)
    weights: Any = None
    if need_weights:
        weights = attn.reshape(N, h, L, S)
        if average_attn_weights:
            weights = weights.mean(1)
        if unbatched:
            weights = weights.squeeze(0)
    return (out.squeeze(1) if unbatched else out), weights
