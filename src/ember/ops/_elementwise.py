"""Elementwise operators: each Op holds its forward (arrays) and backward (tensor ops) together."""

from __future__ import annotations

import builtins
import math
from typing import Any

from .._dtype import as_dtype, get_default_dtype
from .._errors import DivisionByZeroError, DTypeError, ShapeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._function import BilinearOp, Op
from ._util import broadcast_shapes, check_scalar, promote, sum_to, sum_to_array

__all__ = [
    "abs",
    "add",
    "bitwise_not",
    "clamp",
    "clip",
    "div",
    "divide",
    "eq",
    "exp",
    "floor",
    "floor_divide",
    "ge",
    "gt",
    "le",
    "log",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "lt",
    "maximum",
    "minimum",
    "mul",
    "multiply",
    "ne",
    "neg",
    "negative",
    "pow",
    "relu",
    "remainder",
    "sigmoid",
    "sign",
    "sqrt",
    "sub",
    "subtract",
    "tanh",
    "true_divide",
    "trunc",
    "where",
]
#: the functions that are also Tensor methods (``t.name(...)``)
METHODS = [
    "abs",
    "add",
    "bitwise_not",
    "clamp",
    "clip",
    "div",
    "divide",
    "eq",
    "exp",
    "floor",
    "floor_divide",
    "ge",
    "gt",
    "le",
    "log",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "lt",
    "maximum",
    "minimum",
    "mul",
    "multiply",
    "ne",
    "neg",
    "negative",
    "pow",
    "relu",
    "remainder",
    "sigmoid",
    "sign",
    "sqrt",
    "sub",
    "subtract",
    "tanh",
    "true_divide",
    "trunc",
    "where",
]


def _shape(x: Any) -> tuple[int, ...]:
    return x._data.shape if isinstance(x, Tensor) else ()


# -- arithmetic -----------------------------------------------------------------------------------
class Add(Op):
    saves_inputs = False

    def forward(self, a: Any, b: Any) -> Any:
        return self.backend.xp.add(a, b)

    # which inputs get a gradient: the edges recorded with the node (a later ``detach_()`` of an input
    # does not cut the graph already recorded, as in PyTorch)
    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        ea, eb = self._edges  # type: ignore[misc]
        return (None if ea is None else sum_to(g, a._data.shape), None if eb is None else sum_to(g, b._data.shape))

    def backward_arrays(self, g: Any) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        ea, eb = self._edges  # type: ignore[misc]
        ga = None if ea is None else g if g.shape == a._data.shape else sum_to_array(g, a._data.shape)
        return ga, (None if eb is None else g if g.shape == b._data.shape else sum_to_array(g, b._data.shape))


class Sub(Op):
    saves_inputs = False

    def forward(self, a: Any, b: Any) -> Any:
        return self.backend.xp.subtract(a, b)

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
    def forward(self, a: Any, b: Any) -> Any:
        return self.backend.xp.multiply(a, b)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        ea, eb = self._edges  # type: ignore[misc]
        return (None if ea is None else sum_to(g * b, _shape(a)), None if eb is None else sum_to(g * a, _shape(b)))

    def backward_arrays(self, g: Any) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        ea, eb = self._edges  # type: ignore[misc]
        ga = gb = None
        if ea is not None:  # a is a Tensor
            ga = g * (b._data if isinstance(b, Tensor) else b)
            if ga.shape != a._data.shape:
                ga = sum_to_array(ga, a._data.shape)
        if eb is not None:
            gb = g * (a._data if isinstance(a, Tensor) else a)
            if gb.shape != b._data.shape:
                gb = sum_to_array(gb, b._data.shape)
        return ga, gb


class Div(Op):
    def forward(self, a: Any, b: Any) -> Any:
        return self.backend.xp.true_divide(a, b)

    def value_needed(self, i: int) -> bool:
        return i == 1 or (self._edges is not None and self._edges[1] is not None)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        ea, eb = self._edges  # type: ignore[misc]
        ga = None if ea is None else sum_to(g / b, _shape(a))
        gb = None if eb is None else sum_to(-g * a / (b * b), _shape(b))
        return ga, gb

    def backward_arrays(self, g: Any) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        ea, eb = self._edges  # type: ignore[misc]
        av = a._data if isinstance(a, Tensor) else a
        bv = b._data if isinstance(b, Tensor) else b
        ga = None if ea is None else sum_to_array(g / bv, _shape(a))
        gb = None if eb is None else sum_to_array(-g * av / (bv * bv), _shape(b))
        return ga, gb


class Pow(Op):
    def forward(self, a: Any, b: Any) -> Any:
        xp = self.backend.xp
        y = xp.power(a, b)
        if isinstance(b, int) or (isinstance(b, float) and b.is_integer()):
            return y
        if not self.backend.dtype_of(y).is_floating_point:
            return y
        # PyTorch: (-inf) ** y is NaN for a non-integer y, where IEEE (and NumPy) give 0 or inf
        fb = xp.floor(b) if not isinstance(b, float) else math.floor(b)
        return xp.where((a == -math.inf) & (b != fb), math.nan, y)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        # PyTorch's rules at the edges: x**0 has a zero gradient in x (also at 0 and +-inf), and the
        # exponent's gradient is 0 where the base is 0 and the exponent >= 0; elsewhere x**y * log(x)
        # (NaN for a negative base, as in PyTorch).
        ga = gb = None
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


class Neg(Op):
    saves_inputs = False

    def forward(self, a: Any) -> Any:
        return self.backend.xp.negative(a)

    def backward(self, g: Tensor) -> Tensor:
        return -g

    def backward_arrays(self, g: Any) -> Any:
        return -g


class Maximum(Op):
    def forward(self, a: Any, b: Any) -> Any:
        return self.backend.xp.maximum(a, b)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        # ties share the gradient equally, as in PyTorch
        w = (a > b).to(g.dtype) + (a == b).to(g.dtype) * 0.5
        ga = sum_to(g * w, _shape(a)) if self._req(0) else None
        return ga, (sum_to(g * (1 - w), _shape(b)) if self._req(1) else None)


class Minimum(Op):
    def forward(self, a: Any, b: Any) -> Any:
        return self.backend.xp.minimum(a, b)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        w = (a < b).to(g.dtype) + (a == b).to(g.dtype) * 0.5
        ga = sum_to(g * w, _shape(a)) if self._req(0) else None
        return ga, (sum_to(g * (1 - w), _shape(b)) if self._req(1) else None)


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


class StepOp(Op):
    """A piecewise-constant operator: its gradient is zero (PyTorch still records a grad_fn)."""

    saves_inputs = False

    def backward(self, g: Tensor) -> Any:
        grads = tuple(x.new_zeros(x.shape) if self._req(i) else None for i, x in enumerate(self.inputs or ()))
        return grads if len(grads) > 1 else grads[0]


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


# Operators that divide integers by integers: a zero divisor raises, as in PyTorch (NumPy gives 0 and warns).
_INT_DIVISIONS = {"FloorDivide": "floor_divide", "Remainder": "remainder", "DivFloor": "div", "DivTrunc": "div",
                  "DivTruncInt": "div"}  # fmt: skip


def _check_int_divisor(name: str, a: Any, b: Any) -> None:
    """Raise when integer ``a // b`` or ``a % b`` (after promotion) has a zero in ``b``."""
    ref = a if isinstance(a, Tensor) else b
    if not isinstance(ref, Tensor) or ref.dtype.kind not in "biu":
        return
    if isinstance(b, Tensor):
        if b.dtype.kind in "biu" and bool(b._backend.xp.any(b._data == 0)):
            raise DivisionByZeroError(f"{name}: integer division by zero (the divisor tensor holds a 0)")
    elif isinstance(b, int) and b == 0:
        raise DivisionByZeroError(f"{name}: integer division by zero")


def _is_bool(x: Any) -> bool:
    return isinstance(x, bool) or (isinstance(x, Tensor) and x.dtype.kind == "b")


def _binary(cls: type[Op], a: Any, b: Any) -> Tensor:
    # fast path: a float tensor with a float scalar or a tensor of its dtype (no promotion, no integer
    # division to check)
    if not (
        a.__class__ is Tensor
        and a._data.dtype in a._backend.float_dtypes
        and (b.__class__ is float or (b.__class__ is Tensor and b._data.dtype == a._data.dtype))
    ):
        a, b = promote(cls.__name__.lower(), a, b)
        if cls.__name__ in _INT_DIVISIONS:
            _check_int_divisor(_INT_DIVISIONS[cls.__name__], a, b)
    try:
        return cls.apply(a, b)  # type: ignore[no-any-return]
    except (ValueError, RuntimeError) as e:  # NumPy: "cannot be broadcast"; torch: "must match the size"
        if not isinstance(e, ShapeError) and ("broadcast" in str(e) or "must match the size" in str(e)):
            raise ShapeError(
                f"{cls.__name__.lower()}: shapes {tuple(_shape(a))} and {tuple(_shape(b))} cannot be broadcast together"
            ) from None
        raise


def add(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``input + alpha * other`` (broadcasting, type promotion)."""
    return _binary(Add, input, other if alpha == 1 else mul(other, alpha))


def sub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``input - alpha * other``."""
    if _is_bool(input) and _is_bool(other):
        raise DTypeError("sub: subtracting two bool tensors is not supported; use ^ or logical_xor() for the "
                         "difference of masks, ~ or logical_not() to invert one")  # fmt: skip
    return _binary(Sub, input, other if alpha == 1 else mul(other, alpha))


subtract = sub


def mul(input: Any, other: Any) -> Tensor:
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
    return _binary(FloorDivide, input, other)


def remainder(input: Any, other: Any) -> Tensor:
    return _binary(Remainder, input, other)


def pow(input: Any, exponent: Any) -> Tensor:
    if isinstance(input, Tensor) and isinstance(exponent, int) and not isinstance(exponent, bool):
        if input.dtype.kind in "iu" and exponent < 0:
            raise ValueRangeError("pow: integers to negative integer powers are not allowed")
        return Pow.apply(input, exponent)  # type: ignore[no-any-return]
    return _binary(Pow, input, exponent)


def neg(input: Tensor) -> Tensor:
    if _is_bool(input):
        raise DTypeError("neg: negating a bool tensor is not supported; use ~ or logical_not() to invert a mask")
    return Neg.apply(input)  # type: ignore[no-any-return]


negative = neg


def maximum(input: Tensor, other: Tensor) -> Tensor:
    return _binary(Maximum, input, other)


def minimum(input: Tensor, other: Tensor) -> Tensor:
    return _binary(Minimum, input, other)


# -- unary ----------------------------------------------------------------------------------------
class Exp(Op):
    saves_inputs = False
    saves_output = True

    def forward(self, x: Any) -> Any:
        y = self.backend.xp.exp(x)
        self.keep(y)
        return y

    def backward(self, g: Tensor) -> Tensor:
        return g * self.output()

    def backward_arrays(self, g: Any) -> Any:
        return g * self.out_array()


class Log(Op):
    def forward(self, x: Any) -> Any:
        return self.backend.xp.log(x)

    def backward(self, g: Tensor) -> Tensor:
        return g / self.inputs[0]  # type: ignore[index]

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
        return g / (2 * self.output())


class Abs(Op):
    def forward(self, x: Any) -> Any:
        return self.backend.xp.abs(x)

    def backward(self, g: Tensor) -> Tensor:
        return g * sign(self.inputs[0])  # type: ignore[index]


class Sign(StepOp):
    def forward(self, x: Any) -> Any:
        xp = self.backend.xp
        y = xp.sign(x)
        return xp.where(y != y, 0, y) if self.backend.dtype_of(y).is_floating_point else y  # sign(NaN) = 0


class Tanh(Op):
    saves_inputs = False
    saves_output = True

    def forward(self, x: Any) -> Any:
        y = self.backend.xp.tanh(x)
        self.keep(y)
        return y

    def backward(self, g: Tensor) -> Tensor:
        y = self.output()
        return g * (1 - y * y)

    def backward_arrays(self, g: Any) -> Any:
        y = self.out_array()
        return g * (1 - y * y)


class Sigmoid(Op):
    saves_inputs = False
    saves_output = True

    def forward(self, x: Any) -> Any:
        xp = self.backend.xp
        y = xp.exp(-xp.logaddexp(0, -x))  # finite for any |x|
        self.keep(y)
        return y

    def backward(self, g: Tensor) -> Tensor:
        y = self.output()
        return g * y * (1 - y)

    def backward_arrays(self, g: Any) -> Any:
        y = self.out_array()
        return g * y * (1 - y)


class Relu(Op):
    saves_inputs = False
    saves_output = True

    def forward(self, x: Any) -> Any:
        y = self.backend.xp.maximum(x, 0)
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
    return Exp.apply(_float(input))  # type: ignore[no-any-return]


def log(input: Tensor) -> Tensor:
    return Log.apply(_float(input))  # type: ignore[no-any-return]


def sqrt(input: Tensor) -> Tensor:
    return Sqrt.apply(_float(input))  # type: ignore[no-any-return]


def abs(input: Tensor) -> Tensor:
    return Abs.apply(input)  # type: ignore[no-any-return]


def sign(input: Tensor) -> Tensor:
    return Sign.apply(input)  # type: ignore[no-any-return]


def tanh(input: Tensor) -> Tensor:
    return Tanh.apply(_float(input))  # type: ignore[no-any-return]


def sigmoid(input: Tensor) -> Tensor:
    return Sigmoid.apply(_float(input))  # type: ignore[no-any-return]


def relu(input: Tensor) -> Tensor:
    return Relu.apply(input)  # type: ignore[no-any-return]


def floor(input: Tensor) -> Tensor:
    return Floor.apply(input)  # type: ignore[no-any-return]


def trunc(input: Tensor) -> Tensor:
    return Trunc.apply(input)  # type: ignore[no-any-return]


def _float(x: Tensor) -> Tensor:
    """Integer and bool tensors enter floating functions as the default float (PyTorch)."""
    if x.__class__ is Tensor and x._data.dtype in x._backend.float_dtypes:
        return x
    if not isinstance(x, Tensor):
        raise TypeError(f"expected a Tensor, got {type(x).__name__}")
    return x if x.dtype.kind in "fc" else x.to(get_default_dtype())


# -- selection ------------------------------------------------------------------------------------
class Where(Op):
    saves_inputs = False

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
        from ._index import nonzero

        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor):
        raise TypeError(f"where: condition must be a bool Tensor, got {type(condition).__name__}")
    if condition.dtype.name != "bool":
        condition = condition.bool()
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


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """Limit values to ``[min, max]``; bounds may be numbers or tensors."""
    if min is None and max is None:
        raise ValueRangeError("clamp: at least one of min and max must be given")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = input
        if min is not None:
            out = maximum(out, min)
        if max is not None:
            out = minimum(out, max)
        return out
    if input.dtype.kind != "f" and any(isinstance(v, float) for v in (min, max)):
        input = input.to(get_default_dtype())
    return Clamp.apply(input, min, max)  # type: ignore[no-any-return]


clip = clamp


# -- comparison and logic (no gradient) -----------------------------------------------------------
def _compare(ufunc: str) -> type[Op]:
    class Compare(Op):
        differentiable = False

        def forward(self, a: Any, b: Any) -> Any:
            return getattr(self.backend.xp, ufunc)(a, b)

    Compare.__name__ = Compare.__qualname__ = ufunc.title().replace("_", "")
    return Compare


Eq, Ne, Lt, Le, Gt, Ge = (_compare(n) for n in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"))
LogicalAnd, LogicalOr, LogicalXor = (_compare(n) for n in ("logical_and", "logical_or", "logical_xor"))


def _cmp(cls: type[Op], a: Any, b: Any) -> Tensor:
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{cls.__name__.lower()}: expected at least one Tensor")
    return _binary(cls, a, b)


def eq(input: Any, other: Any) -> Tensor:
    return _cmp(Eq, input, other)


def ne(input: Any, other: Any) -> Tensor:
    return _cmp(Ne, input, other)


def lt(input: Any, other: Any) -> Tensor:
    return _cmp(Lt, input, other)


def le(input: Any, other: Any) -> Tensor:
    return _cmp(Le, input, other)


def gt(input: Any, other: Any) -> Tensor:
    return _cmp(Gt, input, other)


def ge(input: Any, other: Any) -> Tensor:
    return _cmp(Ge, input, other)


def logical_and(input: Any, other: Any) -> Tensor:
    return _cmp(LogicalAnd, input, other)


def logical_or(input: Any, other: Any) -> Tensor:
    return _cmp(LogicalOr, input, other)


def logical_xor(input: Any, other: Any) -> Tensor:
    return _cmp(LogicalXor, input, other)


class LogicalNot(Op):
    differentiable = False

    def forward(self, a: Any) -> Any:
        return self.backend.xp.logical_not(a)


class BitwiseNot(Op):
    differentiable = False

    def forward(self, a: Any) -> Any:
        return self.backend.xp.invert(a)


def logical_not(input: Tensor) -> Tensor:
    return LogicalNot.apply(input)  # type: ignore[no-any-return]


def bitwise_not(input: Tensor) -> Tensor:
    if input.dtype.kind == "f":
        raise DTypeError(f"bitwise_not: expected an integer or bool tensor, got {input.dtype}")
    return BitwiseNot.apply(input)  # type: ignore[no-any-return]


# -- dtype, device, copies ------------------------------------------------------------------------
class Cast(Op):
    saves_inputs = False

    def forward(self, x: Any, dtype: Any) -> Any:
        return self.backend.astype(x, dtype)

    def backward(self, g: Tensor) -> tuple[Any, None]:
        return _cast(g, self.inputs[0].dtype), None  # type: ignore[index]


class Clone(Op):
    saves_inputs = False

    def forward(self, x: Any) -> Any:
        return self.backend.xp.array(x, copy=True)

    def backward(self, g: Tensor) -> Tensor:
        return g


class ToDevice(Op):
    """A copy on another device or backend; the gradient moves back."""

    saves_inputs = False

    def forward(self, x: Any, target: Any, non_blocking: bool = False) -> Any:
        out = self.backend.transfer(x, target, non_blocking)
        self.backend = target  # the result lives on the target device
        return out

    def backward(self, g: Tensor) -> tuple[Any, None, None]:
        return _to_device(g, self.inputs[0]._backend), None, None  # type: ignore[index]


def _cast(x: Tensor, dtype: Any) -> Tensor:
    d = as_dtype(dtype)
    if x.dtype is d:
        return x
    out: Tensor = Cast.apply(x, d)
    return out


def _clone(x: Tensor) -> Tensor:
    return Clone.apply(x)  # type: ignore[no-any-return]


def _to_device(x: Tensor, dev: Any, non_blocking: bool = False) -> Tensor:
    from ..backends import get_backend

    target = get_backend(dev)
    if target is x._backend:
        return x
    return ToDevice.apply(x, target, non_blocking)  # type: ignore[no-any-return]


def _pin(x: Tensor) -> Tensor:
    """``x`` in pinned host memory (a copy; the gradient passes through)."""
    out: Tensor = Pin.apply(x)
    return out


class Pin(Op):
    saves_inputs = False

    def forward(self, x: Any) -> Any:
        return self.backend.pin_memory(x)

    def backward(self, g: Tensor) -> Tensor:
        return g


def _isfinite_scalar(v: float) -> bool:
    return math.isfinite(v)


_ = builtins
