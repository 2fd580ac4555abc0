"""Copies of a tensor with some elements replaced or rescaled: index_copy, masked_scatter, renorm, and
unique_consecutive (no gradient). Built from differentiable operators, so gradients come from those."""

from __future__ import annotations

from typing import Any

from .._errors import DTypeError, ShapeError
from .._tensor import Tensor
from ._elementwise import where
from ._gather import index_add
from ._shape import expand, reshape
from ._util import norm_dim, norm_dims
from ._utility import index_fill

__all__ = ["index_copy", "masked_scatter", "renorm", "unique_consecutive"]
METHODS = list(__all__)


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` whose slices at ``index`` along ``dim`` are ``source``'s (indices distinct)."""
    d = norm_dim(dim, input.ndim, "index_copy") if input.ndim else 0
    if source.dtype is not input.dtype:
        raise DTypeError(f"index_copy: source has dtype {source.dtype} but input has {input.dtype}")
    return index_fill(input, d, index, 0) + index_add(input.new_zeros(input.shape), d, index, source)


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` with the elements where ``mask`` holds taken, in order, from ``source``."""
    if mask.dtype.name != "bool":
        raise DTypeError(f"masked_scatter: mask must be a bool tensor, got {mask.dtype}")
    if source.dtype is not input.dtype:
        raise DTypeError(f"masked_scatter: source has dtype {source.dtype} but input has {input.dtype}")
    m = expand(mask, *input.shape) if tuple(mask.shape) != tuple(input.shape) else mask
    k = int(m._data.sum())
    if k > source.numel():
        raise ShapeError(f"masked_scatter: mask selects {k} elements but source has only {source.numel()}")
    out = input.clone()
    out[m] = reshape(source, -1)[:k]
    return out


def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down to norm ``maxnorm``."""
    d = norm_dim(dim, input.ndim, "renorm")
    others = tuple(a for a in norm_dims(None, input.ndim, "renorm") if a != d)
    n = input.norm(p, others, keepdim=True)
    return input * where(n > maxnorm, maxnorm / (n + 1e-7), 1.0)


def unique_consecutive(
    input: Tensor, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
) -> Any:
    """Collapse runs of equal consecutive elements (slices along ``dim``); no gradient."""
    xp, be = input._backend.xp, input._backend
    x = (
        input._data.reshape(-1)
        if dim is None
        else xp.moveaxis(input._data, norm_dim(dim, input.ndim, "unique_consecutive"), 0)
    )
    n = x.shape[0]
    if n == 0:
        change = xp.zeros(0, dtype=bool)
    else:
        diff = x[1:] != x[:-1]
        diff = diff.reshape(n - 1, -1).any(axis=1) if diff.ndim > 1 else diff
        change = xp.concatenate([xp.ones(1, dtype=bool), diff])
    starts = xp.nonzero(change)[0]
    vals = x[starts]
    if dim is not None:
        vals = xp.moveaxis(vals, 0, norm_dim(dim, input.ndim, "unique_consecutive"))
    out = [Tensor._make(vals, be)]
    if return_inverse:
        inv = xp.cumsum(xp.astype(change, xp.int64)) - 1
        out.append(Tensor._make(inv.reshape(input.shape if dim is None else (n,)), be))
    if return_counts:
        ends = xp.concatenate([starts[1:], xp.asarray([n], dtype=starts.dtype)])
        out.append(Tensor._make(xp.astype(ends - starts, xp.int64), be))
    return out[0] if len(out) == 1 else tuple(out)
