"""The tracer: runs a step eagerly once and records it as a flat list of array calls over numbered slots.

A slot is one array of the step: an input, the data of a tensor that existed before the call (an *external*:
parameters, buffers, a parameter's ``.grad``), a constant, or the result of a recorded call. What the tracer
records (see ``Instr``): NumPy calls on traced arrays (``_ndarray.py``), array creations, random draws (a call
to the backend's generator method, replayed as such so the generator advances as in eager), *opaque* calls
(``autograd._capture.opaque``: the optimizer step, gradient clipping), and assignments of ``.grad`` to tensors
made before the call. What it refuses (``flag``): a user's read of a value on the host, a data-dependent
shape, rebinding a pre-existing tensor's data. Reads of a value inside Ember become *value guards*.
"""

from __future__ import annotations

import itertools
import operator
import threading
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from .._tensor import Tensor
from ._instr import (
    _DATA,
    Instr,
    LiveRng,
    Ref,
    TRef,
    _has_scalar,
    _Opaque,
    _ptr,
    _root,
    _ZeroD,
    refs_in,
    review,
    set_grad,
    tensors_in,
)
from ._known import adopt, root_of
from ._ndarray import DATA_DEPENDENT, TracedArray, original
from ._sites import GUARDABLE, KIND_WORDS, bool_index, caller, where


def array_meta(t: Tensor, a: Any) -> tuple[Any, ...]:
    from ._guards import array_meta as meta

    return meta(t, a)


__all__ = ["Tracer", "Instr", "Ref", "CaptureError", "LiveRng"]

_GEN = itertools.count()
_as_plain = np.ndarray.view

#: NumPy functions answering about shapes and types only (their Python results are static)
_REPEAT = {np.repeat, np.ndarray.repeat}
_METADATA = {np.shape, np.ndim, np.size, np.result_type, np.can_cast, np.min_scalar_type, np.may_share_memory,
             np.shares_memory, np.iscomplexobj, np.isrealobj, np.isfortran}  # fmt: skip


class CaptureError(RuntimeError):
    """``ember.compile(..., fullgraph=True)`` met something it cannot capture (the message says what and where)."""


class Tracer:
    """Records one eager run of a function (see the module docstring)."""

    def __init__(self, fullgraph: bool = False) -> None:
        self.gen = next(_GEN)
        self.thread = threading.get_ident()
        self.fullgraph = fullgraph
        self.suspended = 0
        self.off = False  # a problem was found: stop recording, finish eagerly
        self.instrs: list[Instr] = []
        self.slots: list[
            tuple[str, Any]
        ] = []  # ("in", None) | ("ext", tensor) | ("grad", leaf) | ("const", a) | ("out", i)
        self.roots: list[int] = []  # per slot: id of the object owning its memory
        self.keep: list[Any] = []  # keeps every object whose id is used alive while recording
        self.known: dict[int, TracedArray] = {}  # id(plain array) -> its traced view
        self.born: set[int] = set()  # ids of tensors made during the call
        self.restore: list[tuple[Tensor, Any]] = []  # externals' original arrays, put back at the end
        self.grad_owner: dict[int, Tensor] = {}  # id(pre-existing grad tensor) -> its leaf
        self.grad_state: dict[int, tuple[Tensor, bool, int]] = {}  # id(leaf) -> (leaf, grad was None, when)
        self.input_ids: dict[int, int] = {}  # id(input tensor) -> its position among the inputs
        self.mode: Any = None  # the torch dispatch mode recording torch calls, when torch is imported
        self.tknown: dict[int, int] = {}  # id(torch tensor or CuPy array) -> its slot (they are not wrapped)
        self.metas: dict[int, Any] = {}  # per outside slot: what its tensor was like when first read
        self.layouts: dict[int, Any] = {}  # per NumPy result slot: (shape, dtype, C-contiguous)
        self.late_inputs: set[int] = set()  # input slots given to a split program's second part (seeds)
        self.static_ids: set[int] = set()  # tensors passed as static arguments: never traced (values guarded)
        self.value_guards: list[tuple[int, str, tuple[Any, ...], Any, int, Any]] = []
        self.problem: tuple[str, Any] | None = None
        self.backends: set[Any] = set()
        self.tainted: set[int] = set()  # memory roots whose values depend on inputs, outside tensors or draws
        self.rng_holders: dict[int, Any] = {}  # id(NumPy generator) -> the Ember Generator holding it
        self.array_types: tuple[type, ...] = ()  # the classes of arrays known by identity (torch, CuPy: _known.py)
        self.entry_states: dict[int, tuple[Any, Any]] = {}  # id -> (object, its state when the call began)
        self.touched: dict[int, Any] = {}  # the stateful objects the step depends on (``autograd._capture.touch``)
        self.collectives = 0  # host steps that communicate with other processes (``autograd._capture.collective``)

    @property
    def paused(self) -> bool:
        return self.off or self.suspended > 0

    def here(self) -> bool:
        return not self.paused and threading.get_ident() == self.thread

    # -- slots ------------------------------------------------------------------------------------------------
    def new_slot(self, kind: str, payload: Any, array: Any) -> int:
        s = len(self.slots)
        self.slots.append((kind, payload))
        if isinstance(array, np.ndarray):
            root = _root(array)
            self.keep.append(root)
            key = id(root)
        else:  # a torch tensor or a CuPy array: its memory
            key = root_of(array)
        self.roots.append(key)
        if kind in ("in", "ext", "grad"):
            self.tainted.add(key)
        return s

    def _add(self, ins: Instr) -> None:
        """Append ``ins``; what it makes or writes depends on the inputs when what it reads does (taint)."""
        self.instrs.append(ins)
        if ins.kind in "ro" or any(self.roots[s] in self.tainted for s in ins.reads):
            self.tainted |= {self.roots[r.s] for r in refs_in(ins.outs)} | ins.writes

    def constant(self, slot: int) -> bool:
        """Whether a slot's value is made of constants only (the same at every call)."""
        return self.roots[slot] not in self.tainted

    def wrap(self, a: Any, slot: int) -> TracedArray:
        t = _as_plain(a, TracedArray)
        t._s, t._g = slot, self.gen
        return t

    def adopt(self, a: Any, owner: Tensor | None) -> TracedArray:
        """The traced view of plain array ``a`` (read through tensor ``owner``, if any), made a slot once."""
        t = self.known.get(id(a))
        if t is not None:
            return t
        self.keep.append(a)
        base = self._traced_base(a)
        if base is not None:  # a view of traced memory made where NumPy could not see it
            if _ptr(a) == _ptr(base) and a.shape == base.shape and a.strides == base.strides and a.dtype == base.dtype:
                t = self.wrap(a, base._s)
            else:
                t = self.call(review, (base, _ptr(a) - _ptr(base), a.shape, a.strides, a.dtype), {})
        elif owner is not None and id(owner) not in self.born:
            leaf = self.grad_owner.get(id(owner))
            kind, payload = ("grad", leaf) if leaf is not None else ("ext", owner)
            t = self.wrap(a, self.new_slot(kind, payload, a))
            self.metas[t._s] = array_meta(owner, a)
        else:
            t = self.wrap(a, self.new_slot("const", a, a))
        self.known[id(a)] = t
        return t

    def input(self, a: Any) -> Any:
        if not isinstance(a, np.ndarray):  # a torch tensor or CuPy array: known by identity, not wrapped
            self.tknown[id(a)] = self.new_slot("in", None, a)
            self.keep.append(a)
            return a
        t = self.wrap(a, self.new_slot("in", None, a))
        self.known[id(a)] = t
        self.keep.append(a)
        return t

    def _unwrap(self, x: Any, reads: set[int]) -> tuple[Any, Any]:
        """``(plain value, template)`` of a call argument: traced arrays become ``Ref``s."""
        c = x.__class__
        if c is TracedArray and x._g == self.gen:
            reads.add(x._s)
            return _as_plain(x, np.ndarray), Ref(x._s)
        if isinstance(x, np.ndarray):
            p = _as_plain(x, np.ndarray) if c is not np.ndarray else x
            t = self.adopt(p, None)
            reads.add(t._s)
            return p, Ref(t._s)
        if self.array_types and isinstance(x, self.array_types):  # known by identity
            s = adopt(self, x, None)
            reads.add(s)
            return x, Ref(s)
        if c is tuple or c is list:
            pairs = [self._unwrap(v, reads) for v in x]
            return c(p for p, _ in pairs), c(t for _, t in pairs)
        if c is dict:
            d = {k: self._unwrap(v, reads) for k, v in x.items()}
            return {k: p for k, (p, _) in d.items()}, {k: t for k, (_, t) in d.items()}
        if isinstance(x, Tensor):
            self.flag("a Tensor was passed where an array was expected")
        return x, x

    def _wrap_result(self, res: Any, index: int) -> tuple[Any, Any]:
        """``(traced result, output template)``: each array becomes a new slot made by instruction ``index``."""
        if isinstance(res, np.ndarray):
            t = self.wrap(res, self.new_slot("out", index, res))
            self.layouts[t._s] = (res.shape, res.dtype, res.flags.c_contiguous)
            return t, Ref(t._s)
        if self.array_types and isinstance(res, self.array_types):  # torch, CuPy: a new slot, known by identity
            s = self.tknown[id(res)] = self.new_slot("out", index, res)
            self.keep.append(res)
            return res, Ref(s)
        if isinstance(res, np.generic):  # a NumPy scalar: kept as a 0-d array so that its use stays recorded
            a = original("asarray")(res)
            t = self.wrap(a, self.new_slot("out", index, a))
            return t, Ref(t._s)
        if isinstance(res, tuple | list):
            pairs = [self._wrap_result(v, index) for v in res]
            vals = [p for p, _ in pairs]
            out = res.__class__(*vals) if hasattr(res, "_fields") else res.__class__(vals)
            return out, res.__class__(t for _, t in pairs) if not hasattr(res, "_fields") else tuple(
                t for _, t in pairs
            )
        return res, None

    # -- recording calls --------------------------------------------------------------------------------------
    def call(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], write: int | None = None,
             kind: str = "k") -> Any:  # fmt: skip
        reads: set[int] = set()
        pargs, targs = self._unwrap(args, reads)
        pkw, tkw = self._unwrap(kwargs, reads) if kwargs else ({}, {})
        if fn in DATA_DEPENDENT or (fn in _REPEAT and len(targs) > 1 and isinstance(targs[1], Ref)):
            self.flag(f"{getattr(fn, '__name__', fn)}: a result whose shape depends on the values")
        elif fn is operator.getitem and bool_index(targs[1], pargs[1]):
            self.flag("boolean-mask indexing: a result whose shape depends on the values")
        self.suspended += 1  # what the call does inside (NumPy's own Python code) is not recorded
        try:
            res = fn(*pargs, **pkw)
        finally:
            self.suspended -= 1
        if self.off:
            return res
        writes: set[int] = set()
        out = kwargs.get("out") if kwargs else None
        if out is not None:
            for r in refs_in(tkw["out"]):
                writes.add(self.roots[r.s])
        if write is not None:
            writes.add(self.roots[targs[write].s] if isinstance(targs[write], Ref) else -1)
        index = len(self.instrs)
        if out is not None:
            result, touts = (out[0] if isinstance(out, tuple) and len(out) == 1 else out), None
        elif res is None or (fn in _METADATA):
            result, touts = res, None
            if fn in _METADATA:
                return res
        else:
            result, touts = self._wrap_result(res, index)
            if _has_scalar(res):  # kept as 0-d arrays at capture: the replay must make the same
                fn = _ZeroD(fn)
            if touts is None and write is None:  # a Python value computed from the arrays: a host read
                touts = Ref(self.new_slot("out", index, res))
                self._add(Instr(fn, targs, tkw, touts, kind, reads, writes))
                self.host_read_slot(touts.s, "value", (), res)
                return res
        self._add(Instr(fn, targs, tkw, touts, kind, reads, writes))
        return result

    def create(self, orig: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A NumPy creation function (``np.zeros``, ``np.asarray`` ...): recorded unless it returns its input."""
        for a in args[:1]:
            p = _as_plain(a, np.ndarray) if a.__class__ is TracedArray else a
            if isinstance(p, np.ndarray):
                self.suspended += 1
                try:
                    res = orig(p, *args[1:], **kwargs)
                finally:
                    self.suspended -= 1
                if res is p:
                    return a
                if a.__class__ is not TracedArray or a._g != self.gen:
                    # made from an untraced array (a constant): not recorded, still a constant
                    return res
                return self.call(orig, args, kwargs, kind="k")
            if hasattr(p, "__array_interface__") and self._traced_base(p) is not None:
                # NumPy's own view-maker (``as_strided``, ``sliding_window_view``): an object exposing traced
                # memory; its result is a view of that memory, replayed as one (a recorded call would keep the
                # captured memory and replay stale values)
                self.suspended += 1
                try:
                    res = orig(*args, **kwargs)
                finally:
                    self.suspended -= 1
                return self.adopt(res, None) if isinstance(res, np.ndarray) else res
        return self.call(orig, args, kwargs, kind="c")

    def _traced_base(self, a: Any) -> Any:
        """The traced array of this capture whose memory ``a`` (through its ``.base`` chain) is a view of."""
        base = getattr(a, "base", None)
        while base is not None and not (base.__class__ is TracedArray and base._g == self.gen):
            base = getattr(base, "base", None)
        return base

    def opaque(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """An ``@opaque`` call: run it as is, record it to be called again at replay."""
        if not self.here():
            return fn(*args, **kwargs)
        args = tuple(list(a) if isinstance(a, types.GeneratorType | map | filter | itertools.chain) else a
                     for a in args)  # fmt: skip
        targs = tuple(self._opaque_arg(a) for a in args)
        tkw = {k: self._opaque_arg(v) for k, v in kwargs.items()}
        self.suspended += 1
        try:
            res = fn(*args, **kwargs)
        finally:
            self.suspended -= 1
        index = len(self.instrs)
        self.collectives += bool(getattr(fn, "__ember_collective__", False))
        outs = []
        for r in tensors_in(res):
            a = _DATA.__get__(r)
            if not isinstance(a, np.ndarray):  # torch
                s = self.tknown[id(a)] = self.new_slot("out", index, a)
                self.keep.append(a)
                self.born.add(id(r))
                self.keep.append(r)
                outs.append(Ref(s))
                continue
            if a.__class__ is TracedArray:
                a = _as_plain(a, np.ndarray)
            t = self.wrap(a, self.new_slot("out", index, a))
            _DATA.__set__(r, t)
            self.born.add(id(r))
            self.keep.append(r)
            outs.append(Ref(t._s))
        handed = refs_in(targs) + refs_in(tkw)  # arrays of the step it may write (a collective): values from now on
        writes = {-1} | {self.roots[r.s] for r in handed}
        self._add(Instr(_Opaque(fn, len(outs)), targs, tkw, tuple(outs), "o", {r.s for r in handed}, writes))
        return res

    def _opaque_arg(self, a: Any) -> Any:
        if isinstance(a, Tensor) and id(a) in self.born:
            return TRef(self.adopt_tensor(a), a._backend)
        if isinstance(a, list | tuple) and any(isinstance(v, Tensor) and id(v) in self.born for v in a):
            return a.__class__(self._opaque_arg(v) for v in a)
        return a

    def adopt_tensor(self, t: Tensor) -> int:
        a = t._data  # through the recording property: a traced array (numpy) or a known tensor (torch)
        if a.__class__ is TracedArray:
            return a._s  # type: ignore[no-any-return]
        if not isinstance(a, np.ndarray):
            return adopt(self, a, None)
        return self.adopt(a, None)._s

    def rng(self, method: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A draw from a backend's generator method (``uniform``, ``normal`` ...): replayed as the same call."""
        if not self.here():
            return method(*args, **kwargs)
        reads: set[int] = set()
        pargs, targs = self._unwrap(args, reads)
        holder = self.rng_holders.get(id(pargs[0])) if pargs else None
        if (
            holder is not None
        ):  # read the Ember Generator's NumPy generator again at each replay (reseeding replaces it)
            targs = (LiveRng(holder), *targs[1:])
        self.suspended += 1
        try:
            res = method(*pargs, **kwargs)
        finally:
            self.suspended -= 1
        index = len(self.instrs)
        t, touts = self._wrap_result(res, index)
        self._add(Instr(method, targs, dict(kwargs), touts, "r", reads, set()))
        return t

    # -- Tensor attribute hooks -----------------------------------------------------------------------------------
    def on_get_data(self, t: Tensor, a: Any) -> Any:
        if not self.here() or id(t) in self.static_ids:
            return a
        if a.__class__ is TracedArray:
            a = _as_plain(a, np.ndarray)
        if not isinstance(a, np.ndarray):
            if not (self.array_types and isinstance(a, self.array_types)):
                self.flag(f"arrays of the {t._backend.name} backend are not captured yet")
                return a
            adopt(self, a, t)
            self.backends.add(t._backend)
            return a
        self.backends.add(t._backend)
        ta = self.adopt(a, t)
        _DATA.__set__(t, ta)
        if self.slots[ta._s][0] in ("ext", "grad") and id(t) not in self.born:
            self.restore.append((t, a))
        return ta

    def on_set_data(self, t: Tensor, v: Any) -> None:
        if not self.here():
            return
        try:
            _DATA.__get__(t)
        except AttributeError:  # a tensor being made
            self.born.add(id(t))
            self.keep.append(t)
            return
        if id(t) not in self.born:
            self.flag("the step replaces the data of a tensor made before it (t.data = ..., set_())")

    def on_get_grad(self, t: Tensor, g: Any) -> None:
        if not self.here() or id(t) in self.born:
            return
        if id(t) not in self.grad_state:
            self.grad_state[id(t)] = (t, g is None, len(self.instrs))
            self.keep.append(t)
        if g is not None and id(g) not in self.born:
            self.grad_owner[id(g)] = t
            self.keep.append(g)

    def on_set_grad(self, t: Tensor, v: Any, current: Any) -> None:
        if not self.here() or id(t) in self.born:
            return
        self.on_get_grad(t, current)
        if v is None:
            self._add(Instr(set_grad, (t, None, None), {}, None, "g", set(), set()))
            return
        s = self.adopt_tensor(v)
        self._add(Instr(set_grad, (t, Ref(s), v._backend), {}, None, "g", {s}, set()))

    # -- reads of values, and what cannot be captured ------------------------------------------------------------
    def host_read(self, ta: Any, kind: str, value: Any, args: tuple[Any, ...]) -> None:
        """A value read on the host from traced array ``ta`` (``bool(a)``, ``a.item()`` ...)."""
        if ta._g != self.gen:
            return
        self.host_read_slot(ta._s, kind, args, value)

    def host_read_slot(self, slot: int, kind: str, args: tuple[Any, ...], value: Any) -> None:
        if self.constant(slot):
            return  # a value of constants only: the same at every call
        site, inside = caller()
        if not inside or kind in ("print", "tobytes", "complex"):
            self.flag(f"a value is read on the host ({KIND_WORDS.get(kind, kind)})", site)
        else:
            self.value_guards.append((slot, kind, args, value, len(self.instrs), site))

    def tensor_read(self, t: Tensor, name: str, fn: Callable[..., Any], args: tuple[Any, ...], kw: Any) -> Any:
        """A Tensor method that reads values (``item``, ``float()``, ``bool()``, ``numpy``, printing)."""
        if id(t) in self.static_ids or self.constant(self.adopt_tensor(t)):
            return fn(t, *args, **kw)  # a value made of static arguments and constants only
        site, inside = caller()
        if not inside or name not in GUARDABLE:
            self.flag(f"{KIND_WORDS.get(name, name)} reads a tensor's value on the host", site)
            return fn(t, *args, **kw)
        s = self.adopt_tensor(t)
        self.suspended += 1
        try:
            value = fn(t, *args, **kw)
        finally:
            self.suspended -= 1
        self.value_guards.append((s, GUARDABLE[name], args, value, len(self.instrs), site))
        return value

    def flag(self, what: str, site: Any = None) -> None:
        """Something that cannot be captured: ``fullgraph`` raises; otherwise the call finishes eagerly."""
        if site is None:
            site = caller()[0]
        if self.fullgraph:
            self.off = True
            raise CaptureError(f"ember.compile(fullgraph=True): {what}, at {where(site)}")
        if self.problem is None:
            self.problem = (what, site)
        self.off = True
