"""Operators that lay out copies or windows of a tensor: repeat_interleave, meshgrid, Tensor.unfold,
cartesian_prod, rot90, reshape_as. All are built from differentiable indexing and shape
operators, so they need no backward of their own."""

from __future__ import annotations

from typing import Any

from .._errors import DTypeError, ShapeError, ValueRangeError
from .._tensor import Tensor
from ._index import GetItem
from ._layout import flip, movedim
from ._shape import _transpose, expand, reshape
from ._util import norm_dim

__all__ = ["cartesian_prod", "meshgrid", "repeat_interleave", "rot90"]  # unfold, reshape_as: methods only
METHODS = ["repeat_interleave", "reshape_as", "rot90", "unfold"]


def repeat_interleave(
    input: Any, repeats: Any = None, dim: int | None = None, *, output_size: int | None = None
) -> Any:
    """Repeat each element (each slice along ``dim``; the flattened tensor when None) ``repeats`` times.

    ``repeats`` is an int or a 1-d integer tensor (one count per element). ``repeat_interleave(counts)``
    alone gives ``[0]*counts[0] + [1]*counts[1] + ...``.
    """
    if repeats is None:  # torch.repeat_interleave(repeats)
        counts = input
        xp = counts._backend.xp
        ar = Tensor._make(xp.arange(counts.shape[0], dtype=xp.int64), counts._backend)
        return repeat_interleave(ar, counts, 0)
    x = reshape(input, -1) if dim is None else input
    d = 0 if dim is None else norm_dim(dim, input.ndim, "repeat_interleave")
    n = x.shape[d] if x.ndim else 1
    xp = x._backend.xp
    if isinstance(repeats, Tensor):
        if repeats.dtype.kind not in "iu":
            raise DTypeError(f"repeat_interleave: repeats must be an integer tensor, got {repeats.dtype}")
        reps = repeats._data.reshape(-1)
        if reps.shape[0] == 1:
            reps = xp.broadcast_to(reps, (n,))
        if reps.shape[0] != n:
            raise ShapeError(f"repeat_interleave: {reps.shape[0]} repeats for a dim of size {n}")
        if reps.size and int(reps.min()) < 0:
            raise ShapeError("repeat_interleave: repeats must be non-negative")
    else:
        if int(repeats) < 0:
            raise ShapeError(f"repeat_interleave: repeats must be non-negative, got {repeats}")
        reps = int(repeats)
    idx = xp.repeat(xp.arange(n, dtype=xp.int64), reps)
    if output_size is not None and idx.shape[0] != output_size:
        raise ShapeError(f"repeat_interleave: output_size {output_size} but the repeats give {idx.shape[0]}")
    if not x.ndim:
        x = reshape(x, 1)
    return GetItem.apply(x, (slice(None),) * d + (idx,))


def meshgrid(*tensors: Any, indexing: str = "ij") -> tuple[Tensor, ...]:
    """Coordinate grids from 1-d tensors: ``indexing='ij'`` (matrix, default) or ``'xy'`` (Cartesian)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ValueRangeError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    for t in tensors:
        if not isinstance(t, Tensor) or t.ndim > 1:
            raise ShapeError(f"meshgrid: expected 0-d or 1-d tensors, got {getattr(t, 'shape', type(t).__name__)}")
    ts = [reshape(t, -1) for t in tensors]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.shape[0] for t in ts)
    out = []
    for i, t in enumerate(ts):
        view_shape = [1] * len(ts)
        view_shape[i] = shape[i]
        out.append(expand(reshape(t, tuple(view_shape)), *shape))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """All combinations of the elements of 1-d tensors, one per row (one tensor: itself)."""
    from ._join import stack

    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([reshape(g, -1) for g in grids], 1)


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Every window of ``size`` elements along ``dimension``, ``step`` apart, as a new last dim
    (``Tensor.unfold``; a copy here, where PyTorch returns a view)."""
    if input.ndim == 0:
        if size > 1:
            raise ShapeError(f"unfold: size {size} exceeds the size 1 of a 0-d tensor")
        return reshape(input, 1)
    d = norm_dim(dimension, input.ndim, "unfold")
    n = input.shape[d]
    if size > n or size < 0:
        raise ShapeError(f"unfold: size {size} exceeds dim {dimension} of size {n}")
    if step <= 0:
        raise ShapeError(f"unfold: step must be positive, got {step}")
    xp = input._backend.xp
    windows = (n - size) // step + 1
    idx = xp.arange(windows, dtype=xp.int64)[:, None] * step + xp.arange(size, dtype=xp.int64)[None, :]
    out = GetItem.apply(input, (slice(None),) * d + (idx,))  # (..., windows, size, ...)
    return movedim(out, d + 1, -1)


def rot90(input: Tensor, k: int = 1, dims: Any = (0, 1)) -> Tensor:
    """Rotate by 90 degrees ``k`` times in the plane of ``dims`` (from the first towards the second)."""
    if len(dims) != 2:
        raise ShapeError(f"rot90: expected 2 dims, got {tuple(dims)}")
    d0, d1 = (norm_dim(d, input.ndim, "rot90") for d in dims)
    if d0 == d1:
        raise ShapeError(f"rot90: dims must differ, got {tuple(dims)}")
    k %= 4
    if k == 1:
        return _transpose(flip(input, (d1,)), d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return flip(_transpose(input, d0, d1), (d1,))
    return input.clone()


def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    """``input.reshape(other.shape)``."""
    return reshape(input, other.shape)
