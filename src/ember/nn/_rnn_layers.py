"""The fused recurrent layers: one LSTM, GRU or Elman layer in one direction over a whole sequence as one
graph node (``nn.LSTM``/``GRU``/``RNN`` run one per layer and direction).

Forward and first-order backward are backend kernels (``backends/_kernels_rnn.py``: the input products of
all steps in one matrix product, the weight gradients of all steps in one more). ``backward`` on Tensors
(``create_graph=True``) runs backpropagation through time with the steps' closed forms of ``nn/_rnn_ops.py``
on Tensors, so higher-order gradients stay exact. ``*_layer_graph`` is each layer as ordinary operators: the
reference, the path for tensors of mixed dtypes, and what ``ember.onnx`` exports.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ..autograd._function import Op
from ..autograd._grad_mode import STATE
from ..ops._indexing_join import stack
from ._rnn_ops import (
    _fusable,
    gru_step_dz,
    gru_step_graph,
    lstm_step_dz,
    lstm_step_graph,
    rnn_step_dz,
    rnn_step_graph,
)

__all__ = ["gru_layer", "lstm_layer", "rnn_layer"]


def _order(steps: int, reverse: bool) -> range:
    return range(steps - 1, -1, -1) if reverse else range(steps)


def _in_time_order(seq: list[Tensor], reverse: bool) -> Tensor:
    return stack(seq[::-1] if reverse else seq, 0)


# -- the reference layers, composed of ordinary operators ---------------------------------------------
def lstm_layer_graph(
    x: Tensor, h: Tensor, c: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None,
    w_hr: Tensor | None, reverse: bool,
) -> tuple[Tensor, Tensor, Tensor]:  # fmt: skip
    seq = []
    for t in _order(x.shape[0], reverse):
        h, c = lstm_step_graph(x[t], h, c, w_ih, w_hh, b_ih, b_hh)
        if w_hr is not None:
            h = h @ w_hr.mT
        seq.append(h)
    return _in_time_order(seq, reverse), h, c


def gru_layer_graph(
    x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None, reverse: bool
) -> tuple[Tensor, Tensor]:
    seq = []
    for t in _order(x.shape[0], reverse):
        h = gru_step_graph(x[t], h, w_ih, w_hh, b_ih, b_hh)
        seq.append(h)
    return _in_time_order(seq, reverse), h


def rnn_layer_graph(
    x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None, nonlinearity: str,
    reverse: bool,
) -> tuple[Tensor, Tensor]:  # fmt: skip
    seq = []
    for t in _order(x.shape[0], reverse):
        h = rnn_step_graph(x[t], h, w_ih, w_hh, b_ih, b_hh, nonlinearity)
        seq.append(h)
    return _in_time_order(seq, reverse), h


class _LayerOp(Op):
    """What the three layers share: the output sequence is kept (backward reads it as the previous states)."""

    saves_output = True
    #: backpropagation through time on Tensors, from the outputs' gradients (each layer defines it)
    _graph_backward: Callable[..., tuple[Any, ...]]

    def backward(self, *grads: Tensor | None) -> tuple[Any, ...]:
        if not STATE.enabled:  # anomaly mode, first order: the kernels
            out = self.backward_arrays(*[None if g is None else g._data for g in grads])
            return tuple(None if a is None else Tensor._make(a, self.backend) for a in out)
        return self._graph_backward(*grads)

    def _needs(self, n: int) -> tuple[bool, ...]:
        return tuple(self._req(i) for i in range(n))

    def _weight_grads(self, dzs: list[Tensor], xs: Tensor, i_w: int, i_b: int) -> tuple[Tensor | None, Any]:
        """``(gw, gb)`` summed over the steps (``dzs`` in time order) for ``z_t = xs_t w^T + b``."""
        dz = stack(dzs, 0).flatten(0, 1)
        gw = dz.mT @ xs.flatten(0, 1) if self._req(i_w) else None
        return gw, (dz.sum(0) if self._req(i_b) else None)


def _grad_at(gout: Tensor | None, gh: Tensor | None, t: int) -> Tensor | None:
    """The gradient reaching the state after step ``t``: from the output sequence and from the next step."""
    if gout is None:
        return gh
    return gout[t] if gh is None else gout[t] + gh


class LSTMLayer(_LayerOp):
    """``(out, h_T, c_T)`` from ``(x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, reverse)``."""

    def forward(
        self, x: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, w_hr: Any, reverse: bool
    ) -> tuple[Any, Any, Any]:
        out, h, c, self.saved = self.backend.lstm_layer(x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, reverse)
        self.keep(out)
        return out, h, c

    def backward_arrays(self, gout: Any, gh: Any, gc: Any) -> tuple[Any, ...]:
        ins = self.inputs or ()
        x, h0, _, w_ih, w_hh = (t._data for t in ins[:5])
        w_hr = None if ins[7] is None else ins[7]._data
        grads = self.backend.lstm_layer_backward(
            gout, gh, gc, self.saved, x, h0, w_ih, w_hh, w_hr, self.out_array(), ins[8], self._needs(7)
        )
        return (*grads, None)

    def _graph_backward(self, gout: Tensor | None, gh: Tensor | None, gc: Tensor | None) -> tuple[Any, ...]:
        x, h, c, w_ih, w_hh, b_ih, b_hh, w_hr, reverse = self.inputs  # type: ignore[misc]
        steps = x.shape[0]
        hs, hpre = [], []  # the state before each step, and (with a projection) h before projecting
        cs = []
        for t in _order(steps, reverse):  # the forward again, as a graph of the inputs
            hs.append(h)
            cs.append(c)
            h, c = lstm_step_graph(x[t], h, c, w_ih, w_hh, b_ih, b_hh)
            if w_hr is not None:
                hpre.append(h)
                h = h @ w_hr.mT
        dzs: list[Any] = [None] * steps
        gxs, ghr = [], None
        for k, t in reversed(list(enumerate(_order(steps, reverse)))):
            g = _grad_at(gout, gh, t)
            if w_hr is not None and g is not None:
                part = g.mT @ hpre[k]
                ghr = part if ghr is None else ghr + part
                g = g @ w_hr
            dz, gc = lstm_step_dz(x[t], hs[k], cs[k], w_ih, w_hh, b_ih, b_hh, g, gc)
            dzs[t] = dz
            gh = dz @ w_hh
            gxs.append(dz @ w_ih)
        prev = _in_time_order(hs, reverse)
        gw_ih, gb = self._weight_grads(dzs, x, 3, 5)
        gw_hh, gb_hh = self._weight_grads(dzs, prev, 4, 6)
        gx = _in_time_order(gxs[::-1], reverse) if self._req(0) else None
        return gx, gh, gc, gw_ih, gw_hh, gb, gb_hh, ghr, None


class GRULayer(_LayerOp):
    """``(out, h_T)`` from ``(x, h0, w_ih, w_hh, b_ih, b_hh, reverse)``."""

    def forward(self, x: Any, h0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, reverse: bool) -> tuple[Any, Any]:
        out, h, self.saved = self.backend.gru_layer(x, h0, w_ih, w_hh, b_ih, b_hh, reverse)
        self.keep(out)
        return out, h

    def backward_arrays(self, gout: Any, gh: Any) -> tuple[Any, ...]:
        ins = self.inputs or ()
        x, h0, w_ih, w_hh = (t._data for t in ins[:4])
        grads = self.backend.gru_layer_backward(
            gout, gh, self.saved, x, h0, w_ih, w_hh, self.out_array(), ins[6], self._needs(6)
        )
        return (*grads, None)

    def _graph_backward(self, gout: Tensor | None, gh: Tensor | None) -> tuple[Any, ...]:
        x, h, w_ih, w_hh, b_ih, b_hh, reverse = self.inputs  # type: ignore[misc]
        steps = x.shape[0]
        hs = []
        for t in _order(steps, reverse):
            hs.append(h)
            h = gru_step_graph(x[t], h, w_ih, w_hh, b_ih, b_hh)
        dxs: list[Any] = [None] * steps
        dhs: list[Any] = [None] * steps
        gxs = []
        for k, t in reversed(list(enumerate(_order(steps, reverse)))):
            g = _grad_at(gout, gh, t)
            dx, dh, direct = gru_step_dz(x[t], hs[k], w_ih, w_hh, b_ih, b_hh, g if g is not None else hs[k] * 0)
            dxs[t], dhs[t] = dx, dh
            gh = direct + dh @ w_hh
            gxs.append(dx @ w_ih)
        prev = _in_time_order(hs, reverse)
        gw_ih, gb_ih = self._weight_grads(dxs, x, 2, 4)
        gw_hh, gb_hh = self._weight_grads(dhs, prev, 3, 5)
        gx = _in_time_order(gxs[::-1], reverse) if self._req(0) else None
        return gx, gh, gw_ih, gw_hh, gb_ih, gb_hh, None


class RNNLayer(_LayerOp):
    """``(out, h_T)`` from ``(x, h0, w_ih, w_hh, b_ih, b_hh, nonlinearity, reverse)``."""

    def forward(
        self, x: Any, h0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, nonlinearity: str, reverse: bool
    ) -> tuple[Any, Any]:
        out, h, _ = self.backend.rnn_layer(x, h0, w_ih, w_hh, b_ih, b_hh, nonlinearity, reverse)
        self.keep(out)
        return out, h

    def backward_arrays(self, gout: Any, gh: Any) -> tuple[Any, ...]:
        ins = self.inputs or ()
        x, h0, w_ih, w_hh = (t._data for t in ins[:4])
        grads = self.backend.rnn_layer_backward(
            gout, gh, x, h0, w_ih, w_hh, self.out_array(), ins[6], ins[7], self._needs(6)
        )
        return (*grads, None, None)

    def _graph_backward(self, gout: Tensor | None, gh: Tensor | None) -> tuple[Any, ...]:
        x, h, w_ih, w_hh, b_ih, b_hh, nonlinearity, reverse = self.inputs  # type: ignore[misc]
        steps = x.shape[0]
        hs, outs = [], []
        for t in _order(steps, reverse):
            hs.append(h)
            h = rnn_step_graph(x[t], h, w_ih, w_hh, b_ih, b_hh, nonlinearity)
            outs.append(h)
        dzs: list[Any] = [None] * steps
        gxs = []
        for k, t in reversed(list(enumerate(_order(steps, reverse)))):
            g = _grad_at(gout, gh, t)
            dz = rnn_step_dz(outs[k], g if g is not None else outs[k] * 0, nonlinearity)
            dzs[t] = dz
            gh = dz @ w_hh
            gxs.append(dz @ w_ih)
        prev = _in_time_order(hs, reverse)
        gw_ih, gb_ih = self._weight_grads(dzs, x, 2, 4)
        gw_hh, gb_hh = self._weight_grads(dzs, prev, 3, 5)
        gx = _in_time_order(gxs[::-1], reverse) if self._req(0) else None
        return gx, gh, gw_ih, gw_hh, gb_ih, gb_hh, None, None


def lstm_layer(
    x: Tensor, h: Tensor, c: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None,
    w_hr: Tensor | None, reverse: bool,
) -> tuple[Tensor, Tensor, Tensor]:  # fmt: skip
    """One LSTM layer in one direction over ``x`` (T, N, I): ``(out, h_T, c_T)`` (one graph node)."""
    if x.shape[0] and _fusable(x, h, c, w_ih, w_hh, b_ih, b_hh, w_hr):
        return LSTMLayer.apply(x, h, c, w_ih, w_hh, b_ih, b_hh, w_hr, reverse)  # type: ignore[return-value]
    return lstm_layer_graph(x, h, c, w_ih, w_hh, b_ih, b_hh, w_hr, reverse)


def gru_layer(
    x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None, reverse: bool
) -> tuple[Tensor, Tensor]:
    """One GRU layer in one direction over ``x`` (T, N, I): ``(out, h_T)`` (one graph node)."""
    if x.shape[0] and _fusable(x, h, w_ih, w_hh, b_ih, b_hh):
        return GRULayer.apply(x, h, w_ih, w_hh, b_ih, b_hh, reverse)  # type: ignore[return-value]
    return gru_layer_graph(x, h, w_ih, w_hh, b_ih, b_hh, reverse)


def rnn_layer(
    x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None, nonlinearity: str,
    reverse: bool,
) -> tuple[Tensor, Tensor]:  # fmt: skip
    """One Elman layer in one direction over ``x`` (T, N, I): ``(out, h_T)`` (one graph node)."""
    if x.shape[0] and _fusable(x, h, w_ih, w_hh, b_ih, b_hh):
        return RNNLayer.apply(x, h, w_ih, w_hh, b_ih, b_hh, nonlinearity, reverse)  # type: ignore[return-value]
    return rnn_layer_graph(x, h, w_ih, w_hh, b_ih, b_hh, nonlinearity, reverse)
