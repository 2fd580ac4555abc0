"""The multivariate normal distribution, parameterised by a covariance, precision or Cholesky factor."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from .._creation import eye, randn
from .._tensor import Tensor
from ..linalg import cholesky, solve_triangular
from . import constraints
from .distribution import Distribution
from .utils import broadcast_shapes, lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mahalanobis(tril: Tensor, x: Tensor) -> Tensor:
    """``x^T (L L^T)^-1 x`` over the last dim, for ``L = tril`` lower-triangular (batch dims broadcast)."""
    m = solve_triangular(tril, x.unsqueeze(-1), upper=False)
    return (m**2).sum((-2, -1))


def _precision_to_scale_tril(prec: Tensor) -> Tensor:
    # the Cholesky factor of P^-1 without forming it: flip, factor, flip back, invert a triangle
    P = prec
    Lf = cholesky(P.flip((-2, -1)))
    L_inv = Lf.flip((-2, -1)).transpose(-2, -1)
    ident = eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return solve_triangular(L_inv, ident.expand(*L_inv.shape), upper=False)


class MultivariateNormal(Distribution):
    """MultivariateNormal(loc, covariance_matrix=None, precision_matrix=None, scale_tril=None): give one matrix."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        loc: Tensor,
        covariance_matrix: Tensor | None = None,
        precision_matrix: Tensor | None = None,
        scale_tril: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        if not isinstance(loc, Tensor) or loc.ndim < 1:
            raise ValueError("MultivariateNormal: loc must be at least one-dimensional.")
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ValueError(
                "MultivariateNormal: exactly one of covariance_matrix or precision_matrix or scale_tril may be "
                "specified."
            )
        m = given[0]
        name = (
            "scale_tril"
            if scale_tril is not None
            else ("covariance_matrix" if covariance_matrix is not None else "precision_matrix")
        )
        if m.ndim < 2 or m.shape[-1] != m.shape[-2]:
            raise ValueError(f"MultivariateNormal: {name} must be a square matrix (or batch), got {tuple(m.shape)}")
        if m.shape[-1] != loc.shape[-1]:
            raise ValueError(
                f"MultivariateNormal: {name} of shape {tuple(m.shape)} does not match loc of shape {tuple(loc.shape)}"
            )
        batch = broadcast_shapes(tuple(m.shape[:-2]), tuple(loc.shape[:-1]))
        mat = m.expand(*batch, *m.shape[-2:])
        setattr(self, name, mat)
        self.loc = loc.expand(*batch, loc.shape[-1])
        super().__init__(batch, loc.shape[-1:], validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)  # type: ignore[arg-type]

    def expand(self, batch_shape: Any, _instance: Any = None) -> MultivariateNormal:
        new = self._get_checked_instance(MultivariateNormal, _instance)
        shape = tuple(batch_shape)
        d = self._event_shape
        new.loc = self.loc.expand(*shape, *d)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(*shape, *d, *d))
        Distribution.__init__(new, shape, d, validate_args=False)
        new._validate_args = self._validate_args
        return new  # type: ignore[no-any-return]

    @lazy_property
    def scale_tril(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return L.expand(*self._batch_shape, *L.shape[-2:])

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return (L @ L.transpose(-2, -1)).expand(*self._batch_shape, *L.shape[-2:])

    @lazy_property
    def precision_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        ident = eye(L.shape[-1], dtype=L.dtype, device=L.device)
        L_inv = solve_triangular(L, ident.expand(*L.shape), upper=False)
        return (L_inv.transpose(-2, -1) @ L_inv).expand(*self._batch_shape, *L.shape[-2:])

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return (self._unbroadcasted_scale_tril**2).sum(-1).expand(*self._batch_shape, *self._event_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = randn(*shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        L = self._unbroadcasted_scale_tril
        M = _batch_mahalanobis(L, diff)
        half_log_det = L.diagonal(0, -2, -1).log().sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M) - half_log_det

    def entropy(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        half_log_det = L.diagonal(0, -2, -1).log().sum(-1)
        h = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        return h if len(self._batch_shape) == 0 else h.expand(*self._batch_shape)
