"""Sparse COO tensors (``torch.sparse``): ``ember.sparse_coo_tensor``, ``Tensor.to_sparse``, and products
``ember.sparse.mm`` / ``ember.spmm`` differentiable in the dense operand and the sparse values.

The product's array kernel is a backend method (``Backend.spmm``): SciPy's CSR product on the NumPy
backend when SciPy is installed, a scatter-add that every backend can run otherwise.
"""

from __future__ import annotations

from typing import Any

from ..ops import register_method
from ._arith import sum
from ._coo import SparseTensor, sparse_coo_tensor, to_sparse
from ._mm import addmm, mm, spmm

__all__ = ["DoubleTensor", "FloatTensor", "SparseTensor", "addmm", "mm", "sparse_coo_tensor", "spmm", "sum",
           "to_sparse"]  # fmt: skip


def FloatTensor(indices: Any, values: Any, size: Any = None) -> SparseTensor:  # noqa: N802 - PyTorch's legacy name
    """``torch.sparse.FloatTensor(indices, values, size)``: a float32 COO tensor (legacy constructor)."""
    return sparse_coo_tensor(indices, values, size, dtype="float32")


def DoubleTensor(indices: Any, values: Any, size: Any = None) -> SparseTensor:  # noqa: N802 - PyTorch's legacy name
    """``torch.sparse.DoubleTensor(indices, values, size)``: a float64 COO tensor (legacy constructor)."""
    return sparse_coo_tensor(indices, values, size, dtype="float64")


def _to_dense(input: Any) -> Any:
    return input.to_dense() if isinstance(input, SparseTensor) else input


register_method("to_sparse", to_sparse)
register_method("to_sparse_coo", to_sparse)
register_method("to_dense", _to_dense)
