"""The geometric distribution: the number of failures before the first success."""

from __future__ import annotations

from typing import Any, ClassVar

from .._creation import rand
from .._tensor import Tensor
from ..autograd import no_grad
from ..nn.functional import binary_cross_entropy_with_logits
from ..ops import where
from . import constraints
from .distribution import Distribution
from .utils import BinaryEvent, broadcast_all, finfo

__all__ = ["Geometric"]


class Geometric(BinaryEvent, Distribution):
    """Geometric(probs=None, logits=None): ``P(k) = (1 - p)**k * p`` for ``k = 0, 1, ...`` (give one of the two)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        (t,) = self._probs_or_logits("Geometric", probs, logits)
        param = probs if probs is not None else logits
        super().__init__(() if isinstance(param, (int, float)) else t.shape, validate_args=validate_args)
        if self._validate_args and probs is not None and not bool((self.probs > 0).all()):
            raise ValueError(f"Geometric: probs must be in (0, 1], got {self.probs}")

    def expand(self, batch_shape: Any, _instance: Any = None) -> Geometric:
        return self._expand_params(Geometric, ("probs", "logits"), batch_shape, _instance)  # type: ignore[no-any-return]

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return self.probs * 0

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            p = self.probs
            u = rand(*shape, dtype=p.dtype, device=p.device).clamp(min=float(finfo(p).tiny))
            return (u.log() / (-p).log1p()).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        safe = where((probs == 1) & (value == 0), 0.0, probs)  # 0 * log(0): the certain first success
        return value * (-safe).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs
