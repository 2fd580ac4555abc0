"""``CatTransform``, ``StackTransform`` (transforms applied slice-wise) and ``CorrCholeskyTransform``; exported by
``transforms``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._creation import eye
from .._tensor import Tensor
from ..nn.functional import pad, softplus
from ..ops import cat, stack
from . import constraints
from ._transform_base import Transform
from .utils import finfo, lazy_property, sum_rightmost

__all__ = ["CatTransform", "CorrCholeskyTransform", "StackTransform"]


def _check_dim(x: Tensor, dim: int, size: int, what: str) -> None:
    if not -x.ndim <= dim < x.ndim:
        raise ValueError(f"dim {dim} out of range for {what} with {x.ndim} dimensions")
    if x.shape[dim] != size:
        raise ValueError(f"{what}.size({dim}) = {x.shape[dim]} must equal {size}")


class CatTransform(Transform):
    """Applies ``tseq[i]`` to the ``i``-th slice (of ``lengths[i]``) along ``dim``, as ``cat`` joins them."""

    def __init__(self, tseq: Sequence[Transform], dim: int = 0, lengths: Any = None, cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = list(lengths) if lengths is not None else [1] * len(self.transforms)
        if len(self.lengths) != len(self.transforms):
            raise ValueError(f"lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})")
        self.dim = dim

    @lazy_property
    def event_dim(self) -> int:  # type: ignore[override]
        return max(t.event_dim for t in self.transforms)

    @lazy_property
    def length(self) -> int:
        return sum(self.lengths)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _map(self, z: Tensor, inverse: bool) -> Tensor:
        _check_dim(z, self.dim, self.length, "y" if inverse else "x")
        out, start = [], 0
        for t, length in zip(self.transforms, self.lengths, strict=True):
            piece = z.narrow(self.dim, start, length)
            out.append(t.inv(piece) if inverse else t(piece))
            start += length
        return cat(out, self.dim)

    def _call(self, x: Tensor) -> Tensor:
        return self._map(x, False)

    def _inverse(self, y: Tensor) -> Tensor:
        return self._map(y, True)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        _check_dim(x, self.dim, self.length, "x")
        _check_dim(y, self.dim, self.length, "y")
        terms, start = [], 0
        for t, length in zip(self.transforms, self.lengths, strict=True):
            term = t.log_abs_det_jacobian(x.narrow(self.dim, start, length), y.narrow(self.dim, start, length))
            if t.event_dim < self.event_dim:
                term = sum_rightmost(term, self.event_dim - t.event_dim)
            terms.append(term)
            start += length
        dim = (self.dim - x.ndim if self.dim >= 0 else self.dim) + self.event_dim
        if dim < 0:
            return cat(terms, dim)
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        return total

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> Any:
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> Any:
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """Applies ``tseq[i]`` to the ``i``-th slice along ``dim``, as ``stack`` joins them."""

    def __init__(self, tseq: Sequence[Transform], dim: int = 0, cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms, self.dim = list(tseq), dim

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else StackTransform(self.transforms, self.dim, cache_size)

    def _slice(self, z: Tensor, what: str) -> list[Tensor]:
        _check_dim(z, self.dim, len(self.transforms), what)
        return [z.select(self.dim, i) for i in range(z.shape[self.dim])]

    def _call(self, x: Tensor) -> Tensor:
        return stack([t(s) for s, t in zip(self._slice(x, "x"), self.transforms, strict=True)], self.dim)

    def _inverse(self, y: Tensor) -> Tensor:
        return stack([t.inv(s) for s, t in zip(self._slice(y, "y"), self.transforms, strict=True)], self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        xs, ys = self._slice(x, "x"), self._slice(y, "y")
        terms = [t.log_abs_det_jacobian(a, b) for a, b, t in zip(xs, ys, self.transforms, strict=True)]
        return stack(terms, self.dim)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> Any:
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> Any:
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


def _tril_index(n: int, diag: int) -> np.ndarray:
    """Row-major flat indices of the entries of an ``n x n`` matrix on or below diagonal ``diag``."""
    r = np.arange(n)
    return np.flatnonzero((r[None, :] < r[:, None] + (diag + 1)).ravel())


def _tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    n = mat.shape[-1]
    return mat.reshape(*mat.shape[:-2], n * n)[..., _tril_index(n, diag).tolist()]


def _vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    n = round((-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2)
    where = np.zeros(n * n, dtype=np.int64)  # 0 picks the padded zero, k + 1 the k-th element of vec
    where[_tril_index(n, diag)] = np.arange(1, vec.shape[-1] + 1)
    return pad(vec, (1, 0))[..., where.tolist()].reshape(*vec.shape[:-1], n, n)


class CorrCholeskyTransform(Transform):
    """Unconstrained vectors of length ``D (D - 1) / 2`` to Cholesky factors of ``D x D`` correlation matrices:
    ``tanh`` to (-1, 1), then a signed stick-breaking of each row so that it has unit norm."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CorrCholeskyTransform)

    __hash__ = Transform.__hash__

    def _call(self, x: Tensor) -> Tensor:
        eps = float(finfo(x).eps)
        x = x.tanh().clamp(-1 + eps, 1 - eps)
        r = _vec_to_tril_matrix(x, diag=-1)
        z1m_cumprod_sqrt = (1 - r**2).sqrt().cumprod(-1)
        r = r + eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * pad(z1m_cumprod_sqrt[..., :-1], (1, 0), value=1.0)

    def _inverse(self, y: Tensor) -> Tensor:
        y_cumsum = 1 - (y * y).cumsum(-1)
        y_cumsum_shifted = pad(y_cumsum[..., :-1], (1, 0), value=1.0)
        t = _tril_matrix_to_vec(y, diag=-1) / _tril_matrix_to_vec(y_cumsum_shifted, diag=-1).sqrt()
        return (t.log1p() - (-t).log1p()) / 2

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        y1m_cumsum = 1 - (y * y).cumsum(-1)
        stick_breaking_logdet = 0.5 * _tril_matrix_to_vec(y1m_cumsum, diag=-2).log().sum(-1)
        tanh_logdet = -2 * (x + softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking_logdet + tanh_logdet

    def forward_shape(self, shape: Any) -> tuple[int, ...]:
        shape = tuple(shape)
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return shape[:-1] + (d, d)

    def inverse_shape(self, shape: Any) -> tuple[int, ...]:
        shape = tuple(shape)
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return shape[:-2] + (d * (d - 1) // 2,)
