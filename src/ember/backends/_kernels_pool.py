"""Reference pooling kernels (NumPy and CuPy): one strided pass per window offset, no im2col (overlapping
max-pool windows go through the contiguous "wide" layout of ``_kernels_wide``).

Arguments are PyTorch's (``kernel_size``, ``stride``, ``padding``, ``dilation``, ``ceil_mode`` as tuples of
ints, one per spatial dim). Max pooling keeps only the values in the forward pass; the backward pass and
``return_indices`` find each window's first maximum again (a NaN counts as the maximum, as in PyTorch).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._kernels_threads import parallel
from ._kernels_util import Ints, Pads, ndindex, offset_slices, pool_geometry, select_grad
from ._kernels_wide import WideGrid, max_pool_backward_wide, max_pool_wide


def _overlap(k: Ints, s: Ints, d: Ints) -> bool:
    """Whether neighbouring windows share elements (then the wide layout of ``_kernels_wide`` is faster)."""
    return any(s[i] < d[i] * (k[i] - 1) + 1 for i in range(len(k)))


class PairIndex:
    """What a 2x2, stride-2 max-pool forward keeps for its backward (NumPy, no NaN in the output): each window's
    first maximum (row-major order) as its flat position in the C-ordered input, int64 of the output's shape
    (8 bytes per output element, as PyTorch's indices)."""

    __slots__ = ("idx",)

    def __init__(self, idx: Any) -> None:
        self.idx = idx


#: cached window-corner positions (``_corners``) of at most this many elements (8 MB)
_CORNERS_CACHE_MAX = 1 << 20
_corners_cache: dict[Ints, Any] = {}


def _corners(nc: int, h: int, w: int, oh: int, ow: int) -> Any:
    """The flat position of each window's top-left element in a C-ordered (N, C, H, W) input, int64
    (N * C, oh, ow); read-only, cached for small shapes (the outer sum runs ``ow``-element inner loops: 76 us
    for LeNet-5's first pool against 15 us for an add of the cached array)."""
    key = (nc, h, w, oh, ow)
    got = _corners_cache.get(key)
    if got is not None:
        return got
    rows = (np.arange(nc, dtype=np.int64)[:, None] * h + np.arange(0, 2 * oh, 2, dtype=np.int64)) * w
    res = np.add.outer(rows, np.arange(0, 2 * ow, 2, dtype=np.int64))
    if res.size <= _CORNERS_CACHE_MAX:
        if len(_corners_cache) >= 8:
            _corners_cache.clear()
        res.flags.writeable = False
        _corners_cache[key] = res
    return res


def _pairs_ok(xp: Any, x: Any, k: Ints, s: Ints, d: Ints, pads: Pads) -> bool:
    """Whether ``max_pool`` takes the 2x2, stride-2 path: NumPy, floating point, 2-d, no padding or dilation,
    every window inside the input (an odd last row or column is left out, as PyTorch's floor mode does)."""
    return (
        xp is np
        and x.dtype.kind == "f"
        and tuple(k) == (2, 2)
        and tuple(s) == (2, 2)
        and tuple(d) == (1, 1)
        and tuple(pads) == ((0, 0), (0, 0))
    )


def _pair_planes(x: Any, out: Ints) -> Any:
    """The four window positions of ``x`` as contiguous planes, (2 rows, 2 columns, N, C, *out): one copy,
    after which every pass of the 2x2 kernels runs over contiguous arrays (strided maxima of every other
    element run ~10x slower per element: benchmarks/README.md, "Measurements behind kernel choices")."""
    n, c = x.shape[:2]
    oh, ow = out
    src = x if x.shape[2:] == (2 * oh, 2 * ow) else x[:, :, : 2 * oh, : 2 * ow]
    planes = np.empty((2, 2, n, c, oh, ow), dtype=x.dtype)
    planes[...] = src.reshape(n, c, oh, 2, ow, 2).transpose(3, 5, 0, 1, 2, 4)
    return planes


def _max_pool_pairs(x: Any, out: Ints, save: bool) -> tuple[Any, Any]:
    """2x2, stride-2 max pooling: ``(y, PairIndex or None)``. The maximum is taken along each row first, then
    between the rows; the kept positions are each window's first maximum in row-major order, as PyTorch's."""
    p = _pair_planes(x, out)
    top = np.maximum(p[0, 0], p[0, 1])
    bottom = np.maximum(p[1, 0], p[1, 1])
    y = np.maximum(top, bottom)  # NaN propagates, as in PyTorch
    if not save or (y.size and np.isnan(y.max())):  # a NaN anywhere: the backward finds the maxima the general
        # way (the maximum: 4.4 against 14.3 us for the sum of LeNet-5's first pool, and no overflow warning)
        return y, None
    right = np.greater(p[0, 1], p[0, 0])  # strict: a tie goes to the first element
    right_b = np.greater(p[1, 1], p[1, 0])
    low = np.greater(bottom, top)
    np.bitwise_xor(right, right_b, out=right_b)  # right = right_b where low, else right
    np.bitwise_and(right_b, low, out=right_b)
    np.bitwise_xor(right, right_b, out=right)
    n, c, h, w = x.shape
    code = np.multiply(low, w, dtype=np.uint8 if w < 255 else np.int64)  # the maximum's offset in its window
    np.add(code, right, out=code)  # (in one byte: 87 -> 45 us for LeNet-5's first pool)
    idx = np.add(_corners(n * c, h, w, *out).reshape(y.shape), code, dtype=np.int64)
    return y, PairIndex(idx)


def _max_pool_pairs_backward(g: Any, x_shape: Ints, saved: PairIndex) -> Any:
    """``dL/dx`` of :func:`_max_pool_pairs` from its positions: zeros with each window's gradient put at its
    first maximum (one scatter; the four strided products of masks it replaces ran over ``ow``-element inner loops:
    LeNet-5's first pool, one thread, 334 -> 103 us)."""
    gx = np.zeros(x_shape, dtype=g.dtype)
    gx.reshape(-1)[saved.idx.reshape(-1)] = g.reshape(-1)  # (written, not added: a -0.0 gradient stays -0.0 at its
    # maximum, where PyTorch's scatter-add onto zeros gives +0.0; adding 0.0 first cost 19 us of LeNet-5's 100)
    return gx


def _regions(
    off: Ints, spatial: Ints, out: Ints, s: Ints, pads: Pads, d: Ints
) -> tuple[tuple[slice, ...], tuple[slice, ...]] | None:
    """(output slices, input slices) of the windows whose element at ``off`` is inside the input."""
    return offset_slices(off, d, s, tuple(lo for lo, _ in pads), spatial, out, lead=2)


def _divide(xp: Any, y: Any, d: Any) -> Any:
    """``y / d`` in place; window sums of integers divided as PyTorch's int64 kernel does (truncated toward 0)."""
    if y.dtype.kind in "fc":
        y /= d
        return y
    return xp.sign(y) * (xp.abs(y) // d)


def _whole_plane(spatial: Ints, k: Ints, out: Ints, pads: Pads) -> bool:
    """Whether the one window of a pooling is the whole unpadded plane."""
    return all(o == 1 for o in out) and tuple(k) == tuple(spatial) and not any(lo or hi for lo, hi in pads)


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
        (the 2x2, stride-2 path keeps its ``PairIndex``; otherwise None: the backward finds the maxima again;
        torch keeps its indices)."""
        xp = self.xp
        spatial = tuple(x.shape[2:])
        pads, out = pool_geometry(spatial, k, s, p, d, ceil_mode)
        if _overlap(k, s, d):
            return max_pool_wide(xp, x, WideGrid(spatial, out, k, s, pads, d), self._lowest(x.dtype)), None
        if _pairs_ok(xp, x, k, s, d, pads):
            return _max_pool_pairs(x, out, save)
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
        if isinstance(saved, PairIndex):
            return _max_pool_pairs_backward(g, tuple(x.shape), saved)
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
                view += select_grad(xp, gb[dst], hit)  # (added to zeros, as PyTorch: a -0.0 gradient gives +0.0)

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
        """The mean of every window (PyTorch's ``avg_pool``); a window over the whole plane (global pooling: ResNet's
        head) is one sum over the plane rather than one add per kernel offset (49 launches on CuPy for 7x7)."""
        xp = self.xp
        spatial = tuple(x.shape[2:])
        ones = (1,) * len(k)
        pads, out = pool_geometry(spatial, k, s, p, ones, ceil_mode)
        if _whole_plane(spatial, k, out, pads):
            y = xp.sum(xp.reshape(x, (*x.shape[:2], -1)), axis=-1).astype(x.dtype, copy=False)
            y = _divide(xp, y, divisor_override or math.prod(k))
            return xp.reshape(y, x.shape[:2] + out)
        y = xp.zeros(x.shape[:2] + out, dtype=x.dtype)
        for off in ndindex(k):
            reg = _regions(off, spatial, out, s, pads, ones)
            if reg is not None:
                view = y[reg[0]]
                view += x[reg[1]]
        if divisor_override:
            return _divide(xp, y, divisor_override)
        return _divide(xp, y, self._avg_divisor(spatial, out, k, s, p, pads, count_include_pad, x.dtype))

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
        if _whole_plane(spatial, k, out, pads):
            gd = g / (divisor_override or math.prod(k))
            return xp.ascontiguousarray(xp.broadcast_to(gd, x_shape))
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
