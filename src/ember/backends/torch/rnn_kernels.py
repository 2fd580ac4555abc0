"""Torch's recurrent kernels (a mixin of the torch backend, ahead of ``_kernels_rnn.py``'s reference).

**Cells** (one LSTM, GRU or Elman step) are torch's own: forward in the very order of operations of aten's
``lstm_cell``/``gru_cell``/``rnn_{tanh,relu}_cell`` (products with their bias through ``addmm``, the hidden
product first, then the input product added), so a step's outputs are PyTorch's bit for bit; backward is the
closed form on the saved gate activations through aten's fused ``sigmoid_backward``/``tanh_backward``/
``threshold_backward`` (one kernel each), with the products in torch autograd's layouts: a weight's gradient
is ``(x^T dz)^T`` (a transposed view, as torch's ``AddmmBackward``+``TBackward`` give it; ``mm`` of that form
is ~15% faster here than ``dz^T x`` for the 97x51x204 float64 products of the recurrent benchmark).

**Layers** keep the reference's loops (every step's input product in one matmul before the loop, weight
gradients in one after it) and take from here only the in-place activations, ``matmul`` on a transposed view
and the per-step gradient rules (LSTM, GRU, Elman: the cells' aten kernels).

aten's own CPU cells do not serve backward: ``lstm_cell``/``gru_cell`` are compositions whose backward is
torch's autograd, and ``_thnn_differentiable_{lstm,gru}_cell_backward`` recompute every activation from the
pre-activations; the fused ``_thnn_fused_lstm_cell`` and cuDNN's layers exist for CUDA only.
"""

from __future__ import annotations

from typing import Any

import torch

from .._weight_grad import WeightGrad

_aten = torch.ops.aten
_sigmoid_bwd = _aten.sigmoid_backward.grad_input
_tanh_bwd = _aten.tanh_backward.grad_input
_tanh_bwd_new = _aten.tanh_backward.default  # (an overload called directly: no packet lookup per call)
#: aten's ``linear`` (of a 2-d ``x``: ``addmm(b, x, w^T)``, or ``x w^T`` without a bias), one call from Python
_linear = torch._C._nn.linear


def _gates(x: Any, h: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any) -> Any:
    """``linear(h, w_hh, b_hh) + linear(x, w_ih, b_ih)``, in that order (aten's LSTM and Elman cells)."""
    z = _linear(h, w_hh, b_hh)
    z += _linear(x, w_ih, b_ih)
    return z


class TorchRNNKernels:
    """Cells forward and backward on torch tensors, and the hooks the reference's layers call."""

    # -- the hooks of the reference's layers -------------------------------------------------------
    def _sigmoid_(self, a: Any) -> Any:
        return a.sigmoid_()

    def _tanh_(self, a: Any) -> Any:
        return a.tanh_()

    def _tanh_to(self, a: Any, out: Any) -> Any:
        return torch.tanh(a, out=out)

    def _lstm_gates_(self, act: Any) -> None:
        i, f, g, o = act.unsafe_chunk(4, 1)
        i.sigmoid_()
        f.sigmoid_()
        g.tanh_()
        o.sigmoid_()

    def _rnn_act_(self, z: Any, nonlinearity: str) -> Any:
        return z.tanh_() if nonlinearity == "tanh" else z.relu_()

    def _mm_t(self, a: Any, w: Any) -> Any:
        return a.matmul(w.t())

    def _lstm_dz(self, dz: Any, gh: Any, gc: Any, act: Any, tc: Any, c: Any) -> Any:
        """Fill ``dz`` (N, 4H) with the pre-activations' gradient; return the gradient of ``c'`` (total)."""
        return self._lstm_dz_f(dz, gh, gc, act, tc, c)[0]

    def _lstm_dz_f(self, dz: Any, gh: Any, gc: Any, act: Any, tc: Any, c: Any) -> tuple[Any, Any]:
        """``_lstm_dz``, also returning the forget gate ``f`` (a view of ``act``). The sigmoid gates' products
        are written into ``dz`` and go through one ``sigmoid_backward`` over all four blocks (in place); the cell
        gate's block is then overwritten by its ``tanh_backward`` (bit for bit the per-gate kernels' result)."""
        i, f, g, o = act.unsafe_chunk(4, 1)
        di, df, dg, do = dz.unsafe_chunk(4, 1)
        if gh is not None:
            dc = _tanh_bwd_new(gh * o, tc)
            if gc is not None:
                dc += gc
            torch.mul(gh, tc, out=do)
        else:
            dc = gc.clone() if gc is not None else torch.zeros_like(tc)
            do.zero_()
        torch.mul(dc, g, out=di)
        torch.mul(dc, c, out=df)
        _sigmoid_bwd(dz, act, grad_input=dz)
        _tanh_bwd(dc * i, g, grad_input=dg)
        return dc, f

    def _gru_dz(self, dx: Any, dh: Any, gh: Any, act: Any, hn: Any, h: Any) -> Any:
        """The layers' hook: ``act`` = ``[r, z, n]``; see ``_gru_grads``."""
        r, z, n = act.unsafe_chunk(3, 1)
        return self._gru_grads(dx, dh, gh, r, z, n, hn, h)

    def _gru_grads(self, dx: Any, dh: Any, gh: Any, r: Any, z: Any, n: Any, hn: Any, h: Any) -> Any:
        """Fill ``dx``/``dh`` (N, 3H: the gradients of the input and hidden products) from ``h'``'s gradient
        ``gh`` (``h' = n + z (h - n)``, ``n = tanh(x_n + r hn)``); return the direct part of ``h``'s, ``gh z``."""
        dr, dzg, dn = dx.unsafe_chunk(3, 1)
        direct = gh * z
        _tanh_bwd(gh - direct, n, grad_input=dn)
        _sigmoid_bwd(gh * (h - n), z, grad_input=dzg)
        _sigmoid_bwd(dn * hn, r, grad_input=dr)
        hs = n.shape[-1]
        dh[:, : 2 * hs] = dx[:, : 2 * hs]
        torch.mul(dn, r, out=dh[:, 2 * hs :])
        return direct

    def _rnn_dz(self, gh: Any, h1: Any, nonlinearity: str) -> Any:
        """The pre-activation's gradient from the output ``h1``: aten's ``tanh_backward``/``threshold_backward``."""
        return _tanh_bwd_new(gh, h1) if nonlinearity == "tanh" else _aten.threshold_backward(gh, h1, 0)

    def _bias_grad(self, dz: Any) -> Any:
        return dz.sum(0)

    def weight_grad(self, dz: Any, x: Any) -> Any:
        """``dz^T x`` as autograd lays it out: ``(x^T dz)^T``, a transposed view."""
        return torch.mm(x.t(), dz).t()

    def weight_grad_add_(self, s: Any, dz: Any, x: Any) -> Any:
        """``s += dz^T x`` as one accumulating product (``addmm_``). ``s`` is a sum the engine owns: made by
        ``weight_grad`` (a transposed view: its base is the product ``x^T dz``, accumulated in that layout) or by
        an addition (a new tensor, no base)."""
        base = s._base
        if base is not None:
            base.addmm_(x.t(), dz)
        else:
            s.addmm_(dz.t(), x)
        return s

    def _linear_grads(
        self, dz: Any, x: Any, w: Any, need_x: bool, need_w: bool, need_b: bool, lazy: bool = False
    ) -> tuple[Any, ...]:
        """For ``z = x w^T + b``: ``(gx, gw, gb)`` (None where not needed); ``gw`` a transposed view, or a
        ``WeightGrad`` when ``lazy``."""
        gx = torch.mm(dz, w) if need_x else None
        gw = (WeightGrad(dz, x, self) if lazy else torch.mm(x.t(), dz).t()) if need_w else None
        gb = dz.sum(0) if need_b else None
        return gx, gw, gb

    def _cell_grads(
        self, dz: Any, x: Any, h: Any, w_ih: Any, w_hh: Any, need: tuple[bool, ...], lazy: bool = False
    ) -> tuple[Any, ...]:
        """``(gx, gh, gw_ih, gw_hh, gb_ih, gb_hh)`` of a cell whose input and hidden products both have the
        pre-activations' gradient ``dz`` (LSTM, Elman): the bias gradient is one sum (copied for the second)."""
        gx, gw_ih, _ = self._linear_grads(dz, x, w_ih, need[0], need[2], False, lazy)
        gh, gw_hh, _ = self._linear_grads(dz, h, w_hh, need[1], need[3], False, lazy)
        gb: Any = dz.sum(0) if need[4] or need[5] else None
        gb_hh = (gb.clone() if need[4] else gb) if need[5] else None
        return gx, gh, gw_ih, gw_hh, gb if need[4] else None, gb_hh

    # -- LSTM -------------------------------------------------------------------------------------------
    def lstm_cell(self, x: Any, h: Any, c: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any) -> tuple[Any, Any, Any]:
        """``(h', c', (act, tanh c'))``, ``act`` the gate activations ``[i, f, g, o]``."""
        act = _gates(x, h, w_ih, w_hh, b_ih, b_hh)
        i, f, g, o = act.unsafe_chunk(4, 1)
        i.sigmoid_()
        f.sigmoid_()
        g.tanh_()
        o.sigmoid_()
        c1 = f * c
        c1 += i * g
        tc = c1.tanh()
        return o * tc, c1, (act, tc)

    def lstm_cell_backward(
        self, gh: Any, gc: Any, saved: Any, x: Any, h: Any, c: Any, w_ih: Any, w_hh: Any, need: tuple[bool, ...],
        lazy: bool = False,
    ) -> tuple[Any, ...]:  # fmt: skip
        """Gradients ``(gx, gh, gc, gw_ih, gw_hh, gb_ih, gb_hh)`` from those of ``h'`` and ``c'`` (the weights'
        as ``WeightGrad``s when ``lazy``)."""
        act, tc = saved
        dz = torch.empty_like(act)
        dc, f = self._lstm_dz_f(dz, gh, gc, act, tc, c)
        gc0 = dc * f if need[2] else None
        gx, gh0, gw_ih, gw_hh, gb_ih, gb_hh = self._cell_grads(dz, x, h, w_ih, w_hh, need[:2] + need[3:], lazy)
        return gx, gh0, gc0, gw_ih, gw_hh, gb_ih, gb_hh

    # -- GRU --------------------------------------------------------------------------------------------
    def gru_cell(self, x: Any, h: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any) -> tuple[Any, Any]:
        """``(h', (rz, n, hn))``: the gates ``r, z`` (in the input product's first columns), ``n``, and ``hn``
        the hidden product's new-gate part (with its bias)."""
        xw, hw = _linear(x, w_ih, b_ih), _linear(h, w_hh, b_hh)
        hs = h.shape[-1]
        rz = xw[:, : 2 * hs]
        rz += hw[:, : 2 * hs]
        rz.sigmoid_()
        hn = hw[:, 2 * hs :]
        n = hn * xw[:, :hs]
        n += xw[:, 2 * hs :]
        n.tanh_()  # on a contiguous tensor, as aten's cell does (its float64 tanh differs on strided ones)
        h1 = h - n
        h1 *= xw[:, hs : 2 * hs]
        h1 += n
        return h1, (rz, n, hn)

    def gru_cell_backward(
        self, gh: Any, saved: Any, x: Any, h: Any, w_ih: Any, w_hh: Any, need: tuple[bool, ...], lazy: bool = False
    ) -> tuple[Any, ...]:
        """Gradients ``(gx, gh, gw_ih, gw_hh, gb_ih, gb_hh)`` (the weights' as ``WeightGrad``s when ``lazy``)."""
        rz, n, hn = saved
        dx = torch.empty((n.shape[0], 3 * n.shape[1]), dtype=n.dtype, device=n.device)
        dh = torch.empty_like(dx)
        r, z = rz.unsafe_chunk(2, 1)
        direct = self._gru_grads(dx, dh, gh, r, z, n, hn, h)
        gx, gw_ih, gb_ih = self._linear_grads(dx, x, w_ih, need[0], need[2], need[4], lazy)
        gh0, gw_hh, gb_hh = self._linear_grads(dh, h, w_hh, need[1], need[3], need[5], lazy)
        if gh0 is not None:
            gh0 += direct
        return gx, gh0, gw_ih, gw_hh, gb_ih, gb_hh

    # -- Elman ------------------------------------------------------------------------------------------
    def rnn_cell(
        self, x: Any, h: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, nonlinearity: str
    ) -> tuple[Any, Any]:
        """``(h', None)``: ``h' = tanh(linear(h) + linear(x))`` (or relu)."""
        return self._rnn_act_(_gates(x, h, w_ih, w_hh, b_ih, b_hh), nonlinearity), None

    def rnn_cell_backward(
        self, gh: Any, h1: Any, x: Any, h: Any, w_ih: Any, w_hh: Any, nonlinearity: str, need: tuple[bool, ...],
        lazy: bool = False,
    ) -> tuple[Any, ...]:  # fmt: skip
        """Gradients ``(gx, gh, gw_ih, gw_hh, gb_ih, gb_hh)`` from the step's output ``h1``."""
        return self._cell_grads(self._rnn_dz(gh, h1, nonlinearity), x, h, w_ih, w_hh, need, lazy)
