"""From a recording to a program: guards hoisted, dead calls dropped, dead arrays released, and the whole
step generated as one Python function of straight-line array calls (no Tensors, no graph, no dispatch).

``build(tracer, outputs)`` returns a ``Program`` whose ``run(*input_arrays)`` returns the output arrays, or
``MISS`` when a value guard fails (an Ember check or branch that read a value now reads a different one;
guards run before anything is written, so a miss leaves no trace and the caller runs the step eagerly).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ._fold import fold
from ._instr import Instr, LiveRng, Ref, TRef, _Opaque
from ._tracer import Tracer

__all__ = ["Program", "build", "MISS", "NotHoistableError"]


class _Miss:
    def __repr__(self) -> str:
        return "MISS"


MISS: Any = _Miss()


class NotHoistableError(Exception):
    """A value read inside Ember depends on something the step changes before it: not capturable."""

    def __init__(self, site: Any) -> None:
        super().__init__(site)
        self.site = site


def _same(a: Any, b: Any) -> bool:
    """Equal Python values, NaN equal to NaN and -0.0 different from 0.0 (so a branch or baked number agrees)."""
    if isinstance(a, float) and isinstance(b, float):
        return (a == b and math.copysign(1.0, a) == math.copysign(1.0, b)) or (a != a and b != b)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def _converter(kind: str, args: tuple[Any, ...]) -> Callable[[Any], Any]:
    """How a guard reads its slot's value again at replay (the array's own methods: NumPy, torch or CuPy)."""
    if kind == "titem":
        return lambda a: a.reshape(()).item()
    if kind == "item":
        return lambda a: a.item(*args)
    if kind == "tolist":
        return lambda a: a.tolist()
    if kind == "value":
        return lambda a: a
    conv = {"bool": bool, "int": int, "float": float}[kind]
    return conv


class Program:
    """A captured step as one generated function (``source`` shows it)."""

    def __init__(self, run: Callable[..., Any], source: str, n_instrs: int, outputs: Any) -> None:
        self.run = run
        self.source = source
        self.n_instrs = n_instrs
        self.outputs = outputs  # the output template (Refs where arrays go)

    def __repr__(self) -> str:
        return f"<Program of {self.n_instrs} calls>"


def _hoist(tr: Tracer, span: range) -> tuple[list[int], list[tuple[int, Callable[..., bool]]]]:
    """Instructions to run first (what the value guards read) and the guards ``(slot, check)``.

    A guard's slice is every instruction before its read that makes one of the slots it needs or writes the
    memory of one (in-place writes count). It may run first when it calls nothing opaque and moving it
    crosses no other instruction touching the memory it writes. Random draws keep their order: when a slice
    needs one, every draw before the read moves with it (and a failed guard puts the generators back).
    For the first part of a split program (``span``), a read in the second part is checked in the first when
    all it depends on is there (max pooling's NaN test in backward reads the forward's output); the second
    part has no guards.
    """
    if span.start > 0:
        return [], []
    end = span.stop
    instrs = tr.instrs
    roots = tr.roots
    writes = [(_opaque_writes(tr, ins) if ins.kind == "o" else ins.writes) for ins in instrs]
    front: set[int] = set()
    guards: list[tuple[int, Callable[..., bool]]] = []
    for slot, kind, args, value, pos, site in tr.value_guards:
        need_slots, need_roots = {slot}, {roots[slot]}
        sl: set[int] = set()
        draws = False
        for j in range(pos - 1, -1, -1):
            ins = instrs[j]
            if (draws and ins.kind == "r") or any(s in need_slots for s in _outs(ins.outs)) or writes[j] & need_roots:
                late = j >= end and (ins.kind not in "kc" or writes[j] or ins.reads & tr.late_inputs)
                if ins.kind in "og" or late:
                    raise NotHoistableError(site)  # (past ``end``: only pure calls, computed in the first part)
                if ins.kind == "r" and not draws:  # every earlier draw moves too, in order
                    draws = True
                    later = {i for i in range(j + 1, pos) if instrs[i].kind == "r"}
                    if any(instrs[i].reads for i in later):
                        raise NotHoistableError(site)
                    sl |= later
                sl.add(j)
                need_slots |= ins.reads
                need_roots |= {roots[s] for s in ins.reads} | ins.writes
        moved_writes: set[int] = set()
        for j in range(max(sl, default=-1), -1, -1):
            if j in sl:
                moved_writes |= writes[j]
            elif moved_writes & ({roots[s] for s in instrs[j].reads} | writes[j]):
                raise NotHoistableError(site)
        front |= sl
        conv = _converter(kind, args)

        def check(a: Any, conv: Callable[[Any], Any] = conv, value: Any = value) -> bool:
            return not _same(conv(a), value)

        guards.append((slot, check))
    return sorted(front), guards


def _opaque_writes(tr: Tracer, ins: Instr) -> set[int]:
    """The memory an opaque call may write: an optimizer its parameters and their gradients, clipping the
    gradients of the tensors given, a method of an object with ``_capture_writes(name)`` the tensors (data, or
    gradients only) that names; anything else every tensor from outside and every array handed to one."""
    owner: Any = ins.args[0] if ins.args else None
    declared = getattr(owner, "_capture_writes", None)  # (DDP: the tensors each of its host steps writes)
    if declared is not None:
        written, data = declared(ins.fn.__name__)
        tensors = {id(t) for t in written}
    elif hasattr(owner, "param_groups"):
        tensors = {id(p) for g in owner.param_groups for p in g["params"]}
        data = getattr(ins.fn, "__name__", "") != "zero_grad"
    elif isinstance(owner, list | tuple) and all(isinstance(t, Tensor) for t in owner):
        tensors, data = {id(t) for t in owner}, False
    else:
        tensors, data = None, True
    out = set()
    for s, (kind, payload) in enumerate(tr.slots):
        if ((kind == "ext" and data) or kind == "grad") and (tensors is None or id(payload) in tensors):
            out.add(tr.roots[s])
    for other in tr.instrs:
        if (other.kind == "g" and (tensors is None or id(other.args[0]) in tensors)) or (
            other.kind == "o" and tensors is None
        ):
            out |= {tr.roots[s] for s in other.reads}
    return out


def _outs(t: Any) -> list[int]:
    if isinstance(t, Ref):
        return [t.s]
    if isinstance(t, tuple | list):
        return [s for v in t for s in _outs(v)]
    return []


def build(
    tr: Tracer, outputs: Any, inputs: list[int], span: range | None = None, arrays: Any = (), buffers: bool = False
) -> Program:
    """Compile ``tr``'s recording into a Program: ``run(*input_tensors, *arrays)`` returns ``outputs`` (a
    template where ``TRef``s become Tensors of the replayed arrays, ``Ref``s arrays); ``inputs[k]`` is the slot
    of input tensor ``k``, ``arrays`` the slots given as arrays. ``span``: the instructions to use (all)."""
    instrs = tr.instrs
    span = range(len(instrs)) if span is None else span
    front, guards = _hoist(tr, span)
    # dead-code elimination: keep side effects, and what outputs, guards and kept calls read
    needed = set(_outs(outputs)) | {s for s, _ in guards}
    live = [False] * len(instrs)
    for i in sorted(set(span) | set(front), reverse=True):  # (front: may reach past a split program's part)
        ins = instrs[i]
        if i in front or ins.kind in "rog" or ins.writes or any(s in needed for s in _outs(ins.outs)):
            live[i] = True
            needed |= ins.reads
    # calls made of constants only run now, once (``_fold.py``); the program reads their results
    folded, values = fold(tr, [i for i in sorted(set(span) | set(front)) if live[i]], outputs, arrays)
    order = [i for i in front if live[i] and i not in folded]
    n_front = len(order)
    order += [i for i in span if live[i] and i not in set(front) and i not in folded]
    # where each slot is used last, to release arrays as soon as they are dead
    last: dict[int, int] = {}
    for k, i in enumerate(order):
        for s in instrs[i].reads:
            last[s] = k
    for s, _ in guards:
        last[s] = max(last.get(s, -1), n_front - 1)
    keep = set(_outs(outputs))
    gen = _Gen(tr)
    if buffers:
        from ._buffers import plan

        gen.buffers = plan(tr, order, outputs)
    lines = [f"def replay({', '.join([f'x{k}' for k in range(len(inputs))] + [f's{s}' for s in arrays])}):"]
    lines += [f"    s{s} = x{k}._data" for k, s in enumerate(inputs) if s in needed]
    for s, (kind, payload) in enumerate(tr.slots):
        if s in arrays:
            continue
        if kind == "ext" and s in needed:
            lines.append(f"    s{s} = {gen.expr(payload)}._data")
        elif kind == "grad" and s in needed:
            lines.append(f"    s{s} = {gen.expr(payload)}.grad._data")
        elif kind == "const":
            gen.env[f"s{s}"] = payload
    for s in {s for i in order for s in instrs[i].reads if s in values}:
        gen.env[f"s{s}"] = values[s]
    draws = [instrs[i] for i in front if live[i] and instrs[i].kind == "r"]
    miss = "return MISS"
    if draws:  # a failed guard puts the generators back: the eager run that follows draws the same numbers
        rng = gen.const(_Generators([ins.args[0] for ins in draws]))
        lines.append(f"    _rs = {rng}.save()")
        miss = f"{rng}.restore(_rs); return MISS"
    # arrays from outside that the front part writes in place (torch's batch norm updates its running statistics in
    # the operator that makes its output): copied first, put back when a guard fails, so a miss leaves no trace
    written = set().union(*(instrs[i].writes for i in order[:n_front])) if guards else set()
    outside = [s for s, (kind, _) in enumerate(tr.slots) if kind in ("in", "ext", "grad") and s in needed
               and tr.roots[s] in written and s not in arrays]  # fmt: skip
    if outside:
        for s in outside:  # (alive until the guards)
            last[s] = max(last.get(s, -1), n_front - 1)
        listed = f"[{', '.join(f's{s}' for s in outside)}]"
        lines.append(f"    _us = {gen.const(_undo_save)}({listed})")
        miss = f"{gen.const(_undo_restore)}({listed}, _us); {miss}"
    checks = [f"    if {gen.const(check)}(s{s}): {miss}" for s, check in guards]
    if n_front == 0:
        lines += checks
    for k, i in enumerate(order):
        lines.append("    " + gen.instr(instrs[i], i))
        if k == n_front - 1:
            lines += checks
        dead = [
            s
            for s in instrs[i].reads
            if last.get(s) == k and s not in keep and s not in values and (s in arrays or tr.slots[s][0] != "const")
        ]
        if dead:
            lines.append(f"    del {', '.join(f's{s}' for s in sorted(set(dead)))}")
    lines.append(f"    return {gen.expr(outputs)}")
    source = "\n".join(lines) + "\n"
    env = dict(gen.env, MISS=MISS)
    exec(compile(source, "<ember.compile program>", "exec"), env)
    return Program(env["replay"], source, len(order), outputs)


def _undo_save(arrays: list[Any]) -> list[Any]:
    """Copies of arrays (NumPy, CuPy: ``copy``; torch: ``clone``)."""
    return [a.clone() if hasattr(a, "clone") else a.copy() for a in arrays]


def _undo_restore(arrays: list[Any], saved: list[Any]) -> None:
    for a, c in zip(arrays, saved, strict=True):
        a[...] = c


class _Generators:
    """The states of the NumPy generators that a program's front part draws from (saved, put back)."""

    def __init__(self, gens: list[Any]) -> None:
        self.gens = list({id(g): g for g in gens}.values())

    def save(self) -> list[Any]:
        return [g.bit_generator.state for g in self.gens]

    def restore(self, states: list[Any]) -> None:
        for g, st in zip(self.gens, states, strict=True):
            g.bit_generator.state = st


_LITERALS = (int, bool, str, type(None))


def _direct(fn: Any) -> Any:
    """A torch operator overload's own C++ entry point (``OpOverload.__call__`` is a Python frame calling it
    with the same arguments: the same call, one frame less per replayed instruction); anything else as is."""
    ops = getattr(sys.modules.get("torch"), "_ops", None)
    return fn._op if ops is not None and type(fn) is ops.OpOverload else fn


class _Gen:
    """Renders templates as Python source; everything that is not a literal becomes a named constant."""

    def __init__(self, tr: Tracer) -> None:
        self.tr = tr
        self.env: dict[str, Any] = {"_mk": Tensor._make}
        self.names: dict[int, str] = {}
        self.buffers: dict[int, tuple[Any, Any]] = {}  # instruction index -> (buffer, fill) (``_buffers.py``)

    def const(self, v: Any) -> str:
        name = self.names.get(id(v))
        if name is None:
            name = self.names[id(v)] = f"C{len(self.names)}"
            self.env[name] = v
        return name

    def expr(self, t: Any) -> str:
        c = t.__class__
        if c is Ref:
            return f"s{t.s}"
        if c is TRef:
            return f"_mk(s{t.s}, {self.const(t.backend)})"
        if c is tuple:
            inner = ", ".join(self.expr(v) for v in t)
            return f"({inner},)" if len(t) == 1 else f"({inner})"
        if c is list:
            return "[" + ", ".join(self.expr(v) for v in t) + "]"
        if c is dict and all(isinstance(k, str) for k in t):
            return "{" + ", ".join(f"{k!r}: {self.expr(v)}" for k, v in t.items()) + "}"
        if c is float and math.isfinite(t):
            return repr(t)
        if c in _LITERALS or t is Ellipsis:
            return repr(t)
        if c is LiveRng:
            return f"{self.const(t.holder)}._rng"
        if isinstance(t, Tensor) and id(t) in self.tr.input_ids:
            return f"x{self.tr.input_ids[id(t)]}"
        if c is slice and all(x is None or type(x) is int for x in (t.start, t.stop, t.step)):
            return f"slice({t.start!r}, {t.stop!r}, {t.step!r})"
        return self.const(t)

    def target(self, t: Any) -> str:
        if isinstance(t, Ref):
            return f"s{t.s}"
        if isinstance(t, tuple | list):
            inner = ", ".join(self.target(v) for v in t)
            return f"({inner},)" if len(t) == 1 else f"({inner})"
        return "_"

    def instr(self, ins: Instr, index: int = -1) -> str:
        args = [self.expr(a) for a in ins.args]
        args += [f"{k}={self.expr(v)}" for k, v in ins.kwargs.items()]
        planned = self.buffers.get(index)
        if planned is not None:
            buf, fill = planned
            name = self.const(buf)
            if fill == "out":
                args.append(f"out={name}")
            elif fill is None:
                return f"{self.target(ins.outs)} = {name}"
            else:
                return f"{name}.fill({self.expr(fill)}); {self.target(ins.outs)} = {name}"
        call = f"{self.const(_direct(ins.fn))}({', '.join(args)})"
        if ins.outs is None or (isinstance(ins.fn, _Opaque) and not ins.outs):
            return call
        return f"{self.target(ins.outs)} = {call}"
