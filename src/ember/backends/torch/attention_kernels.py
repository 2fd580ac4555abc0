"""Torch's native kernels for attention and layer norm (the methods of ``_kernels_attention.py``).

Attention without dropout on 4-d (batch, heads, length, dim) inputs runs torch's fused flash-attention kernels
(``_scaled_dot_product_flash_attention_for_cpu`` and its backward on the CPU: nothing of the scores' size is
kept, only the output and one log-sum-exp per query); otherwise the scores are made once, turned into the
probabilities by one softmax kernel (``_safe_softmax`` when masked: a fully masked row gives zeros, as
PyTorch's ``scaled_dot_product_attention``), and backward uses ``_softmax_backward_data``.
"""

from __future__ import annotations

import math
from typing import Any

from .kernels import _no_grad, _torch


def _flash_ok(q: Any, k: Any, v: Any, mask: Any, keep: Any, mask_grad: bool) -> bool:
    if keep is not None or mask_grad or q.device.type != "cpu":
        return False
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4 or q.shape[:2] != k.shape[:2] or k.shape[:2] != v.shape[:2]:
        return False
    if q.shape[-1] != v.shape[-1] or 0 in q.shape or 0 in k.shape:
        return False
    return mask is None or mask.ndim in (2, 4)


class TorchAttentionKernels:
    """Native torch overrides of ``AttentionKernels``. Mix in before ``Backend``."""

    @_no_grad
    def attention_mask(self, mask: Any, causal: bool, shape: tuple[int, ...], dtype: Any) -> Any:
        torch = _torch()
        if mask is not None and mask.dtype == torch.bool:
            mask = torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill_(~mask, -math.inf)
        if causal:
            tri = torch.ones(shape, dtype=torch.bool, device=self.tdevice).triu_(1)  # type: ignore[attr-defined]
            tri = torch.zeros(shape, dtype=dtype, device=tri.device).masked_fill_(tri, -math.inf)
            mask = tri if mask is None else mask + tri
        return mask

    @_no_grad
    def attention(
        self, q: Any, k: Any, v: Any, mask: Any, causal: bool, scale: float, keep: Any, p: float,
        mask_grad: bool = False,
    ) -> tuple[Any, Any]:  # fmt: skip
        torch = _torch()
        if _flash_ok(q, k, v, mask, keep, mask_grad):
            if mask is not None and mask.dtype == torch.bool:
                mask = self.attention_mask(mask, False, (), q.dtype)
            out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                q, k, v, 0.0, causal, attn_mask=mask, scale=scale
            )
            return out, ("flash", out, lse, mask, causal)
        s = torch.matmul(q, k.transpose(-1, -2))
        s.mul_(scale)
        add = self.attention_mask(mask, causal, tuple(s.shape[-2:]), s.dtype)
        if add is not None:
            s.add_(add)
            probs = torch.ops.aten._safe_softmax(s, -1)
        else:
            probs = torch.softmax(s, -1)
        del s
        if keep is None:
            return torch.matmul(probs, v), ("math", probs, None)
        c = 0.0 if p >= 1.0 else 1.0 / (1.0 - p)
        return torch.matmul(torch.mul(probs, keep).mul_(c), v), ("math", probs, keep)

    @_no_grad
    def attention_backward(
        self, g: Any, q: Any, k: Any, v: Any, saved: Any, scale: float, p: float, need: tuple[bool, ...]
    ) -> tuple[Any, Any, Any, Any]:
        torch = _torch()
        if saved[0] == "flash":
            _, out, lse, mask, causal = saved
            gq, gk, gv = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
                g.contiguous(), q, k, v, out, lse, 0.0, causal, attn_mask=mask, scale=scale
            )
            return (gq if need[0] else None), (gk if need[1] else None), (gv if need[2] else None), None
        _, probs, keep = saved
        c = 0.0 if p >= 1.0 else 1.0 / (1.0 - p)
        gv = None
        if need[2]:
            pd = probs if keep is None else torch.mul(probs, keep).mul_(c)
            gv = torch.matmul(pd.transpose(-1, -2), g)
            del pd
        if not (need[0] or need[1] or need[3]):
            return None, None, gv, None
        dp = torch.matmul(g, v.transpose(-1, -2))
        if keep is not None:
            dp.mul_(keep).mul_(c)
        ds = torch._softmax_backward_data(dp, probs, -1, probs.dtype)
        del dp
        gq = torch.matmul(ds, k).mul_(scale) if need[0] else None
        gk = torch.matmul(ds.transpose(-1, -2), q).mul_(scale) if need[1] else None
        return gq, gk, gv, (ds if need[3] else None)

    @_no_grad
    def layer_norm(self, x: Any, ns: tuple[int, ...], weight: Any, bias: Any, eps: float) -> tuple[Any, Any]:
        y, mean, rstd = _torch().ops.aten.native_layer_norm(x, list(ns), weight, bias, eps)
        return y, (mean, rstd, bias)

    @_no_grad
    def layer_norm_backward(
        self, g: Any, x: Any, ns: tuple[int, ...], saved: Any, weight: Any, need: tuple[bool, bool, bool]
    ) -> tuple[Any, Any, Any]:
        mean, rstd, bias = saved
        mask = [need[0], need[1] and weight is not None, need[2] and bias is not None]
        gx, gw, gb = _torch().ops.aten.native_layer_norm_backward(g, x, list(ns), mean, rstd, weight, bias, mask)
        return (gx if mask[0] else None), (gw if mask[1] else None), (gb if mask[2] else None)
