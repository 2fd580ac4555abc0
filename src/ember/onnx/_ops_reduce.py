"""ONNX reductions, scans, arg-extremes, ``TopK`` and matrix products as Ember ops."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import _creation, ops
from .. import _dtype as dt
from .._tensor import Tensor

__all__ = ["OPS", "ints"]


def ints(v: Any) -> list[int]:
    """A shape/axes operand (Tensor, list or number) as a list of ints."""
    if v is None:
        return []
    if isinstance(v, Tensor):
        return [int(i) for i in v.reshape(-1).tolist()]
    if isinstance(v, (list, tuple)):
        return [int(i) for i in v]
    return [int(v)]


def _reduce(fn: Callable[[Tensor, tuple[int, ...], bool], Tensor], since: int = 18, empty: float | None = None
            ) -> Callable[..., Tensor]:  # fmt: skip
    """A ``Reduce*`` operator: axes from an attribute before opset ``since``, from the second input after."""

    def op(a: Any, x: Tensor, axes_in: Any = None) -> Tensor:
        axes = ints(axes_in) if a.opset >= since else list(a.get("axes", []))
        keep = bool(a.get("keepdims", 1))
        if not axes:
            if a.get("noop_with_empty_axes", 0):
                return x.clone()
            axes = list(range(x.ndim))
        dims = tuple(sorted({d % x.ndim for d in axes})) if x.ndim else ()
        if empty is not None and any(x.shape[d] == 0 for d in dims):  # the identity of the reduction
            shape = [1 if d in dims else s for d, s in enumerate(x.shape)] if keep else [
                s for d, s in enumerate(x.shape) if d not in dims]  # fmt: skip
            fill = (empty > 0) if x.dtype == dt.bool_ else empty  # bool: max of nothing is False, min True
            return _creation.full(shape, fill, dtype=x.dtype, device=x.device)
        if not dims:
            return x.clone()
        return fn(x, dims, keep)

    return op


def _sum(x: Tensor, d: tuple[int, ...], k: bool) -> Tensor:
    return ops.sum(x, dim=d, keepdim=k).to(x.dtype)


def _prod(x: Tensor, d: tuple[int, ...], k: bool) -> Tensor:
    out = x
    for dim in sorted(d, reverse=True):
        out = ops.prod(out, dim=dim, keepdim=k)
    return out.to(x.dtype)


def _extreme(fn: Callable[..., Tensor]) -> Callable[[Tensor, tuple[int, ...], bool], Tensor]:
    def op(x: Tensor, d: tuple[int, ...], k: bool) -> Tensor:
        if x.dtype == dt.bool_:
            return fn(x.to(dt.uint8), dim=d, keepdim=k).to(dt.bool_)
        return fn(x, dim=d, keepdim=k)

    return op


def _arg(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def op(a: Any, x: Tensor) -> Tensor:
        axis, keep = a.get("axis", 0) % max(x.ndim, 1), bool(a.get("keepdims", 1))
        if a.get("select_last_index", 0):
            n = x.shape[axis]
            return n - 1 - fn(ops.flip(x, (axis,)), dim=axis, keepdim=keep)
        return fn(x, dim=axis, keepdim=keep)

    return op


def cumsum(a: Any, x: Tensor, axis: Tensor) -> Tensor:
    return _scan(a, x, axis, ops.cumsum, 0)


def cumprod(a: Any, x: Tensor, axis: Tensor) -> Tensor:
    return _scan(a, x, axis, ops.cumprod, 1)


def _scan(a: Any, x: Tensor, axis: Any, fn: Callable[..., Tensor], identity: int) -> Tensor:
    d = ints(axis)[0] % x.ndim
    if a.get("reverse", 0):
        x = ops.flip(x, (d,))
    if a.get("exclusive", 0):  # shift by one: the identity first, the last element dropped
        first = _creation.full(
            [1 if i == d else s for i, s in enumerate(x.shape)], identity, dtype=x.dtype, device=x.device
        )
        x = ops.cat([first, ops.narrow(x, d, 0, x.shape[d] - 1)], d)
    out = fn(x, d).to(x.dtype)
    return ops.flip(out, (d,)) if a.get("reverse", 0) else out


def topk(a: Any, x: Tensor, k: Any = None) -> tuple[Tensor, Tensor]:
    kk = ints(k)[0] if a.opset >= 10 else a["k"]
    axis = a.get("axis", -1)
    values, indices = ops.topk(x, kk, dim=axis, largest=bool(a.get("largest", 1)), sorted=True)
    return values, indices.long()


def gemm(a: Any, x: Tensor, w: Tensor, c: Any = None) -> Tensor:
    """``alpha * A' @ B' + beta * C`` (A' = A or its transpose, per ``transA``)."""
    if a.get("transA", 0):
        x = x.transpose(0, 1)
    if a.get("transB", 0):
        w = w.transpose(0, 1)
    out = ops.matmul(x, w)
    alpha, beta = a.get("alpha", 1.0), a.get("beta", 1.0)
    if alpha != 1.0:
        out = out * alpha
    if c is not None and beta != 0.0:
        out = out + (c * beta if beta != 1.0 else c)
    return out.to(x.dtype)


def matmul(a: Any, x: Tensor, y: Tensor) -> Tensor:
    return ops.matmul(x, y)


def einsum(a: Any, *xs: Tensor) -> Tensor:
    return ops.einsum(a["equation"].replace(" ", ""), *xs)


def det(a: Any, x: Tensor) -> Tensor:
    return ops.det(x)


OPS: dict[str, Callable[..., Any]] = {
    "ReduceSum": _reduce(_sum, since=13, empty=0),
    "ReduceMean": _reduce(lambda x, d, k: ops.mean(x, dim=d, keepdim=k)),
    "ReduceMax": _reduce(_extreme(ops.amax), empty=float("-inf")),
    "ReduceMin": _reduce(_extreme(ops.amin), empty=float("inf")),
    "ReduceProd": _reduce(_prod, empty=1),
    "ReduceL1": _reduce(lambda x, d, k: _sum(ops.abs(x), d, k), empty=0),
    "ReduceL2": _reduce(lambda x, d, k: ops.sqrt(ops.sum(x * x, dim=d, keepdim=k)).to(x.dtype), empty=0),
    "ReduceSumSquare": _reduce(lambda x, d, k: _sum(x * x, d, k), empty=0),
    "ReduceLogSum": _reduce(lambda x, d, k: ops.log(ops.sum(x, dim=d, keepdim=k)), empty=float("-inf")),
    "ReduceLogSumExp": _reduce(lambda x, d, k: ops.logsumexp(x, dim=d, keepdim=k), empty=float("-inf")),
    "ArgMax": _arg(ops.argmax), "ArgMin": _arg(ops.argmin),
    "CumSum": cumsum, "CumProd": cumprod, "TopK": topk,
    "Gemm": gemm, "MatMul": matmul, "Einsum": einsum, "Det": det,
}  # fmt: skip
