"""``ember.linalg``: linear algebra with PyTorch's names (``torch.linalg``)."""

from __future__ import annotations

from .ops._lapack import cholesky, cross, det, inv, matrix_power, multi_dot, pinv, slogdet, solve, solve_triangular

__all__ = [
    "cholesky", "cross", "det", "inv", "matrix_power", "multi_dot", "pinv", "slogdet", "solve", "solve_triangular",
]  # fmt: skip
