"""Indexing and selection (torch docs, "Indexing, Slicing, Joining, Mutating Ops"): ``t[index]`` and its
assignment, ``where``, ``nonzero``, ``select``, ``narrow``.
"""

from __future__ import annotations

import math
from typing import Any

from .._dtype import as_dtype, get_default_dtype
from .._errors import DeviceError, DTypeError, OutOfRangeError, ShapeError
from .._tensor import Tensor
from ..autograd._capture import CAPTURE
from ..autograd._function import TRACE, Op
from ..autograd._grad_mode import STATE
from ..autograd._views import _refresh_view, make_view
from ._indexing_view import movedim, reshape, sum_to
from ._util import _shape, broadcast_shapes, check_scalar, norm_dim, promote

__all__ = ["argwhere", "getitem", "narrow", "nonzero", "select", "where"]
METHODS = [n for n in __all__ if n not in {"getitem"}] + ["unfold"]


class TwoStage:
    """An index that mixes integers with index tensors, applied as PyTorch does: first the basic part
    (integers select, slices and None stay), then the index tensors on what is left. NumPy would treat the
    integers as index arrays too, which moves the indexed dims elsewhere (``x[1, :, idx]``)."""

    __slots__ = ("post", "pre")

    def __init__(self, pre: tuple[Any, ...], post: tuple[Any, ...]) -> None:
        self.pre, self.post = pre, post


def _two_stage(items: tuple[Any, ...], bool_dtype: Any) -> TwoStage:
    pre: list[Any] = []
    post: list[Any] = []
    for it in items:
        if isinstance(it, int):
            pre.append(it)
        elif it is None or isinstance(it, slice):
            pre.append(it)
            post.append(slice(None))
        elif it is Ellipsis:
            pre.append(it)
            post.append(it)
        else:  # an index array; a bool mask covers as many dims as it has
            pre.extend([slice(None)] * (it.ndim if it.dtype == bool_dtype else 1))  # (the backend's bool)
            post.append(it)
    return TwoStage(tuple(pre), tuple(post))


def _is_bool(a: Any, backend: Any) -> bool:
    """Whether a 0-d array is bool: a mask, as True is (a new dim of size 1 or 0), never the integer ``x[1]``."""
    return getattr(a, "dtype", None) == backend.xp.bool_


def to_index(index: Any, backend: Any) -> tuple[Any, bool]:
    """Convert an index with Tensors and lists into backend arrays; also say whether it is basic.

    The result is a tuple for the array's ``[]``, or a :class:`TwoStage` when integers and index tensors
    mix (use ``read``/``write``/``add_at``, which handle both).
    """
    if isinstance(index, TwoStage):  # already converted (backward passes re-use the forward's index)
        return index, False
    items = index if isinstance(index, tuple) else (index,)
    out: list[Any] = []
    basic = True
    for it in items:
        if isinstance(it, Tensor):
            if it._backend is not backend:
                raise DeviceError(
                    f"index: index tensor on {it.device} ({it._backend.name} backend), indexed tensor on "
                    f"{backend.device} ({backend.name} backend); move the index with .to(tensor.device)"
                )
            kind = it.dtype.kind
            if kind == "f":
                raise OutOfRangeError(f"index: tensors used as indices must be integer or bool, got {it.dtype}")
            if kind in "iu" and it._data.ndim == 0:  # a 0-d integer tensor selects, like an int (PyTorch)
                out.append(int(it.item()))
                continue
            out.append(it._data)
            basic = False
        elif isinstance(it, (list,)):
            out.append(backend.asarray(it))
            basic = False
        elif it is None or it is Ellipsis or isinstance(it, (int, slice)):
            out.append(it)
        elif hasattr(it, "__index__") and getattr(it, "ndim", 0) == 0 and not _is_bool(it, backend):
            out.append(int(it))
        else:
            out.append(backend.asarray(it))
            basic = False
    if not basic and any(isinstance(it, int) and not isinstance(it, bool) for it in out):
        return _two_stage(tuple(out), backend.xp.bool_), False
    if basic and not any(it is Ellipsis for it in out):  # NumPy's a[2] is a scalar copy, a[2, ...] a 0-d view
        out.append(Ellipsis)
    return tuple(out), basic


def read(x: Any, idx: Any) -> Any:
    """``x[idx]`` for an index from ``to_index``."""
    return x[idx.pre][idx.post] if isinstance(idx, TwoStage) else x[idx]


def check(backend: Any, x: Any, idx: Any) -> None:
    """Refuse an out-of-range index array before the kernel: with a read-back where the backend's kernels would
    not (CuPy wraps it around); where they fail on the device (torch-CUDA), when the host knows its range."""
    if backend.kernels_check_indices:
        if isinstance(idx, TwoStage) and not backend.cheap_sync:  # (on the CPU the library raises itself)
            backend.check_known_index(tuple(x[idx.pre].shape), idx.post)
        elif not backend.cheap_sync and not _is_basic(idx):
            backend.check_known_index(tuple(x.shape), idx)
        return
    if isinstance(idx, TwoStage):
        backend.check_index(x[idx.pre].shape, idx.post)
    elif not _is_basic(idx):
        backend.check_index(x.shape, idx)


def _is_basic(idx: Any) -> bool:
    return not isinstance(idx, TwoStage) and all(i is None or i is Ellipsis or isinstance(i, (int, slice)) for i in idx)


def write(x: Any, idx: Any, value: Any) -> None:
    """``x[idx] = value`` for an index from ``to_index``."""
    if isinstance(idx, TwoStage):
        x[idx.pre][idx.post] = value  # the basic stage is a view: the write reaches x
    else:
        x[idx] = value


def add_at(backend: Any, x: Any, idx: Any, value: Any) -> None:
    """``x[idx] += value`` with repeated indices accumulated, for an index from ``to_index``."""
    if isinstance(idx, TwoStage):
        backend.index_add(x[idx.pre], idx.post, value)
    else:
        backend.index_add(x, idx, value)


class GetItem(Op):
    bf16_native = True  # (a view of a bfloat16 array, or a gather: exact in bfloat16)
    saves_inputs = False

    def forward(self, x: Any, index: Any) -> Any:
        idx, basic = to_index(index, self.backend)
        self.idx, self.basic, self.shape = idx, basic, x.shape
        check(self.backend, x, idx)
        try:
            return read(x, idx)
        except IndexError as e:
            raise OutOfRangeError(f"getitem: {e} (tensor of shape {tuple(x.shape)})") from None

    def backward(self, g: Tensor) -> tuple[Tensor, None]:
        return IndexBackward.apply(g, self.shape, self.idx, self.basic), None


def _has_0d_mask(idx: Any, bool_dtype: Any) -> bool:
    items = (*idx.pre, *idx.post) if isinstance(idx, TwoStage) else idx
    return any(getattr(i, "ndim", None) == 0 and getattr(i, "dtype", None) == bool_dtype for i in items)


class IndexBackward(Op):
    """Scatter ``g`` into zeros of ``shape`` at ``idx`` (repeated indices add up)."""

    saves_inputs = False

    def forward(self, g: Any, shape: tuple[int, ...], idx: Any, basic: bool) -> Any:
        self.idx = idx
        xp = self.backend.xp
        z = xp.zeros(shape, dtype=g.dtype)
        if basic:
            z[idx] = g
        elif _has_0d_mask(idx, xp.bool_):  # (aten's index_put_ has no rule for a 0-d mask: via flat positions)
            pos = xp.reshape(xp.arange(math.prod(shape)), shape)
            self.backend.index_add(xp.reshape(z, (-1,)), (xp.reshape(read(pos, idx), (-1,)),), xp.reshape(g, (-1,)))
        else:
            add_at(self.backend, z, idx, g)
        return z

    def backward(self, gg: Tensor) -> tuple[Tensor, None, None, None]:
        return GetItem.apply(gg, self.idx), None, None, None


#: Depth of ``_dynamo._trace_wrapped_higher_order_op.TransformGetItemToIndex`` contexts: while above 0, an index
#: made only of tensors is advanced indexing (a copy), as PyTorch's ``aten.index``, even a 0-d one.
TENSOR_INDEX_AS_ADVANCED = [0]


def getitem(input: Tensor, index: Any) -> Tensor:
    """``input[index]`` with ints, slices, None, ..., bool masks and integer tensors."""
    if (
        index.__class__ is int
        and TRACE[0] is None
        and CAPTURE.tracer is None
        and not (input._requires_grad and STATE.enabled)
    ):  # ``x[i]`` recording nothing (a Dataset's sample): the view straight away, no operator node (~3 us less)
        if input._view is not None:
            _refresh_view(input)
        try:
            data = input._data[index, ...]
        except IndexError as e:
            raise OutOfRangeError(f"getitem: {e} (tensor of shape {tuple(input.shape)})") from None
        view = Tensor._make(data, input._backend)
        make_view(view, input, lambda a: a[index, ...])
        return view
    out: Tensor = GetItem.apply(input, index)
    if TENSOR_INDEX_AS_ADVANCED[0] and _all_tensors(index):
        return out.clone() if input._backend.is_view_of(out._data, input._data) else out
    if input._backend.is_view_of(out._data, input._data):
        idx = to_index(index, input._backend)[0]
        make_view(out, input, lambda a: a[idx])
    return out


def _all_tensors(index: Any) -> bool:
    """Whether every leaf of ``index`` (a tensor, or a tuple/list of them) is a tensor."""
    leaves = index if isinstance(index, (tuple, list)) else (index,)
    return len(leaves) > 0 and all(isinstance(i, Tensor) for i in leaves)


class IndexPut(Op):
    """Out of place ``x[idx] = value``: the graph form of ``__setitem__``."""

    saves_inputs = False

    def forward(self, x: Any, value: Any, index: Any) -> Any:
        idx, _ = to_index(index, self.backend)
        self.idx = idx
        check(self.backend, x, idx)
        out = self.backend.xp.array(x, copy=True)
        write(out, idx, value)
        return out

    def backward(self, g: Tensor) -> tuple[Any, Any, None]:

        value = self.inputs[1]  # type: ignore[index]
        gx = None
        if self._req(0):
            gx = IndexPut.apply(g, 0.0, self.idx)
        gv = None
        if self._req(1):
            gv = sum_to(GetItem.apply(g, self.idx), value.shape)
        return gx, gv, None


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:
    """Indices of the nonzero elements: an (n, ndim) int64 tensor, or one tensor per dim."""
    xp = input._backend.xp
    data = input._data
    if data.ndim == 0:  # a 0-d tensor is indexed as (n, 0) (as_tuple: as a 1-d tensor of one element)
        if as_tuple:
            return nonzero(input.reshape(1), as_tuple=True)
        return Tensor._make(xp.zeros((1 if bool(data) else 0, 0), dtype=xp.int64), input._backend)
    idx = xp.nonzero(data)
    be = input._backend
    if as_tuple:
        return tuple(Tensor._make(xp.asarray(i, dtype=xp.int64), be) for i in idx)
    return Tensor._make(xp.astype(xp.stack(idx, axis=-1), xp.int64) if idx else xp.zeros((0, 0), xp.int64), be)


# -- selection ------------------------------------------------------------------------------------
class Where(Op):
    def value_needed(self, i: int) -> bool:  # backward reads the condition's values, only the others' shapes
        return i == 0

    def forward(self, cond: Any, a: Any, b: Any) -> Any:
        return self.backend.xp.where(cond, a, b)

    def backward(self, g: Tensor) -> tuple[Any, Any, Any]:
        cond, a, b = self.inputs  # type: ignore[misc]
        zero = g.new_zeros(())
        ga = sum_to(where(cond, g, zero), _shape(a)) if self._req(1) else None
        gb = sum_to(where(cond, zero, g), _shape(b)) if self._req(2) else None
        return None, ga, gb


def where(condition: Tensor, input: Any = None, other: Any = None) -> Any:
    """Elements of ``input`` where ``condition`` holds, else of ``other`` (one-argument form: nonzero)."""
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor):
        raise TypeError(f"where: condition must be a bool Tensor, got {type(condition).__name__}")
    if condition.dtype.name != "bool":  # PyTorch refuses a float or integer condition (x > 0 was likely meant)
        raise DTypeError(f"where: condition must be a bool tensor, got {condition.dtype}; compare it first "
                         "(e.g. where(c != 0, ...)) or call .bool()")  # fmt: skip
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        check_scalar("where", input)
        check_scalar("where", other)
        d = get_default_dtype() if isinstance(input, float) or isinstance(other, float) else as_dtype(type(input))
        input = Tensor(input, dtype=d, device=condition._backend)
    a, b = promote("where", input, other)
    try:
        return Where.apply(condition, a, b)
    except (ValueError, RuntimeError):  # the array library's broadcasting error: say it with the op and the shapes
        broadcast_shapes(condition._data.shape, _shape(a), _shape(b), op="where")
        raise


def where_method(self: Tensor, condition: Any, other: Any) -> Tensor:
    """``x.where(condition, y)``: PyTorch's method form of ``where(condition, x, y)``."""
    return where(condition, self, other)


# -- counting and searching (no gradient) --------------------------------------------------------
def argwhere(input: Tensor) -> Tensor:
    """The indices of the nonzero elements, one row per element: (count, ndim)."""
    return nonzero(input)


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """``input`` indexed at ``index`` along ``dim`` (that dim removed; a view)."""
    d = norm_dim(dim, input.ndim, "select")
    return input[(slice(None),) * d + (index,)]


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """The slice ``start:start+length`` of dim ``dim`` (a view; ``start`` may be a 0-d integer tensor)."""
    if isinstance(start, Tensor):
        if start.ndim or start.dtype.kind not in "iu":
            raise DTypeError(f"narrow: start must be an 0-dim integral Tensor, got {start.dtype} of shape "
                             f"{tuple(start.shape)}")  # fmt: skip
        start = int(start.item())
    d = norm_dim(dim, input.ndim, "narrow")
    size = input.shape[d]
    if start < 0:
        start += size
    if not (0 <= start <= size and length >= 0 and start + length <= size):
        raise OutOfRangeError(f"narrow: start {start} + length {length} exceed dim {dim} of size {size}")
    idx = (slice(None),) * d + (slice(start, start + length),)
    return input[idx]


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Every window of ``size`` elements along ``dimension``, ``step`` apart, as a new last dim
    (``Tensor.unfold``; a copy here, where PyTorch returns a view)."""
    if input.ndim == 0:
        if size > 1:
            raise ShapeError(f"unfold: size {size} exceeds the size 1 of a 0-d tensor")
        return reshape(input, 1)
    d = norm_dim(dimension, input.ndim, "unfold")
    n = input.shape[d]
    if size > n or size < 0:
        raise ShapeError(f"unfold: size {size} exceeds dim {dimension} of size {n}")
    if step <= 0:
        raise ShapeError(f"unfold: step must be positive, got {step}")
    xp = input._backend.xp
    windows = (n - size) // step + 1
    idx = xp.arange(windows, dtype=xp.int64)[:, None] * step + xp.arange(size, dtype=xp.int64)[None, :]
    out = GetItem.apply(input, (slice(None),) * d + (idx,))  # (..., windows, size, ...)
    return movedim(out, d + 1, -1)
