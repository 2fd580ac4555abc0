"""Pointwise operators of two operands (torch docs, "Pointwise Ops"): arithmetic, powers, and their kin."""

from __future__ import annotations

import cmath
import math
from typing import Any

from .._dtype import complex128, float64, get_default_dtype
from .._errors import DTypeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._autocast import autocast_op
from ..autograd._bf16 import rounds_once
from ..autograd._function import BilinearOp, Op
from ._indexing import where
from ._indexing_view import sum_to
from ._pointwise_alpha import scaled
from ._pointwise_complex import cj
from ._pointwise_unary import exp, exp2, floor, log
from ._util import NUMBERS, StepOp, _binary, _float, _is_bool, _shape, int_power, promote, real_only, sum_to_array

__all__ = [
    "add", "addcdiv", "addcmul", "arctan2", "atan2", "copysign", "div", "divide", "float_power", "floor_divide",
    "fmod", "hypot", "ldexp", "lerp", "logaddexp", "logaddexp2", "mul", "multiply", "pow", "remainder", "rsub", "sub",
    "subtract", "true_divide",
]  # fmt: skip
METHODS = [n for n in __all__ if n not in {"rsub"}]


# -- arithmetic -----------------------------------------------------------------------------------
def _kept(be: Any, a: Any, b: Any) -> tuple[Any, Any]:
    """A Python number beside an array as the backend's faster operand (NumPy: a 0-d array of the array's dtype,
    made once: ``Backend.keep_number``; called where the backend has one: torch's ``xp`` keeps numbers itself)."""
    return (a, be.keep_number(a, b)) if b.__class__ in NUMBERS else (be.keep_number(b, a), b)


class Add(Op):
    shaped_grads = True  # (``Node.shaped_grads``: a broadcast gradient reduced by ``sum_to_array``)
    saves_inputs = False
    bf16_numbers = True  # (a bfloat16 tensor's number operand is rounded to bfloat16 first, as in PyTorch)

    def forward(self, a: Any, b: Any) -> Any:
        be = self.backend
        if be.keep_number is not None and (b.__class__ in NUMBERS or a.__class__ in NUMBERS):
            a, b = _kept(be, a, b)
        return be.xp.add(a, b)

    # which inputs get a gradient: the edges recorded with the node (a later ``detach_()`` of an input
    # does not cut the graph already recorded, as in PyTorch)
    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        ea, eb = self._edges  # type: ignore[misc]
        return (None if ea is None else sum_to(g, a._data.shape), None if eb is None else sum_to(g, b._data.shape))

    def backward_arrays(self, g: Any) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        ea, eb = self._edges  # type: ignore[misc]
        if b.__class__ in NUMBERS or a.__class__ in NUMBERS:  # nothing broadcast: ``g`` has the tensor's shape
            return (g, None) if eb is None else (None, g)  # (g has the output's shape, the tensor's: shaped_grads)
        ga = None if ea is None else g if g.shape == a._data.shape else sum_to_array(g, a._data.shape)
        return ga, (None if eb is None else g if g.shape == b._data.shape else sum_to_array(g, b._data.shape))


class Sub(Op):
    shaped_grads = True  # (``Node.shaped_grads``: a broadcast gradient reduced by ``sum_to_array``)
    saves_inputs = False
    bf16_numbers = True  # (a bfloat16 tensor's number operand is rounded to bfloat16 first, as in PyTorch)

    def forward(self, a: Any, b: Any) -> Any:
        be = self.backend
        if be.keep_number is not None and (b.__class__ in NUMBERS or a.__class__ in NUMBERS):
            a, b = _kept(be, a, b)
        return be.xp.subtract(a, b)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        ea, eb = self._edges  # type: ignore[misc]
        return (None if ea is None else sum_to(g, a._data.shape), None if eb is None else sum_to(-g, b._data.shape))

    def backward_arrays(self, g: Any) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        ea, eb = self._edges  # type: ignore[misc]
        ga = None if ea is None else g if g.shape == a._data.shape else sum_to_array(g, a._data.shape)
        return ga, (None if eb is None else sum_to_array(-g, b._data.shape))


class Mul(BilinearOp):
    shaped_grads = True  # (``Node.shaped_grads``: a broadcast gradient reduced by ``sum_to_array``)

    def forward(self, a: Any, b: Any) -> Any:
        be = self.backend
        if be.keep_number is not None and (b.__class__ in NUMBERS or a.__class__ in NUMBERS):
            a, b = _kept(be, a, b)
        return be.xp.multiply(a, b)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        ea, eb = self._edges  # type: ignore[misc]
        return (
            None if ea is None else sum_to(g * cj(b), _shape(a)),
            None if eb is None else sum_to(g * cj(a), _shape(b)),
        )

    def backward_arrays(self, g: Any) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        ea, eb = self._edges  # type: ignore[misc]
        ga = gb = None
        be, kn = self.backend, self.backend.keep_number  # a number: as kn's operand where there is one (as forward)
        if ea is not None:  # a is a Tensor; a number ``b`` broadcasts nothing: ``g * b`` has ``a``'s shape
            if b.__class__ in NUMBERS:
                ga = be.xp.multiply(g, kn(g, b) if kn else b)
            elif (ga := g * b._data if isinstance(b, Tensor) else be.xp.multiply(g, b)).shape != a._data.shape:
                ga = sum_to_array(ga, a._data.shape)
        if eb is not None:
            if a.__class__ in NUMBERS:
                gb = be.xp.multiply(g, kn(g, a) if kn else a)
            elif (gb := g * a._data if isinstance(a, Tensor) else be.xp.multiply(g, a)).shape != b._data.shape:
                gb = sum_to_array(gb, b._data.shape)
        return ga, gb


class Div(Op):
    shaped_grads = True  # (``Node.shaped_grads``: a broadcast gradient reduced by ``sum_to_array``)

    def forward(self, a: Any, b: Any) -> Any:
        be = self.backend
        if be.keep_number is not None and (b.__class__ in NUMBERS or a.__class__ in NUMBERS):
            a, b = _kept(be, a, b)
        return be.xp.true_divide(a, b)

    def value_needed(self, i: int) -> bool:
        return i == 1 or (self._edges is not None and self._edges[1] is not None)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        ea, eb = self._edges  # type: ignore[misc]
        ga = None if ea is None else sum_to(g / cj(b), _shape(a))
        gb = None if eb is None else sum_to(-g * cj(a / (b * b)), _shape(b))
        return ga, gb

    def backward_arrays(self, g: Any) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        ea, eb = self._edges  # type: ignore[misc]
        av = a._data if isinstance(a, Tensor) else a
        bv = b._data if isinstance(b, Tensor) else b
        be = self.backend
        gd = be.keep_number(g, bv) if bv.__class__ in NUMBERS and be.keep_number is not None else bv
        ga = None if ea is None else sum_to_array(be.xp.true_divide(g, gd), _shape(a))
        gb = None if eb is None else sum_to_array(-g * av / (bv * bv), _shape(b))
        return ga, gb


class Pow(Op):
    def forward(self, a: Any, b: Any) -> Any:
        xp = self.backend.xp
        if isinstance(b, float) and b in (0.5, -0.5) and self.backend.dtype_of(a).is_floating_point:
            # PyTorch computes x ** 0.5 as sqrt and x ** -0.5 as rsqrt: (-inf) ** 0.5 is NaN there, not IEEE's
            # inf (a tensor exponent of 0.5 follows IEEE pow, as below)
            r = xp.sqrt(a)
            return r if b > 0 else 1 / r
        return xp.power(a, b) if (r := int_power(self.backend, a, b)) is None else r  # IEEE pow: (-inf)**0.3 = inf

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        # PyTorch's rules at the edges: x**0 has a zero gradient in x (also at 0 and +-inf), and the
        # exponent's gradient is 0 where the base is 0 and the exponent >= 0; elsewhere x**y * log(x)
        # (NaN for a negative base, as in PyTorch).
        ga = gb = None
        cplx = any(isinstance(v, complex) or (isinstance(v, Tensor) and v.dtype.is_complex) for v in (a, b))
        if cplx:
            return self._complex_backward(g, a, b)
        if self._req(0):
            if isinstance(b, (int, float)):
                ga = a.new_zeros(a.shape) if b == 0 else g * 2 * a if b == 2 else g * b * pow(a, b - 1)
            else:
                ga = sum_to(where(b == 0, 0.0, g * b * pow(a, b - 1)), _shape(a))
        if self._req(1):
            if isinstance(a, Tensor):
                d = where((a == 0) & (b >= 0), 0.0, pow(a, b) * log(a))
            elif a == 0:
                d = where(b >= 0, 0.0, pow(a, b) * -math.inf)
            else:
                d = pow(a, b) * (math.log(a) if a > 0 else math.nan)
            gb = sum_to(g * d, _shape(b))
        return ga, gb

    def _complex_backward(self, g: Tensor, a: Any, b: Any) -> tuple[Any, Any]:
        """PyTorch's complex rules: ``g conj(b a^(b-1))`` (0 where b == 0), ``g conj(a^b log a)`` (0 where a == 0)."""
        ga = gb = None
        if self._req(0):
            if isinstance(b, Tensor):
                ga = sum_to(where(b == 0, 0.0, g * cj(b * pow(a, b - 1))), _shape(a))
            else:
                ga = a.new_zeros(a.shape) if b == 0 else g * cj(b * pow(a, b - 1))
        if self._req(1):
            if isinstance(a, Tensor):
                d = where(a == 0, 0.0, cj(pow(a, b) * log(a)))
            else:
                d = 0.0 * b if a == 0 else cj(pow(a, b) * cmath.log(a))
            gb = sum_to(g * d, _shape(b))
        return ga, gb


class Remainder(Op):
    def forward(self, a: Any, b: Any) -> Any:
        return self.backend.xp.remainder(a, b)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        ga = sum_to(g, _shape(a)) if self._req(0) else None
        gb = sum_to(-g * floor(a / b), _shape(b)) if self._req(1) else None
        return ga, gb


class FloorDivide(Op):
    differentiable = False  # PyTorch defines no gradient for floor_divide

    def forward(self, a: Any, b: Any) -> Any:
        return self.backend.xp.floor_divide(a, b)


class DivFloor(StepOp):
    def forward(self, a: Any, b: Any) -> Any:
        return self.backend.xp.floor_divide(a, b)


class DivTrunc(StepOp):
    def forward(self, a: Any, b: Any) -> Any:
        return self.backend.xp.trunc(self.backend.xp.true_divide(a, b))


class DivTruncInt(StepOp):
    def forward(self, a: Any, b: Any) -> Any:
        xp = self.backend.xp  # no integer trunc-division ufunc: |a| // |b| with the quotient's sign
        return xp.sign(a) * xp.sign(b) * xp.floor_divide(xp.abs(a), xp.abs(b))


def add(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``input + alpha * other`` (broadcasting, type promotion)."""
    if alpha.__class__ is int and alpha == 1:  # (the default; any other alpha is checked as PyTorch checks it)
        return _binary(Add, input, other)
    return scaled(Add, Mul, input, other, alpha)


def sub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``input - alpha * other``."""
    if _is_bool(input) and _is_bool(other):
        raise DTypeError("sub: subtracting two bool tensors is not supported; use ^ or logical_xor() for the "
                         "difference of masks, ~ or logical_not() to invert one")  # fmt: skip
    if alpha.__class__ is int and alpha == 1:  # (the default; any other alpha is checked as PyTorch checks it)
        return _binary(Sub, input, other)
    return scaled(Sub, Mul, input, other, alpha)


subtract = sub


def mul(input: Any, other: Any) -> Tensor:
    """Element-wise product (broadcast). Also ``multiply``."""
    return _binary(Mul, input, other)


multiply = mul


def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """True division (int / int gives the default float); ``rounding_mode`` 'trunc' or 'floor'."""
    a, b = input, other
    if rounding_mode is None:
        at = a if isinstance(a, Tensor) else None
        bt = b if isinstance(b, Tensor) else None
        ints = [t for t in (at, bt) if t is not None]
        if all(t.dtype.kind in "biu" for t in ints) and not any(isinstance(x, float) for x in (a, b)):
            d = get_default_dtype()
            a = a.to(d) if isinstance(a, Tensor) else a
            b = b.to(d) if isinstance(b, Tensor) else b
        return _binary(Div, a, b)
    if rounding_mode == "floor":  # integers stay integers; the gradient is zero
        return _binary(DivFloor, a, b)
    if rounding_mode == "trunc":
        a, b = promote("div", a, b)
        integer = (a if isinstance(a, Tensor) else b).dtype.kind in "biu"
        return _binary(DivTruncInt if integer else DivTrunc, a, b)
    raise ValueRangeError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")


divide = true_divide = div


def floor_divide(input: Any, other: Any) -> Tensor:
    """Element-wise division rounded down (``input // other``)."""
    return _binary(FloorDivide, input, other)


def remainder(input: Any, other: Any) -> Tensor:
    """Element-wise remainder with the sign of the divisor (Python's ``%``)."""
    return _binary(Remainder, input, other)


def pow(input: Any, exponent: Any) -> Tensor:
    """Element-wise ``input ** exponent`` (broadcast)."""
    if isinstance(input, Tensor) and isinstance(exponent, int) and not isinstance(exponent, bool):
        if input.dtype.kind in "iu" and exponent < 0:
            raise ValueRangeError("pow: integers to negative integer powers are not allowed")
        return Pow.apply(input, exponent)
    return _binary(Pow, input, exponent)


_LN2 = math.log(2.0)


def _floats(op: str, a: Any, b: Any) -> tuple[Any, Any]:
    """Integer/bool tensors enter as the default float (PyTorch's rule for floating functions)."""
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{op}: expected at least one Tensor")
    a = _float(a) if isinstance(a, Tensor) else a
    b = _float(b) if isinstance(b, Tensor) else b
    return a, b


def _integers(op: str, a: Any, b: Any) -> None:
    for x in (a, b):
        if isinstance(x, Tensor) and x.dtype.kind not in "iub":
            raise DTypeError(f"{op}: expected integer tensors, got {x.dtype}")
        if isinstance(x, float):
            raise DTypeError(f"{op}: expected integers, got the float {x}")


# -- binary, differentiable -------------------------------------------------------------------------
class Copysign(Op):
    def forward(self, a: Any, b: Any) -> Any:
        return self.backend.xp.copysign(a, b)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        ga = gb = None
        if self._req(0):  # d|a|sign(b)/da = sign(a) sign(b); 0 at a == 0 (PyTorch)
            ratio = where(a == 0, 0.0, copysign(a, b) / a)
            ga = sum_to(g * ratio, _shape(a))
        if self._req(1):
            gb = b.new_zeros(b.shape)
        return ga, gb


def copysign(input: Any, other: Any) -> Tensor:
    """``|input|`` with the sign of ``other`` (integers give the default float)."""
    return _binary(Copysign, *_floats("copysign", input, other))


class Fmod(Op):
    def forward(self, a: Any, b: Any) -> Any:
        return self.backend.xp.fmod(a, b)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        ga = sum_to(g, _shape(a)) if self._req(0) else None
        gb = sum_to(-g * div(a, b, rounding_mode="trunc"), _shape(b)) if self._req(1) else None
        return ga, gb


def fmod(input: Any, other: Any) -> Tensor:
    """C's remainder: ``input - trunc(input / other) * other`` (the sign of ``input``; ``%`` follows ``other``)."""
    return _binary(Fmod, input, other)


class Logaddexp(Op):
    def forward(self, a: Any, b: Any) -> Any:
        return self.backend.xp.logaddexp(a, b)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        ga = sum_to(g / (1 + exp(b - a)), _shape(a)) if self._req(0) else None
        gb = sum_to(g / (1 + exp(a - b)), _shape(b)) if self._req(1) else None
        return ga, gb


def logaddexp(input: Any, other: Any) -> Tensor:
    """``log(exp(input) + exp(other))`` without overflow."""
    a, b = _floats("logaddexp", input, other)
    if any(isinstance(v, complex) or (isinstance(v, Tensor) and v.dtype.is_complex) for v in (a, b)):
        a, b = promote("logaddexp", a, b)  # complex: shift by the operand of larger real part
        big = where(_real(a) >= _real(b), a, b)
        return big + log(exp(a - big) + exp(b - big))
    return _binary(Logaddexp, a, b)


def _real(x: Any) -> Any:
    from ._pointwise_complex import real

    return real(x) if isinstance(x, Tensor) else x.real


class Logaddexp2(Op):
    def forward(self, a: Any, b: Any) -> Any:
        return self.backend.xp.logaddexp2(a, b)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        ga = sum_to(g / (1 + exp2(b - a)), _shape(a)) if self._req(0) else None
        gb = sum_to(g / (1 + exp2(a - b)), _shape(b)) if self._req(1) else None
        return ga, gb


def logaddexp2(input: Any, other: Any) -> Tensor:
    """``log2(2**input + 2**other)`` without overflow."""
    return _binary(Logaddexp2, *_floats("logaddexp2", input, other))


class Hypot(Op):
    saves_output = True

    def forward(self, a: Any, b: Any) -> Any:
        y = self.backend.xp.hypot(a, b)
        self.keep(y)
        return y

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        y = self.output()
        ga = sum_to(g * a / y, _shape(a)) if self._req(0) else None
        gb = sum_to(g * b / y, _shape(b)) if self._req(1) else None
        return ga, gb


def hypot(input: Any, other: Any) -> Tensor:
    """``sqrt(input**2 + other**2)`` without overflow."""
    return _binary(Hypot, *_floats("hypot", input, other))


def float_power(input: Any, exponent: Any) -> Tensor:
    """``input ** exponent`` computed in float64 (complex128 when either is complex)."""
    cplx = any(isinstance(v, complex) or (isinstance(v, Tensor) and v.dtype.is_complex) for v in (input, exponent))
    d, py = (complex128, complex) if cplx else (float64, float)
    a = input.to(d) if isinstance(input, Tensor) else py(input)
    b = exponent.to(d) if isinstance(exponent, Tensor) else py(exponent)
    return pow(a, b)


def ldexp(input: Any, other: Any) -> Tensor:
    """``input * 2**other``."""
    x = _float(input) if isinstance(input, Tensor) else input
    return mul(x, pow(2.0, _float(other) if isinstance(other, Tensor) else float(other)))


def rsub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``other - alpha * input``."""
    return sub(other, input, alpha=alpha)


class Atan2(Op):
    def forward(self, a: Any, b: Any) -> Any:
        return self.backend.xp.arctan2(a, b)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        d = a * a + b * b
        d = where(d == 0, math.inf, d)  # PyTorch: a zero gradient at (0, 0) (and where a*a + b*b underflows)
        ga = sum_to(g * b / d, a.shape) if self._req(0) else None
        gb = sum_to(-g * a / d, b.shape) if self._req(1) else None
        return ga, gb


def atan2(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise angle of ``(other, input)`` (``arctan2(input, other)``)."""
    a, b = promote("atan2", input, other)
    real_only("atan2", a, b)
    if isinstance(a, Tensor) and a.dtype.kind not in "fc":
        a = _float(a)
        b = b.to(a.dtype) if isinstance(b, Tensor) else b
    return _binary(Atan2, a, b)  # (its broadcasting errors named)


arctan2 = atan2


def lerp(input: Tensor, end: Any, weight: Any) -> Tensor:
    """``input + weight * (end - input)``; tensor ``end`` and ``weight`` must have ``input``'s dtype (as in PyTorch)."""
    for name, t in (("end", end), ("weight", weight)):
        if isinstance(t, Tensor) and t.dtype is not input.dtype:
            raise DTypeError(f"lerp: expected dtype {input.dtype} for `{name}` but got dtype {t.dtype}")
    return _lerp(input, end, weight)


@rounds_once()
def _lerp(input: Tensor, end: Any, weight: Any) -> Tensor:
    return input + weight * (end - input)


@autocast_op("addcmul")
@rounds_once()
def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    """``input + value * tensor1 * tensor2``."""
    return input + value * (tensor1 * tensor2)


@autocast_op("addcdiv")
@rounds_once()
def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    """``input + value * tensor1 / tensor2``."""
    return input + value * (tensor1 / tensor2)
