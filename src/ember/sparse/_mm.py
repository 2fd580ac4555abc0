"""Sparse @ dense products with gradients to the dense operand and to the sparse values."""

from __future__ import annotations

from typing import Any

from .._errors import DeviceError, DTypeError, ShapeError
from .._tensor import Tensor
from ..autograd._function import Op
from ..ops import mm as dense_mm
from ._coo import SparseTensor

__all__ = ["addmm", "mm", "spmm"]


class SpMM(Op):
    """``S @ D`` for S given by ``indices`` (2, nnz), ``values`` (nnz,) and ``shape``; D dense (n, k).

    out[r, :] = sum over k with indices[:, k] == (r, c) of values[k] * D[c, :]; so
    d/d values[k] = <g[r_k, :], D[c_k, :]> and d/dD = S^T @ g (the same kernel, indices swapped).
    """

    def forward(self, values: Any, dense: Any, indices: Any, shape: tuple[int, int]) -> Any:
        self.indices, self.shape = indices, shape
        return self.backend.spmm(indices, values, shape, dense)

    def backward(self, g: Tensor) -> tuple[Any, ...]:
        values, dense = self.inputs[:2]  # type: ignore[index]
        be = self.backend
        gv = gd = None
        if self._req(0):
            rows = Tensor._make(self.indices[0], be)
            cols = Tensor._make(self.indices[1], be)
            gv = (g.index_select(0, rows) * dense.index_select(0, cols)).sum(-1)
        if self._req(1):
            swapped = be.xp.stack([self.indices[1], self.indices[0]])
            gd = SpMM.apply(values, g, swapped, (self.shape[1], self.shape[0]))
        return gv, gd, None, None


def mm(sparse: SparseTensor, dense: Tensor) -> Tensor:
    """``sparse @ dense`` for a 2-d COO matrix and a dense matrix (or vector); differentiable in both.

    Two dense matrices are multiplied as ``ember.mm`` does (``torch.spmm`` accepts them too).
    """
    if isinstance(sparse, Tensor):
        return dense_mm(sparse, dense.to_dense() if isinstance(dense, SparseTensor) else dense)
    if not isinstance(sparse, SparseTensor):
        raise TypeError(f"sparse.mm: expected a sparse COO tensor first, got {type(sparse).__name__}")
    if isinstance(dense, SparseTensor):
        dense = dense.to_dense()
    if not isinstance(dense, Tensor):
        raise TypeError(f"sparse.mm: expected a dense Tensor second, got {type(dense).__name__}")
    if sparse.sparse_dim() != 2 or sparse.dense_dim() != 0:
        raise ShapeError(f"sparse.mm: expected a 2-d sparse matrix, got size {tuple(sparse.shape)}")
    if dense.ndim not in (1, 2) or dense.shape[0] != sparse.shape[1]:
        raise ShapeError(f"sparse.mm: shapes {tuple(sparse.shape)} and {tuple(dense.shape)} cannot be multiplied")
    if sparse.dtype != dense.dtype:
        raise DTypeError(f"sparse.mm: sparse values are {sparse.dtype} but the dense operand is {dense.dtype}")
    if sparse.device != dense.device:
        raise DeviceError(f"sparse.mm: sparse operand on {sparse.device}, dense operand on {dense.device}")
    vec = dense.ndim == 1
    d = dense.reshape(-1, 1) if vec else dense
    out: Tensor = SpMM.apply(sparse._values(), d, sparse._indices()._data, (sparse.shape[0], sparse.shape[1]))
    return out.reshape(-1) if vec else out


spmm = mm


def addmm(mat: Tensor, mat1: SparseTensor, mat2: Tensor, *, beta: float = 1.0, alpha: float = 1.0) -> Tensor:
    """``beta * mat + alpha * (mat1 @ mat2)`` with a sparse ``mat1`` (``torch.sparse.addmm``)."""
    return beta * mat + alpha * mm(mat1, mat2)
