"""LU and LDL factorizations and the solves built on them (torch docs, "BLAS and LAPACK Operations";
``ember.linalg``): ``lu``, ``lu_factor(_ex)``, ``lu_unpack``, ``lu_solve``, ``ldl_factor(_ex)``, ``ldl_solve``.

The factorization is a backend kernel (``Backend.lu_factor``: LAPACK's layout, 1-based pivots); the gradient of
``A = P L U`` is PyTorch's ``linalg_lu_backward`` for square, wide and tall matrices. The solves are compositions
of triangular solves, so their gradients reach ``LU`` and ``B``.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from .._errors import ShapeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._function import Op
from ._blas import matmul
from ._indexing_join import cat
from ._indexing_view import _transpose
from ._lapack import solve_triangular
from ._linalg_decomp import _matrices, _square
from ._other_diagonal import tril, triu
from ._pointwise_complex import cj

__all__ = ["lu_solve", "lu_unpack"]
METHODS = ["lu_solve"]

LUResult = namedtuple("LUResult", ["P", "L", "U"])
LUFactorResult = namedtuple("LUFactorResult", ["LU", "pivots"])
LUFactorExResult = namedtuple("LUFactorExResult", ["LU", "pivots", "info"])
LDLFactorResult = namedtuple("LDLFactorResult", ["LD", "pivots"])
LDLFactorExResult = namedtuple("LDLFactorExResult", ["LD", "pivots", "info"])


def _mH(x: Tensor) -> Tensor:  # noqa: N802 - PyTorch's name
    """The conjugate transpose (the transpose of a real matrix)."""
    return cj(_transpose(x, -1, -2))


def _perm_matrix(backend: Any, piv: Any, m: int, dtype: Any) -> Any:
    """The permutation matrix ``P`` (``A = P L U``) of LAPACK's sequential row swaps ``piv``."""
    xp = backend.xp
    perm = backend.lu_permutation(piv, m)
    return xp.swapaxes(xp.eye(m, dtype=dtype)[perm], -1, -2)  # P[perm[i], i] = 1


def _unpack_arrays(backend: Any, lu: Any, piv: Any) -> tuple[Any, Any, Any]:
    """``(P, L, U)`` arrays from a packed LU and its pivots."""
    xp = backend.xp
    m, n = lu.shape[-2], lu.shape[-1]
    k = min(m, n)
    L = xp.tril(lu[..., :, :k], -1) + xp.eye(m, k, dtype=lu.dtype)
    U = xp.triu(lu[..., :k, :])
    return _perm_matrix(backend, piv, m, lu.dtype), L, U


class Lu(Op):
    n_out = 4  # P, L, U, pivots
    saves_inputs = False
    saves_output = True

    def forward(self, a: Any) -> Any:
        lu, piv = self.backend.lu_factor(a)
        P, L, U = _unpack_arrays(self.backend, lu, piv)
        self.keep(P, L, U)
        return P, L, U, piv

    def backward(self, gP: Any, gL: Any, gU: Any, gpiv: Any) -> Tensor:  # noqa: N803 - PyTorch's names
        P, L, U = self.output(0).detach(), self.output(1), self.output(2)
        return lu_backward(gL, gU, P, L, U)


def lu_backward(gL: Any, gU: Any, P: Tensor, L: Tensor, U: Tensor) -> Tensor:  # noqa: N803 - PyTorch's names
    """The gradient of ``A = P L U`` (PyTorch's ``linalg_lu_backward``)."""
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    if gL is None and gU is None:
        return L.new_zeros((*L.shape[:-2], m, n))
    if m == n:
        gA = tril(matmul(_mH(L), gL), -1) if gL is not None else None
        if gU is not None:
            t = triu(matmul(gU, _mH(U)))
            gA = t if gA is None else gA + t
        gA = solve_triangular(_mH(U), gA, upper=False, left=False)  # type: ignore[arg-type]
        gA = solve_triangular(_mH(L), gA, upper=True, unitriangular=True)
        return matmul(P, gA)
    if m < n:  # wide: U = [U1 | U2] with U1 square
        U1 = U[..., :k]
        gA = matmul(_mH(L), gL) if gL is not None else None
        if gU is not None:
            t = matmul(triu(gU), _mH(U))
            gA = -t if gA is None else gA - t
        gA = solve_triangular(_mH(U1), tril(gA, -1), upper=False, left=False)  # type: ignore[arg-type]
        if gU is not None:
            gA = cat([gA + triu(gU[..., :k]), gU[..., k:]], -1)
        gA = solve_triangular(_mH(L), gA, upper=True, unitriangular=True)
        if gU is None:
            gA = cat([gA, U.new_zeros((*U.shape[:-2], k, n - k))], -1)
        return matmul(P, gA)
    L1 = L[..., :k, :]  # tall: L = [L1; L2] with L1 square
    gA = matmul(gU, _mH(U)) if gU is not None else None
    if gL is not None:
        t = matmul(_mH(L), tril(gL, -1))
        gA = -t if gA is None else gA - t
    gA = solve_triangular(_mH(L1), triu(gA), upper=True, unitriangular=True)  # type: ignore[arg-type]
    if gL is not None:
        gA = cat([gA + tril(gL[..., :k, :], -1), gL[..., k:, :]], -2)
    gA = solve_triangular(_mH(U), gA, upper=False, left=False)
    if gL is None:
        gA = cat([gA, L.new_zeros((*L.shape[:-2], m - k, k))], -2)
    return matmul(P, gA)


def lu(A: Tensor, *, pivot: bool = True) -> LUResult:  # noqa: N803 - PyTorch's name
    """``A = P L U`` with partial pivoting (``torch.linalg.lu``): ``L`` unit lower, ``U`` upper."""
    if not pivot:
        raise ValueRangeError("linalg.lu: pivot=False is only available on CUDA in PyTorch; use pivot=True")
    P, L, U, _ = Lu.apply(_matrices("linalg.lu", A))
    return LUResult(P.detach(), L, U)


def _info(LU: Tensor) -> Tensor:  # noqa: N803 - PyTorch's name
    """LAPACK's ``info``: the 1-based index of the first zero on U's diagonal, 0 when there is none."""
    d = LU.detach().diagonal(0, -2, -1)
    zero = (d == 0).long()
    if not d.shape[-1]:  # (an empty matrix: 0; argmax of no element was refused)
        return zero.sum(-1).int()
    return ((zero.argmax(-1) + 1) * zero.amax(-1)).int()


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False) -> LUFactorExResult:  # noqa: N803
    """``(LU, pivots, info)`` (``torch.linalg.lu_factor_ex``): ``info > 0`` names the first zero pivot."""
    if not pivot:
        raise ValueRangeError("linalg.lu_factor: pivot=False is only available on CUDA in PyTorch; use pivot=True")
    _, L, U, piv = Lu.apply(_matrices("linalg.lu_factor_ex", A))
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    low = tril(L, -1)
    if m > k:
        packed = low + cat([U, U.new_zeros((*U.shape[:-2], m - k, n))], -2)
    elif n > k:
        packed = cat([low, L.new_zeros((*L.shape[:-2], m, n - k))], -1) + U
    else:
        packed = low + U
    info = _info(packed)
    if check_errors and bool((info != 0).any()):
        raise ValueRangeError(f"linalg.lu_factor_ex: U[{int(info.max()) - 1},{int(info.max()) - 1}] is zero")
    return LUFactorExResult(packed, piv, info)


def lu_factor(A: Tensor, *, pivot: bool = True) -> LUFactorResult:  # noqa: N803 - PyTorch's name
    """The packed LU factorization and its pivots (``torch.linalg.lu_factor``); refuses a singular matrix."""
    LU, piv, info = lu_factor_ex(A, pivot=pivot)
    if bool((info != 0).any()):  # on every device: PyTorch's lu_factor reads ``info`` back on CUDA too
        i = int(info.max()) - 1
        raise ValueRangeError(
            f"linalg.lu_factor: U[{i},{i}] is zero and using it on lu_solve would result in a division by zero. "
            "If you still want to perform the factorization, consider calling linalg.lu(A) or linalg.lu_factor_ex(A)"
        )
    return LUFactorResult(LU, piv)


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True, unpack_pivots: bool = True) -> LUResult:  # noqa: N803
    """``(P, L, U)`` from ``lu_factor``'s result (``torch.lu_unpack``); the gradient reaches ``LU_data``."""
    a = _matrices("lu_unpack", LU_data)
    m, n = a.shape[-2], a.shape[-1]
    k = min(m, n)
    if LU_pivots.shape[-1] != k:
        raise ShapeError(
            f"lu_unpack: expected pivots of length {k} for LU of shape {tuple(a.shape)}, got {tuple(LU_pivots.shape)}"
        )
    be = a._backend
    if unpack_data:
        L = tril(a[..., :, :k], -1) + Tensor._make(be.xp.eye(m, k, dtype=a._data.dtype), be)
        U = triu(a[..., :k, :])
    else:
        L = U = a.new_zeros((0,))
    if unpack_pivots:
        P = Tensor._make(_perm_matrix(be, LU_pivots._data, m, a._data.dtype), be)
    else:
        P = a.new_zeros((0,))
    return LUResult(P, L, U)


def _permute_rows(P: Tensor, B: Tensor) -> Tensor:  # noqa: N803
    return matmul(_mH(P), B)


def linalg_lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False) -> Tensor:  # noqa: N803
    """``X`` with ``A X = B`` from ``A``'s LU factorization (``torch.linalg.lu_solve``; ``left=False``: ``X A = B``;
    ``adjoint``: ``A^H``)."""
    a = _square("linalg.lu_solve", LU)
    if B.ndim < 2 or (left and B.shape[-2] != a.shape[-1]) or (not left and B.shape[-1] != a.shape[-1]):
        raise ShapeError(f"linalg.lu_solve: LU of shape {tuple(LU.shape)} and B of shape {tuple(B.shape)} do not match")
    P, L, U = lu_unpack(a, pivots)
    if not left:  # X A = B  <=>  A^H X^H = B^H
        return _mH(linalg_lu_solve(LU, pivots, _mH(B), adjoint=not adjoint))
    if adjoint:  # A^H X = B with A = P L U: U^H L^H P^H X = B
        y = solve_triangular(_mH(U), B, upper=False)
        y = solve_triangular(_mH(L), y, upper=True, unitriangular=True)
        return matmul(P, y)
    y = solve_triangular(L, _permute_rows(P, B), upper=False, unitriangular=True)
    return solve_triangular(U, y, upper=True)


def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:  # noqa: N803 - PyTorch's names
    """``torch.lu_solve``: ``X`` with ``A X = b`` (arguments in the old order)."""
    return linalg_lu_solve(LU_data, LU_pivots, b)


class LdlFactor(Op):
    n_out = 2
    differentiable = False

    def forward(self, a: Any, hermitian: bool) -> Any:
        return self.backend.ldl_factor(a, hermitian)


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False) -> LDLFactorExResult:  # noqa: N803
    """Bunch-Kaufman ``A = L D L^T`` of symmetric matrices in LAPACK's layout (``torch.linalg.ldl_factor_ex``;
    not differentiable, as in PyTorch)."""
    a = _square("linalg.ldl_factor_ex", A)
    LD, piv = LdlFactor.apply(a.detach(), bool(hermitian))
    d = LD.detach().diagonal(0, -2, -1)
    info = _info(LD) if d.numel() else d.sum(-1).int()
    return LDLFactorExResult(LD, piv, info)


def ldl_factor(A: Tensor, *, hermitian: bool = False) -> LDLFactorResult:  # noqa: N803 - PyTorch's name
    """``(LD, pivots)`` of symmetric matrices (``torch.linalg.ldl_factor``)."""
    LD, piv, _ = ldl_factor_ex(A, hermitian=hermitian)
    return LDLFactorResult(LD, piv)


class LdlSolve(Op):
    differentiable = False

    def forward(self, ld: Any, piv: Any, b: Any, hermitian: bool) -> Any:
        return self.backend.ldl_solve(ld, piv, b, hermitian)


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Tensor:  # noqa: N803
    """``X`` with ``A X = B`` from ``ldl_factor``'s result (``torch.linalg.ldl_solve``)."""
    a = _square("linalg.ldl_solve", LD)
    if B.ndim < 2 or B.shape[-2] != a.shape[-1]:
        raise ShapeError(
            f"linalg.ldl_solve: LD of shape {tuple(LD.shape)} and B of shape {tuple(B.shape)} do not match"
        )
    return LdlSolve.apply(a.detach(), pivots, B.detach(), bool(hermitian))  # type: ignore[no-any-return]
