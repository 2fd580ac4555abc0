"""The binomial distribution."""

from __future__ import annotations

from typing import Any, ClassVar

from .._creation import arange
from .._tensor import Tensor
from ..autograd import no_grad
from ..ops import binomial
from . import constraints
from .distribution import Distribution
from .utils import BinaryEvent

__all__ = ["Binomial"]


def _clamp_by_zero(x: Tensor) -> Tensor:
    """``max(x, 0)`` with the gradient 1/2 at 0 (PyTorch's choice, so both libraries agree at logits 0)."""
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(BinaryEvent, Distribution):
    """Binomial(total_count=1, probs=None, logits=None): successes in ``total_count`` trials (give one of the two)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "total_count": constraints.nonnegative_integer,
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    has_enumerate_support = True

    def __init__(
        self, total_count: Any = 1, probs: Any = None, logits: Any = None, validate_args: bool | None = None
    ) -> None:
        count, t = self._probs_or_logits("Binomial", probs, logits, total_count)
        self.total_count = count.to(t.dtype)
        param = probs if probs is not None else logits
        scalar = isinstance(param, (int, float)) and isinstance(total_count, (int, float))
        super().__init__(() if scalar else t.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Binomial:
        names = ("total_count", "probs", "logits")
        return self._expand_params(Binomial, names, batch_shape, _instance)  # type: ignore[no-any-return]

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return binomial(self.total_count.expand(*shape), self.probs.expand(*shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        log_n_fact = (n + 1).lgamma()
        log_k_fact = (value + 1).lgamma()
        log_nmk_fact = (n - value + 1).lgamma()
        # n * log(1 + exp(logits)), written so that neither sign of the logits overflows
        normalize = n * _clamp_by_zero(logits) + n * (-logits.abs()).exp().log1p() - log_n_fact
        return value * logits - log_k_fact - log_nmk_fact - normalize

    def entropy(self) -> Tensor:
        total = int(self.total_count.max().item()) if self.total_count.numel() else 0
        if self.total_count.numel() and int(self.total_count.min().item()) != total:
            raise NotImplementedError("Binomial.entropy: inhomogeneous total_count is not supported (as in PyTorch)")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        total = int(self.total_count.max().item()) if self.total_count.numel() else 0
        if self.total_count.numel() and int(self.total_count.min().item()) != total:
            raise NotImplementedError(
                "Binomial.enumerate_support: inhomogeneous total_count is not supported (as in PyTorch)"
            )
        values = arange(1 + total, dtype=self.total_count.dtype, device=self.total_count.device)
        values = values.view(-1, *((1,) * len(self._batch_shape)))
        return values.expand(-1, *self._batch_shape) if expand else values
