"""ONNX element-wise operators, activations and softmaxes as Ember ops.

Each converter takes the node's ``Attrs`` (``a``) and its input values and returns its output(s). Names
follow the ONNX operator they implement; where an operator changed between opsets, ``a.opset`` decides.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import _creation, ops
from .. import _dtype as dt
from .._tensor import Tensor
from ..nn import functional as F

__all__ = ["OPS"]


def _unary(fn: Callable[[Tensor], Tensor]) -> Callable[..., Tensor]:
    return lambda a, x: fn(x)


def _binary(fn: Callable[[Tensor, Tensor], Tensor]) -> Callable[..., Tensor]:
    return lambda a, x, y: fn(x, y)


def _same_type(fn: Callable[[Tensor, Tensor], Tensor]) -> Callable[..., Tensor]:
    """A binary operator whose result keeps the first input's dtype (ONNX: both inputs share it)."""

    def op(a: Any, x: Tensor, y: Tensor) -> Tensor:
        out = fn(x, y)
        return out if out.dtype == x.dtype else out.to(x.dtype)

    return op


def div(a: Any, x: Tensor, y: Tensor) -> Tensor:
    if x.dtype.is_floating_point:
        return ops.div(x, y)
    return ops.div(x, y, rounding_mode="trunc").to(x.dtype)  # C integer division


def mod(a: Any, x: Tensor, y: Tensor) -> Tensor:
    out = ops.fmod(x, y) if a.get("fmod", 0) else ops.remainder(x, y)
    return out.to(x.dtype)


def pow(a: Any, x: Tensor, y: Tensor) -> Tensor:
    if not x.dtype.is_floating_point and y.dtype.is_floating_point:
        return ops.pow(x.double(), y).to(x.dtype)
    out = ops.pow(x, y if y.dtype == x.dtype or not x.dtype.is_floating_point else y.to(x.dtype))
    return out.to(x.dtype)


def _variadic(fn: Callable[[Tensor, Tensor], Tensor]) -> Callable[..., Tensor]:
    def op(a: Any, *xs: Tensor) -> Tensor:
        out = xs[0]
        for x in xs[1:]:
            out = fn(out, x)
        return out if len(xs) > 1 else out.clone()

    return op


def mean(a: Any, *xs: Tensor) -> Tensor:
    return _variadic(ops.add)(a, *xs) / len(xs)


def clip(a: Any, x: Tensor, lo: Any = None, hi: Any = None) -> Tensor:
    if a.opset < 11:
        lo, hi = a.get("min"), a.get("max")
    lo = lo.item() if isinstance(lo, Tensor) else lo
    hi = hi.item() if isinstance(hi, Tensor) else hi
    if x.numel() == 0 or (lo is None and hi is None):
        return x.clone()
    return ops.clamp(x, lo, hi)


def isinf(a: Any, x: Tensor) -> Tensor:
    pos, neg = a.get("detect_positive", 1), a.get("detect_negative", 1)
    if pos and neg:
        return ops.isinf(x)
    return ops.isposinf(x) if pos else ops.isneginf(x) if neg else _creation.zeros_like(x, dtype=dt.bool_)


def bitshift(a: Any, x: Tensor, y: Tensor) -> Tensor:
    shift = ops.bitwise_left_shift if a["direction"] == "LEFT" else ops.bitwise_right_shift
    return shift(x, y.to(x.dtype))


def leaky_relu(a: Any, x: Tensor) -> Tensor:
    return F.leaky_relu(x, a.get("alpha", 0.01))


def elu(a: Any, x: Tensor) -> Tensor:
    return F.elu(x, a.get("alpha", 1.0))


def celu(a: Any, x: Tensor) -> Tensor:
    return F.celu(x, a.get("alpha", 1.0))


def selu(a: Any, x: Tensor) -> Tensor:
    alpha, gamma = a.get("alpha", 1.67326319217681884765625), a.get("gamma", 1.05070102214813232421875)
    return gamma * ops.where(x > 0, x, alpha * (ops.exp(x) - 1))


def hard_sigmoid(a: Any, x: Tensor) -> Tensor:
    return ops.clamp(a.get("alpha", 0.2) * x + a.get("beta", 0.5), 0, 1)


def thresholded_relu(a: Any, x: Tensor) -> Tensor:
    return ops.where(x > a.get("alpha", 1.0), x, _creation.zeros_like(x))


def shrink(a: Any, x: Tensor) -> Tensor:
    lambd, bias = a.get("lambd", 0.5), a.get("bias", 0.0)
    zero = _creation.zeros_like(x)
    out = ops.where(x < -lambd, x + bias, ops.where(x > lambd, x - bias, zero))
    return out.to(x.dtype)


def prelu(a: Any, x: Tensor, slope: Tensor) -> Tensor:
    return ops.where(x < 0, x * slope, x)


def gelu(a: Any, x: Tensor) -> Tensor:
    return F.gelu(x, approximate=a.get("approximate", "none"))


def swish(a: Any, x: Tensor) -> Tensor:
    return x * ops.sigmoid(a.get("alpha", 1.0) * x)


def _coerced(fn: Callable[[Tensor, int], Tensor]) -> Callable[..., Tensor]:
    """Softmax-like operators: before opset 13 the input is read as 2-d ``[prod(:axis), prod(axis:)]``."""

    def op(a: Any, x: Tensor) -> Tensor:
        if a.opset >= 13:
            return fn(x, a.get("axis", -1))
        axis = a.get("axis", 1) % max(x.ndim, 1)
        lead = 1
        for s in x.shape[:axis]:
            lead *= s
        return fn(x.reshape(lead, -1), 1).reshape(x.shape)

    return op


def _hardmax(x: Tensor, axis: int) -> Tensor:
    idx = ops.argmax(x, dim=axis, keepdim=True)
    return _creation.zeros_like(x).scatter(axis, idx, 1.0)


OPS: dict[str, Callable[..., Any]] = {
    "Abs": _unary(ops.abs), "Neg": _unary(ops.neg), "Sign": _unary(ops.sign), "Ceil": _unary(ops.ceil),
    "Floor": _unary(ops.floor), "Round": _unary(ops.round), "Reciprocal": _unary(ops.reciprocal),
    "Sqrt": _unary(ops.sqrt), "Exp": _unary(ops.exp), "Log": _unary(ops.log), "Erf": _unary(ops.erf),
    "Sin": _unary(ops.sin), "Cos": _unary(ops.cos), "Tan": _unary(ops.tan), "Asin": _unary(ops.asin),
    "Acos": _unary(ops.acos), "Atan": _unary(ops.atan), "Sinh": _unary(ops.sinh),
    "Cosh": _unary(ops.cosh), "Tanh": _unary(ops.tanh), "Asinh": _unary(ops.asinh),
    "Acosh": _unary(ops.acosh), "Atanh": _unary(ops.atanh), "IsNaN": _unary(ops.isnan), "IsInf": isinf,
    "Not": _unary(ops.logical_not), "BitwiseNot": _unary(ops.bitwise_not),
    "Add": _same_type(ops.add), "Sub": _same_type(ops.sub), "Mul": _same_type(ops.mul), "Div": div,
    "Mod": mod, "Pow": pow, "BitShift": bitshift,
    "And": _binary(ops.logical_and), "Or": _binary(ops.logical_or), "Xor": _binary(ops.logical_xor),
    "BitwiseAnd": _binary(ops.bitwise_and), "BitwiseOr": _binary(ops.bitwise_or),
    "BitwiseXor": _binary(ops.bitwise_xor),
    "Equal": _binary(ops.eq), "Greater": _binary(ops.gt), "Less": _binary(ops.lt),
    "GreaterOrEqual": _binary(ops.ge), "LessOrEqual": _binary(ops.le),
    "Max": _variadic(ops.maximum), "Min": _variadic(ops.minimum), "Sum": _variadic(ops.add), "Mean": mean,
    "Where": lambda a, c, x, y: ops.where(c, x, y), "Clip": clip,
    "Relu": _unary(ops.relu), "Sigmoid": _unary(ops.sigmoid), "LeakyRelu": leaky_relu, "Elu": elu,
    "Celu": celu, "Selu": selu, "HardSigmoid": hard_sigmoid, "HardSwish": _unary(F.hardswish),
    "Softplus": _unary(F.softplus), "Softsign": _unary(F.softsign), "Mish": _unary(F.mish),
    "ThresholdedRelu": thresholded_relu, "Shrink": shrink, "PRelu": prelu, "Gelu": gelu, "Swish": swish,
    "Softmax": _coerced(lambda x, d: F.softmax(x, d)), "LogSoftmax": _coerced(lambda x, d: F.log_softmax(x, d)),
    "Hardmax": _coerced(_hardmax),
}  # fmt: skip
