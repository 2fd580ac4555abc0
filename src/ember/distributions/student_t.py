"""Student's t distribution (``df`` degrees of freedom, location ``loc``, scale ``scale``)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from .._creation import randn
from .._tensor import Tensor
from ..ops import digamma, lgamma, where
from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """StudentT(df, loc=0, scale=1): ``loc + scale * X / sqrt(Z / df)`` for ``X ~ N(0, 1)``, ``Z ~ Chi2(df)``.

    ``rsample`` is differentiable in all three parameters (in ``df`` through the chi-squared draw).
    ``mean`` is NaN for ``df <= 1``; ``variance`` is inf for ``1 < df <= 2`` and NaN for ``df <= 1``.
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "df": constraints.positive,
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.real
    has_rsample = True

    def __init__(self, df: Any, loc: Any = 0.0, scale: Any = 1.0, validate_args: bool | None = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> StudentT:
        new = self._expand_params(StudentT, ("df", "loc", "scale"), batch_shape, _instance)
        new._chi2 = self._chi2.expand(tuple(batch_shape))
        return new  # type: ignore[no-any-return]

    @property
    def mean(self) -> Tensor:
        return where(self.df <= 1, float("nan"), self.loc)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        big = self.df > 2
        df = where(big, self.df, 3.0)  # the finite branch away from its pole (no NaN in its gradient)
        finite = self.scale.pow(2) * df / (df - 2)
        return where(big, finite, where(self.df > 1, float("inf"), float("nan")))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        x = randn(*shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * (x * (z / self.df).rsqrt())

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        df = self.df
        y = (value - self.loc) / self.scale
        z = self.scale.log() + 0.5 * df.log() + 0.5 * math.log(math.pi) + lgamma(0.5 * df) - lgamma(0.5 * (df + 1.0))
        return -0.5 * (df + 1.0) * (y**2.0 / df).log1p() - z

    def entropy(self) -> Tensor:
        df = self.df
        lbeta = lgamma(0.5 * df) + math.lgamma(0.5) - lgamma(0.5 * (df + 1))
        return (
            self.scale.log() + 0.5 * (df + 1) * (digamma(0.5 * (df + 1)) - digamma(0.5 * df)) + 0.5 * df.log() + lbeta
        )
