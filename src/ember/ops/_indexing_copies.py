"""The view operators' copying (``*_copy``) and writing (``*_scatter``) variants, ``as_strided``, ``index_put``,
``put``, ``index_reduce``, ``split_with_sizes`` (torch docs, "Indexing, Slicing, Joining, Mutating Ops") and
``Tensor.sum_to_size``.

Each is composed from Ember's views, clones and indexed writes, so autodiff gives the gradients: a
``*_copy`` is its view followed by a copy; a ``*_scatter`` writes ``src`` into a clone of ``input`` through the
view (the gradient of ``input`` is zero there, the gradient of ``src`` is what the view selects).
"""

from __future__ import annotations

import builtins
import math
from typing import Any

from .._errors import OutOfRangeError, ShapeError
from .._tensor import Tensor
from ._indexing import narrow, select
from ._indexing_gather import scatter_reduce
from ._indexing_join import split, unbind
from ._indexing_view import ViewOp, expand, permute, squeeze, t, transpose, unsqueeze, view
from ._other_diagonal import diagonal
from ._util import as_shape, index_out_of_range, norm_dim, same_dtype

__all__ = [
    "alias_copy", "as_strided", "as_strided_copy", "as_strided_scatter", "detach_copy", "diagonal_copy",
    "diagonal_scatter", "expand_copy", "index_put", "index_reduce", "narrow_copy", "permute_copy", "put",
    "select_copy", "select_scatter", "slice_copy", "slice_scatter", "split_copy", "split_with_sizes",
    "split_with_sizes_copy", "squeeze_copy", "t_copy", "transpose_copy", "unbind_copy", "unfold_copy",
    "unsqueeze_copy", "view_copy",
]  # fmt: skip
METHODS = ["as_strided", "as_strided_scatter", "diagonal_scatter", "index_put", "index_put_", "index_reduce",
           "index_reduce_", "narrow_copy", "put", "put_", "select_scatter", "slice_scatter", "split_with_sizes",
           "sum_to_size"]  # fmt: skip


# -- as_strided: a view with explicit sizes and strides ------------------------------------------------
class AsStrided(ViewOp):
    """``as_strided`` of a contiguous input (strides in elements from its first element + ``offset``)."""

    def forward(self, x: Any, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> Any:
        self.in_shape, self.shape, self.strides, self.offset = x.shape, shape, strides, offset
        flat = self.backend.xp.reshape(x, (-1,))
        return self.backend.as_strided(flat[offset:], shape, strides)

    def backward(self, g: Tensor) -> tuple[Tensor, None, None, None]:
        from .._creation import arange, zeros

        idx = arange(1, device=g.device) + self.offset
        for n, s in zip(self.shape, self.strides, strict=True):
            idx = (idx.unsqueeze(-1) + arange(n, device=g.device) * s).reshape(-1)
        n_in = math.prod(self.in_shape)
        gx = zeros(n_in, dtype=g.dtype, device=g.device).index_add(0, idx, g.reshape(-1))
        return gx.reshape(self.in_shape), None, None, None


def as_strided(input: Tensor, size: Any, stride: Any, storage_offset: int | None = None) -> Tensor:
    """A view with ``size`` and ``stride`` (in elements) over ``input``'s elements in row-major order.

    PyTorch reads the input's *storage*; Ember tensors own arrays, so a non-contiguous input is read in its
    logical (row-major) order: the same as PyTorch for contiguous inputs, where the tool is used.
    """
    shape, st = as_shape(size), as_shape(stride)
    if len(shape) != len(st):
        raise ShapeError(f"as_strided: mismatch in length of strides and shape ({len(st)} and {len(shape)})")
    off = int(storage_offset or 0)
    reach = off + builtins.sum((n - 1) * s for n, s in zip(shape, st, strict=True) if n > 0)
    empty = any(n == 0 for n in shape)
    if any(n < 0 for n in shape) or any(s < 0 for s in st) or (not empty and reach >= input.numel()):
        raise ShapeError(f"as_strided: size {shape} and stride {st} at offset {off} reach past the "
                         f"{input.numel()} elements of the input")  # fmt: skip
    x = input if input.is_contiguous() else input.contiguous()
    return AsStrided.apply(x, shape, st, off)  # type: ignore[no-any-return]


# -- the copying variants ---------------------------------------------------------------------------------
def _copy(v: Any) -> Any:
    return tuple(x.clone() for x in v) if isinstance(v, tuple) else v.clone()


def alias_copy(input: Tensor) -> Tensor:
    return input.clone()


def detach_copy(input: Tensor) -> Tensor:
    return input.detach().clone()


def as_strided_copy(input: Tensor, size: Any, stride: Any, storage_offset: int | None = None) -> Tensor:
    return _copy(as_strided(input, size, stride, storage_offset))  # type: ignore[no-any-return]


def diagonal_copy(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    return _copy(diagonal(input, offset, dim1, dim2))  # type: ignore[no-any-return]


def expand_copy(input: Tensor, size: Any, *, implicit: bool = False) -> Tensor:
    return _copy(expand(input, *as_shape(size)))  # type: ignore[no-any-return]


def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    return _copy(narrow(input, dim, start, length))  # type: ignore[no-any-return]


def permute_copy(input: Tensor, dims: Any) -> Tensor:
    return _copy(permute(input, *as_shape(dims)))  # type: ignore[no-any-return]


def select_copy(input: Tensor, dim: int, index: int) -> Tensor:
    return _copy(select(input, dim, index))  # type: ignore[no-any-return]


def slice_copy(input: Tensor, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1
               ) -> Tensor:  # fmt: skip
    return _copy(input[_slice_index(input, dim, start, end, step)])  # type: ignore[no-any-return]


def split_copy(input: Tensor, split_size: Any, dim: int = 0) -> tuple[Tensor, ...]:
    return _copy(split(input, split_size, dim))  # type: ignore[no-any-return]


def split_with_sizes(input: Tensor, split_sizes: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """``split`` into pieces of the listed sizes (they must add up to the size of ``dim``)."""
    sizes = [int(s) for s in split_sizes]
    n = input.shape[norm_dim(dim, input.ndim, "split_with_sizes")]
    if builtins.sum(sizes) != n:
        raise ShapeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                         f"dimension {dim}), but got split_sizes={sizes}")  # fmt: skip
    return split(input, sizes, dim)


def split_with_sizes_copy(input: Tensor, split_sizes: Any, dim: int = 0) -> tuple[Tensor, ...]:
    return _copy(split_with_sizes(input, split_sizes, dim))  # type: ignore[no-any-return]


def squeeze_copy(input: Tensor, dim: Any = None) -> Tensor:
    return _copy(squeeze(input, dim))  # type: ignore[no-any-return]


def t_copy(input: Tensor) -> Tensor:
    return _copy(t(input))  # type: ignore[no-any-return]


def transpose_copy(input: Tensor, dim0: int, dim1: int) -> Tensor:
    return _copy(transpose(input, dim0, dim1))  # type: ignore[no-any-return]


def unbind_copy(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    return _copy(unbind(input, dim))  # type: ignore[no-any-return]


def unfold_copy(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    return _copy(input.unfold(dimension, size, step))  # type: ignore[no-any-return]


def unsqueeze_copy(input: Tensor, dim: int) -> Tensor:
    return _copy(unsqueeze(input, dim))  # type: ignore[no-any-return]


def view_copy(input: Tensor, *size: Any) -> Tensor:
    """A copy of ``input.view(*size)``; any strides (PyTorch's copy variant needs no viewable layout)."""
    return _copy(view(input.contiguous(), *size))  # type: ignore[no-any-return]


# -- the writing variants ---------------------------------------------------------------------------------
def _slice_index(x: Tensor, dim: int, start: Any, end: Any, step: int) -> tuple[Any, ...]:
    d = norm_dim(dim, x.ndim, "slice")
    return (builtins.slice(None),) * d + (builtins.slice(start, end, step),)


def _scatter_into(input: Tensor, src: Tensor, where: Any, op: str) -> Tensor:
    out = input.clone()
    target = where(out)
    if tuple(target.shape) != tuple(src.shape):
        raise ShapeError(f"{op}: expected src to have a size equal to the slice of self. src size = "
                         f"{list(src.shape)}, slice size = {list(target.shape)}")  # fmt: skip
    target.copy_(src)
    return out


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,
                  step: int = 1) -> Tensor:  # fmt: skip
    """``input`` with ``input[..., start:end:step, ...] = src`` along ``dim`` (a new tensor)."""
    idx = _slice_index(input, dim, start, end, step)
    return _scatter_into(input, src, lambda o: o[idx], "slice_scatter")


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """``input`` with its ``index``-th slice along ``dim`` replaced by ``src`` (a new tensor)."""
    return _scatter_into(input, src, lambda o: select(o, dim, index), "select_scatter")


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """``input`` with the diagonal ``(offset, dim1, dim2)`` replaced by ``src`` (a new tensor)."""
    want = diagonal(input, offset, dim1, dim2)
    if tuple(want.shape) != tuple(src.shape):
        raise ShapeError(f"diagonal_scatter: expected src to have a size equal to the diagonal of self. src size = "
                         f"{list(src.shape)}, diagonal size = {list(want.shape)}")  # fmt: skip
    from .._creation import arange

    n = want.shape[-1]
    rows = arange(n, device=input.device) + max(-offset, 0)
    cols = arange(n, device=input.device) + max(offset, 0)
    a, b = norm_dim(dim1, input.ndim, "diagonal_scatter"), norm_dim(dim2, input.ndim, "diagonal_scatter")
    out = input.clone()
    out.movedim((a, b), (-2, -1))[..., rows, cols] = src
    return out


def as_strided_scatter(input: Tensor, src: Tensor, size: Any, stride: Any, storage_offset: int | None = None
                       ) -> Tensor:  # fmt: skip
    """``input`` with the elements ``as_strided(size, stride, storage_offset)`` selects replaced by ``src``."""
    from .._creation import arange

    shape, st = as_shape(size), as_shape(stride)
    idx = arange(1, device=input.device) + int(storage_offset or 0)
    for n, s in zip(shape, st, strict=True):
        idx = (idx.unsqueeze(-1) + arange(n, device=input.device) * s).reshape(-1)
    flat = input.reshape(-1).clone()
    flat[idx] = src.reshape(-1)
    return flat.reshape(*input.shape)


def index_put(input: Tensor, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
    """``input`` with ``input[indices] = values`` (``+=`` with ``accumulate``, duplicates summed): a new tensor."""
    return index_put_(input.clone(), indices, values, accumulate)


def index_put_(input: Tensor, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
    """``input[indices] = values`` in place (``+=`` with ``accumulate``, duplicate indices summed)."""
    same_dtype("index_put", "input and values", input, values)
    key = tuple(builtins.slice(None) if i is None else i for i in indices)  # None: the whole dim (TorchScript)
    if not accumulate:
        input[key] = values
        return input
    from .._creation import arange

    selected = arange(input.numel(), device=input.device).reshape(*input.shape)[key]
    vals = values if isinstance(values, Tensor) else input.new_tensor(values)
    src = vals.to(input.dtype).expand(*selected.shape).reshape(-1)  # values broadcast to what the key selects
    flat = input.reshape(-1).index_add(0, selected.reshape(-1), src)
    input.copy_(flat.reshape(*input.shape))
    return input


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """``input`` (read as 1-d) with ``input.flatten()[index] = source`` (summed with ``accumulate``): a new tensor."""
    return put_(input.clone(), index, source, accumulate)


def put_(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """``put`` in place."""
    same_dtype("put_", "input and source", input, source)
    if index.numel() != source.numel():
        raise ShapeError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")  # fmt: skip
    n = input.numel()
    bad = index_out_of_range(index._data, -n, n, input._backend)  # before the arithmetic below hides the range
    if bad:
        raise OutOfRangeError(f"put_: index {bad[1] if bad[1] >= n else bad[0]} is out of range for {n} elements")
    idx = index.reshape(-1)
    idx = idx + (idx < 0).long() * n  # negative indices count from the end, as in PyTorch
    flat = input.reshape(-1)
    if accumulate:
        flat = flat.index_add(0, idx, source.reshape(-1).to(input.dtype))
    else:
        flat = flat.clone()
        flat[idx] = source.reshape(-1).to(input.dtype)
    input.copy_(flat.reshape(*input.shape))
    return input


def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:  # fmt: skip
    """Reduce ``source``'s slices into ``input``'s slices ``index`` along ``dim`` with ``reduce`` (``"prod"``,
    ``"mean"``, ``"amax"``, ``"amin"``); a new tensor."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise ValueError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    if input.ndim != source.ndim:
        raise ShapeError(f"index_reduce(): source tensor shape {tuple(source.shape)} must match self tensor shape "
                         f"{tuple(input.shape)}, excluding the specified dimension")  # fmt: skip
    if input.ndim == 0:  # 0-d input and source: one slice of one element (PyTorch)
        out = index_reduce(input.reshape(-1), 0, index.reshape(-1), source.reshape(-1), reduce,
                           include_self=include_self)  # fmt: skip
        return out.reshape(input.shape)
    d = norm_dim(dim, input.ndim, "index_reduce")
    if index.ndim != 1 or index.shape[0] != source.shape[d]:
        raise ShapeError(f"index_reduce(): index must be 1-d with one entry per slice of source along dim {dim}")
    shape = [1] * source.ndim
    shape[d] = index.shape[0]
    full = index.reshape(*shape).expand(*source.shape)
    return scatter_reduce(input, d, full, source, reduce, include_self=include_self)


def index_reduce_(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                  include_self: bool = True) -> Tensor:  # fmt: skip
    """``index_reduce`` in place (computed from a copy: prod/amax/amin save their input for the gradient)."""
    return input.copy_(index_reduce(input.clone(), dim, index, source, reduce, include_self=include_self))


def sum_to_size(input: Tensor, *size: Any) -> Tensor:
    """``input`` summed down to ``size`` (which ``input`` must be expandable from): broadcasting undone."""
    from ._indexing_view import sum_to

    shape = as_shape(size)
    ok = len(shape) <= input.ndim and all(
        s == 1 or s == n for s, n in zip(shape[::-1], input.shape[::-1]))  # fmt: skip
    if not ok:
        raise ShapeError(f"size {list(shape)} is not expandable to size {list(input.shape)}.")
    if tuple(shape) != tuple(input.shape) and input.dtype.kind in "biu":  # summed: int64, as PyTorch's sum
        return sum_to(input.long(), shape)  # (NumPy and CuPy sum uint8 as uint64, which Ember's CuPy backend lacks)
    return sum_to(input, shape)


for _name in (
    "alias_copy", "as_strided_copy", "detach_copy", "diagonal_copy", "expand_copy", "narrow_copy", "permute_copy",
    "select_copy", "slice_copy", "split_copy", "split_with_sizes_copy", "squeeze_copy", "t_copy", "transpose_copy",
    "unbind_copy", "unfold_copy", "unsqueeze_copy", "view_copy",
):  # fmt: skip
    globals()[
        _name
    ].__doc__ = f"``torch.{_name}``: ``{_name[:-5]}`` followed by a copy (new tensors, never views of ``input``)."
