"""The beta distribution on ``[0, 1]``."""

from __future__ import annotations

from typing import Any, ClassVar

from .._tensor import Tensor
from ..ops import stack
from . import constraints
from .dirichlet import Dirichlet
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Beta"]


class Beta(Distribution):
    """Beta(concentration1, concentration0): density proportional to ``x^(c1-1) (1-x)^(c0-1)``.

    Built on a two-category Dirichlet, as in PyTorch (so ``rsample`` is differentiable).
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "concentration1": constraints.positive,
        "concentration0": constraints.positive,
    }
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Any, concentration0: Any, validate_args: bool | None = None) -> None:
        if isinstance(concentration1, (int, float)) and isinstance(concentration0, (int, float)):
            c1, c0 = broadcast_all(float(concentration1), float(concentration0))
            batch: tuple[int, ...] = ()
        else:
            c1, c0 = broadcast_all(concentration1, concentration0)
            batch = tuple(c1.shape)
        self._dirichlet = Dirichlet(stack([c1, c0], -1), validate_args=validate_args)
        super().__init__(batch, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Beta:
        new = self._get_checked_instance(Beta, _instance)
        shape = tuple(batch_shape)
        new._dirichlet = self._dirichlet.expand(shape)
        Distribution.__init__(new, shape, validate_args=False)
        new._validate_args = self._validate_args
        return new  # type: ignore[no-any-return]

    @property
    def concentration1(self) -> Tensor:
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self) -> Tensor:
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self) -> Tensor:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total**2 * (total + 1))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self._dirichlet.rsample(sample_shape)[..., 0]

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(stack([value, 1.0 - value], -1))

    def entropy(self) -> Tensor:
        return self._dirichlet.entropy()

    def __repr__(self) -> str:
        c = self._dirichlet.concentration
        return f"Beta(concentration1: {tuple(c.shape[:-1])}, concentration0: {tuple(c.shape[:-1])})"
