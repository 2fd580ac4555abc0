"""``ember.linalg``: linear algebra with PyTorch's names (``torch.linalg``)."""

from __future__ import annotations

from .ops._lapack import cholesky, cross, det, inv, matrix_power, multi_dot, slogdet, solve, solve_triangular
from .ops._linalg_decomp import eigh, eigvalsh, svdvals
from .ops._linalg_decomp import linalg_qr as qr
from .ops._linalg_decomp import linalg_svd as svd
from .ops._linalg_norms import cond, matrix_norm, matrix_rank, pinv, vector_norm
from .ops._linalg_norms import linalg_norm as norm

__all__ = [
    "cholesky", "cond", "cross", "det", "eigh", "eigvalsh", "inv", "matrix_norm", "matrix_power", "matrix_rank",
    "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_triangular", "svd", "svdvals", "vector_norm",
]  # fmt: skip
