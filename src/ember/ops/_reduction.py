"""Reduction operators (torch docs, "Reduction Ops"): sums, means, extrema, products, norms, any/all."""

from __future__ import annotations

import builtins
import math
from collections import namedtuple
from typing import Any

from .._dtype import as_dtype
from .._errors import DTypeError, ShapeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._autocast import autocast_op
from ..autograd._function import Op
from ._comparison import maximum, minimum
from ._indexing import where
from ._indexing_view import expand, reshape, unsqueeze
from ._other_cumulative import cumprod
from ._pointwise_unary import abs, exp, log
from ._util import _float, arange_like_dim, norm_dim, norm_dims, real_only

__all__ = [
    "all",
    "amax",
    "amin",
    "any",
    "argmax",
    "argmin",
    "count_nonzero",
    "logsumexp",
    "max",
    "mean",
    "min",
    "norm",
    "prod",
    "sum",
]
METHODS = list(__all__)


_sum = builtins.sum


def _keepdim_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def _expand_back_array(xp: Any, g: Any, shape: tuple[int, ...], axes: tuple[int, ...], keepdim: bool) -> Any:
    """``_expand_back`` on an array (the first-order fast path)."""
    if not keepdim and axes:
        g = g.reshape(_keepdim_shape(shape, axes))
    return xp.broadcast_to(g, shape)


def _expand_back(g: Tensor, shape: tuple[int, ...], axes: tuple[int, ...], keepdim: bool) -> Tensor:
    """Reshape a reduced gradient to keepdim form and broadcast it back to ``shape``."""
    if not keepdim and axes:
        g = reshape(g, _keepdim_shape(shape, axes))
    return expand(g, shape)


class Sum(Op):
    saves_inputs = False

    def forward(self, x: Any, axes: tuple[int, ...], keepdim: bool) -> Any:
        self.axes, self.keepdim, self.shape = axes, keepdim, x.shape
        return self.backend.xp.sum(x, axis=axes, keepdims=keepdim)

    def backward(self, g: Tensor) -> tuple[Tensor, None, None]:
        return _expand_back(g, self.shape, self.axes, self.keepdim), None, None

    def backward_arrays(self, g: Any) -> tuple[Any, None, None]:
        return _expand_back_array(self.backend.xp, g, self.shape, self.axes, self.keepdim), None, None


class Mean(Op):
    saves_inputs = False

    def forward(self, x: Any, axes: tuple[int, ...], keepdim: bool) -> Any:
        self.axes, self.keepdim, self.shape = axes, keepdim, x.shape
        n = 1
        for a in axes:
            n *= x.shape[a]
        self.n = n
        xp = self.backend.xp
        if n == 0:  # NaN, as PyTorch (NumPy's mean would also warn "Mean of empty slice")
            return xp.sum(x, axis=axes, keepdims=keepdim) / 0.0
        return xp.mean(x, axis=axes, keepdims=keepdim)

    def backward(self, g: Tensor) -> tuple[Tensor, None, None]:
        return _expand_back(g / self.n, self.shape, self.axes, self.keepdim), None, None

    def backward_arrays(self, g: Any) -> tuple[Any, None, None]:
        return _expand_back_array(self.backend.xp, g / self.n, self.shape, self.axes, self.keepdim), None, None


def sum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Sum over ``dim`` (an int, a tuple, or None for all); bool and int sum as int64."""
    if dtype is not None:
        input = input.to(as_dtype(dtype))
    elif input.dtype.kind in "biu":
        input = input.to("int64")
    axes = norm_dims(dim, input.ndim, "sum")
    out = Sum.apply(input, axes, keepdim)
    # (the kernels sum int32/int16/uint8 as int64: wrapped back, as PyTorch's dtype= sums in that dtype)
    return out.to(input.dtype) if out.dtype != input.dtype and input.dtype.kind in "biu" else out


def mean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Mean over ``dim``; needs a floating dtype (or ``dtype=``), as in PyTorch."""
    if dtype is not None:
        input = input.to(as_dtype(dtype))
    if input.dtype.kind not in "fc":
        raise DTypeError(f"mean: expected a floating-point tensor, got {input.dtype}; pass dtype= or call .float()")
    axes = norm_dims(dim, input.ndim, "mean")
    return Mean.apply(input, axes, keepdim)


class Amax(Op):
    """max/min over dims; the gradient is shared evenly among tied extremes (PyTorch's amax)."""

    saves_output = True

    def forward(self, x: Any, axes: tuple[int, ...], keepdim: bool, use_min: bool) -> Any:
        if builtins.any(x.shape[a] == 0 for a in axes):
            raise ShapeError(
                f"{'min' if use_min else 'max'}: reduction over an empty dimension of shape {tuple(x.shape)}"
            )
        self.axes, self.keepdim, self.shape = axes, keepdim, x.shape
        xp = self.backend.xp
        y = (xp.min if use_min else xp.max)(x, axis=axes, keepdims=keepdim)
        self.keep(y)
        return y

    def backward(self, g: Tensor) -> tuple[Tensor, None, None, None]:
        x = self.inputs[0]  # type: ignore[index]
        y = _expand_back(self.output(), self.shape, self.axes, self.keepdim)
        mask = (x == y).to(g.dtype)
        count = sum(mask, self.axes, keepdim=True)
        return _expand_back(g, self.shape, self.axes, self.keepdim) * mask / count, None, None, None


def amax(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """The maximum over ``dim`` (all dimensions by default)."""
    real_only("amax", input)
    return Amax.apply(input, norm_dims(dim, input.ndim, "amax"), keepdim, False)


def amin(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """The minimum over ``dim`` (all dimensions by default)."""
    real_only("amin", input)
    return Amax.apply(input, norm_dims(dim, input.ndim, "amin"), keepdim, True)


class ArgExtreme(Op):
    differentiable = False

    def forward(self, x: Any, dim: int | None, keepdim: bool, use_min: bool) -> Any:
        xp = self.backend.xp
        if x.shape[dim] == 0 if dim is not None and x.ndim else 0 in x.shape:  # (other dims may be empty)
            raise ShapeError(f"{'argmin' if use_min else 'argmax'}: empty tensor of shape {tuple(x.shape)}")
        fn = xp.argmin if use_min else xp.argmax
        if dim is None:
            out = fn(x.reshape(-1))
            return out.reshape((1,) * x.ndim) if keepdim else out
        return fn(x, axis=dim, keepdims=keepdim) if x.ndim else fn(x.reshape(-1))


def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """The index of the maximum over ``dim`` (of the flattened tensor by default)."""
    real_only("argmax", input)
    d = None if dim is None else norm_dim(dim, input.ndim, "argmax")
    return ArgExtreme.apply(input, d, keepdim, False).long()


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """The index of the minimum over ``dim`` (of the flattened tensor by default)."""
    real_only("argmin", input)
    d = None if dim is None else norm_dim(dim, input.ndim, "argmin")
    return ArgExtreme.apply(input, d, keepdim, True).long()


class MaxDim(Op):
    """max/min along one dim with indices; the gradient goes to the selected index."""

    def forward(self, x: Any, dim: int, keepdim: bool, use_min: bool) -> Any:
        xp = self.backend.xp
        if x.ndim and x.shape[dim] == 0:
            raise ShapeError(f"{'min' if use_min else 'max'}: dim {dim} of shape {tuple(x.shape)} is empty")
        xi = x if x.ndim else x.reshape(1)
        idx = (xp.argmin if use_min else xp.argmax)(xi, axis=dim, keepdims=True)
        vals = xp.take_along_axis(xi, idx, axis=dim)
        self.dim, self.keepdim, self.shape = dim, keepdim, x.shape
        if not keepdim or not x.ndim:
            vals, idx = xp.squeeze(vals, dim), xp.squeeze(idx, dim)
            if not x.ndim:
                vals, idx = vals.reshape(()), idx.reshape(())
        self.idx = idx
        return vals, xp.astype(idx, xp.int64)

    def backward(self, g: Tensor, _gi: Any) -> tuple[Tensor, None, None, None]:
        if not self.shape:
            return g, None, None, None
        idx = Tensor._make(self.backend.asarray(self.idx), self.backend)
        g = _expand_back(g, self.shape, (self.dim,), self.keepdim)
        if not self.keepdim:
            idx = unsqueeze(idx, self.dim)
        hit = arange_like_dim(self.shape, self.dim, self.backend) == idx
        return g * hit, None, None, None


MinMax = namedtuple("MinMax", ["values", "indices"])


def _max_min(input: Tensor, dim: Any, keepdim: bool, use_min: bool) -> Any:
    if isinstance(dim, Tensor):  # torch.max(a, b) is the elementwise maximum
        return minimum(input, dim) if use_min else maximum(input, dim)
    if dim is None:
        return Amax.apply(input, tuple(range(input.ndim)), False, use_min)
    d = norm_dim(dim, input.ndim, "min" if use_min else "max")
    vals, idx = MaxDim.apply(input, d, keepdim, use_min)
    return MinMax(vals, idx)


def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """The largest value, or ``(values, indices)`` along ``dim``."""
    real_only("max", input)
    return _max_min(input, dim, keepdim, False)


def min(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """The smallest value, or ``(values, indices)`` along ``dim``."""
    real_only("min", input)
    return _max_min(input, dim, keepdim, True)


@autocast_op("logsumexp")
def logsumexp(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(x)))`` over ``dim``, computed stably (finite for large |x|)."""
    x = _float(input)
    axes = norm_dims(dim, x.ndim, "logsumexp")
    if x.numel() == 0:
        return log(sum(exp(x), axes, keepdim=keepdim))
    if x.dtype.is_complex:  # shift by the largest real part (PyTorch's complex logsumexp)
        from ._pointwise_complex import real

        m = amax(real(x.detach()), axes, keepdim=True)
    else:
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
        if self.backend.dtype_of(x).is_complex:  # |z|^2 (the result is real); backward's z/|z| holds as is
            x = xp.abs(x)
        y = xp.sqrt(xp.sum(x * x, axis=axes, keepdims=keepdim))
        self.keep(y)
        return y

    def backward(self, g: Tensor) -> tuple[Tensor, None, None]:
        x = self.inputs[0]  # type: ignore[index]
        y = _expand_back(self.output(), self.shape, self.axes, self.keepdim)
        g = _expand_back(g, self.shape, self.axes, self.keepdim)
        return where(y == 0, 0.0, g * x / where(y == 0, 1.0, y)), None, None


@autocast_op("norm")
def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    """Vector p-norm over ``dim`` (all elements by default): p = 2/'fro', 1, inf, -inf, 0 or any float;
    ``'nuc'``: the nuclear norm of a matrix (a 2-D input, or ``dim`` of two dims), as PyTorch's ``norm``."""
    x = _float(input if dtype is None else input.to(dtype))
    if x.dtype.name in ("float16", "bfloat16"):  # accumulated in float32 (PyTorch's): 300, 400 gave inf, not 500
        return norm(x.float(), p, dim, keepdim).to(x.dtype)
    if p == "nuc":
        from ._linalg_norms import matrix_norm

        dims = (-2, -1) if dim is None else tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
        if len(dims) != 2 or (dim is None and x.ndim != 2):
            raise ShapeError(f"norm: p='nuc' needs a matrix (a 2-D input or dim of two dims), got shape "
                             f"{tuple(x.shape)} and dim={dim}")  # fmt: skip
        return matrix_norm(x, "nuc", dims, keepdim)
    axes = norm_dims(dim, x.ndim, "norm")
    if p in ("fro", 2, 2.0, None):
        return Norm2.apply(x, axes, keepdim)
    if isinstance(p, str):
        raise ValueRangeError(f"norm: p={p!r} is not supported for vector norms (use 'fro', a number or inf)")
    p = float(p)
    a = abs(x)
    if p == math.inf:
        return amax(a, axes, keepdim)
    if p == -math.inf:
        return amin(a, axes, keepdim)
    if p == 0:  # a count; in the graph with a zero gradient, as PyTorch's
        return sum(a * 0 + (x != 0).to(a.dtype), axes, keepdim=keepdim)  # (real for complex x)
    if p == 1:
        return sum(a, axes, keepdim=keepdim)
    return sum(a**p, axes, keepdim=keepdim) ** (1.0 / p)


@autocast_op("prod")
def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Product of all elements, or along ``dim``; exact gradients also where inputs are zero."""
    x = input.to(dtype) if dtype is not None else input.long() if input.dtype.kind in "biu" else input
    if dim is None:
        flat = reshape(x, (-1,))
        out = (
            cumprod(flat, 0, dtype=x.dtype)[-1] if flat.numel() else flat.sum() * 0 + 1
        )  # (the empty product, in the graph)
        return reshape(out, (1,) * x.ndim) if keepdim else out
    d = norm_dim(dim, x.ndim, "prod")
    if not x.ndim:
        return x.clone()
    if x.shape[d] == 0:  # the empty product is 1; kept in the graph (its gradient, like PyTorch's, is empty)
        return x.sum(d, keepdim=keepdim) * 0 + 1
    out = cumprod(x, d, dtype=x.dtype).narrow(d, x.shape[d] - 1, 1)
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
    """Whether any element (along ``dim``) is nonzero (uint8 for a uint8 input, as PyTorch; bool otherwise)."""
    out = _Logical.apply(input, norm_dims(dim, input.ndim, "any"), keepdim, "any")
    return out.to(input.dtype) if input.dtype.name == "uint8" else out


def all(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Whether every element (along ``dim``) is nonzero (uint8 for a uint8 input, as PyTorch; bool otherwise)."""
    out = _Logical.apply(input, norm_dims(dim, input.ndim, "all"), keepdim, "all")
    return out.to(input.dtype) if input.dtype.name == "uint8" else out


def count_nonzero(input: Tensor, dim: Any = None) -> Tensor:
    """Number of nonzero elements (along ``dim``), int64."""
    return _Logical.apply(input, norm_dims(dim, input.ndim, "count_nonzero"), False, "count")
