"""Arrays the tracer knows by identity: torch tensors and CuPy arrays (NumPy's are wrapped, ``_ndarray.py``).

They are not wrapped in a recording type: their calls are seen by torch's dispatch mode (``_torch_trace.py``)
or by CuPy's functions and array methods swapped for recording ones (``_cupy_trace.py``), and each array
is told apart by ``id`` (the tracer keeps it alive while recording). Arrays sharing memory share a *root*,
the address of their allocation, so that a write through one is a write to all.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["adopt", "root_of", "array_types"]


def array_types() -> tuple[type, ...]:
    """The classes of the identity-known arrays of the libraries imported now (never imports one)."""
    out: list[type] = []
    torch = sys.modules.get("torch")
    if torch is not None and getattr(getattr(torch, "_C", None), "__name__", None) == "torch._C":  # (not Ember's _C)
        out.append(torch.Tensor)
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(getattr(cupy, "ndarray", None), type):
        out.append(cupy.ndarray)
    return tuple(out)


def root_of(a: Any) -> int:
    """The address of the memory ``a`` is a view of (torch: its storage; CuPy: its allocation); a Python value
    that a recorded call returned (a host read) is its own root."""
    storage = getattr(a, "untyped_storage", None)
    if storage is not None:
        return int(storage().data_ptr())
    mem = getattr(getattr(a, "data", None), "mem", None)  # CuPy: MemoryPointer -> the allocation (views included)
    return int(mem.ptr) if mem is not None else id(a)


def adopt(tr: Any, a: Any, owner: Any) -> int:
    """The slot of array ``a`` (read through Ember tensor ``owner``, if any), made once."""
    s = tr.tknown.get(id(a))
    if s is not None:
        return s  # type: ignore[no-any-return]
    if owner is not None and id(owner) not in tr.born:
        leaf = tr.grad_owner.get(id(owner))
        kind, payload = ("grad", leaf) if leaf is not None else ("ext", owner)
        s = tr.new_slot(kind, payload, a)
        from ._guards import array_meta

        tr.metas[s] = array_meta(owner, a)
    else:
        s = tr.new_slot("const", a, a)
    tr.tknown[id(a)] = s
    tr.keep.append(a)
    return s  # type: ignore[no-any-return]
