"""The gamma family: lgamma, digamma, polygamma, mvlgamma, and Gamma sampling with an implicit gradient.

Each derivative is the next member of the family, written as a Tensor operation, so higher-order
gradients work. ``_standard_gamma`` draws Gamma(alpha, 1) samples that are differentiable in ``alpha``
by implicit reparameterisation (the sample's CDF value is held fixed; see ``_special.standard_gamma_grad``).
"""

from __future__ import annotations

import math
from typing import Any

from .._errors import ValueRangeError
from .._tensor import Tensor
from ..autograd._function import Op
from . import _special
from ._elementwise import _float, exp, log
from ._math import _unary, pointwise_op

__all__ = ["digamma", "igamma", "lgamma", "mvlgamma", "polygamma"]
METHODS = ["digamma", "igamma", "lgamma", "mvlgamma", "polygamma"]

_PolygammaOp = pointwise_op(
    "polygamma", lambda xp, x, n: _special.polygamma(xp, n, x), lambda x, y, n: polygamma(n + 1, x)
)


def polygamma(n: int, input: Tensor) -> Tensor:
    """The ``n``-th derivative of ``digamma`` (``polygamma(0, x)`` is ``digamma(x)``)."""
    if isinstance(n, Tensor) and not isinstance(input, Tensor):  # Tensor.polygamma(n): the method order
        n, input = input, n
    if int(n) != n or n < 0:
        raise ValueRangeError(f"polygamma: n must be a non-negative integer, got {n!r}")
    return _PolygammaOp.apply(_float(input), int(n))  # type: ignore[no-any-return]


def _digamma(x: Tensor) -> Tensor:
    return digamma(x)


lgamma = _unary("lgamma", _special.lgamma, lambda x, y: _digamma(x))
digamma = _unary("digamma", _special.digamma, lambda x, y: polygamma(1, x))


def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma function of dimension ``p`` (elements must exceed ``(p - 1) / 2``)."""
    from ._reduce import sum as _sum
    from ._shape import unsqueeze

    if p < 1:
        raise ValueRangeError(f"mvlgamma: p must be >= 1, got {p}")
    x = _float(input)
    if bool((x._data <= (p - 1) / 2).any()):
        raise ValueRangeError(f"mvlgamma: all elements must be greater than (p-1)/2 = {(p - 1) / 2}")
    offsets = Tensor._make(x._backend.xp.asarray([-j / 2 for j in range(p)], dtype=x._data.dtype), x._backend)
    return _sum(lgamma(unsqueeze(x, -1) + offsets), -1) + p * (p - 1) / 4 * math.log(math.pi)


class Igamma(Op):
    """P(a, x), the regularised lower incomplete gamma function; differentiable in both arguments."""

    def forward(self, a: Any, x: Any) -> Any:
        return _special.gammainc(self.backend.xp, a, x)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        from ._util import sum_to

        a, x = self.inputs  # type: ignore[misc]
        xp = self.backend.xp
        ga = gx = None
        if self._req(0):  # PyTorch has no derivative in ``a``; the series of _special.gammainc_da gives it
            d = xp.astype(_special.gammainc_da(xp, a._data, x._data), a._data.dtype)
            ga = sum_to(g * Tensor._make(d, self.backend), a.shape)
        if self._req(1):
            gx = sum_to(g * exp((a - 1) * log(x) - x - lgamma(a)), x.shape)
        return ga, gx


def igamma(input: Tensor, other: Tensor) -> Tensor:
    """The regularised lower incomplete gamma function ``P(input, other)`` (``torch.igamma``)."""
    from ._util import promote

    a, x = promote("igamma", _float(input), other)
    if not isinstance(x, Tensor):
        x = Tensor._make(a._backend.xp.asarray(x, dtype=a._data.dtype), a._backend)
    return Igamma.apply(a, x)  # type: ignore[no-any-return]


class StandardGamma(Op):
    """Gamma(alpha, 1) samples; the gradient in alpha is the implicit reparameterisation gradient."""

    saves_output = True

    def forward(self, alpha: Any, gen: Any) -> Any:
        with gen._lock:
            z = self.backend.standard_gamma(gen._rng, alpha)
        # Gamma samples underflow to 0 for tiny alpha; keep them positive as PyTorch does
        z = self.backend.xp.maximum(z, self.backend.xp.finfo(z.dtype).tiny)
        self.keep(z)
        return z

    def backward(self, g: Tensor) -> Any:
        alpha = self.inputs[0]  # type: ignore[index]
        z = self.output()
        d = Tensor._make(_special.standard_gamma_grad(self.backend.xp, z._data, alpha._data), self.backend)
        return g * d, None


def _standard_gamma(alpha: Tensor, generator: Any = None) -> Tensor:
    """Gamma(alpha, 1) samples of ``alpha``'s shape, differentiable in ``alpha`` (``torch._standard_gamma``)."""
    from .._creation import default_generator

    return StandardGamma.apply(_float(alpha), generator or default_generator)  # type: ignore[no-any-return]
