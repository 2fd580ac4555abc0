"""Matrix factorisations and triangular solves: cholesky and solve_triangular (batched, differentiable)."""

from __future__ import annotations

from typing import Any

from .._errors import ShapeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._function import Op
from ._elementwise import _float
from ._layout import diag_embed, diagonal, tril, triu
from ._linalg import matmul
from ._shape import _transpose

__all__: list[str] = []  # public through ember.linalg
METHODS: list[str] = []


def _mt(x: Tensor) -> Tensor:
    return _transpose(x, -1, -2)


def _halve_diag(x: Tensor) -> Tensor:
    return x - 0.5 * diag_embed(diagonal(x, 0, -2, -1))


class Cholesky(Op):
    """``L`` lower-triangular with ``L @ L.mT == A`` (reads A's lower triangle)."""

    saves_inputs = False
    saves_output = True

    def forward(self, a: Any) -> Any:
        xp = self.backend.xp
        try:
            out = xp.linalg.cholesky(a)
        except Exception as e:  # NumPy's LinAlgError, torch's error
            raise ValueRangeError(f"cholesky: the input is not positive-definite ({e})") from None
        if bool(xp.isnan(out).any()):
            raise ValueRangeError("cholesky: the input is not positive-definite")
        self.keep(out)
        return out

    def backward(self, g: Tensor) -> Tensor:
        # Murray (2016): gA = L^-T Phi(L^T gL) L^-1, symmetrised; Phi = lower triangle with half diagonal
        L = self.output()
        phi = _halve_diag(tril(matmul(_mt(L), g)))
        s = solve_triangular(_mt(L), _mt(solve_triangular(_mt(L), phi, upper=True)), upper=True)
        return 0.5 * (s + _mt(s))


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:  # noqa: N803 - PyTorch's name
    """The Cholesky factor of a (batch of) symmetric positive-definite matrices (``torch.linalg.cholesky``)."""
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ShapeError(f"cholesky: expected a (batch of) square matrices, got shape {tuple(A.shape)}")
    L: Tensor = Cholesky.apply(_float(A))
    return _mt(L) if upper else L


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
        from ._util import sum_to

        a, b = self.inputs[:2]  # type: ignore[index]
        x = self.output()
        gb = solve_triangular(_mt(a), g, upper=not self.upper, unitriangular=self.unit)
        ga = None
        if self._req(0):
            ga = -matmul(gb, _mt(x))
            ga = triu(ga, 1 if self.unit else 0) if self.upper else tril(ga, -1 if self.unit else 0)
            ga = sum_to(ga, a.shape)
        return ga, (sum_to(gb, b.shape) if self._req(1) else None), None, None


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
    return SolveTriangular.apply(A, B, upper, unitriangular)  # type: ignore[no-any-return]


def _broadcast_batch(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b, strict=True):
        if x != y and 1 not in (x, y):
            raise ShapeError(f"solve_triangular: batch dims {a} and {b} cannot broadcast")
        out.append(max(x, y))
    return tuple(out)
