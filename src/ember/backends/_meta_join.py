"""The meta device's joining, selecting and contracting functions (``concatenate``, ``take``, ``einsum`` ...):
their results' shapes and dtypes; the functions whose result size depends on values refuse."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from ._meta_array import MetaArray
from ._meta_rules import as_meta, matmul_shape, norm_axes, operand, result_dtype


# -- joining and selecting -----------------------------------------------------------------------------------
def concatenate(arrays: Any, axis: int | None = 0, dtype: Any = None, **kwargs: Any) -> MetaArray:
    ms = [as_meta(a) for a in arrays]
    dt = dtype if dtype is not None else np.result_type(*(m.dtype for m in ms))
    if axis is None:
        return MetaArray((builtins.sum(m.size for m in ms),), dt)
    nd = ms[0].ndim
    ax = norm_axes(axis, nd)[0]
    for m in ms[1:]:
        bad = builtins.any(s != t for d, (s, t) in enumerate(zip(m.shape, ms[0].shape, strict=True)) if d != ax)
        if m.ndim != nd or bad:
            raise ValueError(f"all the input array dimensions except for the concatenation axis must match exactly, "
                             f"got {ms[0].shape} and {m.shape}")  # fmt: skip
    shape = list(ms[0].shape)
    shape[ax] = builtins.sum(m.shape[ax] for m in ms)
    return kwargs["out"] if kwargs.get("out") is not None else MetaArray(shape, dt)


def stack(arrays: Any, axis: int = 0, **kwargs: Any) -> MetaArray:
    ms = [as_meta(a) for a in arrays]
    if builtins.any(m.shape != ms[0].shape for m in ms):
        raise ValueError("all input arrays must have the same shape")
    ax = axis % (ms[0].ndim + 1)
    return concatenate([m.reshape((*m.shape[:ax], 1, *m.shape[ax:])) for m in ms], ax, **kwargs)


def repeat(x: Any, repeats: Any, axis: int | None = None) -> MetaArray:
    m = as_meta(x)
    if not isinstance(repeats, (int, np.integer)):
        reps = np.asarray(repeats) if not isinstance(repeats, MetaArray) else None
        if reps is None:
            raise NotImplementedError("repeat by a meta tensor of counts: the result's size depends on its values")
        total = int(reps.sum()) if reps.size != 1 else int(reps.reshape(())) * (m.size if axis is None else
                                                                                 m.shape[axis])  # fmt: skip
        if axis is None:
            return MetaArray((total,), m.dtype)
        shape = list(m.shape)
        shape[axis] = total
        return MetaArray(shape, m.dtype)
    if axis is None:
        return MetaArray((m.size * int(repeats),), m.dtype)
    shape = list(m.shape)
    shape[axis % m.ndim] *= int(repeats)
    return MetaArray(shape, m.dtype)


def take(x: Any, indices: Any, axis: int | None = None, **_: Any) -> MetaArray:
    m = as_meta(x)
    ishape = operand(indices)[0]
    if axis is None:
        return MetaArray(ishape, m.dtype)
    ax = axis % m.ndim
    return MetaArray((*m.shape[:ax], *ishape, *m.shape[ax + 1 :]), m.dtype)


def take_along_axis(x: Any, indices: Any, axis: int | None = None) -> MetaArray:
    m = as_meta(x)
    ishape = operand(indices)[0]
    if axis is None:
        return MetaArray(ishape, m.dtype)
    ax = axis % m.ndim
    shape = np.broadcast_shapes(tuple(1 if d == ax else s for d, s in enumerate(m.shape)),
                                tuple(1 if d == ax else s for d, s in enumerate(ishape)))  # fmt: skip
    return MetaArray(tuple(ishape[ax] if d == ax else s for d, s in enumerate(shape)), m.dtype)


def put_along_axis(x: Any, indices: Any, values: Any, axis: int | None) -> None:
    return None


def dot(a: Any, b: Any, out: Any = None) -> MetaArray:
    return out if out is not None else MetaArray(matmul_shape(operand(a)[0], operand(b)[0]),
                                                 result_dtype(a, b))  # fmt: skip


def einsum(subscripts: str, *operands: Any, **kwargs: Any) -> MetaArray:
    ins, arrow, out = subscripts.replace(" ", "").partition("->")
    sizes: dict[str, int] = {}
    ell: tuple[int, ...] = ()
    for term, op in zip(ins.split(","), operands, strict=True):
        shape = operand(op)[0]
        if "..." in term:
            head, _, tail = term.partition("...")
            n = len(shape) - len(head) - len(tail)
            ell = tuple(np.broadcast_shapes(ell, shape[len(head) : len(head) + n]))
            shape, term = shape[: len(head)] + shape[len(head) + n :], head + tail
        if len(term) != len(shape):
            raise ValueError(f"einsum: operand of shape {shape} does not fit subscripts {term!r}")
        for c, s in zip(term, shape, strict=True):
            if sizes.get(c, 1) != 1 and s != 1 and sizes[c] != s:
                raise ValueError(f"einsum: size mismatch for subscript {c!r}: {sizes[c]} and {s}")
            sizes[c] = builtins.max(sizes.get(c, 1), s)
    if not arrow:
        out = ("..." if ell else "") + "".join(sorted(c for c in sizes if ins.count(c) == 1))
    head, dots, tail = out.partition("...")
    res = [sizes[c] for c in head] + (list(ell) if dots else []) + [sizes[c] for c in tail]
    dt = result_dtype(*operands)
    return kwargs["out"] if kwargs.get("out") is not None else MetaArray(res, dt)


# -- data-dependent: no rule -----------------------------------------------------------------------------------
def nonzero(x: Any) -> Any:
    raise NotImplementedError("nonzero is not implemented for meta tensors: the result's size depends on the values")


def unique(x: Any, *args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError("unique is not implemented for meta tensors: the result's size depends on the values")


def ix_(*args: Any) -> tuple[MetaArray, ...]:
    n = len(args)
    return tuple(MetaArray(tuple(operand(a)[0][0] if d == i else 1 for d in range(n)), result_dtype(a))
                 for i, a in enumerate(args))  # fmt: skip


def unravel_index(indices: Any, shape: Any) -> tuple[MetaArray, ...]:
    return tuple(
        MetaArray(operand(indices)[0], np.int64) for _ in (shape if isinstance(shape, (tuple, list)) else (shape,))
    )
