"""The meta device's ``xp``: NumPy's names (the ``XP_NAMES`` contract) computing shapes, dtypes and strides only.

NumPy's ufuncs are used as they are (on a ``MetaArray`` they come back to ``_meta_rules.ufunc_rule``); every other
name is a shape rule here, also reached by NumPy's own functions called on a meta array (``__array_function__``
looks a name up in this module). A name without a rule raises ``NotImplementedError`` naming it.
"""

from __future__ import annotations

import builtins
import math
import operator
import types
from typing import Any

import numpy as np

from ._meta_array import MetaArray, contiguous_strides
from ._meta_join import (  # noqa: F401 - names of the namespace
    concatenate,
    dot,
    einsum,
    ix_,
    nonzero,
    put_along_axis,
    repeat,
    stack,
    take,
    take_along_axis,
    unique,
    unravel_index,
)
from ._meta_linalg import linalg  # noqa: F401 - the namespace's ``linalg``
from ._meta_rules import as_meta, norm_axes, operand, reduced, result_dtype, sum_dtype

#: NumPy's ufuncs (on a MetaArray they come back to ``ufunc_rule``), dtypes and constants, used as they are
_FROM_NUMPY = (
    "absolute",
    "add",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bool_",
    "ceil",
    "conjugate",
    "copysign",
    "cos",
    "cosh",
    "divide",
    "e",
    "equal",
    "errstate",
    "exp",
    "exp2",
    "expm1",
    "finfo",
    "float16",
    "float32",
    "float64",
    "floor",
    "floor_divide",
    "fmax",
    "fmin",
    "fmod",
    "frexp",
    "gcd",
    "greater",
    "greater_equal",
    "heaviside",
    "hypot",
    "iinfo",
    "inf",
    "int8",
    "int16",
    "int32",
    "int64",
    "intp",
    "invert",
    "isfinite",
    "isinf",
    "isnan",
    "lcm",
    "ldexp",
    "left_shift",
    "less",
    "less_equal",
    "log",
    "log1p",
    "log2",
    "log10",
    "logaddexp",
    "logaddexp2",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "matmul",
    "maximum",
    "minimum",
    "multiply",
    "nan",
    "negative",
    "newaxis",
    "nextafter",
    "not_equal",
    "pi",
    "positive",
    "power",
    "reciprocal",
    "remainder",
    "right_shift",
    "sign",
    "signbit",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "subtract",
    "tan",
    "tanh",
    "true_divide",
    "trunc",
    "uint8",
)
globals().update({name: getattr(np, name) for name in _FROM_NUMPY})

abs = np.absolute
conj = np.conjugate
complex64, complex128 = np.complex64, np.complex128


def result_type(*args: Any) -> Any:
    return np.result_type(*(a.dtype if isinstance(a, MetaArray) else a for a in args))


# -- creation ----------------------------------------------------------------------------------------------------
def _shape(shape: Any) -> tuple[int, ...]:
    return (operator.index(shape),) if not isinstance(shape, (tuple, list)) else tuple(shape)


def empty(shape: Any, dtype: Any = float, **_: Any) -> MetaArray:
    return MetaArray(_shape(shape), dtype)


zeros = ones = empty


def full(shape: Any, fill_value: Any, dtype: Any = None, **_: Any) -> MetaArray:
    return MetaArray(_shape(shape), dtype if dtype is not None else np.asarray(fill_value).dtype)


def empty_like(a: Any, dtype: Any = None, shape: Any = None, **_: Any) -> MetaArray:
    m = as_meta(a)
    return MetaArray(m.shape if shape is None else _shape(shape), m.dtype if dtype is None else dtype)


zeros_like = ones_like = empty_like


def full_like(a: Any, fill_value: Any, dtype: Any = None, **_: Any) -> MetaArray:
    return empty_like(a, dtype)


def asarray(a: Any, dtype: Any = None, **_: Any) -> MetaArray:
    m = as_meta(a)
    return m if dtype is None or np.dtype(dtype) == m.dtype else m.astype(dtype)


def array(a: Any, dtype: Any = None, copy: Any = True, **_: Any) -> MetaArray:
    m = as_meta(a)
    return MetaArray(m.shape, m.dtype if dtype is None else dtype)


def from_dlpack(x: Any, **_: Any) -> MetaArray:
    return as_meta(x)


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None, **_: Any) -> MetaArray:
    if stop is None:
        start, stop = 0, start
    n = builtins.max(0, math.ceil((stop - start) / step))
    return MetaArray((n,), dtype if dtype is not None else np.result_type(start, stop, step))


def linspace(start: Any, stop: Any, num: int = 50, dtype: Any = None, **_: Any) -> MetaArray:
    return MetaArray((num,), dtype if dtype is not None else np.float64)


def eye(n: int, m: int | None = None, k: int = 0, dtype: Any = float, **_: Any) -> MetaArray:
    return MetaArray((n, n if m is None else m), dtype)


def astype(x: Any, dtype: Any, copy: bool = True, **_: Any) -> MetaArray:
    return as_meta(x).astype(dtype, copy=copy)


def copy(x: Any, **_: Any) -> MetaArray:
    return as_meta(x).copy()


def ascontiguousarray(x: Any, dtype: Any = None, **_: Any) -> MetaArray:
    m = as_meta(x)
    if m.is_contiguous() and (dtype is None or np.dtype(dtype) == m.dtype):
        return m
    return MetaArray(m.shape, m.dtype if dtype is None else dtype)


def size(x: Any) -> int:
    return as_meta(x).size


# -- views -------------------------------------------------------------------------------------------------------
def reshape(x: Any, shape: Any, **_: Any) -> MetaArray:
    m = as_meta(x)
    shape = list(_shape(shape))
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if -1 in shape:
        rest = math.prod(s for s in shape if s != -1)
        if rest == 0 or m.size % rest:
            raise ValueError(f"cannot reshape array of size {m.size} into shape {tuple(shape)}")
        shape[shape.index(-1)] = m.size // rest
    if math.prod(shape) != m.size:
        raise ValueError(f"cannot reshape array of size {m.size} into shape {tuple(shape)}")
    if m.is_contiguous():
        return m.view_as(shape, contiguous_strides(tuple(shape)))
    return MetaArray(shape, m.dtype)


def transpose(x: Any, axes: Any = None) -> MetaArray:
    m = as_meta(x)
    order = tuple(reversed(range(m.ndim))) if axes is None else tuple(a % builtins.max(m.ndim, 1) for a in axes)
    if sorted(order) != list(range(m.ndim)):
        raise ValueError(f"axes {axes} don't match array of {m.ndim} dims")
    return m.view_as([m.shape[a] for a in order], tuple(m.strides_el[a] for a in order))


permute_dims = transpose


def swapaxes(x: Any, a: int, b: int) -> MetaArray:
    m = as_meta(x)
    order = list(range(m.ndim))
    a, b = norm_axes(a, m.ndim)[0], norm_axes(b, m.ndim)[0]
    order[a], order[b] = order[b], order[a]
    return transpose(m, order)


def moveaxis(x: Any, source: Any, destination: Any) -> MetaArray:
    m = as_meta(x)
    src = [s % m.ndim for s in ((source,) if isinstance(source, int) else source)]
    dst = [d % m.ndim for d in ((destination,) if isinstance(destination, int) else destination)]
    order = [d for d in range(m.ndim) if d not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return transpose(m, order)


def expand_dims(x: Any, axis: Any) -> MetaArray:
    m = as_meta(x)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    nd = m.ndim + len(axes)
    axes = tuple(sorted(a % nd for a in axes))
    shape, strides, it = [], [], iter(zip(m.shape, m.strides_el, strict=True))
    for d in range(nd):
        s, st = (1, 0) if d in axes else next(it)
        shape.append(s)
        strides.append(st)
    return m.view_as(shape, tuple(strides))


def squeeze(x: Any, axis: Any = None) -> MetaArray:
    m = as_meta(x)
    axes = [d for d, s in enumerate(m.shape) if s == 1] if axis is None else norm_axes(axis, m.ndim)
    for d in axes:
        if m.shape[d] != 1:
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    keep = [d for d in range(m.ndim) if d not in axes]
    return m.view_as([m.shape[d] for d in keep], tuple(m.strides_el[d] for d in keep))


def broadcast_to(x: Any, shape: Any, **_: Any) -> MetaArray:
    m = as_meta(x)
    shape = _shape(shape)
    if tuple(np.broadcast_shapes(m.shape, shape)) != tuple(shape):
        raise ValueError(f"cannot broadcast a meta array of shape {m.shape} to {tuple(shape)}")
    lead = len(shape) - m.ndim
    strides = [0] * lead + [0 if s == 1 and n != 1 else st for s, n, st in zip(m.shape, shape[lead:], m.strides_el,
                                                                                strict=True)]  # fmt: skip
    return m.view_as(shape, tuple(strides))


def broadcast_arrays(*args: Any) -> tuple[MetaArray, ...]:
    shape = tuple(np.broadcast_shapes(*(operand(a)[0] for a in args)))
    return tuple(broadcast_to(a, shape) for a in args)


def flip(x: Any, axis: Any = None) -> MetaArray:
    m = as_meta(x)
    return MetaArray(m.shape, m.dtype)


def diagonal(x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> MetaArray:
    m = as_meta(x)
    a, b = axis1 % m.ndim, axis2 % m.ndim
    n = builtins.max(0, builtins.min(m.shape[a] - builtins.max(-offset, 0), m.shape[b] - builtins.max(offset, 0)))
    keep = [d for d in range(m.ndim) if d not in (a, b)]
    return m.view_as([*(m.shape[d] for d in keep), n], (*(m.strides_el[d] for d in keep), m.strides_el[a] +
                                                         m.strides_el[b]))  # fmt: skip


# -- results of the same or a derived shape ----------------------------------------------------------------
def _same(x: Any, dtype: Any = None) -> MetaArray:
    m = as_meta(x)
    return MetaArray(m.shape, m.dtype if dtype is None else dtype)


def roll(x: Any, shift: Any, axis: Any = None) -> MetaArray:
    return _same(x)


def tril(x: Any, k: int = 0) -> MetaArray:
    return _same(x)


triu = tril


def clip(x: Any, a_min: Any = None, a_max: Any = None, **kwargs: Any) -> MetaArray:
    out = _same(x, result_dtype(x, a_min, a_max))
    return kwargs["out"] if kwargs.get("out") is not None else out


def round(x: Any, decimals: int = 0, **_: Any) -> MetaArray:
    return _same(x)


def real(x: Any) -> MetaArray:
    m = as_meta(x)
    return MetaArray(m.shape, np.empty(0, m.dtype).real.dtype)


imag = angle = real


def isneginf(x: Any, **_: Any) -> MetaArray:
    return _same(x, bool)


isposinf = isneginf


def isclose(a: Any, b: Any, **_: Any) -> MetaArray:
    return MetaArray(np.broadcast_shapes(operand(a)[0], operand(b)[0]), bool)


def isin(element: Any, test_elements: Any, **_: Any) -> MetaArray:
    return _same(element, bool)


def where(cond: Any, x: Any = None, y: Any = None) -> Any:
    if x is None and y is None:
        return nonzero(cond)
    dt = result_dtype(x, y)
    return MetaArray(np.broadcast_shapes(operand(cond)[0], operand(x)[0], operand(y)[0]), dt)


def searchsorted(a: Any, v: Any, **_: Any) -> MetaArray:
    return MetaArray(operand(v)[0], np.int64)


def argsort(x: Any, axis: int = -1, **_: Any) -> MetaArray:
    return _same(x, np.int64) if axis is not None else MetaArray((as_meta(x).size,), np.int64)


def sort(x: Any, axis: int = -1, **_: Any) -> MetaArray:
    return _same(x) if axis is not None else MetaArray((as_meta(x).size,), as_meta(x).dtype)


def cumsum(x: Any, axis: Any = None, dtype: Any = None, **_: Any) -> MetaArray:
    m = as_meta(x)
    dt = dtype if dtype is not None else sum_dtype(m.dtype)
    return MetaArray(m.shape if axis is not None else (m.size,), dt)


cumprod = cumsum


# -- reductions --------------------------------------------------------------------------------------------------
def _reduction(kind: str) -> Any:
    def call(x: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **_: Any) -> Any:
        m = as_meta(x)
        if dtype is not None:
            dt = np.dtype(dtype)
        elif kind == "sum":
            dt = sum_dtype(m.dtype)
        elif kind == "mean":
            dt = m.dtype if m.dtype.kind in "fc" else np.dtype(np.float64)
        elif kind == "bool":
            dt = np.dtype(bool)
        elif kind == "index":
            dt = np.dtype(np.int64)
        else:
            dt = m.dtype
        if kind == "index" and axis is not None and not isinstance(axis, (int, np.integer)):
            raise TypeError("argmax/argmin take one axis")
        res = reduced(m, axis, keepdims, dt)
        return out if out is not None else res

    return call


sum = prod = _reduction("sum")
mean = var = std = _reduction("mean")
max = min = amax = amin = _reduction("same")
any = all = _reduction("bool")
argmax = argmin = _reduction("index")
count_nonzero = _reduction("index")


def as_strided(x: Any, shape: Any = None, strides: Any = None, **_: Any) -> MetaArray:
    """NumPy's ``lib.stride_tricks.as_strided`` (strides in bytes) on a meta array: a view."""
    m = as_meta(x)
    shape = m.shape if shape is None else tuple(shape)
    st = m.strides_el if strides is None else tuple(s // m.itemsize for s in strides)
    return m.view_as(shape, st)


lib = types.SimpleNamespace(stride_tricks=types.SimpleNamespace(as_strided=as_strided))
