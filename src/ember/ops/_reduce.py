"""Reductions: sum, mean, max/min (with indices), amax/amin, argmax/argmin."""

from __future__ import annotations

import builtins
from collections import namedtuple
from typing import Any

from .._dtype import as_dtype, get_default_dtype
from .._errors import DTypeError, ShapeError
from .._tensor import Tensor
from ..autograd._function import Op
from ._util import arange_like_dim, norm_dim, norm_dims

_sum = builtins.sum


__all__ = ["amax", "amin", "argmax", "argmin", "max", "mean", "min", "sum"]
#: the functions that are also Tensor methods (``t.name(...)``)
METHODS = ["amax", "amin", "argmax", "argmin", "max", "mean", "min", "sum"]


def _keepdim_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def _expand_back_array(xp: Any, g: Any, shape: tuple[int, ...], axes: tuple[int, ...], keepdim: bool) -> Any:
    """``_expand_back`` on an array (the first-order fast path)."""
    if not keepdim and axes:
        g = g.reshape(_keepdim_shape(shape, axes))
    return xp.broadcast_to(g, shape)


def _expand_back(g: Tensor, shape: tuple[int, ...], axes: tuple[int, ...], keepdim: bool) -> Tensor:
    """Reshape a reduced gradient to keepdim form and broadcast it back to ``shape``."""
    from ._shape import expand, reshape

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
        return self.backend.xp.mean(x, axis=axes, keepdims=keepdim)

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
    return Sum.apply(input, axes, keepdim)  # type: ignore[no-any-return]


def mean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Mean over ``dim``; needs a floating dtype (or ``dtype=``), as in PyTorch."""
    if dtype is not None:
        input = input.to(as_dtype(dtype))
    if input.dtype.kind not in "fc":
        raise DTypeError(f"mean: expected a floating-point tensor, got {input.dtype}; pass dtype= or call .float()")
    axes = norm_dims(dim, input.ndim, "mean")
    return Mean.apply(input, axes, keepdim)  # type: ignore[no-any-return]


class Amax(Op):
    """max/min over dims; the gradient is shared evenly among tied extremes (PyTorch's amax)."""

    saves_output = True

    def forward(self, x: Any, axes: tuple[int, ...], keepdim: bool, use_min: bool) -> Any:
        if any(x.shape[a] == 0 for a in axes):
            raise ShapeError(f"{'min' if use_min else 'max'}: reduction over an empty dimension of shape {x.shape}")
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
    return Amax.apply(input, norm_dims(dim, input.ndim, "amax"), keepdim, False)  # type: ignore[no-any-return]


def amin(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    return Amax.apply(input, norm_dims(dim, input.ndim, "amin"), keepdim, True)  # type: ignore[no-any-return]


class ArgExtreme(Op):
    differentiable = False

    def forward(self, x: Any, dim: int | None, keepdim: bool, use_min: bool) -> Any:
        xp = self.backend.xp
        if 0 in x.shape:
            raise ShapeError(f"{'argmin' if use_min else 'argmax'}: empty tensor of shape {x.shape}")
        fn = xp.argmin if use_min else xp.argmax
        if dim is None:
            out = fn(x.reshape(-1))
            return out.reshape((1,) * x.ndim) if keepdim else out
        return fn(x, axis=dim, keepdims=keepdim) if x.ndim else fn(x.reshape(-1))


def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    d = None if dim is None else norm_dim(dim, input.ndim, "argmax")
    return ArgExtreme.apply(input, d, keepdim, False).long()  # type: ignore[no-any-return]


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    d = None if dim is None else norm_dim(dim, input.ndim, "argmin")
    return ArgExtreme.apply(input, d, keepdim, True).long()  # type: ignore[no-any-return]


class MaxDim(Op):
    """max/min along one dim with indices; the gradient goes to the selected index."""

    def forward(self, x: Any, dim: int, keepdim: bool, use_min: bool) -> Any:
        xp = self.backend.xp
        if x.ndim and x.shape[dim] == 0:
            raise ShapeError(f"{'min' if use_min else 'max'}: dim {dim} of shape {x.shape} is empty")
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
            from ._shape import unsqueeze

            idx = unsqueeze(idx, self.dim)
        hit = arange_like_dim(self.shape, self.dim, self.backend) == idx
        return g * hit, None, None, None


MinMax = namedtuple("MinMax", ["values", "indices"])


def _max_min(input: Tensor, dim: Any, keepdim: bool, use_min: bool) -> Any:
    if isinstance(dim, Tensor):  # torch.max(a, b) is the elementwise maximum
        from ._elementwise import maximum, minimum

        return minimum(input, dim) if use_min else maximum(input, dim)
    if dim is None:
        return Amax.apply(input, tuple(range(input.ndim)), False, use_min)
    d = norm_dim(dim, input.ndim, "min" if use_min else "max")
    vals, idx = MaxDim.apply(input, d, keepdim, use_min)
    return MinMax(vals, idx)


def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """The largest value, or ``(values, indices)`` along ``dim``."""
    return _max_min(input, dim, keepdim, False)


def min(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """The smallest value, or ``(values, indices)`` along ``dim``."""
    return _max_min(input, dim, keepdim, True)


_ = get_default_dtype
