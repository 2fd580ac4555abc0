"""More reductions and scans: prod, var/std, logsumexp, norm, cumsum/cumprod, any/all, count_nonzero."""

from __future__ import annotations

import builtins
import math
from collections import namedtuple
from typing import Any

from .._errors import ValueRangeError
from .._tensor import Tensor
from ..autograd._function import Op
from ._elementwise import _float, abs, exp, log, sqrt, where
from ._reduce import _expand_back, amax, mean, sum
from ._util import norm_dim, norm_dims

__all__ = [
    "all", "any", "count_nonzero", "cumprod", "cumsum", "logsumexp", "norm", "prod", "std",
    "std_mean", "var", "var_mean",
]  # fmt: skip
METHODS = list(__all__)

VarMean = namedtuple("VarMean", ["var", "mean"])


def _count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    return math.prod(shape[a] for a in axes)


def var(
    input: Tensor, dim: Any = None, *, correction: float = 1, keepdim: bool = False, unbiased: Any = None
) -> Tensor:
    """Variance over ``dim`` with Bessel's ``correction`` (1 = unbiased, PyTorch's default)."""
    if unbiased is not None:
        correction = 1 if unbiased else 0
    x = _float(input)
    axes = norm_dims(dim, x.ndim, "var")
    d = x - mean(x, axes, keepdim=True)
    n = builtins.max(_count(x.shape, axes) - correction, 0)
    return sum(d * d, axes, keepdim=keepdim) / n if n else sum(d * d, axes, keepdim=keepdim) / 0.0


def std(
    input: Tensor, dim: Any = None, *, correction: float = 1, keepdim: bool = False, unbiased: Any = None
) -> Tensor:
    """Standard deviation over ``dim`` (see ``var``)."""
    return sqrt(var(input, dim, correction=correction, keepdim=keepdim, unbiased=unbiased))


def var_mean(input: Tensor, dim: Any = None, *, correction: float = 1, keepdim: bool = False) -> VarMean:
    """``(var, mean)`` in one call."""
    return VarMean(var(input, dim, correction=correction, keepdim=keepdim), mean(_float(input), dim, keepdim))


def std_mean(input: Tensor, dim: Any = None, *, correction: float = 1, keepdim: bool = False) -> VarMean:
    """``(std, mean)`` in one call."""
    return VarMean(std(input, dim, correction=correction, keepdim=keepdim), mean(_float(input), dim, keepdim))


def logsumexp(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(x)))`` over ``dim``, computed stably (finite for large |x|)."""
    x = _float(input)
    axes = norm_dims(dim, x.ndim, "logsumexp")
    if x.numel() == 0:
        return log(sum(exp(x), axes, keepdim=keepdim))
    m = amax(x.detach(), axes, keepdim=True)
    m = where(m.isfinite(), m, 0.0)
    out = log(sum(exp(x - m), axes, keepdim=True)) + m
    return out if keepdim else out.squeeze(axes) if axes else out


class Norm2(Op):
    """Euclidean norm; the gradient at a zero vector is zero (as in PyTorch)."""

    saves_output = True

    def forward(self, x: Any, axes: tuple[int, ...], keepdim: bool) -> Any:
        xp = self.backend.xp
        self.axes, self.keepdim, self.shape = axes, keepdim, x.shape
        y = xp.sqrt(xp.sum(x * x, axis=axes, keepdims=keepdim))
        self.keep(y)
        return y

    def backward(self, g: Tensor) -> tuple[Tensor, None, None]:
        x = self.inputs[0]  # type: ignore[index]
        y = _expand_back(self.output(), self.shape, self.axes, self.keepdim)
        g = _expand_back(g, self.shape, self.axes, self.keepdim)
        return where(y == 0, 0.0, g * x / where(y == 0, 1.0, y)), None, None


def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    """Vector p-norm over ``dim`` (all elements by default): p = 2/'fro', 1, inf, -inf, 0 or any float."""
    x = _float(input if dtype is None else input.to(dtype))
    axes = norm_dims(dim, x.ndim, "norm")
    if p in ("fro", 2, 2.0, None):
        return Norm2.apply(x, axes, keepdim)  # type: ignore[no-any-return]
    if p == "nuc" or isinstance(p, str):
        raise ValueRangeError(f"norm: p={p!r} is not supported for vector norms (use 'fro', a number or inf)")
    p = float(p)
    a = abs(x)
    if p == math.inf:
        return amax(a, axes, keepdim)
    if p == -math.inf:
        from ._reduce import amin

        return amin(a, axes, keepdim)
    if p == 0:
        return sum((x != 0).to(x.dtype), axes, keepdim=keepdim)
    if p == 1:
        return sum(a, axes, keepdim=keepdim)
    return sum(a**p, axes, keepdim=keepdim) ** (1.0 / p)


class CumSum(Op):
    saves_inputs = False

    def forward(self, x: Any, dim: int) -> Any:
        self.dim = dim
        return self.backend.xp.cumsum(x, axis=dim) if x.ndim else self.backend.xp.copy(x)

    def backward(self, g: Tensor) -> tuple[Tensor, None]:
        from ._layout import flip

        if not g.ndim:
            return g, None
        return flip(cumsum(flip(g, (self.dim,)), self.dim), (self.dim,)), None


def cumsum(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running sum along ``dim`` (bool and int inputs sum as int64)."""
    x = input.to(dtype) if dtype is not None else input.long() if input.dtype.kind in "biu" else input
    return CumSum.apply(x, norm_dim(dim, x.ndim, "cumsum"))  # type: ignore[no-any-return]


class CumProd(Op):
    saves_output = True

    def forward(self, x: Any, dim: int) -> Any:
        self.dim = dim
        y = self.backend.xp.cumprod(x, axis=dim) if x.ndim else self.backend.xp.copy(x)
        self.keep(y)
        return y

    def backward(self, g: Tensor) -> tuple[Tensor, None]:
        from ._layout import flip, movedim

        x = self.inputs[0]  # type: ignore[index]
        if not g.ndim:
            return g, None
        d = self.dim
        if not bool(self.backend.xp.any(x._data == 0)):  # sum_{j>=k} g_j y_j / x_k
            gy = g * self.output()
            return flip(cumsum(flip(gy, (d,)), d), (d,)) / x, None
        # exact with zeros: row k holds prod_{i<=j, i!=k} x_i for each j (an n x n matrix per line)
        xs, gs = movedim(x, d, -1), movedim(g, d, -1)
        n = xs.shape[-1]
        xp = self.backend.xp
        eye = Tensor._make(xp.eye(n, dtype=xp.bool_), self.backend)
        rows = cumprod(where(eye, 1.0, xs.unsqueeze(-2).expand(*xs.shape[:-1], n, n)), -1)
        upper = Tensor._make(
            self.backend.xp.triu(self.backend.xp.ones((n, n), dtype=self.backend.xp.bool_)), self.backend
        )
        gx = sum(where(upper, rows, 0.0) * gs.unsqueeze(-2), -1)
        return movedim(gx, -1, d), None


def cumprod(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running product along ``dim``."""
    x = input.to(dtype) if dtype is not None else input.long() if input.dtype.kind in "biu" else input
    return CumProd.apply(x, norm_dim(dim, x.ndim, "cumprod"))  # type: ignore[no-any-return]


def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Product of all elements, or along ``dim``; exact gradients also where inputs are zero."""
    from ._shape import reshape

    x = input.to(dtype) if dtype is not None else input.long() if input.dtype.kind in "biu" else input
    if dim is None:
        flat = reshape(x, (-1,))
        out = cumprod(flat, 0)[-1] if flat.numel() else x.new_ones(())
        return reshape(out, (1,) * x.ndim) if keepdim else out
    d = norm_dim(dim, x.ndim, "prod")
    if not x.ndim:
        return x.clone()
    if x.shape[d] == 0:
        return x.new_ones(tuple(1 if i == d else s for i, s in enumerate(x.shape)) if keepdim else
                          tuple(s for i, s in enumerate(x.shape) if i != d))  # fmt: skip
    out = cumprod(x, d).narrow(d, x.shape[d] - 1, 1)
    return out if keepdim else out.squeeze(d)


class _Logical(Op):
    differentiable = False

    def forward(self, x: Any, axes: tuple[int, ...], keepdim: bool, kind: str) -> Any:
        xp = self.backend.xp
        fn = {"any": xp.any, "all": xp.all, "count": xp.count_nonzero}[kind]
        if kind == "count":
            return xp.asarray(fn(x, axis=axes), dtype=xp.int64)
        return fn(x, axis=axes, keepdims=keepdim)


def any(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Whether any element (along ``dim``) is nonzero."""
    return _Logical.apply(input, norm_dims(dim, input.ndim, "any"), keepdim, "any")  # type: ignore[no-any-return]


def all(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Whether every element (along ``dim``) is nonzero."""
    return _Logical.apply(input, norm_dims(dim, input.ndim, "all"), keepdim, "all")  # type: ignore[no-any-return]


def count_nonzero(input: Tensor, dim: Any = None) -> Tensor:
    """Number of nonzero elements (along ``dim``), int64."""
    return _Logical.apply(input, norm_dims(dim, input.ndim, "count_nonzero"), False, "count")  # type: ignore[no-any-return]
