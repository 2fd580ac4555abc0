"""Losses beyond cross entropy: binary cross entropy, regression losses, divergences and margins."""

from __future__ import annotations

import math
from typing import Any

from ..._errors import ShapeError, ValueRangeError
from ..._tensor import Tensor
from ...autograd._autocast import autocast_op
from ...autograd._function import Op
from ...ops._comparison import minimum
from ...ops._indexing import where
from ...ops._pointwise_special import xlogy
from ...ops._pointwise_unary import clamp, exp, log
from ...ops._util import _float, same_dtype
from ._activation import softplus
from ._basic import _broadcast_pair, _check_target_shape, _reduce, _reduce_weighted, legacy_reduction
from ._distance import pairwise_distance

__all__ = [
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_embedding_loss", "gaussian_nll_loss",
    "hinge_embedding_loss", "huber_loss", "kl_div", "l1_loss", "margin_ranking_loss", "poisson_nll_loss",
    "smooth_l1_loss", "soft_margin_loss", "triplet_margin_loss",
]  # fmt: skip


def _same_shape(op: str, input: Tensor, target: Tensor) -> None:
    if input.shape != target.shape:
        raise ShapeError(f"{op}: input shape {tuple(input.shape)} and target shape {tuple(target.shape)} must match")


def _fits(op: str, name: str, t: Any, input: Tensor) -> None:
    """``t`` (a weight, a target) broadcasts to the input's shape; it never enlarges it (PyTorch refuses that)."""
    shape = tuple(getattr(t, "shape", ()))
    if len(shape) > input.ndim or any(a not in (1, b) for a, b in zip(shape[::-1], tuple(input.shape)[::-1])):
        raise ShapeError(f"{op}: {name} of shape {shape} does not broadcast to the input's shape {tuple(input.shape)}")


def _check_probabilities(op: str, target: Tensor) -> None:
    """Targets of a binary cross entropy are probabilities: a value outside [0, 1] is a mistake, not a label."""
    xp, t, kind = target._backend.xp, target._data, target.dtype.kind
    if not target._backend.host_checks or 0 in t.shape:  # on torch's CUDA the check would wait for it
        return
    if kind == "f" and not bool(xp.all((t >= 0) & (t <= 1))):
        bad = t[~((t >= 0) & (t <= 1))].reshape(-1)[0].item()
        raise ValueRangeError(f"{op}: target values must be in [0, 1] (probabilities or 0/1 labels), found {bad}")
    if kind in "iu" and not bool(xp.all((t == 0) | (t == 1))):
        bad = t[~((t == 0) | (t == 1))].reshape(-1)[0].item()
        raise ValueRangeError(f"{op}: target values must be in [0, 1] (probabilities or 0/1 labels), found {bad}")


class BinaryCrossEntropy(Op):
    """``-(t log x + (1 - t) log(1 - x))`` elementwise, each log clamped at -100 (PyTorch's forward).

    Its own backward because the composite's is NaN at x = 0 or 1 (the clamp stops the gradient of an
    infinite log): PyTorch's is ``(x - t) / max(x (1 - x), 1e-12)`` for ``x`` and ``log(1 - x) - log(x)``
    for ``t``, finite for x in (0, 1) and at its ends.
    """

    def forward(self, x: Any, t: Any) -> Any:
        xp = self.backend.xp
        return -(t * xp.maximum(xp.log(x), -100.0) + (1 - t) * xp.maximum(xp.log(1 - x), -100.0))

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        x, t = self.inputs  # type: ignore[misc]
        ex, et = self._edges  # type: ignore[misc]
        gx = None if ex is None else g * (x - t) / clamp(x * (1 - x), min=1e-12)
        gt = None if et is None else g * (log(1 - x) - log(x))
        return gx, gt


@autocast_op("binary_cross_entropy")
def binary_cross_entropy(
    input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None, reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:  # fmt: skip
    """``-(t log p + (1 - t) log(1 - p))`` for probabilities ``input``; logs clamped at -100 as in PyTorch."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _same_shape("binary_cross_entropy", input, target)
    _check_probabilities("binary_cross_entropy", target)
    same_dtype("binary_cross_entropy", "input and target", input, target)
    xp = input._backend.xp
    p = input._data
    if input._backend.host_checks and 0 not in p.shape and bool(xp.any((p < 0) | (p > 1) | xp.isnan(p))):
        raise ValueRangeError(
            "binary_cross_entropy: input must hold probabilities in [0, 1]; use the _with_logits form"
        )
    x = _float(input)
    loss = BinaryCrossEntropy.apply(x, target.to(x.dtype))
    if weight is not None:
        _fits("binary_cross_entropy", "weight", weight, input)
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy")


@autocast_op("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """Sigmoid + binary cross entropy in one stable expression; ``pos_weight`` scales the positive term."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _same_shape("binary_cross_entropy_with_logits", input, target)
    _check_probabilities("binary_cross_entropy_with_logits", target)
    for name, t_ in (("weight", weight), ("pos_weight", pos_weight)):
        if t_ is not None:
            _fits("binary_cross_entropy_with_logits", name, t_, input)
    x = _float(input)
    t = target if target.dtype.is_floating_point else target.to(x.dtype)  # a float target promotes, as in PyTorch
    sp = softplus(-x)  # -log(sigmoid(x)), finite for any x
    if pos_weight is not None:
        loss = (1 - t) * x + (1 + (pos_weight - 1) * t) * sp
    else:
        loss = (1 - t) * x + sp
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


@autocast_op("l1_loss")
def l1_loss(
    input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:  # fmt: skip
    """Mean absolute error; ``weight`` (the input's shape) scales each term, and 'mean' divides by its sum."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_target_shape("l1_loss", input, target)
    shape = input.shape
    input, target = _broadcast_pair(input, target)
    return _reduce_weighted((input - target).abs(), weight, reduction, "l1_loss", shape)


@autocast_op("smooth_l1_loss")
def smooth_l1_loss(
    input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:  # fmt: skip
    """Quadratic below ``beta`` (``0.5 d^2 / beta``), linear above (``|d| - beta / 2``)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_target_shape("smooth_l1_loss", input, target)
    input, target = _broadcast_pair(input, target)
    diff = input - target
    d = diff.abs()
    if beta == 0:
        return _reduce(d, reduction, "smooth_l1_loss")
    small = d < beta
    # the quadratic branch never sees a large (or infinite) d: its gradient stays 0 there; it squares the signed
    # difference (|d|^2's second derivative at d = 0 came out 0 through abs's, not 1 / beta)
    q = where(small, diff, 0.0)
    return _reduce(where(small, 0.5 * q * q / beta, d - 0.5 * beta), reduction, "smooth_l1_loss")


@autocast_op("huber_loss")
def huber_loss(
    input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0, weight: Tensor | None = None
) -> Tensor:
    """Quadratic below ``delta`` (``0.5 d^2``), linear above (``delta (|d| - delta / 2)``); ``weight`` scales each
    term, and 'mean' divides by the element count (PyTorch's rule here; mse/l1 divide by the weights' sum)."""
    _check_target_shape("huber_loss", input, target)
    if not delta > 0:
        raise ValueRangeError(f"huber_loss does not support non-positive values for delta, got {delta}")
    diff = input - target
    d = diff.abs()
    small = d < delta
    q = where(small, diff, 0.0)  # (see smooth_l1_loss)
    loss = where(small, 0.5 * q * q, delta * (d - 0.5 * delta))
    return _reduce_weighted(loss, weight, reduction, "huber_loss", input.shape, weighted_mean=False)


@autocast_op("kl_div")
def kl_div(
    input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:  # fmt: skip
    """KL(target || exp(input)) pointwise: ``target * (log target - input)``; ``reduction='batchmean'`` divides by N."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if log_target:
        loss = exp(target) * (target - input)
    else:  # 0 log 0 = 0 (PyTorch's xlogy); a negative target gives NaN, as there
        loss = xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return _reduce(loss, reduction, "kl_div")


@autocast_op("cosine_embedding_loss")
def cosine_embedding_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, size_average: Any = None,
    reduce: Any = None, reduction: str = "mean",
) -> Tensor:  # fmt: skip
    """``1 - cos`` for target 1, ``max(0, cos - margin)`` for target -1 (0 for other targets, as in PyTorch)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    eps = 1e-12
    dim = input1.ndim - 1
    prod = (input1 * input2).sum(dim)
    mag = ((input1 * input1).sum(dim) + eps) * ((input2 * input2).sum(dim) + eps)
    cos = prod / mag.sqrt()
    loss = where(target == 1, 1 - cos, 0.0) + where(target == -1, (cos - margin).clamp(min=0), 0.0)
    return _reduce(loss, reduction, "cosine_embedding_loss")


@autocast_op("margin_ranking_loss")
def margin_ranking_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, size_average: Any = None,
    reduce: Any = None, reduction: str = "mean",
) -> Tensor:  # fmt: skip
    """``max(0, -target * (input1 - input2) + margin)`` (any target values, as in PyTorch)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0), reduction, "margin_ranking_loss")


@autocast_op("hinge_embedding_loss")
def hinge_embedding_loss(
    input: Tensor, target: Tensor, margin: float = 1.0, size_average: Any = None, reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:  # fmt: skip
    """``x`` for target 1, ``max(0, margin - x)`` for target -1 (PyTorch's sum of both terms, where ``target != -1``
    and ``target != 1``, for other target values)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    loss = where(target != 1, (margin - input).clamp(min=0), 0.0) + where(target != -1, input, 0.0)
    return _reduce(loss, reduction, "hinge_embedding_loss")


@autocast_op("soft_margin_loss")
def soft_margin_loss(
    input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None, reduction: str = "mean"
) -> Tensor:
    """``log(1 + exp(-y x))``."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _fits("soft_margin_loss", "target", target, input)
    return _reduce(softplus(-target * input), reduction, "soft_margin_loss")


@autocast_op("triplet_margin_loss")
def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2.0,
    eps: float = 1e-6,
    swap: bool = False,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)`` with p-norm distances."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if not margin > 0:
        raise ValueRangeError(f"triplet_margin_loss: margin must be greater than 0, got {margin}")
    dp = pairwise_distance(anchor, positive, p, eps)
    dn = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dn = minimum(dn, pairwise_distance(positive, negative, p, eps))
    return _reduce((dp - dn + margin).clamp(min=0), reduction, "triplet_margin_loss")


@autocast_op("poisson_nll_loss")
def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: bool = True,
    full: bool = False,
    size_average: Any = None,
    eps: float = 1e-8,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of a Poisson target with rate ``exp(input)`` (or ``input``)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    loss = exp(input) - target * input if log_input else input - target * log(input + eps)
    if full:
        t = target
        stirling = t * log(where(t > 1, t, 1.0)) - t + 0.5 * log(where(t > 1, 2 * math.pi * t, 1.0))
        loss = loss + where(t > 1, stirling, 0.0)
    return _reduce(loss, reduction, "poisson_nll_loss")


def gaussian_nll_loss(
    input: Tensor, target: Tensor, var: Any, full: bool = False, eps: float = 1e-6, reduction: str = "mean"
) -> Tensor:
    """``0.5 (log var + (input - target)^2 / var)`` (+ a constant with ``full``).

    ``var`` has the input's shape, or one dim less (one variance per sample), or one dim of size 1; it is
    clamped at ``eps`` for the value only: the gradient passes the clamp as PyTorch's (a no-grad clamp).
    """
    if isinstance(var, Tensor):
        if var.shape != input.shape:
            if tuple(var.shape) == tuple(input.shape[:-1]):
                var = var.unsqueeze(-1)  # one variance per sample: it covers the last dim
            elif not (var.ndim == input.ndim and sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1):
                raise ShapeError(f"gaussian_nll_loss: var of shape {tuple(var.shape)} does not fit input of shape "
                                 f"{tuple(input.shape)}; give the input's shape, the input's shape without its "
                                 "last dim, or the input's shape with one dim of size 1")  # fmt: skip
        if var.numel() and bool((var < 0).any()):  # read back on every device, as PyTorch's check
            raise ValueRangeError("gaussian_nll_loss: var has negative entries")
        v = where(var < eps, var + (eps - var).detach(), var)
    else:
        if float(var) < 0:
            raise ValueRangeError(f"gaussian_nll_loss: var must be >= 0, got {var}")
        v = max(float(var), eps)
    if reduction not in ("none", "mean", "sum"):
        raise ValueRangeError(f"gaussian_nll_loss: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")
    lv = log(v) if isinstance(v, Tensor) else math.log(v)
    loss = 0.5 * (lv + (input - target) ** 2 / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction, "gaussian_nll_loss")
