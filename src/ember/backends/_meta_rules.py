"""The shape rules of ``MetaArray``: elementwise calls (broadcasting and NumPy's result dtype), reductions, and
indexing (basic indices make views, advanced ones a new array of NumPy's result shape)."""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from ._meta_array import MetaArray, contiguous_strides

_PY_SCALARS = (bool, int, float, complex)


def operand(x: Any) -> tuple[tuple[int, ...], Any]:
    """``(shape, what resolve_dtypes takes)`` of an operand: a Python number stays weak (its type)."""
    if isinstance(x, MetaArray):
        return x.shape, x.dtype
    if isinstance(x, bool):
        return (), np.dtype(bool)
    if isinstance(x, _PY_SCALARS):
        return (), type(x)
    if isinstance(x, (np.ndarray, np.generic)):
        return tuple(x.shape), x.dtype
    if isinstance(x, (list, tuple)):
        a = np.asarray(x)
        return tuple(a.shape), a.dtype
    raise TypeError(f"a meta operation got an operand of type {type(x).__name__}")


def layout(shape: tuple[int, ...], like: Any) -> tuple[int, ...]:
    """Strides for a new result of ``shape``: row-major, or in the memory order of the first operand of that
    shape that is dense in another order (NumPy's and PyTorch's elementwise results keep a transposed layout)."""
    for a in like:
        if isinstance(a, MetaArray) and a.shape == shape and not a.is_contiguous() and 0 not in a.strides_el:
            order = sorted(range(len(shape)), key=lambda d: (-abs(a.strides_el[d]), -d))
            strides = [0] * len(shape)
            step = 1
            for d in reversed(order):
                strides[d] = step
                step *= max(shape[d], 1)
            if sorted(zip(strides, shape, strict=True)) == sorted(
                (abs(s), n) for s, n in zip(a.strides_el, shape, strict=True)
            ):
                return tuple(strides)
            break
    return contiguous_strides(shape)


def ufunc_rule(ufunc: Any, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A ufunc call on meta operands: the broadcast shape and NumPy's result dtype(s)."""
    shapes, dts = zip(*(operand(x) for x in inputs), strict=True)
    out = kwargs.get("out")
    if isinstance(out, tuple):
        out = out[0] if len(out) == 1 else out
    dtype = kwargs.get("dtype")
    try:
        shape = matmul_shape(*shapes) if ufunc is np.matmul else tuple(np.broadcast_shapes(*shapes))
        if dtype is not None:
            res = (np.dtype(dtype),) * ufunc.nout
        else:
            res = ufunc.resolve_dtypes((*dts, *(None,) * ufunc.nout))[ufunc.nin :]
    except ValueError as e:
        raise ValueError(f"{ufunc.__name__}: {e}") from None
    except TypeError as e:  # (NumPy's UFuncTypeError is one)
        raise TypeError(f"{ufunc.__name__}: {e}") from None
    if out is not None:
        outs = out if isinstance(out, tuple) else (out,)
        for o in outs:
            if np.broadcast_shapes(o.shape, shape) != tuple(o.shape):
                raise ValueError(f"{ufunc.__name__}: output of shape {o.shape} for a result of shape {shape}")
        return out
    strides = contiguous_strides(shape) if ufunc is np.matmul else layout(shape, inputs)
    made = tuple(MetaArray(shape, d, strides) for d in res)
    return made[0] if len(made) == 1 else made


def matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy's (and PyTorch's) ``matmul`` result shape."""
    if not a or not b:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    a2, b2 = (1, *a) if len(a) == 1 else a, (*b, 1) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ValueError(f"matmul: mismatch in the core dimension: {a} @ {b} ({a2[-1]} is different from {b2[-2]})")
    out = (*np.broadcast_shapes(a2[:-2], b2[:-2]), a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return tuple(out)


def norm_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """``axis`` (None, an int or a tuple) as sorted non-negative dims; a dim out of range is NumPy's AxisError."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        a = operator.index(a)
        if not -max(ndim, 1) <= a < max(ndim, 1):
            raise np.exceptions.AxisError(a, ndim)
        out.append(a % max(ndim, 1))
    return tuple(sorted(set(out))) if ndim else ()


def reduced(x: MetaArray, axis: Any, keepdims: bool, dtype: Any) -> MetaArray:
    """``x`` reduced over ``axis`` to ``dtype``."""
    axes = norm_axes(axis, x.ndim)
    if keepdims:
        shape = tuple(1 if d in axes else s for d, s in enumerate(x.shape))
    else:
        shape = tuple(s for d, s in enumerate(x.shape) if d not in axes)
    return MetaArray(shape, dtype)


def sum_dtype(dt: Any) -> Any:
    """NumPy's accumulator for sum/prod/cumsum: bool and small integers widen to int64 (uint64 stays)."""
    if dt.kind == "b" or (dt.kind == "i" and dt.itemsize < 8):
        return np.dtype(np.int64)
    if dt.kind == "u" and dt.itemsize < 8:
        return np.dtype(np.uint64)
    return dt


def reduce_rule(ufunc: Any, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``ufunc.reduce`` / ``ufunc.accumulate`` on a meta array."""
    x = inputs[0]
    dtype = kwargs.get("dtype")
    dt = np.dtype(dtype) if dtype is not None else ufunc.resolve_dtypes((x.dtype, x.dtype, None))[2]
    if method == "accumulate":
        return kwargs.get("out") or MetaArray(x.shape, dt)
    out = kwargs.get("out")
    res = reduced(x, kwargs.get("axis", 0), bool(kwargs.get("keepdims", False)), dt)
    return out[0] if isinstance(out, tuple) else (out if out is not None else res)


def dt_of(x: Any) -> Any:
    """What ``np.result_type`` takes for an operand: a dtype, or a Python number itself (weak, NEP 50)."""
    return x if isinstance(x, (bool, int, float, complex)) else operand(x)[1]


def result_dtype(*xs: Any) -> Any:
    """NumPy's result dtype of operands (Python numbers weak); a lone Python number: its default dtype."""
    dts = [dt_of(x) for x in xs if x is not None]
    return np.result_type(*dts) if any_array(dts) else np.asarray(dts[0]).dtype


def any_array(dts: list[Any]) -> bool:
    return any(isinstance(d, np.dtype) for d in dts)


def as_meta(x: Any) -> MetaArray:
    """An operand as a MetaArray (host data: its shape and dtype)."""
    if isinstance(x, MetaArray):
        return x
    shape, dt = operand(x)
    return MetaArray(shape, dt if not isinstance(dt, type) else np.result_type(dt))


# -- indexing ----------------------------------------------------------------------------------------------
def _is_advanced(it: Any) -> bool:
    return isinstance(it, (MetaArray, np.ndarray, list)) and not (isinstance(it, np.ndarray) and it.ndim == 0)


def _as_index_array(it: Any) -> tuple[tuple[int, ...], str]:
    """``(shape, kind)`` of an advanced index; bool masks are data-dependent (NumPy's nonzero), refused."""
    if isinstance(it, MetaArray):
        if it.dtype.kind == "b":
            raise NotImplementedError(
                "indexing with a boolean mask is not implemented for meta tensors: the result's size depends on "
                "the mask's values (nonzero)"
            )
        if it.dtype.kind not in "iu":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return it.shape, "i"
    a = np.asarray(it)
    if a.dtype.kind == "b":
        return (int(np.count_nonzero(a)),), "b" if a.ndim == 1 else "bn"
    return tuple(a.shape), "i"


def getitem(x: MetaArray, index: Any) -> MetaArray:
    """``x[index]``: NumPy's result shape; a view when the index is basic (ints, slices, None, ``...``)."""
    items = list(index) if isinstance(index, tuple) else [index]
    items = [it.item() if isinstance(it, np.ndarray) and it.ndim == 0 and it.dtype.kind in "iu" else it for it in items]
    advanced = any(_is_advanced(it) for it in items)
    n_used = sum(1 for it in items if it is not None and it is not Ellipsis)
    if sum(1 for it in items if it is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_used > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    if Ellipsis in [it for it in items if not _is_advanced(it)]:
        at = next(i for i, it in enumerate(items) if it is Ellipsis and not _is_advanced(it))
        items[at : at + 1] = [slice(None)] * (x.ndim - n_used)
    else:
        items += [slice(None)] * (x.ndim - n_used)
    shape: list[int] = []
    strides: list[int] = []
    offset = x.offset
    adv_shapes: list[tuple[int, ...]] = []
    adv_pos: list[int] = []  # where each advanced index sits among the result's dims
    dim = 0
    for it in items:
        if it is None:
            shape.append(1)
            strides.append(0)
            continue
        n, st = x.shape[dim], x.strides_el[dim]
        if isinstance(it, slice):
            start, stop, step = it.indices(n)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            size = max(0, math.ceil((stop - start) / step))
            shape.append(size)
            strides.append(st * step)
            offset += start * st if size else 0
        elif _is_advanced(it) or advanced:
            if isinstance(it, (int, np.integer)):
                i = operator.index(it)
                if not -n <= i < n:
                    raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {n}")
                s: tuple[int, ...] = ()
            else:
                s, kind = _as_index_array(it)
                if kind == "bn":
                    raise NotImplementedError("a multi-dimensional boolean index of a meta tensor")
            adv_shapes.append(s)
            adv_pos.append(len(shape))
        else:
            i = operator.index(it)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {n}")
            offset += (i % n) * st
        dim += 1
    if not adv_shapes:
        return x.view_as(shape, tuple(strides), offset)
    try:
        bshape = tuple(np.broadcast_shapes(*adv_shapes))
    except ValueError:
        raise IndexError(f"shape mismatch: indexing tensors could not be broadcast together with shapes "
                         f"{', '.join(str(list(s)) for s in adv_shapes)}") from None  # fmt: skip
    together = len(set(adv_pos)) == 1  # (nothing between them: NumPy keeps their dims in place)
    at = adv_pos[0] if together else 0
    return MetaArray(shape[:at] + list(bshape) + shape[at:], x.dtype)
