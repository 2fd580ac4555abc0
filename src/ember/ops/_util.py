"""Helpers shared by operators: dim normalisation, undoing broadcasting, type promotion."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import _creation
from .._dtype import DType, bool_, get_default_dtype, int64, promote_types
from .._errors import OutOfRangeError, ShapeError
from .._tensor import Tensor


def norm_dim(dim: int, ndim: int, op: str) -> int:
    """``dim`` as a non-negative axis of a rank-``ndim`` tensor, or a clear IndexError (also a RuntimeError)."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise OutOfRangeError(f"{op}: dim {dim} is out of range for a tensor of rank {ndim} (expected {-n}..{n - 1})")
    return dim % n


def norm_dims(dim: Any, ndim: int, op: str) -> tuple[int, ...]:
    """A dim, a sequence of dims or ``None`` (all) as a sorted tuple of non-negative axes.

    A 0-d tensor takes dims -1 and 0 (and gives ``()``); a dim given twice raises, as in PyTorch.
    """
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, int):
        d = norm_dim(dim, ndim, op)
        return (d,) if ndim else ()
    dims = [norm_dim(int(d), ndim, op) for d in dim]
    if len(set(dims)) != len(dims):
        rep = next(d for d in dims if dims.count(d) > 1)
        raise ShapeError(f"{op}: dim {rep} appears multiple times in the list of dims {tuple(dim)}")
    return tuple(sorted(dims)) if ndim else ()


def as_shape(shape: Sequence[Any]) -> tuple[int, ...]:
    """``f(2, 3)`` and ``f((2, 3))`` both as ``(2, 3)``."""
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


def broadcast_axes(gshape: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    """The axes of a ``gshape`` array to sum (keeping dims) to undo broadcasting ``shape`` to it."""
    lead = len(gshape) - len(shape)
    return tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and gshape[i + lead] != 1)


def sum_to(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum ``g`` down to ``shape``: undo broadcasting in a gradient (the one place that does it)."""
    gshape = g._data.shape
    if gshape == shape:
        return g
    axes = broadcast_axes(gshape, shape)
    from ._reduce import sum as _sum
    from ._shape import reshape

    out = _sum(g, axes, keepdim=True) if axes else g
    return reshape(out, shape) if out._data.shape != shape else out


def promote_tensors(tensors: Sequence[Tensor]) -> list[Tensor]:
    """Tensors cast to their common dtype (the promotion rule of ``promote``, for many operands)."""
    d = tensors[0].dtype
    for t in tensors[1:]:
        d = promote_types(d, t.dtype)
    return [t if t.dtype is d else t.to(d) for t in tensors]


def scalar_dtype(value: Any) -> DType:
    """The dtype a Python scalar takes on its own."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    return get_default_dtype()


def check_scalar(op: str, value: Any) -> None:
    if not isinstance(value, (int, float, bool)) and not hasattr(value, "dtype"):
        raise TypeError(f"{op}: expected a Tensor or a Python number, got {type(value).__name__}")


def promote(op: str, a: Any, b: Any) -> tuple[Any, Any]:
    """Type promotion, in one place: cast tensor operands to their common dtype.

    Python scalars are weak (PyTorch / NumPy 2): they never widen a tensor of their own kind; a float
    scalar with an integer or bool tensor gives the default float, an int scalar with a bool tensor int64.
    """
    if a.__class__ is Tensor:  # fast paths: same dtype, or a float scalar with a float tensor
        if b.__class__ is Tensor:
            if a._data.dtype == b._data.dtype:
                return a, b
        elif b.__class__ is float and a._data.dtype in a._backend.float_dtypes:
            return a, b
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    if ta and tb:
        if a._data.dtype == b._data.dtype:
            return a, b
        d = promote_types(a.dtype, b.dtype)
        return (a if a.dtype is d else a.to(d)), (b if b.dtype is d else b.to(d))
    t, s = (a, b) if ta else (b, a)
    if not isinstance(s, (int, float)):
        if isinstance(s, (list, tuple)) or hasattr(s, "__array__"):
            s = _creation.tensor(s, device=t._backend)
            return promote(op, *((t, s) if ta else (s, t)))
        raise TypeError(f"{op}: expected a Tensor or a Python number, got {type(s).__name__}")
    kind = t.dtype.kind
    if kind == "f":
        pass
    elif isinstance(s, float):
        t = t.to(get_default_dtype())
    elif kind == "b" and not isinstance(s, bool):
        t = t.to(int64)
    return (t, s) if ta else (s, t)


def arange_like_dim(shape: tuple[int, ...], dim: int, backend: Any) -> Tensor:
    """``0..shape[dim]-1`` laid along ``dim`` (size 1 elsewhere): compares against gathered indices."""
    xp = backend.xp
    view = [1] * len(shape)
    view[dim] = shape[dim]
    return Tensor._make(xp.arange(shape[dim], dtype=xp.int64).reshape(view), backend)


def broadcast_shapes(*shapes: tuple[int, ...], op: str = "broadcast_shapes") -> tuple[int, ...]:
    """The shape that ``shapes`` broadcast to, or a ValueError naming them."""
    import numpy as np

    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ShapeError(f"{op}: shapes {' and '.join(str(tuple(s)) for s in shapes)} cannot broadcast") from None


def sum_to_array(g: Any, shape: tuple[int, ...]) -> Any:
    """``sum_to`` on a backend array (the first-order fast path)."""
    if g.shape == shape:
        return g
    axes = broadcast_axes(g.shape, shape)
    out = g.sum(axis=axes, keepdims=True) if axes else g
    return out.reshape(shape)


def size_of(a: Any) -> int:
    """The number of elements of a backend array (NumPy's ``.size`` is torch's ``.numel()``)."""
    n = 1
    for s in a.shape:
        n *= s
    return n


def index_out_of_range(idx: Any, low: int, high: int, backend: Any) -> tuple[int, int] | None:
    """``(min, max)`` of ``idx`` when a value lies outside ``[low, high)``, else None.

    Only on backends where reading a value back is cheap (``backend.cheap_sync``): on an accelerator the
    check would wait for the device (a hidden sync), so there the kernel reports a bad index itself, as
    PyTorch's CUDA kernels do.
    """
    if not backend.cheap_sync or not size_of(idx):
        return None
    xp = backend.xp
    lo, hi = int(xp.min(idx)), int(xp.max(idx))
    return (lo, hi) if lo < low or hi >= high else None
