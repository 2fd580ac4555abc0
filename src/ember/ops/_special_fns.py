"""``torch.special``'s functions beyond the pointwise family (torch docs, "torch.special"): modified Bessel functions
with their gradients, the normal distribution's CDF family, ``erfcx``, ``entr``, ``xlog1py``, ``zeta``,
``gammaincc``, and — without gradients, as in PyTorch — the Bessel/Airy functions and the orthogonal polynomials.

The arrays come from one backend kernel, ``Backend.special_fn(name, ...)`` (SciPy's special module on NumPy and
CuPy, ``torch.special`` on torch); each gradient is PyTorch's formula, written with Tensor operations.
"""

from __future__ import annotations

import math
from typing import Any

from .._tensor import Tensor
from ..autograd._function import Op
from ._indexing import where
from ._indexing_view import sum_to
from ._pointwise_unary import exp, log, sign
from ._util import _float, _shape, pointwise_op, promote

__all__ = ["i0", "igammac"]
METHODS = list(__all__)

_SQRT_2PI = math.sqrt(2 * math.pi)


def _kernel(name: str) -> Any:
    return lambda be, x: be.special_fn(name, x)


def _unary(name: str, deriv: Any, uses: str = "x") -> Any:
    cls = pointwise_op(name, _kernel(name), deriv, uses=uses, kernel=True)

    def fn(input: Tensor) -> Tensor:
        return cls.apply(_float(input))  # type: ignore[no-any-return]

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.special.{name}``, elementwise."
    return fn


def _safe_x(x: Tensor) -> Tensor:
    return where(x == 0, 1.0, x)


i0: Any = _unary("i0", lambda x, y: i1(x))
i0e: Any = _unary("i0e", lambda x, y: i1e(x) - sign(x) * i0e(x))
i1: Any = _unary("i1", lambda x, y: where(x == 0, 0.5, i0(x) - i1(x) / _safe_x(x)))
i1e: Any = _unary("i1e", lambda x, y: where(x == 0, 0.5, i0e(x) - i1e(x) * (sign(x) + 1 / _safe_x(x))))
erfcx: Any = _unary("erfcx", lambda x, y: 2 * x * erfcx(x) - 2 / math.sqrt(math.pi))
ndtr: Any = _unary("ndtr", lambda x, y: exp(-0.5 * x * x) / _SQRT_2PI)
ndtri: Any = _unary("ndtri", lambda x, y: _SQRT_2PI * exp(0.5 * y * y), uses="y")
log_ndtr: Any = _unary("log_ndtr", lambda x, y: exp(-0.5 * x * x - log_ndtr(x)) / _SQRT_2PI)
entr: Any = _unary("entr", lambda x, y: -(1 + log(x)))

for _f in (i0, i0e, i1, i1e, erfcx, ndtr, ndtri, log_ndtr, entr):
    _f.__doc__ = f"``torch.special.{_f.__name__}``, elementwise, with PyTorch's gradient."  # type: ignore[union-attr]


class _NoGrad(Op):
    """Functions PyTorch gives no derivative: their results do not require grad."""

    differentiable = False
    fn_name = ""

    def forward(self, *args: Any) -> Any:
        return self.backend.special_fn(self.fn_name, *args)


def _nograd(name: str) -> Any:
    cls: Any = type(name.title().replace("_", ""), (_NoGrad,), {"fn_name": name})

    def fn(input: Tensor) -> Tensor:
        return cls.apply(_float(input))  # type: ignore[no-any-return]

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.special.{name}``, elementwise (no gradient, as in PyTorch)."
    return fn


def _polynomial(name: str) -> Any:
    cls: Any = type(name.title().replace("_", ""), (_NoGrad,), {"fn_name": name})

    def fn(input: Any, n: Any) -> Tensor:
        x = input if isinstance(input, Tensor) else n.new_tensor(float(input))
        if not isinstance(n, Tensor):
            return cls.apply(_float(x), int(n))  # type: ignore[no-any-return]
        x, n = promote(name, x, n)  # PyTorch's dtype of (x, n); the kernel truncates n to an integer
        x = _float(x)
        return cls.apply(x, n.to(x.dtype))  # type: ignore[no-any-return]

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.special.{name}(x, n)``: the degree-``n`` polynomial at ``x`` (no gradient, as in PyTorch)."
    return fn


_NOGRAD = (
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "spherical_bessel_j0",
)  # fmt: skip
_POLYNOMIALS = (
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
    "legendre_polynomial_p",
)  # fmt: skip
NOGRAD_FNS = {name: _nograd(name) for name in _NOGRAD}
POLYNOMIAL_FNS = {name: _polynomial(name) for name in _POLYNOMIALS}


class _Binary(Op):
    """A two-argument special function; ``grads(x, y, out, g)`` gives PyTorch's gradients (None: none)."""

    fn_name = ""

    def forward(self, x: Any, y: Any) -> Any:
        out = self.backend.special_fn(self.fn_name, x, y)
        self.keep(out)
        return out

    saves_output = True

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        x, y = self.inputs  # type: ignore[misc]
        gx, gy = self.grads(x, y, self.output(), g)
        return (sum_to(gx, _shape(x)) if gx is not None and self._req(0) else None,
                sum_to(gy, _shape(y)) if gy is not None and self._req(1) else None)  # fmt: skip

    def grads(self, x: Tensor, y: Tensor, out: Tensor, g: Tensor) -> tuple[Any, Any]:
        raise NotImplementedError


class Xlog1py(_Binary):
    fn_name = "xlog1py"

    def grads(self, x: Tensor, y: Tensor, out: Tensor, g: Tensor) -> tuple[Any, Any]:
        gx = where((x == 0) & (y <= -1), 0.0, xlog1py(g, y)) if self._req(0) else None
        return gx, (g * x / (y + 1) if self._req(1) else None)


class Zeta(_Binary):
    fn_name = "zeta"

    def grads(self, x: Tensor, y: Tensor, out: Tensor, g: Tensor) -> tuple[Any, Any]:
        if self._req(0):
            raise RuntimeError("the derivative for 'zeta' is not implemented (as in PyTorch): x must not require grad")
        return None, g * -x * zeta(x + 1, y)


class Gammaincc(_Binary):
    fn_name = "gammaincc"

    def grads(self, x: Tensor, y: Tensor, out: Tensor, g: Tensor) -> tuple[Any, Any]:
        from ._pointwise_special import lgamma

        if self._req(0):
            raise RuntimeError(
                "the derivative for 'igammac: input' is not implemented (as in PyTorch): a must not require grad"
            )
        return None, -g * exp((x - 1) * log(y) - y - lgamma(x))


def _binary(cls: type[_Binary], name: str, x: Any, y: Any) -> Tensor:
    a, b = promote(name, x, y)
    return cls.apply(_float(a), _float(b))  # type: ignore[no-any-return]


def xlog1py(input: Any, other: Any) -> Tensor:
    """``input * log1p(other)``, 0 where ``input`` is 0 (``torch.special.xlog1py``)."""
    return _binary(Xlog1py, "xlog1py", input, other)


def zeta(input: Any, other: Any) -> Tensor:
    """The Hurwitz zeta function ``sum_k (k + other) ** -input`` (``torch.special.zeta``)."""
    return _binary(Zeta, "zeta", input, other)


def gammaincc(input: Any, other: Any) -> Tensor:
    """The regularised upper incomplete gamma function Q(a, x) = 1 - P(a, x) (``torch.special.gammaincc``)."""
    return _binary(Gammaincc, "gammaincc", input, other)


def igammac(input: Any, other: Any) -> Tensor:
    """The regularised upper incomplete gamma function ``Q(input, other)`` (``torch.igammac``; also
    ``special.gammaincc``)."""
    return gammaincc(input, other)
