"""In-place operations: compute out of place, write into the tensor's storage, give it a new version.

As in PyTorch, an in-place op makes a new version of the tensor's place in the graph: nodes recorded
earlier keep the edge to the version they consumed (captured when they were recorded), so their
gradients are unchanged. Writing bumps the version counter shared by the tensor and its views, so a
node that *saved* the overwritten value raises at backward instead of producing a wrong gradient. A
write through a view rebases the base's history (``autograd/_views.py``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from .._convert import checked_int
from .._errors import DeviceError, DTypeError, ShapeError
from .._tensor import Tensor
from ..autograd._grad_mode import STATE
from ..autograd._views import _refresh_view, _root, keep_hooks_on_old_version, move_retained, rebase_through_view
from ._indexing import IndexPut, check, read, to_index, write
from ._util import _CATEGORY, StepOp


def _check_leaf(t: Tensor, op: str) -> None:
    if t._view is not None:
        _refresh_view(t)
    if not STATE.enabled:
        return
    if t._requires_grad and t._creator is None:
        raise RuntimeError(
            f"{op}: a leaf tensor of shape {tuple(t.shape)} that requires grad cannot be modified in place; "
            "do it inside `with ember.no_grad():` or on a clone()"
        )
    if t._view is not None:
        base = _root(t._view[0])
        if base._requires_grad and base._creator is None:
            raise RuntimeError(
                f"{op}: a view of a leaf tensor (shape {tuple(base.shape)}) that requires grad cannot be modified "
                "in place; do it inside `with ember.no_grad():` or on a clone()"
            )


def _alias(t: Tensor, others: Any = ()) -> Tensor:
    """A second Tensor object standing for ``t``'s current value and place in the graph.

    When the graph is recorded (``t`` or one of the operator's ``others`` requires grad) the alias holds a
    copy: the operator may save its input for backward (``x.mul_(w)`` needs the old ``x`` for ``w``'s
    gradient), and the write into ``t`` that follows must not change that saved value.
    """
    if STATE.enabled and (t._requires_grad or any(isinstance(o, Tensor) and o._requires_grad for o in others)):
        a = Tensor._make(t._backend.xp.copy(t._data), t._backend)
    else:
        a = Tensor._make(t._data, t._backend)
        a._vc = t._vc
    a._requires_grad, a._creator, a._out_idx = t._requires_grad, t._creator, t._out_idx
    if FWD[0] is not None:
        FWD[0].alias(t, a)
    return a


def _commit(t: Tensor, r: Tensor, op: str) -> Tensor:
    """Write result ``r`` into ``t``'s storage and give ``t`` the history of ``r``."""
    if r._data.shape != t._data.shape:
        raise ShapeError(
            f"{op}: the result has shape {tuple(r.shape)}, which cannot be written in place into {tuple(t.shape)}"
        )
    if _CATEGORY[r.dtype.kind] > _CATEGORY[t.dtype.kind]:  # PyTorch's can_cast: never float -> int -> bool
        raise DTypeError(f"{op}: result of type {r.dtype} cannot be written in place into a {t.dtype} tensor")
    try:
        t._data[...] = r._data
    except ValueError as e:  # a read-only broadcast view
        raise RuntimeError(f"{op}: cannot write into this tensor in place ({e}); clone() it first") from None
    t._vc[0] += 1
    c = r._creator
    if c is not None and STATE.enabled:
        if c._out_vcs:  # the node's saved output now lives in t's storage, under t's version counter
            k = r._out_idx
            c._out_vcs = tuple(t._vc if i == k else vc for i, vc in enumerate(c._out_vcs))
            c._out_vs = tuple(t._vc[0] if i == k else v for i, v in enumerate(c._out_vs))
            c._outs = tuple(t._data if i == k else o for i, o in enumerate(c._outs))
        # A new version of t: nodes recorded earlier keep their edges to the old one.
        if t._view is not None:
            rebase_through_view(t, r)
        else:
            keep_hooks_on_old_version(t)
            t._creator, t._out_idx, t._requires_grad = c, r._out_idx, True
        move_retained(t)
    if FWD[0] is not None:
        FWD[0].commit(t, r)
    if WRITE[0] is not None:
        WRITE[0](t, r, None)
    return t


#: while a forward-AD dual level is open, its in-place hooks (``autograd/forward_ad._InplaceHooks``): in-place
#: writes then carry tangents (and take the recorded path for dual tensors); None otherwise
FWD: list[Any] = [None]
#: while ``ember.onnx.export`` traces: ``WRITE[0](t, value, index)`` after each in-place write into ``t`` (the
#: exporter's graph then names ``t``'s new value; ``index`` None: the whole tensor). The shortcut stays off then
WRITE: list[Any] = [None]

_UFUNCS = {"add": operator.iadd, "sub": operator.isub, "mul": operator.imul, "div": operator.itruediv}


def _inplace(t: Tensor, fn: Callable[[Any, Any], Tensor], other: Any) -> Tensor:
    """``t op= other``."""
    return inplace_method(t, fn, other)


def _inplace_fast(t: Tensor, name: str, other: Any) -> bool:
    """``t op= other`` straight into ``t``'s storage when no graph is recorded and no promotion is needed (a float
    tensor; or an integer one with a Python int, e.g. BatchNorm's ``num_batches_tracked.add_(1)``: one kernel
    where the general path made two, an add and a copy)."""
    uf = _UFUNCS.get(name)
    if uf is None or WRITE[0] is not None:
        return False
    if t._data.dtype not in t._backend.float_dtypes:
        if other.__class__ is not int or name == "div" or t.dtype.kind not in "iu":
            return False
        try:
            uf(t._data, other)
        except (ValueError, RuntimeError, TypeError, OverflowError):  # out of the dtype's range: the general path
            return False
        t._vc[0] += 1
        return True
    if isinstance(other, Tensor):
        if (STATE.enabled and (t._requires_grad or other._requires_grad)) or other._backend is not t._backend:
            return False
        if other._data.dtype != t._data.dtype:
            return False
        o = other._data
    elif isinstance(other, (int, float)) and not isinstance(other, bool):
        if STATE.enabled and t._requires_grad:
            return False
        o = other
    else:
        return False
    try:
        uf(t._data, o)  # in place on every backend's arrays (NumPy, torch, CuPy)
    except (ValueError, RuntimeError):  # broadcasting into t's shape failed, or t is a read-only view
        return False
    t._vc[0] += 1
    return True


class Overwritten(StepOp):
    """``t``'s new value, a comparison's result in ``t``'s dtype: zero gradient to ``t`` (PyTorch's ``eq_``)."""

    def forward(self, x: Any, value: Any) -> Any:
        return self.backend.astype(value, self.backend.dtype_of(x))


#: In-place comparisons: the result does not depend differentiably on ``t``, but ``t`` keeps requiring grad.
_COMPARISONS = {"eq", "ne", "not_equal", "gt", "greater", "ge", "greater_equal", "lt", "less", "le", "less_equal"}


def inplace_method(t: Tensor, fn: Callable[..., Tensor], *args: Any, **kwargs: Any) -> Tensor:
    """``t.<fn>_(*args)``: the out-of-place operator ``fn`` written back into ``t``."""
    if t._view is not None:
        _refresh_view(t)
    name = fn.__name__
    fast = FWD[0] is None or not FWD[0].involved(t, args)
    if fast and len(args) == 1 and not kwargs and _inplace_fast(t, name, args[0]):
        return t
    op = f"{name}_"
    _check_leaf(t, op)
    a = _alias(t, (*args, *kwargs.values()))
    r = fn(a, *args, **kwargs)
    if name in _COMPARISONS and t._requires_grad and STATE.enabled:
        r = Overwritten.apply(a, r)
    return _commit(t, r, op)


def _write_inplace(t: Tensor, index: Any, value: Any) -> None:
    """``t[index] = value`` (``index`` None: the whole tensor), recorded in the graph when needed."""
    op = "setitem" if index is not None else "copy_"
    if t._view is not None:
        _refresh_view(t)
    track = STATE.enabled and (t._requires_grad or (isinstance(value, Tensor) and value.requires_grad))
    if FWD[0] is not None and FWD[0].involved(t, (value,)):
        track = True  # (the recorded path: the operator's call gives the written value's tangent)
    if isinstance(value, Tensor) and value._backend is not t._backend and t._backend.device.type == "meta":
        value = value.to(t.device)  # into a meta tensor from anywhere, as PyTorch (nothing to copy)
    if isinstance(value, Tensor) and value._backend is not t._backend:
        if value._backend.device.type == "meta":
            raise NotImplementedError("Cannot copy out of meta tensor; no data!")  # (PyTorch's words)
        raise DeviceError(
            f"{op}: value on {value.device} ({value._backend.name} backend), tensor on {t.device} "
            f"({t._backend.name} backend); move the value with .to(tensor.device)"
        )
    if not track:
        v = value._data if isinstance(value, Tensor) else value
        if v.__class__ is int and t.dtype.kind in "iu":
            v = checked_int(op, v, t.dtype)  # (-1 into uint8: 255, as PyTorch; 300 refused)
        if t.dtype.kind == "f" and t.dtype.itemsize == 1:  # float8: the value rounded as PyTorch casts
            v = t._backend.asarray(v, t.dtype)
        elif type(v) in (int, float, bool) and not t._backend.cheap_sync:
            # on an accelerator a Python number becomes a 0-d array made there (a fill kernel, the same rounding):
            # torch writes it into a 0-d selection by copying a host tensor, which a CUDA graph cannot capture
            v = t._backend.xp.full((), v, dtype=t._data.dtype)
        idx = (...,) if index is None else to_index(index, t._backend)[0]
        check(t._backend, t._data, idx)
        try:
            write(t._data, idx, v)
        except (ValueError, RuntimeError):  # the library's own words differ (NumPy, CuPy, torch): Ember's
            raise ShapeError(
                f"{op}: cannot write a value of shape {tuple(getattr(v, 'shape', ()))} into {tuple(t.shape)} at "
                f"{index!r}: "
                f"it does not broadcast to the selected shape {tuple(read(t._data, idx).shape)}"
            ) from None
        t._vc[0] += 1
        if WRITE[0] is not None:
            WRITE[0](t, value, index)
        return
    _check_leaf(t, op)
    if isinstance(value, Tensor) and value.dtype is not t.dtype:
        value = value.to(t.dtype)
    _commit(t, IndexPut.apply(_alias(t), value, (...,) if index is None else index), op)
