"""The log-normal distribution: ``exp(X)`` for a normal ``X``."""

from __future__ import annotations

from typing import Any, ClassVar

from .._tensor import Tensor
from . import constraints
from .distribution import Distribution
from .normal import Normal

__all__ = ["LogNormal"]


class LogNormal(Distribution):
    """LogNormal(loc, scale): ``exp(Normal(loc, scale))``; ``loc`` and ``scale`` are those of the logarithm.

    PyTorch builds it as a ``TransformedDistribution``; here it is written out, with the same values, gradients
    and ``base_dist``.
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.base_dist = Normal(loc, scale, validate_args=validate_args)
        super().__init__(self.base_dist.batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> LogNormal:
        new = self._get_checked_instance(LogNormal, _instance)
        new.base_dist = self.base_dist.expand(batch_shape)
        Distribution.__init__(new, tuple(batch_shape), validate_args=False)
        new._validate_args = self._validate_args
        return new  # type: ignore[no-any-return]

    @property
    def loc(self) -> Tensor:
        return self.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale

    @property
    def mean(self) -> Tensor:
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self) -> Tensor:
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self) -> Tensor:
        s2 = self.scale.pow(2)
        return s2.expm1() * (2 * self.loc + s2).exp()

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self.base_dist.rsample(sample_shape).exp()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = value.log()
        return self.base_dist.log_prob(y) - y

    def cdf(self, value: Tensor) -> Tensor:
        return self.base_dist.cdf(value.log())

    def icdf(self, value: Tensor) -> Tensor:
        return self.base_dist.icdf(value).exp()

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() + self.loc
