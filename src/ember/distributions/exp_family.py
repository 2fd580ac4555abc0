"""``ExponentialFamily``: distributions ``p(x) = h(x) exp(<t(x), theta> - F(theta))``, entropy by Bregman divergence."""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..autograd import grad
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Base of exponential-family distributions: subclasses give ``_natural_params`` (theta), ``_log_normalizer``
    (F) and ``_mean_carrier_measure`` (E[log h(x)]); ``entropy`` is then ``F(theta) - <theta, grad F(theta)>
    - E[log h(x)]``, computed with autograd (so it is differentiable).

    Unlike PyTorch, Ember's older distributions (Normal, Bernoulli, ...) do not derive from it.
    """

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> Any:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        result: Any = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for p, g in zip(nparams, gradients, strict=True):
            result = result - (p * g).reshape(*self._batch_shape, -1).sum(-1)
        return result  # type: ignore[no-any-return]
