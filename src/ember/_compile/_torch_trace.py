"""Recording the torch backend: a ``TorchDispatchMode`` sees every aten call the step makes.

On the torch backend the arrays are torch tensors, so no wrapper type is needed: while a capture runs, a
dispatch mode (thread-local, entered for the capture only) records each aten operator with its arguments,
whichever Ember layer called it — factory calls (``aten.empty``, ``aten.full``) included, so a replay makes
fresh tensors; in-place and ``out=`` operators are known from their schemas; views are operators too, so a
replay rebuilds the same aliasing. Tensors are told apart by identity (kept alive while recording).
``aten._local_scalar_dense`` (``item()``, ``int(t)``) is a read of a value on the host; ``nonzero``,
``masked_select``, ``unique`` and boolean-mask indexing have data-dependent shapes.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ._instr import Instr, Ref
from ._known import adopt, root_of

__all__ = ["Recorder", "is_torch", "adopt", "root_of", "torch_call"]

aten = torch.ops.aten
_DATA_DEPENDENT = {
    aten.nonzero.default, aten.masked_select.default, aten._unique2.default, aten.unique_dim.default,
    aten.unique_consecutive.default, aten.repeat_interleave.Tensor, aten.nonzero_static.default,
}  # fmt: skip
_INDEX = {aten.index.Tensor}
#: operators writing arguments their schema does not mark as written: (positions, the ``training`` argument's)
_UNMARKED_WRITES = {aten.native_batch_norm.default: ((3, 4), 5), aten.cudnn_batch_norm.default: ((3, 4), 5),
                    aten.miopen_batch_norm.default: ((3, 4), 5)}  # fmt: skip


def is_torch(a: Any) -> bool:
    return isinstance(a, torch.Tensor)


class Recorder(TorchDispatchMode):
    """Sends every aten call made on the capturing thread to the tracer."""

    def __init__(self, tracer: Any) -> None:
        super().__init__()
        self.tracer = tracer

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # nothing here is compiled by torch: do not import torch._dynamo (seconds) for it

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        tr = self.tracer
        if not tr.here():
            return func(*args, **kwargs)
        return torch_call(tr, func, args, kwargs)


def _template(tr: Any, x: Any, reads: set[int]) -> Any:
    if isinstance(x, torch.Tensor):
        s = adopt(tr, x, None)
        reads.add(s)
        return Ref(s)
    if isinstance(x, tuple | list):
        return x.__class__(_template(tr, v, reads) for v in x)
    return x


def _outputs(tr: Any, res: Any, index: int) -> Any:
    if isinstance(res, torch.Tensor):
        if id(res) in tr.tknown:  # an argument handed back (in-place and out= operators): nothing new
            return None
        s = tr.new_slot("out", index, res)  # (a view keeps its storage's root)
        tr.tknown[id(res)] = s
        tr.keep.append(res)
        return Ref(s)
    if isinstance(res, tuple | list):
        return tuple(_outputs(tr, v, index) for v in res)
    return None


def torch_call(tr: Any, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Record one aten call (run as is) into ``tr``."""
    reads: set[int] = set()
    targs = _template(tr, args, reads)
    tkw = {k: _template(tr, v, reads) for k, v in kwargs.items()}
    if func in _DATA_DEPENDENT or (
        func in _INDEX and any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in args[1])
    ):
        tr.flag(f"{func}: a result whose shape depends on the values")
    res = func(*args, **kwargs)
    if tr.off:
        return res
    writes = set()
    for i, arg in enumerate(func._schema.arguments):
        info = arg.alias_info
        if info is not None and info.is_write:
            v = kwargs.get(arg.name, args[i] if i < len(args) else None)
            for t in v if isinstance(v, tuple | list) else (v,):
                if isinstance(t, torch.Tensor):
                    writes.add(root_of(t))
    unmarked = _UNMARKED_WRITES.get(func)
    if unmarked is not None and len(args) > unmarked[1] and args[unmarked[1]]:  # (the running statistics, training)
        writes |= {root_of(args[i]) for i in unmarked[0] if isinstance(args[i], torch.Tensor)}
    index = len(tr.instrs)
    if not isinstance(res, torch.Tensor | tuple | list) and res is not None:  # a Python value: read on the host
        out = Ref(tr.new_slot("out", index, torch.empty(0)))
        tr._add(Instr(func, targs, tkw, out, "k", reads, writes))
        tr.host_read_slot(out.s, "value", (), res)
        return res
    tr._add(Instr(func, targs, tkw, _outputs(tr, res, index), "k", reads, writes))
    return res
