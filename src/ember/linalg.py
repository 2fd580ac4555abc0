"""``ember.linalg``: linear algebra with PyTorch's names (``torch.linalg``)."""

from __future__ import annotations

from .ops._factor import cholesky, solve_triangular
from .ops._lapack import cross, det, inv, matrix_power, multi_dot, pinv, slogdet, solve

__all__ = [
    "cholesky", "cross", "det", "inv", "matrix_power", "multi_dot", "pinv", "slogdet", "solve", "solve_triangular",
]  # fmt: skip
