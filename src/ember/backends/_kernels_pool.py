"""Reference pooling kernels (NumPy and CuPy): one strided pass per window offset, no im2col (overlapping
max-pool windows go through the contiguous "wide" layout of ``_kernels_wide``).

Arguments are PyTorch's (``kernel_size``, ``stride``, ``padding``, ``dilation``, ``ceil_mode`` as tuples of
ints, one per spatial dim). Max pooling keeps only the values in the forward pass; the backward pass and
``return_indices`` find each window's first maximum again (a NaN counts as the maximum, as in PyTorch).
"""

from __future__ import annotations

import math
from typing import Any

from ._kernels_threads import parallel
from ._kernels_util import Ints, Pads, ndindex, offset_slices, pool_geometry
from ._kernels_wide import WideGrid, max_pool_backward_wide, max_pool_wide


def _overlap(k: Ints, s: Ints, d: Ints) -> bool:
    """Whether neighbouring windows share elements (then the wide layout of ``_kernels_wide`` is faster)."""
    return any(s[i] < d[i] * (k[i] - 1) + 1 for i in range(len(k)))


def _regions(
    off: Ints, spatial: Ints, out: Ints, s: Ints, pads: Pads, d: Ints
) -> tuple[tuple[slice, ...], tuple[slice, ...]] | None:
    """(output slices, input slices) of the windows whose element at ``off`` is inside the input."""
    return offset_slices(off, d, s, tuple(lo for lo, _ in pads), spatial, out, lead=2)


class PoolKernels:
    """Pooling kernels written against ``self.xp`` (NumPy's names)."""

    xp: Any

    def _lowest(self, dtype: Any) -> Any:
        xp = self.xp
        return -math.inf if xp.issubdtype(dtype, xp.floating) else xp.iinfo(dtype).min

    # -- max -------------------------------------------------------------------------------------
    def max_pool(
        self, x: Any, k: Ints, s: Ints, p: Ints, d: Ints, ceil_mode: bool, save: bool = False
    ) -> tuple[Any, Any]:
        """The maximum of every window: ``(y, saved)``; ``saved`` feeds :meth:`max_pool_backward` when ``save``
        (None here: the reference finds the maxima again; torch keeps its indices)."""
        xp = self.xp
        spatial = tuple(x.shape[2:])
        pads, out = pool_geometry(spatial, k, s, p, d, ceil_mode)
        if _overlap(k, s, d):
            return max_pool_wide(xp, x, WideGrid(spatial, out, k, s, pads, d), self._lowest(x.dtype)), None
        y = xp.empty(x.shape[:2] + out, dtype=x.dtype)
        regs = [reg for reg in (_regions(off, spatial, out, s, pads, d) for off in ndindex(k)) if reg is not None]

        def part(a: int, b: int) -> None:  # batch entries a:b
            xb, yb = x[a:b], y[a:b]
            for i, (dst, src) in enumerate(regs):
                if i == 0:
                    if not all(sl.start == 0 and sl.stop == o for sl, o in zip(dst[2:], out, strict=True)):
                        yb.fill(self._lowest(x.dtype))  # the first offset does not reach every window
                    else:
                        yb[...] = xb[src]
                        continue
                view = yb[dst]
                xp.maximum(view, xb[src], out=view)  # NaN propagates, as in PyTorch

        parallel(xp, x.shape[0], x.size, part)
        return y, None

    def _argmax_pass(self, x: Any, y: Any, k: Ints, s: Ints, p: Ints, d: Ints, ceil_mode: bool, visit: Any) -> None:
        """Call ``visit(dst, src, hit)`` per kernel offset, ``hit`` marking the windows whose first maximum
        (in row-major window order) sits at that offset."""
        xp = self.xp
        spatial = tuple(x.shape[2:])
        pads, out = pool_geometry(spatial, k, s, p, d, ceil_mode)
        nan_y = None
        if xp.issubdtype(y.dtype, xp.floating):
            nan_y = xp.isnan(y)
            if not nan_y.any():
                nan_y = None
        seen = None
        for off in ndindex(k):
            reg = _regions(off, spatial, out, s, pads, d)
            if reg is None:
                continue
            dst, src = reg
            v = x[src]
            eq = v == y[dst]
            if nan_y is not None:
                eq |= nan_y[dst] & xp.isnan(v)
            if seen is None:
                seen = xp.zeros(y.shape, dtype=bool)
                hit = eq
            else:
                hit = eq > seen[dst]  # a maximum here, and none at an earlier offset
            view = seen[dst]
            view |= eq
            visit(dst, src, hit)

    def max_pool_backward(
        self, g: Any, x: Any, y: Any, saved: Any, k: Ints, s: Ints, p: Ints, d: Ints, ceil_mode: bool
    ) -> Any:
        """``dL/dx`` of :meth:`max_pool`: each window's gradient goes to its (first) maximum."""
        xp = self.xp
        disjoint = not _overlap(k, s, d)
        low = self._lowest(x.dtype)
        if not disjoint and xp.all(y > low):  # no NaN, no window whose maximum is the padding value
            spatial = tuple(x.shape[2:])
            pads, out = pool_geometry(spatial, k, s, p, d, ceil_mode)
            return max_pool_backward_wide(xp, g, x, y, WideGrid(spatial, out, k, s, pads, d), low)
        gx = xp.zeros(x.shape, dtype=g.dtype)

        def part(a: int, b: int) -> None:  # batch entries a:b
            gb, gxb = g[a:b], gx[a:b]

            def visit(dst: Any, src: Any, hit: Any) -> None:
                view = gxb[src]
                if disjoint:
                    xp.multiply(gb[dst], hit, out=view)
                else:
                    view += gb[dst] * hit

            self._argmax_pass(x[a:b], y[a:b], k, s, p, d, ceil_mode, visit)

        parallel(xp, x.shape[0], x.size, part)
        return gx

    def max_pool_indices(self, x: Any, y: Any, saved: Any, k: Ints, s: Ints, p: Ints, d: Ints, ceil_mode: bool) -> Any:
        """PyTorch's ``return_indices``: each maximum's flat position in the input's spatial dims (int64)."""
        xp = self.xp
        spatial = tuple(x.shape[2:])
        sp = len(k)
        idx = xp.zeros(y.shape, dtype=xp.int64)

        def visit(dst: Any, src: Any, hit: Any) -> None:
            flat: Any = 0
            for i in range(sp):
                sl = src[2 + i]
                shape = [1] * (2 + sp)
                n_i = dst[2 + i].stop - dst[2 + i].start
                shape[2 + i] = n_i
                pos = xp.arange(sl.start, sl.start + n_i * sl.step, sl.step).reshape(shape)
                flat = flat * spatial[i] + pos
            view = idx[dst]
            view[...] = xp.where(hit, flat, view)

        self._argmax_pass(x, y, k, s, p, d, ceil_mode, visit)
        return idx

    # -- average ---------------------------------------------------------------------------------
    def _avg_divisor(
        self, spatial: Ints, out: Ints, k: Ints, s: Ints, p: Ints, pads: Pads, include_pad: bool, dtype: Any
    ) -> Any:
        """How many elements each window averages over, broadcastable to (N, C, *out)."""
        xp = self.xp
        sp = len(k)
        div: Any = None
        for i in range(sp):
            start = xp.arange(out[i]) * s[i] - pads[i][0]
            lo, hi = (-p[i], spatial[i] + p[i]) if include_pad else (0, spatial[i])
            cnt = xp.minimum(start + k[i], hi) - xp.maximum(start, lo)
            shape = [1] * (2 + sp)
            shape[2 + i] = out[i]
            cnt = cnt.astype(dtype).reshape(shape)
            div = cnt if div is None else div * cnt
        return div

    def avg_pool(
        self, x: Any, k: Ints, s: Ints, p: Ints, ceil_mode: bool, count_include_pad: bool, divisor_override: Any
    ) -> Any:
        """The mean of every window (PyTorch's ``avg_pool``)."""
        xp = self.xp
        spatial = tuple(x.shape[2:])
        ones = (1,) * len(k)
        pads, out = pool_geometry(spatial, k, s, p, ones, ceil_mode)
        y = xp.zeros(x.shape[:2] + out, dtype=x.dtype)
        for off in ndindex(k):
            reg = _regions(off, spatial, out, s, pads, ones)
            if reg is not None:
                view = y[reg[0]]
                view += x[reg[1]]
        if divisor_override:
            y /= divisor_override
        else:
            y /= self._avg_divisor(spatial, out, k, s, p, pads, count_include_pad, x.dtype)
        return y

    def avg_pool_backward(
        self,
        g: Any,
        x_shape: Ints,
        k: Ints,
        s: Ints,
        p: Ints,
        ceil_mode: bool,
        count_include_pad: bool,
        divisor_override: Any,
    ) -> Any:
        """``dL/dx`` of :meth:`avg_pool` (its adjoint)."""
        xp = self.xp
        spatial = tuple(x_shape[2:])
        ones = (1,) * len(k)
        pads, out = pool_geometry(spatial, k, s, p, ones, ceil_mode)
        if divisor_override:
            gd = g / divisor_override
        else:
            gd = g / self._avg_divisor(spatial, out, k, s, p, pads, count_include_pad, g.dtype)
        gx = xp.zeros(x_shape, dtype=g.dtype)
        for off in ndindex(k):
            reg = _regions(off, spatial, out, s, pads, ones)
            if reg is not None:
                view = gx[reg[1]]
                view += gd[reg[0]]
        return gx
