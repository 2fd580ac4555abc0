"""Torch's activations for the recurrent kernels of ``_kernels_rnn.py`` (a mixin of the torch backend).

The steps and layers themselves are the reference's (saved gate activations, closed-form gradients, one
product for every step's input and weight gradients), which run on torch tensors as they are; only the
in-place activations differ: torch's vectorised ``sigmoid_``/``tanh_``/``relu_`` instead of the reference's
``exp`` forms. aten's own CPU cells do not fit: ``lstm_cell``/``gru_cell`` are compositions whose backward
is torch's autograd, and ``_thnn_differentiable_{lstm,gru}_cell_backward`` recompute every activation from
the pre-activations; the fused ``_thnn_fused_lstm_cell`` and cuDNN's layers exist for CUDA only.
"""

from __future__ import annotations

from typing import Any


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
