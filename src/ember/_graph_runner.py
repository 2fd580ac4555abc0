"""One interpreter for imported graphs (``ember.pnnx``, ``ember.onnx``): order, value slots, lifetimes, errors.

A reader turns its file into :class:`Node` s, each with a function ``fn(args, device)`` that computes
the node's outputs from its input values with Ember ops. :class:`GraphRunner` orders the nodes (Kahn's
algorithm), gives every value a slot, frees each intermediate after its last use, and wraps a node's
failure in an error that names the node, its type and the shapes it got. Nothing here knows a file format.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._errors import EmberError, OutOfRangeError, ShapeError

__all__ = ["GraphRunner", "Node", "topological_order"]


@dataclass(eq=False)
class Node:
    """One operator of an imported graph.

    ``fn(args, device)`` gets the input values in order (``None`` for an omitted optional input, named
    ``""``) and the device of the run's first input, and returns the value of its one output, or a
    tuple or list with one value per output. ``where`` locates the node in its file for messages
    (``model.pnnx.param:12``); ``note`` is added to run-time errors (e.g. the shapes it was exported with).
    """

    type: str
    name: str
    inputs: list[str]
    outputs: list[str]
    fn: Callable[[list[Any], Any], Any] | None = None
    where: str = ""
    note: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


def topological_order(
    nodes: Sequence[Node], available: Iterable[str] = (), error: Callable[[str], Exception] = ValueError
) -> list[int]:
    """Node indices so that each runs after the producers of its inputs (Kahn's algorithm, linear time).

    ``available`` names the values given before any node runs (graph inputs, constants, outer scopes).
    The given order is kept where it is already valid. A value that nothing produces, one produced twice,
    or a cycle is refused (``error(message)``) naming the node concerned.
    """
    given = set(available)
    producer: dict[str, int] = {}
    for i, node in enumerate(nodes):
        for out in node.outputs:
            if not out:
                continue
            if out in producer or out in given:
                first = f" (first at {nodes[producer[out]].where})" if out in producer else " (it is a graph input)"
                raise error(f"{node.where}: operand {out!r} is produced twice{first}")
            producer[out] = i
    indegree = [0] * len(nodes)
    consumers: list[list[int]] = [[] for _ in nodes]
    for i, node in enumerate(nodes):
        for name in node.inputs:
            if not name or name in given:
                continue
            p = producer.get(name)
            if p is None:
                raise error(f"{node.where}: operator {node.name!r} reads operand {name!r}, which no operator produces")
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
    if len(order) != len(nodes):
        stuck = next(node for i, node in enumerate(nodes) if indegree[i] > 0)
        raise error(f"{stuck.where}: the graph has a cycle through operator {stuck.name!r}")
    return order


class GraphRunner:
    """Run ``nodes`` from the values named ``inputs`` to the values named ``outputs``.

    Built once (ordering, slots, lifetimes); :meth:`run` is then a flat loop over the nodes. Structural
    problems raise ``error(message)``; a node that fails at run time raises an Ember error (a
    ``RuntimeError`` and a ``ValueError``/``TypeError``/``IndexError``) naming the node and its input shapes.
    """

    def __init__(self, nodes: Sequence[Node], inputs: Sequence[str], outputs: Sequence[str], *,
                 error: Callable[[str], Exception] = ValueError, where: str = "") -> None:  # fmt: skip
        order = topological_order(nodes, inputs, error)
        slots: dict[str, int] = {"": 0}  # slot 0 stays None: an omitted optional input
        for name in inputs:
            slots.setdefault(name, len(slots))
        for node in nodes:
            for o in node.outputs:
                if o:
                    slots[o] = len(slots)
        for name in outputs:
            if name not in slots:
                raise error(f"{where}: graph output {name!r} is neither an input nor produced by any operator")
        self.nodes = [nodes[i] for i in order]
        self._ins = [[slots[n] for n in node.inputs] for node in self.nodes]
        self._outs = [[slots[o] if o else -1 for o in node.outputs] for node in self.nodes]
        self._inputs = [slots[n] for n in inputs]
        self._outputs = [slots[n] for n in outputs]
        self._slot_count = len(slots)
        # free each intermediate value after its last use
        last: dict[int, int] = {}
        for k, ins in enumerate(self._ins):
            for s in ins:
                last[s] = k
        keep = {0, *self._outputs}
        self._frees: list[list[int]] = [[] for _ in self.nodes]
        for s, k in last.items():
            if s not in keep:
                self._frees[k].append(s)

    @property
    def num_inputs(self) -> int:
        return len(self._inputs)

    def run(self, values: Sequence[Any], device: Any = None) -> list[Any]:
        """The output values, given one value per input (in the order the runner was built with)."""
        env: list[Any] = [None] * self._slot_count
        for s, x in zip(self._inputs, values, strict=True):
            env[s] = x
        for node, ins, outs, frees in zip(self.nodes, self._ins, self._outs, self._frees):
            args = [env[s] for s in ins]
            try:
                out = node.fn(args, device)  # type: ignore[misc]
            except (EmberError, ValueError, TypeError, IndexError) as e:
                raise run_error(node, args, e) from e
            if len(outs) == 1:
                if outs[0] >= 0:
                    env[outs[0]] = out
            else:
                if not isinstance(out, (tuple, list)) or len(out) != len(outs):
                    n = len(out) if isinstance(out, (tuple, list)) else 1
                    raise ShapeError(f"{node.where}: {node.type} {node.name!r} gave {n} outputs, the graph "
                                     f"expects {len(outs)}")  # fmt: skip
                for s, v in zip(outs, out):
                    if s >= 0:
                        env[s] = v
            for s in frees:
                env[s] = None
        return [env[s] for s in self._outputs]


def _describe(a: Any) -> Any:
    if hasattr(a, "shape") and not isinstance(a, (int, float)):
        return tuple(a.shape)
    if isinstance(a, list):
        return [_describe(v) for v in a]
    return a


def run_error(node: Node, args: list[Any], e: Exception) -> Exception:
    """``e`` retold with the node's location, name, type and input shapes, as a catchable Ember error."""
    msg = f"{node.where}: operator {node.name!r} ({node.type}) failed on input shapes {_describe(args)}{node.note}: {e}"
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
