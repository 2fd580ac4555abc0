"""PyTorch's top-level ATen entry points that return what the kernel returns (``torch.native_layer_norm``,
``native_batch_norm``, ``native_dropout``) and the single recurrent steps (``torch.lstm_cell``, ``gru_cell``,
``rnn_tanh_cell``, ``rnn_relu_cell``), served by Ember's functionals and recurrent steps (``ember.<name>``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..._creation import empty, ones_like, rand, zeros_like
from ..._dtype import bool_
from ..._tensor import Tensor
from ...autograd._grad_mode import no_grad
from .. import functional as F
from .._rnn_ops import gru_cell as _gru
from .._rnn_ops import lstm_cell as _lstm
from .._rnn_ops import rnn_cell as _rnn

__all__ = ["gru_cell", "lstm_cell", "native_batch_norm", "native_dropout", "native_layer_norm", "rnn_relu_cell",
           "rnn_tanh_cell"]  # fmt: skip


def native_layer_norm(
    input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None, bias: Tensor | None, eps: float
) -> tuple[Tensor, Tensor, Tensor]:
    """``(output, mean, rstd)``: layer norm and the statistics it used (shape ``input.shape[:-k] + (1,) * k``;
    not differentiable, as ATen's)."""
    shape = tuple(normalized_shape)
    out = F.layer_norm(input, shape, weight, bias, eps)
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    with no_grad():
        mean = input.mean(dim=dims, keepdim=True)
        rstd = (input.var(dim=dims, unbiased=False, keepdim=True) + eps).rsqrt()
    return out, mean, rstd


def native_batch_norm(
    input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
    running_var: Tensor | None, training: bool, momentum: float, eps: float,
) -> tuple[Tensor, Tensor, Tensor]:  # fmt: skip
    """``(output, save_mean, save_invstd)``: batch norm (updating the running statistics while training) and the
    batch's per-channel mean and ``1 / sqrt(var + eps)``; in evaluation both are empty, as ATen's."""
    out = F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        return out, empty(0, dtype=input.dtype, device=input.device), empty(0, dtype=input.dtype, device=input.device)
    dims = (0, *range(2, input.ndim))
    with no_grad():
        mean = input.mean(dim=dims)
        invstd = (input.var(dim=dims, unbiased=False) + eps).rsqrt()
    return out, mean, invstd


def native_dropout(input: Tensor, p: float, train: bool | None) -> tuple[Tensor, Tensor]:
    """``(output, mask)``: dropout and the boolean mask of the kept elements (all True outside training)."""
    if not train:
        return input.clone(), ones_like(input, dtype=bool_)
    keep = rand(*input.shape, device=input.device) >= p if p < 1 else zeros_like(input, dtype=bool_)
    scale = 0.0 if p >= 1 else 1.0 / (1.0 - p)
    return input * keep.to(input.dtype) * scale, keep


def _tuple(hx: Any, op: str) -> tuple[Tensor, Tensor]:
    if not isinstance(hx, (tuple, list)) or len(hx) != 2 or not all(isinstance(t, Tensor) for t in hx):
        raise TypeError(f"{op}(): argument 'hx' (position 2) must be tuple of Tensors, not {type(hx).__name__}")
    return hx[0], hx[1]


def lstm_cell(input: Tensor, hx: Sequence[Tensor], w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
              b_hh: Tensor | None = None) -> tuple[Tensor, Tensor]:  # fmt: skip
    """One LSTM step: ``(h', c')`` from ``hx = (h, c)`` (gates i, f, g, o, as ``nn.LSTMCell``)."""
    h, c = _tuple(hx, "lstm_cell")
    return _lstm(input, h, c, w_ih, w_hh, b_ih, b_hh)


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
             b_hh: Tensor | None = None) -> Tensor:  # fmt: skip
    """One GRU step: ``h'`` (gates r, z, n, as ``nn.GRUCell``)."""
    return _gru(input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
                  b_hh: Tensor | None = None) -> Tensor:  # fmt: skip
    """One Elman step with tanh: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)``."""
    return _rnn(input, hx, w_ih, w_hh, b_ih, b_hh, "tanh")


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
                  b_hh: Tensor | None = None) -> Tensor:  # fmt: skip
    """One Elman step with relu: ``h' = relu(x W_ih^T + b_ih + h W_hh^T + b_hh)``."""
    return _rnn(input, hx, w_ih, w_hh, b_ih, b_hh, "relu")


NAMES = {name: globals()[name] for name in __all__}
