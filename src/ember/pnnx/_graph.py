"""A PNNX graph as an Ember ``Module``: the op table and building the graph runner (``ember._graph_runner``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from .._creation import as_tensor
from .._device import get_default_device
from .._errors import EmberError
from .._graph_runner import GraphRunner, Node
from .._graph_runner import topological_order as _order
from ..nn import Module, Param
from ..nn.init import skip_init
from ._expression import compile_expression, parse_expression
from ._functional import BATCH_SHAPED, CREATES, FUNCTION_OPS, LIST_INPUT
from ._nn import NN_OPS
from ._reader import Graph, Operator, PnnxFormatError

__all__ = ["PnnxModule", "UnsupportedOperatorError", "SUPPORTED_TYPES", "is_supported", "topological_order"]

STRUCTURAL = ("pnnx.Input", "pnnx.Output", "pnnx.Expression")

#: Every operator type the loader understands.
SUPPORTED_TYPES: tuple[str, ...] = tuple(sorted({*NN_OPS, *FUNCTION_OPS, *STRUCTURAL}))

#: Attribute consumers bound under these keys make the attribute a trainable parameter (else a buffer).
_WEIGHT_KEYS = frozenset({"weight", "bias"})


def is_supported(op_type: str) -> bool:
    """Whether the loader can run operators of ``op_type`` (the rule of ``_rule.py`` and its exceptions)."""
    return op_type in STRUCTURAL or op_type in NN_OPS or op_type in FUNCTION_OPS


def _ember_name(op_type: str) -> str:
    """What the rule looked for: ``nn.X`` -> ``ember.nn.X``, ``F.x`` -> ``ember.nn.functional.x``, ..."""
    for prefix, home in (("nn.", "ember.nn."), ("F.", "ember.nn.functional."), ("torch.", "ember."),
                         ("Tensor.", "ember.Tensor."), ("aten::", "ember.")):  # fmt: skip
        if op_type.startswith(prefix):
            return home + op_type[len(prefix) :]
    return f"converter for {op_type}"


class UnsupportedOperatorError(EmberError, NotImplementedError):
    """A PNNX operator type that Ember has no converter for."""


def topological_order(graph: Graph) -> list[int]:
    """Operator indices so that each runs after the producers of its inputs (Kahn's algorithm, linear time).

    File order is kept where it is already valid. An operand that no operator produces, one produced
    twice, or a cycle is refused with the line concerned.
    """
    return _order([_node(graph, op) for op in graph.operators], error=PnnxFormatError)


def _node(graph: Graph, op: Operator) -> Node:
    return Node(op.type, op.name, op.inputs, op.outputs, where=f"{graph.path}:{op.line}")


def _module_name(name: str, taken: set[str]) -> str:
    base = re.sub(r"\W", "_", name) or "op"
    out, k = base, 1
    while out in taken:
        out, k = f"{base}_{k}", k + 1
    taken.add(out)
    return out


def _flatten(values: Any, out: list[Any]) -> list[Any]:
    for v in values:
        if isinstance(v, (tuple, list)):
            _flatten(v, out)
        else:
            out.append(v)
    return out


def _module_outputs(out: Any, n: int) -> Any:
    """A module's result as the graph's ``n`` outputs: nested tuples flattened (``LSTM``'s ``(out, (h, c))``),
    and only the first ``n`` kept (pnnx drops the outputs nothing reads: ``MultiheadAttention``'s weights)."""
    if not isinstance(out, (tuple, list)):
        return out
    flat = _flatten(out, [])
    return flat[0] if n == 1 else tuple(flat[:n])


def _function_call(op: Operator, fn: Callable[..., Any], static: dict[str, Any]) -> Callable[[list[Any], Any], Any]:
    """The call of a function operator: inputs bound by ``$key`` as keywords, the others positionally
    (one list for ``torch.cat``-like operators), the line's parameters as keywords."""
    bound = [(idx, key) for idx, key in op.input_keys.items()]
    positional = [i for i in range(len(op.inputs)) if i not in op.input_keys]
    list_input, creates = op.type in LIST_INPUT, op.type in CREATES
    n_out = len(op.outputs)

    def call(args: list[Any], device: Any) -> Any:
        kw = {key: args[idx] for idx, key in bound}
        if creates:
            kw["device"] = device
        pos = [args[i] for i in positional]
        out = fn(pos, **static, **kw) if list_input else fn(*pos, **static, **kw)
        if hasattr(out, "_fields") and n_out < len(out):  # (values, indices) of which pnnx kept the values
            return out[0] if n_out == 1 else tuple(out[:n_out])
        return out

    return call


class PnnxModule(Module):
    """A loaded PNNX graph. Call it with the inputs in ``pnnx.Input`` order.

    Operators that hold weights are sub-modules named after their PNNX operator (dots become ``_``),
    so ``state_dict()`` has keys like ``convbn2d_0.weight``; graph constants (``pnnx.Attribute``)
    are buffers, or parameters when an operator consumes them as its ``weight``/``bias``.
    """

    def __init__(self, graph: Graph, weights: dict[str, np.ndarray]) -> None:
        super().__init__()
        self.path = graph.path
        unsupported = [op for op in graph.operators if not is_supported(op.type)]
        if unsupported:
            op = unsupported[0]
            raise UnsupportedOperatorError(
                f"{graph.path}:{op.line}: unsupported PNNX operator {op.type!r} ({op.name!r}): Ember has no "
                f"{_ember_name(op.type)} (ember.pnnx.SUPPORTED_TYPES lists the {len(SUPPORTED_TYPES)} types it runs)"
            )
        order = topological_order(graph)
        keyed: dict[str, set[str]] = {}
        for op in graph.operators:
            for idx, key in op.input_keys.items():
                keyed.setdefault(op.inputs[idx], set()).add(key)
        taken: set[str] = set()
        nodes: list[Node] = []
        inputs: list[str] = []
        outputs: list[str] = []
        for i in order:
            op = graph.operators[i]
            if op.type == "pnnx.Input":
                inputs.extend(op.outputs)
            elif op.type == "pnnx.Output":
                outputs.extend(op.inputs)
            else:
                node = _node(graph, op)
                node.fn = self._build(op, f"{node.where}: {op.type} {op.name!r}", weights, taken, keyed)
                traced = [op.shapes[n][0] for n in op.inputs if n in op.shapes]
                node.note = f" (exported with {traced})" if traced else ""
                nodes.append(node)
        self._runner = GraphRunner(nodes, inputs, outputs, error=PnnxFormatError, where=graph.path)

    def _build(self, op: Operator, where: str, weights: dict[str, np.ndarray], taken: set[str],
               keyed: dict[str, set[str]]) -> Callable[[list[Any], Any], Any]:  # fmt: skip
        if op.type == "pnnx.Expression":
            text = op.params.get("expr")
            if not isinstance(text, str):
                raise PnnxFormatError(f"{where}: expected an expr=... parameter")
            try:
                expr = compile_expression(parse_expression(text), len(op.inputs))
            except PnnxFormatError as e:
                raise PnnxFormatError(f"{where}: {e}") from None
            return lambda args, device: expr(args)
        if op.type in FUNCTION_OPS:
            static = dict(op.params)
            if op.type in BATCH_SHAPED and op.inputs and ("shape" in op.params or "sizes" in op.params):
                traced = op.shapes.get(op.inputs[0])
                if traced and traced[0] and traced[0][0] > 0:
                    static["traced_batch"] = traced[0][0]
            return _function_call(op, FUNCTION_OPS[op.type], static)
        try:
            with skip_init():
                module = NN_OPS[op.type](**op.params)
        except (TypeError, ValueError) as e:
            raise PnnxFormatError(f"{where}: cannot build from parameters {op.params}: {e}") from None
        for key, (shape, _) in op.attrs.items():
            entry = f"{op.name}.{key}"
            if entry not in weights:
                if 0 in shape or not shape:
                    continue
                raise PnnxFormatError(f"{where}: no weight entry {entry!r}")
            arr = weights[entry]
            if op.type == "pnnx.Attribute":
                trainable = bool(keyed.get(op.outputs[0], set()) & _WEIGHT_KEYS) and arr.dtype.kind == "f"
                data = as_tensor(arr, device=get_default_device())  # where the layers' parameters were made
                module.data = Param(data, requires_grad=trainable, is_buffer=not trainable)
                continue
            path, _, leaf = key.rpartition(".")  # ``out_proj.weight``: a sub-module's parameter
            try:
                owner = module.get_submodule(path) if path else module
            except (AttributeError, KeyError):
                owner = None
            old = owner._params.get(leaf) if owner is not None and hasattr(owner, "_params") else None
            if not isinstance(old, Param):
                raise PnnxFormatError(f"{where}: {op.type} has no parameter or buffer {key!r} for entry {entry!r}")
            if tuple(old.shape) != tuple(arr.shape):
                raise PnnxFormatError(f"{where}: entry {entry!r} has shape {tuple(arr.shape)}, {op.type} built from "
                                      f"the line's parameters expects {tuple(old.shape)}")  # fmt: skip
            setattr(owner, leaf, Param(as_tensor(arr, device=old.device), is_buffer=old.is_buffer))
        given = set(op.attrs)
        for key, p in module.named_parameters() if hasattr(module, "named_parameters") else ():
            if not p.is_buffer and key not in given:
                raise PnnxFormatError(f"{where}: {op.type} has parameter {key!r} but the line gives no @{key}")
        module.eval()
        self.register_module(_module_name(op.name, taken), module)
        n_out = len(op.outputs)
        return lambda args, device: _module_outputs(module(*args), n_out)

    @property
    def num_inputs(self) -> int:
        return self._runner.num_inputs

    def forward(self, *inputs: Any) -> Any:
        if len(inputs) != self._runner.num_inputs:
            raise TypeError(f"{self.path}: the model takes {self._runner.num_inputs} input(s) (pnnx.Input), "
                            f"got {len(inputs)}")  # fmt: skip
        device = getattr(inputs[0], "device", None) if inputs else None
        result = _flatten(self._runner.run(inputs, device), [])
        return result[0] if len(result) == 1 else tuple(result)

    def extra_repr(self) -> str:
        return f"{self.path!r}, {len(self._runner.nodes)} operators"
