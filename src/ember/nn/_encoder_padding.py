"""PyTorch's ``TransformerEncoder`` in inference with a key padding mask: its "sparsity fast path" runs the
layers on nested tensors and pads the result back with zeros, so the output at padded positions is 0 there and
the computed value in training. Ember has no nested tensors; it computes every position (the others' values are
the same: attention already masks the padded keys) and zeroes the padded ones where PyTorch's path would run,
under PyTorch's conditions (``transformer.py``'s ``why_not_sparsity_fast_path``)."""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..amp.autocast_mode import is_autocast_enabled
from ..autograd._grad_mode import is_grad_enabled
from . import functional as F
from .activation import GELU, ReLU

__all__ = ["nested_ok", "padded_positions"]


def nested_ok(layer: Any) -> bool:
    """Whether PyTorch would set ``use_nested_tensor`` for a stack of ``layer`` (checked once, at construction)."""
    from .transformer import TransformerEncoderLayer

    if not isinstance(layer, TransformerEncoderLayer) or layer.norm_first:
        return False
    attn, act = layer.self_attn, layer.activation
    relu_or_gelu = isinstance(act, (ReLU, GELU)) or act is F.relu or act is F.gelu or getattr(act, "__name__", "") in (
        "relu", "gelu")  # fmt: skip
    return bool(
        attn.batch_first and attn._qkv_same_embed_dim and attn.in_proj_bias is not None and relu_or_gelu
        and layer.norm1.eps == layer.norm2.eps and attn.num_heads % 2 == 0
    )  # fmt: skip


def padded_positions(encoder: Any, src: Tensor, mask: Any, key_padding_mask: Any) -> Tensor | None:
    """The (N, S) bool mask of the positions whose output PyTorch's fast path makes 0 (all False where, with
    ``mask_check``, the padding is not all at the end of each sequence), or None when that path would not run
    (training, grad recorded through the first layer's weights, a ``mask`` too, autocast ...)."""
    if not encoder.use_nested_tensor or key_padding_mask is None or mask is not None or src.ndim != 3:
        return None
    first = encoder.layers[0]
    if first.training or is_autocast_enabled(src.device.type if src.device.type in ("cpu", "cuda") else None):
        return None
    if is_grad_enabled() and (src.requires_grad or any(p.requires_grad for p in first.parameters())):
        return None
    kpm = key_padding_mask
    padded = kpm if kpm.dtype.kind == "b" else kpm != 0  # (a float mask: 0 keeps a key, -inf drops it)
    if encoder.mask_check:  # padding not all at the end of each sequence turns PyTorch's path off: no zeros
        valid = padded.logical_not().int()
        padded = padded & (valid[:, 1:] <= valid[:, :-1]).all()  # (on the device: no host read, and capturable)
    return padded
