"""Norms and what is measured with them (torch docs, "BLAS and LAPACK Operations"; ``ember.linalg``): vector and
matrix norms, condition numbers, rank, and the pseudo-inverse.

``vector_norm``'s gradient is PyTorch's ``norm_backward``: zero where the norm is zero, spread evenly over the
tied maxima for ``ord=inf``, zero for ``ord=0``.
"""

from __future__ import annotations

import math
from typing import Any

from .._errors import ShapeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._autocast import autocast_op
from ..autograd._function import Op
from ._blas import matmul
from ._comparison import eq, isnan, maximum
from ._indexing import where
from ._indexing_view import _transpose, movedim, unsqueeze
from ._lapack import inv
from ._linalg_decomp import _matrices, _square, eigvalsh, svdvals
from ._pointwise_complex import cj
from ._pointwise_logical import logical_or
from ._reduction import amax, amin
from ._reduction import sum as _sum
from ._util import _float, norm_dims

__all__ = ["dist", "pinverse"]
METHODS = list(__all__)


def _mT(x: Tensor) -> Tensor:  # noqa: N802 - PyTorch's name
    return _transpose(x, -1, -2)


def _mH(x: Tensor) -> Tensor:  # noqa: N802 - PyTorch's name
    """The conjugate transpose (the transpose of a real matrix)."""
    return cj(_mT(x))


def _expand_back(t: Tensor, ndim: int, axes: tuple[int, ...], keepdim: bool) -> Tensor:
    if keepdim or not ndim:
        return t
    for a in axes:
        t = unsqueeze(t, a)
    return t


class VectorNorm(Op):
    saves_output = True

    def forward(self, x: Any, ord: float, axes: tuple[int, ...], keepdim: bool) -> Any:
        xp = self.backend.xp
        self.ord, self.axes, self.keepdim, self.ndim = ord, axes, keepdim, x.ndim
        a = xp.abs(x)
        if ord == math.inf:
            y = xp.max(a, axis=axes, keepdims=keepdim) if math.prod(a.shape) else xp.sum(a, axis=axes, keepdims=keepdim)
        elif ord == -math.inf:
            y = xp.min(a, axis=axes, keepdims=keepdim)
        elif ord == 0:
            y = xp.sum(xp.astype(x != 0, a.dtype), axis=axes, keepdims=keepdim)
        elif ord == 1:
            y = xp.sum(a, axis=axes, keepdims=keepdim)
        elif ord == 2:
            y = xp.sqrt(xp.sum(a * a, axis=axes, keepdims=keepdim))
        else:
            y = xp.sum(a**ord, axis=axes, keepdims=keepdim) ** (1.0 / ord)
        y = xp.asarray(y, dtype=a.dtype)  # real for complex x
        self.keep(y)
        return y

    def backward(self, g: Tensor) -> tuple[Any, None, None, None]:
        x = self.inputs[0]  # type: ignore[index]
        p = self.ord
        if p == 0:  # PyTorch: no gradient (an undefined one)
            return None, None, None, None
        norm = _expand_back(self.output(), self.ndim, self.axes, self.keepdim)
        g = _expand_back(g, self.ndim, self.axes, self.keepdim)
        if p == 1:
            return x.sgn() * g, None, None, None
        if p == 2:
            return g * where(norm == 0, 0.0, x / where(norm == 0, 1.0, norm)), None, None, None
        if math.isinf(p):
            a = x.abs()
            mask = logical_or(eq(a, norm), isnan(a)).to(x.dtype)
            return x.sgn() * ((g / _sum(mask, self.axes, keepdim=True)) * mask), None, None, None
        if p < 1:
            scaled = x.sgn() * where(x == 0, 0.0, x.abs() ** (p - 1))
            return scaled * g * norm ** (1 - p), None, None, None
        scaled = x.sgn() * x.abs() ** (p - 1) if p < 2 else x * x.abs() ** (p - 2)
        scale = where(norm == 0, 0.0, g / where(norm == 0, 1.0, norm ** (p - 1)))
        return scaled * scale, None, None, None


def _ord(op: str, ord: Any) -> float:
    if isinstance(ord, str) or ord is None:
        raise ValueRangeError(f"{op}: ord must be a number (or inf/-inf) for a vector norm, got {ord!r}")
    return float(ord)


def vector_norm(
    x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False, *, dtype: Any = None, out: Any = None
) -> Tensor:
    """The vector ``ord``-norm of ``x`` over ``dim`` (all elements by default) (``torch.linalg.vector_norm``)."""
    p = _ord("linalg.vector_norm", ord)
    t = _float(x if dtype is None else x.to(dtype))
    axes = norm_dims(dim, t.ndim, "linalg.vector_norm")
    if p < 0 and t.numel() == 0:
        raise ShapeError(f"linalg.vector_norm: a negative order needs a non-empty input, got shape {tuple(x.shape)}")
    if p == -math.inf or (p == math.inf and t.numel() == 0 and axes):
        for a in axes:
            if t.shape[a] == 0:
                raise ShapeError(
                    f"linalg.vector_norm: cannot compute the {p} norm over dim {a} of size 0 (shape {tuple(x.shape)})"
                )
    if t.dtype.name in ("float16", "bfloat16"):  # accumulated in float32 (PyTorch's): 300, 400 gave inf, not 500
        return VectorNorm.apply(t.float(), p, axes, keepdim).to(t.dtype)  # type: ignore[no-any-return]
    return VectorNorm.apply(t, p, axes, keepdim)  # type: ignore[no-any-return]


def _two_dims(op: str, dim: Any, ndim: int) -> tuple[int, int]:
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise ValueRangeError(f"{op}: dim must be a 2-tuple of ints, got {dim!r}")
    d = norm_dims(tuple(dim), ndim, op)
    return (int(dim[0]) % ndim, int(dim[1]) % ndim) if len(d) == 2 else (d[0], d[0])


def matrix_norm(
    A: Tensor,  # noqa: N803 - PyTorch's name
    ord: Any = "fro",
    dim: Any = (-2, -1),
    keepdim: bool = False,
    *,
    dtype: Any = None,
) -> Tensor:
    """The matrix norm of ``A`` over the two dims ``dim``: 'fro', 'nuc', inf, -inf, 1, -1, 2, -2
    (``torch.linalg.matrix_norm``)."""
    a = _float(A if dtype is None else A.to(dtype))
    if a.ndim < 2:
        raise ShapeError(f"linalg.matrix_norm: expected a tensor with 2 or more dimensions, got shape {tuple(A.shape)}")
    d0, d1 = _two_dims("linalg.matrix_norm", dim, a.ndim)
    if d0 == d1:
        raise ValueRangeError(f"linalg.matrix_norm: dims must be different, got {tuple(dim)}")
    if ord == "fro":
        return vector_norm(a, 2, (d0, d1), keepdim)
    m = movedim(a, (d0, d1), (-2, -1))
    if ord == "nuc" or ord in (2, -2, 2.0, -2.0):
        s = svdvals(m)
        r = _sum(s, -1) if ord == "nuc" else amax(s, -1) if ord in (2, 2.0) else amin(s, -1)
    elif ord in (1, -1, math.inf, -math.inf):
        inner = -2 if ord in (1, -1) else -1
        sums = vector_norm(m, 1, inner)
        r = amax(sums, -1) if ord > 0 else amin(sums, -1)
    else:
        raise ValueRangeError(f"linalg.matrix_norm: ord must be 'fro', 'nuc', inf, -inf, 1, -1, 2 or -2, got {ord!r}")
    if keepdim:
        for d in sorted((d0, d1)):
            r = unsqueeze(r, d)
    return r


def linalg_norm(
    A: Tensor,  # noqa: N803 - PyTorch's name
    ord: Any = None,
    dim: Any = None,
    keepdim: bool = False,
    *,
    dtype: Any = None,
) -> Tensor:
    """``torch.linalg.norm``: a vector norm over one dim (or all, flattened, when ``ord`` is None), a matrix norm
    over two."""
    if dim is not None and not isinstance(dim, int) and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    if dim is None and ord is not None:
        if A.ndim == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
        if A.ndim != 1:
            raise ShapeError(
                f"linalg.norm: input must be 1-D or 2-D when ord is given and dim is None, got shape {tuple(A.shape)}"
            )
    if isinstance(ord, str):
        raise ValueRangeError(f"linalg.norm: ord={ord!r} needs a matrix (dim of two dims or a 2-D input)")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def cond(A: Tensor, p: Any = None) -> Tensor:  # noqa: N803 - PyTorch's name
    """The condition number of ``A`` in the ``p`` norm (``torch.linalg.cond``; None/2: ``s_max / s_min``)."""
    if p in (None, 2, -2, 2.0, -2.0):
        s = svdvals(_matrices("linalg.cond", A))
        big, small = amax(s, -1), amin(s, -1)
        return small / big if p in (-2, -2.0) else big / small
    a = _square("linalg.cond", A)
    return matrix_norm(a, p) * matrix_norm(inv(a), p)


def _eps(dtype: Any) -> float:
    return 2.220446049250313e-16 if dtype.itemsize == 8 else 1.1920928955078125e-07


def _tolerances(atol: Any, rtol: Any, m: int, n: int, dtype: Any) -> tuple[Any, Any]:
    """PyTorch's defaults: ``rtol = eps * max(m, n)`` when ``atol`` is not given (or 0), else 0. Tensor tolerances
    (one per matrix of the batch) come back as tensors with a trailing dim of 1, to broadcast over singular values."""
    default = _eps(dtype) * max(m, n)
    if not isinstance(atol, Tensor) and not isinstance(rtol, Tensor):
        if rtol is None:
            rtol = default if not atol else 0.0
        return float(atol or 0.0), float(rtol)
    at = unsqueeze(atol.detach().double(), -1) if isinstance(atol, Tensor) else float(atol or 0.0)
    if rtol is None:
        rt = (at <= 0).double() * default if isinstance(at, Tensor) else (default if not at else 0.0)
    else:
        rt = unsqueeze(rtol.detach().double(), -1) if isinstance(rtol, Tensor) else float(rtol)
    return at, rt


def matrix_rank(
    A: Tensor,  # noqa: N803 - PyTorch's name
    *,
    atol: Any = None,
    rtol: Any = None,
    hermitian: bool = False,
    tol: Any = None,
) -> Tensor:
    """The number of singular values above ``max(atol, rtol * s_max)`` (``torch.linalg.matrix_rank``), int64."""
    a = _matrices("linalg.matrix_rank", A).detach()
    if tol is not None:
        atol, rtol = tol, 0.0
    s = eigvalsh(a).abs() if hermitian else svdvals(a)
    if s.shape[-1] == 0:
        return _sum(s, -1).long()
    at, rt = _tolerances(atol, rtol, a.shape[-2], a.shape[-1], a.dtype)
    tol_t = maximum(rt * amax(s, -1, keepdim=True), at if isinstance(at, Tensor) else s.new_full((), at))
    return _sum((s > tol_t).long(), -1)


class Pinv(Op):
    saves_output = True

    def forward(self, a: Any, atol: float, rtol: float, hermitian: bool) -> Any:
        xp = self.backend.xp
        if hermitian:  # A = V diag(w) V^T: the pseudo-inverse inverts the eigenvalues above the tolerance
            s, vt = self.backend.eigh(a, False)
            u = vt
            size = xp.abs(s)
        else:
            u, s, vh = self.backend.svd(a, False)
            vt, size = xp.conj(xp.swapaxes(vh, -1, -2)), s
        smax = xp.max(size, axis=-1, keepdims=True) if size.shape[-1] else size
        keep = size > xp.maximum(rtol * smax, atol)
        s_inv = xp.astype(xp.where(keep, 1.0 / xp.where(keep, s, 1.0), 0.0), s.dtype)
        y = xp.matmul(vt * s_inv[..., None, :], xp.conj(xp.swapaxes(u, -1, -2)))  # V diag(1/s) U^H
        self.keep(y)
        return y

    def backward(self, g: Tensor) -> tuple[Any, None, None, None]:
        A = self.inputs[0]  # type: ignore[index]
        P = self.output()
        return pinv_backward(g, P, A), None, None, None


def pinv_backward(g: Tensor, P: Tensor, A: Tensor) -> Tensor:  # noqa: N803 - PyTorch's names
    """PyTorch's gradient of the pseudo-inverse (exact where the rank is locally constant)."""
    m, n = A.shape[-2], A.shape[-1]
    Ph, gh = _mH(P), _mH(g)
    if m <= n:
        K = matmul(gh, P)
        KPh = matmul(K, Ph)
        return -_mH(matmul(P, K)) + KPh - matmul(matmul(A, P), KPh) + matmul(matmul(Ph, P), gh - matmul(K, A))
    K = matmul(P, gh)
    PhK = matmul(Ph, K)
    return -_mH(matmul(K, P)) + matmul(matmul(gh - matmul(A, K), P), Ph) + PhK - matmul(matmul(PhK, P), A)


def pinv(
    A: Tensor,  # noqa: N803 - PyTorch's name
    *,
    atol: Any = None,
    rtol: Any = None,
    hermitian: bool = False,
    rcond: Any = None,
) -> Tensor:
    """The Moore-Penrose pseudo-inverse by SVD (``torch.linalg.pinv``): singular values at or below
    ``max(atol, rtol * s_max)`` are treated as zero (default ``rtol = eps * max(m, n)``)."""
    a = _square("linalg.pinv", A) if hermitian else _matrices("linalg.pinv", A)
    at, rt = _tolerances(atol, rtol if rcond is None else rcond, a.shape[-2], a.shape[-1], a.dtype)
    return Pinv.apply(a, at, rt, bool(hermitian))  # type: ignore[no-any-return]


@autocast_op("pinverse")
def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """``torch.pinverse``: the pseudo-inverse with singular values below ``rcond * s_max`` cut."""
    return pinv(input, rtol=rcond)


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The ``p``-norm of ``input - other`` (broadcast), a 0-d tensor (``torch.dist``)."""
    return vector_norm(input - other, p)
