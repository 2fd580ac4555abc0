"""Max pooling over a "wide" layout: every kernel offset becomes one contiguous slice.

The input is split into its phases (``x[..., r::s]``, one per residue ``r`` of the stride in each spatial
dim), each copied once into a padded plane of a common grid ``Q`` (padding holds the lowest value). In that
grid the element at kernel offset ``off`` of window ``j`` sits at ``j + shift(off)``, so with every plane
flattened, offset ``off`` is the slice ``[shift, shift + L)`` of its phase, and the windows' results live
in the first ``L`` positions of a plane of the same grid (positions outside the output are scratch, with a
zero gradient). Each ufunc then runs over long contiguous rows instead of a strided or cropped view
(several times faster), and planes are processed in blocks that stay in cache, on several threads (on NumPy;
on CuPy, where each ufunc is a kernel launch, in blocks as large as memory allows: usually the whole batch).
"""

from __future__ import annotations

import math
from typing import Any

from ._kernels_threads import parallel
from ._kernels_util import Ints, Pads, ndindex, select_grad

#: planes per block: about this many elements per block array (fits in L2 with the few arrays in use)
_BLOCK_ELEMS = 1 << 16
#: on a device (CuPy) every ufunc is a kernel launch costing ~10 µs of host time whatever its size, and there is
#: no CPU cache to fit: blocks of this many elements (64 MiB of float32), so a whole batch is usually one block
#: (ResNet-18's pool at batch 64, 224x224: 4,096 planes of 3,249 grid elements; in 20-plane blocks its forward
#: made 3,690 launches and its backward 12,714, one block makes 18 and 66)
_DEVICE_BLOCK_ELEMS = 1 << 24


class WideGrid:
    """The grid of one pooling call: shifts per kernel offset and where each phase's input lies in it."""

    def __init__(self, spatial: Ints, out: Ints, k: Ints, s: Ints, pads: Pads, d: Ints) -> None:
        sp = len(k)
        qs = [[divmod(o * d[i] - pads[i][0], s[i]) for o in range(k[i])] for i in range(sp)]  # (q, r) per offset
        qmin = [min(q for q, _ in qs[i]) for i in range(sp)]
        self.out = out
        self.q_shape = tuple(out[i] + max(q for q, _ in qs[i]) - qmin[i] for i in range(sp))
        strides = [math.prod(self.q_shape[i + 1 :]) for i in range(sp)]
        self.size = math.prod(self.q_shape)
        #: per kernel offset (row-major): (phase residues, flat shift)
        self.offsets: list[tuple[Ints, int]] = []
        for off in ndindex(k):
            r = tuple(qs[i][off[i]][1] for i in range(sp))
            self.offsets.append((r, sum((qs[i][off[i]][0] - qmin[i]) * strides[i] for i in range(sp))))
        self.length = self.size - max(sh for _, sh in self.offsets)
        #: per phase: (slices of the grid, slices of the input) of the phase's input elements
        self.phases: dict[Ints, tuple[tuple[slice, ...], tuple[slice, ...]]] = {}
        for r, _ in self.offsets:
            if r in self.phases:
                continue
            grid, src = [], []
            for i in range(sp):
                n_r = len(range(r[i], spatial[i], s[i]))  # the phase's length along dim i
                t0, t1 = max(0, -qmin[i]), min(self.q_shape[i], n_r - qmin[i])
                t1 = max(t0, t1)
                u0 = t0 + qmin[i]
                grid.append(slice(t0, t1))
                first = r[i] + u0 * s[i]
                src.append(slice(first, first + (t1 - t0 - 1) * s[i] + 1, s[i]) if t1 > t0 else slice(0, 0))
            self.phases[r] = (tuple(grid), tuple(src))
        self.valid = tuple(slice(0, o) for o in out)  # the output's positions in the grid

    def block(self, xp: Any) -> int:
        """Planes per block for arrays of ``xp``: cache-sized on NumPy, as large as memory allows elsewhere."""
        return max(1, (_BLOCK_ELEMS if getattr(xp, "__name__", "") == "numpy" else _DEVICE_BLOCK_ELEMS) // self.size)


def _fill_phases(grid: WideGrid, xb: Any, bufs: dict[Ints, Any], low: Any) -> None:
    """Copy the input planes ``xb`` (B, *spatial) into each phase's padded plane (B, size)."""
    b = xb.shape[0]
    for r, (gsl, src) in grid.phases.items():
        ph = bufs[r][:b]
        ph.fill(low)
        ph.reshape((b, *grid.q_shape))[(slice(None), *gsl)] = xb[(slice(None), *src)]


def max_pool_wide(xp: Any, x: Any, grid: WideGrid, low: Any) -> Any:
    """The maximum of every window (``low``: the dtype's lowest value, used as padding)."""
    n, c = x.shape[:2]
    planes = xp.reshape(x, (n * c, *x.shape[2:]))
    y = xp.empty((n * c, *grid.out), dtype=x.dtype)

    def part(lo: int, hi: int) -> None:
        bs, size, ln = min(grid.block(xp), hi - lo), grid.size, grid.length
        bufs = {r: xp.empty((bs, size), dtype=x.dtype) for r in grid.phases}
        yw = xp.empty((bs, size), dtype=x.dtype)
        for a in range(lo, hi, bs):
            b = min(bs, hi - a)
            _fill_phases(grid, planes[a : a + b], bufs, low)
            acc = yw[:b, :ln]
            for i, (r, sh) in enumerate(grid.offsets):
                if i == 0:
                    acc[...] = bufs[r][:b, sh : sh + ln]
                else:
                    xp.maximum(acc, bufs[r][:b, sh : sh + ln], out=acc)  # NaN propagates, as in PyTorch
            y[a : a + b] = yw[:b].reshape((b, *grid.q_shape))[(slice(None), *grid.valid)]

    parallel(xp, n * c, x.size, part)
    return y.reshape((n, c, *grid.out))


def max_pool_backward_wide(xp: Any, g: Any, x: Any, y: Any, grid: WideGrid, low: Any) -> Any:
    """Each window's gradient to its first maximum; ``y`` must hold no NaN and not ``low`` (else a padding
    element could pass for a window's first maximum)."""
    n, c = x.shape[:2]
    nc = n * c
    planes = xp.reshape(x, (nc, *x.shape[2:]))
    gp, yp = xp.reshape(g, (nc, *grid.out)), xp.reshape(y, (nc, *grid.out))
    gx = xp.zeros((nc, *x.shape[2:]), dtype=g.dtype)

    def part(lo: int, hi: int) -> None:
        bs, size, ln = min(grid.block(xp), hi - lo), grid.size, grid.length
        bufs = {r: xp.empty((bs, size), dtype=x.dtype) for r in grid.phases}
        grads = {r: xp.empty((bs, size), dtype=g.dtype) for r in grid.phases}
        yw, gw = xp.zeros((bs, size), dtype=x.dtype), xp.zeros((bs, size), dtype=g.dtype)
        eq, seen, hit = (xp.empty((bs, ln), dtype=bool) for _ in range(3))
        tmp = xp.empty((bs, ln), dtype=g.dtype)
        for a in range(lo, hi, bs):
            b = min(bs, hi - a)
            _fill_phases(grid, planes[a : a + b], bufs, low)
            yw[:b].reshape((b, *grid.q_shape))[(slice(None), *grid.valid)] = yp[a : a + b]
            gw[:b].reshape((b, *grid.q_shape))[(slice(None), *grid.valid)] = gp[a : a + b]  # scratch stays 0
            for r in grads:
                grads[r][:b].fill(0)
            for i, (r, sh) in enumerate(grid.offsets):
                e = eq[:b]
                xp.equal(bufs[r][:b, sh : sh + ln], yw[:b, :ln], out=e)
                if i == 0:
                    seen[:b] = e
                    h = e
                else:
                    h = xp.greater(e, seen[:b], out=hit[:b])  # a maximum here, and none at an earlier offset
                    xp.logical_or(seen[:b], e, out=seen[:b])
                t = select_grad(xp, gw[:b, :ln], h, out=tmp[:b])  # (inf or NaN: no NaN beside it)
                acc = grads[r][:b, sh : sh + ln]
                xp.add(acc, t, out=acc)
            for r, (gsl, src) in grid.phases.items():
                gx[(slice(a, a + b), *src)] = grads[r][:b].reshape((b, *grid.q_shape))[(slice(None), *gsl)]

    parallel(xp, nc, x.size, part)
    return gx.reshape(x.shape)
