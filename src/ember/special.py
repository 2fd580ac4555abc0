"""``ember.special``: ``torch.special``'s namespace — special functions with PyTorch's names and gradients.

Each is an Ember operator (most in ``ops/_special_fns.py`` and ``ops/_pointwise_special.py``); the arrays come
from backend kernels (SciPy's special module on NumPy, ``torch.special`` on torch).
"""

from __future__ import annotations

from ._tensor import Tensor
from .nn.functional import log_softmax, softmax
from .ops._pointwise_special import digamma, erf, erfc, erfinv, igamma, lgamma, logit, mvlgamma, polygamma, xlogy
from .ops._pointwise_unary import exp2, expm1, log1p, round, sigmoid, sinc
from .ops._reduction import logsumexp
from .ops._special_fns import (
    NOGRAD_FNS,
    POLYNOMIAL_FNS,
    entr,
    erfcx,
    gammaincc,
    i0,
    i0e,
    i1,
    i1e,
    log_ndtr,
    ndtr,
    ndtri,
    xlog1py,
    zeta,
)

expit = sigmoid
psi = digamma
gammaln = lgamma
gammainc = igamma


def multigammaln(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma function of dimension ``p`` (``torch.special.multigammaln``)."""
    return mvlgamma(input, p)


airy_ai = NOGRAD_FNS["airy_ai"]
bessel_j0 = NOGRAD_FNS["bessel_j0"]
bessel_j1 = NOGRAD_FNS["bessel_j1"]
bessel_y0 = NOGRAD_FNS["bessel_y0"]
bessel_y1 = NOGRAD_FNS["bessel_y1"]
modified_bessel_i0 = NOGRAD_FNS["modified_bessel_i0"]
modified_bessel_i1 = NOGRAD_FNS["modified_bessel_i1"]
modified_bessel_k0 = NOGRAD_FNS["modified_bessel_k0"]
modified_bessel_k1 = NOGRAD_FNS["modified_bessel_k1"]
scaled_modified_bessel_k0 = NOGRAD_FNS["scaled_modified_bessel_k0"]
scaled_modified_bessel_k1 = NOGRAD_FNS["scaled_modified_bessel_k1"]
spherical_bessel_j0 = NOGRAD_FNS["spherical_bessel_j0"]
chebyshev_polynomial_t = POLYNOMIAL_FNS["chebyshev_polynomial_t"]
chebyshev_polynomial_u = POLYNOMIAL_FNS["chebyshev_polynomial_u"]
chebyshev_polynomial_v = POLYNOMIAL_FNS["chebyshev_polynomial_v"]
chebyshev_polynomial_w = POLYNOMIAL_FNS["chebyshev_polynomial_w"]
shifted_chebyshev_polynomial_t = POLYNOMIAL_FNS["shifted_chebyshev_polynomial_t"]
shifted_chebyshev_polynomial_u = POLYNOMIAL_FNS["shifted_chebyshev_polynomial_u"]
shifted_chebyshev_polynomial_v = POLYNOMIAL_FNS["shifted_chebyshev_polynomial_v"]
shifted_chebyshev_polynomial_w = POLYNOMIAL_FNS["shifted_chebyshev_polynomial_w"]
hermite_polynomial_h = POLYNOMIAL_FNS["hermite_polynomial_h"]
hermite_polynomial_he = POLYNOMIAL_FNS["hermite_polynomial_he"]
laguerre_polynomial_l = POLYNOMIAL_FNS["laguerre_polynomial_l"]
legendre_polynomial_p = POLYNOMIAL_FNS["legendre_polynomial_p"]


def __dir__() -> list[str]:
    return __all__


__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
    "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2",
    "expit", "expm1", "gammainc", "gammaincc", "gammaln", "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e",
    "i1", "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log1p", "log_ndtr", "log_softmax", "logit",
    "logsumexp", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
    "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round", "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc", "softmax", "spherical_bessel_j0",
    "xlog1py", "xlogy", "zeta",
]  # fmt: skip
