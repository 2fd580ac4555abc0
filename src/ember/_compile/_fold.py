"""Constant folding for a NumPy program: calls whose inputs are constants run once, when the program is built.

A recorded call made only of constants gives the same array at every replay: e.g. a pooling backward's window
positions (an ``arange``, a ``repeat`` and an outer sum: 113 us of LeNet-5's 4.4 ms step). Such a call runs once
at build time, on the same NumPy function and arguments as the replay would (the same bits), and the program reads
its result as a constant. A call folds when:

- it is a kernel or an array creation (not a random draw, an opaque call or a ``.grad`` assignment) and writes
  nothing in place;
- everything it reads is a folded result, or a read-only array from outside whose memory is read-only too (e.g. a
  backend's cached constant; a writeable one, or a read-only view of writeable memory, may be changed between
  calls by whoever owns it);
- no call of the step ever writes the memory it reads or makes, none of that memory leaves the program (returned,
  handed to an opaque call, made a ``.grad``, passed between the parts of a split program), and each result is a
  NumPy array of at most ``MAX_BYTES`` (a folded result is kept for as long as the program: eager makes it
  anew at each call, and frees it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._instr import Instr, Ref, _Opaque, _ZeroD, refs_in, tensors_in
from ._tracer import Tracer

__all__ = ["fold", "MAX_BYTES"]

#: the largest folded result kept (bytes): LeNet-5's first pooling positions are 588 KiB
MAX_BYTES = 1 << 20
#: the layout of a NumPy scalar result, which the program keeps as a 0-d array (``_ZeroD``)
_SCALAR = ((), np.dtype(np.float64), True)


def _value(t: Any, values: dict[int, Any]) -> Any:
    """A template with every ``Ref`` replaced by its value."""
    c = t.__class__
    if c is Ref:
        return values[t.s]
    if c is tuple or c is list:
        return c(_value(v, values) for v in t)
    if c is dict:
        return {k: _value(v, values) for k, v in t.items()}
    return t


def _bind(outs: Any, res: Any, values: dict[int, Any]) -> bool:
    """Give each ``Ref`` of ``outs`` its part of ``res``; False when the result is not shaped as recorded."""
    if isinstance(outs, Ref):
        if not isinstance(res, np.ndarray):
            return False
        values[outs.s] = res
        return True
    if isinstance(outs, tuple | list) and isinstance(res, tuple | list) and len(outs) == len(res):
        return all(_bind(o, r, values) for o, r in zip(outs, res, strict=True))
    return outs is None


def _frozen(a: Any) -> bool:
    """Whether ``a`` is a NumPy array that nobody can write: it and every array its memory comes from are
    read-only (``np.broadcast_to`` gives a read-only view of memory that its owner may still write)."""
    if not isinstance(a, np.ndarray):
        return False
    while isinstance(a, np.ndarray):
        if a.flags.writeable:
            return False
        a = a.base
    return a is None or isinstance(a, bytes)  # (memory from another object, e.g. a bytearray, may change)


def _foldable(tr: Tracer, ins: Instr, values: dict[int, Any], blocked: set[int]) -> bool:
    if ins.kind not in "kc" or ins.writes or isinstance(ins.fn, _Opaque) or tensors_in((ins.args, ins.kwargs)):
        return False
    outs = refs_in(ins.outs)
    if not outs:
        return False
    for s in ins.reads:
        if s in values:
            continue
        kind, payload = tr.slots[s]
        if kind != "const" or not _frozen(payload):
            return False
        if tr.roots[s] in blocked:
            return False
    for r in outs:
        layout = tr.layouts.get(r.s, _SCALAR if isinstance(ins.fn, _ZeroD) else None)
        if layout is None or not tr.constant(r.s) or tr.roots[r.s] in blocked:
            return False
        if np.dtype(layout[1]).itemsize * int(np.prod(layout[0], dtype=np.int64)) > MAX_BYTES:
            return False
    return True


def fold(tr: Tracer, order: list[int], outputs: Any, arrays: Any = ()) -> tuple[set[int], dict[int, Any]]:
    """``(instruction indices folded, {slot: value})`` for the calls of ``order`` that fold (module docstring);
    the values are those of every slot the folded calls make."""
    instrs, roots = tr.instrs, tr.roots
    blocked = {w for ins in instrs for w in ins.writes}  # written somewhere, or leaving the program
    blocked |= {roots[r.s] for r in refs_in(outputs)} | {roots[s] for s in arrays}
    blocked |= {roots[s] for ins in instrs if ins.kind in "og" for s in ins.reads}
    values: dict[int, Any] = {}
    folded: set[int] = set()
    for i in order:
        ins = instrs[i]
        if not _foldable(tr, ins, values, blocked):
            continue
        env = dict(values)
        for s in ins.reads:
            env.setdefault(s, tr.slots[s][1])
        res = ins.fn(*_value(ins.args, env), **_value(ins.kwargs, env))
        made: dict[int, Any] = {}
        if _bind(ins.outs, res, made) and all(
            tr.layouts.get(s, ((), a.dtype, True)) == (a.shape, a.dtype, a.flags.c_contiguous) for s, a in made.items()
        ):
            values.update(made)
            folded.add(i)
    return folded, values
