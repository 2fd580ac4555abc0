"""Winograd F(2x2, 3x3) for 3x3, stride-1, undilated, ungrouped 2-d convolutions (NumPy and CuPy).

Each 2x2 output tile comes from a 4x4 input tile ``d`` as ``A^T [(G w G^T) * (B^T d B)] A``: 16 products of
(O, C) by (C, tiles) matrices instead of one (O, 9C) by (9C, pixels) product, 2.25x fewer multiplications.
The gradients use the same tiles: ``dU = dM V^T`` (then ``dw = G^T dU G``) and ``dV = U^T dM`` (then the
adjoint of the input transform), with ``dM = A dY A^T``.

Layout: the zero-padded input is split into its four stride-2 phases, each per channel a (R, N, W2) plane
(the images side by side in every plane row, one spare column of tiles each) stored flat with a stride of
``S = R * N * W2 + 1`` per channel; tile ``(ty, tx)`` of image ``n`` is column ``ty * N * W2 + n * W2 + tx`` of
every transformed array. Columns with ``tx = tw`` are scratch: their output is dropped and their gradient is
zero. Every transform step is then an add or subtract of two shifted slices of one flat range (a block of
channels' planes: one long contiguous loop, whose stray elements between channels land in scratch columns,
columns ``cols:S`` of V and dV, which no product reads), done per block of channels (near the cache, and on
several threads: see ``parallel``). Per-channel rows (the previous layout) ran each pass as 2-d loops of one
image's tiles: on 8x64x32x32 float32, one thread, the forward took 8.5 ms, forward + backward 21.7 (7.0 and
18.8 now; PyTorch's oneDNN: 4.1 and 13.2).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._kernels_threads import parallel_blocks
from ._kernels_util import Ints, Pads

#: elements of scratch per block of channels in the transforms (4 MB of float32: near the cache)
_BLOCK_ELEMS = 1 << 20

# the weight transform G (4x3) of F(2x2, 3x3), and its sign-flipped variant G' (last row negated): the
# backward pass works on dM' = dM with row and column 3 negated, which saves four negations per tile
_G = ((1.0, 0.0, 0.0), (0.5, 0.5, 0.5), (0.5, -0.5, 0.5), (0.0, 0.0, 1.0))
_G_SIGNED = ((1.0, 0.0, 0.0), (0.5, 0.5, 0.5), (0.5, -0.5, 0.5), (0.0, 0.0, -1.0))
# kron(G, G) (16, 9): row 4a + b, column 3i + j holds G[a, i] G[b, j], so U = G w G^T is one product
_KRON, _KRON_SIGNED = np.kron(_G, _G), np.kron(_G_SIGNED, _G_SIGNED)


class WinoSaved:
    """What the forward pass keeps for the weight gradient: the transformed input tiles ``V`` of F(m x m, 3x3)."""

    __slots__ = ("m", "v")

    def __init__(self, v: Any, m: int = 2) -> None:
        self.v, self.m = v, m


def wino_ok(x: Any, w_shape: Ints, stride: Ints, dilation: Ints, groups: int) -> bool:
    """Whether the Winograd kernels apply, and pay (measured): float32/float64, a 3x3 kernel, stride 1, no
    dilation or groups, at least 16 channels in and out, and at least 1024 pixels per channel over the batch
    (below that the transforms, and the weight transform of wide layers, cost more than the products save)."""
    if (
        x.dtype.kind != "f"
        or x.dtype.itemsize < 4
        or len(w_shape) != 4
        or tuple(w_shape[2:]) != (3, 3)
        or tuple(stride) != (1, 1)
        or tuple(dilation) != (1, 1)
    ):
        return False
    n, c, h, w = x.shape
    return groups == 1 and c >= 16 and w_shape[0] >= 16 and n * h * w >= 1024


def wino_tile(x_shape: Ints, out_channels: int, pads: Pads) -> int:
    """The output tile ``m`` of the Winograd variant that pays for a convolution :func:`wino_ok` accepts: 4
    (F(4x4, 3x3), ``_kernels_winograd4``) when the output is at least 8x8 with at least ``16 * max(C, O)`` pixels
    over the batch and ``2^16`` pixels times input channels, else 2. Measured at one thread against F(2x2, 3x3),
    forward + backward: 0.78x the time at 8x64x32x32, 0.72x at 2x64x112x112, 0.78x at 8x128x28x28, 0.92x at
    8x128x16x16, 0.93x at 32x64x8x8; but 1.1x at 8x256x14x14, 1.6x at 1x256x14x14, 1.2x at 8x256x8x8 (few pixels
    per weight: the products over tiles shrink, the weight transforms and ``dU``'s short products grow 2.25x),
    1.15x at 1x16x32x32 and 1.35x at 2x16x12x12 (small: the transforms' fixed costs)."""
    n, c, h, w = x_shape
    (pt, pb), (pl, pr) = pads
    oh, ow = h + pt + pb - 2, w + pl + pr - 2
    px = n * oh * ow
    return 4 if min(oh, ow) >= 8 and px >= 16 * max(c, out_channels) and px * c >= 1 << 16 else 2


class _Geom:
    """Tile geometry of F(m x m, 3x3) (``m`` = 2 or 4: the input's ``m`` x ``m`` stride-m phases as flat planes)."""

    def __init__(self, x_shape: Ints, pads: Pads, m: int = 2) -> None:
        self.n, self.c, self.h, self.w = x_shape
        (self.pt, pb), (self.pl, pr) = pads
        self.m = m
        self.oh, self.ow = self.h + self.pt + pb - 2, self.w + self.pl + pr - 2
        self.th, self.tw = -(-self.oh // m), -(-self.ow // m)
        self.w2 = self.tw + 1  # one scratch tile per row of tiles
        self.rows = self.th + 1  # plane rows the tiles reach
        self.r = self.n * self.w2  # one plane row (every image's)
        self.cols = self.th * self.r  # tile columns, in (ty, n, tx) order
        self.s = self.rows * self.r + 1  # per-channel stride of the planes and of V, dV (the last scratch tile
        # spills one element past the planes)

    def phase_slices(self, a: int, b: int) -> tuple[tuple[slice, slice], tuple[slice, slice]]:
        """For phase (a, b): (plane rows and columns, input rows and columns) of the input it holds."""
        res, m = [], self.m
        for off, pad, size, cap in ((a, self.pt, self.h, self.rows), (b, self.pl, self.w, self.w2)):
            r0 = max(0, (pad - off + m - 1) // m)
            r1 = max(r0, min(cap, (size - 1 + pad - off) // m + 1))
            first = m * r0 + off - pad
            res.append((slice(r0, r1), slice(first, first + m * (r1 - r0 - 1) + 1, m) if r1 > r0 else slice(0, 0)))
        return (res[0][0], res[1][0]), (res[0][1], res[1][1])

    def planes(self, flat: Any, cc: int) -> Any:
        """A phase's flat planes (``cc * S`` elements and more) as (cc, rows, N, W2)."""
        return flat[: cc * self.s].reshape(cc, self.s)[:, : self.s - 1].reshape(cc, self.rows, self.n, self.w2)

    def pairs(self, a: Any) -> Any:
        """(..., cols * m), tile column and output column phase q last, as (..., th, N, m * W2)."""
        return a.reshape((*a.shape[:-1], self.th, self.n, self.m * self.w2))


def _blocks(per_item: int, c0: int, c1: int) -> list[tuple[int, int]]:
    """``range(c0, c1)`` in even blocks of at most ``_BLOCK_ELEMS // per_item`` items (at least one)."""
    k = -(-(c1 - c0) * per_item // _BLOCK_ELEMS)
    k = max(1, min(c1 - c0, k))
    return [(c0 + (c1 - c0) * i // k, c0 + (c1 - c0) * (i + 1) // k) for i in range(k)]


class WinogradKernels:
    """F(2x2, 3x3) forward and backward, written against ``self.xp``; scratch from ``self.workspace``."""

    xp: Any
    workspace: Any
    gemm: Any  # Backend.gemm

    def _wino_weight(self, w: Any, kron: Any = _KRON) -> Any:
        """``U = G w G^T`` as (16, O, C): one (16, 9) by (9, O * C) product with ``kron(G, G)`` (12x faster
        than two tensordots)."""
        xp = self.xp
        return self.gemm(xp.asarray(kron, dtype=w.dtype), xp.reshape(w, (-1, 9)).T).reshape(16, *w.shape[:2])

    # -- input transform and its adjoint (per channel range) ----------------------------------------
    def _wino_input(self, x: Any, geo: _Geom) -> Any:
        """``V = B^T d B`` of every tile, (16, C, S) from the workspace: tile columns ``[:cols]`` of each channel,
        the rest scratch."""
        v = self.workspace.take((16, geo.c, geo.s), x.dtype)
        parallel_blocks(self.xp, geo.c, v.size, lambda c0, c1: self._wino_input_range(x, geo, v, c0, c1))
        return v

    def _wino_input_range(self, x: Any, geo: _Geom, v: Any, c0: int, c1: int) -> None:
        for b0, b1 in _blocks(24 * geo.cols, c0, c1):
            self._wino_input_block(x, geo, v, b0, b1)

    def _wino_input_block(self, x: Any, geo: _Geom, v: Any, c0: int, c1: int) -> None:
        xp = self.xp
        cc, r, s = c1 - c0, geo.r, geo.s
        ln = cc * s  # every pass runs over the channels' planes flat, one contiguous range
        planes = xp.zeros((2, 2, ln + r + 1), dtype=x.dtype)
        xt = x[:, c0:c1].transpose(1, 2, 0, 3)  # (cc, H, N, W)
        for a in range(2):
            for b in range(2):
                (pr, pc), (xr, xc) = geo.phase_slices(a, b)
                geo.planes(planes[a, b], cc)[:, pr, :, pc] = xt[:, xr, :, xc]
        # rows: rp[k, b] = sum_i B^T[k, i] * (phase (i % 2, b), i // 2 plane rows down)
        rp = xp.empty((4, 2, ln + 1), dtype=x.dtype)
        for b in range(2):
            q0, q1 = planes[0, b][: ln + 1], planes[1, b][: ln + 1]
            q2, q3 = planes[0, b][r : r + ln + 1], planes[1, b][r : r + ln + 1]
            xp.subtract(q0, q2, out=rp[0, b])
            xp.add(q1, q2, out=rp[1, b])
            xp.subtract(q2, q1, out=rp[2, b])
            xp.subtract(q1, q3, out=rp[3, b])
        # columns: V[k, l] = sum_j B^T[l, j] * (rp[k, j % 2], j // 2 columns right)
        for k in range(4):
            e0, e2, e1, e3 = rp[k, 0][:ln], rp[k, 0][1:], rp[k, 1][:ln], rp[k, 1][1:]
            xp.subtract(e0, e2, out=v[4 * k, c0:c1].reshape(-1))
            xp.add(e1, e2, out=v[4 * k + 1, c0:c1].reshape(-1))
            xp.subtract(e2, e1, out=v[4 * k + 2, c0:c1].reshape(-1))
            xp.subtract(e1, e3, out=v[4 * k + 3, c0:c1].reshape(-1))

    def _wino_input_adjoint_range(self, dv: Any, geo: _Geom, gx: Any, c0: int, c1: int) -> None:
        """``gx[:, c0:c1]`` from dV: the adjoint of :meth:`_wino_input_range`."""
        for b0, b1 in _blocks(24 * geo.cols, c0, c1):
            self._wino_input_adjoint_block(dv, geo, gx, b0, b1)

    def _wino_input_adjoint_block(self, dv: Any, geo: _Geom, gx: Any, c0: int, c1: int) -> None:
        """(``dv``'s scratch columns must be zero: the flat passes carry them into the planes.)"""
        xp = self.xp
        cc, r, s = c1 - c0, geo.r, geo.s
        ln = cc * s
        drp = xp.empty((4, 2, ln + 1), dtype=gx.dtype)
        tmp = xp.empty(ln + 1, dtype=gx.dtype)
        tmp_t = tmp[:ln]
        for k in range(4):
            d0, d1, d2, d3 = (dv[4 * k + j, c0:c1].reshape(-1) for j in range(4))
            r0, r1 = drp[k, 0], drp[k, 1]
            r0[:ln] = d0
            r0[ln] = 0
            xp.add(d1, d2, out=tmp_t)
            xp.subtract(tmp_t, d0, out=tmp_t)
            xp.add(r0[1:], tmp_t, out=r0[1:])
            xp.subtract(d1, d2, out=r1[:ln])
            xp.add(r1[:ln], d3, out=r1[:ln])
            r1[ln] = 0
            xp.subtract(r1[1:], d3, out=r1[1:])
        dpl = xp.empty((2, 2, ln + r + 1), dtype=gx.dtype)
        for b in range(2):
            p0, p1 = dpl[0, b], dpl[1, b]
            lo, hi = p0[: ln + 1], p0[r : r + ln + 1]
            lo[...] = drp[0, b]
            p0[ln + 1 :] = 0
            xp.add(drp[1, b], drp[2, b], out=tmp)
            xp.subtract(tmp, drp[0, b], out=tmp)
            xp.add(hi, tmp, out=hi)
            lo, hi = p1[: ln + 1], p1[r : r + ln + 1]
            xp.subtract(drp[1, b], drp[2, b], out=lo)
            xp.add(lo, drp[3, b], out=lo)
            p1[ln + 1 :] = 0
            xp.subtract(hi, drp[3, b], out=hi)
        gxt = gx[:, c0:c1].transpose(1, 2, 0, 3)  # (cc, H, N, W)
        for a in range(2):
            for b in range(2):
                (pr, pc), (xr, xc) = geo.phase_slices(a, b)
                gxt[:, xr, :, xc] = geo.planes(dpl[a, b], cc)[:, pr, :, pc]

    # -- output transform and its adjoint (per output-channel range) ----------------------------------
    def _wino_output_range(self, m: Any, geo: _Geom, y: Any, o0: int, o1: int) -> None:
        """``y[:, o0:o1] = A^T M A`` per tile."""
        for b0, b1 in _blocks(20 * geo.cols, o0, o1):
            self._wino_output_block(m, geo, y, b0, b1)

    def _wino_output_block(self, m: Any, geo: _Geom, y: Any, o0: int, o1: int) -> None:
        xp = self.xp
        oo = o1 - o0
        s = xp.empty((2, 4, oo, geo.cols), dtype=y.dtype)
        for b in range(4):
            m0, m1, m2, m3 = (m[4 * a + b, o0:o1] for a in range(4))
            xp.add(m0, m1, out=s[0, b])
            xp.add(s[0, b], m2, out=s[0, b])
            xp.subtract(m1, m2, out=s[1, b])
            xp.subtract(s[1, b], m3, out=s[1, b])
        # z[p] holds output row 2 ty + p of every image, columns 2 tx + q interleaved: (oo, th, N, 2 * W2)
        z = xp.empty((2, oo, geo.cols, 2), dtype=y.dtype)
        tmp = xp.empty((oo, geo.cols), dtype=y.dtype)
        for p in range(2):
            sp = s[p]
            xp.add(sp[0], sp[1], out=tmp)
            xp.add(tmp, sp[2], out=z[p, :, :, 0])
            xp.subtract(sp[1], sp[2], out=tmp)
            xp.subtract(tmp, sp[3], out=z[p, :, :, 1])
            rows = len(range(p, geo.oh, 2))
            zp = geo.pairs(z[p].reshape(oo, -1))[:, :rows, :, : geo.ow]  # (oo, rows, N, ow)
            y[:, o0:o1, p::2, :] = zp.transpose(2, 0, 1, 3)

    def _wino_grad_range(self, g: Any, geo: _Geom, f: Any, o0: int, o1: int) -> None:
        """``dM'`` rows o0:o1 (``A dY A^T`` per tile, row and column 3 negated), zero on scratch tiles."""
        for b0, b1 in _blocks(20 * geo.cols, o0, o1):
            self._wino_grad_block(g, geo, f, b0, b1)

    def _wino_grad_block(self, g: Any, geo: _Geom, f: Any, o0: int, o1: int) -> None:
        xp = self.xp
        oo = o1 - o0
        z = xp.zeros((2, oo, geo.cols, 2), dtype=g.dtype)  # as in _wino_output_block, zero beyond the output
        for p in range(2):
            rows = len(range(p, geo.oh, 2))
            zp = geo.pairs(z[p].reshape(oo, -1))[:, :rows, :, : geo.ow]
            zp[...] = g[:, o0:o1, p::2, :].transpose(1, 2, 0, 3)
        for p, q in ((0, 0), (0, 1), (1, 0), (1, 1)):
            f[3 * p, 3 * q, o0:o1] = z[p, :, :, q]
        for a in (0, 3):
            xp.add(f[a, 0, o0:o1], f[a, 3, o0:o1], out=f[a, 1, o0:o1])
            xp.subtract(f[a, 0, o0:o1], f[a, 3, o0:o1], out=f[a, 2, o0:o1])
        for b in range(4):
            xp.add(f[0, b, o0:o1], f[3, b, o0:o1], out=f[1, b, o0:o1])
            xp.subtract(f[0, b, o0:o1], f[3, b, o0:o1], out=f[2, b, o0:o1])

    # -- the operators ------------------------------------------------------------------------------
    def wino_conv(self, x: Any, w: Any, pads: Pads, bias: Any, save: bool) -> tuple[Any, Any]:
        """The convolution (plus ``bias``): ``(y, WinoSaved or None)``."""
        xp, ws = self.xp, self.workspace
        geo = _Geom(tuple(x.shape), pads)
        o = w.shape[0]
        v = self._wino_input(x, geo)
        m = ws.take((16, o, geo.cols), x.dtype)
        self.gemm(self._wino_weight(w), v[:, :, : geo.cols], out=m)
        if bias is not None:  # M[1, 1] reaches every output of its tile with weight 1
            m[5] += bias.reshape(o, 1)
        y = xp.empty((geo.n, o, geo.oh, geo.ow), dtype=x.dtype)
        parallel_blocks(xp, o, m.size, lambda o0, o1: self._wino_output_range(m, geo, y, o0, o1))
        ws.give(m)
        if save:
            return y, WinoSaved(v)
        ws.give(v)
        return y, None

    def wino_backward(
        self, g: Any, x: Any, w: Any, saved: Any, pads: Pads, input_grad: bool, weight_grad: bool
    ) -> tuple[Any, Any]:
        """Both gradients of :meth:`wino_conv`; consumes ``saved`` (V is recomputed when it is None)."""
        xp, ws = self.xp, self.workspace
        geo = _Geom(tuple(x.shape), pads)
        o, c = w.shape[:2]
        dm = ws.take((16, o, geo.cols), g.dtype)
        f = dm.reshape(4, 4, o, geo.cols)
        parallel_blocks(xp, o, dm.size, lambda o0, o1: self._wino_grad_range(g, geo, f, o0, o1))
        gx = gw = None
        if weight_grad:
            v = saved.v if saved is not None else self._wino_input(x, geo)
            du = self.gemm(dm, xp.permute_dims(v[:, :, : geo.cols], (0, 2, 1))).reshape(4, 4, o, c)  # dU' (dM' signs)
            ws.give(v)
            # dw = G'^T dU' G' per (o, c): (O * C, 16) by kron(G', G') (16, 9), the adjoint of _wino_weight
            gw = self.gemm(du.reshape(16, o * c).T, xp.asarray(_KRON_SIGNED, dtype=w.dtype)).reshape(o, c, 3, 3)
        elif saved is not None:
            ws.give(saved.v)
        if input_grad:
            dv = ws.take((16, c, geo.s), g.dtype)
            dv[:, :, geo.cols :] = 0
            ut = xp.ascontiguousarray(xp.permute_dims(self._wino_weight(w, _KRON_SIGNED), (0, 2, 1)))  # (faster)
            self.gemm(ut, dm, out=dv[:, :, : geo.cols])
            gx = xp.empty(tuple(x.shape), dtype=g.dtype)
            parallel_blocks(xp, c, dv.size, lambda c0, c1: self._wino_input_adjoint_range(dv, geo, gx, c0, c1))
            ws.give(dv)
        ws.give(dm)
        return gx, gw
