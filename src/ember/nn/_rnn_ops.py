"""The fused recurrent operators: one LSTM, GRU or Elman step as one graph node.

Forward and first-order backward are backend kernels (``backends/_kernels_rnn.py``; torch's in
``backends/torch/rnn_kernels.py``). ``backward`` on Tensors (``create_graph=True``, anomaly mode) rebuilds the
step from the ordinary operators (``*_step_graph``, the reference definition) and differentiates that, so
higher-order gradients stay exact. Steps whose tensors do not share one floating dtype (mixed precision
without autocast) run as that graph directly, as the operators' type promotion defines them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ..autograd._function import Op
from ..autograd._grad_mode import STATE
from ..backends._weight_grad import grad_array
from ..ops._indexing_join import cat
from ..ops._pointwise_unary import relu, sigmoid, tanh
from . import functional as F

__all__ = ["gru_cell", "lstm_cell", "rnn_cell"]  # and the step graphs and gradients nn/_rnn_layers.py reads


# -- the reference steps, composed of ordinary operators ----------------------------------------------
def lstm_step_graph(
    x: Tensor, h: Tensor, c: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None
) -> tuple[Tensor, Tensor]:
    """Gates in PyTorch's order: input, forget, cell, output."""
    i, f, g, o = (F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh)).chunk(4, -1)
    c1 = sigmoid(f) * c + sigmoid(i) * tanh(g)
    return sigmoid(o) * tanh(c1), c1


def gru_step_graph(
    x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None
) -> Tensor:
    """Gates in PyTorch's order: reset, update, new; ``n = tanh(W_in x + b_in + r (W_hn h + b_hn))``."""
    xr, xz, xn = F.linear(x, w_ih, b_ih).chunk(3, -1)
    hr, hz, hn = F.linear(h, w_hh, b_hh).chunk(3, -1)
    r = sigmoid(xr + hr)
    z = sigmoid(xz + hz)
    n = tanh(xn + r * hn)
    return (1 - z) * n + z * h


def rnn_step_graph(
    x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None, nonlinearity: str
) -> Tensor:
    z = F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh)
    return tanh(z) if nonlinearity == "tanh" else relu(z)


# -- the steps' gradients on Tensors (closed forms; the kernels compute the same on arrays) -------------
def lstm_step_dz(
    x: Tensor, h: Tensor, c: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None,
    gh: Tensor | None, gc: Tensor | None,
) -> tuple[Tensor, Tensor]:  # fmt: skip
    """The gradient of the step's pre-activations (N, 4H) and of ``c``, from those of ``h'`` and ``c'``."""
    i, f, g, o = (F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh)).chunk(4, -1)
    i, f, g, o = sigmoid(i), sigmoid(f), tanh(g), sigmoid(o)
    tc = tanh(f * c + i * g)
    zero = tc * 0  # for an output without a gradient
    dh = zero if gh is None else gh
    dc = dh * o * (1 - tc * tc) + (zero if gc is None else gc)
    dz = cat([dc * g * i * (1 - i), dc * c * f * (1 - f), dc * i * (1 - g * g), dh * tc * o * (1 - o)], -1)
    return dz, dc * f


def gru_step_dz(
    x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None, gh: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """The gradients of the input and hidden products (N, 3H each) and ``h``'s direct part ``gh z``."""
    xr, xz, xn = F.linear(x, w_ih, b_ih).chunk(3, -1)
    hr, hz, hn = F.linear(h, w_hh, b_hh).chunk(3, -1)
    r, z = sigmoid(xr + hr), sigmoid(xz + hz)
    n = tanh(xn + r * hn)
    dn = gh * (1 - z) * (1 - n * n)
    drz = [dn * hn * r * (1 - r), gh * (h - n) * z * (1 - z)]
    return cat([*drz, dn], -1), cat([*drz, dn * r], -1), gh * z


def rnn_step_dz(h1: Tensor, gh: Tensor, nonlinearity: str) -> Tensor:
    """The gradient of the pre-activation from the step's output ``h1`` and its gradient."""
    return gh * (1 - h1 * h1) if nonlinearity == "tanh" else gh * (h1 > 0)


class _CellStep(Op):
    """What the three steps share: ``backward`` on Tensors is the closed form the kernels compute, written
    with the ordinary operators (so ``create_graph=True`` differentiates it again); first order in anomaly
    mode goes to the kernels."""

    #: the closed-form gradients on Tensors, from the outputs' gradients (each step defines it)
    _graph_backward: Callable[..., tuple[Any, ...]]

    def backward(self, *grads: Tensor | None) -> tuple[Any, ...]:
        if not STATE.enabled:
            out = self.backward_arrays(*[None if g is None else g._data for g in grads])
            return tuple(None if a is None else Tensor._make(grad_array(a), self.backend) for a in out)
        return self._graph_backward(*grads)

    def _needs(self) -> tuple[bool, ...]:
        """Per input, whether it gets a gradient (``_req`` of each, in one pass)."""
        return tuple([e is not None for e in self._edges or ()])

    def _linear_grads(self, dz: Tensor, i_x: int, i_w: int, i_b: int) -> tuple[Tensor | None, ...]:
        """For ``z = x w^T + b`` (inputs ``i_x``, ``i_w``, ``i_b``): ``(gx, gw, gb)`` from ``dz``."""
        ins = self.inputs or ()
        x, w = ins[i_x], ins[i_w]
        gx = dz @ w if self._req(i_x) else None
        gw = dz.mT @ x if self._req(i_w) else None
        gb = dz.sum(0) if self._req(i_b) else None
        return gx, gw, gb


class LSTMCellStep(_CellStep):
    """``(h', c')`` of one LSTM step from ``(x, h, c, w_ih, w_hh, b_ih, b_hh)``."""

    def forward(self, x: Any, h: Any, c: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any) -> tuple[Any, Any]:
        h1, c1, self.saved = self.backend.lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh)
        return h1, c1

    def backward_arrays(self, gh: Any, gc: Any) -> tuple[Any, ...]:
        x, h, c, w_ih, w_hh = (t._data for t in (self.inputs or ())[:5])
        return self.backend.lstm_cell_backward(gh, gc, self.saved, x, h, c, w_ih, w_hh, self._needs(), lazy=True)

    def _graph_backward(self, gh: Tensor | None, gc: Tensor | None) -> tuple[Any, ...]:
        ins = self.inputs or ()
        dz, gc0 = lstm_step_dz(*ins, gh, gc)  # type: ignore[call-arg]
        gx, gw_ih, gb_ih = self._linear_grads(dz, 0, 3, 5)
        gh0, gw_hh, gb_hh = self._linear_grads(dz, 1, 4, 6)
        return gx, gh0, (gc0 if self._req(2) else None), gw_ih, gw_hh, gb_ih, gb_hh


class GRUCellStep(_CellStep):
    """``h'`` of one GRU step from ``(x, h, w_ih, w_hh, b_ih, b_hh)``."""

    def forward(self, x: Any, h: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any) -> Any:
        h1, self.saved = self.backend.gru_cell(x, h, w_ih, w_hh, b_ih, b_hh)
        return h1

    def backward_arrays(self, gh: Any) -> tuple[Any, ...]:
        x, h, w_ih, w_hh = (t._data for t in (self.inputs or ())[:4])
        return self.backend.gru_cell_backward(gh, self.saved, x, h, w_ih, w_hh, self._needs(), lazy=True)

    def _graph_backward(self, gh: Tensor) -> tuple[Any, ...]:
        dx, dh, direct = gru_step_dz(*(self.inputs or ()), gh)  # type: ignore[call-arg]
        gx, gw_ih, gb_ih = self._linear_grads(dx, 0, 2, 4)
        gh0, gw_hh, gb_hh = self._linear_grads(dh, 1, 3, 5)
        return gx, (None if gh0 is None else gh0 + direct), gw_ih, gw_hh, gb_ih, gb_hh


class RNNCellStep(_CellStep):
    """``h'`` of one Elman step from ``(x, h, w_ih, w_hh, b_ih, b_hh, nonlinearity)``."""

    saves_output = True

    def forward(self, x: Any, h: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, nonlinearity: str) -> Any:
        h1, _ = self.backend.rnn_cell(x, h, w_ih, w_hh, b_ih, b_hh, nonlinearity)
        self.keep(h1)
        return h1

    def backward_arrays(self, gh: Any) -> tuple[Any, ...]:
        ins = self.inputs or ()
        x, h, w_ih, w_hh = (t._data for t in ins[:4])
        need = self._needs()[:6]
        return (*self.backend.rnn_cell_backward(gh, self.out_array(), x, h, w_ih, w_hh, ins[6], need, lazy=True), None)

    def _graph_backward(self, gh: Tensor) -> tuple[Any, ...]:
        dz = rnn_step_dz(self.output(), gh, (self.inputs or ())[6])
        gx, gw_ih, gb_ih = self._linear_grads(dz, 0, 2, 4)
        gh0, gw_hh, gb_hh = self._linear_grads(dz, 1, 3, 5)
        return gx, gh0, gw_ih, gw_hh, gb_ih, gb_hh, None


def _fusable(*ts: Tensor | None) -> bool:
    """One floating dtype for all: the kernels compute in it (else type promotion decides, in the graph)."""
    first: Any = ts[0]
    d = first._data.dtype
    for t in ts[1:]:  # the same array dtype object (the usual case) decides without a dtype lookup
        if t is not None and t._data.dtype is not d and t.dtype != first.dtype:
            return False
    return bool(first.dtype.is_floating_point)


def lstm_cell(
    x: Tensor, h: Tensor, c: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None
) -> tuple[Tensor, Tensor]:
    """One LSTM step on a batch: ``(h', c')`` (one graph node)."""
    if _fusable(x, h, c, w_ih, w_hh, b_ih, b_hh):
        return LSTMCellStep.apply(x, h, c, w_ih, w_hh, b_ih, b_hh)  # type: ignore[return-value]
    return lstm_step_graph(x, h, c, w_ih, w_hh, b_ih, b_hh)


def gru_cell(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None) -> Tensor:
    """One GRU step on a batch: ``h'`` (one graph node)."""
    if _fusable(x, h, w_ih, w_hh, b_ih, b_hh):
        return GRUCellStep.apply(x, h, w_ih, w_hh, b_ih, b_hh)
    return gru_step_graph(x, h, w_ih, w_hh, b_ih, b_hh)


def rnn_cell(
    x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None, nonlinearity: str
) -> Tensor:
    """One Elman step on a batch (``nonlinearity`` "tanh" or "relu"): ``h'`` (one graph node)."""
    if _fusable(x, h, w_ih, w_hh, b_ih, b_hh):
        return RNNCellStep.apply(x, h, w_ih, w_hh, b_ih, b_hh, nonlinearity)
    return rnn_step_graph(x, h, w_ih, w_hh, b_ih, b_hh, nonlinearity)
