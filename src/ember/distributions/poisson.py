"""The Poisson distribution."""

from __future__ import annotations

from typing import Any, ClassVar

from .._tensor import Tensor
from ..autograd import no_grad
from ..ops import poisson
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Poisson"]


class Poisson(Distribution):
    """Poisson(rate): ``P(k) = rate**k * exp(-rate) / k!`` on the non-negative integers."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(() if isinstance(rate, (int, float)) else self.rate.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Poisson:
        return self._expand_params(Poisson, ("rate",), batch_shape, _instance)  # type: ignore[no-any-return]

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with no_grad():
            return poisson(self.rate.expand(*self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()
