"""Cumulative operators (torch docs, "Other Operations"): ``cumsum``, ``cumprod``, ``cummax``/``cummin``,
``logcumsumexp``, ``diff``.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from .._dtype import int64
from .._errors import ShapeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._function import Op
from ._indexing import where
from ._indexing_gather import gather
from ._indexing_join import cat
from ._indexing_view import movedim
from ._other_shape import flip
from ._pointwise_complex import cj
from ._pointwise_unary import exp, log
from ._util import _float, norm_dim, real_only

__all__ = ["cummax", "cummin", "cumprod", "cumsum", "diff", "logcumsumexp"]
METHODS = list(__all__)


class CumSum(Op):
    saves_inputs = False

    def forward(self, x: Any, dim: int) -> Any:
        self.dim = dim
        return self.backend.xp.cumsum(x, axis=dim) if x.ndim else self.backend.xp.copy(x)

    def backward(self, g: Tensor) -> tuple[Tensor, None]:
        if not g.ndim:
            return g, None
        return flip(cumsum(flip(g, (self.dim,)), self.dim), (self.dim,)), None


def cumsum(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running sum along ``dim`` (bool and int inputs sum as int64)."""
    x = input.to(dtype) if dtype is not None else input.long() if input.dtype.kind in "biu" else input
    if x.dtype.name == "float16":  # accumulated in float32, as PyTorch (NumPy's float16 running sum overflows)
        return CumSum.apply(x.float(), norm_dim(dim, x.ndim, "cumsum")).to(x.dtype)  # type: ignore[no-any-return]
    # integers summed as int64 (NumPy and CuPy sum uint8 as uint64, a dtype Ember's CuPy backend lacks), then cast
    out = CumSum.apply(x.long() if x.dtype.kind in "iu" else x, norm_dim(dim, x.ndim, "cumsum"))
    return out.to(x.dtype) if out.dtype != x.dtype and x.dtype.kind in "iu" else out


class CumProd(Op):
    saves_output = True

    def forward(self, x: Any, dim: int) -> Any:
        self.dim = dim
        y = self.backend.xp.cumprod(x, axis=dim) if x.ndim else self.backend.xp.copy(x)
        self.keep(y)
        return y

    def backward(self, g: Tensor) -> tuple[Tensor, None]:
        x = self.inputs[0]  # type: ignore[index]
        if not g.ndim:
            return g, None
        d = self.dim
        if x.is_meta or not bool(self.backend.xp.any(x._data == 0)):  # sum_{j>=k} g_j y_j / x_k (meta: no values)
            gy = g * cj(self.output())  # complex: the conjugates (PyTorch's convention)
            return flip(cumsum(flip(gy, (d,)), d), (d,)) / cj(x), None
        # exact with zeros: row k holds prod_{i<=j, i!=k} x_i for each j (an n x n matrix per line)
        xs, gs = movedim(x, d, -1), movedim(g, d, -1)
        n = xs.shape[-1]
        xp = self.backend.xp
        eye = Tensor._make(xp.eye(n, dtype=xp.bool_), self.backend)
        rows = cumprod(where(eye, 1.0, xs.unsqueeze(-2).expand(*xs.shape[:-1], n, n)), -1)
        upper = Tensor._make(
            self.backend.xp.triu(self.backend.xp.ones((n, n), dtype=self.backend.xp.bool_)), self.backend
        )
        gx = (where(upper, cj(rows), 0.0) * gs.unsqueeze(-2)).sum(-1)
        return movedim(gx, -1, d), None


def cumprod(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running product along ``dim``."""
    x = input.to(dtype) if dtype is not None else input.long() if input.dtype.kind in "biu" else input
    # integers multiplied as int64 (NumPy and CuPy: uint8 as uint64, a dtype Ember's CuPy backend lacks), then cast
    out = CumProd.apply(x.long() if x.dtype.kind in "iu" else x, norm_dim(dim, x.ndim, "cumprod"))
    return out.to(x.dtype) if out.dtype != x.dtype and x.dtype.kind in "biu" else out


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
    d = norm_dim(dim, input.ndim, op)  # (a 0-d tensor takes dim 0 or -1, as PyTorch)
    if input.ndim == 0:
        return CumResult(input.clone(), input.new_zeros((), dtype=int64))
    xp = input._backend.xp
    idx = Tensor._make(_scan_extreme(xp, input._data, d, smaller), input._backend)
    return CumResult(gather(input, d, idx), idx)


def cummax(input: Tensor, dim: int) -> CumResult:
    """Running maximum along ``dim`` and where it was found: ``(values, indices)``."""
    real_only("cummax", input)
    return _cum_extreme("cummax", input, dim, smaller=False)


def cummin(input: Tensor, dim: int) -> CumResult:
    """Running minimum along ``dim`` and where it was found: ``(values, indices)``."""
    real_only("cummin", input)
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
    """``log(cumsum(exp(x)))`` along ``dim``, stable for any gap between values (real tensors)."""
    real_only("logcumsumexp", input)
    x = _float(input)
    if x.ndim == 0:
        norm_dim(dim, 0, "logcumsumexp")
        return LogCumSumExp.apply(x.reshape(1), 0).reshape(())
    return LogCumSumExp.apply(x, norm_dim(dim, x.ndim, "logcumsumexp"))


# -- differences, products ---------------------------------------------------------------------------
def diff(
    input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None, append: Tensor | None = None
) -> Tensor:
    """``n``-th forward difference along ``dim`` (``prepend``/``append`` are joined first; ``n=0``: the input)."""
    if input.ndim == 0:
        raise ShapeError("diff: expects input to be at least one-dimensional, got a 0-d tensor")
    if not isinstance(n, int) or n < 0:
        raise ValueRangeError(f"diff: order n must be a non-negative integer, got {n!r}")
    d = norm_dim(dim, input.ndim, "diff")
    if n == 0:  # PyTorch returns the input as it is, without prepend/append
        return input
    x = input
    if prepend is not None or append is not None:
        x = cat([t for t in (prepend, input, append) if t is not None], d)
    for _ in range(n):
        m = x.shape[d]
        if m == 0:  # differenced down to nothing: stays empty
            break
        hi, lo = x.narrow(d, 1, m - 1), x.narrow(d, 0, m - 1)
        x = hi ^ lo if x.dtype.name == "bool" else hi - lo
    return x
