"""The von Mises distribution: a circular normal on [-pi, pi)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from .._creation import rand, zeros
from .._dtype import float64
from .._tensor import Tensor
from ..autograd import no_grad
from ..ops import remainder, where
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property

__all__ = ["VonMises"]

# Abramowitz and Stegun 9.8.1-9.8.4, the polynomials PyTorch uses (relative error below ~2e-7)
_I0_COEF_SMALL = [1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2]
_I0_COEF_LARGE = [0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1, 0.2635537e-1,
                  -0.1647633e-1, 0.392377e-2]  # fmt: skip
_I1_COEF_SMALL = [0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3]
_I1_COEF_LARGE = [0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1, 0.2282967e-1,
                  -0.2895312e-1, 0.1787654e-1, -0.420059e-2]  # fmt: skip
_COEF_SMALL = [_I0_COEF_SMALL, _I1_COEF_SMALL]
_COEF_LARGE = [_I0_COEF_LARGE, _I1_COEF_LARGE]


def _eval_poly(y: Tensor, coef: list[float]) -> Tensor:
    result: Any = coef[-1]
    for c in reversed(coef[:-1]):
        result = c + y * result
    return result  # type: ignore[no-any-return]


def _log_modified_bessel_fn(x: Tensor, order: int = 0) -> Tensor:
    """``log I_order(x)`` for ``x > 0`` and ``order`` 0 or 1 (each branch evaluated on its own side of 3.75)."""
    if order not in (0, 1):
        raise ValueError(f"order must be 0 or 1, got {order}")
    small_side = x < 3.75
    xs, xl = where(small_side, x, 1.0), where(small_side, 3.75, x)
    small = _eval_poly((xs / 3.75) ** 2, _COEF_SMALL[order])
    if order == 1:
        small = xs.abs() * small
    large = xl - 0.5 * xl.log() + _eval_poly(3.75 / xl, _COEF_LARGE[order]).log()
    return where(small_side, small.log(), large)


class VonMises(Distribution):
    """VonMises(loc, concentration): density ``exp(k cos(x - loc)) / (2 pi I0(k))`` on [-pi, pi).

    ``variance`` is the circular variance ``1 - I1(k) / I0(k)``. Samples come from Best and Fisher's (1979)
    rejection sampler, in float64 as PyTorch; not reparameterisable. No entropy or cdf (neither has PyTorch).
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real,
        "concentration": constraints.positive,
    }
    support = constraints.real
    has_rsample = False

    def __init__(self, loc: Any, concentration: Any, validate_args: bool | None = None) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, (), validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> VonMises:
        return self._expand_params(VonMises, ("loc", "concentration"), batch_shape, _instance)  # type: ignore[no-any-return]

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * (value - self.loc).cos()
        return log_prob - math.log(2 * math.pi) - _log_modified_bessel_fn(self.concentration, order=0)

    @lazy_property
    def _proposal_r(self) -> Tensor:
        kappa = self.concentration.detach().to(float64)
        tau = 1 + (1 + 4 * kappa**2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        return where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho**2) / (2 * rho))

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with no_grad():
            shape = self._extended_shape(sample_shape)
            loc, kappa = self.loc.to(float64), self.concentration.to(float64)
            r = self._proposal_r
            x = zeros(*shape, dtype=float64, device=self.loc.device)
            done = zeros(*shape, dtype=float64, device=self.loc.device) > 0
            while not bool(done.all()):
                u1, u2, u3 = rand(3, *shape, dtype=float64, device=self.loc.device).unbind(0)
                z = (math.pi * u1).cos()
                f = (1 + r * z) / (r + z)
                c = kappa * (r - f)
                accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
                x = where(accept & ~done, (u3 - 0.5).sign() * f.acos(), x)
                done = done | accept
            return (remainder(x + math.pi + loc, 2 * math.pi) - math.pi).to(self.loc.dtype)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @lazy_property
    def variance(self) -> Tensor:  # type: ignore[override]
        k = self.concentration
        return 1 - (_log_modified_bessel_fn(k, order=1) - _log_modified_bessel_fn(k, order=0)).exp()
