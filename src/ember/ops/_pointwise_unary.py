"""Pointwise operators of one operand (torch docs, "Pointwise Ops"): exponentials, logarithms, roots,
trigonometry, rounding, clamping.
"""

from __future__ import annotations

import math
from typing import Any

from .._dtype import get_default_dtype
from .._errors import DTypeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._apply_number import apply_one
from ..autograd._function import Op
from ._comparison import isnan, isneginf, isposinf
from ._indexing import where
from ._indexing_view import sum_to
from ._util import StepOp, _float, _is_bool, _shape, _unary, plain_number, promote, real_only

__all__ = [
    "abs", "absolute", "acos", "acosh", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "asin",
    "asinh", "atan", "atanh", "ceil", "clamp", "clamp_max", "clamp_min", "clip", "cos", "cosh", "deg2rad", "exp",
    "exp2", "expm1", "fix", "floor", "frac", "log", "log10", "log1p", "log2", "nan_to_num", "neg", "negative",
    "positive", "rad2deg", "reciprocal", "relu", "round", "rsqrt", "sigmoid", "sign", "signbit", "sin", "sinc",
    "sinh", "sqrt", "square", "tan", "tanh", "trunc",
]  # fmt: skip
METHODS = list(__all__)


class Neg(Op):
    shaped_grads = True
    saves_inputs = False

    def forward(self, a: Any) -> Any:
        return self.backend.xp.negative(a)

    def backward(self, g: Tensor) -> Tensor:
        return -g

    def backward_arrays(self, g: Any) -> Any:
        return -g


def neg(input: Tensor) -> Tensor:
    """Element-wise ``-x``. Also ``negative``."""
    if _is_bool(input):
        raise DTypeError("neg: negating a bool tensor is not supported; use ~ or logical_not() to invert a mask")
    return Neg.apply(input)


negative = neg


# -- unary ----------------------------------------------------------------------------------------
class Exp(Op):
    shaped_grads = True
    saves_inputs = False
    saves_output = True

    def forward(self, x: Any) -> Any:
        y = self.backend.xp.exp(x)
        self.keep(y)
        return y

    def backward(self, g: Tensor) -> Tensor:
        return g * cj(self.output())

    def backward_arrays(self, g: Any) -> Any:
        return g * self.out_array()


class Log(Op):
    shaped_grads = True

    def forward(self, x: Any) -> Any:
        return self.backend.xp.log(x)

    def backward(self, g: Tensor) -> Tensor:
        return g / cj(self.inputs[0])  # type: ignore[index]

    def backward_arrays(self, g: Any) -> Any:
        return g / self.inputs[0]._data  # type: ignore[index]


class Sqrt(Op):
    saves_inputs = False
    saves_output = True

    def forward(self, x: Any) -> Any:
        y = self.backend.xp.sqrt(x)
        self.keep(y)
        return y

    def backward(self, g: Tensor) -> Tensor:
        return g / (2 * cj(self.output()))


class Abs(Op):
    def forward(self, x: Any) -> Any:
        return self.backend.xp.abs(x)

    def backward(self, g: Tensor) -> Tensor:
        return g * sgn(self.inputs[0])  # type: ignore[index]  # z/|z| for complex z


class Sign(StepOp):
    def forward(self, x: Any) -> Any:
        xp = self.backend.xp
        y = xp.sign(x)
        return xp.where(y != y, 0, y) if self.backend.dtype_of(y).is_floating_point else y  # sign(NaN) = 0


class Tanh(Op):
    shaped_grads = True
    saves_inputs = False
    saves_output = True

    def forward(self, x: Any) -> Any:
        y = self.backend.xp.tanh(x)
        self.keep(y)
        return y

    def backward(self, g: Tensor) -> Tensor:
        y = self.output()
        return g * cj(1 - y * y)

    def backward_arrays(self, g: Any) -> Any:
        return self.backend.tanh_backward(g, self.out_array())


class Sigmoid(Op):
    shaped_grads = True
    saves_inputs = False
    saves_output = True

    def forward(self, x: Any) -> Any:
        if self.backend.dtype_of(x).is_complex:  # no complex logaddexp
            y = 1 / (1 + self.backend.xp.exp(-x))
        else:
            y = self.backend.sigmoid(x)
        self.keep(y)
        return y

    def backward(self, g: Tensor) -> Tensor:
        y = self.output()
        return g * cj(y * (1 - y))

    def backward_arrays(self, g: Any) -> Any:
        return self.backend.sigmoid_backward(g, self.out_array())


class Relu(Op):
    shaped_grads = True
    saves_inputs = False
    saves_output = True

    def forward(self, x: Any) -> Any:
        y = self.backend.relu(x)
        self.keep(y)
        return y

    def backward(self, g: Tensor) -> Tensor:
        return g * (self.output() > 0)

    def backward_arrays(self, g: Any) -> Any:
        return self.backend.relu_backward(g, self.out_array())


class Floor(StepOp):
    def forward(self, x: Any) -> Any:
        return self.backend.xp.floor(x)


class Trunc(StepOp):
    def forward(self, x: Any) -> Any:
        return self.backend.xp.trunc(x)


def exp(input: Tensor) -> Tensor:
    """Element-wise ``e ** x``."""
    if input.__class__ is not Tensor or input._data.dtype not in input._backend.float_dtypes:  # (_float inlined)
        input = _float(input)
    return apply_one(Exp, input)


def log(input: Tensor) -> Tensor:
    """Element-wise natural logarithm."""
    if input.__class__ is not Tensor or input._data.dtype not in input._backend.float_dtypes:  # (_float inlined)
        input = _float(input)
    return apply_one(Log, input)


def sqrt(input: Tensor) -> Tensor:
    """Element-wise square root."""
    if input.__class__ is not Tensor or input._data.dtype not in input._backend.float_dtypes:  # (_float inlined)
        input = _float(input)
    return apply_one(Sqrt, input)


def abs(input: Tensor) -> Tensor:
    """Element-wise absolute value. Also ``absolute``."""
    return Abs.apply(input)


def sign(input: Tensor) -> Tensor:
    """Element-wise sign: -1, 0 or 1. Also ``sgn``."""
    real_only("sign (use sgn for complex numbers)", input)
    return input.clone() if input.dtype.kind == "b" else Sign.apply(input)  # (a bool is its own sign)


def tanh(input: Tensor) -> Tensor:
    """Element-wise hyperbolic tangent."""
    if input.__class__ is not Tensor or input._data.dtype not in input._backend.float_dtypes:  # (_float inlined)
        input = _float(input)
    return apply_one(Tanh, input)


def sigmoid(input: Tensor) -> Tensor:
    """Element-wise ``1 / (1 + exp(-x))``."""
    if input.__class__ is not Tensor or input._data.dtype not in input._backend.float_dtypes:  # (_float inlined)
        input = _float(input)
    return apply_one(Sigmoid, input)


def relu(input: Tensor) -> Tensor:
    """Element-wise ``max(x, 0)``."""
    real_only("relu", input)
    return Relu.apply(input)


def floor(input: Tensor) -> Tensor:
    """Element-wise floor (the largest integer not above ``x``)."""
    real_only("floor", input)
    return Floor.apply(input)


def trunc(input: Tensor) -> Tensor:
    """Element-wise truncation toward zero. Also ``fix``."""
    real_only("trunc", input)
    return Trunc.apply(input)


class Clamp(Op):
    def forward(self, x: Any, lo: Any, hi: Any) -> Any:
        return self.backend.xp.clip(x, lo, hi)

    def backward(self, g: Tensor) -> tuple[Any, None, None]:
        x, lo, hi = self.inputs  # type: ignore[misc]
        keep = None
        if lo is not None:
            keep = x >= lo
        if hi is not None:
            keep = (x <= hi) if keep is None else keep & (x <= hi)
        return (g if keep is None else g * keep), None, None


class ClampTensor(Op):
    """``clamp`` with a tensor bound: ``minimum(maximum(x, lo), hi)`` with PyTorch's gradients at ties: ``x`` gets
    them where ``lo <= x <= hi``, ``lo`` where ``x < lo < hi``, ``hi`` where ``x > hi`` or ``hi < lo``."""

    def forward(self, x: Any, lo: Any, hi: Any) -> Any:
        xp = self.backend.xp
        y = x if lo is None else xp.maximum(x, lo)
        return y if hi is None else xp.minimum(y, hi)

    def backward(self, g: Tensor) -> tuple[Any, Any, Any]:
        x, lo, hi = self.inputs  # type: ignore[misc]
        if lo is not None and hi is not None:
            masks = ((x >= lo) & (x <= hi), (x < lo) & (hi > lo), (x > hi) | (hi < lo))
        else:
            masks = (x >= lo, x < lo, None) if hi is None else (x <= hi, None, x > hi)
        return tuple(  # type: ignore[return-value]
            sum_to(where(m, g, 0.0), _shape(v)) if isinstance(v, Tensor) and self._req(i) else None
            for i, (v, m) in enumerate(zip((x, lo, hi), masks, strict=True))
        )


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """Limit values to ``[min, max]``; bounds may be numbers or tensors."""
    real_only("clamp", input)
    if min is None and max is None:
        raise ValueRangeError("clamp: at least one of min and max must be given")
    min, max = plain_number(min), plain_number(max)
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        x = input
        if min is not None:
            x, min = promote("clamp", x, min)
        if max is not None:
            x, max = promote("clamp", x, max)
            min = min.to(x.dtype) if isinstance(min, Tensor) and min.dtype is not x.dtype else min
        return ClampTensor.apply(x, min, max)
    if input.dtype.kind != "f" and any(isinstance(v, float) for v in (min, max)):
        input = input.to(get_default_dtype())
    return Clamp.apply(input, min, max)


clip = clamp


def clamp_min(input: Tensor, min: Any) -> Tensor:
    """``clamp(input, min=min)``."""
    return clamp(input, min=min)


def clamp_max(input: Tensor, max: Any) -> Tensor:
    """``clamp(input, max=max)``."""
    return clamp(input, max=max)


_LN2, _LN10 = math.log(2.0), math.log(10.0)


def _sin(x: Tensor) -> Tensor:
    return sin(x)


def _cos(x: Tensor) -> Tensor:
    return cos(x)


def _cosh(x: Tensor) -> Tensor:
    return cosh(x)


reciprocal = _unary("reciprocal", lambda xp, x: xp.reciprocal(x), lambda x, y: -(y * y), uses="y")


_square = _unary("square", lambda xp, x: xp.square(x), lambda x, y: 2 * x, floating=False)


def square(input: Tensor) -> Tensor:
    """Elementwise ``input * input`` (a bool input squares as int64, as PyTorch's ``pow(x, 2)``)."""
    return _square(input.long() if input.dtype.kind == "b" else input)


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


acosh = _unary("acosh", lambda xp, x: xp.arccosh(x), lambda x, y: 1 / (sqrt(x - 1) * sqrt(x + 1)))  # complex too


atanh = _unary("atanh", lambda xp, x: xp.arctanh(x), lambda x, y: 1 / (1 - x * x))


frac = _unary("frac", lambda xp, x: x - xp.trunc(x), lambda x, y: 1 + 0 * y, uses="y", real=True)


signbit = _unary("signbit", lambda xp, x: xp.signbit(x), None, floating=False, real=True)


# -- piecewise constant: zero gradient, as in PyTorch ------------------------------------------------
class Ceil(StepOp):
    def forward(self, x: Any) -> Any:
        return self.backend.xp.ceil(x)


def ceil(input: Tensor) -> Tensor:
    """The smallest integer not less than each element."""
    real_only("ceil", input)
    return Ceil.apply(input)


class Round(StepOp):
    def forward(self, x: Any, decimals: int) -> Any:
        return self.backend.xp.round(x, decimals)


def round(input: Tensor, *, decimals: int = 0) -> Tensor:
    """Round half to even (PyTorch and NumPy), to ``decimals`` places."""
    real_only("round", input)
    return Round.apply(input, int(decimals))


def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
    """Replace NaN, +inf and -inf by finite numbers (the dtype's extremes by default)."""
    if input.dtype.kind not in "fc":
        return input.clone()
    info = input._backend.finfo(input._data.dtype)
    hi = float(info.max) if posinf is None else posinf
    lo = float(info.min) if neginf is None else neginf
    out = where(isnan(input), nan, input)
    out = where(isposinf(input), hi, out)
    return where(isneginf(input), lo, out)


# -- unary ------------------------------------------------------------------------------------------
class Sinc(Op):
    def forward(self, x: Any) -> Any:
        xp = self.backend.xp
        px = x * math.pi
        return xp.where(x == 0, 1.0, xp.sin(px) / xp.where(x == 0, 1.0, px))

    def backward(self, g: Tensor) -> Tensor:
        x = self.inputs[0]  # type: ignore[index]
        px = x * math.pi
        d = (px * cos(px) - sin(px)) / (px * x)
        return g * cj(where(x == 0, 0.0, d))


def sinc(input: Tensor) -> Tensor:
    """``sin(pi x) / (pi x)`` (1 at 0)."""
    return Sinc.apply(_float(input))


def deg2rad(input: Tensor) -> Tensor:
    """Degrees to radians, element-wise."""
    real_only("deg2rad", input)
    return _float(input) * (math.pi / 180.0)


def rad2deg(input: Tensor) -> Tensor:
    """Radians to degrees, element-wise."""
    real_only("rad2deg", input)
    return _float(input) * (180.0 / math.pi)


def positive(input: Tensor) -> Tensor:
    """``+input`` (the input itself)."""
    if input.dtype.name == "bool":
        raise DTypeError("positive: not defined for bool tensors")
    return input


# NumPy-style names PyTorch also accepts
absolute = abs


fix = trunc


arccos, arcsin, arctan = acos, asin, atan  # type: ignore[has-type]


arccosh, arcsinh, arctanh = acosh, asinh, atanh  # type: ignore[has-type]


from ._pointwise_complex import cj, sgn  # noqa: E402 - sgn calls sign for real tensors
