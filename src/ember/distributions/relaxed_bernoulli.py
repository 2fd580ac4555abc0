"""Relaxed (Concrete / Gumbel-softmax) Bernoulli distributions: reparameterisable relaxations of a coin flip."""

from __future__ import annotations

from typing import Any, ClassVar

from .._creation import rand, tensor
from .._tensor import Tensor
from . import constraints
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import BinaryEvent, broadcast_all, clamp_probs

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


def _as_tensor(temperature: Any, like: Tensor) -> Tensor:
    if isinstance(temperature, Tensor):
        return temperature
    return tensor(float(temperature), dtype=like.dtype, device=like.device)


class LogitRelaxedBernoulli(BinaryEvent, Distribution):
    """LogitRelaxedBernoulli(temperature, probs=None, logits=None): the logit of a ``RelaxedBernoulli`` sample,
    ``(logit(U) + logits) / temperature`` for ``U ~ Uniform(0, 1)`` (Maddison et al., 2017)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    support = constraints.real
    has_rsample = True

    def __init__(
        self, temperature: Any, probs: Any = None, logits: Any = None, validate_args: bool | None = None
    ) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("LogitRelaxedBernoulli: either `probs` or `logits` must be specified, but not both.")
        given = probs if probs is not None else logits
        (param,) = broadcast_all(given)
        setattr(self, "probs" if probs is not None else "logits", param)
        self._param = param
        self.temperature = _as_tensor(temperature, param)
        super().__init__(() if isinstance(given, (int, float)) else param.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> LogitRelaxedBernoulli:
        new = self._expand_params(LogitRelaxedBernoulli, ("probs", "logits"), batch_shape, _instance)
        new.temperature = self.temperature
        new._param = new.__dict__["probs"] if "probs" in self.__dict__ else new.__dict__["logits"]
        return new  # type: ignore[no-any-return]

    @property
    def param_shape(self) -> tuple[int, ...]:
        return tuple(self._param.shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(*shape))
        uniforms = clamp_probs(rand(*shape, dtype=probs.dtype, device=probs.device))
        return (uniforms.log() - (-uniforms).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """RelaxedBernoulli(temperature, probs=None, logits=None): ``sigmoid`` of a ``LogitRelaxedBernoulli``; values in
    (0, 1) that approach a Bernoulli(probs) sample as the temperature goes to 0. Reparameterisable."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    support = constraints.unit_interval
    has_rsample = True
    base_dist: LogitRelaxedBernoulli

    def __init__(
        self, temperature: Any, probs: Any = None, logits: Any = None, validate_args: bool | None = None
    ) -> None:
        base = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> RelaxedBernoulli:
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def temperature(self) -> Tensor:
        return self.base_dist.temperature

    @property
    def logits(self) -> Tensor:
        return self.base_dist.logits  # type: ignore[no-any-return]

    @property
    def probs(self) -> Tensor:
        return self.base_dist.probs  # type: ignore[no-any-return]
