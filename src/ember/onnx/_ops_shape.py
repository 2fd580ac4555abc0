"""ONNX shape, indexing and data-movement operators as Ember ops (with their opset differences)."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from .. import _creation, ops
from .. import _dtype as dt
from .._tensor import Tensor
from ._dtypes import require_dtype
from ._ops_reduce import ints

__all__ = ["OPS"]


def _i64(values: list[int], like: Any = None) -> Tensor:
    return _creation.tensor(values, dtype=dt.int64, device=getattr(like, "device", None))


def reshape(a: Any, x: Tensor, shape: Any = None) -> Tensor:
    target = ints(shape) if a.opset >= 5 else list(a["shape"])
    if not a.get("allowzero", 0):
        target = [x.shape[i] if d == 0 else d for i, d in enumerate(target)]
    return ops.reshape(x, target)


def shape(a: Any, x: Tensor) -> Tensor:
    s = list(x.shape)
    start, end = a.get("start", 0), a.get("end", None)
    return _i64(s[builtins.slice(start, end)], x)


def size(a: Any, x: Tensor) -> Tensor:
    return _creation.tensor(x.numel(), dtype=dt.int64, device=x.device)


def squeeze(a: Any, x: Tensor, axes: Any = None) -> Tensor:
    dims = ints(axes) if a.opset >= 13 else list(a.get("axes", []))
    if not dims:
        dims = [d for d, s in enumerate(x.shape) if s == 1]
    keep = {d % x.ndim for d in dims}
    return x.reshape([s for d, s in enumerate(x.shape) if d not in keep])


def unsqueeze(a: Any, x: Tensor, axes: Any = None) -> Tensor:
    dims = ints(axes) if a.opset >= 13 else list(a["axes"])
    n = x.ndim + len(dims)
    where = {d % n for d in dims}
    it = iter(x.shape)
    return x.reshape([1 if d in where else next(it) for d in range(n)])


def flatten(a: Any, x: Tensor) -> Tensor:
    axis = a.get("axis", 1)
    axis = axis + x.ndim if axis < 0 else axis
    lead = 1
    for s in x.shape[:axis]:
        lead *= s
    return x.reshape(lead, -1) if x.numel() else x.reshape(lead, x.numel() // max(lead, 1))


def concat(a: Any, *xs: Tensor) -> Tensor:
    return ops.cat(list(xs), a["axis"])


def split(a: Any, x: Tensor, sizes: Any = None) -> tuple[Tensor, ...]:
    axis = a.get("axis", 0) % x.ndim
    parts = ints(sizes) if a.opset >= 13 else list(a.get("split", []))
    if not parts:
        n = a.get("num_outputs", a.n_out)
        each = -(-x.shape[axis] // n)
        parts = [min(each, x.shape[axis] - i * each) for i in range(n)]
    return tuple(ops.split(x, parts, axis))


def _slice_range(start: int, end: int, step: int, n: int) -> range:
    """ONNX's clamping of one axis' start/end (negative counts from the end) as a Python range."""
    start = start + n if start < 0 else start
    end = end + n if end < 0 else end
    if step > 0:
        return range(min(max(start, 0), n), min(max(end, 0), n), step)
    return range(min(max(start, 0), n - 1), min(max(end, -1), n - 1), step)


def slice(a: Any, x: Tensor, starts: Any = None, ends: Any = None, axes: Any = None, steps: Any = None) -> Tensor:
    if a.opset < 10:
        starts, ends, axes, steps = list(a["starts"]), list(a["ends"]), a.get("axes"), None
    s, e = ints(starts), ints(ends)
    ax = ints(axes) if axes is not None else list(range(len(s)))
    st = ints(steps) if steps is not None else [1] * len(s)
    index: list[Any] = [builtins.slice(None)] * x.ndim
    flips = []
    for d, b, f, k in zip(ax, s, e, st):
        d %= x.ndim
        n = x.shape[d]
        r = _slice_range(b, f, k, n)
        if k > 0:
            index[d] = builtins.slice(r.start, r.stop, k)
        else:  # a negative step reads the flipped axis forwards (torch has no negative-step slices)
            flips.append(d)
            index[d] = builtins.slice(n - 1 - r.start, n - 1 - r.stop, -k)
    if flips:
        x = ops.flip(x, tuple(flips))
    return x[tuple(index)]


def _wrap(idx: Tensor, n: int) -> Tensor:
    return ops.where(idx < 0, idx + n, idx)


def gather(a: Any, x: Tensor, idx: Tensor) -> Tensor:
    axis = a.get("axis", 0) % x.ndim
    i = _wrap(idx.long(), x.shape[axis])
    out = ops.index_select(x, axis, i.reshape(-1))
    return out.reshape(list(x.shape[:axis]) + list(idx.shape) + list(x.shape[axis + 1 :]))


def gather_elements(a: Any, x: Tensor, idx: Tensor) -> Tensor:
    axis = a.get("axis", 0) % x.ndim
    return ops.gather(x, axis, _wrap(idx.long(), x.shape[axis]))


def gather_nd(a: Any, x: Tensor, idx: Tensor) -> Tensor:
    b = a.get("batch_dims", 0)
    k = idx.shape[-1]
    batch = list(x.shape[:b])
    nb = 1
    for s in batch:
        nb *= s
    xs = x.reshape([nb, *x.shape[b:]])
    ix = idx.long().reshape([nb, -1, k])
    rows = _creation.arange(nb, device=x.device).reshape(nb, 1).expand(nb, ix.shape[1])
    keys = [rows] + [_wrap(ix[..., j], x.shape[b + j]) for j in range(k)]
    out = xs[tuple(keys)]
    return out.reshape(batch + list(idx.shape[b:-1]) + list(x.shape[b + k :]))


_REDUCE = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}


def scatter_elements(a: Any, x: Tensor, idx: Tensor, updates: Tensor) -> Tensor:
    axis = a.get("axis", 0) % x.ndim
    i = _wrap(idx.long(), x.shape[axis])
    red = a.get("reduction", "none")
    if red == "none":
        return ops.scatter(x, axis, i, updates)
    return ops.scatter_reduce(x, axis, i, updates, _REDUCE[red], include_self=True)


def scatter_nd(a: Any, x: Tensor, idx: Tensor, updates: Tensor) -> Tensor:
    k = idx.shape[-1]
    lead = list(x.shape[:k])
    rows = 1
    for s in lead:
        rows *= s
    flat = x.reshape(rows, -1)
    ix = idx.long().reshape(-1, k)
    lin = _creation.zeros(ix.shape[0], dtype=dt.int64, device=x.device)
    for j in range(k):
        lin = lin * lead[j] + _wrap(ix[:, j], lead[j])
    upd = updates.reshape(ix.shape[0], flat.shape[1])
    index = lin.reshape(-1, 1).expand(upd.shape[0], upd.shape[1])
    red = a.get("reduction", "none")
    if red == "none":
        out = ops.scatter(flat, 0, index, upd)
    else:
        out = ops.scatter_reduce(flat, 0, index, upd, _REDUCE[red], include_self=True)
    return out.reshape(x.shape)


def transpose(a: Any, x: Tensor) -> Tensor:
    perm = a.get("perm") or list(range(x.ndim))[::-1]
    return x.permute(*perm)


def expand(a: Any, x: Tensor, shape: Any) -> Tensor:
    s = ints(shape)
    n = max(len(s), x.ndim)
    xs = [1] * (n - x.ndim) + list(x.shape)
    ts = [1] * (n - len(s)) + s
    return ops.broadcast_to(x.reshape(xs), [a_ if b == 1 else b for a_, b in zip(xs, ts)])


def tile(a: Any, x: Tensor, repeats: Tensor) -> Tensor:
    return x.repeat(*ints(repeats)) if x.ndim else x.clone()


def constant_of_shape(a: Any, shape: Tensor) -> Tensor:
    value = a.get("value")
    s = ints(shape)
    if value is None:
        return _creation.zeros(s, dtype=dt.float32, device=shape.device)
    v = _creation.from_numpy(value.reshape(-1)[:1].copy())
    return _creation.full(s, v.item(), dtype=v.dtype, device=shape.device)


def range_(a: Any, start: Tensor, limit: Tensor, delta: Tensor) -> Tensor:
    return _creation.arange(start.item(), limit.item(), delta.item(), dtype=start.dtype, device=start.device)


def eye_like(a: Any, x: Tensor) -> Tensor:
    dtype = require_dtype(a["dtype"], a.name) if "dtype" in a else x.dtype
    n, m = x.shape
    ones = _creation.ones(n, m, dtype=dt.float32, device=x.device)
    k = a.get("k", 0)
    return ops.triu(ops.tril(ones, k), k).to(dtype)


def trilu(a: Any, x: Tensor, k: Any = None) -> Tensor:
    kk = ints(k)[0] if k is not None else 0
    return ops.triu(x, kk) if a.get("upper", 1) else ops.tril(x, kk)


def one_hot(a: Any, idx: Tensor, depth: Tensor, values: Tensor) -> Tensor:
    d = int(depth.item())
    i = idx.long()
    i = ops.where(i < 0, i + d, i)
    axis = a.get("axis", -1)
    axis = axis % (idx.ndim + 1)
    classes = _creation.arange(d, device=idx.device).reshape([d] + [1] * (idx.ndim - axis))
    hot = i.unsqueeze(axis) == classes
    return ops.where(hot, values[1], values[0])


def nonzero(a: Any, x: Tensor) -> Tensor:
    if x.ndim == 0:
        return _creation.zeros(0 if not bool(x.item()) else 1, 1 if bool(x.item()) else 0, dtype=dt.int64).t()
    return ops.nonzero(x).t().long()


def compress(a: Any, x: Tensor, cond: Tensor) -> Tensor:
    axis = a.get("axis")
    if axis is None:
        x, axis = x.reshape(-1), 0
    n = x.shape[axis]
    keep = ops.nonzero(cond.reshape(-1)[:n]).reshape(-1)
    return ops.index_select(x, axis, keep)


def cast(a: Any, x: Any) -> Tensor:
    return x.to(require_dtype(a["to"], f"{a.name}: Cast to"))


def dropout(a: Any, x: Tensor, ratio: Any = None, training: Any = None) -> Any:
    p = float(ratio.item()) if isinstance(ratio, Tensor) else a.get("ratio", 0.5)
    train = bool(training.item()) if isinstance(training, Tensor) else False
    if not train or p == 0:
        return x.clone(), _creation.ones(x.shape, dtype=dt.bool_, device=x.device)
    keep = _creation.rand(x.shape, device=x.device) >= p
    return ops.where(keep, x / (1 - p), _creation.zeros_like(x)), keep


def depth_to_space(a: Any, x: Tensor) -> Tensor:
    b = a["blocksize"]
    n, c, h, w = x.shape
    if a.get("mode", "DCR") == "DCR":
        y = x.reshape(n, b, b, c // (b * b), h, w).permute(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c // (b * b), b, b, h, w).permute(0, 1, 4, 2, 5, 3)
    return y.reshape(n, c // (b * b), h * b, w * b)


def space_to_depth(a: Any, x: Tensor) -> Tensor:
    b = a["blocksize"]
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b)
    y = y.permute(0, 3, 5, 1, 2, 4) if a.get("mode", "DCR") == "DCR" else y.permute(0, 1, 3, 5, 2, 4)
    return y.reshape(n, c * b * b, h // b, w // b)


def reverse_sequence(a: Any, x: Tensor, lens: Tensor) -> Tensor:
    bt, tt = a.get("batch_axis", 1), a.get("time_axis", 0)
    rows = []
    for i, n in enumerate(ints(lens)):
        row = ops.select(x, bt, i)
        t = tt if tt < bt else tt - 1
        idx = list(range(n - 1, -1, -1)) + list(range(n, row.shape[t]))
        rows.append(ops.index_select(row, t, _i64(idx, x)))
    return ops.stack(rows, bt)


def unique(a: Any, x: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    axis = a.get("axis")
    flat = x.reshape(-1) if axis is None else x
    d = 0 if axis is None else axis % x.ndim
    values, inverse, counts = ops.unique(flat, sorted=True, return_inverse=True, return_counts=True, dim=d)
    n = flat.shape[d]
    pos = _creation.arange(n, device=x.device)
    first = _creation.full([values.shape[d]], n, dtype=dt.int64, device=x.device)
    first = ops.scatter_reduce(first, 0, inverse.reshape(-1), pos, "amin", include_self=True)
    if not a.get("sorted", 1):
        order = ops.argsort(first)
        rank = ops.argsort(order)
        values, first, counts = ops.index_select(values, d, order), first[order], counts[order]
        inverse = rank[inverse]
    return values, first.long(), inverse.reshape(-1).long(), counts.long()


OPS: dict[str, Callable[..., Any]] = {
    "Reshape": reshape, "Shape": shape, "Size": size, "Squeeze": squeeze, "Unsqueeze": unsqueeze,
    "Flatten": flatten, "Concat": concat, "Split": split, "Slice": slice, "Gather": gather,
    "GatherElements": gather_elements, "GatherND": gather_nd, "ScatterElements": scatter_elements,
    "Scatter": scatter_elements, "ScatterND": scatter_nd, "Transpose": transpose, "Expand": expand, "Tile": tile,
    "ConstantOfShape": constant_of_shape, "Range": range_, "EyeLike": eye_like, "Trilu": trilu, "OneHot": one_hot,
    "NonZero": nonzero, "Compress": compress, "Cast": cast, "CastLike": lambda a, x, like: x.to(like.dtype),
    "Identity": lambda a, x: x, "Dropout": dropout, "DepthToSpace": depth_to_space,
    "SpaceToDepth": space_to_depth, "ReverseSequence": reverse_sequence, "Unique": unique,
}  # fmt: skip
