"""The categorical distribution over ``{0, ..., K-1}``."""

from __future__ import annotations

from typing import Any, ClassVar

from .._creation import arange, rand
from .._tensor import Tensor
from ..autograd import no_grad
from ..ops import logsumexp
from . import constraints
from .distribution import Distribution
from .utils import broadcast_shapes, finfo, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Categorical"]


class Categorical(Distribution):
    """Categorical(probs=None, logits=None): ``K`` categories along the last dim (give exactly one).

    ``probs`` need not sum to one (they are normalised); ``logits`` are unnormalised log-probabilities.
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.simplex,
        "logits": constraints.real_vector,
    }
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Categorical: either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if not isinstance(probs, Tensor) or probs.ndim < 1:
                raise ValueError("Categorical: `probs` must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if not isinstance(logits, Tensor) or logits.ndim < 1:
                raise ValueError("Categorical: `logits` must be at least one-dimensional.")
            self.logits = logits - logsumexp(logits, -1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        super().__init__(self._param.shape[:-1], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Categorical:
        new = self._get_checked_instance(Categorical, _instance)
        shape = tuple(batch_shape)
        pshape = shape + (self._num_events,)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(*pshape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(*pshape)
            new._param = new.logits
        new._num_events = self._num_events
        Distribution.__init__(new, shape, validate_args=False)
        new._validate_args = self._validate_args
        return new  # type: ignore[no-any-return]

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> tuple[int, ...]:
        return tuple(self._param.shape)

    @property
    def mean(self) -> Tensor:
        return self.probs.new_full(self._extended_shape(), float("nan"))

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        return self.probs.new_full(self._extended_shape(), float("nan"))

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """Inverse-CDF sampling: category k when ``cdf[k-1] <= u < cdf[k]`` (never a zero-probability one)."""
        shape = self._extended_shape(sample_shape)
        with no_grad():
            cdf = self.probs.cumsum(-1)
            u = rand(*shape, 1, dtype=cdf.dtype, device=cdf.device) * cdf[..., -1:]
            idx = (cdf <= u).sum(-1)
            return idx.clamp(max=self._num_events - 1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)

        value = value.long().unsqueeze(-1)
        shape = broadcast_shapes(tuple(value.shape), tuple(self.logits.shape))
        value = value.expand(*shape[:-1], 1)
        log_pmf = self.logits.expand(*shape)
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self) -> Tensor:
        logits = self.logits.clamp(min=float(finfo(self.logits).min))
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = arange(self._num_events, dtype=None, device=self._param.device)
        values = values.view(-1, *((1,) * len(self._batch_shape)))
        return values.expand(self._num_events, *self._batch_shape) if expand else values
