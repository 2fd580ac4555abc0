"""Multi-class and multi-label margin losses, and the triplet loss with any distance (PyTorch's definitions)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..._creation import arange
from ..._errors import DTypeError, ShapeError, ValueRangeError
from ..._tensor import Tensor
from ...ops import minimum, where
from ...ops._util import _float
from ._activation import logsigmoid
from ._basic import _reduce, legacy_reduction

__all__ = [
    "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss", "triplet_margin_with_distance_loss",
]  # fmt: skip


def _classes(op: str, input: Tensor, target: Tensor, per_sample: int) -> tuple[Tensor, Tensor]:
    """(N, C) input and its target, from PyTorch's () / (C) / (N, C) forms (``per_sample``: the target's dims per
    sample, 0 for a class index, 1 for a row of labels)."""
    if input.ndim > 2:
        raise ShapeError(f"{op}: expected a 0-d, 1-d (C) or 2-d (N, C) input, got shape {tuple(input.shape)}")
    x = _float(input).reshape(1, -1) if input.ndim < 2 else _float(input)
    t = target.reshape((1, -1) if per_sample else (-1,)) if input.ndim < 2 else target
    if t.dtype.is_floating_point and op != "multilabel_soft_margin_loss":
        raise DTypeError(f"{op}: target must hold class indices (an integer tensor), got {target.dtype}")
    return x, t


def multi_margin_loss(
    input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
    size_average: Any = None, reduce: Any = None, reduction: str = "mean",
) -> Tensor:  # fmt: skip
    """``sum_{i != y} max(0, margin - x[y] + x[i])^p / C`` per sample (weighted by ``weight[y]``)."""

    reduction = legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueRangeError(f"multi_margin_loss: p must be 1 or 2, got {p}")
    x, t = _classes("multi_margin_loss", input, target, 0)
    n, c = x.shape
    if t.shape != (n,):
        raise ShapeError(
            f"multi_margin_loss: target shape {tuple(target.shape)} does not match input {tuple(input.shape)}"
        )
    xy = x.gather(1, t.reshape(n, 1))
    terms = (margin - xy + x).clamp(min=0)
    if p == 2:
        terms = terms * terms
    if weight is not None:
        terms = terms * weight[t].reshape(n, 1)
    loss = where(t.reshape(n, 1) == arange(c, device=x.device), 0.0, terms).sum(1) / c
    return _reduce(loss if input.ndim == 2 else loss.reshape(()), reduction, "multi_margin_loss")


def multilabel_margin_loss(
    input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None, reduction: str = "mean"
) -> Tensor:
    """``sum_{j in y} sum_{i not in y} max(0, 1 - (x[j] - x[i])) / C``; ``y`` is ``target`` up to its first -1."""

    reduction = legacy_reduction(size_average, reduce, reduction)
    x, t = _classes("multilabel_margin_loss", input, target, 1)
    if t.shape != x.shape:
        raise ShapeError(
            f"multilabel_margin_loss: target shape {tuple(target.shape)} must match input {tuple(input.shape)}"
        )
    c = x.shape[1]
    valid = (t >= 0).long().cumprod(1).bool()  # the labels before the first -1
    safe = where(valid, t, 0)
    is_target = ((safe.unsqueeze(2) == arange(c, device=x.device)) & valid.unsqueeze(2)).any(1)  # (N, C): i is a label
    xj = x.gather(1, safe)  # (N, C): the score of the j-th label
    hinge = (1 - (xj.unsqueeze(2) - x.unsqueeze(1))).clamp(min=0)  # (N, j, i)
    pair = valid.unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = where(pair, hinge, 0.0).sum((1, 2)) / c
    return _reduce(loss if input.ndim == 2 else loss.reshape(()), reduction, "multilabel_margin_loss")


def multilabel_soft_margin_loss(
    input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None, reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:  # fmt: skip
    """``-mean_c(y log sigmoid(x) + (1 - y) log sigmoid(-x))`` per sample (weighted per class by ``weight``)."""

    reduction = legacy_reduction(size_average, reduce, reduction)
    x = _float(input)
    if target.shape != input.shape:
        raise ShapeError(
            f"multilabel_soft_margin_loss: target shape {tuple(target.shape)} must match {tuple(input.shape)}"
        )
    loss = -(target * logsigmoid(x) + (1 - target) * logsigmoid(-x))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(-1) / x.shape[-1] if x.ndim else loss
    return _reduce(loss, reduction, "multilabel_soft_margin_loss")


def triplet_margin_with_distance_loss(
    anchor: Tensor, positive: Tensor, negative: Tensor, *,
    distance_function: Callable[[Tensor, Tensor], Tensor] | None = None, margin: float = 1.0, swap: bool = False,
    reduction: str = "mean",
) -> Tensor:  # fmt: skip
    """``max(d(a, p) - d(a, n) + margin, 0)`` with any distance (default: the pairwise 2-norm)."""
    from ._distance import pairwise_distance

    if margin <= 0:
        raise ValueRangeError(f"triplet_margin_with_distance_loss: margin must be > 0, got {margin}")
    d = distance_function if distance_function is not None else pairwise_distance
    dp, dn = d(anchor, positive), d(anchor, negative)
    if swap:
        dn = minimum(dn, d(positive, negative))
    return _reduce((margin + dp - dn).clamp(min=0), reduction, "triplet_margin_with_distance_loss")
