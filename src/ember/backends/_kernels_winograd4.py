"""Winograd F(4x4, 3x3) for 3x3, stride-1, undilated, ungrouped 2-d convolutions (NumPy and CuPy).

Each 4x4 output tile comes from a 6x6 input tile ``d`` as ``A^T [(G w G^T) * (B^T d B)] A`` (interpolation
points 0, 1, -1, 2, -2, infinity): 36 products of (O, C) by (C, tiles) matrices, 4x fewer multiplications than
the direct convolution (F(2x2, 3x3): 2.25x), and ``V`` holds 2.25 elements per input element (F(2x2, 3x3): 4), so
the products and the arrays they read and write shrink by 0.56. The gradients are those of
``_kernels_winograd``: ``dM = A dY A^T``, ``dU = dM V^T`` (``dw = G^T dU G``), ``dV = U^T dM`` and the adjoint
of the input transform.

Layout: ``_kernels_winograd``'s, with the input split into its 16 stride-4 phases (``_Geom(..., m=4)``): tile
``(ty, tx)`` reads phase planes rows ``ty, ty + 1`` and columns ``tx, tx + 1``. Each 1-d transform is one small
product over six rows of a block of channels' flat planes (``B^T`` (6, 6) by (6, cols of the block); rows 4 and 5
are copies of rows 0 and 1 shifted by one plane row or one column), and the output transform's second step is a
(tiles, 6) by (6, 4) product that writes the four output columns of each tile interleaved, ready to copy into
``y`` by whole rows. NumPy's ufunc passes cost 0.2 ns an element with a separate output (0.1 in place, 0.45
strided), OpenBLAS's (6, 6) by (6, L) product 0.14 ns per output element: with ufunc passes (13-21 per six
values), F(4x4, 3x3)'s transforms took 8.5 ms on 8x64x32x32 float32 (one thread, forward + backward) and lost to
F(2x2, 3x3) (6.6); with these products 4.9. ``wino_tile`` picks the variant (where F(4x4, 3x3) pays).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._kernels_threads import parallel_blocks
from ._kernels_util import Pads
from ._kernels_winograd import WinoSaved, _blocks, _Geom

_G4 = np.array(
    [
        [1 / 4, 0, 0],
        [-1 / 6, -1 / 6, -1 / 6],
        [-1 / 6, 1 / 6, -1 / 6],
        [1 / 24, 1 / 12, 1 / 6],
        [1 / 24, -1 / 12, 1 / 6],
        [0, 0, 1],
    ]
)
# kron(G, G) (36, 9): row 6a + b, column 3i + j holds G[a, i] G[b, j], so U = G w G^T is one product
_KRON4 = np.kron(_G4, _G4)


_BT = np.array(
    [
        [4, 0, -5, 0, 1, 0],
        [0, -4, -4, 1, 1, 0],
        [0, 4, -4, -1, 1, 0],
        [0, -2, -1, 2, 1, 0],
        [0, 2, -1, -2, 1, 0],
        [0, 4, 0, -5, 0, 1],
    ]
)
_AT = np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]])


class Winograd4Kernels:
    """F(4x4, 3x3) forward and backward, written against ``self.xp``; scratch from ``self.workspace``."""

    xp: Any
    workspace: Any
    gemm: Any  # Backend.gemm

    def _wino4_mm(self, a: Any, b: Any, out: Any) -> None:
        """``out[i] = a @ b[i]`` for a small 2-d ``a``: one batched product (one NumPy call, not one per matrix:
        the transforms run on two Python threads, and calls of a few us each passed the GIL back and forth)."""
        self.gemm(self.xp.broadcast_to(a, (b.shape[0], *a.shape)), b, out=out)

    def _wino4_weight(self, w: Any) -> Any:
        """``U = G w G^T`` as (36, O, C): one (36, 9) by (9, O * C) product with ``kron(G, G)``."""
        xp = self.xp
        return self.gemm(xp.asarray(_KRON4, dtype=w.dtype), xp.reshape(w, (-1, 9)).T).reshape(36, *w.shape[:2])

    # -- input transform and its adjoint (per channel range) ----------------------------------------
    def _wino4_input(self, x: Any, geo: _Geom) -> Any:
        """``V = B^T d B`` of every tile, (36, C, S) from the workspace: tile columns ``[:cols]`` of each channel,
        the rest scratch."""
        v = self.workspace.take((36, geo.c, geo.s), x.dtype)
        parallel_blocks(self.xp, geo.c, v.size, lambda c0, c1: self._wino4_input_range(x, geo, v, c0, c1))
        return v

    def _wino4_input_range(self, x: Any, geo: _Geom, v: Any, c0: int, c1: int) -> None:
        for b0, b1 in _blocks(60 * geo.s, c0, c1):
            self._wino4_input_block(x, geo, v, b0, b1)

    def _wino4_input_block(self, x: Any, geo: _Geom, v: Any, c0: int, c1: int) -> None:
        xp = self.xp
        cc, r = c1 - c0, geo.r
        ln = cc * geo.s  # every product runs over the channels' planes flat, one long row
        bt = xp.asarray(_BT, dtype=x.dtype)
        # pl[b, i]: phase (i, b) for i < 4; rows 4, 5: phases (0, b), (1, b) one plane row down (the tile's rows
        # 4 and 5), so that each column phase's six rows are one (6, ln + 1) matrix
        pl = xp.zeros((4, 6, ln + r + 1), dtype=x.dtype)
        # the 16 phases in two copies: the block zero-padded to the planes' reach, (cc, 4 rows, N, 4 W2), then one
        # transposing copy of its (row, row phase, column, column phase) split into the planes
        # (4 rows >= 4 th + 4 >= H + the padding + 2, and as many columns: the padded block holds the whole input)
        xpad = xp.zeros((cc, 4 * geo.rows, geo.n, 4 * geo.w2), dtype=x.dtype)
        xpad[:, geo.pt : geo.pt + geo.h, :, geo.pl : geo.pl + geo.w] = x[:, c0:c1].transpose(1, 2, 0, 3)
        _phases(pl, geo, cc)[...] = _split_phases(xpad, geo)
        pl[:, 4:, : ln + 1] = pl[:, :2, r : r + ln + 1]
        # rows: rp[b, k] = sum_i B^T[k, i] pl[b, i]; rp[4 + b]: rp[b] one column right (b < 2)
        rp = xp.empty((6, 6, ln + 1), dtype=x.dtype)  # [j, k]
        self._wino4_mm(bt, pl[:, :, : ln + 1], rp[:4])
        rp[4:, :, :ln] = rp[:2, :, 1:]
        # columns: V[6 k + l] = sum_j B^T[l, j] rp[j, k]
        vb = v.reshape(6, 6, -1)[:, :, c0 * geo.s : c1 * geo.s]  # (k, l, ln): a view
        self._wino4_mm(bt, rp[:, :, :ln].transpose(1, 0, 2), vb)

    def _wino4_input_adjoint_range(self, dv: Any, geo: _Geom, gx: Any, c0: int, c1: int) -> None:
        """``gx[:, c0:c1]`` from dV: the adjoint of :meth:`_wino4_input_range`."""
        for b0, b1 in _blocks(60 * geo.s, c0, c1):
            self._wino4_input_adjoint_block(dv, geo, gx, b0, b1)

    def _wino4_input_adjoint_block(self, dv: Any, geo: _Geom, gx: Any, c0: int, c1: int) -> None:
        """(``dv``'s scratch columns must be zero: the flat products carry them into the planes.)"""
        xp = self.xp
        cc, r = c1 - c0, geo.r
        ln = cc * geo.s
        btt = xp.asarray(_BT.T, dtype=gx.dtype)
        drp = xp.empty((6, 6, ln + 1), dtype=gx.dtype)  # [k, j]: the adjoint of _wino4_input_block's rp
        self._wino4_mm(btt, dv.reshape(6, 6, -1)[:, :, c0 * geo.s : c1 * geo.s], drp[:, :, :ln])
        drp[:, :4, ln] = 0
        drp[:, :2, 1:] += drp[:, 4:, :ln]
        dpl = xp.empty((4, 6, ln + r + 1), dtype=gx.dtype)  # the adjoint of its pl
        self._wino4_mm(btt, drp[:, :4].transpose(1, 0, 2), dpl[:, :, : ln + 1])
        dpl[:, :2, ln + 1 :] = 0
        dpl[:, :2, r : r + ln + 1] += dpl[:, 4:, : ln + 1]
        # the planes back into the padded block in one transposing copy, then its input part into gx
        gpad = xp.empty((cc, 4 * geo.rows, geo.n, 4 * geo.w2), dtype=gx.dtype)
        _split_phases(gpad, geo)[...] = _phases(dpl, geo, cc)
        gx[:, c0:c1].transpose(1, 2, 0, 3)[...] = gpad[:, geo.pt : geo.pt + geo.h, :, geo.pl : geo.pl + geo.w]

    # -- output transform and its adjoint (per output-channel range) ----------------------------------
    def _wino4_output_range(self, m: Any, geo: _Geom, y: Any, o0: int, o1: int) -> None:
        """``y[:, o0:o1] = A^T M A`` per tile."""
        for b0, b1 in _blocks(40 * geo.cols, o0, o1):
            self._wino4_output_block(m, geo, y, b0, b1)

    def _wino4_output_block(self, m: Any, geo: _Geom, y: Any, o0: int, o1: int) -> None:
        xp = self.xp
        oo = o1 - o0
        nx = oo * geo.cols
        at = xp.asarray(_AT, dtype=y.dtype)
        s = xp.empty((6, 4, nx), dtype=y.dtype)  # s[b, p] = sum_a A^T[p, a] M[6 a + b]
        self._wino4_mm(at, m[:, o0:o1].reshape(6, 6, nx).transpose(1, 0, 2), s)
        # z[p] holds output row 4 ty + p of every image, columns 4 tx + q interleaved: (oo, th, N, 4 * W2)
        z = xp.empty((4, nx, 4), dtype=y.dtype)
        self.gemm(s.transpose(1, 2, 0), xp.broadcast_to(at.T, (4, 6, 4)), out=z)
        for (t0, t1, p), yv in _row_groups(y[:, o0:o1], geo):  # one copy (two when 4 does not divide oh)
            yv[...] = _tiles(z, geo, oo)[:p, :, t0:t1, :, : geo.ow].transpose(3, 1, 2, 0, 4)

    def _wino4_grad_range(self, g: Any, geo: _Geom, dm: Any, o0: int, o1: int) -> None:
        """``dM`` rows o0:o1 (``A dY A^T`` per tile), zero on scratch tiles."""
        for b0, b1 in _blocks(40 * geo.cols, o0, o1):
            self._wino4_grad_block(g, geo, dm, b0, b1)

    def _wino4_grad_block(self, g: Any, geo: _Geom, dm: Any, o0: int, o1: int) -> None:
        xp = self.xp
        oo = o1 - o0
        nx = oo * geo.cols
        att = xp.asarray(_AT.T, dtype=g.dtype)
        z = xp.zeros((4, nx, 4), dtype=g.dtype)  # as in _wino4_output_block, zero beyond the output
        for (t0, t1, p), gv in _row_groups(g[:, o0:o1], geo):
            _tiles(z, geo, oo)[:p, :, t0:t1, :, : geo.ow] = gv.transpose(3, 1, 2, 0, 4)
        h = xp.empty((6, 4, nx), dtype=g.dtype)  # h[b, p] = sum_q A^T[q, b] dY[p, q]
        self._wino4_mm(att, z.transpose(0, 2, 1), h.transpose(1, 0, 2))
        # dM[6 a + b] = sum_p A^T[p, a] h[b, p]
        self._wino4_mm(att, h, dm[:, o0:o1].reshape(6, 6, nx).transpose(1, 0, 2))

    # -- the operators ------------------------------------------------------------------------------
    def wino4_conv(self, x: Any, w: Any, pads: Pads, bias: Any, save: bool) -> tuple[Any, Any]:
        """The convolution (plus ``bias``): ``(y, WinoSaved or None)``."""
        xp, ws = self.xp, self.workspace
        geo = _Geom(tuple(x.shape), pads, 4)
        o = w.shape[0]
        v = self._wino4_input(x, geo)
        m = ws.take((36, o, geo.cols), x.dtype)
        self.gemm(self._wino4_weight(w), v[:, :, : geo.cols], out=m)
        if bias is not None:  # M[1, 1] reaches every output of its tile with weight 1 (A^T's column 1 is all ones)
            m[7] += bias.reshape(o, 1)
        y = xp.empty((geo.n, o, geo.oh, geo.ow), dtype=x.dtype)
        parallel_blocks(xp, o, m.size, lambda o0, o1: self._wino4_output_range(m, geo, y, o0, o1))
        ws.give(m)
        if save:
            return y, WinoSaved(v, 4)
        ws.give(v)
        return y, None

    def wino4_backward(
        self, g: Any, x: Any, w: Any, saved: Any, pads: Pads, input_grad: bool, weight_grad: bool
    ) -> tuple[Any, Any]:
        """Both gradients of :meth:`wino4_conv`; consumes ``saved`` (V is recomputed when it is None)."""
        xp, ws = self.xp, self.workspace
        geo = _Geom(tuple(x.shape), pads, 4)
        o, c = w.shape[:2]
        dm = ws.take((36, o, geo.cols), g.dtype)
        parallel_blocks(xp, o, dm.size, lambda o0, o1: self._wino4_grad_range(g, geo, dm, o0, o1))
        gx = gw = None
        if weight_grad:
            v = saved.v if saved is not None else self._wino4_input(x, geo)
            du = self.gemm(dm, xp.permute_dims(v[:, :, : geo.cols], (0, 2, 1)))
            ws.give(v)
            # dw = G^T dU G per (o, c): (O * C, 36) by kron(G, G) (36, 9), the adjoint of _wino4_weight
            gw = self.gemm(du.reshape(36, o * c).T, xp.asarray(_KRON4, dtype=w.dtype)).reshape(o, c, 3, 3)
        elif saved is not None:
            ws.give(saved.v)
        if input_grad:
            dv = ws.take((36, c, geo.s), g.dtype)
            dv[:, :, geo.cols :] = 0
            ut = xp.ascontiguousarray(xp.permute_dims(self._wino4_weight(w), (0, 2, 1)))
            self.gemm(ut, dm, out=dv[:, :, : geo.cols])
            gx = xp.empty(tuple(x.shape), dtype=g.dtype)
            parallel_blocks(xp, c, dv.size, lambda c0, c1: self._wino4_input_adjoint_range(dv, geo, gx, c0, c1))
            ws.give(dv)
        ws.give(dm)
        return gx, gw


def _split_phases(xpad: Any, geo: _Geom) -> Any:
    """A padded block (cc, 4 rows, N, 4 W2) as (column phase b, row phase a, cc, rows, N, W2): a view."""
    cc = xpad.shape[0]
    return xpad.reshape(cc, geo.rows, 4, geo.n, geo.w2, 4).transpose(5, 2, 0, 1, 3, 4)


def _phases(pl: Any, geo: _Geom, cc: int) -> Any:
    """The 16 phases' flat planes ``pl[b, a]`` (rows a < 4) as (b, a, cc, rows, N, W2): a view."""
    s = geo.s
    return pl[:, :4, : cc * s].reshape(4, 4, cc, s)[..., : s - 1].reshape(4, 4, cc, geo.rows, geo.n, geo.w2)


def _tiles(z: Any, geo: _Geom, oo: int) -> Any:
    """The output transform's (4, oo * cols, 4) product as (output row phase p, oo, th, N, 4 W2): a view."""
    return z.reshape(4, oo, geo.th, geo.n, 4 * geo.w2)


def _row_groups(y: Any, geo: _Geom) -> list[tuple[tuple[int, int, int], Any]]:
    """``y`` (N, oo, oh, ow) as its rows of tiles ``t0:t1`` with their first ``p`` output rows each: ``((t0, t1, p),
    (N, oo, t1 - t0, p, ow) view)``, the full rows of tiles then a last partial one."""
    full = geo.oh // 4
    groups = []
    if full:
        groups.append(((0, full, 4), y[:, :, : 4 * full].reshape(*y.shape[:2], full, 4, geo.ow)))
    if geo.oh % 4:
        groups.append(((full, full + 1, geo.oh % 4), y[:, :, 4 * full :, None].transpose(0, 1, 3, 2, 4)))
    return groups
