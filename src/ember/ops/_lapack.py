"""Matrix decompositions and solvers (torch docs, "BLAS and LAPACK Operations"; ``ember.linalg``): inverse,
determinants, solves, Cholesky, pseudo-inverse.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from .._errors import LinAlgError, ShapeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._autocast import autocast_op
from ..autograd._function import Op
from ._blas import matmul
from ._indexing import where
from ._indexing_view import _transpose, sum_to, unsqueeze
from ._other_diagonal import diag_embed, tril, triu
from ._other_math import cross as _cross
from ._pointwise_complex import cj
from ._util import _float, broadcast_shapes, same_dtype

__all__ = ["det", "inverse", "logdet", "matrix_power", "slogdet"]
METHODS = list(__all__)


SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])


def _mT(x: Tensor) -> Tensor:  # noqa: N802 - PyTorch's name
    return _transpose(x, -1, -2)


def _mH(x: Tensor) -> Tensor:  # noqa: N802 - PyTorch's name
    """The conjugate transpose (the transpose of a real matrix)."""
    return cj(_transpose(x, -1, -2))


def _square(op: str, A: Tensor) -> Tensor:  # noqa: N803 - PyTorch's name
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ShapeError(f"{op}: expected square matrices (..., n, n), got shape {tuple(A.shape)}")
    return _float(A)


class Inv(Op):
    saves_inputs = False
    saves_output = True

    def forward(self, a: Any) -> Any:
        xp = self.backend.xp
        try:
            y = xp.linalg.inv(a)
        except Exception as e:  # the array library's LinAlgError
            raise LinAlgError(f"inv: the matrix is singular ({e})") from None
        self.keep(y)
        return y

    def backward(self, g: Tensor) -> Tensor:
        y = _mH(self.output())  # d(A^-1) = -A^-1 dA A^-1, so gA = -A^-H g A^-H
        return -matmul(matmul(y, g), y)


def inv(A: Tensor) -> Tensor:  # noqa: N803 - PyTorch's name
    """The inverse of square matrices (a ``RuntimeError``/``ValueError`` when singular)."""
    return Inv.apply(_square("inv", A))


inverse = inv


class Slogdet(Op):
    n_out = 2
    saves_output = True

    def forward(self, a: Any) -> Any:
        sign, logabs = self.backend.xp.linalg.slogdet(a)
        self.keep(sign)
        return sign, logabs

    def backward(self, g_sign: Any, g_log: Any) -> Tensor:
        """``gA = g A^-H`` with ``g = g_log + i Im(g_sign conj(sign))`` (PyTorch's ``slogdet_backward``): ``d log|det A|
        = Re tr(A^-1 dA)`` and ``d sign = i sign Im tr(A^-1 dA)``; a real sign is locally constant."""
        (a,) = self.inputs  # type: ignore[misc]
        g = g_log
        if g_sign is not None and a.dtype.is_complex:
            phase = (g_sign * cj(self.output(0))).imag * 1j
            g = phase if g is None else g + phase
        if g is None:
            return a.new_zeros(a.shape)
        return unsqueeze(unsqueeze(g, -1), -1) * _mH(inv(a))  # d log|det A| = tr(A^-1 dA)


def slogdet(A: Tensor) -> SlogdetResult:  # noqa: N803 - PyTorch's name
    """``(sign, log|det A|)`` of square matrices; the gradient flows through ``logabsdet`` (and, for complex
    matrices, through the phase ``sign``)."""
    sign, logabs = Slogdet.apply(_square("slogdet", A))
    return SlogdetResult(sign if sign.dtype.is_complex else sign.detach(), logabs)


def det(A: Tensor) -> Tensor:  # noqa: N803 - PyTorch's name
    """Determinant of square matrices (gradient ``det(A) * A^-T``)."""
    x = _square("det", A)
    return Det.apply(x)


class Det(Op):
    saves_output = True

    def forward(self, a: Any) -> Any:
        y = self.backend.xp.linalg.det(a)
        self.keep(y)
        return y

    def backward(self, g: Tensor) -> Tensor:
        """``d det A = tr(adj(A) dA)``: ``gA = g adj(A)^H``, which is ``g conj(det A) A^-H``; where a determinant of
        the batch is below 100 eps (singular or nearly), the adjugate by SVD (PyTorch's ``linalg_det_backward``)."""
        (a,) = self.inputs  # type: ignore[misc]
        d = self.output().detach().abs()
        if bool((d < 100 * a._backend.finfo(d._data.dtype).eps).any()):  # (det A) A^-1 would lose the digits
            return _det_backward_singular(g, a)
        try:
            a_inv = inv(a)
        except LinAlgError:
            return _det_backward_singular(g, a)
        return unsqueeze(unsqueeze(g * cj(self.output()), -1), -1) * _mH(a_inv)


def _det_backward_singular(g: Tensor, a: Tensor) -> Tensor:
    """``g adj(A)^H`` for any square ``A = U diag(S) V^H``: ``adj(A)^H = conj(det U det V^H) U diag(p) V^H`` with
    ``p_i`` the product of the singular values other than ``S_i``."""
    from ._linalg_decomp import linalg_svd
    from ._reduction import prod

    U, S, Vh = linalg_svd(a)
    eye = diag_embed(S.new_ones((S.shape[-1],)))
    p = prod(unsqueeze(S, -2) * (1 - eye) + eye, -1)  # row i: S with S_i replaced by 1
    phase = cj(det(U) * det(Vh))
    return unsqueeze(unsqueeze(g * phase, -1), -1) * matmul(U * unsqueeze(p, -2), Vh)


def logdet(A: Tensor) -> Tensor:  # noqa: N803 - PyTorch's name
    """``log(det A)`` (NaN for a negative determinant, as in PyTorch; complex: ``log|det A| + log(sign)``)."""
    s = slogdet(A)
    if s.sign.dtype.is_complex:
        return s.logabsdet + s.sign.log()
    return where(s.sign < 0, float("nan"), s.logabsdet)


class Solve(Op):
    """``X`` with ``A @ X == B`` by the array library's LU solve (more accurate than ``A``'s inverse times ``B`` on
    ill-conditioned matrices); the batch dims broadcast."""

    saves_output = True

    def forward(self, a: Any, b: Any) -> Any:
        xp = self.backend.xp
        batch = broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]), op="solve")
        try:
            x = xp.linalg.solve(xp.broadcast_to(a, batch + a.shape[-2:]), xp.broadcast_to(b, batch + b.shape[-2:]))
        except Exception as e:  # the array library's LinAlgError
            raise LinAlgError(f"solve: the matrix A is singular ({e})") from None
        self.keep(x)
        return x

    def backward(self, g: Tensor) -> tuple[Any, ...]:
        a, b = self.inputs[:2]  # type: ignore[index]
        gb = solve(cj(_mt(a)), g)  # A^-H g
        ga = sum_to(-matmul(gb, cj(_mt(self.output()))), a.shape) if self._req(0) else None
        return ga, (sum_to(gb, b.shape) if self._req(1) else None)


@autocast_op("solve")
def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:  # noqa: N803 - PyTorch's name
    """``X`` with ``A @ X = B`` (``left=False``: ``X @ A = B``); ``B`` may be a vector."""
    a = _square("solve", A)
    if not left:
        return _mT(solve(_mT(a), _mT(B)))
    vector = B.ndim == 1 or (B.ndim == a.ndim - 1 and B.shape == a.shape[:-1])
    b = unsqueeze(B, -1) if vector else B
    if b.ndim < 2 or b.shape[-2] != a.shape[-1]:
        raise ShapeError(f"solve: A of shape {tuple(A.shape)} and B of shape {tuple(B.shape)} do not match")
    same_dtype("linalg.solve", "A and B", a, b)
    x = Solve.apply(a, b)
    return x.squeeze(-1) if vector else x  # type: ignore[no-any-return]


def matrix_power(input: Tensor, n: int) -> Tensor:
    """``input`` multiplied by itself ``n`` times (``n < 0``: powers of the inverse; 0: the identity)."""
    if input.ndim < 2 or input.shape[-1] != input.shape[-2]:
        raise ShapeError(f"matrix_power: expected square matrices (..., n, n), got shape {tuple(input.shape)}")
    a = _float(input) if n < 0 else input
    if n == 0:
        from .._creation import eye

        i = eye(input.shape[-1], dtype=input.dtype, device=input.device)
        return i.expand(*input.shape).clone() if input.ndim > 2 else i
    base = inv(a) if n < 0 else a
    out, p, k = None, base, abs(n)
    while k:  # square-and-multiply
        if k & 1:
            out = p if out is None else matmul(out, p)
        k >>= 1
        if k:
            p = matmul(p, p)
    return out  # type: ignore[return-value]


@autocast_op("multi_dot")
def multi_dot(tensors: Any) -> Tensor:
    """``tensors[0] @ tensors[1] @ ...`` (1-d first/last operands are a row/column vector)."""
    ts = list(tensors)
    if len(ts) < 2:
        raise ValueRangeError(f"multi_dot: expected at least 2 tensors, got {len(ts)}")
    out = ts[0]
    for t in ts[1:]:
        out = matmul(out, t)
    return out


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """Cross product of 3-vectors along ``dim`` (default the last)."""
    return _cross(input, other, dim)


def _mt(x: Tensor) -> Tensor:
    return _transpose(x, -1, -2)


class Cholesky(Op):
    """``L`` lower-triangular with ``L @ L.mH == A`` (reads A's lower triangle)."""

    saves_inputs = False
    saves_output = True

    def forward(self, a: Any) -> Any:
        xp = self.backend.xp
        try:
            out = xp.linalg.cholesky(a)
        except Exception as e:  # NumPy's LinAlgError, torch's error
            raise LinAlgError(f"cholesky: the input is not positive-definite ({e})") from None
        if bool(xp.isnan(out).any()):
            raise LinAlgError("cholesky: the input is not positive-definite")
        self.keep(out)
        return out

    def backward(self, g: Tensor) -> Tensor:
        """PyTorch's ``cholesky_backward`` (Murray 2016): ``gA = L^-H M L^-1`` with ``P = L^H gL`` and
        ``M = (tril(P) + tril(P, -1)^H) / 2``, Hermitian off the diagonal."""
        L = self.output()
        P = tril(matmul(_mH(L), g))
        M = 0.5 * (P + _mH(tril(P, -1)))
        return solve_triangular(L, solve_triangular(_mH(L), M, upper=True), upper=False, left=False)


@autocast_op("cholesky")
def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:  # noqa: N803 - PyTorch's name
    """The Cholesky factor of a (batch of) symmetric positive-definite matrices (``torch.linalg.cholesky``)."""
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ShapeError(f"cholesky: expected a (batch of) square matrices, got shape {tuple(A.shape)}")
    L: Tensor = Cholesky.apply(_float(A))
    return cj(_mt(L)) if upper else L  # U = L^H


class SolveTriangular(Op):
    """``X`` with ``A @ X == B`` for triangular ``A`` (only A's triangle is read)."""

    def forward(self, a: Any, b: Any, upper: bool, unitriangular: bool) -> Any:
        xp = self.backend.xp
        self.upper, self.unit = upper, unitriangular
        t = xp.triu(a) if upper else xp.tril(a)
        if unitriangular:
            n = a.shape[-1]
            eye = xp.eye(n, dtype=a.dtype)
            t = t * (1 - eye) + eye
        x = xp.linalg.solve(xp.broadcast_to(t, b.shape[:-2] + t.shape[-2:]) if b.ndim > t.ndim else t, b)
        self.keep(x)
        return x

    saves_output = True

    def backward(self, g: Tensor) -> tuple[Any, ...]:

        a, b = self.inputs[:2]  # type: ignore[index]
        x = self.output()
        gb = solve_triangular(cj(_mt(a)), g, upper=not self.upper, unitriangular=self.unit)  # A^-H g
        ga = None
        if self._req(0):
            ga = -matmul(gb, cj(_mt(x)))
            ga = triu(ga, 1 if self.unit else 0) if self.upper else tril(ga, -1 if self.unit else 0)
            ga = sum_to(ga, a.shape)
        return ga, (sum_to(gb, b.shape) if self._req(1) else None), None, None


@autocast_op("solve_triangular")
def solve_triangular(
    A: Tensor,  # noqa: N803 - PyTorch's names
    B: Tensor,  # noqa: N803
    *,
    upper: bool,
    left: bool = True,
    unitriangular: bool = False,
) -> Tensor:
    """Solve ``A X = B`` (``left=False``: ``X A = B``) for triangular ``A`` (``torch.linalg.solve_triangular``)."""
    if A.ndim < 2 or A.shape[-1] != A.shape[-2] or B.ndim < 2:
        raise ShapeError(f"solve_triangular: expected square A and matrix B, got {tuple(A.shape)} and {tuple(B.shape)}")
    if not left:
        return _mt(solve_triangular(_mt(A), _mt(B), upper=not upper, unitriangular=unitriangular))
    if A.shape[-1] != B.shape[-2]:
        raise ShapeError(f"solve_triangular: A {tuple(A.shape)} and B {tuple(B.shape)} do not align")
    A, B = _float(A), _float(B)
    if A.dtype is not B.dtype:
        raise ValueRangeError(f"solve_triangular: A and B must have the same dtype, got {A.dtype} and {B.dtype}")
    if A.ndim > B.ndim or A.shape[:-2] != B.shape[:-2]:
        batch = _broadcast_batch(A.shape[:-2], B.shape[:-2])
        if A.shape[:-2] != batch:
            A = A.expand(*batch, *A.shape[-2:])
        if B.shape[:-2] != batch:
            B = B.expand(*batch, *B.shape[-2:])
    return SolveTriangular.apply(A, B, upper, unitriangular)


def _broadcast_batch(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b, strict=True):
        if x != y and 1 not in (x, y):
            raise ShapeError(f"solve_triangular: batch dims {a} and {b} cannot broadcast")
        out.append(max(x, y))
    return tuple(out)
