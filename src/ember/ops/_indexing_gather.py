"""Gathering and scattering along a dim (torch docs, "Indexing, Slicing, Joining, Mutating Ops"):
``gather``/``scatter*``, ``index_*``, ``masked_*``, ``take``.
"""

from __future__ import annotations

from typing import Any

from .._dtype import bool_, int64, uint8
from .._errors import DeviceError, DTypeError, OutOfRangeError, ShapeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._autocast import autocast_op
from ..autograd._function import Op
from ._indexing import GetItem, IndexBackward, IndexPut, where
from ._indexing_view import expand, reshape
from ._util import broadcast_shapes, index_out_of_range, norm_dim, same_dtype

__all__ = [
    "gather",
    "index_add",
    "index_copy",
    "index_fill",
    "index_select",
    "masked_fill",
    "masked_scatter",
    "masked_select",
    "scatter",
    "scatter_add",
    "scatter_reduce",
    "take",
    "take_along_dim",
]
METHODS = list(__all__)


def _int_index(op: str, index: Tensor, backend: Any) -> Any:
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}: index must be a Tensor, got {type(index).__name__}")
    if index._backend is not backend:
        raise DeviceError(
            f"{op}: index on {index.device} ({index._backend.name} backend), input on {backend.device} "
            f"({backend.name} backend); move the index with .to(input.device)"
        )
    if index.dtype.kind not in "iu":
        raise DTypeError(f"{op}: index must be an integer tensor, got {index.dtype}")
    if index.dtype is uint8:  # integers on every backend (torch would read a uint8 array index as a mask)
        return backend.astype(index._data, int64)
    return index._data


def _full_index(op: str, input: Tensor, dim: int, index: Tensor) -> tuple[Any, ...]:
    """The advanced index that reads ``input`` along ``dim`` at ``index`` (torch.gather's addressing)."""
    d = norm_dim(dim, input.ndim, op)
    idx = _int_index(op, index, input._backend)
    if idx.ndim != input.ndim:
        raise ShapeError(f"{op}: index has rank {idx.ndim} but input has rank {input.ndim}; they must match")
    for a, (si, sx) in enumerate(zip(idx.shape, input.shape, strict=True)):
        if a != d and si > sx:
            raise ShapeError(
                f"{op}: index shape {tuple(idx.shape)} exceeds input shape {tuple(input.shape)} at dim {a}"
            )
    size = input.shape[d]
    bad = index_out_of_range(idx, -size, size, input._backend)
    if bad:
        raise OutOfRangeError(f"{op}: index out of range for dim {d} of size {size} (got {bad[0]}..{bad[1]})")
    xp = input._backend.xp
    out = []
    for a in range(input.ndim):
        if a == d:
            out.append(idx)
        else:
            shape = [1] * input.ndim
            shape[a] = idx.shape[a]
            out.append(xp.arange(idx.shape[a]).reshape(shape))
    return tuple(out)


def _as_1d(fn: Any) -> Any:
    """A 0-d ``input`` (and 0-d index/src) is treated as one element along dim 0, as PyTorch does."""

    def call(input: Tensor, dim: int, index: Tensor, *args: Any, **kwargs: Any) -> Any:
        if input.ndim or not isinstance(index, Tensor) or index.ndim > 1:
            return fn(input, dim, index, *args, **kwargs)
        norm_dim(dim, 1, fn.__name__)
        args = tuple(a.reshape(-1) if isinstance(a, Tensor) and a.ndim == 0 else a for a in args)
        for k, v in list(kwargs.items()):
            if isinstance(v, Tensor) and v.ndim == 0:
                kwargs[k] = v.reshape(-1)
        out = fn(reshape(input, (1,)), 0, index.reshape(-1), *args, **kwargs)
        return reshape(out, ()) if index.ndim == 0 or out.numel() == 1 else out

    call.__name__, call.__doc__, call.__wrapped__ = fn.__name__, fn.__doc__, fn  # type: ignore[attr-defined]
    return call


def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """``out[i][j] = input[index[i][j]][j]`` for ``dim=0`` (and so on); differentiable in ``input``. The result
    has ``index``'s shape (a 0-d input is one element along dim 0; an empty index of any rank gives an empty
    result, as in PyTorch)."""
    if isinstance(index, Tensor) and input.ndim == 0 and index.ndim <= 1:  # a 0-d input: one element along dim 0
        norm_dim(dim, 1, "gather")
        return reshape(gather(reshape(input, (1,)), 0, reshape(index, (-1,))), tuple(index.shape))
    if isinstance(index, Tensor) and index.ndim != input.ndim and index.numel() == 0:  # PyTorch checks no ranks
        norm_dim(dim, max(input.ndim, 1), "gather")
        _int_index("gather", index, input._backend)
        return reshape(reshape(input, (-1,))[:0], tuple(index.shape))
    return GetItem.apply(input, _full_index("gather", input, dim, index))


def _src_like(op: str, src: Any, index: Tensor, like: Tensor) -> Any:
    """``src`` cut to ``index``'s shape (a scalar stays a scalar)."""
    if not isinstance(src, Tensor):
        return src
    if src.ndim != index.ndim or any(s < i for s, i in zip(src.shape, index.shape, strict=True)):
        raise ShapeError(
            f"{op}: src shape {tuple(src.shape)} must be at least index shape {tuple(index.shape)} in every dim"
        )
    if src.shape != index.shape:
        src = GetItem.apply(src, tuple(slice(0, s) for s in index.shape))
    if src.dtype is not like.dtype:
        raise DTypeError(f"{op}: src has dtype {src.dtype} but input has dtype {like.dtype}; they must match")
    return src


@_as_1d
def scatter(
    input: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None, reduce: Any = None
) -> Tensor:
    """Write ``src`` (or ``value``) into a copy of ``input`` at ``index`` along ``dim``."""
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter: give src or value")
    if reduce is not None:
        names = {"add": "sum", "multiply": "prod"}
        if reduce not in names:
            raise ValueRangeError(f"scatter: reduce must be 'add' or 'multiply', got {reduce!r}")
        if not isinstance(src, Tensor):
            src = input.new_full(index.shape, src)
        return scatter_reduce(input, dim, index, src, names[reduce])
    idx = _full_index("scatter", input, dim, index)
    return IndexPut.apply(input, _src_like("scatter", src, index, input), idx)


class _ScatterAdd(Op):
    saves_inputs = False

    def forward(self, x: Any, src: Any, idx: Any) -> Any:
        self.idx = idx
        out = self.backend.xp.copy(x)
        self.backend.index_add(out, idx, src)
        return out

    def backward(self, g: Tensor) -> tuple[Tensor, Tensor, None]:
        return g, GetItem.apply(g, self.idx), None


@_as_1d
@autocast_op("scatter_add")
def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """Add ``src`` into a copy of ``input`` at ``index`` along ``dim`` (repeated indices accumulate)."""
    idx = _full_index("scatter_add", input, dim, index)
    return _ScatterAdd.apply(input, _src_like("scatter_add", src, index, input), idx)


_REDUCES = ("sum", "prod", "mean", "amax", "amin")


@_as_1d
def scatter_reduce(
    input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *, include_self: bool = True
) -> Tensor:
    """Reduce ``src`` into a copy of ``input`` at ``index`` with sum, prod, mean, amax or amin."""
    if reduce not in _REDUCES:
        raise ValueRangeError(f"scatter_reduce: reduce must be one of {_REDUCES}, got {reduce!r}")
    idx = _full_index("scatter_reduce", input, dim, index)
    src = _src_like("scatter_reduce", src, index, input)
    hit = IndexBackward.apply(src.new_ones(src.shape).detach(), input.shape, idx, False).detach() > 0
    base = input if include_self else where(hit, _identity(reduce, input), input)
    if reduce in ("sum", "mean"):
        total = base + IndexBackward.apply(src, input.shape, idx, False)
        if reduce == "sum":
            return total
        count = IndexBackward.apply(src.new_ones(src.shape).detach(), input.shape, idx, False).detach()
        count = count + (1 if include_self else (~hit).to(count.dtype))
        count = count.clamp(min=1)
        return total / count if input.dtype.is_floating_point else total // count.to(input.dtype)
    return _ScatterExtreme.apply(base, src, idx, reduce)


def _identity(reduce: str, x: Tensor) -> Any:
    """``reduce``'s identity as a number that keeps ``x``'s dtype (an int for integers, a bool for bool)."""
    kind = x.dtype.kind
    if kind == "b":
        return reduce in ("prod", "amin")
    if reduce in ("sum", "mean", "prod"):
        one = 1 if reduce == "prod" else 0
        return float(one) if kind in "fc" else one
    if kind == "f":
        return -float("inf") if reduce == "amax" else float("inf")
    info = x._backend.xp.iinfo(x._data.dtype)
    return int(info.min) if reduce == "amax" else int(info.max)


class _ScatterExtreme(Op):
    """scatter_reduce with prod, amax or amin (the ufunc ``at`` forms)."""

    def forward(self, x: Any, src: Any, idx: Any, reduce: str) -> Any:
        self.idx, self.reduce = idx, reduce
        out = self.backend.scatter_reduce_at(x, idx, src, reduce)
        self.keep(out)
        return out

    saves_output = True

    def backward(self, g: Tensor) -> tuple[Tensor, Tensor, None, None]:
        x, src, _, _ = self.inputs  # type: ignore[misc]
        out = self.output()
        idx = self.idx
        shape = x.shape
        if self.reduce == "prod":
            # product of the others = out / self where self != 0; exact with zeros by counting them
            xz, sz = (x == 0), (src == 0)
            nz = xz.to(g.dtype) + IndexBackward.apply(sz.to(g.dtype), shape, idx, False)
            x1, s1 = where(xz, 1.0, x), where(sz, 1.0, src)
            nonzero_prod = _ScatterExtreme.apply(x1, s1, idx, "prod")  # (not detached: a double backward reads it)
            gx = g * where(nz == 0, out / x1, where(xz & (nz == 1), nonzero_prod, 0.0))
            gsrc_all = g * where(nz == 0, out, 0.0)
            gs = GetItem.apply(gsrc_all, idx) / s1
            one_zero = GetItem.apply(g * where(nz == 1, nonzero_prod, 0.0), idx)
            gs = where(sz, one_zero, gs)
            return gx, gs, None, None
        # amax/amin: the gradient is shared evenly among the elements equal to the result
        x_is = (x == out).to(g.dtype)
        s_is = (src == GetItem.apply(out, idx)).to(g.dtype)
        n = x_is + IndexBackward.apply(s_is, shape, idx, False)
        share = g / n.clamp(min=1)
        return x_is * share, s_is * GetItem.apply(share, idx), None, None


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The slices of ``input`` along ``dim`` at the 1-d ``index``."""
    d = norm_dim(dim, input.ndim, "index_select")
    idx = _int_index("index_select", index, input._backend)
    if idx.ndim > 1:
        raise ShapeError(f"index_select: index must be 0-d or 1-d, got shape {tuple(idx.shape)}")
    size = input.shape[d] if input.ndim else 1
    if index_out_of_range(idx, -size, size, input._backend):
        raise OutOfRangeError(f"index_select: index out of range for dim {d} of size {size}")
    if not input.ndim:
        return GetItem.apply(reshape(input, (1,)), (idx.reshape(-1),)).reshape(())
    return GetItem.apply(input, (slice(None),) * d + (idx.reshape(-1),))


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
    """``input`` with ``alpha * source`` added at ``index`` along ``dim`` (repeats accumulate)."""
    if not input.ndim:  # 0-d: as a one-element 1-d tensor (PyTorch takes a 0-d or one-element source)
        norm_dim(dim, 0, "index_add")
        src1 = reshape(source, (1,)) if isinstance(source, Tensor) and not source.ndim else source
        return reshape(index_add(reshape(input, (1,)), 0, index, src1, alpha=alpha), ())
    d = norm_dim(dim, input.ndim, "index_add")
    same_dtype("index_add", "input and source", input, source)
    idx = _int_index("index_add", index, input._backend).reshape(-1)
    expect = input.shape[:d] + (idx.shape[0],) + input.shape[d + 1 :]
    if source.shape != expect:
        raise ShapeError(
            f"index_add: source shape {tuple(source.shape)} must be {tuple(expect)} for input {tuple(input.shape)}"
        )
    n = input.shape[d]
    if index_out_of_range(idx, -n, n, input._backend):
        raise OutOfRangeError(f"index_add: index out of range for dim {d} of size {n}")
    src = source * alpha if alpha != 1 else source
    return input + IndexBackward.apply(src.to(input.dtype), input.shape, (slice(None),) * d + (idx,), False)


def _mask(op: str, mask: Tensor, input: Tensor) -> Tensor:
    if not isinstance(mask, Tensor) or mask.dtype is not bool_:
        raise DTypeError(f"{op}: mask must be a bool tensor, got {getattr(mask, 'dtype', type(mask).__name__)}")
    if mask._backend is not input._backend:
        raise DeviceError(
            f"{op}: mask on {mask.device} ({mask._backend.name} backend), input on {input.device} "
            f"({input._backend.name} backend); move the mask with .to(input.device)"
        )
    return mask


def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    """``input`` with ``value`` where ``mask`` is true (the two broadcast, as PyTorch's out-of-place form; the
    in-place ``masked_fill_`` keeps ``input``'s shape)."""
    _mask("masked_fill", mask, input)
    if not input.dtype.is_complex and (
        isinstance(value, complex) or (isinstance(value, Tensor) and value.dtype.is_complex)
    ):
        raise DTypeError(f"masked_fill: a complex value cannot be converted to type {input.dtype} without overflow")
    if isinstance(value, Tensor):
        if value.ndim:
            raise ShapeError(f"masked_fill: value must be a 0-d tensor, got shape {tuple(value.shape)}")
        value = value.to(input.dtype)
    if mask.shape != input.shape:
        broadcast_shapes(mask.shape, input.shape, op="masked_fill")
    out = where(mask, value, input)
    return out if out.dtype is input.dtype else out.to(input.dtype)


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements where ``mask`` is true, as a 1-d tensor (both broadcast first)."""
    _mask("masked_select", mask, input)
    shape = broadcast_shapes(input.shape, mask.shape)
    x = expand(input, *shape) if input.shape != shape else input
    m = mask._data if mask.shape == shape else mask._backend.xp.broadcast_to(mask._data, shape)
    if not shape:  # 0-d: as one-element 1-d tensors
        x, m = reshape(x, (1,)), m.reshape(1)
    return GetItem.apply(x, (m,))


def take(input: Tensor, index: Tensor) -> Tensor:
    """``input.flatten()[index]``, shaped like ``index``."""
    flat = reshape(input, (-1,))
    idx = _int_index("take", index, input._backend)
    return GetItem.apply(flat, (idx,))


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """Gather along ``dim`` with ``indices`` broadcast against ``input`` in the other dims."""
    if dim is None:
        return take(input, reshape(indices, (-1,)))
    d = norm_dim(dim, input.ndim, "take_along_dim")
    idx = _int_index("take_along_dim", indices, input._backend)
    if indices.ndim != input.ndim:
        raise ShapeError(f"take_along_dim: indices rank {indices.ndim} differs from input rank {input.ndim}")
    n = input.shape[d]
    bad = index_out_of_range(idx, -n, n, input._backend)  # before broadcasting: a broadcast view's range is unknown
    if bad:
        raise OutOfRangeError(f"take_along_dim: index out of range for dim {d} of size {n} (got {bad[0]}..{bad[1]})")
    xs, ish = list(input.shape), list(indices.shape)
    xs[d] = ish[d] = 1
    common = list(broadcast_shapes(tuple(xs), tuple(ish)))
    xshape = tuple(common[:d] + [input.shape[d]] + common[d + 1 :])
    ishape = tuple(common[:d] + [indices.shape[d]] + common[d + 1 :])
    x = expand(input, *xshape) if input.shape != xshape else input
    i = Tensor._make(input._backend.xp.broadcast_to(idx, ishape), input._backend)
    return gather(x, d, i)


@autocast_op("index_copy")
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` whose slices at ``index`` along ``dim`` are ``source``'s (indices distinct)."""
    d = norm_dim(dim, input.ndim, "index_copy") if input.ndim else 0
    if source.dtype is not input.dtype:
        raise DTypeError(f"index_copy: source has dtype {source.dtype} but input has {input.dtype}")
    if not input.ndim:
        return reshape(index_copy(reshape(input, (1,)), 0, index.reshape(-1), source.reshape(-1)), ())
    if input.dtype.kind == "b":  # (bool + bool would add as int64)
        return index_copy(input.to("uint8"), d, index, source.to("uint8")).to(input.dtype)
    return index_fill(input, d, index, 0) + index_add(input.new_zeros(input.shape), d, index, source)


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` with the elements where ``mask`` holds taken, in order, from ``source``."""
    _mask("masked_scatter", mask, input)
    if source.dtype is not input.dtype:
        raise DTypeError(f"masked_scatter: source has dtype {source.dtype} but input has {input.dtype}")
    shape = broadcast_shapes(tuple(input.shape), tuple(mask.shape))  # both broadcast, as PyTorch's out-of-place
    m = expand(mask, *shape) if tuple(mask.shape) != shape else mask
    input = expand(input, *shape) if tuple(input.shape) != shape else input
    k = int(m._data.sum())
    if k > source.numel():
        raise ShapeError(f"masked_scatter: mask selects {k} elements but source has only {source.numel()}")
    out = input.clone()
    out[m] = reshape(source, -1)[:k]
    return out


def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """A copy of ``input`` with ``value`` at ``index`` along ``dim``."""
    d = norm_dim(dim, input.ndim, "index_fill") if input.ndim else 0
    idx = _int_index("index_fill", index, input._backend).reshape(-1)
    n = input.shape[d] if input.ndim else 1
    if index_out_of_range(idx, -n, n, input._backend):
        raise OutOfRangeError(f"index_fill: index out of range for dim {d} of size {n}")
    xp = input._backend.xp
    mask = xp.zeros(n, dtype=bool)
    mask[idx] = True
    shape = [1] * input.ndim
    if input.ndim:
        shape[d] = input.shape[d]
    m = Tensor._make(mask.reshape(shape), input._backend)
    return where(m, value, input)
