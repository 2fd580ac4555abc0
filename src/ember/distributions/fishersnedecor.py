"""The Fisher-Snedecor (F) distribution with ``df1`` and ``df2`` degrees of freedom."""

from __future__ import annotations

from typing import Any, ClassVar

from .._tensor import Tensor
from ..ops import lgamma, where
from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import broadcast_all, finfo

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    """FisherSnedecor(df1, df2): ``(X1 / df1) / (X2 / df2)`` for independent ``Xi ~ Chi2(dfi)``.

    ``rsample`` is differentiable in both parameters (through the gamma draws). As in PyTorch, ``mean`` is NaN
    for ``df2 <= 2``, ``variance`` NaN for ``df2 <= 4``, ``mode`` NaN for ``df1 <= 2``; there is no entropy.
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "df1": constraints.positive,
        "df2": constraints.positive,
    }
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1: Any, df2: Any, validate_args: bool | None = None) -> None:
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        scalar = isinstance(df1, (int, float)) and isinstance(df2, (int, float))
        super().__init__(() if scalar else self.df1.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> FisherSnedecor:
        new = self._expand_params(FisherSnedecor, ("df1", "df2"), batch_shape, _instance)
        new._gamma1 = self._gamma1.expand(tuple(batch_shape))
        new._gamma2 = self._gamma2.expand(tuple(batch_shape))
        return new  # type: ignore[no-any-return]

    @property
    def mean(self) -> Tensor:
        df2 = where(self.df2 <= 2, float("nan"), self.df2)
        return df2 / (df2 - 2)

    @property
    def mode(self) -> Tensor:
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return where(self.df1 <= 2, float("nan"), mode)

    @property
    def variance(self) -> Tensor:
        df2 = where(self.df2 <= 4, float("nan"), self.df2)
        return 2 * df2.pow(2) * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        x1 = self._gamma1.rsample(sample_shape).reshape(*shape)
        x2 = self._gamma2.rsample(sample_shape).reshape(*shape)
        tiny = float(finfo(x2).tiny)
        return (x1 / x2.clamp(min=tiny)).clamp(min=tiny)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        ct1, ct2, ct3 = self.df1 * 0.5, self.df2 * 0.5, self.df1 / self.df2
        t1 = lgamma(ct1 + ct2) - lgamma(ct1) - lgamma(ct2)
        t2 = ct1 * ct3.log() + (ct1 - 1) * value.log()
        t3 = (ct1 + ct2) * (ct3 * value).log1p()
        return t1 + t2 - t3
