"""Joining and splitting (torch docs, "Indexing, Slicing, Joining, Mutating Ops"): ``cat``, ``stack``,
``split``, ``chunk``, ``unbind`` and their ``h``/``v``/``d`` variants.
"""

from __future__ import annotations

import builtins
import itertools
from collections.abc import Sequence
from typing import Any

from .._errors import ShapeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._autocast import autocast_op
from ..autograd._function import Op
from ._indexing import select
from ._indexing_view import reshape, squeeze
from ._other_shape import atleast_1d, atleast_2d, atleast_3d
from ._util import norm_dim, promote_tensors

__all__ = [
    "cat",
    "chunk",
    "column_stack",
    "concat",
    "concatenate",
    "dsplit",
    "dstack",
    "hsplit",
    "hstack",
    "row_stack",
    "split",
    "stack",
    "tensor_split",
    "unbind",
    "vsplit",
    "vstack",
]
METHODS = [
    n
    for n in __all__
    if n not in {"cat", "column_stack", "concat", "concatenate", "dstack", "hstack", "row_stack", "stack", "vstack"}
]


class Cat(Op):
    saves_inputs = False

    def forward(self, *arrays: Any, dim: int) -> Any:
        self.dim = dim
        self.sizes = [a.shape[dim] for a in arrays]
        return self.backend.xp.concatenate(arrays, axis=dim)

    def backward(self, g: Tensor) -> tuple[Any, ...]:
        return tuple(_split_sizes(g, self.sizes, self.dim))


def _check_same(op: str, tensors: Sequence[Tensor], dim: int | None) -> None:
    if not tensors:
        raise ShapeError(f"{op}: expected a non-empty sequence of tensors")
    ref = tensors[0]
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: element {i} is a {type(t).__name__}, not a Tensor")
        if t._data.shape == ref._data.shape:  # (the usual case, one tuple comparison)
            continue
        if t.ndim != ref.ndim or any(
            a != b for k, (a, b) in enumerate(zip(t.shape, ref.shape, strict=True)) if k != dim
        ):
            what = "all dims" if dim is None else f"all dims except dim {dim}"
            raise ShapeError(
                f"{op}: tensors must match in {what}; tensor 0 has shape {tuple(ref.shape)}, tensor {i} has shape "
                f"{tuple(t.shape)}"
            )


@autocast_op("cat")
def _tensor_list(op: str, tensors: Any) -> list[Tensor]:
    """``tensors`` as a list; one Tensor is refused (PyTorch's TypeError: iterating it would join its rows)."""
    if isinstance(tensors, Tensor):
        raise TypeError(f"{op}(): argument 'tensors' must be a tuple or list of Tensors, not a Tensor")
    return list(tensors)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Concatenate along an existing dim."""
    tensors = _tensor_list("cat", tensors)
    if not tensors:
        raise ShapeError("cat: expected a non-empty sequence of tensors")
    tensors = promote_tensors(tensors)
    kept = [t for t in tensors if t.shape != (0,)]  # PyTorch's legacy rule: 1-d empty tensors join any shape
    tensors = kept if kept and len(kept) < len(tensors) else tensors
    d = norm_dim(dim, tensors[0].ndim, "cat")
    _check_same("cat", tensors, d)
    return Cat.apply(*tensors, dim=d)


concat = concatenate = cat


class Stack(Op):
    """Join along a new dim in one kernel; backward hands each input its slice of the gradient (a view)."""

    saves_inputs = False

    def forward(self, *arrays: Any, dim: int) -> Any:
        self.dim, self.n = dim, len(arrays)
        return self.backend.xp.stack(arrays, axis=dim)

    def backward(self, g: Tensor) -> tuple[Any, ...]:
        return tuple(select(g, self.dim, i) for i in range(self.n))


@autocast_op("stack")
def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join along a new dim."""
    tensors = _tensor_list("stack", tensors)
    if not tensors:
        raise ShapeError("stack: expected a non-empty sequence of tensors")
    _check_same("stack", tensors, None)
    d = norm_dim(dim, tensors[0].ndim + 1, "stack")
    return Stack.apply(*promote_tensors(tensors), dim=d)


class Split(Op):
    saves_inputs = False
    bf16_native = True  # (its pieces are views of a bfloat16 array)

    def forward(self, x: Any, sizes: tuple[int, ...], dim: int) -> Any:
        self.dim, self.sizes, self.shape = dim, sizes, x.shape
        out = []
        start = 0
        for s in sizes:
            idx = [slice(None)] * x.ndim
            idx[dim] = slice(start, start + s)
            out.append(x[tuple(idx)])
            start += s
        return tuple(out)

    def backward(self, *grads: Any) -> tuple[Any, None, None]:
        parts = []
        g_dtype = next(g for g in grads if g is not None)._data.dtype
        for g, s in zip(grads, self.sizes, strict=True):
            if g is None:
                shape = list(self.shape)
                shape[self.dim] = s
                g = Tensor._make(self.backend.xp.zeros(shape, dtype=g_dtype), self.backend)
            parts.append(g)
        return cat(parts, self.dim), None, None


def _split_sizes(x: Tensor, sizes: Sequence[int], dim: int) -> tuple[Tensor, ...]:
    out = Split.apply(x, tuple(sizes), dim)
    return out if isinstance(out, tuple) else (out,)


def split(tensor: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Pieces of ``split_size`` along ``dim`` (the last may be smaller), or of the listed sizes."""
    d = norm_dim(dim, tensor.ndim, "split")
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, int):
        s = split_size_or_sections
        if s <= 0:
            raise ValueRangeError(f"split: split_size must be positive, got {s}")
        sizes = [s] * (n // s) + ([n % s] if n % s else [])
    else:
        sizes = [int(v) for v in split_size_or_sections]
        if sum(sizes) != n:
            raise ShapeError(f"split: sections {sizes} sum to {sum(sizes)}, but dim {dim} has size {n}")
    return _split_sizes(tensor, sizes or [0], d)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into ``chunks`` nearly equal pieces along ``dim`` (views)."""
    d = norm_dim(dim, input.ndim, "chunk")
    n = input.shape[d]
    if chunks <= 0:
        raise ValueRangeError(f"chunk: chunks must be positive, got {chunks}")
    if n == 0:  # PyTorch: `chunks` empty pieces
        return tuple(input.narrow(d, 0, 0) for _ in range(chunks))
    return split(input, -(-n // chunks), d)


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along ``dim`` as a tuple of tensors, that dimension removed."""
    d = norm_dim(dim, input.ndim, "unbind")

    return tuple(squeeze(p, d) for p in _split_sizes(input, [1] * input.shape[d], d))


def hstack(tensors: Any) -> Tensor:
    """Tensors concatenated along the second dimension (the first for 1-d tensors)."""
    ts = atleast_1d(*_tensor_list("hstack", tensors))
    ts = ts if isinstance(ts, tuple) else (ts,)
    return cat(list(ts), 0 if ts[0].ndim == 1 else 1)


def vstack(tensors: Any) -> Tensor:
    """Tensors concatenated along the first dimension (after ``atleast_2d``). Also ``row_stack``."""
    ts = atleast_2d(*_tensor_list("vstack", tensors))
    return cat(list(ts if isinstance(ts, tuple) else (ts,)), 0)


row_stack = vstack


def dstack(tensors: Any) -> Tensor:
    """Tensors concatenated along the third dimension (after ``atleast_3d``)."""
    ts = atleast_3d(*_tensor_list("dstack", tensors))
    return cat(list(ts if isinstance(ts, tuple) else (ts,)), 2)


def column_stack(tensors: Any) -> Tensor:
    """1-d and 2-d tensors stacked as the columns of one 2-d tensor."""
    ts = [reshape(t, (-1, 1)) if t.ndim <= 1 else t for t in _tensor_list("column_stack", tensors)]
    return cat(ts, 1)


def tensor_split(input: Tensor, indices_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into ``n`` near-equal parts (an int) or at the given indices (a list)."""
    d = norm_dim(dim, input.ndim, "tensor_split")
    size = input.shape[d]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise ValueRangeError(f"tensor_split: sections must be positive, got {n}")
        q, r = divmod(size, n)
        bounds = [i * q + builtins.min(i, r) for i in range(n + 1)]
    else:
        bounds = [0] + [builtins.min(builtins.max(int(i), 0), size) for i in indices_or_sections] + [size]
    return tuple(input.narrow(d, a, builtins.max(b - a, 0)) for a, b in itertools.pairwise(bounds))


def _split_dim(op: str, input: Tensor, sections: Any, dim: int, min_rank: int) -> tuple[Tensor, ...]:
    if input.ndim < min_rank:
        raise ShapeError(f"{op}: expected a tensor of rank >= {min_rank}, got shape {tuple(input.shape)}")
    if isinstance(sections, int) and input.shape[dim] % sections:
        raise ShapeError(f"{op}: dim {dim} of size {input.shape[dim]} is not divisible into {sections} parts")
    return tensor_split(input, sections, dim)


def hsplit(input: Tensor, sections: Any) -> tuple[Tensor, ...]:
    """Split along the second dimension (the first for 1-d) at ``sections`` (a count or indices)."""
    return _split_dim("hsplit", input, sections, 1 if input.ndim > 1 else 0, 1)


def vsplit(input: Tensor, sections: Any) -> tuple[Tensor, ...]:
    """Split along the first dimension at ``sections`` (a count or indices)."""
    return _split_dim("vsplit", input, sections, 0, 2)


def dsplit(input: Tensor, sections: Any) -> tuple[Tensor, ...]:
    """Split along the third dimension at ``sections`` (a count or indices)."""
    return _split_dim("dsplit", input, sections, 2, 3)
