"""The generalized Pareto distribution (location, scale, shape ``concentration``)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from .._creation import ones_like, rand
from .._tensor import Tensor
from ..ops import where
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """GeneralizedPareto(loc, scale, concentration): survival ``(1 + c z)^(-1/c)`` for ``z = (x - loc) / scale``
    (``exp(-z)`` at ``c = 0``); support ``[loc, inf)`` for ``c >= 0``, ``[loc, loc - scale / c]`` for ``c < 0``.
    ``rsample`` is the inverse cdf of a uniform draw. ``c`` within 1e-8 of 0 takes the exponential branch
    (PyTorch's ``isclose``)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real,
        "scale": constraints.positive,
        "concentration": constraints.real,
    }
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, concentration: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        scalar = all(isinstance(v, (int, float)) for v in (loc, scale, concentration))
        super().__init__(() if scalar else self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> GeneralizedPareto:
        names = ("loc", "scale", "concentration")
        return self._expand_params(GeneralizedPareto, names, batch_shape, _instance)  # type: ignore[no-any-return]

    def _eq_zero_and_safe(self) -> tuple[Tensor, Tensor]:
        c = self.concentration
        eq_zero = c.abs() <= 1e-8
        return eq_zero, where(eq_zero, ones_like(c), c)

    def _z(self, x: Tensor) -> Tensor:
        return (x - self.loc) / self.scale

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return self.icdf(rand(*shape, dtype=self.loc.dtype, device=self.loc.device))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe = self._eq_zero_and_safe()
        y = 1 / safe + ones_like(z)
        nonzero = where(y == 0, y, y * (safe * z).log1p())
        return -self.scale.log() - where(eq_zero, z, nonzero)

    def log_survival_function(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe = self._eq_zero_and_safe()
        return where(eq_zero, -z, -(safe * z).log1p() / safe)

    def log_cdf(self, value: Tensor) -> Tensor:
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        return self.log_cdf(value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        eq_zero, safe = self._eq_zero_and_safe()
        logu = (-value).log1p()
        nonzero = self.loc + self.scale / safe * (-safe * logu).expm1()
        return where(eq_zero, self.loc - self.scale * logu, nonzero)

    @property
    def mean(self) -> Tensor:
        valid = self.concentration < 1
        safe = where(valid, self.concentration, 0.5)
        return where(valid, self.loc + self.scale / (1 - safe), math.nan)

    @property
    def variance(self) -> Tensor:
        valid = self.concentration < 0.5
        safe = where(valid, self.concentration, 0.25)
        return where(valid, self.scale**2 / ((1 - safe) ** 2 * (1 - 2 * safe)), math.nan)

    def entropy(self) -> Tensor:
        return (self.scale.log() + self.concentration + 1).expand(*self._batch_shape)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> Any:
        lower = self.loc
        neg = self.concentration < 0
        upper = where(neg, lower - self.scale / where(neg, self.concentration, -1.0), math.inf)
        return constraints.interval(lower, upper)
