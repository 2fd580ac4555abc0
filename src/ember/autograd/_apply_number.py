"""``apply_number``/``apply_one``: ``Function.apply`` for the usual arithmetic of a Tensor and a Python number, and
for an elementwise function of one Tensor.

``x + 1.0``, ``0.5 * x`` ...: ``Tensor.__add__``/``__radd__``/``__mul__``/``__rmul__`` on a floating tensor and a
Python int/float call the operator with exactly one Tensor and one number. ``apply``'s general pass (packing
``*args``/``**kwargs``, counting and sorting arguments, testing the second one for a Tensor) is then work
without effect: this is the same record in straight lines, ~0.17 µs an operator less (the op chain's forward
2.69 -> 2.52 µs an op on torch, one thread, interleaved in one process). Whatever ``apply`` treats otherwise
goes to ``apply`` itself: autocast, an interceptor (``TRACE``: ONNX's trace, the profiler, forward AD), anomaly
mode once used, an operator that is not array-in/array-out, a bfloat16 NumPy array (widened to float32 there).
``apply_one`` is the same for ``exp``/``log``/``sqrt``/``tanh``/``sigmoid`` of a floating Tensor (~0.25 µs a call
less: chain forward 2.55 -> 2.46 µs an op, prototype).
"""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..backends._base import REFUSED_DTYPES
from ._autocast import ACTIVE as _AUTOCAST
from ._bf16 import WIDEN as _WIDEN
from ._function import TRACE, Function, complex_node_class
from ._grad_mode import ANOMALY_USED, GRAD_OFF, STATE
from ._node import _V0, _ZERO, _versions
from ._release import RELEASE_MIN_BYTES, _release_unread
from ._saved_hooks import SAVED_ON, pack_node
from ._views import _refresh_view

__all__: list[str] = []

_new_object = object.__new__


def _bf16_numpy(a: Tensor) -> bool:
    """Whether ``a`` is a bfloat16 NumPy array, which ``apply`` widens to float32 (``_bf16.py``): never before
    bfloat16 was first asked for (one read then)."""
    if _WIDEN[0] is None:
        return False
    dt = a._data.dtype
    return dt is _WIDEN[0] or (bool(REFUSED_DTYPES) and dt in REFUSED_DTYPES)  # (float8: refused there)


def apply_number(cls: type[Function], a: Tensor, v: Any, swap: bool) -> Tensor:
    """``cls.apply(a, v)`` (``cls.apply(v, a)`` when ``swap``) for a Tensor ``a`` and a Python int/float ``v``,
    ``cls`` a built-in operator with one array output (``Add``, ``Mul``): the same result and record."""
    array_io, differentiable, saves_inputs, saves_output = cls._apply_flags
    if _AUTOCAST[0] or TRACE[0] is not None or ANOMALY_USED[0] or not array_io or _bf16_numpy(a):
        return cls.apply(v, a) if swap else cls.apply(a, v)  # type: ignore[no-any-return]
    # the record of the Tensor argument, as ``apply``'s (its version, a view's base written, its edge)
    zero = True
    vcl = a._vcl
    if vcl is not None and vcl[0]:
        zero = False
        if a._view is not None and a._view[2] != vcl[0]:
            _refresh_view(a)
    backend = a._backend
    generation = 0
    e0: Any = None
    if a._requires_grad:
        c = a._creator
        if c is None:
            e0 = (None, a)
        else:
            e0 = c if a._out_idx == 0 else (c, a._out_idx)
            generation = c.generation + 1
    fn = _new_object(cls)
    fn.backend = backend
    out = fn.forward(v, a._data) if swap else fn.forward(a._data, v)
    backend = fn.backend
    if out.__class__ is not backend.array_type:
        out = backend.asarray(out)
    r = _new_object(Tensor)
    r._data = out
    r._backend = backend
    r._requires_grad = False
    r._grad = r._creator = r._hooks = r._view = r._vcl = None
    r._out_idx = 0
    r._retain = False
    if e0 is not None and differentiable and (not GRAD_OFF or STATE.enabled):
        args = (v, a) if swap else (a, v)
        fn.inputs = args
        fn._edges = [None, e0] if swap else [e0, None]
        fn.generation = generation
        if saves_inputs:
            fn._versions = _ZERO if zero else _versions(args, zero)
        nbytes = out.nbytes
        if nbytes >= RELEASE_MIN_BYTES[0] or nbytes <= 16:
            _release_unread(fn, args)
        if out.dtype in backend.float_dtypes:
            r._requires_grad = True
            r._creator = fn
        elif out.dtype in backend.complex_dtypes:
            fn.__class__ = complex_node_class(cls)
            r._requires_grad = True
            r._creator = fn
        if saves_output:
            r._vcl = vc = [0]
            fn._out_vcs = (vc,)
            fn._out_vs = _V0
        if SAVED_ON[0]:  # some thread has saved_tensors_hooks open
            pack_node(fn, (r,))
    return r


def apply_one(cls: type[Function], a: Tensor) -> Tensor:
    """``cls.apply(a)`` for a Tensor ``a`` (exactly ``Tensor``; anything else goes to ``apply``), ``cls`` a built-in
    operator with one array output (``Tanh``, ``Exp`` ...): the same result and record."""
    array_io, differentiable, saves_inputs, saves_output = cls._apply_flags
    if (
        _AUTOCAST[0]
        or TRACE[0] is not None
        or ANOMALY_USED[0]
        or not array_io
        or a.__class__ is not Tensor
        or (_bf16_numpy(a))
    ):
        return cls.apply(a)  # type: ignore[no-any-return]
    zero = True
    vcl = a._vcl
    if vcl is not None and vcl[0]:
        zero = False
        if a._view is not None and a._view[2] != vcl[0]:
            _refresh_view(a)
    backend = a._backend
    generation = 0
    e0: Any = None
    if a._requires_grad:
        c = a._creator
        if c is None:
            e0 = (None, a)
        else:
            e0 = c if a._out_idx == 0 else (c, a._out_idx)
            generation = c.generation + 1
    fn = _new_object(cls)
    fn.backend = backend
    out = fn.forward(a._data)
    backend = fn.backend
    if out.__class__ is not backend.array_type:
        out = backend.asarray(out)
    r = _new_object(Tensor)
    r._data = out
    r._backend = backend
    r._requires_grad = False
    r._grad = r._creator = r._hooks = r._view = r._vcl = None
    r._out_idx = 0
    r._retain = False
    if e0 is not None and differentiable and (not GRAD_OFF or STATE.enabled):
        args = (a,)
        fn.inputs = args
        fn._edges = [e0]
        fn.generation = generation
        if saves_inputs:
            fn._versions = _ZERO if zero else _versions(args, zero)
        nbytes = out.nbytes
        if nbytes >= RELEASE_MIN_BYTES[0] or nbytes <= 16:
            _release_unread(fn, args)
        if out.dtype in backend.float_dtypes:
            r._requires_grad = True
            r._creator = fn
        elif out.dtype in backend.complex_dtypes:
            fn.__class__ = complex_node_class(cls)
            r._requires_grad = True
            r._creator = fn
        if saves_output:
            r._vcl = vc = [0]
            fn._out_vcs = (vc,)
            fn._out_vs = _V0
        if SAVED_ON[0]:  # some thread has saved_tensors_hooks open
            pack_node(fn, (r,))
    return r
