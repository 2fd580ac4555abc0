"""``embedding_bag`` (sums, means or maxima of bags of embeddings) and ``channel_shuffle``.

``embedding_bag`` looks every index up with ``embedding`` and reduces each bag with ``index_add`` (sum,
mean) or ``scatter_reduce`` (max), so autodiff gives the gradient; indices equal to ``padding_idx`` are
left out of their bag (and of its count), and an empty bag gives zeros, as in PyTorch.
"""

from __future__ import annotations

from ..._creation import arange, zeros
from ..._errors import DTypeError, ShapeError, ValueRangeError
from ..._tensor import Tensor
from ...ops import searchsorted, where
from ._misc import embedding

__all__ = ["channel_shuffle", "embedding_bag", "native_channel_shuffle"]


def embedding_bag(
    input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm: float | None = None,
    norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
    per_sample_weights: Tensor | None = None, include_last_offset: bool = False, padding_idx: int | None = None,
) -> Tensor:  # fmt: skip
    """Bags of ``weight`` rows reduced by ``mode`` (``"sum"``, ``"mean"``, ``"max"``): (B, L) ``input`` holds one
    bag per row; 1-d ``input`` is cut into bags at ``offsets``."""
    if mode not in ("sum", "mean", "max"):
        raise ValueRangeError(f"embedding_bag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
    if input.dtype.is_floating_point:
        raise DTypeError(f"embedding_bag: input must hold indices (an integer tensor), got {input.dtype}")
    if per_sample_weights is not None and mode != "sum":
        raise ValueRangeError(f"embedding_bag: per_sample_weights is only supported for mode='sum', got {mode!r}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueRangeError("embedding_bag: offsets must be None for a 2-d input (each row is a bag)")
        b, length = input.shape
        idx = input.reshape(-1)
        bag = arange(b, device=input.device).reshape(b, 1).expand(b, length).reshape(-1)
        psw = per_sample_weights.reshape(-1) if per_sample_weights is not None else None
    elif input.ndim == 1:
        if offsets is None or offsets.ndim != 1:
            raise ValueRangeError("embedding_bag: a 1-d input needs 1-d offsets (the start of every bag)")
        starts = offsets[:-1] if include_last_offset else offsets
        b = starts.shape[0]
        idx = input
        bag = searchsorted(starts, arange(input.shape[0], device=input.device), right=True) - 1
        psw = per_sample_weights
    else:
        raise ShapeError(
            f"embedding_bag: input must be 1-d (with offsets) or 2-d (B, L), got shape {tuple(input.shape)}"
        )
    if psw is not None and psw.shape != idx.shape:
        raise ShapeError(
            f"embedding_bag: per_sample_weights shape {tuple(psw.shape)} must match input {tuple(input.shape)}"
        )
    d = weight.shape[1]
    vals = embedding(idx, weight, None, max_norm, norm_type)
    keep = (idx != padding_idx) if padding_idx is not None else None
    if padding_idx is not None and padding_idx < 0:
        keep = idx != padding_idx + weight.shape[0]
    if keep is not None:  # padding entries leave their bag
        bag = where(keep, bag, b)
    if psw is not None:
        vals = vals * psw.unsqueeze(1)
    out = zeros(b + 1, d, dtype=vals.dtype, device=vals.device)  # row b collects what belongs to no bag
    if mode == "max":
        out = out.scatter_reduce(0, bag.reshape(-1, 1).expand(-1, d), vals, "amax", include_self=False)
        return out[:b]
    out = out.index_add(0, bag, vals)[:b]
    if mode == "mean":
        count = zeros(b + 1, dtype=vals.dtype, device=vals.device).index_add(0, bag, vals[:, 0] * 0 + 1)[:b]
        out = out / count.clamp(min=1).unsqueeze(1)
    return out


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """(N, C, ...) with the channels regrouped: ``C = g * k`` channels in g groups become k groups of g."""
    if input.ndim < 3:
        raise ShapeError(f"channel_shuffle: expected an input with at least 3 dims, got shape {tuple(input.shape)}")
    n, c = input.shape[0], input.shape[1]
    if groups <= 0 or c % groups:
        raise ValueRangeError(f"channel_shuffle: {c} channels are not divisible into {groups} groups")
    rest = input.shape[2:]
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


native_channel_shuffle = channel_shuffle
