"""The torch namespace's ``add``/``subtract``/``multiply``/``true_divide``, with Python numbers made 0-d once.

torch wraps a Python number meeting a tensor into a fresh 0-d tensor on every call, and converts it to the
tensor's dtype on every call: together that costs more than a small kernel (``x * 0.5`` 8.8 µs against
``x * y`` 3.6 µs and ``x * t`` 3.8 µs with ``t`` a 0-d float32 tensor, shape (8,) float32, thread CPU time,
torch 2.13). So for a float32/float64 tensor the number is made a 0-d CPU tensor of that dtype once and kept.
That gives the same dtype and bits as torch's wrapping (checked over every case the tests list, 0-d tensors
included): the kept tensor has the tensor's own dtype, so there is nothing to promote (a dimensioned tensor keeps
its dtype beside a 0-d one; two 0-d tensors of one dtype keep it too), the wrapped double is converted to that
dtype before the kernel reads it, and a kept tensor holds that conversion. (0-d tensors were left to torch's
wrapping until issue 28's session 12: the test of ``x.ndim`` cost ~45 ns a call and nothing differed.)

Left to torch's wrapping: float16/bfloat16 tensors (their kernels read the unconverted double of a wrapped
number), zero (±0.0 are one dict key),
NaN, ints beyond 2**24 (converted through a double by the one, directly by the other), a number divided by a
tensor (torch computes ``v / x`` as ``reciprocal(x) * v``), integer and complex tensors. On CUDA the
namespace keeps the plain operators (``xp.on_device``): the equality was checked on the CPU only
(``tests/backends/test_torch_scalars.py``).
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["add", "subtract", "multiply", "true_divide"]

_PY_NUMBERS = (int, float)
_EXACT_INT = 2**24  # ints converted to float32 exactly (larger ones: torch's own wrapping and its rounding)
# per kept dtype, number -> its 0-d tensor (an int and a float of equal value share one); one table per dtype, not
# one keyed by ``(dtype, number)``: building and hashing that tuple cost ~30 ns a call more
_SCALARS: dict[Any, dict[Any, torch.Tensor]] = {torch.float32: {}, torch.float64: {}}
_NONE: dict[Any, torch.Tensor] = {}  # (the other dtypes' table: never written)
_MAX_KEPT = 1024  # numbers that change every call (a decaying rate) must not pile up, per dtype
_TENSOR = torch.Tensor


def _wrapped(x: Any, v: Any) -> Any:
    """``v`` (a Python int or float) as a 0-d tensor of ``x``'s dtype, made once, where that gives what torch's
    wrapping of ``v`` gives; else ``v`` itself."""
    if x.__class__ is _TENSOR:
        t = _SCALARS.get(x.dtype, _NONE).get(v)  # (zero and NaN are never kept: a NaN key is never found)
        return t if t is not None else _keep(x.dtype, v)
    return v


def _keep(dtype: Any, v: Any) -> Any:
    kept = _SCALARS.get(dtype)
    if kept is None or not v or v != v or (v.__class__ is int and not -_EXACT_INT <= v <= _EXACT_INT):
        return v
    try:
        t = torch.tensor(v, dtype=dtype, device="cpu")
    except (OverflowError, RuntimeError):  # not expected for these numbers; torch's own wrapping then
        return v
    if len(kept) >= _MAX_KEPT:
        kept.clear()
    kept[v] = t
    return t


# torch's functions, not the operators: ``VF.mul(a, t)`` runs the same ``aten::mul`` as ``a * t`` (the same argument
# parser and kernel, so the same bits) without the operator's number-protocol wrapper, ~50-60 ns a call less
# ((8,) float32 and a 0-d tensor, thread CPU time, torch 2.13); used where ``a`` is known to be a plain tensor
_VF = torch._C._VariableFunctions
_add, _sub, _mul, _div = _VF.add, _VF.sub, _VF.mul, _VF.div


# (the usual case, a tensor and a number after it, inlined: a call to ``_wrapped`` costs ~5% of it)
def add(a: Any, b: Any) -> Any:
    if b.__class__ in _PY_NUMBERS:
        if a.__class__ is _TENSOR:
            t = _SCALARS.get(a.dtype, _NONE).get(b)
            return _add(a, t if t is not None else _keep(a.dtype, b))
        return a + b
    if a.__class__ in _PY_NUMBERS:
        return b + _wrapped(b, a)
    return a + b


def subtract(a: Any, b: Any) -> Any:
    if b.__class__ in _PY_NUMBERS:
        if a.__class__ is _TENSOR:
            t = _SCALARS.get(a.dtype, _NONE).get(b)
            return _sub(a, t if t is not None else _keep(a.dtype, b))
        return a - b
    if a.__class__ in _PY_NUMBERS:
        return _wrapped(b, a) - b
    return a - b


def multiply(a: Any, b: Any) -> Any:
    if b.__class__ in _PY_NUMBERS:
        if a.__class__ is _TENSOR:
            t = _SCALARS.get(a.dtype, _NONE).get(b)
            return _mul(a, t if t is not None else _keep(a.dtype, b))
        return a * b
    if a.__class__ in _PY_NUMBERS:
        return b * _wrapped(b, a)
    return a * b


def true_divide(a: Any, b: Any) -> Any:
    if b.__class__ in _PY_NUMBERS:
        if a.__class__ is _TENSOR:
            t = _SCALARS.get(a.dtype, _NONE).get(b)
            return _div(a, t if t is not None else _keep(a.dtype, b))
        return a / b
    return a / b
