"""Reference convolution kernels (NumPy and CuPy): im2col, one matrix product per group, col2im.

Shapes follow PyTorch: input (N, C, *spatial), weight (O, C / groups, *k), output (N, O, *out), every
result C-contiguous. ``pads`` is one (low, high) pair per spatial dim (``padding='same'`` can be uneven).
The columns are one strided copy from a sliding-window view of the input (zero-padded first when the
convolution pads); ``_im2col_offsets`` (a copy per kernel offset of the part of the input its windows see,
zeroing the rest) is the reference it is tested against. Large temporaries come from the backend's
:class:`Workspace` and go back to it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _kernels_threads
from ._kernels_batch_last import BatchLastCols, BatchLastKernels
from ._kernels_threads import parallel, parallel_calls
from ._kernels_util import Ints, Pads, Workspace, _shift, ndindex, out_shape
from ._kernels_winograd import WinogradKernels, WinoSaved, wino_ok, wino_tile
from ._kernels_winograd4 import Winograd4Kernels

#: a weight gradient with fewer elements per group than this sums its product over chunks of _K_CHUNK columns
_FEW_OUTPUTS = 1024
_K_CHUNK = 2048
#: NumPy: a weight of at most this many elements (LeNet-5's first layer: 150) multiplies the columns per batch
#: entry (see ``_per_entry``), and so does its gradient when a window holds at most _SMALL_WINDOW elements
_SMALL_WEIGHT = 4096
_SMALL_WINDOW = 32


def _copy_batch(src: Any, axis: int, out: Any) -> Any:
    """``out[...] = src`` (NumPy arrays of one shape) by ranges of ``axis``, the batch, over the kernel threads
    (``parallel_calls``: each range is one strided copy); returns ``out``. Elementwise: the same bits on any
    split."""
    lead = (slice(None),) * axis

    def part(a: int, b: int) -> None:
        out[(*lead, slice(a, b))] = src[(*lead, slice(a, b))]

    parallel_calls(src.shape[axis], src.size, part)
    return out


class ConvKernels(WinogradKernels, Winograd4Kernels, BatchLastKernels):
    """Convolution kernels written against ``self.xp`` (NumPy's names); 3x3 stride-1 convolutions with
    enough channels and pixels go through Winograd F(2x2, 3x3) or F(4x4, 3x3) (``_kernels_winograd``,
    ``_kernels_winograd4``; ``wino_tile`` picks)."""

    xp: Any
    pad: Any  # PadKernels.pad
    sliding_window: Any  # Backend.sliding_window
    gemm: Any  # Backend.gemm
    _ws: Workspace | None = None

    @property
    def workspace(self) -> Workspace:
        if self._ws is None:
            self._ws = Workspace(self.xp)
        return self._ws

    # -- im2col / col2im ---------------------------------------------------------------------
    def _im2col(self, x: Any, k: Ints, s: Any, pads: Pads, d: Any) -> tuple[Any, Ints]:
        """Columns (C, *k, N, *out) from the workspace (give them back when done) and ``out``."""
        n, c = x.shape[:2]
        spatial = tuple(x.shape[2:])
        out = out_shape(spatial, k, s, pads, d)
        cols = self.workspace.take((c, *k, n, *out), x.dtype)
        if cols.size:
            cols = self._im2col_windows(x, cols, k, s, pads, d, out)
        else:
            self._im2col_offsets(x, cols, k, s, pads, d, out)
        return cols, out

    def _im2col_offsets(self, x: Any, cols: Any, k: Ints, s: Any, pads: Pads, d: Any, out: Ints) -> None:
        """``cols`` by one copy per kernel offset of the input part its windows see (padding is zeroed in the
        columns, never materialised): the reference for ``_im2col_windows``. CuPy ran it until issue 28: two to
        five launches per kernel offset (ResNet-18's inference, 440 of its 817 launches per step) where the
        window copy makes three per convolution."""
        n, c = x.shape[:2]
        xt = x.swapaxes(0, 1)  # (C, N, *spatial)

        def part(a: int, b: int) -> None:  # batch entries a:b (channels a:b for a batch of one)
            sl = (slice(None), slice(a, b)) if n > 1 else (slice(a, b), slice(None))
            self._im2col_part(xt[sl], cols, sl, k, s, pads, d, out)

        parallel(self.xp, n if n > 1 else c, cols.size, part)

    def _im2col_windows(self, x: Any, cols: Any, k: Ints, s: Any, pads: Pads, d: Any, out: Ints) -> Any:
        """``cols`` as one strided copy from a sliding-window view of the input, padded first if need be; returns
        ``cols``. NumPy: faster than a copy per offset, whose inner loops run over single output rows (measured:
        benchmarks/README.md, "Measurements behind kernel choices"), and split by batch entries over the kernel
        threads (``_copy_batch``); CuPy: three kernel launches (the padded copy's two, the gather) instead of up
        to five per kernel offset."""
        sp = len(k)
        src = self.pad(x, ((0, 0), (0, 0), *pads), "constant") if any(lo or hi for lo, hi in pads) else x
        span = tuple((ki - 1) * di + 1 for ki, di in zip(k, d, strict=True))
        v = self.sliding_window(src, span, tuple(range(2, 2 + sp)))  # (N, C, *positions, *span)
        steps = (*(slice(0, (o - 1) * si + 1, si) for o, si in zip(out, s)), *(slice(None, None, di) for di in d))
        vt = v[(slice(None), slice(None), *steps)].transpose(1, *range(2 + sp, 2 + 2 * sp), 0, *range(2, 2 + sp))
        n = x.shape[0]
        if self.xp is np and n > 1:
            rec = _kernels_threads.recorder
            if rec is None:
                return _copy_batch(vt, 1 + sp, cols)
            return rec(_copy_batch, (vt, 1 + sp), {"out": cols})  # ember.compile: one call, split when replayed

        def part(a: int, b: int) -> None:  # batch entries a:b (channels a:b for a batch of one)
            sl = (slice(None),) * (1 + sp) + (slice(a, b),) if n > 1 else (slice(a, b),)
            cols[sl] = vt[sl]

        parallel(self.xp, n if n > 1 else x.shape[1], cols.size, part)
        return cols

    @staticmethod
    def _im2col_part(xt: Any, cols: Any, sl: Any, k: Ints, s: Any, pads: Pads, d: Any, out: Ints) -> None:
        """The columns ``cols[:, *k][sl]`` of ``xt`` (the input's channels and batch entries ``sl``)."""
        spatial = tuple(xt.shape[2:])
        for off in ndindex(k):
            block = cols[(slice(None), *off)][sl]  # (C, N, *out)
            dst, src = [slice(None), slice(None)], [slice(None), slice(None)]
            for i in range(len(k)):
                j0, j1, p0 = _shift(off[i], d[i], s[i], pads[i][0], spatial[i], out[i])
                dst.append(slice(j0, j1))
                src.append(slice(p0, p0 + (j1 - j0 - 1) * s[i] + 1, s[i]) if j1 > j0 else slice(0, 0))
                if j0 > 0:
                    block[(slice(None),) * (2 + i) + (slice(0, j0),)] = 0
                if j1 < out[i]:
                    block[(slice(None),) * (2 + i) + (slice(j1, None),)] = 0
            block[tuple(dst)] = xt[tuple(src)]

    def _col2im(self, cols: Any, shape: Ints, k: Ints, s: Any, pads: Pads, d: Any) -> Any:
        """Adjoint of ``_im2col``: add ``cols`` (C, *k, N, *out) into a new (N, C, *spatial) array."""
        sp = len(k)
        spatial = tuple(shape[2:])
        out = tuple(cols.shape[2 + sp :])
        res = self.xp.zeros(shape, dtype=cols.dtype)
        rt = res.swapaxes(0, 1)
        n = shape[0]
        moves = []  # (destination, source) slices per kernel offset that reaches the input
        for off in ndindex(k):
            dst, src = [slice(None), slice(None)], [slice(None), *off, slice(None)]  # src: of cols (C, *k, N, *out)
            for i in range(sp):
                j0, j1, p0 = _shift(off[i], d[i], s[i], pads[i][0], spatial[i], out[i])
                if j1 <= j0:
                    break
                src.append(slice(j0, j1))
                dst.append(slice(p0, p0 + (j1 - j0 - 1) * s[i] + 1, s[i]))
            else:
                moves.append((tuple(dst), tuple(src)))

        def part(a: int, b: int) -> None:  # batch entries a:b (channels a:b for a batch of one)
            sl = (slice(None), slice(a, b)) if n > 1 else (slice(a, b), slice(None))
            r, cs = rt[sl], cols[(sl[0], *(slice(None),) * sp, sl[1])]
            for dst, src in moves:
                view = r[dst]
                view += cs[src]

        parallel(self.xp, n if n > 1 else shape[1], cols.size, part)
        return res

    # -- convolution ---------------------------------------------------------------------------
    def _wino_m(self, x: Any, w: Any, pads: Pads) -> int:
        """The Winograd output tile for this convolution: ``wino_tile``'s on NumPy, where its rule was measured;
        F(2x2, 3x3) elsewhere (CuPy), which alone of the two has run on a GPU so far."""
        return wino_tile(x.shape, w.shape[0], pads) if self.xp is np else 2

    def conv(
        self,
        x: Any,
        w: Any,
        stride: Ints,
        pads: Pads,
        dilation: Ints,
        groups: int,
        save: bool = False,
        bias: Any = None,
    ) -> tuple[Any, Any]:
        """Cross-correlation of ``x`` with ``w`` (plus ``bias`` per output channel): ``(y, saved)``;
        ``saved`` feeds :meth:`conv_backward` (the im2col columns or Winograd tiles when ``save``, else ``None``)."""
        if wino_ok(x, w.shape, stride, dilation, groups):
            if self._wino_m(x, w, pads) == 4:
                return self.wino4_conv(x, w, pads, bias, save)
            return self.wino_conv(x, w, pads, bias, save)
        return self._conv_im2col(x, w, stride, pads, dilation, groups, save, bias)

    def _conv_im2col(
        self, x: Any, w: Any, stride: Ints, pads: Pads, dilation: Ints, groups: int, save: bool, bias: Any
    ) -> tuple[Any, Any]:
        """:meth:`conv` by im2col and one matrix product per group (every geometry)."""
        xp, ws = self.xp, self.workspace
        k = tuple(w.shape[2:])
        out = out_shape(tuple(x.shape[2:]), k, stride, pads, dilation)
        if self._batch_last_ok(x.shape, w.shape, out):
            return self._conv_batch_last(x, w, stride, pads, dilation, groups, save, bias, out)
        cols, out = self._im2col(x, k, stride, pads, dilation)
        n, o = x.shape[0], w.shape[0]
        kk = math.prod(w.shape[1:])
        c2 = cols.reshape(-1, n * math.prod(out))
        w2 = w.reshape(o, kk)
        if self._per_entry(n, w.shape, groups):  # the products write (N, O, *out) itself
            y = xp.empty((n, o, *out), dtype=x.dtype)
            self.gemm(w2, c2.reshape(kk, n, -1).transpose(1, 0, 2), out=y.reshape(n, o, -1))
            if bias is not None:
                y += bias.reshape((o,) + (1,) * len(out))
            if save:
                return y, cols
            ws.give(cols)
            return y, None
        tmp = xp.empty((o, c2.shape[1]), dtype=x.dtype) if n == 1 else ws.take((o, c2.shape[1]), x.dtype)
        if groups == 1:
            self.gemm(w2, c2, out=tmp)
        else:
            og = o // groups
            for gi in range(groups):
                self.gemm(w2[gi * og : (gi + 1) * og], c2[gi * kk : (gi + 1) * kk], out=tmp[gi * og : (gi + 1) * og])
        b = None if bias is None else bias.reshape((o, 1) + (1,) * len(out))
        if n == 1:
            if b is not None:
                tmp += bias.reshape(o, 1)
            y = tmp.reshape((1, o, *out))
        else:
            y = xp.empty((n, o, *out), dtype=x.dtype)
            yt, t3 = y.swapaxes(0, 1), tmp.reshape((o, n, *out))

            def part(a: int, c: int) -> None:  # output channels a:c, in (N, O, *out) order
                if b is None:
                    yt[a:c] = t3[a:c]
                else:  # the bias is added during the copy
                    xp.add(t3[a:c], b[a:c], out=yt[a:c])

            parallel(xp, o, y.size, part)
            ws.give(tmp)
        if save:
            return y, cols
        ws.give(cols)
        return y, None

    def _per_entry(self, n: int, w_shape: Ints, groups: int) -> bool:
        """Whether to multiply per batch entry (NumPy, ungrouped, a batch, a weight of at most _SMALL_WEIGHT
        elements): one product of (O, kk) by (kk, N * out) spends most of its time packing the long operand
        when O and kk are small (LeNet-5's first layer, batch 64, one thread: 0.56 ms with the transposed copy of
        its result against 0.23 per entry), and the per-entry products write the (N, O, *out) result directly;
        larger weights measured the same both ways."""
        return self.xp is np and groups == 1 and n > 1 and math.prod(w_shape) <= _SMALL_WEIGHT

    def _rows(self, g: Any) -> tuple[Any, bool]:
        """(N, O, *out) -> (O, N * prod(out)); True when the result is a workspace buffer."""
        n, o = g.shape[:2]
        if n == 1:
            return self.xp.ascontiguousarray(g).reshape(o, -1), False
        gt = self.workspace.take((o, n, *g.shape[2:]), g.dtype)
        gs = g.swapaxes(0, 1)

        def part(a: int, b: int) -> None:
            gt[a:b] = gs[a:b]

        parallel(self.xp, o, gt.size, part)
        return gt.reshape(o, -1), True

    def conv_transpose(
        self, y: Any, w: Any, stride: Ints, pads: Pads, dilation: Ints, groups: int, x_shape: Ints
    ) -> Any:
        """The adjoint of :meth:`conv` in its input (the transposed convolution): (N, O, *out) -> ``x_shape``."""
        if self._flip_ok(w, y.shape, x_shape, stride, pads, dilation, groups):
            return self._input_grad_by_conv(y, w, pads, dilation, groups)
        if self._batch_last_ok(x_shape, w.shape, y.shape[2:]):
            yb = self._batch_last_t(y)
            gx = self._input_grad_batch_last(yb, w, stride, pads, dilation, groups, x_shape)
            self.workspace.give(yb)
            return gx
        gt, pooled = self._rows(y)
        dcols = self._input_cols(gt, w, groups)
        if pooled:
            self.workspace.give(gt)
        return self._finish_input_grad(dcols, w, y.shape, stride, pads, dilation, groups, x_shape)

    @staticmethod
    def _flip_ok(w: Any, g_shape: Ints, x_shape: Ints, stride: Ints, pads: Pads, dilation: Ints, groups: int) -> bool:
        """Whether to compute the input gradient as a convolution (``_input_grad_by_conv``): possible for
        stride 1 and padding at most the dilated kernel's reach; faster when its im2col copy (O x input
        size) is at most about twice the scatter-add it replaces (C x output size; adds cost ~2.5 copies)."""
        k = w.shape[2:]
        if not all(stride[i] == 1 and max(pads[i]) <= dilation[i] * (k[i] - 1) for i in range(len(stride))):
            return False
        c = w.shape[1] * groups
        return w.shape[0] * math.prod(x_shape[2:]) <= 2 * c * math.prod(g_shape[2:])

    def _input_grad_by_conv(self, g: Any, w: Any, pads: Pads, dilation: Ints, groups: int) -> Any:
        """For stride 1, ``dL/dx`` is ``g`` correlated with the flipped, transposed kernel over the "full"
        padding: an im2col copy and one product instead of a product and a scatter-add (col2im)."""
        xp = self.xp
        sp = len(pads)
        o, cg = w.shape[:2]
        k = tuple(w.shape[2:])
        wg = w.reshape((groups, o // groups, cg, *k)).swapaxes(1, 2)  # (groups, C/g, O/g, *k)
        flip = (slice(None),) * 3 + (slice(None, None, -1),) * sp
        wt = xp.ascontiguousarray(wg[flip]).reshape((groups * cg, o // groups, *k))
        full = tuple((dilation[i] * (k[i] - 1) - pads[i][0], dilation[i] * (k[i] - 1) - pads[i][1]) for i in range(sp))
        return self.conv(g, wt, (1,) * sp, full, dilation, groups)[0]

    def _input_cols(self, gt: Any, w: Any, groups: int) -> Any:
        o = w.shape[0]
        og, kk = o // groups, math.prod(w.shape[1:])
        w2 = w.reshape(o, kk)
        dcols = self.workspace.take((groups * kk, gt.shape[1]), gt.dtype)
        for gi in range(groups):
            self.gemm(w2[gi * og : (gi + 1) * og].T, gt[gi * og : (gi + 1) * og], out=dcols[gi * kk : (gi + 1) * kk])
        return dcols

    def _finish_input_grad(
        self, dcols: Any, w: Any, y_shape: Ints, s: Any, pads: Pads, d: Any, groups: int, x_shape: Ints
    ) -> Any:
        k = tuple(w.shape[2:])
        c = w.shape[1] * groups
        gx = self._col2im(dcols.reshape((c, *k, y_shape[0], *y_shape[2:])), tuple(x_shape), k, s, pads, d)
        self.workspace.give(dcols)
        return gx

    def conv_weight(
        self, x: Any, g: Any, stride: Ints, pads: Pads, dilation: Ints, groups: int, w_shape: Ints, saved: Any = None
    ) -> Any:
        """The adjoint of :meth:`conv` in its weight: ``(x, g) -> dL/dw`` of shape ``w_shape``."""
        if isinstance(saved, WinoSaved):  # (the tiles serve conv_backward; here the columns are recomputed)
            self.workspace.give(saved.v)
            saved = None
        if isinstance(saved, BatchLastCols) or (saved is None and self._batch_last_ok(x.shape, w_shape, g.shape[2:])):
            gb = self._batch_last_t(g)
            gw = self._weight_batch_last(gb, x, saved, stride, pads, dilation, groups, w_shape)
            self.workspace.give(gb)
            return gw
        cols = saved if saved is not None else self._im2col(x, tuple(w_shape[2:]), stride, pads, dilation)[0]
        gt, pooled = self._rows(g)
        gw = self._weight_from(cols.reshape(-1, gt.shape[1]), gt, groups, w_shape)
        if pooled:
            self.workspace.give(gt)
        self.workspace.give(cols)
        return gw

    def _weight_from(self, cols: Any, gt: Any, groups: int, w_shape: Ints) -> Any:
        """``gt @ cols.T`` per group, computed as ``(cols @ gt.T).T`` (faster than the direct product): one
        product over the whole long dimension, or, when the result is tiny (under ``_FEW_OUTPUTS`` elements
        per group, LeNet-5's first layer), a sum over chunks of ``_K_CHUNK`` columns, which OpenBLAS keeps on one
        thread: on two threads it splits the single skinny product and loses (measured both ways,
        benchmarks/README.md, "Measurements behind kernel choices"). Not on CuPy, where every product and sum is
        a kernel launch with a fixed host cost (LeNet-5's first layer at batch 64: 25 chunks, 49 launches)."""
        xp = self.xp
        o = w_shape[0]
        og, kk = o // groups, math.prod(w_shape[1:])
        total = cols.shape[1]
        acc = xp.empty((groups, kk, og), dtype=gt.dtype)
        chunk = _K_CHUNK if kk * og < _FEW_OUTPUTS and xp is np else total
        tmp = xp.empty((kk, og), dtype=gt.dtype) if chunk < total else None
        for gi in range(groups):
            cg, gg = cols[gi * kk : (gi + 1) * kk], gt[gi * og : (gi + 1) * og]
            self.gemm(cg[:, :chunk], gg[:, :chunk].T, out=acc[gi])
            for a in range(chunk, total, chunk):
                b = min(total, a + chunk)
                self.gemm(cg[:, a:b], gg[:, a:b].T, out=tmp)
                acc[gi] += tmp
        return xp.ascontiguousarray(acc.transpose(0, 2, 1)).reshape(w_shape)

    def conv_backward(
        self,
        g: Any,
        x: Any,
        w: Any,
        saved: Any,
        stride: Ints,
        pads: Pads,
        dilation: Ints,
        groups: int,
        input_grad: bool = True,
        weight_grad: bool = True,
    ) -> tuple[Any, Any]:
        """Both gradients of :meth:`conv` at once, ``(dL/dx or None, dL/dw or None)``; consumes ``saved``."""
        if isinstance(saved, WinoSaved) or (saved is None and wino_ok(x, w.shape, stride, dilation, groups)):
            m = saved.m if saved is not None else self._wino_m(x, w, pads)
            backward = self.wino4_backward if m == 4 else self.wino_backward
            return backward(g, x, w, saved, pads, input_grad, weight_grad)
        return self._conv_backward_im2col(g, x, w, saved, stride, pads, dilation, groups, input_grad, weight_grad)

    def _conv_backward_im2col(
        self,
        g: Any,
        x: Any,
        w: Any,
        saved: Any,
        stride: Ints,
        pads: Pads,
        dilation: Ints,
        groups: int,
        input_grad: bool,
        weight_grad: bool,
    ) -> tuple[Any, Any]:
        gx = gw = None
        if input_grad and self._flip_ok(w, g.shape, x.shape, stride, pads, dilation, groups):
            gx, input_grad = self._input_grad_by_conv(g, w, pads, dilation, groups), False
        bl_x = input_grad and self._batch_last_ok(x.shape, w.shape, g.shape[2:])
        bl_w = weight_grad and (
            isinstance(saved, BatchLastCols) or (saved is None and self._batch_last_ok(x.shape, w.shape, g.shape[2:]))
        )
        if bl_x or bl_w:  # (the batch-last forward kept BatchLastCols: its rule is bl_w's)
            gb = self._batch_last_t(g)
            if bl_x:
                gx, input_grad = self._input_grad_batch_last(gb, w, stride, pads, dilation, groups, x.shape), False
            if bl_w:
                gw, weight_grad = self._weight_batch_last(gb, x, saved, stride, pads, dilation, groups, w.shape), False
                saved = None
            self.workspace.give(gb)
        if isinstance(saved, BatchLastCols):
            saved = saved.cols
        if weight_grad and math.prod(w.shape[1:]) <= _SMALL_WINDOW and self._per_entry(x.shape[0], w.shape, groups):
            # per batch entry (g in its own layout, no transposed copy), summed over the batch: LeNet-5's first
            # layer 0.63 -> 0.23 ms (one thread); larger windows measured slower this way
            cols = saved if saved is not None else self._im2col(x, tuple(w.shape[2:]), stride, pads, dilation)[0]
            n, kk = x.shape[0], math.prod(w.shape[1:])
            prods = self.gemm(g.reshape(n, w.shape[0], -1), cols.reshape(kk, n, -1).transpose(1, 2, 0))
            gw, weight_grad, saved = prods.sum(0).reshape(w.shape), False, None
            self.workspace.give(cols)
        if not (input_grad or weight_grad):
            self.workspace.give(saved)
            return gx, gw
        gt, pooled = self._rows(g)
        if input_grad:
            dcols = self._input_cols(gt, w, groups)
            gx = self._finish_input_grad(dcols, w, g.shape, stride, pads, dilation, groups, x.shape)
        if weight_grad:
            cols = saved if saved is not None else self._im2col(x, tuple(w.shape[2:]), stride, pads, dilation)[0]
            gw = self._weight_from(cols.reshape(-1, gt.shape[1]), gt, groups, w.shape)
            self.workspace.give(cols)
        elif saved is not None:
            self.workspace.give(saved)
        if pooled:
            self.workspace.give(gt)
        return gx, gw

    def conv_bias_grad(self, g: Any) -> Any:
        """``dL/db`` of :meth:`conv`: ``g`` (N, O, *out) summed over all but its channel dim. NumPy: over the batch
        first (adds of whole contiguous planes), then over each channel's plane (LeNet-5's layers at batch 64,
        one thread: 66 -> 25 and 38 -> 10 us against one sum over the axes (0, 2, ...), whose inner loops run
        over a single plane of a single entry)."""
        if self.xp is np and g.shape[0] > 1:
            return g.sum(0).reshape(g.shape[1], -1).sum(-1)
        return self.xp.sum(g, axis=(0, *range(2, g.ndim)))

    # -- unfold / fold ---------------------------------------------------------------------------
    def unfold(self, x: Any, k: Ints, stride: Ints, pads: Pads, dilation: Ints) -> Any:
        """(N, C, *spatial) -> (N, C * prod(k), L): every window as a column (PyTorch's ``unfold``)."""
        cols = self._im2col(x, k, stride, pads, dilation)[0]
        sp = len(k)
        n, c = x.shape[:2]
        perm = (1 + sp, 0, *range(1, 1 + sp), *range(2 + sp, 2 + 2 * sp))  # (N, C, *k, *out)
        res = self.xp.ascontiguousarray(cols.transpose(perm)).reshape(n, c * math.prod(k), -1)
        self.workspace.give(cols)
        return res

    def fold(self, cols: Any, shape: Ints, k: Ints, stride: Ints, pads: Pads, dilation: Ints) -> Any:
        """(N, C * prod(k), L) -> ``shape`` (N, C, *spatial): the columns summed back into place."""
        sp = len(k)
        n, c = shape[:2]
        out = out_shape(tuple(shape[2:]), k, stride, pads, dilation)
        c6 = cols.reshape((n, c, *k, *out))
        perm = (1, *range(2, 2 + sp), 0, *range(2 + sp, 2 + 2 * sp))  # (C, *k, N, *out)
        return self._col2im(c6.transpose(perm), tuple(shape), k, stride, pads, dilation)
