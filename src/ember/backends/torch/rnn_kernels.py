"""Torch's kernels for the recurrent steps of ``_kernels_rnn.py`` (a mixin of the torch backend).

The same algorithm as the reference (the gate activations saved by forward, the gradients in closed form,
both weight products as ``addmm``/``mm`` on transposed views), with torch's vectorised ``sigmoid_``/``tanh_``
in place. aten's own CPU cells do not fit: ``lstm_cell``/``gru_cell`` are compositions whose backward is
torch's autograd, and ``_thnn_differentiable_{lstm,gru}_cell_backward`` recompute every activation from the
pre-activations; the fused ``_thnn_fused_lstm_cell`` exists for CUDA only.
"""

from __future__ import annotations

from typing import Any

from .kernels import _no_grad, _torch


def _gates(x: Any, h: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any) -> Any:
    z = x.mm(w_ih.t()) if b_ih is None else _torch().addmm(b_ih, x, w_ih.t())
    z.addmm_(h, w_hh.t())
    if b_hh is not None:
        z += b_hh
    return z


def _linear_grads(dz: Any, x: Any, w: Any, need_x: bool, need_w: bool, need_b: bool) -> tuple[Any, ...]:
    return (dz.mm(w) if need_x else None, dz.t().mm(x) if need_w else None, dz.sum(0) if need_b else None)


class TorchRNNKernels:
    """One recurrent step forward and backward on torch tensors (arguments and results as the reference's)."""

    @_no_grad
    def lstm_cell(self, x: Any, h: Any, c: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any) -> tuple[Any, ...]:
        hs = c.shape[-1]
        act = _gates(x, h, w_ih, w_hh, b_ih, b_hh)
        act[:, : 2 * hs].sigmoid_()
        act[:, 2 * hs : 3 * hs].tanh_()
        act[:, 3 * hs :].sigmoid_()
        i, f, g, o = act.chunk(4, 1)
        c1 = f * c
        c1.addcmul_(i, g)
        tc = c1.tanh()
        return o * tc, c1, (act, tc)

    @_no_grad
    def lstm_cell_backward(
        self, gh: Any, gc: Any, saved: Any, x: Any, h: Any, c: Any, w_ih: Any, w_hh: Any, need: tuple[bool, ...]
    ) -> tuple[Any, ...]:
        act, tc = saved
        i, f, g, o = act.chunk(4, 1)
        dz = act * (1 - act)
        dzi, dzf, dzg, dzo = dz.chunk(4, 1)
        dzg.copy_(g * g).neg_().add_(1)
        if gh is not None:
            dc = (1 - tc * tc).mul_(o).mul_(gh)
            if gc is not None:
                dc += gc
            dzo.mul_(gh * tc)
        else:
            dc = gc.clone() if gc is not None else _torch().zeros_like(tc)
            dzo.zero_()
        dzi.mul_(dc * g)
        dzf.mul_(dc * c)
        dzg.mul_(dc * i)
        gc0 = dc * f if need[2] else None
        gx, gw_ih, gb_ih = _linear_grads(dz, x, w_ih, need[0], need[3], need[5])
        gh0, gw_hh, gb_hh = _linear_grads(dz, h, w_hh, need[1], need[4], need[6])
        return gx, gh0, gc0, gw_ih, gw_hh, gb_ih, gb_hh

    @_no_grad
    def gru_cell(self, x: Any, h: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any) -> tuple[Any, Any]:
        hs = h.shape[-1]
        xw = x.mm(w_ih.t()) if b_ih is None else _torch().addmm(b_ih, x, w_ih.t())
        hw = h.mm(w_hh.t()) if b_hh is None else _torch().addmm(b_hh, h, w_hh.t())
        rz = xw[:, : 2 * hs]
        rz.add_(hw[:, : 2 * hs]).sigmoid_()
        r, z = rz.chunk(2, 1)
        n = xw[:, 2 * hs :]
        n.addcmul_(r, hw[:, 2 * hs :]).tanh_()
        h1 = (h - n).mul_(z).add_(n)
        return h1, (xw, hw)

    @_no_grad
    def gru_cell_backward(
        self, gh: Any, saved: Any, x: Any, h: Any, w_ih: Any, w_hh: Any, need: tuple[bool, ...]
    ) -> tuple[Any, ...]:
        xw, hw = saved
        hs = h.shape[-1]
        r, z, n = xw.chunk(3, 1)
        hn = hw[:, 2 * hs :]
        dx = _torch().empty_like(xw)
        drp, dzp, dn = dx.chunk(3, 1)
        _torch().mul(gh, 1 - z, out=dn).mul_(1 - n * n)
        _torch().sub(h, n, out=dzp).mul_(gh).mul_(z * (1 - z))
        _torch().mul(dn, hn, out=drp).mul_(r * (1 - r))
        dh = dx.clone()
        dh[:, 2 * hs :].mul_(r)
        gx, gw_ih, gb_ih = _linear_grads(dx, x, w_ih, need[0], need[2], need[4])
        gh0, gw_hh, gb_hh = _linear_grads(dh, h, w_hh, need[1], need[3], need[5])
        if gh0 is not None:
            gh0.addcmul_(gh, z)
        return gx, gh0, gw_ih, gw_hh, gb_ih, gb_hh

    @_no_grad
    def rnn_cell(
        self, x: Any, h: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, nonlinearity: str
    ) -> tuple[Any, Any]:
        z = _gates(x, h, w_ih, w_hh, b_ih, b_hh)
        return (z.tanh_() if nonlinearity == "tanh" else z.relu_()), None

    @_no_grad
    def rnn_cell_backward(
        self, gh: Any, h1: Any, x: Any, h: Any, w_ih: Any, w_hh: Any, nonlinearity: str, need: tuple[bool, ...]
    ) -> tuple[Any, ...]:
        if nonlinearity == "tanh":
            dz = _torch().ops.aten.tanh_backward(gh, h1)
        else:
            dz = _torch().ops.aten.threshold_backward(gh, h1, 0)
        gx, gw_ih, gb_ih = _linear_grads(dz, x, w_ih, need[0], need[2], need[4])
        gh0, gw_hh, gb_hh = _linear_grads(dz, h, w_hh, need[1], need[3], need[5])
        return gx, gh0, gw_ih, gw_hh, gb_ih, gb_hh
