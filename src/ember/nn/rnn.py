"""Recurrent layers: RNN, LSTM, GRU (multi-layer, bidirectional, batch_first) and their one-step cells
(RNNCell, LSTMCell, GRUCell), with PyTorch's parameter names and gate orders."""

from __future__ import annotations

import math
from typing import Any

from .._creation import empty, tensor, zeros
from .._tensor import Tensor
from ..ops._indexing_join import cat, stack
from ..ops._util import same_dtype
from . import functional as F
from . import init
from ._rnn_layers import gru_layer, lstm_layer, rnn_layer
from ._rnn_ops import gru_cell, lstm_cell, rnn_cell
from .config import config_for
from .module import Module
from .parameter import Param
from .utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase"]


_MODES = {"RNN_TANH": (1, "tanh"), "RNN_RELU": (1, "relu"), "LSTM": (4, "tanh"), "GRU": (3, "tanh")}


class RNNBase(Module):
    """PyTorch's base of ``RNN``, ``LSTM`` and ``GRU``: ``mode`` is ``"RNN_TANH"``, ``"RNN_RELU"``, ``"LSTM"`` or
    ``"GRU"``; only LSTM takes ``proj_size``."""

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        if mode not in _MODES:
            raise ValueError(f"{type(self).__name__}: unknown mode {mode!r}; expected one of {list(_MODES)}")
        if proj_size and mode != "LSTM":
            raise ValueError(f"{type(self).__name__}: proj_size is only supported for LSTM, not {mode}")
        self._gates, nonlinearity = _MODES[mode]
        self.mode = mode
        super().__init__()
        name = type(self).__name__
        if not isinstance(proj_size, int) or proj_size < 0 or (proj_size and proj_size >= hidden_size):
            raise ValueError(f"{name}: proj_size must be 0 or a positive integer below hidden_size, got {proj_size!r}")
        for k, v in (("input_size", input_size), ("hidden_size", hidden_size), ("num_layers", num_layers)):
            if not isinstance(v, int) or v <= 0:
                raise ValueError(f"{name}: {k} must be a positive integer, got {v!r}")
        if not 0 <= dropout <= 1:
            raise ValueError(f"{name}: dropout must be in [0, 1], got {dropout}")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.nonlinearity, self.bias, self.batch_first = nonlinearity, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = dropout, bidirectional, proj_size
        dirs = 2 if bidirectional else 1
        g = self._gates * hidden_size
        out = proj_size or hidden_size  # the size of h (LSTM's projection makes it proj_size)
        for layer in range(num_layers):
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                inp = input_size if layer == 0 else out * dirs
                setattr(self, "weight_ih" + sfx, Param(empty(g, inp, device=device, dtype=dtype)))
                setattr(self, "weight_hh" + sfx, Param(empty(g, out, device=device, dtype=dtype)))
                if bias:
                    setattr(self, "bias_ih" + sfx, Param(empty(g, device=device, dtype=dtype)))
                    setattr(self, "bias_hh" + sfx, Param(empty(g, device=device, dtype=dtype)))
                if proj_size:
                    setattr(self, "weight_hr" + sfx, Param(empty(proj_size, hidden_size, device=device, dtype=dtype)))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def _layer(self, x: Tensor, h: Any, sfx: str, reverse: bool) -> tuple[Tensor, Any]:
        """One layer in one direction (weights ``*sfx``): ``(outputs, final state)``, one graph node."""
        w_ih, w_hh = getattr(self, "weight_ih" + sfx), getattr(self, "weight_hh" + sfx)
        b_ih = getattr(self, "bias_ih" + sfx) if self.bias else None
        b_hh = getattr(self, "bias_hh" + sfx) if self.bias else None
        if self.mode == "LSTM":
            w_hr = getattr(self, "weight_hr" + sfx) if self.proj_size else None
            out, h_n, c_n = lstm_layer(x, h[0], h[1], w_ih, w_hh, b_ih, b_hh, w_hr, reverse)
            return out, (h_n, c_n)
        if self.mode == "GRU":
            return gru_layer(x, h, w_ih, w_hh, b_ih, b_hh, reverse)
        return rnn_layer(x, h, w_ih, w_hh, b_ih, b_hh, self.nonlinearity, reverse)

    def _init_state(self, batch: int, x: Tensor) -> Any:
        dirs = 2 if self.bidirectional else 1
        h = zeros(self.num_layers * dirs, batch, self.hidden_size, dtype=x.dtype, device=x.device)
        if self.mode == "LSTM":
            return (h[..., : self.proj_size] if self.proj_size else h.clone(), h)
        return h

    def forward(self, input: Any, hx: Any = None) -> tuple[Any, Any]:
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        name = type(self).__name__
        unbatched = input.ndim == 2
        if input.ndim not in (2, 3):
            raise ValueError(f"{name}: expected a 2-d or 3-d input, got shape {tuple(input.shape)}")
        x = input.unsqueeze(1 if not self.batch_first else 0) if unbatched else input
        if self.batch_first:
            x = x.transpose(0, 1)  # (T, N, F)
        if x.shape[-1] != self.input_size:
            raise ValueError(f"{name}: expected input features {self.input_size}, got shape {tuple(input.shape)}")
        wd = self.weight_ih_l0.dtype
        if x.dtype is not wd:  # PyTorch's ValueError: no silent promotion of the whole layer
            raise ValueError(f"{name}: input dtype ({x.dtype}) does not match weight dtype ({wd}); convert the input: "
                             f"input.to({wd})")  # fmt: skip
        batch = x.shape[1]
        if hx is None:
            state = self._init_state(batch, x)
        else:
            state = tuple(h.unsqueeze(1) for h in hx) if unbatched and isinstance(hx, tuple) else hx
            if unbatched and not isinstance(hx, tuple):
                state = hx.unsqueeze(1)
            same_dtype(name, "input and hidden state", x, *(state if isinstance(state, tuple) else (state,)))
        x, h_n = self._run(x, state)
        out = x.transpose(0, 1) if self.batch_first else x
        if unbatched:
            out = out.squeeze(1 if not self.batch_first else 0)
            h_n = tuple(h.squeeze(1) for h in h_n) if isinstance(h_n, tuple) else h_n.squeeze(1)
        return out, h_n

    def _run(self, x: Tensor, state: Any) -> tuple[Tensor, Any]:
        """Every layer and direction over ``x`` (time-major) from ``state``: ``(outputs, final states)``."""
        dirs = 2 if self.bidirectional else 1
        finals: list[Any] = []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                idx = layer * dirs + d
                h = tuple(s[idx] for s in state) if isinstance(state, tuple) else state[idx]
                out, h = self._layer(x, h, f"_l{layer}" + ("_reverse" if d else ""), bool(d))
                outs.append(out)
                finals.append(h)
            x = cat(outs, -1) if dirs == 2 else outs[0]
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        if isinstance(finals[0], tuple):
            return x, tuple(stack([f[i] for f in finals], 0) for i in range(2))
        return x, stack(finals, 0)

    def _forward_packed(self, input: PackedSequence, hx: Any) -> tuple[PackedSequence, Any]:
        """A packed batch: the sequences of each length run together, cut to that length (the batch entries of a
        recurrent layer are independent), and are put back in place. ``hx`` and the final states are in the
        original batch order, as PyTorch's."""
        if input.data.shape[-1] != self.input_size:
            raise ValueError(
                f"{type(self).__name__}: expected input features {self.input_size}, got shape {tuple(input.data.shape)}"
            )
        padded, lengths = pad_packed_sequence(input)  # (T, B, F), original order
        n = [int(k) for k in lengths.tolist()]
        state = self._init_state(len(n), padded) if hx is None else hx
        steps = padded.shape[0]
        outs, hs, order = [], [], []
        for length in sorted(set(n), reverse=True):
            idx = [i for i, k in enumerate(n) if k == length]
            pick = tensor(idx, dtype="int64", device=padded.device)
            sub = (
                tuple(s.index_select(1, pick) for s in state)
                if isinstance(state, tuple)
                else state.index_select(1, pick)
            )
            out, h = self._run(padded[:length].index_select(1, pick), sub)
            outs.append(F.pad(out, (0, 0, 0, 0, 0, steps - length)) if length < steps else out)
            hs.append(h)
            order += idx
        back = tensor(sorted(range(len(order)), key=order.__getitem__), dtype="int64", device=padded.device)
        out = cat(outs, 1).index_select(1, back)
        if isinstance(hs[0], tuple):
            h_n: Any = tuple(cat([h[i] for h in hs], 1).index_select(1, back) for i in range(2))
        else:
            h_n = cat(hs, 1).index_select(1, back)
        if input.sorted_indices is not None:  # packed in the input's order (ties among equal lengths included)
            out = out.index_select(1, input.sorted_indices)
            n = [n[i] for i in input.sorted_indices.tolist()]
        data = pack_padded_sequence(out, n).data
        return PackedSequence(data, input.batch_sizes, input.sorted_indices, input.unsorted_indices), h_n

    def flatten_parameters(self) -> None:
        """Accepted for PyTorch code (cuDNN's weight packing); Ember's weights need no flattening."""

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"  # (PyTorch's fields, in its order)
        s += f", proj_size={self.proj_size}" if self.proj_size else ""
        s += f", num_layers={self.num_layers}" if self.num_layers != 1 else ""
        s += "" if self.bias else ", bias=False"
        s += ", batch_first=True" if self.batch_first else ""
        s += f", dropout={self.dropout}" if self.dropout else ""
        return s + (", bidirectional=True" if self.bidirectional else "")


class RNN(RNNBase):
    """Elman RNN: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu)."""

    def __init__(
        self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh", bias: bool = True,
        batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, device: Any = None,
        dtype: Any = None,
    ) -> None:  # fmt: skip
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        super().__init__(f"RNN_{nonlinearity.upper()}", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, 0, device, dtype)  # fmt: skip


class LSTM(RNNBase):
    """LSTM with gates in PyTorch's order (input, forget, cell, output); returns ``(output, (h_n, c_n))``;
    ``proj_size`` projects h to that size (``weight_hr``)."""

    def __init__(
        self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True, batch_first: bool = False,
        dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0, device: Any = None, dtype: Any = None,
    ) -> None:  # fmt: skip
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)  # fmt: skip


class GRU(RNNBase):
    """GRU with PyTorch's gate order (reset, update, new) and ``n = tanh(W_in x + b_in + r (W_hn h + b_hn))``."""

    def __init__(
        self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True, batch_first: bool = False,
        dropout: float = 0.0, bidirectional: bool = False, device: Any = None, dtype: Any = None,
    ) -> None:  # fmt: skip
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, 0,
                         device, dtype)  # fmt: skip


_RNNBase = RNNBase  # the name ember.nn.modules.rnn and older code use


class RNNCellBase(Module):
    """One time step: ``weight_ih`` (G*H, I), ``weight_hh`` (G*H, H), ``bias_ih``, ``bias_hh`` (G*H); G is
    ``num_chunks`` (1 for RNNCell, 4 for LSTMCell, 3 for GRUCell)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device: Any = None,
                 dtype: Any = None) -> None:  # fmt: skip
        self._gates = num_chunks
        super().__init__()
        name = type(self).__name__
        for k, v in (("input_size", input_size), ("hidden_size", hidden_size)):
            if not isinstance(v, int) or v <= 0:
                raise ValueError(f"{name}: {k} must be a positive integer, got {v!r}")
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        g = self._gates * hidden_size
        self.weight_ih = Param(empty(g, input_size, device=device, dtype=dtype))
        self.weight_hh = Param(empty(g, hidden_size, device=device, dtype=dtype))
        if bias:
            self.bias_ih = Param(empty(g, device=device, dtype=dtype))
            self.bias_hh = Param(empty(g, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def _batched(self, input: Any, *states: Any) -> bool:
        """The usual call, checked in one pass: a 2-d ``input`` (N, input_size) and states (N, hidden_size)."""
        if not isinstance(input, Tensor):
            return False
        xs = input._data.shape
        if len(xs) != 2 or xs[1] != self.input_size:
            return False
        for h in states:
            if not isinstance(h, Tensor):
                return False
            hs = h._data.shape
            if len(hs) != 2 or hs[0] != xs[0] or hs[1] != self.hidden_size:
                return False
        return True

    def _prepare(self, input: Tensor, hx: Any) -> tuple[Tensor, Any, bool]:
        """Check shapes; lift an unbatched input (and state) to a batch of one; zeros for a missing state."""
        name = type(self).__name__
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        if input.shape[-1] != self.input_size:
            raise ValueError(
                f"{name}: input has inconsistent input_size: got {input.shape[-1]} expected {self.input_size}"
            )
        unbatched = input.ndim == 1
        x = input.unsqueeze(0) if unbatched else input
        states = hx if isinstance(hx, tuple) else (hx,)
        same_dtype(name, "input, hidden state and weights", x, *states, self.weight_ih)
        out = []
        for h in states:
            if h is None:
                h = zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
            elif unbatched:
                h = h.unsqueeze(0)
            if tuple(h.shape) != (x.shape[0], self.hidden_size):
                raise ValueError(
                    f"{name}: hidden state of shape {tuple(h.shape)} does not match input of shape "
                    f"{tuple(input.shape)} (expected {(x.shape[0], self.hidden_size)})"
                )
            out.append(h)
        return x, (tuple(out) if isinstance(hx, tuple) else out[0]), unbatched

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")
        return s + (f", nonlinearity={self.nonlinearity}" if getattr(self, "nonlinearity", "tanh") != "tanh" else "")


class RNNCell(RNNCellBase):
    """Elman RNN cell: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device: Any = None, dtype: Any = None) -> None:  # fmt: skip
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        if hx is not None and self._batched(input, hx):
            return rnn_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh, self.nonlinearity)
        x, h, unbatched = self._prepare(input, hx)
        out = rnn_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh, self.nonlinearity)
        return out.squeeze(0) if unbatched else out


class LSTMCell(RNNCellBase):
    """LSTM cell (gates: input, forget, cell, output); ``forward(input, (h, c))`` returns ``(h', c')``.
    One graph node per call (``nn._rnn_ops.LSTMCellStep``; the GRU and Elman cells likewise)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:  # fmt: skip
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        if hx.__class__ is tuple and len(hx) == 2 and self._batched(input, *hx):  # type: ignore[union-attr]
            h, c = hx  # type: ignore[misc]
            return lstm_cell(input, h, c, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        if hx is not None and not (isinstance(hx, tuple) and len(hx) == 2):
            raise ValueError("LSTMCell: hx must be a tuple (h_0, c_0)")
        x, h, unbatched = self._prepare(input, hx if hx is not None else (None, None))
        h1, c1 = lstm_cell(x, h[0], h[1], self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return (h1.squeeze(0), c1.squeeze(0)) if unbatched else (h1, c1)


class GRUCell(RNNCellBase):
    """GRU cell (gates: reset, update, new)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:  # fmt: skip
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        if hx is not None and self._batched(input, hx):
            return gru_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        x, h, unbatched = self._prepare(input, hx)
        out = gru_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return out.squeeze(0) if unbatched else out


RNNConfig = config_for(RNN)
LSTMConfig = config_for(LSTM)
GRUConfig = config_for(GRU)
RNNCellConfig = config_for(RNNCell)
LSTMCellConfig = config_for(LSTMCell)
GRUCellConfig = config_for(GRUCell)
__all__ += ["GRUCellConfig", "GRUConfig", "LSTMCellConfig", "LSTMConfig", "RNNCellConfig", "RNNConfig"]

_CellBase = RNNCellBase  # the name ember.nn.modules.rnn and older code use
