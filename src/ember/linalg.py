"""``ember.linalg``: linear algebra with PyTorch's names (``torch.linalg``)."""

from __future__ import annotations

from ._errors import LinAlgError
from .ops._blas import matmul
from .ops._lapack import cholesky, cross, det, inv, matrix_power, multi_dot, slogdet, solve, solve_triangular
from .ops._linalg_decomp import eig, eigh, eigvals, eigvalsh, svdvals
from .ops._linalg_decomp import linalg_qr as qr
from .ops._linalg_decomp import linalg_svd as svd
from .ops._linalg_lu import ldl_factor, ldl_factor_ex, ldl_solve, lu, lu_factor, lu_factor_ex
from .ops._linalg_lu import linalg_lu_solve as lu_solve
from .ops._linalg_norms import cond, matrix_norm, matrix_rank, pinv, vector_norm
from .ops._linalg_norms import linalg_norm as norm
from .ops._linalg_solvers import (
    cholesky_ex,
    diagonal,
    householder_product,
    inv_ex,
    lstsq,
    matrix_exp,
    solve_ex,
    tensorinv,
    tensorsolve,
    vander,
    vecdot,
)

__all__ = [
    "LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh",
    "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq", "lu", "lu_factor",
    "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot",
    "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd", "svdvals", "tensorinv",
    "tensorsolve", "vander", "vecdot", "vector_norm",
]  # fmt: skip
