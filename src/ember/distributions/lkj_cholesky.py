"""The LKJ distribution over Cholesky factors of correlation matrices."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from .._creation import arange, randn
from .._tensor import Tensor
from ..autograd import no_grad
from ..ops import cat, lgamma, mvlgamma, where
from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all, finfo

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """LKJCholesky(dim, concentration=1.0): ``L`` with ``L L^T`` LKJ(concentration)-distributed over ``dim x dim``
    correlation matrices; ``concentration = 1`` is uniform over correlation matrices. Sampled by the onion
    method (Lewandowski, Kurowicka and Joe, 2009); not reparameterisable. ``log_prob`` is PyTorch's; the sampler's
    Beta concentrations are the paper's, where PyTorch's give wrong marginals for ``dim >= 3``."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration: Any = 1.0, validate_args: bool | None = None) -> None:
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        c = self.concentration
        marginal_conc = c + 0.5 * (self.dim - 2)
        # row i (i >= 1) of L is sqrt(y_i) times a uniform unit vector in R^i, y_i ~ Beta(i / 2, marginal - (i - 1) / 2)
        # (Algorithm 3.2 of LKJ 2009; row 0 is e_0 and ignores its draw). PyTorch 2.x uses i - 1/2 as the first
        # concentration, which gives the wrong marginals for dim >= 3 (see the tests).
        offset = arange(self.dim - 1, dtype=c.dtype, device=c.device)
        offset = cat([offset.new_zeros((1,)), offset])
        self._beta = Beta(0.5 * offset + 0.5, marginal_conc.unsqueeze(-1) - 0.5 * offset, validate_args=False)
        super().__init__(c.shape, (dim, dim), validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> LKJCholesky:
        new = self._get_checked_instance(LKJCholesky, _instance)
        shape = tuple(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(*shape)
        new._beta = self._beta.expand(shape + (self.dim,))
        Distribution.__init__(new, shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new  # type: ignore[no-any-return]

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u_normal = randn(*self._extended_shape(sample_shape), dtype=y.dtype, device=y.device).tril(-1)
            norm = (u_normal**2).sum(-1, keepdim=True).sqrt()
            u_hypersphere = u_normal / where(norm > 0, norm, 1.0)  # row 0 is all zero (and stays so)
            w = y.sqrt() * u_hypersphere
            diag = (1 - (w**2).sum(-1)).clamp(min=float(finfo(w).tiny)).sqrt()
            return w + diag.diag_embed()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = arange(2, self.dim + 1, dtype=self.concentration.dtype, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = (order * diag_elems.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = lgamma(alpha) * dm1
        numerator = mvlgamma(alpha - 0.5, dm1)
        normalize_term = 0.5 * dm1 * math.log(math.pi) + numerator - denominator
        return unnormalized_log_pdf - normalize_term
