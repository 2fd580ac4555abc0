"""The Wishart distribution over positive-definite matrices."""

from __future__ import annotations

import math
import warnings
from typing import Any

from .._creation import arange, eye, randn, tensor
from .._tensor import Tensor
from ..linalg import cholesky
from ..ops import cholesky_solve, digamma, mvlgamma, slogdet, where
from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .multivariate_normal import _precision_to_scale_tril
from .utils import broadcast_shapes, finfo, lazy_property

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x: Tensor, p: int) -> Tensor:
    """The multivariate digamma ``sum_i digamma(x - i / 2)``, ``i < p``."""
    return digamma(x.unsqueeze(-1) - arange(p, dtype=x.dtype, device=x.device) / 2).sum(-1)


class Wishart(ExponentialFamily):
    """Wishart(df, covariance_matrix=None, precision_matrix=None, scale_tril=None): the distribution of
    ``sum_k x_k x_k^T`` over ``df`` draws ``x_k ~ N(0, covariance_matrix)`` (real ``df > p - 1``); give exactly one
    matrix. ``rsample`` is Bartlett's decomposition (differentiable through the Chi2 diagonal and the scale);
    singular draws (possible for ``df < p``) are redrawn up to ``max_try_correction`` times."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:  # type: ignore[override]
        return {
            "covariance_matrix": constraints.positive_definite,
            "precision_matrix": constraints.positive_definite,
            "scale_tril": constraints.lower_cholesky,
            "df": constraints.greater_than(self.event_shape[-1] - 1),
        }

    def __init__(
        self,
        df: Any,
        covariance_matrix: Tensor | None = None,
        precision_matrix: Tensor | None = None,
        scale_tril: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        given = [p for p in (covariance_matrix, precision_matrix, scale_tril) if p is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        param = given[0]
        if param.ndim < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, (int, float)):
            batch_shape = tuple(param.shape[:-2])
            self.df = tensor(float(df), dtype=param.dtype, device=param.device)
        else:
            batch_shape = broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape))
            self.df = df.expand(*batch_shape)
        event_shape = tuple(param.shape[-2:])
        p = event_shape[-1]
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        full = param.expand(*batch_shape, *event_shape)
        if scale_tril is not None:
            self.scale_tril = full
        elif covariance_matrix is not None:
            self.covariance_matrix = full
        else:
            self.precision_matrix = full
        if bool((self.df < p).any()):
            warnings.warn(
                "Low df values detected. Singular samples are highly likely to occur for ndim - 1 < df < ndim.",
                stacklevel=2,
            )
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = cholesky(covariance_matrix)
        else:
            assert precision_matrix is not None
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._chi2(self.df, batch_shape)

    def _chi2(self, df: Tensor, batch_shape: tuple[int, ...]) -> Chi2:
        tril = self._unbroadcasted_scale_tril
        offsets = arange(self._event_shape[-1], dtype=tril.dtype, device=tril.device)
        return Chi2(df=(df.unsqueeze(-1) - offsets).expand(*batch_shape, -1))

    def expand(self, batch_shape: Any, _instance: Any = None) -> Wishart:
        new = self._get_checked_instance(Wishart, _instance)
        shape = tuple(batch_shape)
        cov_shape = shape + self.event_shape
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(*cov_shape)
        new.df = self.df.expand(*shape)
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(*cov_shape))
        Distribution.__init__(new, shape, self.event_shape, validate_args=False)
        new._dist_chi2 = new._chi2(new.df, shape)
        new._validate_args = self._validate_args
        return new  # type: ignore[no-any-return]

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(*self._batch_shape, *self._event_shape)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        low = self._unbroadcasted_scale_tril
        return (low @ low.mT).expand(*self._batch_shape, *self._event_shape)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        low = self._unbroadcasted_scale_tril
        identity = eye(self._event_shape[-1], dtype=low.dtype, device=low.device)
        return cholesky_solve(identity, low).expand(*self._batch_shape, *self._event_shape)

    def _df_matrix(self, df: Tensor) -> Tensor:
        return df.reshape(*self._batch_shape, 1, 1)

    @property
    def mean(self) -> Tensor:
        return self._df_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = where(factor <= 0, math.nan, factor)
        return self._df_matrix(factor) * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        v = self.covariance_matrix
        diag_v = v.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix(self.df) * (v.pow(2) + diag_v.unsqueeze(-1) * diag_v.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape: Any = ()) -> Tensor:
        diag = self._dist_chi2.rsample(sample_shape).sqrt()
        diag = diag.clamp(min=float(finfo(diag).eps))
        below = randn(*self._extended_shape(sample_shape), dtype=diag.dtype, device=diag.device).tril(-1)
        chol = self._unbroadcasted_scale_tril @ (below + diag.diag_embed())
        return chol @ chol.mT

    def rsample(self, sample_shape: Any = (), max_try_correction: int | None = None) -> Tensor:
        tries = 10 if max_try_correction is None else max_try_correction
        sample_shape = (sample_shape,) if isinstance(sample_shape, int) else tuple(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        singular = ~self.support.check(sample)  # PyTorch 2.x tests the valid ones here (and redraws those)
        if bool(singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(tries):
                redraw = self._bartlett_sampling(sample_shape)
                sample = where(singular.unsqueeze(-1).unsqueeze(-1), redraw, sample)
                singular = singular & ~self.support.check(redraw)
                if not bool(singular.any()):
                    break
        return sample

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        low = self._unbroadcasted_scale_tril
        return (
            -nu * (p * _LOG_2 / 2 + low.diagonal(dim1=-2, dim2=-1).log().sum(-1))
            - mvlgamma(nu / 2, p)
            + (nu - p - 1) / 2 * slogdet(value).logabsdet
            - cholesky_solve(value, low).diagonal(dim1=-2, dim2=-1).sum(-1) / 2
        )

    def entropy(self) -> Tensor:
        nu, p = self.df, self._event_shape[-1]
        low = self._unbroadcasted_scale_tril
        return (
            (p + 1) * (p * _LOG_2 / 2 + low.diagonal(dim1=-2, dim2=-1).log().sum(-1))
            + mvlgamma(nu / 2, p)
            - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p)
            + nu * p / 2
        )

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        nu, p = self.df, self._event_shape[-1]
        return -self.precision_matrix / 2, (nu - p - 1) / 2

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        x, y = natural_params
        p = self._event_shape[-1]
        return (y + (p + 1) / 2) * (-slogdet(-2 * x).logabsdet + _LOG_2 * p) + mvlgamma(y + (p + 1) / 2, p)
