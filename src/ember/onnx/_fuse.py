"""Inference fusion at import: ``Conv [-> BatchNormalization] [-> Add] [-> Relu]`` as one runner node.

A chain is fused when each intermediate value is read by the next node only and is not a graph output,
the batch norm is the inference form (running statistics) and the ``Add`` broadcasts (opset 7 on). The
fused node keeps both ways of running:

- **inference** (grad mode off, or no input requires grad): one convolution with the batch norm folded
  into its weight and bias (``w * s``, ``(b - mean) * s + beta`` with ``s = gamma / sqrt(var + eps)``,
  computed in float64), then the ``Add`` and the ``Relu`` done in place in the convolution's new output.
  The folded weights are cached and recomputed when a source tensor changes (another array, or its
  version counter moved: an optimizer step, an in-place write, ``load_state_dict``, ``.to``);
- **training** (a gradient is needed): the original converters one after the other, so every parameter,
  the batch norm's included, gets its gradient as without fusion.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from .._creation import zeros
from .._graph_runner import Node
from .._tensor import Tensor
from ..autograd import is_grad_enabled, no_grad
from ._ops_nn import conv

__all__ = ["FusedConv", "fuse"]


def _inference_bn(node: Node) -> bool:
    at = node.meta.get("attrs")
    if at is None or len(node.inputs) != 5 or len([o for o in node.outputs if o]) != 1 or node.outputs[0] == "":
        return False
    return not at.get("training_mode", 0) and not (at.opset < 9 and len(node.outputs) > 1)


def fuse(nodes: Sequence[Node], outputs: Sequence[str]) -> list[Node]:
    """``nodes`` with each fusable chain starting at a ``Conv`` replaced by one :class:`FusedConv` node."""
    uses = Counter(name for n in nodes for name in n.inputs if name)
    reader = {name: n for n in nodes for name in n.inputs if name}
    keep = set(outputs)

    def next_of(value: str, op_type: str) -> Node | None:
        n = reader.get(value)
        if n is None or uses[value] != 1 or value in keep or n.type != op_type or "attrs" not in n.meta:
            return None
        if id(n) in dropped:  # already in another chain (an Add of two convolutions)
            return None
        return n if len(n.outputs) == 1 and n.outputs[0] else None

    dropped: set[int] = set()
    fused: dict[int, Node] = {}
    for n in nodes:
        if n.type != "Conv" or "attrs" not in n.meta or len(n.outputs) != 1 or not n.outputs[0]:
            continue
        value = n.outputs[0]
        bn = next_of(value, "BatchNormalization")
        if bn is not None and (bn.inputs[0] != value or not _inference_bn(bn)):
            bn = None
        value = bn.outputs[0] if bn is not None else value
        add = next_of(value, "Add")
        if add is not None and (add.meta["attrs"].opset < 7 or len(add.inputs) != 2 or add.inputs[0] == add.inputs[1]):
            add = None
        value = add.outputs[0] if add is not None else value
        relu = next_of(value, "Relu")
        chain = [m for m in (bn, add, relu) if m is not None]
        if not chain:
            continue
        fused[id(n)] = _fused_node(n, bn, add, relu)
        dropped.update(id(m) for m in chain)
    return [fused.get(id(n), n) for n in nodes if id(n) not in dropped]


def _fused_node(conv_node: Node, bn: Node | None, add: Node | None, relu: Node | None) -> Node:
    chain = [m for m in (conv_node, bn, add, relu) if m is not None]
    ins = [*conv_node.inputs, *[""] * (3 - len(conv_node.inputs))]
    side = -1
    if bn is not None:
        ins += bn.inputs[1:]
    if add is not None:
        side = add.inputs.index((bn or conv_node).outputs[0])
        ins.append(add.inputs[1 - side])
    note = " (fused: " + " -> ".join(f"{m.type} {m.name!r}" for m in chain) + ")"
    node = Node("Conv", conv_node.name, ins, list(chain[-1].outputs), where=conv_node.where, note=note + conv_node.note)
    node.meta.update(conv_node.meta, fused=[m.name for m in chain])
    node.fn = FusedConv(conv_node, bn, add, side, relu)
    return node


class FusedConv:
    """The function of a fused node: inputs ``x, w, b`` (``None`` when omitted), then the batch norm's
    ``scale, bias, mean, var`` if any, then the ``Add``'s other operand if any."""

    def __init__(self, conv_node: Node, bn: Node | None, add: Node | None, side: int, relu: Node | None) -> None:
        self.conv, self.bn, self.add, self.side, self.relu = conv_node, bn, add, side, relu
        self.conv_at = conv_node.meta["attrs"]
        self.eps = float(bn.meta["attrs"].get("epsilon", 1e-5)) if bn is not None else 0.0
        self._key: tuple[Any, ...] = ()
        self._folded: tuple[Tensor, Tensor] | None = None

    def __call__(self, args: list[Any], device: Any) -> Any:
        if is_grad_enabled() and any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return self.stepwise(args, device)
        x, w, b = args[0], args[1], args[2]
        if self.bn is not None:
            folded = self.folded(x, w, b, args[3:7])
            if folded is None:
                return self.stepwise(args, device)
            w, b = folded
        self.conv_at.device = device
        y = conv(self.conv_at, x, w, b)
        if self.add is not None:
            other = args[-1]
            if _adds_in_place(y, other):
                data = y._data
                data += other._data
            else:
                y = self.add.fn([y, other] if self.side == 0 else [other, y], device)  # type: ignore[misc]
        if self.relu is not None:
            if y.numel():
                y._backend.xp.maximum(y._data, 0, out=y._data)
            else:
                y = self.relu.fn([y], device)  # type: ignore[misc]
        return y

    def stepwise(self, args: list[Any], device: Any) -> Any:
        """The original nodes one after the other (gradients flow as without fusion)."""
        y = self.conv.fn(list(args[:3]), device)  # type: ignore[misc]
        if self.bn is not None:
            y = self.bn.fn([y, *args[3:7]], device)  # type: ignore[misc]
        if self.add is not None:
            other = args[-1]
            y = self.add.fn([y, other] if self.side == 0 else [other, y], device)  # type: ignore[misc]
        if self.relu is not None:
            y = self.relu.fn([y], device)  # type: ignore[misc]
        return y

    def folded(self, x: Any, w: Any, b: Any, stats: Sequence[Any]) -> tuple[Tensor, Tensor] | None:
        """The convolution's weight and bias with the batch norm folded in (cached), or ``None`` when the
        operands do not allow it (dtypes or shapes differ: the stepwise path handles or reports them)."""
        srcs = [w, b, *stats]
        if not all(isinstance(t, Tensor) for t in (x, w, *stats)) or (b is not None and not isinstance(b, Tensor)):
            return None
        o = w.shape[0] if w.ndim else -1
        if not x.dtype.is_floating_point or any(
            t.dtype != x.dtype or t.shape != (o,) for t in srcs[1:] if t is not None
        ):
            return None
        if w.dtype != x.dtype:
            return None
        key = tuple((t._data, t._vc[0]) if t is not None else (None, 0) for t in srcs)
        if (
            self._folded is not None
            and len(key) == len(self._key)
            and all(a[0] is k[0] and a[1] == k[1] for a, k in zip(key, self._key))
        ):
            return self._folded
        with no_grad():
            scale, beta, mean, var = (t.double() for t in stats)
            s = scale / (var + self.eps).sqrt()
            wf = (w.double() * s.reshape([o] + [1] * (w.ndim - 1))).to(w.dtype)
            b0 = b.double() if b is not None else zeros(o, dtype=s.dtype, device=s.device)
            bf = ((b0 - mean) * s + beta).to(w.dtype)
        self._key, self._folded = key, (wf, bf)
        return self._folded


def _adds_in_place(y: Tensor, other: Any) -> bool:
    """Whether ``y += other`` gives ``Add(y, other)``: same dtype and backend, ``other`` broadcasting to ``y``."""
    if not isinstance(other, Tensor) or other.dtype != y.dtype or other._backend is not y._backend or not y.numel():
        return False
    os, ys = other.shape, y.shape
    return len(os) <= len(ys) and all(a in (1, c) for a, c in zip(reversed(os), reversed(ys)))
