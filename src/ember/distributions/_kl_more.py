"""KL closed forms PyTorch registers for Gumbel, HalfNormal, Pareto, OneHotCategorical and
TransformedDistribution (imported by the package ``__init__``, which registers them)."""

from __future__ import annotations

import math

from .._creation import full_like
from .._tensor import Tensor
from ..ops import digamma, lgamma, where
from .beta import Beta
from .exponential import Exponential
from .gamma import Gamma
from .gumbel import Gumbel, euler_constant
from .half_normal import HalfNormal
from .kl import _kl_categorical_categorical, _kl_normal_normal, kl_divergence, register_kl
from .laplace import Laplace
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .pareto import Pareto
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform

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


def _kl_infinity_loc(p: Gumbel, q: object) -> Tensor:
    return _infinite_like(p.loc)


def _kl_infinity_scale(p: Pareto, q: object) -> Tensor:
    return _infinite_like(p.scale)


# p's support is unbounded where q's is not (or the other way round): PyTorch returns inf for these pairs
for _q in (Beta, Exponential, Gamma, Pareto, Uniform):
    register_kl(Gumbel, _q)(_kl_infinity_loc)
for _q in (Beta, Uniform):
    register_kl(Pareto, _q)(_kl_infinity_scale)
register_kl(Beta, Pareto)(lambda p, q: _infinite_like(p.concentration1))
register_kl(Exponential, Pareto)(lambda p, q: _infinite_like(p.rate))
register_kl(Gamma, Pareto)(lambda p, q: _infinite_like(p.concentration))
register_kl(Laplace, Pareto)(lambda p, q: _infinite_like(p.loc))
register_kl(Normal, Pareto)(lambda p, q: _infinite_like(p.loc))
