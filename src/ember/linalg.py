"""``ember.linalg``: linear algebra with PyTorch's names (``torch.linalg``)."""

from __future__ import annotations

from .ops._factor import cholesky, solve_triangular

__all__ = ["cholesky", "solve_triangular"]
