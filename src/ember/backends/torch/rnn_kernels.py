"""Torch's pieces of the recurrent kernels of ``_kernels_rnn.py`` (a mixin of the torch backend).

The steps and layers themselves are the reference's (saved gate activations, closed-form gradients, one
product for every step's input and weight gradients), which run on torch tensors as they are; what differs:
torch's vectorised ``sigmoid_``/``tanh_``/``relu_`` instead of the reference's ``exp`` forms, products as
``matmul`` on a transposed view, and the LSTM's gate gradients through aten's fused ``sigmoid_backward``/
``tanh_backward`` (half the kernel launches of the reference's slice arithmetic; measured 0.68 ms of a step's
backward went there). aten's own CPU cells do not fit: ``lstm_cell``/``gru_cell`` are compositions whose backward
is torch's autograd, and ``_thnn_differentiable_{lstm,gru}_cell_backward`` recompute every activation from
the pre-activations; the fused ``_thnn_fused_lstm_cell`` and cuDNN's layers exist for CUDA only.
"""

from __future__ import annotations

from typing import Any

import torch

_aten = torch.ops.aten


class TorchRNNKernels:
    """In-place activations on torch tensors (the hooks ``RNNKernels`` calls)."""

    def _sigmoid_(self, a: Any) -> Any:
        return a.sigmoid_()

    def _tanh_(self, a: Any) -> Any:
        return a.tanh_()

    def _lstm_gates_(self, act: Any) -> None:
        hs = act.shape[-1] // 4
        act[:, : 2 * hs].sigmoid_()
        act[:, 2 * hs : 3 * hs].tanh_()
        act[:, 3 * hs :].sigmoid_()

    def _rnn_act_(self, z: Any, nonlinearity: str) -> Any:
        return z.tanh_() if nonlinearity == "tanh" else z.relu_()

    def _mm_t(self, a: Any, w: Any) -> Any:
        return a.matmul(w.t())

    def _lstm_dz(self, dz: Any, gh: Any, gc: Any, act: Any, tc: Any, c: Any) -> Any:
        """The reference's rule with aten's fused ``sigmoid_backward``/``tanh_backward`` (one kernel each)."""
        i, f, g, o = act.chunk(4, 1)
        di, df, dg, do = dz.chunk(4, 1)
        if gh is not None:
            dc = _aten.tanh_backward(gh * o, tc)
            if gc is not None:
                dc += gc
            _aten.sigmoid_backward.grad_input(gh * tc, o, grad_input=do)
        else:
            dc = gc.clone() if gc is not None else torch.zeros_like(tc)
            do.zero_()
        _aten.sigmoid_backward.grad_input(dc * g, i, grad_input=di)
        _aten.sigmoid_backward.grad_input(dc * c, f, grad_input=df)
        _aten.tanh_backward.grad_input(dc * i, g, grad_input=dg)
        return dc
