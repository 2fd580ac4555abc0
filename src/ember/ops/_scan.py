"""Scans that are not plain sums or products: cummax, cummin, logcumsumexp.

They are computed with a log-depth (Hillis-Steele) scan built from elementwise array operations and
slicing, so every backend runs them with the functions it already has.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from .._dtype import int64
from .._tensor import Tensor
from ..autograd._function import Op
from ._elementwise import _float, exp, log, where
from ._gather import gather
from ._layout import flip
from ._util import norm_dim

__all__ = ["cummax", "cummin", "logcumsumexp"]
METHODS = list(__all__)

CumResult = namedtuple("CumResult", ["values", "indices"])


def _shifted(a: Any, s: int, axis: int) -> tuple[tuple[slice, ...], tuple[slice, ...]]:
    """Index pairs (later, earlier) along ``axis`` for a shift by ``s``."""
    lead = (slice(None),) * axis
    return lead + (slice(s, None),), lead + (slice(None, a.shape[axis] - s),)


def _scan_extreme(xp: Any, x: Any, axis: int, smaller: bool) -> Any:
    """Indices of the running max (min) along ``axis``: ties and NaN go to the later element (PyTorch)."""
    n = x.shape[axis]
    shape = [1] * x.ndim
    shape[axis] = n
    idx = xp.array(xp.broadcast_to(xp.arange(n, dtype=xp.int64).reshape(shape), x.shape), copy=True)
    v = xp.array(x, copy=True)
    s = 1
    while s < n:
        late, early = _shifted(v, s, axis)
        a, b = v[early], v[late]  # combine (a, earlier) with (b, later)
        better = (b <= a) if smaller else (b >= a)
        take_b = xp.isnan(b) | (~xp.isnan(a) & better)
        v_new, i_new = xp.array(v, copy=True), xp.array(idx, copy=True)
        v_new[late] = xp.where(take_b, b, a)
        i_new[late] = xp.where(take_b, idx[late], idx[early])
        v, idx = v_new, i_new
        s *= 2
    return idx


def _cum_extreme(op: str, input: Tensor, dim: int, smaller: bool) -> CumResult:
    if input.ndim == 0:
        return CumResult(input.clone(), input.new_zeros((), dtype=int64))
    d = norm_dim(dim, input.ndim, op)
    xp = input._backend.xp
    idx = Tensor._make(_scan_extreme(xp, input._data, d, smaller), input._backend)
    return CumResult(gather(input, d, idx), idx)


def cummax(input: Tensor, dim: int) -> CumResult:
    """Running maximum along ``dim`` and where it was found: ``(values, indices)``."""
    return _cum_extreme("cummax", input, dim, smaller=False)


def cummin(input: Tensor, dim: int) -> CumResult:
    """Running minimum along ``dim`` and where it was found: ``(values, indices)``."""
    return _cum_extreme("cummin", input, dim, smaller=True)


class LogCumSumExp(Op):
    """``y_k = log(sum_{j<=k} exp(x_j))`` by a logaddexp scan: exact for any gap between the values."""

    saves_output = True

    def forward(self, x: Any, dim: int) -> Any:
        xp = self.backend.xp
        y = xp.array(x, copy=True)
        n, s = x.shape[dim], 1
        while s < n:
            late, early = _shifted(y, s, dim)
            nxt = xp.array(y, copy=True)
            nxt[late] = xp.logaddexp(y[late], y[early])
            y, s = nxt, s * 2
        self.keep(y)
        return y

    def backward(self, g: Tensor) -> tuple[Tensor, None]:
        # dx_j = sum_{k>=j} g_k exp(x_j - y_k), summed in log space separately for g > 0 and g < 0
        x, d = self.inputs  # type: ignore[misc]
        y = self.output()
        y = where(y == float("-inf"), 0.0, y)  # y = -inf only where every x so far is -inf: those terms are 0

        def rev(t: Tensor) -> Tensor:
            return flip(logcumsumexp(flip(t, (d,)), d), (d,))

        ninf = float("-inf")
        pos = where(g > 0, log(where(g > 0, g, 1.0)), ninf) - y
        neg = where(g < 0, log(where(g < 0, -g, 1.0)), ninf) - y
        return exp(x + rev(pos)) - exp(x + rev(neg)), None


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """``log(cumsum(exp(x)))`` along ``dim``, stable for any gap between values."""
    x = _float(input)
    if x.ndim == 0:
        return LogCumSumExp.apply(x.reshape(1), 0).reshape(())  # type: ignore[no-any-return]
    return LogCumSumExp.apply(x, norm_dim(dim, x.ndim, "logcumsumexp"))  # type: ignore[no-any-return]
