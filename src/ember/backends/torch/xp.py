"""NumPy's names over torch: the ``xp`` namespace of the torch backend.

Operators compute through ``backend.xp`` with NumPy's function names and keyword arguments
(``xp.sum(x, axis=, keepdims=)``, ``xp.transpose(x, axes)``, ``xp.astype(x, dtype)``). For the NumPy
backend ``xp`` is ``numpy`` itself (no cost); for torch it is this module. Where torch's function has
NumPy's signature it is bound directly (one C call); the rest are small wrappers. Python scalars are
accepted on either side of a binary function, as in NumPy (torch's own functions want a tensor first).
"""

from __future__ import annotations

import builtins
import functools
import operator
import sys
import types
from typing import Any

import torch

from ._xp_dtypes import *  # noqa: F403
from ._xp_dtypes import _axis, _dt, _shape, _t
from ._xp_layout import *  # noqa: F403
from ._xp_scalars import _PY_NUMBERS, add, multiply, subtract, true_divide  # noqa: F401 - this namespace's

# -- elementwise arithmetic (Python operators take scalars on either side; ``add``, ``subtract``,
# ``multiply``, ``true_divide`` keep Python numbers as 0-d tensors: ``_xp_scalars.py``) ----------------
floor_divide = operator.floordiv
remainder = mod = operator.mod
power = operator.pow
negative = operator.neg
invert = bitwise_not = torch.bitwise_not
equal = operator.eq
not_equal = operator.ne
less = operator.lt
less_equal = operator.le
greater = operator.gt
greater_equal = operator.ge
logical_not = torch.logical_not


def _binary(fn: Any) -> Any:
    def f(a: Any, b: Any, out: Any = None) -> Any:
        if not isinstance(a, torch.Tensor):
            a = _t(a, b)
        elif not isinstance(b, torch.Tensor):
            b = _t(b, a)
        return fn(a, b) if out is None else fn(a, b, out=out)

    f.__name__ = fn.__name__
    return f


_maximum = _binary(torch.maximum)
_minimum = _binary(torch.minimum)


def maximum(a: Any, b: Any, out: Any = None) -> Any:
    # a float tensor against a Python number (ReLU's ``maximum(x, 0)``): clamp, without a scalar tensor
    if out is None and b.__class__ in _PY_NUMBERS and a.__class__ is torch.Tensor and a.dtype.is_floating_point:
        return torch.clamp_min(a, b)
    return _maximum(a, b, out)


def minimum(a: Any, b: Any, out: Any = None) -> Any:
    if out is None and b.__class__ in _PY_NUMBERS and a.__class__ is torch.Tensor and a.dtype.is_floating_point:
        return torch.clamp_max(a, b)
    return _minimum(a, b, out)


divide = _binary(torch.div)  # with out= (the optimizers); ops use true_divide
logical_and = _binary(torch.logical_and)
logical_or = _binary(torch.logical_or)
logical_xor = _binary(torch.logical_xor)
logaddexp = _binary(torch.logaddexp)
bitwise_and = _binary(torch.bitwise_and)
bitwise_or = _binary(torch.bitwise_or)
bitwise_xor = _binary(torch.bitwise_xor)
left_shift = _binary(torch.bitwise_left_shift)
right_shift = _binary(torch.bitwise_right_shift)
float_power = _binary(torch.float_power)
gcd = _binary(torch.gcd)
lcm = _binary(torch.lcm)
nextafter = _binary(torch.nextafter)
heaviside = _binary(torch.heaviside)
fmax = _binary(torch.fmax)
fmin = _binary(torch.fmin)
logaddexp2 = _binary(torch.logaddexp2)
arctan2 = _binary(torch.atan2)
copysign = _binary(torch.copysign)
fmod = _binary(torch.fmod)
hypot = _binary(torch.hypot)


def abs(x: Any) -> Any:
    return torch.abs(x) if isinstance(x, torch.Tensor) else builtins.abs(x)


absolute = abs
exp = torch.exp
expm1 = torch.expm1
exp2 = torch.exp2
isreal = torch.isreal
real, imag, angle = torch.real, torch.imag, torch.angle
conj = conjugate = torch.conj_physical  # a new array, as NumPy's (torch.conj is a lazy view)
iscomplexobj = torch.is_complex
rint = torch.round
fix = torch.trunc
positive = torch.positive
deg2rad, rad2deg = torch.deg2rad, torch.rad2deg
i0 = torch.i0
sinc = torch.sinc
erf = torch.erf  # SciPy's name (scipy.special.erf) for backends that have it natively
erfinv = torch.erfinv
log = torch.log
log1p = torch.log1p
log2 = torch.log2
log10 = torch.log10
sqrt = torch.sqrt
square = torch.square
reciprocal = torch.reciprocal


def sign(x: Any) -> Any:
    return torch.sign(x) if isinstance(x, torch.Tensor) else (x > 0) - (x < 0)


signbit = torch.signbit
sin, cos, tan = torch.sin, torch.cos, torch.tan
arcsin, arccos, arctan = torch.asin, torch.acos, torch.atan
sinh, cosh, tanh = torch.sinh, torch.cosh, torch.tanh
arcsinh, arccosh, arctanh = torch.asinh, torch.acosh, torch.atanh
floor, ceil, trunc = torch.floor, torch.ceil, torch.trunc
isnan, isinf, isfinite = torch.isnan, torch.isinf, torch.isfinite
isposinf, isneginf = torch.isposinf, torch.isneginf
matmul = torch.matmul


def cbrt(x: Any) -> Any:
    return torch.sign(x) * torch.abs(x) ** (1.0 / 3.0)


def repeat(x: Any, repeats: Any, axis: int | None = None) -> Any:
    """NumPy's ``repeat`` (torch's ``repeat_interleave``)."""
    r = repeats if isinstance(repeats, int) else _t(repeats).to(x.device)
    return torch.repeat_interleave(x.reshape(-1) if axis is None else x, r, dim=0 if axis is None else axis)


def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None) -> Any:
    return torch.searchsorted(a.contiguous(), _t(v, a).contiguous(), right=side == "right", sorter=sorter)


def isin(element: Any, test_elements: Any, invert: builtins.bool = False) -> Any:
    return torch.isin(_t(element), _t(test_elements), invert=invert)


def frexp(x: Any) -> tuple[Any, Any]:
    m, e = torch.frexp(x)
    return m, e


def tile(x: Any, reps: Any) -> Any:
    return torch.tile(x, (reps,) if isinstance(reps, int) else tuple(reps))


def round(x: Any, decimals: int = 0) -> Any:
    return torch.round(x, decimals=decimals) if decimals else torch.round(x)


def clip(x: Any, lo: Any = None, hi: Any = None, out: Any = None) -> Any:
    if isinstance(lo, torch.Tensor) or isinstance(hi, torch.Tensor):
        lo = None if lo is None else _t(lo, x)
        hi = None if hi is None else _t(hi, x)
    return torch.clamp(x, lo, hi, out=out)


def where(cond: Any, a: Any = None, b: Any = None) -> Any:
    if a is None and b is None:
        return torch.nonzero(cond, as_tuple=True)
    if not isinstance(a, torch.Tensor):
        if not isinstance(b, torch.Tensor):
            a = torch.as_tensor(a, device=cond.device)
            b = torch.as_tensor(b, device=cond.device)
        else:
            a = _t(a, b)
    elif not isinstance(b, torch.Tensor):
        b = _t(b, a)
    return torch.where(cond, a, b)


def isclose(a: Any, b: Any, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: builtins.bool = False) -> Any:
    return torch.isclose(_t(a), _t(b, a), rtol=rtol, atol=atol, equal_nan=equal_nan)


def astype(x: Any, dtype: Any, copy: builtins.bool = True) -> Any:
    return x.to(_dt(dtype), copy=copy)


def result_type(*args: Any) -> Any:
    out = None
    for a in args:
        d = a.dtype if isinstance(a, torch.Tensor) else _dt(a) if not isinstance(a, (int, float)) else None
        if d is None:
            continue
        out = d if out is None else torch.promote_types(out, d)
    return out


# -- creation --------------------------------------------------------------------------------------


from_dlpack = torch.from_dlpack


def asarray(x: Any, dtype: Any = None, copy: Any = None, device: Any = None) -> Any:
    if isinstance(x, torch.Tensor):
        out = x if dtype is None else x.to(_dt(dtype))
        return out.clone() if copy and out is x else out
    if isinstance(x, (list, tuple)) and x and builtins.any(isinstance(v, torch.Tensor) for v in x):
        return torch.stack([asarray(v, dtype) for v in x])
    return torch.as_tensor(x, dtype=_dt(dtype), device=device)


def array(x: Any, dtype: Any = None, copy: builtins.bool = True) -> Any:
    out = asarray(x, dtype)
    return (
        out.clone() if copy and (out is x or (isinstance(x, torch.Tensor) and out.data_ptr() == x.data_ptr())) else out
    )


def copy(x: Any) -> Any:
    return x.clone()


def ascontiguousarray(x: Any, dtype: Any = None) -> Any:
    return asarray(x, dtype).contiguous()


def zeros(shape: Any, dtype: Any = float, device: Any = None) -> Any:
    return torch.zeros(_shape(shape), dtype=_dt(dtype), device=device)


def ones(shape: Any, dtype: Any = float, device: Any = None) -> Any:
    return torch.ones(_shape(shape), dtype=_dt(dtype), device=device)


def empty(shape: Any, dtype: Any = float, device: Any = None) -> Any:
    return torch.empty(_shape(shape), dtype=_dt(dtype), device=device)


def full(shape: Any, value: Any, dtype: Any = None, device: Any = None) -> Any:
    if isinstance(value, torch.Tensor):
        value = value.item()
    if dtype is None:
        dtype = torch.tensor(value).dtype if not isinstance(value, float) else torch.float64
    return torch.full(_shape(shape), value, dtype=_dt(dtype), device=device)


def zeros_like(x: Any, dtype: Any = None) -> Any:
    return torch.zeros_like(x, dtype=_dt(dtype))


def ones_like(x: Any, dtype: Any = None) -> Any:
    return torch.ones_like(x, dtype=_dt(dtype))


def empty_like(x: Any, dtype: Any = None) -> Any:
    return torch.empty_like(x, dtype=_dt(dtype))


def full_like(x: Any, value: Any, dtype: Any = None) -> Any:
    return torch.full_like(x, value, dtype=_dt(dtype))


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None, device: Any = None) -> Any:
    if stop is None:
        start, stop = 0, start
    return torch.arange(start, stop, step, dtype=_dt(dtype), device=device)


def linspace(start: float, stop: float, num: int = 50, dtype: Any = None, device: Any = None) -> Any:
    return torch.linspace(start, stop, int(num), dtype=_dt(dtype) or torch.float64, device=device)


def eye(n: int, m: int | None = None, k: int = 0, dtype: Any = float, device: Any = None) -> Any:
    m = n if m is None else m
    if k == 0:
        return torch.eye(n, m, dtype=_dt(dtype), device=device)
    return torch.ones(n, m, dtype=torch.bool, device=device).tril(k).triu(k).to(_dt(dtype))


def tril(x: Any, k: int = 0) -> Any:
    return torch.tril(x, k)


def triu(x: Any, k: int = 0) -> Any:
    return torch.triu(x, k)


# -- reductions ------------------------------------------------------------------------------------
def _no_axes(x: Any, dtype: Any) -> Any:
    """NumPy's reduction over ``axis=()``: no dim reduced, a copy (torch's ``dim=()`` would reduce them all)."""
    return x.to(_dt(dtype) or x.dtype, copy=True)


def sum(x: Any, axis: Any = None, dtype: Any = None, keepdims: builtins.bool = False) -> Any:
    axis = _axis(axis)
    if axis == ():
        return _no_axes(x, dtype)
    if axis is None:
        out = torch.sum(x, dtype=_dt(dtype))
        return out.reshape((1,) * x.ndim) if keepdims else out
    return torch.sum(x, dim=axis, keepdim=keepdims, dtype=_dt(dtype))


def mean(x: Any, axis: Any = None, dtype: Any = None, keepdims: builtins.bool = False) -> Any:
    axis = _axis(axis)
    if axis == ():
        return _no_axes(x, dtype)
    if axis is None:
        out = torch.mean(x, dtype=_dt(dtype))
        return out.reshape((1,) * x.ndim) if keepdims else out
    return torch.mean(x, dim=axis, keepdim=keepdims, dtype=_dt(dtype))


def prod(x: Any, axis: Any = None, dtype: Any = None, keepdims: builtins.bool = False) -> Any:
    axis = _axis(axis)
    if axis is None:
        out = torch.prod(x, dtype=_dt(dtype))
        return out.reshape((1,) * x.ndim) if keepdims else out
    if isinstance(axis, tuple):
        for a in sorted(axis, reverse=True):
            x = torch.prod(x, dim=a, keepdim=keepdims, dtype=_dt(dtype))
        return x
    return torch.prod(x, dim=axis, keepdim=keepdims, dtype=_dt(dtype))


def _reduce_dims(fn: Any, x: Any, axis: Any, keepdims: builtins.bool) -> Any:
    axis = _axis(axis)
    if axis is None:
        out = fn(x)
        return out.reshape((1,) * x.ndim) if keepdims else out
    return fn(x, dim=axis, keepdim=keepdims)


def max(x: Any, axis: Any = None, keepdims: builtins.bool = False) -> Any:
    return _reduce_dims(torch.amax, x, axis, keepdims)


def min(x: Any, axis: Any = None, keepdims: builtins.bool = False) -> Any:
    return _reduce_dims(torch.amin, x, axis, keepdims)


amax, amin = max, min


def any(x: Any, axis: Any = None, keepdims: builtins.bool = False) -> Any:
    return _reduce_dims(torch.any, x, axis, keepdims)


def all(x: Any, axis: Any = None, keepdims: builtins.bool = False) -> Any:
    return _reduce_dims(torch.all, x, axis, keepdims)


def count_nonzero(x: Any, axis: Any = None) -> Any:
    return torch.count_nonzero(x, dim=_axis(axis))


def argmax(x: Any, axis: int | None = None, keepdims: builtins.bool = False) -> Any:
    return torch.argmax(x.to(torch.uint8) if x.dtype == torch.bool else x, dim=axis, keepdim=keepdims)


def argmin(x: Any, axis: int | None = None, keepdims: builtins.bool = False) -> Any:
    return torch.argmin(x.to(torch.uint8) if x.dtype == torch.bool else x, dim=axis, keepdim=keepdims)


def cumsum(x: Any, axis: int | None = None, dtype: Any = None) -> Any:
    return torch.cumsum(x.reshape(-1) if axis is None else x, dim=0 if axis is None else axis, dtype=_dt(dtype))


def cumprod(x: Any, axis: int | None = None, dtype: Any = None) -> Any:
    return torch.cumprod(x.reshape(-1) if axis is None else x, dim=0 if axis is None else axis, dtype=_dt(dtype))


def var(x: Any, axis: Any = None, ddof: int = 0, keepdims: builtins.bool = False) -> Any:
    return torch.var(x, dim=_axis(axis), correction=ddof, keepdim=keepdims)


def std(x: Any, axis: Any = None, ddof: int = 0, keepdims: builtins.bool = False) -> Any:
    return torch.std(x, dim=_axis(axis), correction=ddof, keepdim=keepdims)


#: the constructors that take ``device=`` (bound to the device by ``on_device``)
CONSTRUCTORS = ("asarray", "zeros", "ones", "empty", "full", "arange", "linspace", "eye")


def on_device(dev: torch.device) -> Any:
    """This namespace with its constructors creating on ``dev`` (the CPU uses the module itself)."""
    ns = types.SimpleNamespace(**vars(sys.modules[__name__]))
    # the kept 0-d scalars were checked bit for bit on the CPU only: CUDA keeps torch's own wrapping
    ns.add, ns.subtract, ns.multiply, ns.true_divide = operator.add, operator.sub, operator.mul, operator.truediv
    for name in CONSTRUCTORS:
        setattr(ns, name, functools.partial(getattr(ns, name), device=dev))
    return ns


def size(x: Any) -> int:
    return x.numel()


def shares_memory(a: Any, b: Any) -> builtins.bool:
    return builtins.bool(a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr())


may_share_memory = shares_memory


class linalg:  # noqa: N801 - NumPy's name
    """``numpy.linalg``'s names over ``torch.linalg``."""

    inv = staticmethod(torch.linalg.inv)
    det = staticmethod(torch.linalg.det)
    solve = staticmethod(torch.linalg.solve)
    cholesky = staticmethod(torch.linalg.cholesky)
    eigh = staticmethod(torch.linalg.eigh)
    qr = staticmethod(torch.linalg.qr)
    pinv = staticmethod(torch.linalg.pinv)

    @staticmethod
    def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: builtins.bool = False) -> Any:
        if ord is None and axis is None:
            return torch.linalg.vector_norm(x)
        return torch.linalg.norm(x, ord=ord, dim=_axis(axis), keepdim=keepdims)

    @staticmethod
    def svd(x: Any, full_matrices: builtins.bool = True, compute_uv: builtins.bool = True) -> Any:
        if not compute_uv:
            return torch.linalg.svdvals(x)
        return torch.linalg.svd(x, full_matrices=full_matrices)

    @staticmethod
    def slogdet(x: Any) -> Any:
        return torch.linalg.slogdet(x)
