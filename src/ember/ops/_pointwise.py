"""More elementwise operators (PyTorch's pointwise family): copysign, fmod, logaddexp, logaddexp2, hypot,
xlogy, float_power, fmax, fmin, heaviside, ldexp, gcd, lcm, nextafter, sinc, deg2rad, rad2deg, and the
NumPy-style aliases PyTorch also offers (arccos, absolute, fix, sgn, greater, ...).

One Op per differentiable operator: forward on arrays, backward on Tensors (so higher orders work),
with PyTorch's conventions at the edges noted beside each rule.
"""

from __future__ import annotations

import math
from typing import Any

from .._dtype import float64
from .._errors import DTypeError
from .._tensor import Tensor
from ..autograd._function import Op
from . import _elementwise as E
from . import _math as M
from ._elementwise import _binary, _float, _shape, exp, where
from ._util import sum_to

__all__ = [
    "absolute", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "clamp_max", "clamp_min",
    "copysign", "deg2rad", "fix", "float_power", "fmax", "fmin", "fmod", "gcd", "greater", "greater_equal",
    "heaviside", "hypot", "lcm", "ldexp", "less", "less_equal", "logaddexp", "logaddexp2", "nextafter", "not_equal",
    "positive", "rad2deg", "rsub", "sgn", "sinc", "xlogy",
]  # fmt: skip
METHODS = [n for n in __all__ if n != "rsub"]

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
        gb = sum_to(-g * E.div(a, b, rounding_mode="trunc"), _shape(b)) if self._req(1) else None
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
    return _binary(Logaddexp, *_floats("logaddexp", input, other))


class Logaddexp2(Op):
    def forward(self, a: Any, b: Any) -> Any:
        return self.backend.xp.logaddexp2(a, b)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        ga = sum_to(g / (1 + M.exp2(b - a)), _shape(a)) if self._req(0) else None
        gb = sum_to(g / (1 + M.exp2(a - b)), _shape(b)) if self._req(1) else None
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


class Xlogy(Op):
    def forward(self, x: Any, y: Any) -> Any:
        xp = self.backend.xp
        out = x * xp.log(y)
        return xp.where((x == 0) & ~xp.isnan(y), 0.0, out)  # 0 * log(0) = 0; NaN in y stays NaN

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        x, y = self.inputs  # type: ignore[misc]
        gx = gy = None
        if self._req(0):  # log(y), and 0 where x == 0 and y <= 0 (PyTorch)
            gx = sum_to(where((x == 0) & (y <= 0), 0.0, xlogy(g, y)), _shape(x))
        if self._req(1):
            gy = sum_to(g * x / y, _shape(y))
        return gx, gy


def xlogy(input: Any, other: Any) -> Tensor:
    """``input * log(other)``, and 0 where ``input`` is 0."""
    return _binary(Xlogy, *_floats("xlogy", input, other))


def float_power(input: Any, exponent: Any) -> Tensor:
    """``input ** exponent`` computed in float64."""
    a = input.to(float64) if isinstance(input, Tensor) else float(input)
    b = exponent.to(float64) if isinstance(exponent, Tensor) else float(exponent)
    return E.pow(a, b)


class _FMaxMin(Op):
    use_min = False

    def forward(self, a: Any, b: Any) -> Any:
        xp = self.backend.xp
        return xp.fmin(a, b) if self.use_min else xp.fmax(a, b)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        # the gradient goes to the chosen element: ``a`` on ties or when ``b`` is NaN (PyTorch)
        a, b = self.inputs  # type: ignore[misc]
        b_nan = E.ne(b, b) if isinstance(b, Tensor) else math.isnan(b)
        pick_a = ((a <= b) if self.use_min else (a >= b)) | b_nan
        ga = sum_to(where(pick_a, g, 0.0), _shape(a)) if self._req(0) else None
        gb = sum_to(where(pick_a, 0.0, g), _shape(b)) if self._req(1) else None
        return ga, gb


class Fmax(_FMaxMin):
    pass


class Fmin(_FMaxMin):
    use_min = True


def fmax(input: Any, other: Any) -> Tensor:
    """Elementwise maximum that ignores NaN (NaN only where both are NaN)."""
    return _binary(Fmax, input, other)


def fmin(input: Any, other: Any) -> Tensor:
    """Elementwise minimum that ignores NaN (NaN only where both are NaN)."""
    return _binary(Fmin, input, other)


def ldexp(input: Any, other: Any) -> Tensor:
    """``input * 2**other``."""
    x = _float(input) if isinstance(input, Tensor) else input
    return E.mul(x, E.pow(2.0, _float(other) if isinstance(other, Tensor) else float(other)))


def clamp_min(input: Tensor, min: Any) -> Tensor:
    """``clamp(input, min=min)``."""
    return E.clamp(input, min=min)


def clamp_max(input: Tensor, max: Any) -> Tensor:
    """``clamp(input, max=max)``."""
    return E.clamp(input, max=max)


def rsub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``other - alpha * input``."""
    return E.sub(other, input, alpha=alpha)


# -- binary, no gradient ----------------------------------------------------------------------------
def _nodiff(name: str, ufunc: str) -> type[Op]:
    class _Op(Op):
        differentiable = False

        def forward(self, a: Any, b: Any) -> Any:
            return getattr(self.backend.xp, ufunc)(a, b)

    _Op.__name__ = _Op.__qualname__ = name
    return _Op


Heaviside, Gcd, Lcm, Nextafter = (
    _nodiff(n, f) for n, f in (("Heaviside", "heaviside"), ("Gcd", "gcd"), ("Lcm", "lcm"), ("Nextafter", "nextafter"))
)


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """0 where ``input < 0``, 1 where ``input > 0``, ``values`` where ``input == 0``."""
    if not isinstance(values, Tensor):
        raise TypeError(f"heaviside: values must be a Tensor, got {type(values).__name__}")
    if input.dtype is not values.dtype:
        raise DTypeError(f"heaviside: input ({input.dtype}) and values ({values.dtype}) must have the same dtype")
    return _binary(Heaviside, input, values)


def gcd(input: Any, other: Any) -> Tensor:
    """Greatest common divisor of integer tensors."""
    _integers("gcd", input, other)
    return _binary(Gcd, input, other)


def lcm(input: Any, other: Any) -> Tensor:
    """Least common multiple of integer tensors."""
    _integers("lcm", input, other)
    return _binary(Lcm, input, other)


def nextafter(input: Tensor, other: Tensor) -> Tensor:
    """The next floating-point value after ``input`` towards ``other``."""
    return _binary(Nextafter, input, other)


# -- unary ------------------------------------------------------------------------------------------
class Sinc(Op):
    def forward(self, x: Any) -> Any:
        xp = self.backend.xp
        px = x * math.pi
        return xp.where(x == 0, 1.0, xp.sin(px) / xp.where(x == 0, 1.0, px))

    def backward(self, g: Tensor) -> Tensor:
        x = self.inputs[0]  # type: ignore[index]
        px = x * math.pi
        d = (px * M.cos(px) - M.sin(px)) / (px * x)
        return g * where(x == 0, 0.0, d)


def sinc(input: Tensor) -> Tensor:
    """``sin(pi x) / (pi x)`` (1 at 0)."""
    return Sinc.apply(_float(input))  # type: ignore[no-any-return]


def deg2rad(input: Tensor) -> Tensor:
    return E.mul(_float(input), math.pi / 180.0)


def rad2deg(input: Tensor) -> Tensor:
    return E.mul(_float(input), 180.0 / math.pi)


def positive(input: Tensor) -> Tensor:
    """``+input`` (the input itself)."""
    if input.dtype.name == "bool":
        raise DTypeError("positive: not defined for bool tensors")
    return input


# NumPy-style names PyTorch also accepts
absolute = E.abs
fix = E.trunc
sgn = E.sign
arccos, arcsin, arctan = M.acos, M.asin, M.atan  # type: ignore[has-type]
arccosh, arcsinh, arctanh = M.acosh, M.asinh, M.atanh  # type: ignore[has-type]
greater, greater_equal, less, less_equal, not_equal = E.gt, E.ge, E.lt, E.le, E.ne
