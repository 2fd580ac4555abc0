"""A PNNX graph as an Ember ``Module``: the op table, topological order, and the interpreter."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from .._creation import as_tensor
from .._device import get_default_device
from .._errors import EmberError, OutOfRangeError, ShapeError
from ..nn import Module, Param
from ..nn.init import skip_init
from ._expression import compile_expression, parse_expression
from ._functional import BATCH_SHAPED, CREATES, FUNCTION_OPS, LIST_INPUT
from ._nn import NN_OPS
from ._reader import Graph, Operator, PnnxFormatError

__all__ = ["PnnxModule", "UnsupportedOperatorError", "SUPPORTED_TYPES", "topological_order"]

STRUCTURAL = ("pnnx.Input", "pnnx.Output", "pnnx.Expression")

#: Every operator type the loader understands.
SUPPORTED_TYPES: tuple[str, ...] = tuple(sorted({*NN_OPS, *FUNCTION_OPS, *STRUCTURAL}))

#: Attribute consumers bound under these keys make the attribute a trainable parameter (else a buffer).
_WEIGHT_KEYS = frozenset({"weight", "bias"})


class UnsupportedOperatorError(EmberError, NotImplementedError):
    """A PNNX operator type that Ember has no converter for."""


def topological_order(graph: Graph) -> list[int]:
    """Operator indices so that each runs after the producers of its inputs (Kahn's algorithm, linear time).

    File order is kept where it is already valid. An operand that no operator produces, one produced
    twice, or a cycle is refused with the line concerned.
    """
    ops = graph.operators
    producer: dict[str, int] = {}
    for i, op in enumerate(ops):
        for out in op.outputs:
            if out in producer:
                raise PnnxFormatError(f"{graph.path}:{op.line}: operand {out!r} is produced twice "
                                      f"(first at line {ops[producer[out]].line})")  # fmt: skip
            producer[out] = i
    indegree = [0] * len(ops)
    consumers: list[list[int]] = [[] for _ in ops]
    for i, op in enumerate(ops):
        for name in op.inputs:
            p = producer.get(name)
            if p is None:
                raise PnnxFormatError(f"{graph.path}:{op.line}: operator {op.name!r} reads operand {name!r}, "
                                      "which no operator produces")  # fmt: skip
            indegree[i] += 1
            consumers[p].append(i)
    ready = deque(i for i, d in enumerate(indegree) if d == 0)
    order: list[int] = []
    while ready:
        i = ready.popleft()
        order.append(i)
        for c in consumers[i]:
            indegree[c] -= 1
            if indegree[c] == 0:
                ready.append(c)
    if len(order) != len(ops):
        stuck = next(op for i, op in enumerate(ops) if indegree[i] > 0)
        raise PnnxFormatError(f"{graph.path}:{stuck.line}: the graph has a cycle through operator {stuck.name!r}")
    return order


def _module_name(name: str, taken: set[str]) -> str:
    base = re.sub(r"\W", "_", name) or "op"
    out, k = base, 1
    while out in taken:
        out, k = f"{base}_{k}", k + 1
    taken.add(out)
    return out


class _Step:
    """One operator ready to run: what to call, which slots feed it and which it fills."""

    __slots__ = ("creates", "expr", "fn", "kw", "list_input", "op", "outs", "pos", "static")

    def __init__(self, op: Operator, fn: Callable[..., Any]) -> None:
        self.op, self.fn = op, fn
        self.pos: list[int] = []
        self.kw: list[tuple[str, int]] = []
        self.static: dict[str, Any] = {}
        self.outs: list[int] = []
        self.list_input = False
        self.expr = False
        self.creates = False


def _flatten(values: Any, out: list[Any]) -> list[Any]:
    for v in values:
        if isinstance(v, (tuple, list)):
            _flatten(v, out)
        else:
            out.append(v)
    return out


class PnnxModule(Module):
    """A loaded PNNX graph. Call it with the inputs in ``pnnx.Input`` order.

    Operators that hold weights are sub-modules named after their PNNX operator (dots become ``_``),
    so ``state_dict()`` has keys like ``convbn2d_0.weight``; graph constants (``pnnx.Attribute``)
    are buffers, or parameters when an operator consumes them as its ``weight``/``bias``.
    """

    def __init__(self, graph: Graph, weights: dict[str, np.ndarray]) -> None:
        super().__init__()
        self.path = graph.path
        unsupported = [op for op in graph.operators if op.type not in SUPPORTED_TYPES]
        if unsupported:
            op = unsupported[0]
            raise UnsupportedOperatorError(
                f"{graph.path}:{op.line}: unsupported PNNX operator {op.type!r} ({op.name!r}); "
                f"supported types: {', '.join(SUPPORTED_TYPES)}"
            )
        order = topological_order(graph)
        slots: dict[str, int] = {}
        for op in graph.operators:
            for o in op.outputs:
                slots[o] = len(slots)
        keyed: dict[str, set[str]] = {}
        for op in graph.operators:
            for idx, key in op.input_keys.items():
                keyed.setdefault(op.inputs[idx], set()).add(key)
        taken: set[str] = set()
        self._steps: list[_Step] = []
        self._inputs: list[int] = []
        self._outputs: list[int] = []
        for i in order:
            op = graph.operators[i]
            where = f"{graph.path}:{op.line}: {op.type} {op.name!r}"
            if op.type == "pnnx.Input":
                self._inputs.extend(slots[o] for o in op.outputs)
                continue
            if op.type == "pnnx.Output":
                self._outputs.extend(slots[o] for o in op.inputs)
                continue
            step = self._build(op, where, weights, taken, keyed)
            step.outs = [slots[o] for o in op.outputs]
            for idx, name in enumerate(op.inputs):
                bound = op.input_keys.get(idx)
                if bound and not step.expr and op.type not in NN_OPS:
                    step.kw.append((bound, slots[name]))
                else:
                    step.pos.append(slots[name])
            self._steps.append(step)
        self._slot_count = len(slots)
        # free each intermediate value after its last use
        last: dict[int, int] = {}
        for k, step in enumerate(self._steps):
            for s in step.pos + [s for _, s in step.kw]:
                last[s] = k
        keep = set(self._outputs)
        self._frees: list[list[int]] = [[] for _ in self._steps]
        for s, k in last.items():
            if s not in keep:
                self._frees[k].append(s)

    def _build(self, op: Operator, where: str, weights: dict[str, np.ndarray], taken: set[str],
               keyed: dict[str, set[str]]) -> _Step:  # fmt: skip
        if op.type == "pnnx.Expression":
            text = op.params.get("expr")
            if not isinstance(text, str):
                raise PnnxFormatError(f"{where}: expected an expr=... parameter")
            try:
                step = _Step(op, compile_expression(parse_expression(text), len(op.inputs)))
            except PnnxFormatError as e:
                raise PnnxFormatError(f"{where}: {e}") from None
            step.expr = True
            return step
        if op.type in FUNCTION_OPS:
            step = _Step(op, FUNCTION_OPS[op.type])
            step.static = dict(op.params)
            step.list_input = op.type in LIST_INPUT
            step.creates = op.type in CREATES
            if op.type in BATCH_SHAPED and op.inputs and ("shape" in op.params or "sizes" in op.params):
                traced = op.shapes.get(op.inputs[0])
                if traced and traced[0] and traced[0][0] > 0:
                    step.static["traced_batch"] = traced[0][0]
            return step
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
            old = module._params.get(key) if hasattr(module, "_params") else None
            if not isinstance(old, Param):
                raise PnnxFormatError(f"{where}: {op.type} has no parameter or buffer {key!r} for entry {entry!r}")
            if tuple(old.shape) != tuple(arr.shape):
                raise PnnxFormatError(f"{where}: entry {entry!r} has shape {tuple(arr.shape)}, {op.type} built from "
                                      f"the line's parameters expects {tuple(old.shape)}")  # fmt: skip
            setattr(module, key, Param(as_tensor(arr, device=old.device), is_buffer=old.is_buffer))
        given = set(op.attrs)
        for key, p in getattr(module, "_params", {}).items():
            if isinstance(p, Param) and not p.is_buffer and key not in given:
                raise PnnxFormatError(f"{where}: {op.type} has parameter {key!r} but the line gives no @{key}")
        module.eval()
        self.register_module(_module_name(op.name, taken), module)
        return _Step(op, module)

    @property
    def num_inputs(self) -> int:
        return len(self._inputs)

    def forward(self, *inputs: Any) -> Any:
        if len(inputs) != len(self._inputs):
            raise TypeError(f"{self.path}: the model takes {len(self._inputs)} input(s) (pnnx.Input), "
                            f"got {len(inputs)}")  # fmt: skip
        env: list[Any] = [None] * self._slot_count
        for s, x in zip(self._inputs, inputs):
            env[s] = x
        device = getattr(inputs[0], "device", None) if inputs else None
        for step, frees in zip(self._steps, self._frees):
            args = [env[s] for s in step.pos]
            kw = {k: env[s] for k, s in step.kw}
            if step.creates:
                kw["device"] = device
            try:
                if step.expr:
                    out = step.fn(args)
                elif step.list_input:
                    out = step.fn(args, **step.static, **kw)
                else:
                    out = step.fn(*args, **step.static, **kw)
            except (EmberError, ValueError, TypeError, IndexError) as e:
                raise self._run_error(step, [env[s] for s in step.pos] + [env[s] for _, s in step.kw], e) from e
            if len(step.outs) == 1:
                env[step.outs[0]] = out
            else:
                if not isinstance(out, (tuple, list)) or len(out) != len(step.outs):
                    n = len(out) if isinstance(out, (tuple, list)) else 1
                    raise ShapeError(f"{self.path}:{step.op.line}: {step.op.type} {step.op.name!r} gave {n} "
                                     f"outputs, the graph expects {len(step.outs)}")  # fmt: skip
                for s, v in zip(step.outs, out):
                    env[s] = v
            for s in frees:
                env[s] = None
        result = _flatten([env[s] for s in self._outputs], [])
        return result[0] if len(result) == 1 else tuple(result)

    def _run_error(self, step: _Step, args: list[Any], e: Exception) -> Exception:
        op = step.op
        got = [tuple(a.shape) if hasattr(a, "shape") else a for a in args]
        traced = [op.shapes[n][0] for n in op.inputs if n in op.shapes]
        msg = (f"{self.path}:{op.line}: operator {op.name!r} ({op.type}) failed on input shapes {got}"
               + (f" (exported with {traced})" if traced else "") + f": {e}")  # fmt: skip
        if isinstance(e, EmberError):
            try:
                return type(e)(msg)
            except TypeError:
                pass
        if isinstance(e, IndexError):
            return OutOfRangeError(msg)
        if isinstance(e, TypeError):
            return TypeError(msg)
        return ShapeError(msg)  # NumPy reports shape mismatches as ValueError

    def extra_repr(self) -> str:
        return f"{self.path!r}, {len(self._steps)} operators"
