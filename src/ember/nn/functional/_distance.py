"""Distances between vectors: cosine similarity, pairwise p-norm distances, and ``pdist``."""

from __future__ import annotations

from ..._errors import ShapeError
from ..._tensor import Tensor
from ...autograd._autocast import autocast_op

__all__ = ["cosine_similarity", "pairwise_distance", "pdist"]


@autocast_op("cosine_similarity")
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``x1 . x2 / (max(||x1||, eps) max(||x2||, eps))`` along ``dim``, after broadcasting x1 with x2."""
    from ...ops._other_shape import broadcast_tensors

    if x1.shape != x2.shape:  # the norms are over the broadcast dim, not over a size-1 dim of one input
        x1, x2 = broadcast_tensors(x1, x2)
    n1 = x1.norm(2, dim, keepdim=True).clamp(min=eps)
    n2 = x2.norm(2, dim, keepdim=True).clamp(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` along the last dim."""
    return (x1 - x2 + eps).norm(p, -1, keepdim=keepdim)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The p-norm distances between all pairs of rows of (N, M) ``input``, as the upper triangle (N (N - 1) / 2)."""
    if input.ndim != 2:
        raise ShapeError(f"pdist: expected a 2-d input (N, M), got shape {tuple(input.shape)}")
    from ...ops import triu_indices

    i, j = triu_indices(input.shape[0], input.shape[0], 1, device=input.device)
    return (input[i] - input[j]).norm(p, 1)
