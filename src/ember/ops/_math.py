"""Elementwise math functions beyond the core set, one table row per operator.

Each row gives the forward on arrays and the derivative as Tensor operations (so higher-order
gradients work): ``x`` is the input, ``y`` the output. That row is the operator's one place.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ..autograd._function import Op
from ._elementwise import StepOp, _float, exp, sqrt, where
from ._util import promote, sum_to

Array = Any
Fwd = Callable[[Any, Array], Array]
Deriv = Callable[[Tensor, Tensor], Tensor]

_SQRT_PI_2 = 2.0 / math.sqrt(math.pi)
_LN2, _LN10 = math.log(2.0), math.log(10.0)


def pointwise_op(
    name: str, fwd: Callable[..., Array], deriv: Callable[..., Tensor] | None, uses: str = "x", kernel: bool = False
) -> Any:
    """An Op class for one elementwise function ``fwd(xp, x, *params)`` with derivative ``deriv(x, y, *params)``.

    ``uses`` says what backward reads: ``"x"`` (the input) or ``"y"`` (the output); the derivative is
    written with Tensor operations, so higher-order gradients work. Extra ``params`` are plain numbers.
    ``kernel=True``: ``fwd`` takes the backend instead of ``xp`` (it calls a backend kernel, e.g. ``erf``).
    """

    class _Op(Op):
        saves_inputs = uses == "x"
        saves_output = uses == "y"
        differentiable = deriv is not None

        def forward(self, x: Any, *params: Any) -> Any:
            y = fwd(self.backend if kernel else self.backend.xp, x, *params)
            if self.saves_output:
                self.keep(y)
            return y

        def backward(self, g: Tensor) -> Any:
            ins = self.inputs or ()
            x = ins[0] if self.saves_inputs else None
            y = self.output() if self.saves_output else None
            d = g * deriv(x, y, *ins[1:])  # type: ignore[misc]
            return (d,) + (None,) * (len(ins) - 1) if len(ins) > 1 else d

    _Op.__name__ = _Op.__qualname__ = "".join(p.capitalize() for p in name.split("_"))
    return _Op


def _unary(
    name: str, fwd: Fwd, deriv: Deriv | None, *, uses: str = "x", floating: bool = True, kernel: bool = False
) -> Callable[..., Tensor]:
    """Make an Op class and its public function for one elementwise operator."""
    op = pointwise_op(name, fwd, deriv, uses, kernel)

    def fn(input: Tensor) -> Tensor:
        return op.apply(_float(input) if floating else input)  # type: ignore[no-any-return]

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}`` (PyTorch semantics)."
    return fn


def _sin(x: Tensor) -> Tensor:
    return sin(x)


def _cos(x: Tensor) -> Tensor:
    return cos(x)


def _cosh(x: Tensor) -> Tensor:
    return cosh(x)


reciprocal = _unary("reciprocal", lambda xp, x: xp.reciprocal(x), lambda x, y: -(y * y), uses="y")
square = _unary("square", lambda xp, x: xp.square(x), lambda x, y: 2 * x, floating=False)
rsqrt = _unary("rsqrt", lambda xp, x: 1 / xp.sqrt(x), lambda x, y: -0.5 * y * y * y, uses="y")
exp2 = _unary("exp2", lambda xp, x: xp.exp2(x), lambda x, y: y * _LN2, uses="y")
expm1 = _unary("expm1", lambda xp, x: xp.expm1(x), lambda x, y: y + 1, uses="y")
log2 = _unary("log2", lambda xp, x: xp.log2(x), lambda x, y: 1 / (x * _LN2))
log10 = _unary("log10", lambda xp, x: xp.log10(x), lambda x, y: 1 / (x * _LN10))
log1p = _unary("log1p", lambda xp, x: xp.log1p(x), lambda x, y: 1 / (x + 1))
sin = _unary("sin", lambda xp, x: xp.sin(x), lambda x, y: _cos(x))
cos = _unary("cos", lambda xp, x: xp.cos(x), lambda x, y: -_sin(x))
tan = _unary("tan", lambda xp, x: xp.tan(x), lambda x, y: 1 + y * y, uses="y")
asin = _unary("asin", lambda xp, x: xp.arcsin(x), lambda x, y: 1 / sqrt(1 - x * x))
acos = _unary("acos", lambda xp, x: xp.arccos(x), lambda x, y: -1 / sqrt(1 - x * x))
atan = _unary("atan", lambda xp, x: xp.arctan(x), lambda x, y: 1 / (1 + x * x))
sinh = _unary("sinh", lambda xp, x: xp.sinh(x), lambda x, y: _cosh(x))
cosh = _unary("cosh", lambda xp, x: xp.cosh(x), lambda x, y: sinh(x))
asinh = _unary("asinh", lambda xp, x: xp.arcsinh(x), lambda x, y: 1 / sqrt(x * x + 1))
acosh = _unary("acosh", lambda xp, x: xp.arccosh(x), lambda x, y: 1 / sqrt(x * x - 1))
atanh = _unary("atanh", lambda xp, x: xp.arctanh(x), lambda x, y: 1 / (1 - x * x))
erf = _unary("erf", lambda be, x: be.erf(x), lambda x, y: _SQRT_PI_2 * exp(-x * x), kernel=True)
erfc = _unary("erfc", lambda be, x: 1 - be.erf(x), lambda x, y: -_SQRT_PI_2 * exp(-x * x), kernel=True)
erfinv = _unary(
    "erfinv", lambda be, x: be.erfinv(x), lambda x, y: (0.5 * math.sqrt(math.pi)) * exp(y * y), uses="y", kernel=True
)
frac = _unary("frac", lambda xp, x: x - xp.trunc(x), lambda x, y: 1 + 0 * y, uses="y")
isnan = _unary("isnan", lambda xp, x: xp.isnan(x), None, floating=False)
isinf = _unary("isinf", lambda xp, x: xp.isinf(x), None, floating=False)
isfinite = _unary("isfinite", lambda xp, x: xp.isfinite(x), None, floating=False)
isposinf = _unary("isposinf", lambda xp, x: xp.isposinf(x), None, floating=False)
isneginf = _unary("isneginf", lambda xp, x: xp.isneginf(x), None, floating=False)
signbit = _unary("signbit", lambda xp, x: xp.signbit(x), None, floating=False)


# -- piecewise constant: zero gradient, as in PyTorch ------------------------------------------------
class Ceil(StepOp):
    def forward(self, x: Any) -> Any:
        return self.backend.xp.ceil(x)


def ceil(input: Tensor) -> Tensor:
    """The smallest integer not less than each element."""
    return Ceil.apply(input)  # type: ignore[no-any-return]


class Round(StepOp):
    def forward(self, x: Any, decimals: int) -> Any:
        return self.backend.xp.round(x, decimals)


def round(input: Tensor, *, decimals: int = 0) -> Tensor:
    """Round half to even (PyTorch and NumPy), to ``decimals`` places."""
    return Round.apply(input, int(decimals))  # type: ignore[no-any-return]


def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """``log(p / (1 - p))``; with ``eps`` the input is clamped to ``[eps, 1 - eps]`` first."""
    from ._elementwise import clamp, log

    x = _float(input)
    if eps is not None:
        x = clamp(x, eps, 1 - eps)
    return log(x / (1 - x))


class Atan2(Op):
    def forward(self, a: Any, b: Any) -> Any:
        return self.backend.xp.arctan2(a, b)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        d = a * a + b * b
        ga = sum_to(g * b / d, a.shape) if self._req(0) else None
        gb = sum_to(-g * a / d, b.shape) if self._req(1) else None
        return ga, gb


def atan2(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise angle of ``(other, input)`` (``arctan2(input, other)``)."""
    a, b = promote("atan2", input, other)
    if isinstance(a, Tensor) and a.dtype.kind not in "fc":
        a = _float(a)
        b = b.to(a.dtype) if isinstance(b, Tensor) else b
    return Atan2.apply(a, b)  # type: ignore[no-any-return]


arctan2 = atan2


def lerp(input: Tensor, end: Any, weight: Any) -> Tensor:
    """``input + weight * (end - input)``."""
    return input + weight * (end - input)


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    """``input + value * tensor1 * tensor2``."""
    return input + value * (tensor1 * tensor2)


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    """``input + value * tensor1 / tensor2``."""
    return input + value * (tensor1 / tensor2)


def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
    """Replace NaN, +inf and -inf by finite numbers (the dtype's extremes by default)."""
    if input.dtype.kind not in "fc":
        return input.clone()
    info = input._backend.xp.finfo(input._data.dtype)
    hi = float(info.max) if posinf is None else posinf
    lo = float(info.min) if neginf is None else neginf
    out = where(isnan(input), nan, input)
    out = where(isposinf(input), hi, out)
    return where(isneginf(input), lo, out)


def isclose(input: Tensor, other: Any, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> Tensor:
    """``|input - other| <= atol + rtol * |other|`` elementwise (bool)."""
    a, b = promote("isclose", input, other)
    xp = input._backend.xp
    ad = a._data if isinstance(a, Tensor) else a
    bd = b._data if isinstance(b, Tensor) else b
    return Tensor._make(xp.asarray(xp.isclose(ad, bd, rtol=rtol, atol=atol, equal_nan=equal_nan)), input._backend)


def allclose(input: Tensor, other: Any, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> bool:
    """Whether every element is close (see ``isclose``)."""
    return bool(input._backend.xp.all(isclose(input, other, rtol, atol, equal_nan)._data))


def equal(input: Tensor, other: Tensor) -> bool:
    """True when both tensors have the same shape and elements."""
    if tuple(input.shape) != tuple(other.shape):
        return False
    a, b = promote("equal", input, other)
    return bool(a._backend.xp.all(a._data == b._data))


__all__ = [
    "acos", "acosh", "addcdiv", "addcmul", "allclose", "arctan2", "asin", "asinh", "atan", "atan2", "atanh", "ceil",
    "cos", "cosh", "equal", "erf", "erfc", "erfinv", "exp2", "expm1", "frac", "isclose", "isfinite", "isinf",
    "isnan", "isneginf", "isposinf", "lerp", "log10", "log1p", "log2", "logit", "nan_to_num", "reciprocal", "round",
    "rsqrt", "signbit", "sin", "sinh", "square", "tan",
]  # fmt: skip
#: the functions that are also Tensor methods
METHODS = list(__all__)
