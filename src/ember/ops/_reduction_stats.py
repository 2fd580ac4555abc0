"""Statistical reductions (torch docs, "Reduction Ops"): variance, NaN-aware sums and means, medians,
quantiles, distinct values.
"""

from __future__ import annotations

import builtins
import math
from collections import namedtuple
from typing import Any

from .._errors import DTypeError, OutOfRangeError, ShapeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._autocast import autocast_op
from ._comparison import _nan_counts, _pick, _sorted, isnan
from ._indexing import where
from ._indexing_gather import gather
from ._indexing_join import stack
from ._indexing_view import reshape, squeeze
from ._pointwise_complex import imag, real
from ._pointwise_unary import sqrt
from ._reduction import amax, amin, mean, sum
from ._util import _float, norm_dim, norm_dims, real_only

__all__ = [
    "aminmax",
    "median",
    "nanmean",
    "nanmedian",
    "nanquantile",
    "nansum",
    "quantile",
    "std",
    "std_mean",
    "unique",
    "unique_consecutive",
    "var",
    "var_mean",
]
METHODS = list(__all__)


VarMean = namedtuple("VarMean", ["var", "mean"])


def _count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    return math.prod(shape[a] for a in axes)


def _correction(op: str, dim: Any, unbiased: Any, correction: Any) -> tuple[Any, float]:
    """PyTorch's overloads: ``(input, unbiased)``, ``(input, dim, unbiased, keepdim)``, ``correction=``."""
    if isinstance(dim, bool):  # var(x, True): the positional bool is `unbiased`
        if unbiased is not None:
            raise TypeError(f"{op}: got unbiased twice ({dim} as the second argument and unbiased={unbiased})")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{op}: give unbiased or correction, not both")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return dim, correction


def var(
    input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction: Any = None
) -> Tensor:
    """Variance over ``dim`` with Bessel's ``correction`` (default 1: unbiased; ``unbiased=False``: 0)."""
    dim, correction = _correction("var", dim, unbiased, correction)
    x = _float(input)
    axes = norm_dims(dim, x.ndim, "var")
    d = x - mean(x, axes, keepdim=True)
    sq = d * d if not x.dtype.is_complex else real(d) * real(d) + imag(d) * imag(d)  # |d|^2: a real variance
    n = builtins.max(_count(x.shape, axes) - correction, 0)
    return sum(sq, axes, keepdim=keepdim) / n if n else sum(sq, axes, keepdim=keepdim) / 0.0


def _root_of_variance(v: Tensor) -> Tensor:
    """``sqrt(v)`` with PyTorch's ``std_backward``: a zero gradient (and second derivative) where ``v`` is 0 (the
    derivative of sqrt there is inf, times var's zero gradient of a constant slice gave nan)."""
    zero = v == 0
    return where(zero, 0.0, sqrt(where(zero, 1.0, v)))


def std(
    input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction: Any = None
) -> Tensor:
    """Standard deviation over ``dim`` (see ``var``); the gradient over a constant slice is 0, as PyTorch's."""
    dim, correction = _correction("std", dim, unbiased, correction)
    return _root_of_variance(var(input, dim, keepdim=keepdim, correction=correction))


def var_mean(
    input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction: Any = None
) -> VarMean:
    """``(var, mean)`` in one call."""
    dim, correction = _correction("var_mean", dim, unbiased, correction)
    return VarMean(var(input, dim, keepdim=keepdim, correction=correction), mean(_float(input), dim, keepdim))


def std_mean(
    input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction: Any = None
) -> VarMean:
    """``(std, mean)`` in one call."""
    dim, correction = _correction("std_mean", dim, unbiased, correction)
    return VarMean(std(input, dim, keepdim=keepdim, correction=correction), mean(_float(input), dim, keepdim))


MinMax = namedtuple("MinMax", ["min", "max"])


def nansum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Sum treating NaN as zero (NaN elements get a zero gradient)."""
    real_only("nansum", input)
    x = input.to(dtype) if dtype is not None else input
    if x.dtype.kind in "fc":
        x = where(isnan(x), 0.0, x)
    return sum(x, dim, keepdim, dtype=dtype)


def nanmean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Mean of the non-NaN elements (NaN when a slice holds none)."""
    real_only("nanmean", input)
    x = _float(input.to(dtype) if dtype is not None else input)
    count = sum((~isnan(x)).to(x.dtype), dim, keepdim)
    return nansum(x, dim, keepdim) / count


def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False) -> MinMax:
    """``(amin, amax)`` in one call."""
    real_only("aminmax", input)
    if (input.numel() == 0 and dim is None) or (
        dim is not None and input.ndim and input.shape[norm_dim(dim, input.ndim, "aminmax")] == 0
    ):
        raise ShapeError(
            f"aminmax: cannot reduce an empty dim (shape {tuple(input.shape)}, dim={dim}): it has no identity"
        )
    return MinMax(amin(input, dim, keepdim), amax(input, dim, keepdim))


def median(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """The lower median (NaN if the slice holds NaN); with ``dim``, ``(values, indices)``."""
    if dim is None and input.numel() == 0 and input.dtype.is_floating_point:
        return sum(input) * math.nan  # NaN, as PyTorch (kept in the graph: an empty gradient)
    # with NaN present, the first NaN in sorted order (NaN sorts last)
    return _pick("median", input, dim, keepdim, lambda n, nans: where(nans > 0, n - nans, (n - 1) // 2))


def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """The lower median of the non-NaN elements; with ``dim``, ``(values, indices)``."""
    if dim is None and input.numel() == 0 and input.dtype.is_floating_point:
        return sum(input) * math.nan
    return _pick("nanmedian", input, dim, keepdim, lambda n, nans: ((n - nans - 1) // 2).clamp(min=0))


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(
    op: str, input: Tensor, q: Any, dim: int | None, keepdim: bool, interpolation: str, skip_nan: bool
) -> Tensor:
    if interpolation not in _INTERPOLATIONS:
        raise ValueRangeError(f"{op}: interpolation must be one of {_INTERPOLATIONS}, got {interpolation!r}")
    if not input.dtype.is_floating_point:
        raise DTypeError(f"{op}: input must be a floating-point tensor, got {input.dtype}")
    qs = q if isinstance(q, Tensor) else Tensor(q, dtype=input.dtype, device="cpu")  # (read on the host only)
    if qs.ndim > 1:
        raise ShapeError(f"{op}: q must be a number or a 0-d or 1-d tensor, got shape {tuple(qs.shape)}")
    qv = qs._data
    if input.numel() == 0:
        raise ShapeError(f"{op}: input tensor must be non-empty, got shape {tuple(input.shape)}")
    if qv.size and (bool((qv < 0).any()) or bool((qv > 1).any())):
        raise OutOfRangeError(f"{op}: q values must be in [0, 1]")
    vals, _, d = _sorted(op, input, dim)
    n = vals.shape[d]
    nans = _nan_counts(vals, d)
    valid = (n - nans) if skip_nan else nans * 0 + n  # elements that take part, per slice
    out = []
    for j in range(builtins.max(qs.numel(), 1)):
        qj: Any = float(qv.reshape(-1)[j]) if qs.ndim else float(qv)
        if qs.requires_grad:  # q in the graph: d(linear quantile)/dq = (b - a) * (valid - 1), as PyTorch
            qj = (reshape(qs, (-1,))[j] if qs.ndim else qs).to(vals.dtype)
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

    res = stack(out, 0)  # (len(q), ..., 1, ...)
    if dim is None:
        res = reshape(res, (res.shape[0],) + ((1,) * input.ndim if keepdim else ()))
    elif not keepdim or input.ndim == 0:  # (a 0-d input has no dim to keep)
        res = squeeze(res, d + 1)
    return res if qs.ndim else squeeze(res, 0) if res.ndim else res


@autocast_op("quantile")
def quantile(
    input: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *, interpolation: str = "linear"
) -> Tensor:
    """The ``q``-th quantiles along ``dim`` (flattened when None); a 1-d ``q`` adds a leading dim."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, skip_nan=False)


@autocast_op("nanquantile")
def nanquantile(
    input: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *, interpolation: str = "linear"
) -> Tensor:
    """Like ``quantile``, ignoring NaN."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, skip_nan=True)


def unique(
    input: Tensor,
    sorted: bool = True,
    return_inverse: bool = False,
    return_counts: bool = False,
    dim: int | None = None,
) -> Any:
    """The distinct values (sorted), optionally with the inverse indices and the counts; no gradient."""
    xp, be = input._backend.xp, input._backend
    axis = None if dim is None else norm_dim(dim, input.ndim, "unique")
    vals, inv, counts = xp.unique(input._data, return_inverse=True, return_counts=True, axis=axis)
    out = [Tensor._make(vals, be)]
    if return_inverse:
        shape = input.shape if axis is None else (input.shape[axis],)
        out.append(Tensor._make(xp.astype(inv.reshape(shape), xp.int64), be))
    if return_counts:
        out.append(Tensor._make(xp.astype(counts, xp.int64), be))
    return out[0] if len(out) == 1 else tuple(out)


def unique_consecutive(
    input: Tensor, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
) -> Any:
    """Collapse runs of equal consecutive elements (slices along ``dim``); no gradient."""
    xp, be = input._backend.xp, input._backend
    d = None if dim is None else norm_dim(dim, input.ndim, "unique_consecutive")
    if d is not None and 0 in input.shape[:d] + input.shape[d + 1 :]:
        raise ShapeError(f"unique_consecutive: dims other than dim={dim} have size 0 (shape {tuple(input.shape)}): "
                         "the slices along dim are empty")  # fmt: skip
    x = input._data.reshape(-1) if d is None else xp.moveaxis(input._data, d, 0)
    n = x.shape[0]
    if n == 0:
        change = xp.zeros(0, dtype=bool)
    else:
        diff = x[1:] != x[:-1]  # (an explicit row length: a -1 with no rows (n = 1) is refused)
        diff = diff.reshape(n - 1, math.prod(diff.shape[1:])).any(axis=1) if diff.ndim > 1 else diff
        change = xp.concatenate([xp.ones(1, dtype=bool), diff])
    starts = xp.nonzero(change)[0]
    vals = x[starts]
    if dim is not None:
        vals = xp.moveaxis(vals, 0, norm_dim(dim, input.ndim, "unique_consecutive"))
    out = [Tensor._make(vals, be)]
    if return_inverse:
        inv = xp.cumsum(xp.astype(change, xp.int64)) - 1
        out.append(Tensor._make(inv.reshape(input.shape if dim is None else (n,)), be))
    if return_counts:
        ends = xp.concatenate([starts[1:], xp.asarray([n], dtype=starts.dtype)])
        out.append(Tensor._make(xp.astype(ends - starts, xp.int64), be))
    return out[0] if len(out) == 1 else tuple(out)
