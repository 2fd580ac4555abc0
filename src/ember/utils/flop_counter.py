"""``ember.utils.flop_counter`` (PyTorch's ``torch.utils.flop_counter``): the floating-point operations of the
matrix products and convolutions run inside ``with FlopCounterMode() as fc:``, per module.

PyTorch counts the aten operators it dispatches to; Ember counts its own operators by the same formulas and under
PyTorch's operator names: a matrix product of (m, k) by (k, n) is ``2*m*k*n`` (``aten.mm``; ``aten.addmm`` for a
linear layer with a bias; ``aten.bmm`` when batched), a convolution ``2 * batch * out_spatial * c_out * c_in/groups
* kernel`` (``aten.convolution``), and their backward passes as PyTorch's (each input gradient computed is one more
product; ``aten.convolution_backward``). An ``einsum`` of two operands counts its product (``aten.bmm``: 2 times the
sizes of its indices, once those summed in one operand alone are summed away, when an index is contracted between
the two), and elementwise operators count nothing, as in PyTorch. Unlike PyTorch, a matrix-vector or vector-vector
product counts its ``2*m*k`` FLOPs (``aten.mm``): PyTorch has no formula for ``mv`` and ``dot`` and counts 0.
Counts go to ``"Global"`` and to every module whose forward is running (named from the outermost module's class:
``"Net"``, ``"Net.fc1"``); a backward pass's counts go to ``"Global"`` only (PyTorch also gives them to modules,
not always to the module that ran the forward).

Limits, beside PyTorch: attention (``scaled_dot_product_attention``) and einsums of three or more operands count
nothing (PyTorch counts the attention kernels of its GPU backends, and einsums by its contraction path). Ember runs
one operator interceptor at a time, so a FlopCounterMode cannot run inside a profile or a forward-AD level.
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from .. import _tensor
from ..autograd import _engine
from ..autograd._function import TRACE, Function, bypass, install_trace

__all__ = ["FlopCounterMode", "conv_flop_count"]

Counts = list[tuple[str, int]]


def _prod(xs: Sequence[int]) -> int:
    return math.prod(int(x) for x in xs)


def conv_flop_count(x_shape: Sequence[int], w_shape: Sequence[int], out_shape: Sequence[int],
                    transposed: bool = False) -> int:  # fmt: skip
    """The FLOPs of a convolution (PyTorch's formula): 2 * batch * spatial * c_out * c_in * kernel."""
    batch = x_shape[0]
    spatial = (x_shape if transposed else out_shape)[2:]
    c_out, c_in, *kernel = w_shape
    return int(batch) * _prod(spatial) * int(c_out) * _prod(kernel) * int(c_in) * 2


def _t(shape: Sequence[int]) -> list[int]:
    return [shape[1], shape[0], *shape[2:]]


def _conv_backward(g: Sequence[int], x: Sequence[int], w: Sequence[int], transposed: bool, need_x: bool,
                   need_w: bool) -> int:  # fmt: skip
    flops = conv_flop_count(g, w, x, not transposed) if need_x else 0
    if need_w:
        flops += conv_flop_count(_t(g), _t(x), _t(w)) if transposed else conv_flop_count(_t(x), _t(g), _t(w))
    return flops


def _matmul(a: Any, b: Any, out: Any) -> tuple[str, int, int]:
    """(name, forward FLOPs, FLOPs of one input's gradient) of ``a @ b``: ``2 * k`` per output element, an ``mm``
    where PyTorch's ``matmul`` folds a batch into one matrix, else a ``bmm``. (Ember's ``matmul`` makes a vector
    operand a one-column or one-row matrix first, so its products with vectors count too.)"""
    da, db = a.ndim, b.ndim
    fold = (da <= 2 and db <= 2) or (da >= 3 and db == 2 and (b.requires_grad or a.is_contiguous()))
    fold = fold or (da == 2 and db >= 3 and a.requires_grad)
    f = 2 * int(a.shape[-1]) * _prod(out.shape)
    return ("aten.mm" if fold else "aten.bmm"), f, f


def _einsum(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, int, int] | None:
    subs, out = kwargs.get("subs"), kwargs.get("out")
    if subs is None or out is None or len(subs) != 2 or len(args) != 2:
        return None
    sizes: dict[str, int] = {}
    for s, x in zip(subs, args, strict=True):
        sizes.update(zip(s, x.shape, strict=False))
    a, b = set(subs[0]), set(subs[1])
    keep = {c for c in a | b if c in out or (c in a and c in b)}
    if not (a & b) - set(out):
        return None  # no index contracted between the two: an elementwise product (PyTorch's mul)
    f = 2 * _prod([sizes[c] for c in keep])
    return "aten.bmm", f, f


def _count(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> tuple[Counts, Counts]:
    """(forward counts, backward counts) of one operator call, given its result."""
    name = cls.__name__
    need = [isinstance(a, _tensor.Tensor) and a.requires_grad for a in args]
    if name in ("_Linear", "MatMul", "Einsum"):
        if name == "_Linear":
            x, w = args[0], args[1]
            bias = len(args) > 2 and args[2] is not None
            f = 2 * _prod(x.shape[:-1]) * x.shape[-1] * w.shape[0]
            got: tuple[str, int, int] | None = ("aten.addmm" if bias else "aten.mm", f, f)
        else:
            got = _einsum(args, kwargs) if name == "Einsum" else _matmul(args[0], args[1], out)
        if got is None:
            return [], []
        op, f, g = got
        grad_op = "aten.mm" if op == "aten.addmm" else op
        return [(op, f)], [(grad_op, g) for i in (0, 1) if need[i]]
    if name in ("Conv", "ConvT"):
        x, w = args[0], args[1]
        transposed = name == "ConvT"
        fwd = conv_flop_count(x.shape, w.shape, out.shape, transposed)
        bwd = _conv_backward(out.shape, x.shape, w.shape, transposed, need[0], need[1])
        return [("aten.convolution", fwd)], ([("aten.convolution_backward", bwd)] if bwd else [])
    return [], []


class FlopCounterMode:
    """``with FlopCounterMode(display=False) as fc: ...``; then ``fc.get_total_flops()`` and
    ``fc.get_flop_counts()`` (module name -> operator name -> FLOPs). ``depth`` limits the table's modules."""

    def __init__(self, mods: Any = None, depth: int = 2, display: bool = True, custom_mapping: Any = None) -> None:
        self.depth, self.display = depth, display
        self.flop_counts: defaultdict[str, defaultdict[str, int]] = defaultdict(lambda: defaultdict(int))
        self._names: dict[int, str] = {}
        self._active: list[str] = []
        self._backward: dict[int, tuple[Any, Counts]] = {}
        self._handles: list[Any] = []
        self._run = Function.__dict__["apply"].__func__

    def get_total_flops(self) -> int:
        """All the FLOPs counted."""
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self) -> dict[str, dict[str, int]]:
        """Module name -> operator name -> FLOPs (``"Global"``: everything)."""
        return {k: dict(v) for k, v in self.flop_counts.items()}

    def get_table(self, depth: int | None = None) -> str:
        """The counts as a text table, modules down to ``depth`` levels (``self.depth`` by default)."""
        depth = self.depth if depth is None else depth
        total = self.get_total_flops() or 1
        rows = [("Module", "FLOP", "% Total")]
        for mod, ops in self.flop_counts.items():
            if mod != "Global" and mod.count(".") + 1 > depth:
                continue
            n = sum(ops.values())
            rows.append((mod, f"{n:,}", f"{100 * n / total:.2f}%"))
            rows += [(f" - {op}", f"{c:,}", f"{100 * c / total:.2f}%") for op, c in ops.items()]
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows)

    def __enter__(self) -> FlopCounterMode:
        from ..nn._module_hooks import register_module_forward_hook, register_module_forward_pre_hook

        self.flop_counts.clear()
        install_trace(self._op, "FlopCounterMode")
        if _engine.PROFILE[0] is not None:
            TRACE[0] = None
            raise RuntimeError("FlopCounterMode: a profile is recording; run one at a time")
        _engine.PROFILE[0] = self._node
        self._handles = [register_module_forward_pre_hook(self._pre), register_module_forward_hook(self._post)]
        return self

    def __exit__(self, *exc: object) -> None:
        TRACE[0] = None
        _engine.PROFILE[0] = None
        for h in self._handles:
            h.remove()
        self._handles, self._active = [], []
        self._backward.clear()
        if self.display:
            print(self.get_table())

    def _name(self, mod: Any) -> str:
        name = self._names.setdefault(id(mod), type(mod).__name__)
        for child_name, child in mod.named_children():
            self._names.setdefault(id(child), f"{name}.{child_name}")
        return name

    def _pre(self, mod: Any, args: Any) -> None:
        self._active.append(self._name(mod))

    def _post(self, mod: Any, args: Any, out: Any) -> None:
        if self._active:
            self._active.pop()

    def _add(self, counts: Counts, modules: Sequence[str]) -> None:
        for mod in {"Global", *modules}:
            for op, n in counts:
                self.flop_counts[mod][op] += n

    def _op(self, cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        with bypass():  # the operators this one runs are part of it
            out = self._run(cls, *args, **kwargs)
        if _in_backward():
            return out  # a backward pass's own operators: counted with its node (``_node``)
        fwd, bwd = _count(cls, args, kwargs, out)
        self._add(fwd, self._active)
        node = getattr(out, "_creator", None)
        if bwd and node is not None:
            self._backward[id(node)] = (node, bwd)
        return out

    def _node(self, node: Any, t0: int, t1: int) -> None:
        entry = self._backward.pop(id(node), None)
        if entry is not None and entry[0] is node:
            self._add(entry[1], ())


def _in_backward() -> bool:
    """Whether this call comes from a node's step of a backward pass (the engine's ``_step`` is on the stack)."""
    code = _engine._step.__code__
    f = sys._getframe(2)
    while f is not None:
        if f.f_code is code:
            return True
        f = f.f_back  # type: ignore[assignment]
    return False
