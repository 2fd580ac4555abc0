"""Pooling: max and average over 1, 2 or 3 spatial dims, and their adaptive forms.

The operators hold the wiring (forward, backward, higher order); the array kernels are the backend's
(``Backend.max_pool``, ``max_pool_backward``, ``max_pool_indices``, ``avg_pool``, ``avg_pool_backward``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..._errors import DTypeError, ShapeError, ValueRangeError
from ..._tensor import Tensor
from ...autograd._autocast import autocast_op
from ...autograd._function import Op
from ...autograd._grad_mode import STATE
from ...backends._kernels_util import ndindex
from ...ops._indexing_join import stack
from ...ops._other_math import einsum
from ...ops._util import _float
from ._conv import _tuple
from ._empty import on_one_sample

__all__ = [
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "adaptive_max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "max_pool1d", "max_pool2d", "max_pool3d",
]  # fmt: skip

Geom = tuple[Any, ...]


def _geometry(
    shape: tuple[int, ...], kernel_size: Any, stride: Any, padding: Any, dilation: Any, ceil_mode: Any, sp: int, op: str
) -> Geom:
    """Checked PyTorch pooling arguments as ``(k, s, p, d, ceil_mode)``."""
    k = _tuple(kernel_size, sp, "kernel_size", op)
    s = _tuple(stride if stride is not None and stride != [] and stride != () else k, sp, "stride", op)
    p = _tuple(padding, sp, "padding", op)
    d = _tuple(dilation, sp, "dilation", op)
    if any(v < 1 for v in k + s + d):
        raise ValueRangeError(f"{op}: kernel_size {k}, stride {s} and dilation {d} must be positive")
    for i in range(sp):
        if p[i] < 0 or p[i] * 2 > k[i]:
            raise ValueRangeError(f"{op}: padding {p} must be at least 0 and at most half of kernel_size {k}")
        if shape[2 + i] + 2 * p[i] < d[i] * (k[i] - 1) + 1:
            raise ShapeError(f"{op}: kernel {k} (dilation {d}) is larger than the padded input {tuple(shape)}")
    return k, s, p, d, bool(ceil_mode)


class MaxPool(Op):
    """The maximum of every window; backward sends each window's gradient to its first maximum."""

    saves_output = True

    def forward(self, x: Any, geom: Geom, save: bool = False) -> Any:
        self.geom = geom
        y, self.saved = self.backend.max_pool(x, *geom, save=save)
        self.keep(y)
        return y

    def backward(self, g: Tensor) -> tuple[Any, None, None]:
        x = self.inputs[0]  # type: ignore[index]
        return MaxPoolBackward.apply(g, x._data, self._pooled(x._data), self.saved, self.geom), None, None

    def backward_arrays(self, g: Any) -> tuple[Any, None, None]:
        x = self.inputs[0]  # type: ignore[index]
        return self.backend.max_pool_backward(g, x._data, self._pooled(x._data), self.saved, *self.geom), None, None

    def _pooled(self, x: Any) -> Any:
        """The output as backward reads it, pooled again from ``x`` when it was written in place since (a ReLU
        with ``inplace=True`` after the pool: PyTorch allows it, keeping the argmax rather than the output).
        Pooling is deterministic: the same bits."""
        if self._out_vcs[0][0] != self._out_vs[0]:
            return self.backend.max_pool(x, *self.geom)[0]
        return self._outs[0]


class MaxPoolBackward(Op):
    """``g -> dL/dx`` of MaxPool (linear in ``g``); its own gradient picks ``gg`` at each window's maximum."""

    saves_inputs = False

    def forward(self, g: Any, x: Any, y: Any, saved: Any, geom: Geom) -> Any:
        self.x, self.y, self.saved, self.geom = x, y, saved, geom
        return self.backend.max_pool_backward(g, x, y, saved, *geom)

    def backward(self, gg: Tensor) -> tuple[Any, None, None, None, None]:
        idx = self.backend.max_pool_indices(self.x, self.y, self.saved, *self.geom)
        n, c = self.y.shape[:2]
        flat = Tensor._make(idx.reshape(n, c, -1), self.backend)
        return gg.reshape(n, c, -1).gather(2, flat).reshape(self.y.shape), None, None, None, None


class AvgPool(Op):
    """The mean of every window (linear: its backward is its adjoint, whose backward is AvgPool again)."""

    saves_inputs = False

    def forward(self, x: Any, geom: Geom) -> Any:
        self.geom, self.x_shape = geom, tuple(x.shape)
        return self.backend.avg_pool(x, *geom)

    def backward(self, g: Tensor) -> tuple[Any, None]:
        return AvgPoolBackward.apply(g, self.x_shape, self.geom), None

    def backward_arrays(self, g: Any) -> tuple[Any, None]:
        return self.backend.avg_pool_backward(g, self.x_shape, *self.geom), None


class AvgPoolBackward(Op):
    saves_inputs = False

    def forward(self, g: Any, x_shape: tuple[int, ...], geom: Geom) -> Any:
        self.geom = geom
        return self.backend.avg_pool_backward(g, x_shape, *geom)

    def backward(self, gg: Tensor) -> tuple[Any, None, None]:
        return AvgPool.apply(gg, self.geom), None, None


def _batched(input: Tensor, sp: int, op: str) -> tuple[Tensor, bool]:
    if input.ndim in (sp + 1, sp + 2) and 0 in input.shape[input.ndim - sp :]:
        raise ShapeError(f"{op}: input of shape {tuple(input.shape)} has an empty spatial dim")
    if input.ndim == sp + 1:
        return input.unsqueeze(0), True
    if input.ndim != sp + 2:
        raise ShapeError(f"{op}: expected a ({sp + 1})-d or ({sp + 2})-d input, got shape {tuple(input.shape)}")
    return input, False


def _max_pool(
    input: Tensor,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    ceil_mode: bool,
    return_indices: bool,
    sp: int,
    op: str,
) -> Any:
    x, unbatched = _batched(input, sp, op)
    empty = [d for d in range(1, x.ndim) if x.shape[d] == 0]
    if empty or (unbatched and x.shape[0] == 0):  # PyTorch allows an empty batch only
        raise ShapeError(f"{op}: expected the input's non-batch dims to have positive length, got shape "
                         f"{tuple(input.shape)}")  # fmt: skip
    if x.shape[0] == 0:  # an empty batch
        return on_one_sample(
            lambda t: _max_pool(t, kernel_size, stride, padding, dilation, ceil_mode, return_indices, sp, op), x
        )
    geom = _geometry(x.shape, kernel_size, stride, padding, dilation, ceil_mode, sp, op)
    y: Tensor = MaxPool.apply(x, geom, STATE.enabled and x.requires_grad)
    if return_indices:
        idx = Tensor._make(x._backend.max_pool_indices(x._data, y._data, None, *geom), x._backend)
        return (y.squeeze(0), idx.squeeze(0)) if unbatched else (y, idx)
    return y.squeeze(0) if unbatched else y


def _avg_pool(
    input: Tensor,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Any,
    sp: int,
    op: str,
) -> Tensor:
    x, unbatched = _batched(input, sp, op)
    if x.dtype.kind in "biu" and x.dtype.name != "int64":  # (PyTorch's CPU kernels: int64 only, in int64)
        raise DTypeError(f"{op}: not implemented for {x.dtype} inputs (PyTorch has no such kernel)")
    x = x if x.dtype.name == "int64" else _float(x)
    k, s, p, _, ceil = _geometry(x.shape, kernel_size, stride, padding, 1, ceil_mode, sp, op)
    if divisor_override is not None and int(divisor_override) == 0:
        raise ValueRangeError(f"{op}: divisor_override must not be zero")
    y: Tensor = AvgPool.apply(x, (k, s, p, ceil, bool(count_include_pad), divisor_override))
    return y.squeeze(0) if unbatched else y


def max_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """Max over sliding windows of (N, C, L); with ``return_indices`` also the flat argmax positions."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1, "max_pool1d")


def max_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """Max over sliding windows of (N, C, H, W); with ``return_indices`` also the flat argmax positions."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2, "max_pool2d")


def avg_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """Mean over sliding windows of (N, C, L)."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1, "avg_pool1d")


def avg_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: Any = None,
) -> Tensor:
    """Mean over sliding windows of (N, C, H, W)."""
    return _avg_pool(
        input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2, "avg_pool2d"
    )


@autocast_op("max_pool3d")
def max_pool3d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """Max over sliding windows of (N, C, D, H, W)."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 3, "max_pool3d")


@autocast_op("avg_pool3d")
def avg_pool3d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: Any = None,
) -> Tensor:
    """Mean over sliding windows of (N, C, D, H, W)."""
    return _avg_pool(
        input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 3, "avg_pool3d"
    )


def _adaptive_bounds(n: int, o: int) -> list[tuple[int, int]]:
    return [((i * n) // o, -(-((i + 1) * n) // o)) for i in range(o)]


def _adaptive(input: Tensor, output_size: Any, sp: int, use_max: bool, return_indices: bool, op: str) -> Any:
    x, unbatched = _batched(input, sp, op)
    if x.shape[0] == 0 and not unbatched:  # an empty batch
        return on_one_sample(lambda t: _adaptive(t, output_size, sp, use_max, return_indices, op), x)
    size = output_size if isinstance(output_size, Sequence) else (output_size,) * sp
    out = tuple(x.shape[2 + i] if v is None else int(v) for i, v in enumerate(size))
    if len(out) != sp or any(v < 1 for v in out):
        raise ShapeError(f"{op}: output_size must be {sp} positive ints, got {output_size!r}")
    spatial = x.shape[2:]
    if all(spatial[i] % out[i] == 0 for i in range(sp)):
        k = tuple(spatial[i] // out[i] for i in range(sp))
        if use_max:
            r = _max_pool(x, k, k, 0, 1, False, return_indices, sp, op)
        else:
            r = _avg_pool(x, k, k, 0, False, True, None, sp, op)
    elif not use_max:
        xp = x._backend.xp
        xf = _float(x)
        mats = []
        for i in range(sp):
            m = xp.zeros((out[i], spatial[i]), dtype=xf._data.dtype)
            for j, (a, b) in enumerate(_adaptive_bounds(spatial[i], out[i])):
                m[j, a:b] = 1.0 / (b - a)
            mats.append(Tensor._make(m, x._backend))

        letters = "hwd"[:sp]
        outs = "ijk"[:sp]
        eq = "nc" + letters + "," + ",".join(o + h for o, h in zip(outs, letters, strict=True)) + "->nc" + outs
        r = einsum(eq, xf, *mats)
    else:
        cells, idxs = [], []
        bounds = [_adaptive_bounds(spatial[i], out[i]) for i in range(sp)]
        for pos in ndindex(out):
            sl = tuple(slice(*bounds[i][pos[i]]) for i in range(sp))
            block = x[(slice(None), slice(None)) + sl]
            v, a = block.reshape(x.shape[0], x.shape[1], -1).max(dim=2)
            cells.append(v)
            if return_indices:
                local = _unravel(a, tuple(s.stop - s.start for s in sl))
                flat = 0
                for i in range(sp):
                    flat = flat * spatial[i] + (local[i] + sl[i].start)
                idxs.append(flat)
        y = stack(cells, -1).reshape(x.shape[:2] + out)
        r = (
            (y, Tensor._make(x._backend.xp.stack(idxs, -1).reshape(x.shape[:2] + out), x._backend))
            if return_indices
            else y
        )
    if unbatched:
        return tuple(t.squeeze(0) for t in r) if isinstance(r, tuple) else r.squeeze(0)
    return r


def _unravel(a: Tensor, shape: tuple[int, ...]) -> tuple[Any, ...]:
    return tuple(a._backend.xp.unravel_index(a._data, shape))


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling to a fixed output length."""
    return _adaptive(input, output_size, 1, False, False, "adaptive_avg_pool1d")  # type: ignore[no-any-return]


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling to a fixed (H, W) (an entry may be None: keep that size)."""
    return _adaptive(input, output_size, 2, False, False, "adaptive_avg_pool2d")  # type: ignore[no-any-return]


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling of (N, C, L) to ``output_size`` positions (PyTorch's windows); ``return_indices`` too."""
    return _adaptive(input, output_size, 1, True, return_indices, "adaptive_max_pool1d")


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling to a fixed (H, W)."""
    return _adaptive(input, output_size, 2, True, return_indices, "adaptive_max_pool2d")


@autocast_op("adaptive_avg_pool3d")
def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling to a fixed (D, H, W)."""
    return _adaptive(input, output_size, 3, False, False, "adaptive_avg_pool3d")  # type: ignore[no-any-return]


@autocast_op("adaptive_max_pool3d")
def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling to a fixed (D, H, W)."""
    return _adaptive(input, output_size, 3, True, return_indices, "adaptive_max_pool3d")
