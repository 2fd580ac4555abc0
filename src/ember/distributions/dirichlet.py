"""The Dirichlet distribution over the probability simplex."""

from __future__ import annotations

from typing import Any, ClassVar

from .._creation import arange
from .._tensor import Tensor
from ..ops import digamma, lgamma, where
from ..ops._random import _standard_gamma
from . import constraints
from .distribution import Distribution
from .utils import finfo

__all__ = ["Dirichlet"]


class Dirichlet(Distribution):
    """Dirichlet(concentration): ``concentration`` has the ``K`` categories in its last dim.

    ``rsample`` normalises Gamma(concentration_i, 1) draws, each differentiable by implicit
    reparameterisation, so the samples are differentiable in ``concentration``.
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "concentration": constraints.independent(constraints.positive, 1)
    }
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if not isinstance(concentration, Tensor) or concentration.ndim < 1:
            raise ValueError("Dirichlet: `concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Dirichlet:
        new = self._get_checked_instance(Dirichlet, _instance)
        shape = tuple(batch_shape)
        new.concentration = self.concentration.expand(*shape, *self._event_shape)
        Distribution.__init__(new, shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new  # type: ignore[no-any-return]

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        g = _standard_gamma(self.concentration.expand(*shape))
        g = g.clamp(min=float(finfo(g).tiny))
        return g / g.sum(-1, keepdim=True)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        a = self.concentration
        return ((a - 1.0) * value.log()).sum(-1) + lgamma(a.sum(-1)) - lgamma(a).sum(-1)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        a = (self.concentration - 1).clamp(min=0.0)
        m = a / a.sum(-1, keepdim=True)
        # every concentration below 1: the density peaks at the vertices; PyTorch returns the first one
        below = (self.concentration < 1).all(-1, keepdim=True)
        first = (arange(a.shape[-1], device=a.device) == 0).to(m.dtype)
        return where(below, first, m)

    @property
    def variance(self) -> Tensor:
        a0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (a0 - self.concentration) / (a0**2 * (a0 + 1))

    def entropy(self) -> Tensor:
        a = self.concentration
        k = a.shape[-1]
        a0 = a.sum(-1)
        return lgamma(a).sum(-1) - lgamma(a0) - (k - a0) * digamma(a0) - ((a - 1.0) * digamma(a)).sum(-1)
