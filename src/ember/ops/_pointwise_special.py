"""Pointwise special functions (torch docs, "Pointwise Ops"; also in ``torch.special``): the error function,
the gamma family, ``logit``, ``xlogy``; and the step functions ``heaviside`` and ``nextafter``.

The array work is backend kernels (``backends/_kernels_special.py``; torch's own functions on the torch backend);
``igamma``'s derivative in ``a`` (which PyTorch does not give) is the kernel ``igamma_grad_a``.
"""

from __future__ import annotations

import math
from typing import Any

from .._errors import DTypeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._function import Op
from ._indexing import where
from ._indexing_view import sum_to, unsqueeze
from ._pointwise_binary import _floats
from ._pointwise_unary import clamp, exp, log
from ._reduction import sum as _sum
from ._util import _binary, _float, _nodiff, _shape, _unary, pointwise_op, promote

__all__ = [
    "digamma", "erf", "erfc", "erfinv", "heaviside", "igamma", "lgamma", "logit", "mvlgamma", "nextafter", "polygamma",
    "xlogy",
]  # fmt: skip
METHODS = list(__all__)


_SQRT_PI_2 = 2.0 / math.sqrt(math.pi)


erf = _unary("erf", lambda be, x: be.erf(x), lambda x, y: _SQRT_PI_2 * exp(-x * x), kernel=True)


erfc = _unary("erfc", lambda be, x: 1 - be.erf(x), lambda x, y: -_SQRT_PI_2 * exp(-x * x), kernel=True)


erfinv = _unary(
    "erfinv", lambda be, x: be.erfinv(x), lambda x, y: (0.5 * math.sqrt(math.pi)) * exp(y * y), uses="y", kernel=True
)


#: ``log(p / (1 - p))`` with the derivative ``1 / (p (1 - p))`` (PyTorch's: inf at 0 and 1, where the chain through
#: log and the division gave nan)
Logit = pointwise_op("logit", lambda xp, x: xp.log(x / (1 - x)), lambda x, y: 1 / (x * (1 - x)))


def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """``log(p / (1 - p))``; with ``eps`` the input is clamped to ``[eps, 1 - eps]`` first."""
    x = _float(input)
    if eps is not None:
        x = clamp(x, eps, 1 - eps)
    return Logit.apply(x)  # type: ignore[no-any-return]


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


_PolygammaOp = pointwise_op(
    "polygamma", lambda be, x, n: be.polygamma(n, x), lambda x, y, n: polygamma(n + 1, x), kernel=True
)


def polygamma(n: int, input: Tensor) -> Tensor:
    """The ``n``-th derivative of ``digamma`` (``polygamma(0, x)`` is ``digamma(x)``)."""
    if isinstance(n, Tensor) and not isinstance(input, Tensor):  # Tensor.polygamma(n): the method order
        n, input = input, n
    if int(n) != n or n < 0:
        raise ValueRangeError(f"polygamma: n must be a non-negative integer, got {n!r}")
    return _PolygammaOp.apply(_float(input), int(n))


def _digamma(x: Tensor) -> Tensor:
    return digamma(x)


lgamma = _unary("lgamma", lambda be, x: be.lgamma(x), lambda x, y: _digamma(x), kernel=True)


digamma = _unary("digamma", lambda be, x: be.digamma(x), lambda x, y: polygamma(1, x), kernel=True)


def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma function of dimension ``p``: the sum of ``lgamma(x - j / 2)``, ``j < p``, plus a
    constant (defined for ``x > (p - 1) / 2``; below, PyTorch 2.13 computes the same sum, inf at the poles)."""
    if p < 1:
        raise ValueRangeError(f"mvlgamma: p must be >= 1, got {p}")
    x = _float(input)
    offsets = Tensor._make(x._backend.xp.asarray([-j / 2 for j in range(p)], dtype=x._data.dtype), x._backend)
    return _sum(lgamma(unsqueeze(x, -1) + offsets), -1) + p * (p - 1) / 4 * math.log(math.pi)


class Igamma(Op):
    """P(a, x), the regularised lower incomplete gamma function; differentiable in both arguments."""

    def forward(self, a: Any, x: Any) -> Any:
        return self.backend.igamma(a, x)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, x = self.inputs  # type: ignore[misc]
        xp = self.backend.xp
        ga = gx = None
        if self._req(0):  # PyTorch has no derivative in ``a``; the kernel's power series gives it
            d = xp.astype(self.backend.igamma_grad_a(a._data, x._data), a._data.dtype)
            ga = sum_to(g * Tensor._make(d, self.backend), a.shape)
        if self._req(1):
            gx = sum_to(g * exp((a - 1) * log(x) - x - lgamma(a)), x.shape)
        return ga, gx


def igamma(input: Tensor, other: Tensor) -> Tensor:
    """The regularised lower incomplete gamma function ``P(input, other)`` (``torch.igamma``)."""
    a, x = promote("igamma", _float(input), other)
    if not isinstance(x, Tensor):
        x = Tensor._make(a._backend.xp.asarray(x, dtype=a._data.dtype), a._backend)
    return _binary(Igamma, a, x)  # (its broadcasting errors named)


# -- step functions ----------------------------------------------------------------------------------
Heaviside = _nodiff("Heaviside", "heaviside")


class Nextafter(Op):
    """One step towards ``other``: PyTorch's gradient is ``g`` for ``input`` (a step is locally the identity)
    and zero for ``other``."""

    def forward(self, a: Any, b: Any) -> Any:
        return self.backend.xp.nextafter(a, b)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        ga = sum_to(g, _shape(a)) if self._req(0) else None
        gb = b.new_zeros(b.shape) if self._req(1) else None
        return ga, gb


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """0 where ``input < 0``, 1 where ``input > 0``, ``values`` where ``input == 0``."""
    if not isinstance(values, Tensor):
        raise TypeError(f"heaviside: values must be a Tensor, got {type(values).__name__}")
    if input.dtype is not values.dtype:
        raise DTypeError(f"heaviside: input ({input.dtype}) and values ({values.dtype}) must have the same dtype")
    out = _binary(Heaviside, input, values)
    return out if out.dtype is input.dtype else out.to(input.dtype)  # (NumPy's heaviside of integers is float)


def nextafter(input: Tensor, other: Tensor) -> Tensor:
    """The next floating-point value after ``input`` towards ``other`` (floating tensors only, as in PyTorch)."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError("nextafter(): expected Tensor arguments")
    a, b = promote("nextafter", input, other)
    t = a if isinstance(a, Tensor) else b
    if not t.dtype.is_floating_point:
        raise DTypeError(f"nextafter is not implemented for {t.dtype} tensors")
    return _binary(Nextafter, input, other)
