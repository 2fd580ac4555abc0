"""Convolutions, im2col (unfold/fold) and pooling over 1 or 2 (or more) spatial dims.

Three array kernels share the window arithmetic: ``Conv`` (cross-correlation), ``ConvT`` (its adjoint
in the input: the transposed convolution) and ``ConvW`` (its adjoint in the weight). Each one's backward
is written with the other two, so gradients of every order exist. ``Unfold``/``Fold`` are the same pair
for im2col; pooling is built on them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..._tensor import Tensor
from ...autograd._function import Op
from ...ops._elementwise import _float

__all__ = [
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d", "avg_pool1d",
    "avg_pool2d", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "fold", "max_pool1d",
    "max_pool2d", "unfold",
]  # fmt: skip

Pads = tuple[tuple[int, int], ...]


def _tuple(v: Any, n: int, name: str, op: str) -> tuple[int, ...]:
    t = (int(v),) * n if isinstance(v, int) else tuple(int(a) for a in v)
    if len(t) != n:
        raise ValueError(f"{op}: {name} must be an int or {n} ints, got {v!r}")
    return t


def _out_size(n: int, k: int, s: int, lo: int, hi: int, d: int) -> int:
    return (n + lo + hi - d * (k - 1) - 1) // s + 1


def _windows(xp: Any, x: Any, k: tuple[int, ...], s: tuple[int, ...], pads: Pads, d: tuple[int, ...]) -> Any:
    """(N, C, *out, *k) view of every (dilated, strided) window of the padded ``x``."""
    from numpy.lib.stride_tricks import sliding_window_view

    sp = x.ndim - 2
    if any(lo or hi for lo, hi in pads):
        x = xp.pad(x, ((0, 0), (0, 0), *pads))
    span = tuple(d[i] * (k[i] - 1) + 1 for i in range(sp))
    w = sliding_window_view(x, span, axis=tuple(range(2, 2 + sp)))
    idx = (slice(None), slice(None)) + tuple(slice(None, None, s[i]) for i in range(sp))
    idx += tuple(slice(None, None, d[i]) for i in range(sp))
    return w[idx]


def _col2im(xp: Any, cols: Any, shape: tuple[int, ...], k: tuple[int, ...], s: Any, pads: Pads, d: Any) -> Any:
    """Adjoint of the windows: add ``cols`` laid out (C, *k, N, *out) back into (N, C, *spatial)."""
    sp = len(k)
    n, c = shape[:2]
    out = cols.shape[2 + sp :]
    padded = tuple(shape[2 + i] + pads[i][0] + pads[i][1] for i in range(sp))
    buf = xp.zeros((c, n, *padded), dtype=cols.dtype)  # channels first: every add below is contiguous
    for off in _ndindex(k):
        dst = (slice(None), slice(None)) + tuple(
            slice(off[i] * d[i], off[i] * d[i] + s[i] * (out[i] - 1) + 1, s[i]) for i in range(sp)
        )
        buf[dst] += cols[(slice(None), *off)]
    crop = (slice(None), slice(None)) + tuple(slice(pads[i][0], pads[i][0] + shape[2 + i]) for i in range(sp))
    return xp.ascontiguousarray(buf[crop].swapaxes(0, 1))


def _ndindex(k: tuple[int, ...]) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = [()]
    for n in k:
        out = [o + (i,) for o in out for i in range(n)]
    return out


class _ConvBase(Op):
    """Shared parameters: ``cfg = (stride, pads, dilation, groups, x_shape, w_shape)``."""

    def _setup(self, cfg: tuple[Any, ...]) -> tuple[Any, ...]:
        self.cfg = cfg
        return cfg


def _im2col(xp: Any, x: Any, k: tuple[int, ...], s: Any, pads: Pads, d: Any) -> tuple[Any, tuple[int, ...]]:
    """The transposed im2col matrix (C * prod(k), N * prod(out)) and the output spatial shape.

    Built one kernel offset at a time: each row block is a plain strided copy of the shifted input,
    which is much faster than gathering windows element by element.
    """
    sp = len(k)
    n, c = x.shape[:2]
    if any(lo or hi for lo, hi in pads):
        x = xp.pad(x, ((0, 0), (0, 0), *pads))
    out = tuple((x.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(sp))
    cols = xp.empty((c, *k, n, *out), dtype=x.dtype)
    xt = x.swapaxes(0, 1)  # (C, N, *spatial)
    for off in _ndindex(k):
        src = tuple(slice(off[i] * d[i], off[i] * d[i] + s[i] * (out[i] - 1) + 1, s[i]) for i in range(sp))
        cols[(slice(None), *off)] = xt[(slice(None), slice(None), *src)]
    return cols.reshape(c * math.prod(k), n * math.prod(out)), out


def _channels_first(xp: Any, g: Any) -> Any:
    """(N, O, *out) -> (O, N * prod(out))."""
    return xp.ascontiguousarray(g.swapaxes(0, 1)).reshape(g.shape[1], -1)


class Conv(_ConvBase):
    """Cross-correlation as one matrix product per group: W @ im2col(x)."""

    def forward(self, x: Any, w: Any, cfg: tuple[Any, ...]) -> Any:
        s, pads, d, groups, _, _ = self._setup(cfg)
        xp = self.backend.xp
        k = tuple(w.shape[2:])
        cols, out = _im2col(xp, x, k, s, pads, d)
        self.cols = cols  # reused by the weight gradient
        o = w.shape[0]
        og, kk = o // groups, w[0].size
        w2 = w.reshape(o, kk)
        if groups == 1:
            y = w2 @ cols
        else:
            y = xp.empty((o, cols.shape[1]), dtype=xp.result_type(cols, w))
            for gi in range(groups):
                y[gi * og : (gi + 1) * og] = w2[gi * og : (gi + 1) * og] @ cols[gi * kk : (gi + 1) * kk]
        return y.reshape((o, x.shape[0], *out)).swapaxes(0, 1)

    def backward(self, g: Tensor) -> tuple[Any, Any, None]:
        x, w, _ = self.inputs  # type: ignore[misc]
        gx = ConvT.apply(g, w, self.cfg) if x.requires_grad else None
        gw = ConvW.apply(x, g, self.cfg, self.cols) if w.requires_grad else None
        self.cols = None
        return gx, gw, None


class ConvT(_ConvBase):
    """``y -> J_x^T y`` for Conv: maps (N, O, *out) to (N, C, *x_spatial) (the transposed convolution)."""

    def forward(self, y: Any, w: Any, cfg: tuple[Any, ...]) -> Any:
        s, pads, d, groups, x_shape, _ = self._setup(cfg)
        xp = self.backend.xp
        k = tuple(w.shape[2:])
        o, cg = w.shape[:2]
        og, kk = o // groups, w[0].size
        n, out = y.shape[0], tuple(y.shape[2:])
        yt = _channels_first(xp, y)  # (O, N * prod(out))
        w2 = w.reshape(o, kk)
        if groups == 1:
            dcols = w2.T @ yt
        else:
            dcols = xp.empty((groups * kk, yt.shape[1]), dtype=xp.result_type(y, w))
            for gi in range(groups):
                dcols[gi * kk : (gi + 1) * kk] = w2[gi * og : (gi + 1) * og].T @ yt[gi * og : (gi + 1) * og]
        c = cg * groups
        return _col2im(xp, dcols.reshape((c, *k, n, *out)), (n, c, *x_shape[2:]), k, s, pads, d)

    def backward(self, gg: Tensor) -> tuple[Any, Any, None]:
        y, w, _ = self.inputs  # type: ignore[misc]
        gy = Conv.apply(gg, w, self.cfg) if y.requires_grad else None
        gw = ConvW.apply(gg, y, self.cfg) if w.requires_grad else None
        return gy, gw, None


class ConvW(_ConvBase):
    """``(x, g) -> J_w^T g`` for Conv: the weight gradient, ``rows(g)^T @ im2col(x)`` per group."""

    def forward(self, x: Any, g: Any, cfg: tuple[Any, ...], cols: Any = None) -> Any:
        s, pads, d, groups, _, w_shape = self._setup(cfg)
        xp = self.backend.xp
        k = tuple(w_shape[2:])
        if cols is None:
            cols, _ = _im2col(xp, x, k, s, pads, d)
        gt = _channels_first(xp, g)  # (O, N * prod(out))
        o = w_shape[0]
        og, kk = o // groups, math.prod(w_shape[1:])
        if groups == 1:
            return (gt @ cols.T).reshape(w_shape)
        gw = xp.empty((o, kk), dtype=xp.result_type(x, g))
        for gi in range(groups):
            gw[gi * og : (gi + 1) * og] = gt[gi * og : (gi + 1) * og] @ cols[gi * kk : (gi + 1) * kk].T
        return gw.reshape(w_shape)

    def backward(self, gw: Tensor) -> tuple[Any, Any, None, None]:
        x, g = self.inputs[:2]  # type: ignore[index]
        gx = ConvT.apply(g, gw, self.cfg) if x.requires_grad else None
        gg = Conv.apply(x, gw, self.cfg) if g.requires_grad else None
        return gx, gg, None, None


def _conv_pads(padding: Any, k: tuple[int, ...], d: tuple[int, ...], s: tuple[int, ...], op: str) -> Pads:
    sp = len(k)
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * sp
        if padding == "same":
            if any(v != 1 for v in s):
                raise ValueError(f"{op}: padding='same' is not supported for strided convolutions (stride {s})")
            total = [d[i] * (k[i] - 1) for i in range(sp)]
            return tuple((t // 2, t - t // 2) for t in total)
        raise ValueError(f"{op}: padding must be 'same', 'valid' or int(s), got {padding!r}")
    p = _tuple(padding, sp, "padding", op)
    return tuple((v, v) for v in p)


def _conv(
    input: Tensor, weight: Tensor, bias: Any, stride: Any, padding: Any, dilation: Any, groups: int, sp: int, op: str
) -> Tensor:
    if input.ndim != sp + 2:
        if input.ndim == sp + 1:  # unbatched input
            return _conv(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups, sp, op).squeeze(0)
        raise ValueError(f"{op}: expected a ({sp + 2})-d input (N, C, ...), got shape {input.shape}")
    if weight.ndim != sp + 2:
        raise ValueError(f"{op}: expected a ({sp + 2})-d weight (out, in/groups, ...), got shape {weight.shape}")
    c = input.shape[1]
    o, cg = weight.shape[:2]
    if groups < 1 or c % groups or o % groups:
        raise ValueError(f"{op}: groups={groups} must divide in_channels {c} and out_channels {o}")
    if cg * groups != c:
        raise ValueError(
            f"{op}: input has {c} channels but weight {weight.shape} expects {cg * groups} (groups={groups})"
        )
    k = tuple(weight.shape[2:])
    s = _tuple(stride, sp, "stride", op)
    d = _tuple(dilation, sp, "dilation", op)
    pads = _conv_pads(padding, k, d, s, op)
    for i in range(sp):
        if _out_size(input.shape[2 + i], k[i], s[i], *pads[i], d[i]) < 1:
            raise ValueError(f"{op}: kernel {k} (dilation {d}) is larger than the padded input {input.shape}")
    x = _float(input)
    w = weight.to(x.dtype) if weight.dtype is not x.dtype else weight
    cfg = (s, pads, d, groups, tuple(x.shape), tuple(w.shape))
    y: Tensor = Conv.apply(x, w, cfg)
    if bias is not None:
        if bias.shape != (o,):
            raise ValueError(f"{op}: bias shape {bias.shape} must be ({o},)")
        y = y + bias.reshape((o,) + (1,) * sp)
    return y


def conv1d(
    input: Tensor,
    weight: Tensor,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """1-d cross-correlation over (N, C, L) with weight (O, C/groups, K)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """2-d cross-correlation over (N, C, H, W) with weight (O, C/groups, kH, kW); padding may be 'same'/'valid'."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(
    input: Tensor,
    weight: Tensor,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """3-d cross-correlation over (N, C, D, H, W)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def _conv_transpose(
    input: Tensor,
    weight: Tensor,
    bias: Any,
    stride: Any,
    padding: Any,
    output_padding: Any,
    groups: int,
    dilation: Any,
    sp: int,
    op: str,
) -> Tensor:
    if input.ndim == sp + 1:
        return _conv_transpose(
            input.unsqueeze(0), weight, bias, stride, padding, output_padding, groups, dilation, sp, op
        ).squeeze(0)
    if input.ndim != sp + 2 or weight.ndim != sp + 2:
        raise ValueError(f"{op}: expected ({sp + 2})-d input and weight, got {input.shape} and {weight.shape}")
    cin, cg = weight.shape[:2]
    if input.shape[1] != cin or cin % groups:
        raise ValueError(f"{op}: input has {input.shape[1]} channels, weight {weight.shape} expects {cin}")
    k = tuple(weight.shape[2:])
    s = _tuple(stride, sp, "stride", op)
    d = _tuple(dilation, sp, "dilation", op)
    p = _tuple(padding, sp, "padding", op)
    op_ = _tuple(output_padding, sp, "output_padding", op)
    for i in range(sp):
        if op_[i] >= max(s[i], d[i]):
            raise ValueError(f"{op}: output_padding {op_} must be smaller than stride {s} or dilation {d}")
    size = tuple((input.shape[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op_[i] + 1 for i in range(sp))
    if any(v < 1 for v in size):
        raise ValueError(f"{op}: the output size {size} would be empty")
    x = _float(input)
    w = weight.to(x.dtype) if weight.dtype is not x.dtype else weight
    x_shape = (input.shape[0], cg * groups) + size
    cfg = (s, tuple((v, v) for v in p), d, groups, x_shape, tuple(w.shape))
    y: Tensor = ConvT.apply(x, w, cfg)
    if bias is not None:
        y = y + bias.reshape((cg * groups,) + (1,) * sp)
    return y


def conv_transpose1d(
    input: Tensor,
    weight: Tensor,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    """Transposed 1-d convolution; weight (C_in, C_out/groups, K)."""
    return _conv_transpose(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 1, "conv_transpose1d"
    )


def conv_transpose2d(
    input: Tensor,
    weight: Tensor,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    """Transposed 2-d convolution (the gradient of conv2d in its input); weight (C_in, C_out/groups, kH, kW)."""
    return _conv_transpose(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 2, "conv_transpose2d"
    )


# -- im2col ---------------------------------------------------------------------------------------
class Unfold(Op):
    """(N, C, *spatial) -> (N, C * prod(k), L): every window as a column."""

    saves_inputs = False

    def forward(self, x: Any, k: Any, s: Any, pads: Any, d: Any) -> Any:
        self.args = (x.shape, k, s, pads, d)
        win = _windows(self.backend.xp, x, k, s, pads, d)  # (N, C, *out, *k)
        sp = len(k)
        n, c = x.shape[:2]
        perm = (0, 1) + tuple(range(2 + sp, 2 + 2 * sp)) + tuple(range(2, 2 + sp))
        self.out = win.shape[2 : 2 + sp]
        return win.transpose(perm).reshape(n, c * math.prod(k), -1)

    def backward(self, g: Tensor) -> tuple[Any, ...]:
        shape, k, s, pads, d = self.args
        return Fold.apply(g, shape, k, s, pads, d, self.out), None, None, None, None


class Fold(Op):
    """(N, C * prod(k), L) -> (N, C, *spatial): sum the columns back into place (col2im)."""

    saves_inputs = False

    def forward(self, cols: Any, shape: Any, k: Any, s: Any, pads: Any, d: Any, out: Any) -> Any:
        self.args = (k, s, pads, d)
        sp = len(k)
        n, c = shape[:2]
        c6 = cols.reshape((n, c, *k, *out))
        perm = (1, *range(2, 2 + sp), 0, *range(2 + sp, 2 + 2 * sp))  # (C, *k, N, *out)
        return _col2im(self.backend.xp, c6.transpose(perm), tuple(shape), k, s, pads, d)

    def backward(self, g: Tensor) -> tuple[Any, ...]:
        return (Unfold.apply(g, *self.args),) + (None,) * 6


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Tensor:
    """Extract sliding local blocks: (N, C, H, W) -> (N, C * kH * kW, L)."""
    if input.ndim != 4:
        raise ValueError(f"unfold: expected a 4-d input (N, C, H, W), got shape {input.shape}")
    k = _tuple(kernel_size, 2, "kernel_size", "unfold")
    d = _tuple(dilation, 2, "dilation", "unfold")
    p = _tuple(padding, 2, "padding", "unfold")
    s = _tuple(stride, 2, "stride", "unfold")
    pads = tuple((v, v) for v in p)
    if any(_out_size(input.shape[2 + i], k[i], s[i], *pads[i], d[i]) < 1 for i in range(2)):
        raise ValueError(f"unfold: kernel {k} does not fit the padded input {input.shape}")
    return Unfold.apply(input, k, s, pads, d)  # type: ignore[no-any-return]


def fold(
    input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1
) -> Tensor:
    """Combine sliding local blocks (N, C * kH * kW, L) into (N, C, *output_size), summing overlaps."""
    size = _tuple(output_size, 2, "output_size", "fold")
    k = _tuple(kernel_size, 2, "kernel_size", "fold")
    d = _tuple(dilation, 2, "dilation", "fold")
    p = _tuple(padding, 2, "padding", "fold")
    s = _tuple(stride, 2, "stride", "fold")
    pads = tuple((v, v) for v in p)
    out = tuple(_out_size(size[i], k[i], s[i], *pads[i], d[i]) for i in range(2))
    if input.ndim != 3 or input.shape[1] % math.prod(k) or input.shape[2] != math.prod(out):
        raise ValueError(
            f"fold: input {input.shape} must be (N, C * {math.prod(k)}, {math.prod(out)}) for output {size}, kernel {k}"
        )
    c = input.shape[1] // math.prod(k)
    return Fold.apply(input, (input.shape[0], c) + size, k, s, pads, d, out)  # type: ignore[no-any-return]


# -- pooling --------------------------------------------------------------------------------------
def _pool_geometry(
    shape: tuple[int, ...],
    kernel_size: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    ceil_mode: bool,
    sp: int,
    op: str,
) -> tuple[Any, ...]:
    k = _tuple(kernel_size, sp, "kernel_size", op)
    s = _tuple(stride if stride is not None and stride != [] else k, sp, "stride", op)
    p = _tuple(padding, sp, "padding", op)
    d = _tuple(dilation, sp, "dilation", op)
    for i in range(sp):
        if p[i] * 2 > k[i]:
            raise ValueError(f"{op}: padding {p} must be at most half of kernel_size {k}")
    pads, out = [], []
    for i in range(sp):
        n = shape[2 + i]
        eff = d[i] * (k[i] - 1) + 1
        num = n + 2 * p[i] - eff
        if num < 0:
            raise ValueError(f"{op}: kernel {k} (dilation {d}) is larger than the padded input {shape}")
        o = (-(-num // s[i]) if ceil_mode else num // s[i]) + 1
        if ceil_mode and (o - 1) * s[i] >= n + p[i]:
            o -= 1  # the last window must start inside the input or the left padding
        extra = max(0, (o - 1) * s[i] + eff - (n + 2 * p[i]))
        pads.append((p[i], p[i] + extra))
        out.append(o)
    return k, s, tuple(pads), d, tuple(out), p


def _batched(input: Tensor, sp: int, op: str) -> tuple[Tensor, bool]:
    if input.ndim == sp + 1:
        return input.unsqueeze(0), True
    if input.ndim != sp + 2:
        raise ValueError(f"{op}: expected a ({sp + 1})-d or ({sp + 2})-d input, got shape {input.shape}")
    return input, False


class _PoolSelect(Op):
    """Pick, in each non-overlapping window, the element named by ``idx`` (the window's argmax offset)."""

    saves_inputs = False

    def forward(self, x: Any, idx: Any, k: tuple[int, ...], values: Any = None) -> Any:
        self.idx, self.k, self.shape = idx, k, x.shape
        if values is not None:  # the caller already has the picked values (the running maximum)
            return values
        out = None
        for o, sl in enumerate(_window_slices(k, idx.shape)):
            pick = x[sl] * (idx == o)
            out = pick if out is None else out + pick
        return out

    def backward(self, g: Tensor) -> tuple[Any, None, None, None]:
        return _PoolScatter.apply(g, self.idx, self.k, self.shape), None, None, None


class _PoolScatter(Op):
    """Adjoint of ``_PoolSelect``: put each value back at its window's chosen offset."""

    saves_inputs = False

    def forward(self, g: Any, idx: Any, k: tuple[int, ...], shape: tuple[int, ...]) -> Any:
        self.idx, self.k = idx, k
        out = self.backend.xp.zeros(shape, dtype=g.dtype)
        for o, sl in enumerate(_window_slices(k, idx.shape)):
            out[sl] = g * (idx == o)
        return out

    def backward(self, gg: Tensor) -> tuple[Any, None, None, None]:
        return _PoolSelect.apply(gg, self.idx, self.k), None, None, None


def _window_slices(k: tuple[int, ...], out_shape: tuple[int, ...]) -> list[tuple[Any, ...]]:
    """For each offset inside a window (row-major), the strided slice selecting it in every window."""
    sp = len(k)
    out = out_shape[-sp:]
    return [(Ellipsis, *(slice(off[i], off[i] + k[i] * out[i], k[i]) for i in range(sp))) for off in _ndindex(k)]


def _fast_max_pool(x: Tensor, k: tuple[int, ...], out: tuple[int, ...], return_indices: bool) -> Any:
    """Non-overlapping windows (stride = kernel, no padding or dilation): a few strided passes, no im2col."""
    xp = x._backend.xp
    a = x._data
    best: Any = None
    idx: Any = None
    for o, sl in enumerate(_window_slices(k, a.shape[:2] + out)):
        v = a[sl]
        if best is None:
            best, idx = v, xp.zeros(v.shape, dtype=xp.int16)
            continue
        upd = (v > best) | (v != v)  # NaN wins, as in PyTorch
        best = xp.where(upd, v, best)
        idx = xp.where(upd, xp.int16(o), idx)
    y = _PoolSelect.apply(x, idx, k, best)
    if not return_indices:
        return y
    sp = len(k)
    offs = xp.unravel_index(idx, k)
    flat = xp.zeros(idx.shape, dtype=xp.int64)
    for i in range(sp):
        view = [1] * (2 + sp)
        view[2 + i] = out[i]
        flat = flat * x.shape[2 + i] + (xp.arange(out[i]).reshape(view) * k[i] + offs[i])
    return y, Tensor._make(flat, x._backend)


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
    k, s, pads, d, out, _ = _pool_geometry(x.shape, kernel_size, stride, padding, dilation, ceil_mode, sp, op)
    if s == k and all(v == 1 for v in d) and not any(lo or hi for lo, hi in pads):
        r = _fast_max_pool(x, k, out, return_indices)
        if unbatched:
            return tuple(t.squeeze(0) for t in r) if return_indices else r.squeeze(0)
        return r
    from ...ops._layout import pad as _pad_fn

    n, c = x.shape[:2]
    flat_pads = [v for pr in reversed(pads) for v in pr]
    low = -math.inf if x.dtype.is_floating_point else int(x._backend.xp.iinfo(x._data.dtype).min)
    xpad = _pad_fn(x, flat_pads, value=low) if any(flat_pads) else x
    cols = Unfold.apply(xpad, k, s, ((0, 0),) * sp, d).reshape(n, c, math.prod(k), -1)
    vals, arg = cols.max(dim=2)
    y = vals.reshape((n, c) + out)
    if not return_indices:
        return y.squeeze(0) if unbatched else y
    idx = _pool_indices(arg, x.shape, k, s, pads, d, out)
    if unbatched:
        return y.squeeze(0), idx.squeeze(0)
    return y, idx


def _pool_indices(arg: Tensor, shape: tuple[int, ...], k: Any, s: Any, pads: Pads, d: Any, out: Any) -> Tensor:
    """Flat indices into the unpadded input of each window's maximum (PyTorch's ``return_indices``)."""
    xp = arg._backend.xp
    a = arg._data.reshape(arg.shape[:2] + tuple(out))
    sp = len(k)
    offs = xp.unravel_index(a, k)
    flat = xp.zeros(a.shape, dtype=xp.int64)
    for i in range(sp):
        view = [1] * (2 + sp)
        view[2 + i] = out[i]
        pos = xp.arange(out[i]).reshape(view) * s[i] - pads[i][0] + offs[i] * d[i]
        flat = flat * shape[2 + i] + pos
    return Tensor._make(flat, arg._backend)


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
    x = _float(x)
    k, s, pads, d, out, p = _pool_geometry(x.shape, kernel_size, stride, padding, 1, ceil_mode, sp, op)
    n, c = x.shape[:2]
    cols = Unfold.apply(x, k, s, pads, d)
    total = cols.reshape(n, c, math.prod(k), -1).sum(2).reshape((n, c) + out)
    if divisor_override:
        y = total / divisor_override
    else:
        xp = x._backend.xp
        # the divisor: window elements inside the (symmetrically) padded input, or inside the input only
        inner = tuple(x.shape[2 + i] + (2 * p[i] if count_include_pad else 0) for i in range(sp))
        ones = xp.ones((1, 1) + inner, dtype=x._data.dtype)
        extra = tuple(
            (0 if count_include_pad else p[i], pads[i][1] - (p[i] if count_include_pad else 0)) for i in range(sp)
        )
        win = _windows(xp, ones, k, s, extra, d)
        div = win.sum(axis=tuple(range(2 + sp, 2 + 2 * sp)))
        y = total / Tensor._make(div, x._backend)
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


def _adaptive_bounds(n: int, o: int) -> list[tuple[int, int]]:
    return [((i * n) // o, -(-((i + 1) * n) // o)) for i in range(o)]


def _adaptive(input: Tensor, output_size: Any, sp: int, use_max: bool, return_indices: bool, op: str) -> Any:
    x, unbatched = _batched(input, sp, op)
    size = output_size if isinstance(output_size, Sequence) else (output_size,) * sp
    out = tuple(x.shape[2 + i] if v is None else int(v) for i, v in enumerate(size))
    if len(out) != sp or any(v < 1 for v in out):
        raise ValueError(f"{op}: output_size must be {sp} positive ints, got {output_size!r}")
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
        from ...ops._linalg import einsum

        letters = "hwd"[:sp]
        outs = "ijk"[:sp]
        eq = "nc" + letters + "," + ",".join(o + h for o, h in zip(outs, letters, strict=True)) + "->nc" + outs
        r = einsum(eq, xf, *mats)
    else:
        from ...ops._join import stack

        cells, idxs = [], []
        bounds = [_adaptive_bounds(spatial[i], out[i]) for i in range(sp)]
        for pos in _ndindex(out):
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
    return _adaptive(input, output_size, 1, True, return_indices, "adaptive_max_pool1d")


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling to a fixed (H, W)."""
    return _adaptive(input, output_size, 2, True, return_indices, "adaptive_max_pool2d")
