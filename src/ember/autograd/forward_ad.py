"""PyTorch's ``torch.autograd.forward_ad``: forward-mode AD with dual tensors.

Inside ``with dual_level():``, ``make_dual(primal, tangent)`` gives a tensor carrying ``tangent``; every operator
applied to such a tensor gives its results their tangents (``unpack_dual(y).tangent``: ``J @ tangent``).

How: while a level is open ``Function.apply`` hands each call to a hook (``_function.TRACE``; nothing is paid
outside one; one interceptor at a time, so not during a profile or an ONNX export). An operator call with a
dual input runs as usual, then its tangents come from the operator's own backward by the double-vjp trick, exact
for every differentiable operator: with ``u`` a cotangent of the outputs, ``g(u) = J^T u`` is linear in ``u``, so
``d/du <g(u), t> = J t``. The tangent run re-runs the operator on aliases of the inputs with the same random state
(dropout draws the same mask; an operator that writes into an argument, such as batch norm's running statistics,
names the arguments for that run in ``tangent_args``). The tangents are tracked by reverse mode when PyTorch's
are: when grad mode is on and a primal or tangent requires grad (forward-over-reverse); otherwise they are plain
tensors. Each operator call on a dual tensor costs a second forward and two backward passes of that operator.

Tangents live in a table by tensor (weakly). A view of a dual tensor reads its tangent as the same view of its
base's tangent, and in-place operations (``mul_``, ``x[i] = v``, ``copy_`` ...) write the result's tangent into the
written tensor's tangent, through a view into its base's (``ops/_inplace.py`` calls back here).
"""

from __future__ import annotations

import functools
import threading
import weakref
from typing import Any, NamedTuple

from .. import _creation
from .._creation import zeros_like as _zeros_like
from .._errors import DTypeError
from .._tensor import Tensor
from ..ops import _inplace
from ._engine import grad as _grad
from ._function import TRACE, Function, bypass, install_trace
from ._grad_mode import STATE, enable_grad, no_grad
from ._saved_hooks import LOCAL as _SAVED

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual"]

#: per dual tensor (by id): (weak reference to it, its tangent)
_TANGENTS: dict[int, tuple[Any, Tensor]] = {}
_LEVEL: list[int | None] = [None]
_RUN = Function.__dict__["apply"].__func__  # apply itself; called through ``_raw`` (the hook skipped)


def _raw(cls: Any, *args: Any, **kwargs: Any) -> Any:
    with bypass():
        return _RUN(cls, *args, **kwargs)


def _hook(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return _apply(cls, *args, **kwargs)


class _Local(threading.local):
    off = False  # inside a tangent computation (or a primal view made here): no propagation


_LOCAL = _Local()


class UnpackedDualTensor(NamedTuple):
    """``unpack_dual``'s result: the primal (a view without the tangent) and the tangent (None if not dual)."""

    primal: Tensor
    tangent: Tensor | None


def _forget(key: int, ref: Any) -> None:
    entry = _TANGENTS.get(key)
    if entry is not None and entry[0] is ref:
        del _TANGENTS[key]


def _set(t: Tensor, tangent: Tensor) -> None:
    key = id(t)
    _TANGENTS[key] = (weakref.ref(t, functools.partial(_forget, key)), tangent)


def _own(t: Tensor) -> Tensor | None:
    entry = _TANGENTS.get(id(t))
    if entry is None or entry[0]() is not t:
        return None
    return entry[1]


def tangent_of(t: Tensor) -> Tensor | None:
    """``t``'s tangent at the open level: for a view of a dual base, the same view of the base's tangent."""
    view = t._view
    if view is not None:
        base_tan = _own(view[0])
        if base_tan is not None:
            if base_tan._requires_grad:  # a tracked tangent: the view taken as a recorded operation
                return _tracked_view(base_tan, view[1])
            return Tensor._make(view[1](base_tan._data), base_tan._backend)
    return _own(t)


def _tracked_view(base_tan: Tensor, replay: Any) -> Tensor:
    from ._views import _Replay

    with _Off():
        return _Replay.apply(base_tan, replay, tuple(base_tan.shape))


class _Off:
    """No propagation inside (a tangent run, a primal view made here), and no saved-tensor hooks: the
    operators run to compute tangents are Ember's own business, not the program's."""

    def __enter__(self) -> None:
        self.prev = _LOCAL.off, _SAVED.stack
        _LOCAL.off = True
        _SAVED.stack = []

    def __exit__(self, *exc: object) -> None:
        _LOCAL.off, _SAVED.stack = self.prev


def _floating(t: Any) -> bool:
    return isinstance(t, Tensor) and t._data.dtype in t._backend.float_dtypes


def _apply(cls: Any, *args: Any, **kwargs: Any) -> Any:
    """``Function.apply`` while a dual level is open: the call, then its outputs' tangents."""
    if _LOCAL.off or not _TANGENTS or not cls.differentiable:
        return _raw(cls, *args, **kwargs)
    duals = {}
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            t = tangent_of(a)
            if t is not None:
                duals[i] = t
    if not duals:
        return _raw(cls, *args, **kwargs)
    gen = _creation.default_generator
    before = gen.get_state()
    out = _raw(cls, *args, **kwargs)
    outs = out if isinstance(out, tuple) else (out,)
    if not any(_floating(o) for o in outs):
        return out
    after = gen.get_state()
    gen.set_state(before)  # the tangent run draws what the call drew (dropout's mask)
    try:
        tangents = _tangents(cls, args, kwargs, duals)
    finally:
        gen.set_state(after)
    for o, t in zip(outs, tangents, strict=True):
        if t is not None and _floating(o):
            _set(o, t)
    return out


def _tangents(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], duals: dict[int, Tensor]) -> list[Any]:
    """The outputs' tangents of ``cls`` at ``args`` along ``duals`` (input index -> tangent): double vjp."""
    track = STATE.enabled and (
        any(isinstance(a, Tensor) and a._requires_grad for a in args) or any(t._requires_grad for t in duals.values())
    )
    pure = getattr(cls, "tangent_args", None)  # an operator that writes into some arguments says how not to
    if pure is not None:
        args = pure(args)
    with _Off(), enable_grad():
        hats: list[Any] = []
        for i, a in enumerate(args):
            if not isinstance(a, Tensor):
                hats.append(list(a) if isinstance(a, list) else a)  # (a list an operator fills stays the caller's)
            elif i in duals:
                hats.append(a * 1 if (track and a._requires_grad) else a.detach().requires_grad_())
            else:
                hats.append(a if track else a.detach())
        res = _raw(cls, *hats, **kwargs)
        res_t = res if isinstance(res, tuple) else (res,)
        live = [k for k, r in enumerate(res_t) if isinstance(r, Tensor) and r._requires_grad and _floating(r)]
        tangents: list[Any] = [None] * len(res_t)
        if not live:
            return tangents
        us = [_zeros_like(res_t[k]).requires_grad_() for k in live]
        idx = sorted(duals)
        gs = _grad([res_t[k] for k in live], [hats[i] for i in idx], us, create_graph=True, allow_unused=True)
        total = None
        for i, g in zip(idx, gs, strict=True):
            if g is not None:
                term = (g * duals[i]).sum()
                total = term if total is None else total + term
        jts = (
            _grad(total, us, create_graph=track, allow_unused=True)
            if total is not None and total._requires_grad
            else [None] * len(us)
        )
        for k, u, jt in zip(live, us, jts, strict=True):
            t = jt if jt is not None else _zeros_like(u.detach())
            tangents[k] = t if track else t.detach()
    return tangents


class _InplaceHooks:
    """What ``ops/_inplace.py`` calls while a level is open: in-place writes carry tangents."""

    @staticmethod
    def involved(t: Tensor, others: tuple[Any, ...]) -> bool:
        return tangent_of(t) is not None or any(isinstance(o, Tensor) and tangent_of(o) is not None for o in others)

    @staticmethod
    def alias(t: Tensor, a: Tensor) -> None:
        tan = tangent_of(t)
        if tan is not None:
            _set(a, tan)

    @staticmethod
    def commit(t: Tensor, r: Tensor) -> None:
        new = tangent_of(r)
        view = t._view
        holder, region = (view[0], view[1]) if view is not None else (t, None)
        old = _own(holder)
        if view is not None and old is None and _own(t) is not None:
            # a dual view of a base without a tangent (``make_dual``'s result): its own tangent, as PyTorch's
            holder, region, old = t, None, _own(t)
        if new is None and old is None:
            return
        if (new is not None and new._requires_grad) or (old is not None and old._requires_grad):
            if region is not None:
                raise RuntimeError(
                    "forward AD: an in-place write through a view of a dual tensor whose tangent requires grad is not "
                    "supported; write into a clone() of it instead"
                )
            _set(holder, new if new is not None else _zeros_like(t.detach()))
            return
        if old is None:  # the first tangent of this storage (a view's: its base's): zeros where nothing was written
            old = _zeros_like(holder.detach())
            _set(holder, old)
        target = old._data if region is None else region(old._data)
        target[...] = 0 if new is None else new._data  # in place, as PyTorch updates its tangents


def enter_dual_level() -> int:
    """Open the (only) dual level; returns its index, 0."""
    if _LEVEL[0] is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _LEVEL[0] = 0
    install_trace(_hook, "forward_ad.enter_dual_level")
    _inplace.FWD[0] = _InplaceHooks
    return 0


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the dual level: the tangents made in it are dropped."""
    if _LEVEL[0] is None or (level is not None and level != _LEVEL[0]):
        raise RuntimeError(f"exit_dual_level: no dual level {level if level is not None else ''} is open".strip())
    TRACE[0] = None
    _inplace.FWD[0] = None
    _TANGENTS.clear()
    _LEVEL[0] = None


class dual_level:  # noqa: N801 - PyTorch's name
    """A block with a dual level open (``make_dual`` needs one); its tangents go when it ends."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc: object) -> None:
        exit_dual_level()


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A view of ``tensor`` carrying ``tangent`` (same shape; used as is, not copied) at the open level."""
    if _LEVEL[0] is None or (level is not None and level != _LEVEL[0]):
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to enter_dual_level() first."
        )
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError(f"make_dual: expected Tensors, got {type(tensor).__name__} and {type(tangent).__name__}")
    be = tensor._backend
    if tensor._data.dtype not in be.float_dtypes:
        if tensor._data.dtype in be.complex_dtypes:
            raise DTypeError("make_dual: forward AD of complex tensors is not supported in Ember")
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if tangent._data.dtype not in tangent._backend.float_dtypes:
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the original Tensor, this is not "
            f"supported. Tensor is of size {list(tensor.shape)} while the given forward gradient is of size "
            f"{list(tangent.shape)}."
        )
    if tangent._backend is not be:
        raise RuntimeError(f"make_dual: the tangent is on {tangent.device}, the tensor on {tensor.device}")
    with _Off():
        d = tensor[...]  # (a new view object: view() of the same shape returns the tensor itself)
    if tangent.dtype is not tensor.dtype:
        with _Off(), no_grad() if not tangent._requires_grad else enable_grad():
            tangent = tangent.to(tensor.dtype)
    _set(d, tangent)
    return d


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)``: a view of ``tensor`` without the tangent, and the tangent (None when not dual)."""
    tan = tangent_of(tensor) if _LEVEL[0] is not None and isinstance(tensor, Tensor) else None
    if tan is None:
        return UnpackedDualTensor(tensor, None)
    with _Off():
        primal = tensor[...]
    return UnpackedDualTensor(primal, tan)
