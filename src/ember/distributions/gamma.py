"""The gamma distribution (shape ``concentration``, inverse scale ``rate``)."""

from __future__ import annotations

from typing import Any, ClassVar

from .._tensor import Tensor
from ..ops import digamma, igamma, lgamma
from ..ops._random import _standard_gamma
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, finfo

__all__ = ["Gamma"]


class Gamma(Distribution):
    """Gamma(concentration, rate), density ``rate^a x^(a-1) e^(-rate x) / Gamma(a)``.

    ``rsample`` is differentiable in both parameters: in ``concentration`` by implicit
    reparameterisation (as PyTorch), in ``rate`` through the scaling ``x = z / rate``.
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "concentration": constraints.positive,
        "rate": constraints.positive,
    }
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        scalar = isinstance(concentration, (int, float)) and isinstance(rate, (int, float))
        super().__init__(() if scalar else self.concentration.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Gamma:
        new = self._get_checked_instance(Gamma, _instance)
        shape = tuple(batch_shape)
        new.concentration, new.rate = self.concentration.expand(*shape), self.rate.expand(*shape)
        Distribution.__init__(new, shape, validate_args=False)
        new._validate_args = self._validate_args
        return new  # type: ignore[no-any-return]

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate**2

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        value = _standard_gamma(self.concentration.expand(*shape)) / self.rate.expand(*shape)
        return value.clamp(min=float(finfo(value).tiny))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration, self.rate
        return a * b.log() + (a - 1) * value.log() - b * value - lgamma(a)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return igamma(self.concentration, self.rate * value)

    def entropy(self) -> Tensor:
        a = self.concentration
        return a - self.rate.log() + lgamma(a) + (1.0 - a) * digamma(a)
