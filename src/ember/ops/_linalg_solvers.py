"""Solvers and matrix functions (torch docs, "BLAS and LAPACK Operations"; ``ember.linalg``): the ``*_ex`` variants
that report ``info`` instead of raising, Cholesky solves and inverses, least squares, Householder products, the
matrix exponential, tensor inverses/solves, Vandermonde matrices and vector dot products.

Where PyTorch has a closed-form gradient that differs from differentiating its forward (``cholesky_solve``,
``cholesky_inverse``: the gradient of the full factor, not of its triangle), that form is used.
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

from .._dtype import int32, to_real
from .._errors import LinAlgError, ShapeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._function import Op
from ._blas import matmul
from ._indexing import where
from ._indexing_join import cat
from ._indexing_view import _transpose, reshape, sum_to
from ._lapack import cholesky, inv, solve, solve_triangular
from ._linalg_decomp import _matrices, _square
from ._linalg_norms import pinv
from ._other_cumulative import cumprod
from ._other_diagonal import diagonal as _diagonal
from ._pointwise_complex import cj
from ._reduction import sum as _sum
from ._util import same_dtype

__all__ = ["cholesky_inverse", "cholesky_solve", "matrix_exp", "ormqr", "triangular_solve"]
METHODS = list(__all__)

CholeskyExResult = namedtuple("CholeskyExResult", ["L", "info"])
SolveExResult = namedtuple("SolveExResult", ["result", "info"])
InvExResult = namedtuple("InvExResult", ["inverse", "info"])
LstsqResult = namedtuple("LstsqResult", ["solution", "residuals", "rank", "singular_values"])
TriangularSolveResult = namedtuple("TriangularSolveResult", ["solution", "cloned_coefficient"])


def _mT(x: Tensor) -> Tensor:  # noqa: N802 - PyTorch's name
    return _transpose(x, -1, -2)


def _mH(x: Tensor) -> Tensor:  # noqa: N802 - PyTorch's name
    """The conjugate transpose (the transpose of a real matrix)."""
    return cj(_transpose(x, -1, -2))


def _h(xp: Any, v: Any, complex_dtypes: Any) -> Any:
    """An array's conjugate transpose (its transpose when real)."""
    t = xp.swapaxes(v, -1, -2)
    return xp.conj(t) if v.dtype in complex_dtypes else t


def _batch_info(A: Tensor, ok: Any) -> Tensor:  # noqa: N803
    """An int32 ``info`` of A's batch shape: 0 where ``ok(matrix)``, else the failing order (1-based)."""
    batch = tuple(A.shape[:-2])
    if A.numel() == 0:
        return A.new_zeros(batch, dtype=int32)
    mats = reshape(A.detach(), (math.prod(batch), *A.shape[-2:]))
    vals = [ok(mats[i]) for i in range(mats.shape[0])]
    return A.new_tensor(vals, dtype=int32).reshape(batch) if batch else A.new_tensor(vals[0], dtype=int32)


def _first_failing_minor(a: Tensor) -> int:
    """0 if ``a`` is positive-definite, else the order of its first leading minor that is not."""
    n = a.shape[-1]
    try:
        cholesky(a)
        return 0
    except ValueError:
        pass
    for k in range(1, n + 1):
        try:
            cholesky(a[:k, :k])
        except ValueError:
            return k
    return n


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> CholeskyExResult:  # noqa: N803
    """``(L, info)`` (``torch.linalg.cholesky_ex``): ``info`` is the order of the first leading minor that is not
    positive-definite (0: success); where it fails, ``L`` is zero (PyTorch leaves a partial factor)."""
    a = _square("linalg.cholesky_ex", A)
    try:
        return CholeskyExResult(cholesky(a, upper=upper), a.new_zeros(tuple(a.shape[:-2]), dtype=int32))
    except ValueError:
        if check_errors:
            raise
    info = _batch_info(a, _first_failing_minor)
    good = (info == 0).unsqueeze(-1).unsqueeze(-1).to(a.dtype)
    L = cholesky(good * a + (1 - good) * _eye_like(a), upper=upper) * good
    return CholeskyExResult(L, info)


def _eye_like(a: Tensor) -> Tensor:
    be = a._backend
    return Tensor._make(be.xp.eye(a.shape[-1], dtype=a._data.dtype), be)


def _singular_info(a: Tensor) -> int:
    from ._linalg_lu import lu_factor_ex

    return int(lu_factor_ex(a).info)


def inv_ex(A: Tensor, *, check_errors: bool = False) -> InvExResult:  # noqa: N803 - PyTorch's name
    """``(inverse, info)`` (``torch.linalg.inv_ex``): ``info > 0`` for a singular matrix (its inverse is then NaN)."""
    a = _square("linalg.inv_ex", A)
    info = _batch_info(a, _singular_info)
    if check_errors and bool((info != 0).any()):
        raise LinAlgError("linalg.inv_ex: the matrix is singular")
    good = (info == 0).unsqueeze(-1).unsqueeze(-1)
    safe = where(good, a, _eye_like(a))
    return InvExResult(where(good, inv(safe), math.nan), info)


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False) -> SolveExResult:  # noqa: N803
    """``(X, info)`` (``torch.linalg.solve_ex``): ``info > 0`` for a singular ``A``."""
    a = _square("linalg.solve_ex", A)
    info = _batch_info(a, _singular_info)
    if check_errors and bool((info != 0).any()):
        raise LinAlgError("linalg.solve_ex: the matrix is singular")
    if bool((info == 0).all()):
        return SolveExResult(solve(a, B, left=left), info)
    X, _ = inv_ex(a)
    return SolveExResult(matmul(X, B) if left else matmul(B, X), info)


class CholeskySolve(Op):
    saves_output = True

    def forward(self, b: Any, lf: Any, upper: bool) -> Any:
        xp = self.backend.xp
        self.upper = upper
        cd = self.backend.complex_dtypes
        t = _h(xp, lf, cd) if upper else lf  # the lower factor: A = t t^H
        tb = xp.broadcast_to(t, b.shape[:-2] + t.shape[-2:]) if b.ndim > t.ndim else t
        y = xp.linalg.solve(tb, b)
        x = xp.linalg.solve(_h(xp, tb, cd), y)
        self.keep(x)
        return x

    def backward(self, g: Tensor) -> tuple[Any, Any, None]:
        b, lf = self.inputs[0], self.inputs[1]  # type: ignore[index]
        x = self.output()
        gb = cholesky_solve(g, lf, self.upper) if self._req(0) else None
        gl = None
        if self._req(1):
            common = matmul(gb if gb is not None else cholesky_solve(g, lf, self.upper), _mH(x))
            common = common + _mH(common)
            gl = -matmul(lf, common) if self.upper else -matmul(common, lf)
            gl = _sum_to_batch(gl, lf.shape)
        return (_sum_to_batch(gb, b.shape) if gb is not None else None), gl, None


def _sum_to_batch(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    return sum_to(g, tuple(shape))


def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False) -> Tensor:
    """``X`` with ``A X = B`` for ``A = L L^T`` given its Cholesky factor (``torch.cholesky_solve(B, L, upper)``)."""
    b, lf = _matrices("cholesky_solve", input), _square("cholesky_solve", input2)
    same_dtype("cholesky_solve", "B and L", b, lf)
    if b.shape[-2] != lf.shape[-1]:
        raise ShapeError(f"cholesky_solve: B of shape {tuple(b.shape)} and L of shape {tuple(lf.shape)} do not match")
    return CholeskySolve.apply(b, lf, bool(upper))  # type: ignore[no-any-return]


class CholeskyInverse(Op):
    saves_output = True

    def forward(self, lf: Any, upper: bool) -> Any:
        xp = self.backend.xp
        self.upper = upper
        cd = self.backend.complex_dtypes
        t = _h(xp, lf, cd) if upper else lf
        ti = xp.linalg.inv(t)
        y = xp.matmul(_h(xp, ti, cd), ti)  # (t t^H)^-1 = t^-H t^-1
        self.keep(y)
        return y

    def backward(self, g: Tensor) -> tuple[Tensor, None]:
        lf = self.inputs[0]  # type: ignore[index]
        y = self.output()
        common = matmul(y, matmul(g + _mH(g), y))
        return (-matmul(lf, common) if self.upper else -matmul(common, lf)), None


def cholesky_inverse(input: Tensor, upper: bool = False) -> Tensor:
    """``(L L^T)^-1`` from a Cholesky factor (``torch.cholesky_inverse``)."""
    return CholeskyInverse.apply(_square("cholesky_inverse", input), bool(upper))  # type: ignore[no-any-return]


def triangular_solve(
    b: Tensor,
    A: Tensor,  # noqa: N803 - PyTorch's name
    upper: bool = True,
    transpose: bool = False,
    unitriangular: bool = False,
) -> TriangularSolveResult:
    """``torch.triangular_solve``: ``(X, A.clone())`` with ``op(A) X = b``, ``op`` the transpose when asked."""
    a = _square("triangular_solve", A)
    x = solve_triangular(_mT(a) if transpose else a, b, upper=upper != transpose, unitriangular=unitriangular)
    return TriangularSolveResult(x, a.clone())


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None) -> LstsqResult:  # noqa: N803
    """The least-squares solution of ``A X = B`` (``torch.linalg.lstsq``), by the pseudo-inverse (so its gradient
    is PyTorch's: ``pinv_backward`` for ``A``, ``pinv(A)^T g`` for ``B``). ``residuals``: the squared residual
    norms when ``A`` is tall and of full rank (else empty); ``rank``/``singular_values`` for the gelsd/gelss/gelsy
    drivers as PyTorch reports them."""
    if driver not in (None, "gels", "gelsy", "gelsd", "gelss"):
        raise ValueRangeError(f"linalg.lstsq: driver must be one of gels, gelsy, gelsd, gelss, got {driver!r}")
    a = _matrices("linalg.lstsq", A)
    same_dtype("linalg.lstsq", "A and B", a, B)
    vec = B.ndim == a.ndim - 1
    b = B.unsqueeze(-1) if vec else B
    if b.shape[-2] != a.shape[-2]:
        raise ShapeError(f"linalg.lstsq: A of shape {tuple(A.shape)} and B of shape {tuple(B.shape)} do not match")
    drv = driver or "gelsy"
    X = matmul(pinv(a, rtol=rcond), b)
    m, n = a.shape[-2], a.shape[-1]
    from ._linalg_decomp import svdvals
    from ._linalg_norms import matrix_rank

    rank = matrix_rank(a, rtol=rcond) if drv != "gels" else a.new_zeros((0,)).long()
    real = to_real(a.dtype)
    sv = svdvals(a.detach()) if drv in ("gelsd", "gelss") else a.new_zeros((0,), dtype=real)
    residuals = a.new_zeros((0,), dtype=real)
    if m > n and drv != "gelsy" and bool((matrix_rank(a.detach()) == n).all()):
        r = matmul(a, X) - b
        residuals = _sum((r * cj(r)).real if r.dtype.is_complex else r * r, -2)  # |r|^2
    return LstsqResult(X.squeeze(-1) if vec else X, residuals, rank, sv)


def householder_product(A: Tensor, tau: Tensor) -> Tensor:  # noqa: N803 - PyTorch's name
    """The first ``n`` columns of ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^H`` (``torch.linalg.householder_product``,
    LAPACK's ``orgqr``); differentiable in ``A`` and ``tau``."""
    a = _matrices("linalg.householder_product", A)
    m, n = a.shape[-2], a.shape[-1]
    k = tau.shape[-1]
    if k > n or n > m:
        raise ShapeError(
            "linalg.householder_product: need tau.shape[-1] <= A.shape[-1] <= A.shape[-2], "
            f"got A {tuple(A.shape)} and tau {tuple(tau.shape)}"
        )
    q = a.new_zeros((*a.shape[:-2], m, n)) + _eye_like(a.new_zeros((m, m)))[..., :n]
    for i in reversed(range(k)):
        v = cat([a.new_zeros((*a.shape[:-2], i)), a.new_ones((*a.shape[:-2], 1)), a[..., i + 1 :, i]], -1)
        vq = matmul(cj(v).unsqueeze(-2), q)  # v^H q: (..., 1, n)
        q = q - tau[..., i, None, None] * matmul(v.unsqueeze(-1), vq)
    return q


def ormqr(input: Tensor, input2: Tensor, input3: Tensor, left: bool = True, transpose: bool = False) -> Tensor:
    """``op(Q) @ input3`` (``left``) or ``input3 @ op(Q)``, ``Q`` the square product of the Householder reflectors
    ``(input, input2)`` that ``geqrf`` returns and ``op`` its conjugate transpose when ``transpose``
    (``torch.ormqr``, LAPACK's ``ormqr``); differentiable in all three."""
    a, tau, c = input, input2, input3
    if a.ndim < 2 or c.ndim < 2:
        raise ShapeError(f"ormqr: input and other need 2 or more dims, got {tuple(a.shape)} and {tuple(c.shape)}")
    side = -2 if left else -1
    mq, k = a.shape[-2], tau.shape[-1]
    if c.shape[side] != mq:
        raise ShapeError(f"ormqr: other.shape[{side}] must equal input.shape[-2] ({mq}), got {tuple(c.shape)}")
    if tau.ndim != a.ndim - 1 or k != min(mq, a.shape[-1]) or tau.shape[:-1] != a.shape[:-2]:
        raise ShapeError(f"ormqr: tau must have shape (*batch, min(input.shape[-2:])), got {tuple(tau.shape)} for "
                         f"input {tuple(a.shape)}")  # fmt: skip
    if a.shape[:-2] != c.shape[:-2]:
        raise ShapeError(f"ormqr: input and other need the same batch dims, got {tuple(a.shape)}, {tuple(c.shape)}")
    same_dtype("ormqr", "input, tau and other", a, tau, c)
    v = a[..., :, :k]
    q = householder_product(cat([v, v.new_zeros((*v.shape[:-1], mq - k))], -1) if mq > k else v, tau)
    q = cj(_transpose(q, -1, -2)) if transpose else q
    return matmul(q, c) if left else matmul(c, q)


class MatrixExp(Op):
    saves_inputs = True

    def forward(self, a: Any) -> Any:
        return self.backend.matrix_exp(a)

    def backward(self, g: Tensor) -> Tensor:
        # exp([[A^H, G], [0, A^H]]) holds the gradient in its upper-right block (PyTorch's formula)
        a = self.inputs[0]  # type: ignore[index]
        n = a.shape[-1]
        at = _mH(a)
        top = cat([at, g], -1)
        bottom = cat([a.new_zeros(a.shape), at], -1)
        big = matrix_exp(cat([top, bottom], -2))
        return big[..., :n, n:]


def matrix_exp(A: Tensor) -> Tensor:  # noqa: N803 - PyTorch's name
    """The matrix exponential of square matrices (``torch.linalg.matrix_exp``)."""
    return MatrixExp.apply(_square("linalg.matrix_exp", A))  # type: ignore[no-any-return]


def tensorinv(A: Tensor, ind: int = 2) -> Tensor:  # noqa: N803 - PyTorch's name
    """The inverse of ``A`` as a linear map from its last dims to its first ``ind`` (``torch.linalg.tensorinv``)."""
    if ind <= 0:
        raise ValueRangeError(f"linalg.tensorinv: ind must be a positive integer, got {ind}")
    out_shape, in_shape = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    rows, cols = math.prod(out_shape), math.prod(in_shape)
    if rows != cols:
        raise ShapeError(
            f"linalg.tensorinv: the product of the first {ind} dims must equal that of the rest, got {tuple(A.shape)}"
        )
    return reshape(inv(reshape(A, (rows, cols))), in_shape + out_shape)


def tensorsolve(A: Tensor, B: Tensor, dims: Any = None) -> Tensor:  # noqa: N803 - PyTorch's names
    """``X`` with ``tensordot(A, X, X.ndim) = B`` (``torch.linalg.tensorsolve``)."""
    a = A
    if dims is not None:
        order = [d % A.ndim for d in dims]
        a = A.permute(*[d for d in range(A.ndim) if d not in order], *order)
    x_shape = tuple(a.shape[B.ndim :])
    rows, cols = math.prod(B.shape), math.prod(x_shape)
    if rows != cols:
        raise ShapeError(
            f"linalg.tensorsolve: A of shape {tuple(A.shape)} and B of shape {tuple(B.shape)} do not match"
        )
    return reshape(solve(reshape(a, (rows, cols)), reshape(B, (rows,))), x_shape)


def vander(x: Tensor, *, N: int | None = None) -> Tensor:  # noqa: N803 - PyTorch's name
    """``[1, x, x**2, ..., x**(N-1)]`` along a new last dim (``torch.linalg.vander``; increasing powers)."""
    if x.ndim == 0:  # PyTorch: a 0-d x is a vector of one
        x = x.reshape(1)
    n = x.shape[-1] if N is None else int(N)
    if n <= 1:
        raise ValueRangeError(f"linalg.vander: N must be greater than 1, got {n}")
    ones = x.new_ones((*x.shape, 1))
    powers = cumprod(x.unsqueeze(-1).expand(*x.shape, n - 1), -1)
    return cat([ones, powers], -1)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """The dot product of vectors along ``dim`` (``torch.linalg.vecdot``), broadcasting the rest."""
    return _sum(cj(x) * y, dim)  # conj(x) . y, as PyTorch


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:  # noqa: N803 - PyTorch's name
    """``torch.linalg.diagonal``: the diagonal of the last two dims by default (a view)."""
    return _diagonal(A, offset, dim1, dim2)
