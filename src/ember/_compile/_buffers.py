"""Preallocated buffers for a NumPy program: intermediate arrays are written into buffers made once.

An array qualifies when the program alone sees it (not returned, not handed to an opaque call or made a
``.grad``, not a view of something from outside) and is small (``MAX_BYTES``): the per-call cost of making
an array matters for small ones, and a buffer per shape would raise memory for large ones. Two kinds of
calls then write into a buffer instead of allocating: array creations (``np.empty`` becomes the buffer
itself; ``zeros``/``ones``/``full`` fill it) and ufunc calls (``out=buffer``, the same loop and the same
bits). Buffers are shared by arrays of one shape and dtype whose lifetimes (first making to last use of
their memory) do not overlap, and are reused at every call.
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from ._instr import Instr, Ref, refs_in
from ._ndarray import original
from ._tracer import Tracer

__all__ = ["plan"]

#: larger arrays are left to the allocator: buffers per shape would hold more than the step's live set at once
#: (LeNet-5: 24.8 MB against eager's 21.8 at any size; allocation costs little next to their kernels)
MAX_BYTES = 64 << 10

_FILL = {"empty": None, "zeros": 0, "ones": 1, "empty_like": None, "zeros_like": 0, "ones_like": 1}


def _creation(ins: Instr) -> tuple[bool, Any]:
    """``(is a fillable creation, fill value)`` for ``np.empty/zeros/ones/full`` and their ``_like``."""
    name = getattr(ins.fn, "__name__", "")
    if ins.kind != "c" or original(name) is not ins.fn:
        return False, None
    if name in _FILL:
        return True, _FILL[name]
    if name in ("full", "full_like") and len(ins.args) > 1 and not isinstance(ins.args[1], Ref):
        return True, ins.args[1]
    return False, None


def _nbytes(layout: Any) -> int:
    n = int(np.dtype(layout[1]).itemsize)
    for d in layout[0]:
        n *= int(d)
    return n


def plan(tr: Tracer, order: list[int], outputs: Any) -> dict[int, tuple[Any, Any]]:
    """For each instruction index that writes into a buffer: ``(buffer, fill)``; ``fill`` is ``"out"`` for a
    ufunc call, None for an empty array, else the value to fill with."""
    instrs, roots = tr.instrs, tr.roots
    escaping = {roots[r.s] for r in refs_in(outputs)}
    escaping |= {roots[s] for s, (kind, _) in enumerate(tr.slots) if kind != "out"}
    escaping |= {roots[s] for i in order if instrs[i].kind in "og" for s in instrs[i].reads}
    last: dict[int, int] = {}
    for k, i in enumerate(order):
        for s in instrs[i].reads:
            last[roots[s]] = k
        for r in refs_in(instrs[i].outs):
            last.setdefault(roots[r.s], k)
    seen: set[int] = set()
    free: dict[Any, list[tuple[int, int, Any]]] = {}  # layout -> heap of (busy until, n, buffer)
    out: dict[int, tuple[Any, Any]] = {}
    for k, i in enumerate(order):
        ins = instrs[i]
        made = refs_in(ins.outs)
        new_roots = [roots[r.s] for r in made if roots[r.s] not in seen]
        seen |= {roots[r.s] for r in made}
        if len(made) != 1 or not isinstance(ins.outs, Ref) or not new_roots or new_roots[0] in escaping:
            continue
        layout = tr.layouts.get(ins.outs.s)
        creation, fill = _creation(ins)
        ufunc = isinstance(ins.fn, np.ufunc) and ins.fn is not np.matmul and not ins.kwargs.get("out")
        ufunc = ufunc and "where" not in ins.kwargs
        if layout is None or not layout[2] or not (creation or ufunc) or _nbytes(layout) > MAX_BYTES:
            continue
        pool = free.setdefault(layout[:2], [])
        buf = heapq.heappop(pool)[2] if pool and pool[0][0] < k else np.empty(layout[0], dtype=layout[1])
        heapq.heappush(pool, (last.get(new_roots[0], k), id(buf), buf))
        out[i] = (buf, fill if creation else "out")
    return out
