"""The negative binomial distribution: failures before ``total_count`` successes."""

from __future__ import annotations

from typing import Any, ClassVar

from .._tensor import Tensor
from ..autograd import no_grad
from ..nn.functional import logsigmoid
from ..ops import lgamma, poisson, where
from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import BinaryEvent, lazy_property

__all__ = ["NegativeBinomial"]


class NegativeBinomial(BinaryEvent, Distribution):
    """NegativeBinomial(total_count, probs=None, logits=None): the number of successes (each with probability
    ``probs``) before ``total_count`` failures; pmf ``C(k + r - 1, k) p^k (1 - p)^r``. Sampled as a
    Gamma-Poisson mixture, as PyTorch does; not reparameterisable."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "total_count": constraints.greater_than_eq(0),
        "probs": constraints.half_open_interval(0.0, 1.0),
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer

    def __init__(
        self, total_count: Any, probs: Any = None, logits: Any = None, validate_args: bool | None = None
    ) -> None:
        count, param = self._probs_or_logits("NegativeBinomial", probs, logits, total_count)
        self.total_count = count.to(param.dtype)
        self._param = param
        super().__init__(param.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> NegativeBinomial:
        new = self._expand_params(NegativeBinomial, ("total_count", "probs", "logits"), batch_shape, _instance)
        new._param = new.__dict__["probs"] if "probs" in self.__dict__ else new.__dict__["logits"]
        return new  # type: ignore[no-any-return]

    @property
    def param_shape(self) -> tuple[int, ...]:
        return tuple(self._param.shape)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.logits.exp()

    @property
    def mode(self) -> Tensor:
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> Tensor:
        return self.mean / (-self.logits).sigmoid()

    @lazy_property
    def _gamma(self) -> Gamma:
        return Gamma(concentration=self.total_count, rate=(-self.logits).exp(), validate_args=False)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with no_grad():
            return poisson(self._gamma.sample(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        r, logits = self.total_count, self.logits
        log_unnormalized = r * logsigmoid(-logits) + value * logsigmoid(logits)
        log_normalization = -lgamma(r + value) + lgamma(1.0 + value) + lgamma(r)
        log_normalization = where(r + value == 0.0, 0.0, log_normalization)
        return log_unnormalized - log_normalization
