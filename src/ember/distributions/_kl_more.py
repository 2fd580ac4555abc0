"""KL closed forms PyTorch registers for Gumbel, HalfNormal, Pareto, OneHotCategorical, TransformedDistribution,
ContinuousBernoulli, LowRankMultivariateNormal and ExponentialFamily (imported by the package ``__init__``, which
registers them)."""

from __future__ import annotations

import math
from typing import Any

from .._creation import full_like
from .._tensor import Tensor
from ..autograd import grad
from ..linalg import solve_triangular
from ..ops import digamma, lgamma, where
from .beta import Beta
from .continuous_bernoulli import ContinuousBernoulli
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .gumbel import Gumbel, euler_constant
from .half_normal import HalfNormal
from .kl import _kl_categorical_categorical, _kl_normal_normal, kl_divergence, register_kl
from .laplace import Laplace
from .lowrank_multivariate_normal import LowRankMultivariateNormal, _batch_lowrank_logdet, _batch_lowrank_mahalanobis
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .pareto import Pareto
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform
from .utils import broadcast_shapes, sum_rightmost

__all__: list[str] = []

_INF = float("inf")


def _infinite_like(t: Tensor) -> Tensor:
    return full_like(t, _INF)


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p: Gumbel, q: Gumbel) -> Tensor:
    ct1, ct2, ct3 = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t2 = ct1 * euler_constant
    t3 = (ct2 + lgamma(1 + ct1) - ct3).exp()
    return t1 + t2 + t3 - (1 + euler_constant)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p: HalfNormal, q: HalfNormal) -> Tensor:
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p: Pareto, q: Pareto) -> Tensor:
    scale_ratio, alpha_ratio = p.scale / q.scale, q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    return where(p.scale < q.scale, _INF, result)  # p's support starts below q's


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: TransformedDistribution, q: TransformedDistribution) -> Tensor:
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p: Exponential, q: Gumbel) -> Tensor:
    scale_rate_prod, loc_scale_ratio = p.rate * q.scale, q.loc / q.scale
    t1 = scale_rate_prod.log() - 1
    t2 = loc_scale_ratio.exp() * scale_rate_prod / (scale_rate_prod + 1)
    return t1 - loc_scale_ratio + t2 + scale_rate_prod.reciprocal()


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p: Gamma, q: Gumbel) -> Tensor:
    a, beta_scale_prod, loc_scale_ratio = p.concentration, p.rate * q.scale, q.loc / q.scale
    t1 = (a - 1) * digamma(a) - lgamma(a) - a
    t2 = beta_scale_prod.log() + a / beta_scale_prod
    t3 = loc_scale_ratio.exp() * (1 + beta_scale_prod.reciprocal()).pow(-a) - loc_scale_ratio
    return t1 + t2 + t3


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p: Gumbel, q: Normal) -> Tensor:
    param_ratio = p.scale / q.scale
    t1 = (param_ratio / math.sqrt(2 * math.pi)).log()
    t2 = (math.pi * param_ratio * 0.5).pow(2) / 3
    t3 = ((p.loc + p.scale * euler_constant - q.loc) / q.scale).pow(2) * 0.5
    return -t1 + t2 + t3 - (euler_constant + 1)


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p: Normal, q: Gumbel) -> Tensor:
    mean_scale_ratio, var_scale_sqr_ratio = p.loc / q.scale, (p.scale / q.scale).pow(2)
    loc_scale_ratio = q.loc / q.scale
    t1 = var_scale_sqr_ratio.log() * 0.5
    t2 = mean_scale_ratio - loc_scale_ratio
    t3 = (-mean_scale_ratio + 0.5 * var_scale_sqr_ratio + loc_scale_ratio).exp()
    return -t1 + t2 + t3 - (0.5 * (1 + math.log(2 * math.pi)))


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p: Uniform, q: Gumbel) -> Tensor:
    common_term = q.scale / (p.high - p.low)
    high_loc_diff, low_loc_diff = (p.high - q.loc) / q.scale, (p.low - q.loc) / q.scale
    t1 = common_term.log() + 0.5 * (high_loc_diff + low_loc_diff)
    t2 = common_term * ((-high_loc_diff).exp() - (-low_loc_diff).exp())
    return t1 - t2


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p: Pareto, q: Exponential) -> Tensor:
    alpha = where(p.alpha <= 1, 2.0, p.alpha)  # the finite branch away from its pole
    scale_rate_prod = p.scale * q.rate
    result = (alpha / scale_rate_prod).log() - alpha.reciprocal() + alpha * scale_rate_prod / (alpha - 1) - 1
    return where(p.alpha <= 1, _INF, result)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p: Pareto, q: Gamma) -> Tensor:
    alpha = where(p.alpha <= 1, 2.0, p.alpha)
    common_term = p.scale.log() + alpha.reciprocal()
    t1 = alpha.log() - common_term
    t2 = lgamma(q.concentration) - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * common_term
    t4 = q.rate * alpha * p.scale / (alpha - 1)
    return where(p.alpha <= 1, _INF, t1 + t2 + t3 + t4 - 1)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p: Pareto, q: Normal) -> Tensor:
    alpha = where(p.alpha <= 2, 3.0, p.alpha)
    var_normal = 2 * q.scale.pow(2)
    common_term = p.scale / (alpha - 1)
    t1 = (math.sqrt(2 * math.pi) * q.scale * alpha / p.scale).log()
    t3 = alpha * common_term.pow(2) / (alpha - 2)
    t4 = (alpha * common_term - q.loc).pow(2)
    return where(p.alpha <= 2, _INF, t1 - alpha.reciprocal() + (t3 + t4) / var_normal - 1)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p: Uniform, q: Pareto) -> Tensor:
    support_uniform = p.high - p.low
    t1 = (q.alpha * q.scale.pow(q.alpha) * support_uniform).log()
    t2 = (p.high * p.high.log() - p.low * p.low.log() - support_uniform) / support_uniform
    return where(p.low < q.scale, _INF, t2 * (q.alpha + 1) - t1)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p: ExponentialFamily, q: ExponentialFamily) -> Tensor:
    """The Bregman divergence of the log-normaliser between the natural parameters (same family only)."""
    if type(p) is not type(q):
        raise NotImplementedError(
            "The cross KL-divergence between different exponential families cannot be computed using Bregman "
            "divergences"
        )
    p_nparams = [t.detach().requires_grad_() for t in p._natural_params]
    q_nparams = q._natural_params
    lg_normal = p._log_normalizer(*p_nparams)
    gradients = grad(lg_normal.sum(), p_nparams, create_graph=True)
    result = q._log_normalizer(*q_nparams) - lg_normal
    for pnp, qnp, g in zip(p_nparams, q_nparams, gradients, strict=True):
        result = result - sum_rightmost((qnp - pnp) * g, len(q.event_shape))
    return result


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p: ContinuousBernoulli, q: ContinuousBernoulli) -> Tensor:
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + (-p.probs).log1p()
    t3 = -q._cont_bern_log_norm() - (-q.probs).log1p()
    return t1 + t2 + t3


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p: ContinuousBernoulli, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p: ContinuousBernoulli, q: Normal) -> Tensor:
    t2 = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale).square()) + q.scale.log()
    t3 = (p.variance + p.mean.square() - 2.0 * q.loc * p.mean) / (2.0 * q.scale.square())
    return -p.entropy() + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p: ContinuousBernoulli, q: Uniform) -> Tensor:
    # inf where q does not cover [0, 1] (PyTorch also says inf when q's bounds equal 0 or 1 exactly)
    result = -p.entropy() + (q.high - q.low).log()
    return where((q.low > 0) | (q.high < 1), _INF, result)


def _kl_to_continuous_bernoulli(p: Beta | Uniform, q: ContinuousBernoulli) -> Tensor:
    return -p.entropy() - p.mean * q.logits - (-q.probs).log1p() - q._cont_bern_log_norm()


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p: Beta, q: ContinuousBernoulli) -> Tensor:
    return _kl_to_continuous_bernoulli(p, q)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p: Uniform, q: ContinuousBernoulli) -> Tensor:
    # inf where p reaches outside [0, 1] (PyTorch also says inf when p's bounds equal 0 or 1 exactly)
    return where((p.high > 1) | (p.low < 0), _INF, _kl_to_continuous_bernoulli(p, q))


def _trace_xxt(x: Tensor) -> Tensor:
    """``trace(X X^T)`` over the last two dims: the sum of squares."""
    return x.pow(2).sum((-2, -1))


def _check_events(p: Any, q: Any) -> None:
    if p.event_shape != q.event_shape:
        raise ValueError(
            "KL-divergence between two (Low Rank) Multivariate Normals with different event shapes cannot be computed"
        )


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_lowrank(p: LowRankMultivariateNormal, q: LowRankMultivariateNormal) -> Tensor:
    _check_events(p, q)
    pw, pd, qw, qd = (
        p._unbroadcasted_cov_factor,
        p._unbroadcasted_cov_diag,
        q._unbroadcasted_cov_factor,
        q._unbroadcasted_cov_diag,
    )
    term1 = _batch_lowrank_logdet(qd, q._capacitance_tril) - _batch_lowrank_logdet(pd, p._capacitance_tril)
    term3 = _batch_lowrank_mahalanobis(qw, qd, q.loc - p.loc, q._capacitance_tril)
    a = solve_triangular(q._capacitance_tril, qw.mT / qd.unsqueeze(-2), upper=False)
    term2 = (
        (pd / qd).sum(-1)
        + _trace_xxt(pw * qd.rsqrt().unsqueeze(-1))
        - _trace_xxt(a * pd.sqrt().unsqueeze(-2))
        - _trace_xxt(a @ pw)
    )
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrank_mvn(p: LowRankMultivariateNormal, q: MultivariateNormal) -> Tensor:
    _check_events(p, q)
    q_tril = q._unbroadcasted_scale_tril
    term1 = 2 * q_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) - _batch_lowrank_logdet(
        p._unbroadcasted_cov_diag, p._capacitance_tril
    )
    term3 = _batch_mahalanobis(q_tril, q.loc - p.loc)
    batch = broadcast_shapes(tuple(q_tril.shape[:-2]), tuple(p._unbroadcasted_cov_factor.shape[:-2]))
    n = p.event_shape[0]
    q_tril = q_tril.expand(*batch, n, n)
    p_cov_factor = p._unbroadcasted_cov_factor.expand(*batch, n, p.cov_factor.shape[-1])
    p_cov_diag = p._unbroadcasted_cov_diag.sqrt().diag_embed().expand(*batch, n, n)
    term2 = _trace_xxt(solve_triangular(q_tril, p_cov_factor, upper=False)) + _trace_xxt(
        solve_triangular(q_tril, p_cov_diag, upper=False)
    )
    return 0.5 * (term1 + term2 + term3 - n)


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_mvn_lowrank(p: MultivariateNormal, q: LowRankMultivariateNormal) -> Tensor:
    _check_events(p, q)
    qw, qd = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag
    p_tril = p._unbroadcasted_scale_tril
    term1 = _batch_lowrank_logdet(qd, q._capacitance_tril) - 2 * p_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    term3 = _batch_lowrank_mahalanobis(qw, qd, q.loc - p.loc, q._capacitance_tril)
    a = solve_triangular(q._capacitance_tril, qw.mT / qd.unsqueeze(-2), upper=False)
    term2 = _trace_xxt(p_tril * qd.rsqrt().unsqueeze(-1)) - _trace_xxt(a @ p_tril)
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])


def _kl_infinity_loc(p: Gumbel, q: object) -> Tensor:
    return _infinite_like(p.loc)


def _kl_infinity_scale(p: Pareto, q: object) -> Tensor:
    return _infinite_like(p.scale)


# p's support is unbounded where q's is not (or the other way round): PyTorch returns inf for these pairs
for _q in (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform):
    register_kl(Gumbel, _q)(_kl_infinity_loc)
for _q in (Beta, ContinuousBernoulli, Uniform):
    register_kl(Pareto, _q)(_kl_infinity_scale)
register_kl(ContinuousBernoulli, Pareto)(lambda p, q: _infinite_like(p.probs))
register_kl(Exponential, ContinuousBernoulli)(lambda p, q: _infinite_like(p.rate))
register_kl(Gamma, ContinuousBernoulli)(lambda p, q: _infinite_like(p.concentration))
register_kl(Laplace, ContinuousBernoulli)(lambda p, q: _infinite_like(p.loc))
register_kl(Normal, ContinuousBernoulli)(lambda p, q: _infinite_like(p.loc))
register_kl(Beta, Pareto)(lambda p, q: _infinite_like(p.concentration1))
register_kl(Exponential, Pareto)(lambda p, q: _infinite_like(p.rate))
register_kl(Gamma, Pareto)(lambda p, q: _infinite_like(p.concentration))
register_kl(Laplace, Pareto)(lambda p, q: _infinite_like(p.loc))
register_kl(Normal, Pareto)(lambda p, q: _infinite_like(p.loc))
