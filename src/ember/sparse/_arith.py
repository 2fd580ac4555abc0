"""Arithmetic of sparse COO tensors, with PyTorch's rules for which layout each result has.

``sparse + sparse`` and ``sparse - sparse`` are sparse (the union of the nonzeros, coalesced);
``dense + sparse`` is dense (``sparse + dense`` is refused, as in PyTorch); ``sparse * dense`` and
``dense * sparse`` are sparse (the dense values at the nonzeros, broadcast); products with and
divisions by scalars keep the nonzeros. ``sum`` reduces the values: over every sparse dim the result is
dense, otherwise sparse. All of it is differentiable in the values and the dense operand.
"""

from __future__ import annotations

from typing import Any

from .._errors import ShapeError
from .._tensor import Tensor
from ..ops import cat
from ._coo import SparseTensor

__all__ = ["add", "mul", "sum"]


def _scalar(v: Any) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) or (isinstance(v, Tensor) and v.ndim == 0)


def add(a: Any, b: Any, alpha: Any = 1) -> Any:
    """``a + alpha * b`` with at least one sparse operand."""
    if isinstance(a, SparseTensor) and isinstance(b, SparseTensor):
        if a.shape != b.shape:
            raise ShapeError(f"add: sparse tensors of sizes {tuple(a.shape)} and {tuple(b.shape)} differ")
        vals = cat([a._values(), b._values() * alpha if alpha != 1 else b._values()], 0)
        return SparseTensor(cat([a._indices(), b._indices()], 1), vals, a.shape).coalesce()
    if isinstance(b, SparseTensor) and isinstance(a, Tensor):
        return a + b.to_dense() * alpha if alpha != 1 else a + b.to_dense()
    if isinstance(a, SparseTensor):
        raise TypeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    raise TypeError(f"add: unsupported operands {type(a).__name__} and {type(b).__name__}")


def mul(a: Any, b: Any) -> SparseTensor:
    """Elementwise product with at least one sparse operand: sparse, with the nonzeros of the sparse one(s)."""
    if isinstance(b, SparseTensor) and not isinstance(a, SparseTensor):
        a, b = b, a
    if _scalar(b):
        return SparseTensor(a._indices(), a._values() * b, a.shape, a.is_coalesced())
    if isinstance(b, SparseTensor):  # the product of two sparse tensors: nonzero where both are
        dense_b = b.to_dense()
        return mul(a, dense_b)
    if not isinstance(b, Tensor):
        raise TypeError(f"mul: cannot multiply a sparse tensor by {type(b).__name__}")
    full = b.expand(*a.shape) if tuple(b.shape) != a.shape else b
    sd = a.sparse_dim()
    picked = full[tuple(a._indices()[d] for d in range(sd))]  # (nnz, *dense dims)
    return SparseTensor(a._indices(), a._values() * picked, a.shape, a.is_coalesced())


def sum(input: SparseTensor, dim: Any = None, dtype: Any = None) -> Any:
    """``torch.sparse.sum``: everything (a dense 0-d tensor), or over ``dim``; sparse while a sparse dim remains."""
    vals = input._values() if dtype is None else input._values().to(dtype)
    if dim is None:
        return vals.sum()
    dims = sorted({d % input.ndim for d in (dim if isinstance(dim, (tuple, list)) else (dim,))})
    sd = input.sparse_dim()
    dense_dims = [d - sd + 1 for d in dims if d >= sd]  # dims of the values (dim 0 is the nonzero)
    if dense_dims:
        vals = vals.sum(tuple(dense_dims))
    keep = [d for d in range(sd) if d not in dims]
    if not keep:  # every sparse dim reduced: a dense result
        return vals.sum(0)
    size = tuple(input.shape[d] for d in keep) + tuple(
        n for d, n in enumerate(input.shape) if d >= sd and d not in dims)  # fmt: skip
    idx = input._indices()[keep]
    return SparseTensor(idx, vals, size).coalesce()
