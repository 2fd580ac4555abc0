"""The Bernoulli distribution over {0, 1}."""

from __future__ import annotations

from typing import Any, ClassVar

from .._creation import arange, rand
from .._tensor import Tensor
from ..autograd import no_grad
from ..nn.functional import binary_cross_entropy_with_logits
from . import constraints
from .distribution import Distribution
from .utils import BinaryEvent
from .utils import broadcast_all as _b

__all__ = ["Bernoulli"]


class Bernoulli(BinaryEvent, Distribution):
    """Bernoulli(probs=None, logits=None): 1 with probability ``probs`` (give exactly one of the two)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        (t,) = self._probs_or_logits("Bernoulli", probs, logits)
        self._param = t
        scalar = isinstance(probs if probs is not None else logits, (int, float))
        super().__init__(() if scalar else t.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Bernoulli:
        new = self._get_checked_instance(Bernoulli, _instance)
        shape = tuple(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(*shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(*shape)
            new._param = new.logits
        Distribution.__init__(new, shape, validate_args=False)
        new._validate_args = self._validate_args
        return new  # type: ignore[no-any-return]

    @property
    def param_shape(self) -> tuple[int, ...]:
        return tuple(self._param.shape)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        m = (self.probs >= 0.5).to(self.probs.dtype)
        return m.masked_fill(self.probs == 0.5, float("nan"))

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            p = self.probs.expand(*shape)
            return (rand(*shape, dtype=p.dtype, device=p.device) < p).to(p.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)

        logits, value = _b(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value.to(logits.dtype), reduction="none")

    def entropy(self) -> Tensor:
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.view(-1, *((1,) * len(self._batch_shape)))
        return values.expand(2, *self._batch_shape) if expand else values
