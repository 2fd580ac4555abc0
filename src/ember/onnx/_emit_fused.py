"""Export of the fused recurrent operators (``nn/_rnn_ops.py``, ``nn/_rnn_layers.py``): each is written as
its reference graph of ordinary operators, traced again from the call's own arguments and emitted with the
ordinary emitters (the graph that exporting ``nn.LSTM`` gave before the operators were fused). Dynamic axes
follow from tracing the reference on the second trace's arguments too, as ``export`` does for the model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ..autograd._grad_mode import no_grad
from ..nn import _rnn_layers, _rnn_ops
from ._export import ExportError, GraphBuilder, _dynamic_dims, _flat
from ._trace import Call, trace

__all__ = ["FUSED"]


def _traced(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[list[Call], list[Any]]:
    with no_grad(), trace() as calls:
        out = fn(*args)
    return calls, _flat(out)


def _via_reference(fn: Callable[..., Any]) -> Callable[[GraphBuilder, Call], list[str]]:
    def emit(g: GraphBuilder, c: Call) -> list[str]:
        from ._emit import EMITTERS

        calls, outs = _traced(fn, c.args)
        if any(isinstance(a, Tensor) and id(a) in g.second for a in c.args):
            second = tuple(g.second.get(id(a), a) if isinstance(a, Tensor) else a for a in c.args)
            calls2, outs2 = _traced(fn, second)
            dyn, pair = _dynamic_dims(calls, calls2, c.op)
            g.dynamic.update(dyn)
            g.second.update(pair)
            for x, y in zip(outs, outs2, strict=True):
                g.dynamic[id(x)] = {d for d, (p, q) in enumerate(zip(x.shape, y.shape)) if p != q}
                g.second[id(x)] = y
        for call in calls:
            emitter = EMITTERS.get(call.op)
            if emitter is None:  # pragma: no cover - the references use exported operators only
                raise ExportError(f"ember.onnx.export: {c.op}'s reference uses {call.op}, which has no ONNX form")
            for t, n in zip(call.outputs, emitter(g, call)):
                g.bind(t, n)
        return [g.value(o) for o in outs]

    return emit


#: fused operator class name -> emitter
FUSED = {
    "LSTMCellStep": _via_reference(_rnn_ops.lstm_step_graph),
    "GRUCellStep": _via_reference(_rnn_ops.gru_step_graph),
    "RNNCellStep": _via_reference(_rnn_ops.rnn_step_graph),
    "LSTMLayer": _via_reference(_rnn_layers.lstm_layer_graph),
    "GRULayer": _via_reference(_rnn_layers.gru_layer_graph),
    "RNNLayer": _via_reference(_rnn_layers.rnn_layer_graph),
}
