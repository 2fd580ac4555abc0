"""Comparison operators (torch docs, "Comparison Ops"): elementwise comparisons, extrema of two tensors,
floating-point classification, closeness, sorting and selection by rank.
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

from .._dtype import int64
from .._errors import OutOfRangeError, ShapeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._function import Op
from ._indexing import where
from ._indexing_gather import gather
from ._indexing_view import reshape, squeeze, sum_to
from ._pointwise_logical import _cmp, _compare
from ._util import _binary, _shape, _unary, norm_dim, promote, real_only

__all__ = [
    "allclose",
    "argsort",
    "eq",
    "equal",
    "fmax",
    "fmin",
    "ge",
    "greater",
    "greater_equal",
    "gt",
    "isclose",
    "isfinite",
    "isin",
    "isinf",
    "isnan",
    "isneginf",
    "isposinf",
    "kthvalue",
    "le",
    "less",
    "less_equal",
    "lt",
    "maximum",
    "minimum",
    "msort",
    "ne",
    "not_equal",
    "sort",
    "topk",
]
METHODS = [n for n in __all__ if n != "isin"]


class Maximum(Op):
    def forward(self, a: Any, b: Any) -> Any:
        return self.backend.xp.maximum(a, b)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        # ties share the gradient equally, as in PyTorch
        w = (a > b).to(g.dtype) + (a == b).to(g.dtype) * 0.5
        ga = sum_to(g * w, _shape(a)) if self._req(0) else None
        return ga, (sum_to(g * (1 - w), _shape(b)) if self._req(1) else None)


class Minimum(Op):
    def forward(self, a: Any, b: Any) -> Any:
        return self.backend.xp.minimum(a, b)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        w = (a < b).to(g.dtype) + (a == b).to(g.dtype) * 0.5
        ga = sum_to(g * w, _shape(a)) if self._req(0) else None
        return ga, (sum_to(g * (1 - w), _shape(b)) if self._req(1) else None)


def maximum(input: Tensor, other: Tensor) -> Tensor:
    """Element-wise maximum of two tensors (broadcast)."""
    return _binary(Maximum, input, other)


def minimum(input: Tensor, other: Tensor) -> Tensor:
    """Element-wise minimum of two tensors (broadcast)."""
    return _binary(Minimum, input, other)


Eq, Ne, Lt, Le, Gt, Ge = (_compare(n) for n in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"))


def eq(input: Any, other: Any) -> Tensor:
    """Element-wise ``input == other`` (broadcast), a bool tensor."""
    return _cmp(Eq, input, other)


def ne(input: Any, other: Any) -> Tensor:
    """Element-wise ``input != other`` (broadcast), a bool tensor. Also ``not_equal``."""
    return _cmp(Ne, input, other)


def lt(input: Any, other: Any) -> Tensor:
    """Element-wise ``input < other`` (broadcast), a bool tensor. Also ``less``."""
    return _cmp(Lt, input, other)


def le(input: Any, other: Any) -> Tensor:
    """Element-wise ``input <= other`` (broadcast), a bool tensor. Also ``less_equal``."""
    return _cmp(Le, input, other)


def gt(input: Any, other: Any) -> Tensor:
    """Element-wise ``input > other`` (broadcast), a bool tensor. Also ``greater``."""
    return _cmp(Gt, input, other)


def ge(input: Any, other: Any) -> Tensor:
    """Element-wise ``input >= other`` (broadcast), a bool tensor. Also ``greater_equal``."""
    return _cmp(Ge, input, other)


greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


class _FMaxMin(Op):
    use_min = False

    def forward(self, a: Any, b: Any) -> Any:
        xp = self.backend.xp
        return xp.fmin(a, b) if self.use_min else xp.fmax(a, b)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        # the gradient goes to the chosen element: ``a`` on ties or when ``b`` is NaN (PyTorch)
        a, b = self.inputs  # type: ignore[misc]
        b_nan = ne(b, b) if isinstance(b, Tensor) else math.isnan(b)
        pick_a = ((a <= b) if self.use_min else (a >= b)) | b_nan
        ga = sum_to(where(pick_a, g, 0.0), _shape(a)) if self._req(0) else None
        gb = sum_to(where(pick_a, 0.0, g), _shape(b)) if self._req(1) else None
        return ga, gb


class Fmax(_FMaxMin):
    pass


class Fmin(_FMaxMin):
    use_min = True


def fmax(input: Any, other: Any) -> Tensor:
    """Elementwise maximum that ignores NaN (NaN only where both are NaN)."""
    return _binary(Fmax, input, other)


def fmin(input: Any, other: Any) -> Tensor:
    """Elementwise minimum that ignores NaN (NaN only where both are NaN)."""
    return _binary(Fmin, input, other)


isnan = _unary("isnan", lambda xp, x: xp.isnan(x), None, floating=False)


isinf = _unary("isinf", lambda xp, x: xp.isinf(x), None, floating=False)


isfinite = _unary("isfinite", lambda xp, x: xp.isfinite(x), None, floating=False)


isposinf = _unary("isposinf", lambda xp, x: xp.isposinf(x), None, floating=False, real=True)


isneginf = _unary("isneginf", lambda xp, x: xp.isneginf(x), None, floating=False, real=True)


def isclose(input: Tensor, other: Any, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> Tensor:
    """``|input - other| <= atol + rtol * |other|`` elementwise (bool)."""
    if rtol < 0 or atol < 0:
        raise ValueRangeError(f"isclose: rtol and atol must be greater than or equal to zero, got {rtol}, {atol}")
    a, b = promote("isclose", input, other)
    xp = input._backend.xp
    ad = a._data if isinstance(a, Tensor) else a
    bd = b._data if isinstance(b, Tensor) else b
    return Tensor._make(xp.asarray(xp.isclose(ad, bd, rtol=rtol, atol=atol, equal_nan=equal_nan)), input._backend)


def allclose(input: Tensor, other: Any, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False) -> bool:
    """Whether every element is close (see ``isclose``)."""
    return bool(input._backend.xp.all(isclose(input, other, rtol, atol, equal_nan)._data))


def equal(input: Tensor, other: Tensor) -> bool:
    """True when both tensors have the same shape and elements."""
    if tuple(input.shape) != tuple(other.shape):
        return False
    a, b = promote("equal", input, other)
    return bool(a._backend.xp.all(a._data == b._data))


def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """Whether each element of ``elements`` is in ``test_elements``."""
    ref = elements if isinstance(elements, Tensor) else test_elements
    xp = ref._backend.xp
    a = elements._data if isinstance(elements, Tensor) else xp.asarray(elements)
    b = test_elements._data if isinstance(test_elements, Tensor) else xp.asarray(test_elements)
    return Tensor._make(xp.isin(a, b, invert=invert), ref._backend)


SortResult = namedtuple("SortResult", ["values", "indices"])


TopkResult = namedtuple("TopkResult", ["values", "indices"])


def _argsort(x: Any, dim: int, descending: bool, xp: Any, kind: str) -> Any:
    if descending:
        if kind == "b":
            x = xp.astype(x, xp.int8)
        elif kind == "u":
            x = xp.astype(x, xp.int64)
        if kind == "f":
            # NaN counts as the largest value, as in torch: put it first
            key = xp.where(xp.isnan(x), -xp.inf, -x)
            order = xp.argsort(key, axis=dim, kind="stable")
            return order
        return xp.argsort(-x, axis=dim, kind="stable")
    return xp.argsort(x, axis=dim, kind="stable")


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:
    """``(values, indices)`` sorted along ``dim`` (always stable); differentiable in the values."""
    real_only("sort", input)
    d = norm_dim(dim, input.ndim, "sort")  # (a 0-d tensor takes dim 0 or -1)
    if not input.ndim:
        return SortResult(input, input.new_zeros((), dtype=int64))
    xp = input._backend.xp
    order = _argsort(input._data, d, descending, xp, input.dtype.kind)
    idx = Tensor._make(xp.astype(order, xp.int64), input._backend)
    return SortResult(gather(input, d, idx), idx)


def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """The indices that sort ``input`` along ``dim``."""
    real_only("argsort", input)
    return sort(input, dim, descending, stable).indices


def msort(input: Tensor) -> Tensor:
    """``input`` sorted along its first dimension."""
    real_only("msort", input)
    return sort(input, 0).values


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:
    """The ``k`` largest (or smallest) values along ``dim`` and their indices."""
    real_only("topk", input)
    d = norm_dim(dim, input.ndim, "topk")
    n = input.shape[d] if input.ndim else 1
    if not 0 <= k <= n:
        raise ShapeError(f"topk: k={k} is out of range for dim {d} of size {n}")
    if not input.ndim:
        return TopkResult(input, input.new_zeros((), dtype=int64))
    xp = input._backend.xp
    order = _argsort(input._data, d, largest, xp, input.dtype.kind)
    order = xp.take(order, xp.arange(k), axis=d)
    idx = Tensor._make(xp.astype(order, xp.int64), input._backend)
    return TopkResult(gather(input, d, idx), idx)


ValuesIndices = namedtuple("ValuesIndices", ["values", "indices"])


def _sorted(op: str, input: Tensor, dim: int | None) -> tuple[Tensor, Tensor, int]:
    """``(values, indices)`` sorted along ``dim`` (flattened when None), and that dim."""
    if dim is not None and input.ndim == 0:
        norm_dim(dim, 0, op)  # a 0-d tensor takes dim 0 or -1, as PyTorch: anything else is an IndexError
    x = reshape(input, -1) if dim is None or input.ndim == 0 else input
    d = 0 if dim is None or input.ndim == 0 else norm_dim(dim, input.ndim, op)
    if x.shape[d] == 0:
        raise ShapeError(f"{op}: cannot take an order statistic of an empty dim (shape {tuple(input.shape)})")
    s = sort(x, d)
    return s.values, s.indices, d


def _nan_counts(sorted_x: Tensor, d: int) -> Tensor:
    if sorted_x.dtype.kind not in "fc":
        return sorted_x.new_zeros(sorted_x.shape[:d] + (1,) + sorted_x.shape[d + 1 :], dtype=int64)
    return isnan(sorted_x).sum(d, keepdim=True)


def _pick(op: str, input: Tensor, dim: int | None, keepdim: bool, position: Any) -> Any:
    """Values and indices at the sorted ``position(n, nan_count)`` along ``dim``."""
    real_only(op, input)
    vals, idx, d = _sorted(op, input, dim)
    n = vals.shape[d]
    k = position(n, _nan_counts(vals, d))
    v, i = gather(vals, d, k), gather(idx, d, k)
    if dim is None:  # PyTorch shares the gradient evenly among the elements equal to the result
        return _SelectEvenly.apply(input, reshape(v, ()).detach())
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


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
    """The ``k``-th smallest element (1-based) along ``dim``: ``(values, indices)``."""
    real_only("kthvalue", input)
    n = input.shape[norm_dim(dim, input.ndim, "kthvalue")] if input.ndim else 1
    if not 1 <= k <= n:
        raise OutOfRangeError(f"kthvalue: k={k} is out of range for a dim of size {n}")
    return _pick("kthvalue", input, dim, keepdim, lambda n, nans: nans * 0 + (k - 1))  # type: ignore[no-any-return]
