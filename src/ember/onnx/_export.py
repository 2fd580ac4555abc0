"""``ember.onnx.export``: trace one forward pass of Ember operators and write it as an ONNX model.

The signature is ``torch.onnx.export``'s. Each traced operator becomes one ONNX node (or a few) through
the emitter table (``_emit.py``); parameters and buffers become initializers under their ``state_dict``
names, other tensors the forward pass reads become constants. With ``dynamic_axes`` the model is traced
twice, the named dims one larger the second time: a dim that differs between the traces is symbolic, and
shape arguments that differ are written relative to the input's shape (``0``/``-1`` in ``Reshape``,
``1`` in ``Expand``); anything else that depends on a dynamic dim is refused, naming the operator.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import ops
from .._errors import EmberError
from .._tensor import Tensor
from ..autograd import no_grad
from ._dtypes import onnx_type
from ._trace import Call, trace

__all__ = ["DEFAULT_OPSET", "ExportError", "export", "host"]

#: the opset written when ``opset_version`` is not given (what torch.onnx.export writes by default)
DEFAULT_OPSET = 18


class ExportError(EmberError, NotImplementedError):
    """An operator or a dynamic shape that cannot be written as ONNX; the message names it."""


def host(value: Any) -> Any:
    """``value`` readable by NumPy: a Tensor or a backend's device array (CuPy, torch on CUDA) copied to the host;
    anything else as it is."""
    if isinstance(value, Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, np.ndarray | np.generic) or not hasattr(value, "shape"):
        return value
    from ..backends import backend_of

    try:
        be = backend_of(value)
    except EmberError:
        return value
    return be.to_numpy(value)


class GraphBuilder:
    """The ONNX graph under construction: value names, nodes, initializers (what emitters call)."""

    def __init__(self, opset: int, dynamic: dict[int, set[int]], second: dict[int, Any]) -> None:
        self.opset = opset
        self.nodes: list[Any] = []
        self.inits: dict[str, np.ndarray] = {}
        self.names: dict[int, str] = {}  # id(tensor) or id(array) -> value name
        self.keep: list[Any] = []  # what the ids above belong to (alive until the end)
        self.dynamic = dynamic  # id(tensor) -> its dynamic dims
        self.second = second  # id(tensor) -> the same value in the second trace
        self.inputs: list[tuple[str, Any, Any]] = []  # graph inputs: (name, first-trace value, second-trace value)
        self.count = 0

    def fresh(self, hint: str) -> str:
        self.count += 1
        return f"{hint}_{self.count}"

    def bind(self, t: Any, name: str) -> None:
        self.names[id(t)] = name
        if isinstance(t, Tensor):
            self.names[id(t._data)] = name
        self.keep.append(t)

    def const(self, value: Any, dtype: Any = None, hint: str = "const") -> str:
        arr = np.asarray(host(value), dtype=dtype)
        name = self.fresh(hint)
        self.inits[name] = arr
        return name

    def ints(self, values: Sequence[int], hint: str = "shape") -> str:
        return self.const(np.asarray(list(values), dtype=np.int64), hint=hint)

    def value(self, v: Any, like: Any = None) -> str:
        """The name of an operator's argument: a traced value, or a new constant (scalars take ``like``'s dtype)."""
        if v is None:
            return ""
        name = self.names.get(id(v))
        if name is None and isinstance(v, Tensor):  # another Tensor object over the same array (an in-place
            name = self.names.get(id(v._data))  # write's alias of its target: the target's value at that point)
        if name is not None:
            return name
        if hasattr(v, "shape") and self.dynamic.get(id(v)):
            return self.filled(v)
        if isinstance(v, Tensor):
            name = self.const(v.detach().cpu().numpy(), hint="const")
            self.bind(v, name)
            return name
        if isinstance(v, (bool, int, float)) and isinstance(like, Tensor):
            return self.const(v, dtype=like.detach().cpu().numpy().dtype, hint="scalar")
        return self.const(v, hint="const")

    def filled(self, v: Any) -> str:
        """A constant made inside forward whose shape follows a dynamic axis (``zeros(1, batch, h)``): when all
        its values are equal, ``ConstantOfShape`` of a shape read from the graph inputs' dynamic dims."""
        from onnx import numpy_helper

        arr = np.asarray(host(v))
        other = self.second.get(id(v))
        flat = arr.reshape(-1)
        if other is None or not flat.size or not (flat == flat[0]).all():
            raise ExportError(f"a tensor of shape {tuple(arr.shape)} made inside forward (not from the inputs) depends "
                              "on a dynamic axis; build it from the input instead")  # fmt: skip
        parts = []
        for d, size in enumerate(arr.shape):
            if d not in self.dynamic[id(v)]:
                parts.append(self.ints([size]))
                continue
            src = next(((n, k) for n, x, y in self.inputs for k in self.dynamic.get(id(x), ())
                        if x.shape[k] == size and y.shape[k] == other.shape[d]), None)  # fmt: skip
            if src is None:
                raise ExportError(f"a tensor of shape {tuple(arr.shape)} made inside forward has dim {d} following a "
                                  "dynamic axis that no graph input has")  # fmt: skip
            shape = self.node("Shape", [src[0]])[0]
            parts.append(self.node("Gather", [shape, self.ints([src[1]])], axis=0)[0])
        shape = self.node("Concat", parts, axis=0)[0]
        value = numpy_helper.from_array(flat[:1].copy(), "value")
        return self.node("ConstantOfShape", [shape], value=value)[0]

    def node(self, op: str, inputs: Sequence[str], n_out: int = 1, **attrs: Any) -> list[str]:
        from onnx import helper

        outs = [self.fresh(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, list(inputs), outs, name=self.fresh(op), **attrs))
        return outs

    def dyn(self, t: Tensor) -> set[int]:
        """The dims of traced value ``t`` that follow a dynamic axis."""
        return self.dynamic.get(id(t), set())


def _grown(x: Tensor, axes: Sequence[int]) -> Tensor:
    """``x`` one larger along each of ``axes`` (the first slice repeated: valid values, e.g. token ids)."""
    for d in axes:
        x = ops.cat([x, ops.narrow(x, d, 0, 1)], d)
    return x


def _run(model: Any, args: tuple[Any, ...]) -> tuple[list[Call], list[Any]]:
    with no_grad(), trace() as calls:
        out = model(*args)
    return calls, _flat(out)


def _flat(out: Any) -> list[Any]:
    """A model's outputs in order, nested tuples/lists flattened (an LSTM's ``(y, (h, c))``)."""
    if isinstance(out, (tuple, list)):
        return [v for o in out for v in _flat(o)]
    return [out]


def _dynamic_dims(first: list[Call], second: list[Call], where: str) -> tuple[dict[int, set[int]], dict[int, Any]]:
    """Per traced output (by id): the dims that differ between the traces, and its counterpart."""
    if [c.op for c in first] != [c.op for c in second]:
        raise ExportError(f"{where}: the operators run depend on the size of a dynamic axis (traced "
                          f"{len(first)} then {len(second)} operators); export with static shapes")  # fmt: skip
    dyn: dict[int, set[int]] = {}
    pair: dict[int, Any] = {}
    for a, b in zip(first, second):
        for x, y in zip(a.outputs, b.outputs):
            dyn[id(x)] = {d for d, (p, q) in enumerate(zip(x.shape, y.shape)) if p != q}
            pair[id(x)] = y
        for x, y in zip(a.args, b.args):  # constants (tensors or arrays) that differ would be baked in wrongly
            if hasattr(x, "shape") and hasattr(y, "shape") and id(x) not in dyn:
                dyn[id(x)] = {d for d, (p, q) in enumerate(zip(x.shape, y.shape)) if p != q}
                pair[id(x)] = y
    return dyn, pair


def export(model: Any, args: Any, f: Any, *, input_names: Sequence[str] | None = None,
           output_names: Sequence[str] | None = None, dynamic_axes: dict[str, Any] | None = None,
           opset_version: int | None = None, **unused: Any) -> Any:  # fmt: skip
    """Write ``model`` run on ``args`` as an ONNX model to ``f`` (a path or a binary file object).

    Like ``torch.onnx.export``: ``args`` is a Tensor or a tuple of them; ``input_names`` / ``output_names``
    name the graph's values; ``dynamic_axes`` maps a name to ``{dim: "symbol"}`` (or a list of dims) to
    make those dims symbolic. The model is exported in eval mode. The file passes
    ``onnx.checker.check_model(full_check=True)``; the ``ModelProto`` is returned. An operator without an
    ONNX form raises ``ExportError`` naming it.
    """
    from ._emit import EMITTERS
    from ._emit_fused import FUSED
    from ._proto import require_onnx

    onnx = require_onnx()
    from onnx import helper

    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    opset = opset_version or DEFAULT_OPSET
    in_names = list(input_names or [f"input_{i}" for i in range(len(args))])
    axes = {k: (v if isinstance(v, dict) else {d: f"{k}_dim{d}" for d in v}) for k, v in (dynamic_axes or {}).items()}
    was_training = getattr(model, "training", False)
    if hasattr(model, "eval"):
        model.eval()
    try:
        calls, outs = _run(model, args)
        dyn: dict[int, set[int]] = {}
        pair: dict[int, Any] = {}
        grow = {i: sorted(int(d) for d in axes.get(n, {})) for i, n in enumerate(in_names[: len(args)])}
        if any(grow.values()):
            args2 = tuple(_grown(a, grow[i]) if grow[i] else a for i, a in enumerate(args))
            calls2, outs2 = _run(model, args2)
            dyn, pair = _dynamic_dims(calls, calls2, type(model).__name__)
            for a, b, i in zip(args, args2, range(len(args))):
                dyn[id(a)], pair[id(a)] = set(grow[i]), b
            outs2 = _flat(outs2)
            for x, y in zip(outs, outs2):
                dyn[id(x)] = {d for d, (p, q) in enumerate(zip(x.shape, y.shape)) if p != q}
    finally:
        if was_training and hasattr(model, "train"):
            model.train()
    g = GraphBuilder(opset, dyn, pair)
    graph_inputs = []
    for name, a in zip(in_names, args):
        g.bind(a, name)
        g.inputs.append((name, a, pair.get(id(a), a)))
        dims = [axes.get(name, {}).get(d, s) for d, s in enumerate(a.shape)]
        graph_inputs.append(helper.make_tensor_value_info(name, onnx_type(a.dtype), dims))
    if hasattr(model, "state_dict"):
        for key, p in model.state_dict(keep_vars=True).items():
            if id(p) not in g.names:
                g.bind(p, key)
                g.inits[key] = p.detach().cpu().numpy()
    for call in calls:
        emit = EMITTERS.get(call.op) or FUSED.get(call.op)
        if emit is None:
            raise ExportError(f"ember.onnx.export: operator {call.op} has no ONNX form yet (supported: "
                              f"{', '.join(sorted(EMITTERS))})")  # fmt: skip
        names = emit(g, call)
        for t, n in zip(call.outputs, names):
            g.bind(t, n)
    out_names = list(output_names or [f"output_{i}" for i in range(len(outs))])
    graph_outputs = []
    for i, (name, o) in enumerate(zip(out_names, outs)):
        src = g.value(o)
        g.nodes.append(helper.make_node("Identity", [src], [name], name=f"output_{i}"))
        sym = axes.get(name, {})
        dims = [sym.get(d, f"{name}_dim{d}") if d in g.dyn(o) else s for d, s in enumerate(o.shape)]
        graph_outputs.append(helper.make_tensor_value_info(name, onnx_type(o.dtype), dims))
    used = {i for n in g.nodes for i in n.input}
    inits = [onnx.numpy_helper.from_array(v, k) for k, v in g.inits.items() if k in used]
    graph = helper.make_graph(g.nodes, type(model).__name__, graph_inputs, graph_outputs, inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="ember",
                              producer_version=_version())  # fmt: skip
    proto.ir_version = min(proto.ir_version, 10)
    onnx.checker.check_model(proto, full_check=True)
    _write(proto, f)
    return proto


def _version() -> str:
    from .. import __version__

    return str(__version__)


def _write(proto: Any, f: Any) -> None:
    data = proto.SerializeToString()
    if isinstance(f, (str, os.PathLike)):
        path = Path(f)
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, path)  # atomic: a reader sees the old file or the whole new one
    elif isinstance(f, io.IOBase) or hasattr(f, "write"):
        f.write(data)
    else:
        raise TypeError(f"ember.onnx.export: f must be a path or a binary file object, got {type(f).__name__}")
