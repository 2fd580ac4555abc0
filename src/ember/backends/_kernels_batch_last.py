"""Convolution by im2col with the batch as the last axis (NumPy, a batch of several, short output rows).

The columns are (C, *k, *out, N) and the sums (C, *spatial, N): every copy into the columns and every add of
col2im then runs over whole (output row x batch) blocks, where the (C, *k, N, *out) layout of
``_kernels_conv`` runs over single output rows (10 elements in LeNet-5's second layer). The price is two
transposed copies, of the input and of the output; they pay when the output rows are short (measured on
LeNet-5's layers: benchmarks/README.md, "Measurements behind kernel choices").
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ._kernels_util import Ints, Pads, ndindex, offset_slices

#: output rows shorter than this may take the batch-last layout (LeNet-5: 10 gains, 28 loses)
_SHORT_ROW = 16
#: ... when the columns hold at least this many times the elements of the input and output (see _batch_last_ok)
_EXPANSION = 3


class BatchLastCols:
    """What the forward pass keeps for the weight gradient: the batch-last columns (a workspace buffer)."""

    __slots__ = ("cols",)

    def __init__(self, cols: Any) -> None:
        self.cols = cols


class BatchLastKernels:
    """The batch-last convolution kernels, mixed into ``ConvKernels`` (NumPy's names on ``self.xp``)."""

    xp: Any
    workspace: Any
    _weight_from: Any  # ConvKernels._weight_from
    gemm: Any  # Backend.gemm

    def _batch_last_ok(self, x_shape: Ints, w_shape: Ints, out: Ints) -> bool:
        """NumPy, a batch, output rows shorter than 16, and columns at least 3x the elements the two
        transposed copies move (input and output): LeNet-5's second layer (5.4x) gains; ResNet-18's stride-2
        layers (1x1: < 1x, 3x3: 1.5x) measured slower this way."""
        if self.xp is not np or x_shape[0] < 2 or not out or not all(out) or out[-1] >= _SHORT_ROW:
            return False
        c, m = x_shape[1], math.prod(out)
        return c * math.prod(w_shape[2:]) * m >= _EXPANSION * (c * math.prod(x_shape[2:]) + w_shape[0] * m)

    def _batch_last_t(self, a: Any) -> Any:
        """(N, C, *sp) -> a (C, *sp, N) workspace copy."""
        t = self.workspace.take((*a.shape[1:], a.shape[0]), a.dtype)
        t[...] = a.transpose(*range(1, a.ndim), 0)
        return t

    def _cols_batch_last(self, x: Any, k: Ints, s: Ints, pads: Pads, d: Ints, out: Ints) -> Any:
        """The columns (C, *k, *out, N) of ``x`` (a workspace buffer): the input transposed batch-last into a
        zero-bordered workspace buffer, then one strided copy from its sliding-window view (a copy per kernel
        offset cost ~0.13 ms more on LeNet-5's second layer, most of it Python per offset)."""
        sp = len(k)
        n, c = x.shape[:2]
        spatial = tuple(x.shape[2:])
        padded = tuple(spatial[i] + pads[i][0] + pads[i][1] for i in range(sp))
        xt = self.workspace.take((c, *padded, n), x.dtype)
        for i in range(sp):  # zero the borders (the buffer may hold anything)
            lo, hi = pads[i]
            if lo:
                xt[(slice(None),) * (1 + i) + (slice(0, lo),)] = 0
            if hi:
                xt[(slice(None),) * (1 + i) + (slice(padded[i] - hi, None),)] = 0
        inner = tuple(slice(pads[i][0], pads[i][0] + spatial[i]) for i in range(sp))
        xt[(slice(None), *inner)] = x.transpose(1, *range(2, 2 + sp), 0)
        span = tuple((k[i] - 1) * d[i] + 1 for i in range(sp))
        v = sliding_window_view(xt, span, axis=tuple(range(1, 1 + sp)))  # (C, *positions, N, *span)
        pos = tuple(slice(0, (out[i] - 1) * s[i] + 1, s[i]) for i in range(sp))
        ker = tuple(slice(None, None, d[i]) for i in range(sp))
        vw = v[(slice(None), *pos, slice(None), *ker)]  # (C, *out, N, *k)
        cols = self.workspace.take((c, *k, *out, n), x.dtype)
        cols[...] = vw.transpose(0, *range(sp + 2, 2 * sp + 2), *range(1, sp + 1), sp + 1)
        self.workspace.give(xt)
        return cols

    def _conv_batch_last(
        self, x: Any, w: Any, s: Ints, pads: Pads, d: Ints, groups: int, save: bool, bias: Any, out: Ints
    ) -> tuple[Any, Any]:
        """``conv`` by batch-last columns: one product per group, the bias added, then the (O, *out, N) result
        transposed into (N, O, *out)."""
        ws = self.workspace
        n, o = x.shape[0], w.shape[0]
        cols = self._cols_batch_last(x, tuple(w.shape[2:]), s, pads, d, out)
        m = math.prod(out) * n
        tmp = ws.take((o, m), x.dtype)
        _gemm_groups(self.gemm, w.reshape(o, -1), cols.reshape(-1, m), tmp, groups)
        if bias is not None:
            tmp += bias.reshape(o, 1)
        y = _batch_first(tmp.reshape((o, *out, n)))
        ws.give(tmp)
        if save:
            return y, BatchLastCols(cols)
        ws.give(cols)
        return y, None

    def _input_grad_batch_last(self, gb: Any, w: Any, s: Ints, pads: Pads, d: Ints, groups: int, x_shape: Ints) -> Any:
        """``dL/dx`` from ``gb`` (the output gradient as (O, *out, N)): one product per group into batch-last
        input-gradient columns, added into a (C, *spatial, N) sum (col2im), transposed back."""
        if groups == 1 and s[-1] == 1:
            return self._input_grad_shifted(gb, w, s, pads, d, x_shape)
        xp, ws = self.xp, self.workspace
        o, n = gb.shape[0], gb.shape[-1]
        k, out, spatial = tuple(w.shape[2:]), tuple(gb.shape[1:-1]), tuple(x_shape[2:])
        c, kk = w.shape[1] * groups, math.prod(w.shape[1:])
        g2 = gb.reshape(o, -1)
        dcols = ws.take((c * math.prod(k), g2.shape[1]), gb.dtype)
        _gemm_groups(self.gemm, w.reshape(o, kk).T, g2, dcols, groups, transposed=True)
        dk = dcols.reshape((c, *k, *out, n))
        r = xp.zeros((c, *spatial, n), dtype=gb.dtype)
        lo = tuple(p[0] for p in pads)
        for off in ndindex(k):
            reg = offset_slices(off, d, s, lo, spatial, out)
            if reg is not None:
                view = r[(slice(None), *reg[1])]
                view += dk[(slice(None), *off, *reg[0])]
        ws.give(dcols)
        return _batch_first(r)

    def _input_grad_shifted(self, gb: Any, w: Any, s: Ints, pads: Pads, d: Ints, x_shape: Ints) -> Any:
        """``dL/dx`` as ``_input_grad_batch_last`` for one group and stride 1 along the last spatial axis: the sum
        over that axis's kernel offsets goes into the product. ``gb`` is copied once per such offset, shifted
        along the padded input's last axis (zeros elsewhere), and one product gives, per channel and offset along
        the other axes, whole padded rows of the sum (C, *spatial[:-1], padded width, N); the adds of col2im then
        run over whole contiguous rows (the (C, *k, *out, N) columns' adds ran over rows of out[-1] * N elements:
        LeNet-5's second layer, one thread, about 0.84 -> 0.72 ms; benchmarks/README.md)."""
        xp, ws = self.xp, self.workspace
        sp = len(pads)
        o, n, c = gb.shape[0], gb.shape[-1], w.shape[1]
        k, out, spatial = tuple(w.shape[2:]), tuple(gb.shape[1:-1]), tuple(x_shape[2:])
        kl, dl, ol = k[-1], d[-1], out[-1]
        wp = ol + dl * (kl - 1)  # the padded input's last axis (stride 1 along it)
        lead = out[:-1]
        gs = ws.take((o, kl, *lead, wp, n), gb.dtype)  # rows (O, last kernel offset)
        for j in range(kl):  # gs[:, j, ..., q, :] = gb[..., q - j * dl, :], 0 outside
            blk, a, b = gs[:, j], j * dl, j * dl + ol
            if a:
                blk[..., :a, :] = 0
            if b < wp:
                blk[..., b:, :] = 0
            blk[..., a:b, :] = gb
        kf = math.prod(k[:-1])
        w2 = w.reshape(o, c, kf, kl).transpose(1, 2, 0, 3).reshape(c * kf, o * kl)  # rows (C, other offsets)
        m = math.prod(lead) * wp * n
        rows = ws.take((c * kf, m), gb.dtype)
        self.gemm(w2, gs.reshape(o * kl, m), out=rows)
        ws.give(gs)
        rk = rows.reshape((c, *k[:-1], *lead, wp, n))
        r = xp.zeros((c, *spatial[:-1], wp, n), dtype=gb.dtype)
        lo = tuple(p[0] for p in pads[:-1])
        for off in ndindex(k[:-1]):
            reg = offset_slices(off, d[:-1], s[:-1], lo, spatial[:-1], lead)
            if reg is not None:
                view = r[(slice(None), *reg[1])]
                view += rk[(slice(None), *off, *reg[0])]
        ws.give(rows)
        inner = r[(slice(None),) * sp + (slice(pads[-1][0], pads[-1][0] + spatial[-1]),)]
        return _batch_first(inner)

    def _weight_batch_last(
        self, gb: Any, x: Any, saved: Any, s: Ints, pads: Pads, d: Ints, groups: int, w_shape: Ints
    ) -> Any:
        """``dL/dw`` from ``gb`` (the output gradient as (O, *out, N)) and the batch-last columns (``saved``,
        or recomputed when None); consumes ``saved``."""
        cols = saved.cols if isinstance(saved, BatchLastCols) else None
        if cols is None:
            cols = self._cols_batch_last(x, tuple(w_shape[2:]), s, pads, d, tuple(gb.shape[1:-1]))
        gw = self._weight_from(cols.reshape(-1, gb[0].size), gb.reshape(gb.shape[0], -1), groups, w_shape)
        self.workspace.give(cols)
        return gw


def _gemm_groups(mm: Any, a: Any, b: Any, out: Any, groups: int, transposed: bool = False) -> None:
    """``out = a @ b`` per group, by ``mm`` (the backend's ``gemm``): ``a`` (O, kk) with ``b`` (groups * kk, L) ->
    ``out`` (O, L); ``transposed``: ``a`` (kk, O), the transposed weight, with ``b`` (O, L) -> ``out`` (groups * kk,
    L)."""
    if groups == 1:
        mm(a, b, out=out)
        return
    if transposed:
        kk, og = a.shape[0], a.shape[1] // groups
        for gi in range(groups):
            mm(a[:, gi * og : (gi + 1) * og], b[gi * og : (gi + 1) * og], out=out[gi * kk : (gi + 1) * kk])
        return
    og, kk = a.shape[0] // groups, a.shape[1]
    for gi in range(groups):
        mm(a[gi * og : (gi + 1) * og], b[gi * kk : (gi + 1) * kk], out=out[gi * og : (gi + 1) * og])


#: channels of at least this many elements are transposed one at a time by ``_batch_first``
_PLANE = 4096


def _batch_first(a: Any) -> Any:
    """(C, *sp, N) -> a new C-contiguous (N, C, *sp) array. A channel of at least ``_PLANE`` elements at a time:
    each is a 2-d transpose that stays in the cache, where one copy of the whole array reads it down columns
    of C * prod(sp) elements (LeNet-5's second layer, one thread: the output 89 -> 34 us, the input gradient
    74 -> 30 us; benchmarks/README.md)."""
    c, n, sp = a.shape[0], a.shape[-1], a.ndim - 2
    res = np.empty((n, *a.shape[:-1]), dtype=a.dtype)
    if a[0].size < _PLANE:
        res[...] = a.transpose(sp + 1, *range(sp + 1))
        return res
    perm = (sp, *range(sp))  # (np.moveaxis costs ~3 us a call)
    for i in range(c):
        res[:, i] = a[i].transpose(perm)
    return res
