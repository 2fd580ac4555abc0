"""Winograd F(2x2, 3x3) for 3x3, stride-1, undilated, ungrouped 2-d convolutions (NumPy and CuPy).

Each 2x2 output tile comes from a 4x4 input tile ``d`` as ``A^T [(G w G^T) * (B^T d B)] A``: 16 products of
(O, C) by (C, tiles) matrices instead of one (O, 9C) by (9C, pixels) product, 2.25x fewer multiplications.
The gradients use the same tiles: ``dU = dM V^T`` (then ``dw = G^T dU G``) and ``dV = U^T dM`` (then the
adjoint of the input transform), with ``dM = A dY A^T``.

Layout: the zero-padded input is split into its four stride-2 phases, each a (C, N, R, W2) plane with one
spare column and row of tiles; tile ``(ty, tx)`` of image ``n`` is column ``n * T + ty * W2 + tx`` of every
transformed array (``T = th * W2``). Columns with ``tx = tw`` are scratch: their output is dropped and their
gradient is zero. Every transform step is then an add or subtract of two contiguous shifted slices, done
per range of channels (in cache, and on several threads: see ``parallel``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._kernels_threads import parallel
from ._kernels_util import Ints, Pads

# the weight transform G (4x3) of F(2x2, 3x3), and its sign-flipped variant G' (last row negated): the
# backward pass works on dM' = dM with row and column 3 negated, which saves four negations per tile
_G = ((1.0, 0.0, 0.0), (0.5, 0.5, 0.5), (0.5, -0.5, 0.5), (0.0, 0.0, 1.0))
_G_SIGNED = ((1.0, 0.0, 0.0), (0.5, 0.5, 0.5), (0.5, -0.5, 0.5), (0.0, 0.0, -1.0))
# kron(G, G) (16, 9): row 4a + b, column 3i + j holds G[a, i] G[b, j], so U = G w G^T is one product
_KRON, _KRON_SIGNED = np.kron(_G, _G), np.kron(_G_SIGNED, _G_SIGNED)


class WinoSaved:
    """What the forward pass keeps for the weight gradient: the transformed input tiles ``V``."""

    __slots__ = ("v",)

    def __init__(self, v: Any) -> None:
        self.v = v


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


class _Geom:
    def __init__(self, x_shape: Ints, pads: Pads) -> None:
        self.n, self.c, self.h, self.w = x_shape
        (self.pt, pb), (self.pl, pr) = pads
        self.oh, self.ow = self.h + self.pt + pb - 2, self.w + self.pl + pr - 2
        self.th, self.tw = -(-self.oh // 2), -(-self.ow // 2)
        self.w2 = self.tw + 1  # one scratch tile per row of tiles
        self.rows = self.th + 2  # tiles reach th + 1 plane rows; the last scratch tile spills into one more
        self.t = self.th * self.w2  # tile columns per image
        self.cols = self.n * self.t

    def phase_slices(self, a: int, b: int) -> tuple[tuple[slice, slice], tuple[slice, slice]]:
        """For phase (a, b): (plane rows and columns, input rows and columns) of the input it holds."""
        res = []
        for off, pad, size, cap in ((a, self.pt, self.h, self.rows), (b, self.pl, self.w, self.w2)):
            r0 = max(0, (pad - off + 1) // 2)
            r1 = max(r0, min(cap, (size - 1 + pad - off) // 2 + 1))
            first = 2 * r0 + off - pad
            res.append((slice(r0, r1), slice(first, first + 2 * (r1 - r0 - 1) + 1, 2) if r1 > r0 else slice(0, 0)))
        return (res[0][0], res[1][0]), (res[0][1], res[1][1])

    def out_slices(self, p: int, q: int) -> tuple[slice, slice]:
        """The tile rows and columns whose output (p, q) lies inside the output."""
        return slice(0, len(range(p, self.oh, 2))), slice(0, len(range(q, self.ow, 2)))

    def tiles(self, a: Any) -> Any:
        """(..., N * T) -> (..., N, th, W2)."""
        return a.reshape((*a.shape[:-1], self.n, self.th, self.w2))


class WinogradKernels:
    """F(2x2, 3x3) forward and backward, written against ``self.xp``; scratch from ``self.workspace``."""

    xp: Any
    workspace: Any

    def _wino_weight(self, w: Any, kron: Any = _KRON) -> Any:
        """``U = G w G^T`` as (16, O, C): one (16, 9) by (9, O * C) product with ``kron(G, G)`` (12x faster
        than two tensordots)."""
        xp = self.xp
        return xp.matmul(xp.asarray(kron, dtype=w.dtype), xp.reshape(w, (-1, 9)).T).reshape(16, *w.shape[:2])

    # -- input transform and its adjoint (per channel range) ----------------------------------------
    def _wino_input(self, x: Any, geo: _Geom) -> Any:
        """``V = B^T d B`` of every tile, (16, C, N * T) from the workspace."""
        v = self.workspace.take((16, geo.c, geo.cols), x.dtype)
        v5 = v.reshape(4, 4, geo.c, geo.n, geo.t)
        parallel(self.xp, geo.c, v.size, lambda c0, c1: self._wino_input_range(x, geo, v5, c0, c1))
        return v

    def _wino_input_range(self, x: Any, geo: _Geom, v5: Any, c0: int, c1: int) -> None:
        xp = self.xp
        cc, n, t, w2 = c1 - c0, geo.n, geo.t, geo.w2
        planes = xp.zeros((2, 2, cc, n, geo.rows * w2), dtype=x.dtype)
        xt = xp.permute_dims(x[:, c0:c1], (1, 0, 2, 3))
        for a in range(2):
            for b in range(2):
                (pr, pc), (xr, xc) = geo.phase_slices(a, b)
                planes[a, b].reshape(cc, n, geo.rows, w2)[:, :, pr, pc] = xt[:, :, xr, xc]
        # rows: rp[k, b] = sum_i B^T[k, i] * (phase (i % 2, b), i // 2 rows down), T + 1 long
        rp = xp.empty((4, 2, cc, n, t + 1), dtype=x.dtype)
        for b in range(2):
            q0, q1 = planes[0, b][:, :, : t + 1], planes[1, b][:, :, : t + 1]
            q2, q3 = planes[0, b][:, :, w2 : w2 + t + 1], planes[1, b][:, :, w2 : w2 + t + 1]
            xp.subtract(q0, q2, out=rp[0, b])
            xp.add(q1, q2, out=rp[1, b])
            xp.subtract(q2, q1, out=rp[2, b])
            xp.subtract(q1, q3, out=rp[3, b])
        # columns: V[k, l] = sum_j B^T[l, j] * (rp[k, j % 2], j // 2 columns right)
        for k in range(4):
            e0, e2, e1, e3 = rp[k, 0][:, :, :t], rp[k, 0][:, :, 1:], rp[k, 1][:, :, :t], rp[k, 1][:, :, 1:]
            out = v5[k, :, c0:c1]
            xp.subtract(e0, e2, out=out[0])
            xp.add(e1, e2, out=out[1])
            xp.subtract(e2, e1, out=out[2])
            xp.subtract(e1, e3, out=out[3])

    def _wino_input_adjoint_range(self, dv5: Any, geo: _Geom, gx: Any, c0: int, c1: int) -> None:
        """``gx[:, c0:c1]`` from dV: the adjoint of :meth:`_wino_input_range`."""
        xp = self.xp
        cc, n, t, w2 = c1 - c0, geo.n, geo.t, geo.w2
        drp = xp.empty((4, 2, cc, n, t + 1), dtype=gx.dtype)
        tmp_t, tmp = xp.empty((cc, n, t), dtype=gx.dtype), xp.empty((cc, n, t + 1), dtype=gx.dtype)
        for k in range(4):
            d = dv5[k, :, c0:c1]
            r0, r1 = drp[k, 0], drp[k, 1]
            r0[:, :, :t] = d[0]
            r0[:, :, t] = 0
            xp.add(d[1], d[2], out=tmp_t)
            xp.subtract(tmp_t, d[0], out=tmp_t)
            xp.add(r0[:, :, 1:], tmp_t, out=r0[:, :, 1:])
            xp.subtract(d[1], d[2], out=r1[:, :, :t])
            xp.add(r1[:, :, :t], d[3], out=r1[:, :, :t])
            r1[:, :, t] = 0
            xp.subtract(r1[:, :, 1:], d[3], out=r1[:, :, 1:])
        dpl = xp.empty((2, 2, cc, n, geo.rows * w2), dtype=gx.dtype)
        for b in range(2):
            p0, p1 = dpl[0, b], dpl[1, b]
            lo, hi = p0[:, :, : t + 1], p0[:, :, w2 : w2 + t + 1]
            lo[...] = drp[0, b]
            p0[:, :, t + 1 :] = 0
            xp.add(drp[1, b], drp[2, b], out=tmp)
            xp.subtract(tmp, drp[0, b], out=tmp)
            xp.add(hi, tmp, out=hi)
            lo, hi = p1[:, :, : t + 1], p1[:, :, w2 : w2 + t + 1]
            xp.subtract(drp[1, b], drp[2, b], out=lo)
            xp.add(lo, drp[3, b], out=lo)
            p1[:, :, t + 1 :] = 0
            xp.subtract(hi, drp[3, b], out=hi)
        gxt = xp.permute_dims(gx[:, c0:c1], (1, 0, 2, 3))
        for a in range(2):
            for b in range(2):
                (pr, pc), (xr, xc) = geo.phase_slices(a, b)
                gxt[:, :, xr, xc] = dpl[a, b].reshape(cc, n, geo.rows, w2)[:, :, pr, pc]

    # -- output transform and its adjoint (per output-channel range) ----------------------------------
    def _wino_output_range(self, m4: Any, geo: _Geom, y: Any, o0: int, o1: int) -> None:
        """``y[:, o0:o1] = A^T M A`` per tile."""
        xp = self.xp
        s = xp.empty((2, 4, o1 - o0, geo.cols), dtype=y.dtype)
        for b in range(4):
            m0, m1, m2, m3 = (m4[a, b, o0:o1] for a in range(4))
            xp.add(m0, m1, out=s[0, b])
            xp.add(s[0, b], m2, out=s[0, b])
            xp.subtract(m1, m2, out=s[1, b])
            xp.subtract(s[1, b], m3, out=s[1, b])
        tmp = xp.empty((o1 - o0, geo.cols), dtype=y.dtype)
        for p in range(2):
            sp = s[p]
            for q in range(2):
                (xp.add if q == 0 else xp.subtract)(sp[q], sp[q + 1], out=tmp)
                rs, cs = geo.out_slices(p, q)
                a = xp.permute_dims(geo.tiles(tmp), (1, 0, 2, 3))[:, :, rs, cs]
                b = xp.permute_dims(geo.tiles(sp[2 if q == 0 else 3]), (1, 0, 2, 3))[:, :, rs, cs]
                (xp.add if q == 0 else xp.subtract)(a, b, out=y[:, o0:o1, p::2, q::2])

    def _wino_grad_range(self, g: Any, geo: _Geom, f: Any, o0: int, o1: int) -> None:
        """``dM'`` rows o0:o1 (``A dY A^T`` per tile, row and column 3 negated), zero on scratch tiles."""
        xp = self.xp
        gt = xp.permute_dims(g[:, o0:o1], (1, 0, 2, 3))  # (O, N, oh, ow)
        for p, q in ((0, 0), (0, 1), (1, 0), (1, 1)):
            slot = geo.tiles(f[3 * p, 3 * q, o0:o1])
            slot.fill(0)
            rs, cs = geo.out_slices(p, q)
            slot[:, :, rs, cs] = gt[:, :, p::2, q::2]
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
        xp.matmul(self._wino_weight(w), v, out=m)
        if bias is not None:  # M[1, 1] reaches every output of its tile with weight 1
            m[5] += bias.reshape(o, 1)
        y = xp.empty((geo.n, o, geo.oh, geo.ow), dtype=x.dtype)
        m4 = m.reshape(4, 4, o, geo.cols)
        parallel(xp, o, m.size, lambda o0, o1: self._wino_output_range(m4, geo, y, o0, o1))
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
        parallel(xp, o, dm.size, lambda o0, o1: self._wino_grad_range(g, geo, f, o0, o1))
        gx = gw = None
        if weight_grad:
            v = saved.v if saved is not None else self._wino_input(x, geo)
            du = xp.matmul(dm, xp.permute_dims(v, (0, 2, 1))).reshape(4, 4, o, c)  # dU' (signs as dM')
            ws.give(v)
            # dw = G'^T dU' G' per (o, c): (O * C, 16) by kron(G', G') (16, 9), the adjoint of _wino_weight
            gw = xp.matmul(du.reshape(16, o * c).T, xp.asarray(_KRON_SIGNED, dtype=w.dtype)).reshape(o, c, 3, 3)
        elif saved is not None:
            ws.give(saved.v)
        if input_grad:
            dv = ws.take((16, c, geo.cols), g.dtype)
            xp.matmul(xp.permute_dims(self._wino_weight(w, _KRON_SIGNED), (0, 2, 1)), dm, out=dv)
            gx = xp.empty(tuple(x.shape), dtype=g.dtype)
            dv5 = dv.reshape(4, 4, c, geo.n, geo.t)
            parallel(xp, c, dv.size, lambda c0, c1: self._wino_input_adjoint_range(dv5, geo, gx, c0, c1))
            ws.give(dv)
        ws.give(dm)
        return gx, gw
