"""Order statistics and NaN-ignoring reductions: median, nanmedian, kthvalue, quantile, nanquantile,
nansum, nanmean, aminmax.

The order statistics sort along the dim (``sort`` is differentiable: a gather of the input) and pick
or interpolate sorted values, so the gradient reaches the chosen elements, as in PyTorch. NaN sorts
last: ``median``/``quantile`` return NaN for a slice holding one, the ``nan*`` forms skip them.
"""

from __future__ import annotations

import builtins
from collections import namedtuple
from typing import Any

from .._dtype import int64
from .._errors import DTypeError, OutOfRangeError, ShapeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._function import Op
from ._elementwise import _float, where
from ._gather import gather, sort
from ._math import isnan
from ._reduce import amax, amin, sum
from ._shape import reshape, squeeze
from ._util import norm_dim

__all__ = ["aminmax", "kthvalue", "median", "nanmean", "nanmedian", "nanquantile", "nansum", "quantile"]
METHODS = list(__all__)

ValuesIndices = namedtuple("ValuesIndices", ["values", "indices"])
MinMax = namedtuple("MinMax", ["min", "max"])


def nansum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Sum treating NaN as zero (NaN elements get a zero gradient)."""
    x = input.to(dtype) if dtype is not None else input
    if x.dtype.kind in "fc":
        x = where(isnan(x), 0.0, x)
    return sum(x, dim, keepdim)


def nanmean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Mean of the non-NaN elements (NaN when a slice holds none)."""
    x = _float(input.to(dtype) if dtype is not None else input)
    count = sum((~isnan(x)).to(x.dtype), dim, keepdim)
    return nansum(x, dim, keepdim) / count


def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False) -> MinMax:
    """``(amin, amax)`` in one call."""
    if input.numel() == 0:
        raise ShapeError(f"aminmax: cannot reduce an empty tensor of shape {input.shape}")
    return MinMax(amin(input, dim, keepdim), amax(input, dim, keepdim))


def _sorted(op: str, input: Tensor, dim: int | None) -> tuple[Tensor, Tensor, int]:
    """``(values, indices)`` sorted along ``dim`` (flattened when None), and that dim."""
    x = reshape(input, -1) if dim is None or input.ndim == 0 else input
    d = 0 if dim is None or input.ndim == 0 else norm_dim(dim, input.ndim, op)
    if x.shape[d] == 0:
        raise ShapeError(f"{op}: cannot take an order statistic of an empty dim (shape {input.shape})")
    s = sort(x, d)
    return s.values, s.indices, d


def _nan_counts(sorted_x: Tensor, d: int) -> Tensor:
    if sorted_x.dtype.kind not in "fc":
        return sorted_x.new_zeros(sorted_x.shape[:d] + (1,) + sorted_x.shape[d + 1 :], dtype=int64)
    return sum(isnan(sorted_x), d, keepdim=True)


def _pick(op: str, input: Tensor, dim: int | None, keepdim: bool, position: Any) -> Any:
    """Values and indices at the sorted ``position(n, nan_count)`` along ``dim``."""
    vals, idx, d = _sorted(op, input, dim)
    n = vals.shape[d]
    k = position(n, _nan_counts(vals, d))
    v, i = gather(vals, d, k), gather(idx, d, k)
    if dim is None:  # PyTorch shares the gradient evenly among the elements equal to the result
        return _SelectEvenly.apply(input, reshape(v, ()).detach())  # type: ignore[no-any-return]
    if not keepdim and input.ndim:
        v, i = squeeze(v, d), squeeze(i, d)
    elif not input.ndim:
        v, i = reshape(v, ()), reshape(i, ())
    return ValuesIndices(v, i)


class _SelectEvenly(Op):
    """``value`` (an element of ``x``), with its gradient shared by every element equal to it (or NaN)."""

    saves_inputs = False

    def forward(self, x: Any, value: Any) -> Any:
        xp = self.backend.xp
        same = (x == value) | (xp.isnan(x) & xp.isnan(value))
        self.share = same / same.sum()
        return value

    def backward(self, g: Tensor) -> tuple[Tensor, None]:
        return g * Tensor._make(self.backend.xp.astype(self.share, g._data.dtype), self.backend), None


def median(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """The lower median (NaN if the slice holds NaN); with ``dim``, ``(values, indices)``."""
    # with NaN present, the first NaN in sorted order (NaN sorts last)
    return _pick("median", input, dim, keepdim, lambda n, nans: where(nans > 0, n - nans, (n - 1) // 2))


def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """The lower median of the non-NaN elements; with ``dim``, ``(values, indices)``."""
    return _pick("nanmedian", input, dim, keepdim, lambda n, nans: ((n - nans - 1) // 2).clamp(min=0))


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
    """The ``k``-th smallest element (1-based) along ``dim``: ``(values, indices)``."""
    n = input.shape[norm_dim(dim, input.ndim, "kthvalue")] if input.ndim else 1
    if not 1 <= k <= n:
        raise OutOfRangeError(f"kthvalue: k={k} is out of range for a dim of size {n}")
    return _pick("kthvalue", input, dim, keepdim, lambda n, nans: nans * 0 + (k - 1))  # type: ignore[no-any-return]


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(
    op: str, input: Tensor, q: Any, dim: int | None, keepdim: bool, interpolation: str, skip_nan: bool
) -> Tensor:
    if interpolation not in _INTERPOLATIONS:
        raise ValueRangeError(f"{op}: interpolation must be one of {_INTERPOLATIONS}, got {interpolation!r}")
    if not input.dtype.is_floating_point:
        raise DTypeError(f"{op}: input must be a floating-point tensor, got {input.dtype}")
    qs = q if isinstance(q, Tensor) else Tensor(q, dtype=input.dtype, device=input.device)
    if qs.ndim > 1:
        raise ShapeError(f"{op}: q must be a number or a 0-d or 1-d tensor, got shape {qs.shape}")
    qv = qs._data
    if qv.size and (bool((qv < 0).any()) or bool((qv > 1).any())):
        raise OutOfRangeError(f"{op}: q values must be in [0, 1]")
    vals, _, d = _sorted(op, input, dim)
    n = vals.shape[d]
    nans = _nan_counts(vals, d)
    valid = (n - nans) if skip_nan else nans * 0 + n  # elements that take part, per slice
    out = []
    for j in range(builtins.max(qs.numel(), 1)):
        qj = float(qv.reshape(-1)[j]) if qs.ndim else float(qv)
        pos = (valid - 1).clamp(min=0).to(vals.dtype) * qj
        lo = pos.floor()
        hi = pos.ceil()
        if interpolation == "lower":
            hi = lo
        elif interpolation == "higher":
            lo = hi
        elif interpolation == "nearest":
            lo = hi = pos.round()
        if not skip_nan:  # a slice holding NaN gives its last sorted element, a NaN (as PyTorch)
            lo, hi = where(nans > 0, n - 1.0, lo), where(nans > 0, n - 1.0, hi)
        a, b = gather(vals, d, lo.long()), gather(vals, d, hi.long())
        frac = 0.5 if interpolation == "midpoint" else (pos - lo)
        out.append(a + (b - a) * frac if interpolation in ("linear", "midpoint") else a)
    from ._join import stack

    res = stack(out, 0)  # (len(q), ..., 1, ...)
    if dim is None:
        res = reshape(res, (res.shape[0],) + ((1,) * input.ndim if keepdim else ()))
    elif not keepdim:
        res = squeeze(res, d + 1)
    return res if qs.ndim else squeeze(res, 0) if res.ndim else res


def quantile(
    input: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *, interpolation: str = "linear"
) -> Tensor:
    """The ``q``-th quantiles along ``dim`` (flattened when None); a 1-d ``q`` adds a leading dim."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, skip_nan=False)


def nanquantile(
    input: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *, interpolation: str = "linear"
) -> Tensor:
    """Like ``quantile``, ignoring NaN."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, skip_nan=True)
