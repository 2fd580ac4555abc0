"""Saved-tensor hooks and per-node hooks: the one place where a node's saved values are packed and unpacked.

``ember.autograd.graph.saved_tensors_hooks(pack, unpack)`` pushes a pair on this thread's stack. ``Function.apply``
reads ``SAVED_ON[0]`` (the number of such blocks open in all threads) once per recorded node; only when it is
non-zero does it call :func:`pack_node`, which hands every value the node saved for backward to this thread's
innermost ``pack`` hook:

- an operator's inputs whose values its backward reads (``saves_inputs`` and ``value_needed(i)``), as the input
  Tensors themselves;
- its kept outputs (``saves_output``), as the output Tensors;
- any other array it stored on itself in ``forward`` (a mask, indices, statistics), as a Tensor around the array;
- a user Function's ``ctx.save_for_backward`` Tensors.

The node then holds only the packed objects and stand-ins of the same shape and dtype (zero-strided arrays)
carrying the inputs' graph fields. Such a node, and one with hooks of its own (``Node.register_hook`` /
``register_prehook``), gets a class of its own without the engine's array fast path (:func:`special_class`), so the
engine hands it to ``_step``, which calls :func:`run_special`: prehooks, ``unpack`` of each saved value (once per
backward, as PyTorch), the node's own rule, then its hooks; the stand-ins are put back after.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ._grad_mode import STATE, no_grad

__all__: list[str] = []

#: the number of ``saved_tensors_hooks`` blocks open now in all threads (0: ``apply`` packs nothing)
SAVED_ON = [0]

#: names of node state that is never packed as an op's own saved array
_STATE_KEYS = frozenset(
    {"inputs", "_edges", "_outs", "_versions", "_out_vcs", "_out_vs", "backend", "generation", "n_out", "_out_refs"}
)


class _Local(threading.local):
    def __init__(self) -> None:
        self.stack: list[tuple[Callable[[Any], Any], Callable[[Any], Any]]] = []
        self.disabled: str | None = None


LOCAL = _Local()


class Extra:
    """What a special node carries: its original class, packed saved values, and its own hooks."""

    __slots__ = ("cls", "hooks", "packed", "prehooks")

    def __init__(self, cls: type) -> None:
        self.cls = cls
        #: list of ``(kind, key, packed, unpack, standin_or_None)``; kind: "in", "out", "attr", "saved"
        self.packed: list[tuple[str, Any, Any, Callable[[Any], Any], Any]] | None = None
        self.hooks: list[Callable[..., Any]] = []
        self.prehooks: list[Callable[..., Any]] = []


_SPECIAL: dict[type, type] = {}


def special_class(cls: type) -> type:
    """``cls`` without the engine's array fast path (so the engine calls ``_step`` for it)."""
    c = _SPECIAL.get(cls)
    if c is None:
        c = type(cls.__name__, (cls,), {"backward_arrays": None, "__module__": cls.__module__, "_is_special": True})
        c.__qualname__ = cls.__qualname__
        _SPECIAL[cls] = c
    return c


def extra_of(node: Any) -> Extra:
    """The node's ``Extra`` (made, and its class made special, on first use)."""
    ex = node.__dict__.get("_extra")
    if ex is None:
        ex = node._extra = Extra(type(node))
        if node._array_io:
            node.__class__ = special_class(type(node))
    return ex


def _standin(a: Tensor, keep_counter: bool) -> Tensor:
    t = Tensor._make(_zeros_like(a._backend, a._data), a._backend)
    t._requires_grad, t._creator, t._out_idx = a._requires_grad, a._creator, a._out_idx
    # the packed value is the tensor itself: a later in-place change to it is still seen (and refused)
    t._vcl = a._vc if keep_counter else [a._vcl[0] if a._vcl else 0]
    return t


def _zeros_like(be: Any, v: Any) -> Any:
    """A stand-in for a packed array: zero-strided, of its shape and dtype (holds no memory)."""
    xp = be.xp
    return xp.broadcast_to(xp.zeros((), dtype=v.dtype), v.shape)


def pack_node(fn: Any, results: tuple[Tensor, ...]) -> None:
    """Pack every value ``fn`` saved for backward with this thread's innermost hooks (none: nothing happens)."""
    stack = LOCAL.stack
    if not stack or (fn.__dict__.get("_extra") is not None and fn._extra.packed is not None):
        return
    pack, unpack = stack[-1]
    packed: list[tuple[str, Any, Any, Callable[[Any], Any], Any]] = []
    with no_grad():
        if fn._array_io:
            ins = fn.inputs
            if fn.saves_inputs and ins is not None:
                new = list(ins)
                for i, a in enumerate(ins):
                    if isinstance(a, Tensor) and fn.value_needed(i):
                        p = pack(a)
                        new[i] = _standin(a, p is a)
                        packed.append(("in", i, p, unpack, a if p is a else None))
                fn.inputs = tuple(new)
            if fn.saves_output and fn._outs:
                outs = list(fn._outs)
                vcs = list(fn._out_vcs)
                for i, r in enumerate(results):
                    if i < len(outs) and outs[i] is not None:
                        p = pack(r)
                        if p is not r:
                            vcs[i] = [fn._out_vs[i]]  # the packed copy no longer follows the output's writes
                        outs[i] = None
                        packed.append(("out", i, p, unpack, None))
                fn._outs = tuple(outs)
                fn._out_vcs = tuple(vcs)
            be = fn.backend
            atype = be.array_type
            for k, v in list(fn.__dict__.items()):
                if k in _STATE_KEYS:
                    continue
                if v.__class__ is atype:
                    packed.append(("attr", k, pack(Tensor._make(v, be)), unpack, None))
                    setattr(fn, k, _zeros_like(be, v))
                elif v.__class__ in (tuple, list) and any(e.__class__ is atype for e in v):
                    items = list(v)
                    for j, e in enumerate(v):
                        if e.__class__ is atype:
                            packed.append(("attr", (k, j), pack(Tensor._make(e, be)), unpack, None))
                            items[j] = _zeros_like(be, e)
                    setattr(fn, k, v.__class__(items))
        else:
            saved = fn.__dict__.get("_saved") or ()
            for i, t in enumerate(saved):
                if isinstance(t, Tensor):
                    packed.append(("saved", i, pack(t), unpack, None))
            if saved:
                fn._saved = tuple(None if isinstance(t, Tensor) else t for t in saved)
    if packed:
        extra_of(fn).packed = packed


def _unpacked(kind: str, p: Any, unpack: Callable[[Any], Any]) -> Tensor:
    with no_grad():
        u = unpack(p)
    if not isinstance(u, Tensor):
        raise TypeError(
            f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type {type(u).__name__}"
        )
    return u


def unpack_saved(node: Any) -> tuple[Any, ...]:
    """A user Function's saved Tensors, unpacked now (``ctx.saved_tensors``)."""
    saved = list(node._saved)
    for kind, i, p, unpack, _ in node._extra.packed:
        if kind == "saved":
            saved[i] = _unpacked(kind, p, unpack)
    return tuple(saved)


@functools.cache
def _unpacked_leaf_op() -> Any:
    from ._function import Op

    class UnpackedLeaf(Op):
        """Passes a gradient to the saved leaf whose unpacked value it carries."""

        saves_inputs = False

        def backward(self, g: Tensor) -> Tensor:
            return g

    return UnpackedLeaf


def _restored_leaf(value: Tensor, leaf: Tensor) -> Tensor:
    """A tensor of a saved leaf's unpacked value whose gradient goes to the leaf (backward with ``create_graph``)."""
    from ._function import record_node

    cls = _unpacked_leaf_op()
    t = Tensor._make(value._data, leaf._backend)
    node = cls.__new__(cls)
    node.backend = leaf._backend
    record_node(node, (leaf,), t)
    return t


def _unpack_into(node: Any, ex: Extra) -> tuple[Any, Any, dict[str, Any]]:
    """Put the unpacked values in place; returns what to put back (inputs, outputs, attributes)."""
    old_in, old_outs = node.inputs, node._outs
    old_attrs: dict[str, Any] = {}
    ins = list(old_in) if old_in is not None else None
    outs = list(old_outs)
    grad_on = STATE.enabled
    for kind, key, p, unpack, orig in ex.packed or ():
        if kind == "saved":
            continue
        u = _unpacked(kind, p, unpack)
        if kind == "in" and ins is not None:
            s = ins[key]
            e = node._edges[key] if node._edges is not None else None
            if u is orig:  # the saved tensor itself, as it was packed
                ins[key] = u
                continue
            if grad_on and e.__class__ is tuple and e[0] is None:  # a leaf: gradients of the backward reach it
                t = _restored_leaf(u, e[1])
            else:
                t = Tensor._make(u._data, s._backend)
                t._requires_grad, t._creator, t._out_idx = s._requires_grad, s._creator, s._out_idx
            t._vcl = s._vcl
            ins[key] = t
        elif kind == "out":
            outs[key] = u._data
        elif key.__class__ is str:
            old_attrs.setdefault(key, getattr(node, key))
            setattr(node, key, u._data)
        else:  # an array in a tuple or list attribute
            k, j = key
            v = getattr(node, k)
            old_attrs.setdefault(k, v)
            items = list(v)
            items[j] = u._data
            setattr(node, k, v.__class__(items))
    if ins is not None:
        node.inputs = tuple(ins)
    node._outs = tuple(outs)
    return old_in, old_outs, old_attrs


def run_special(node: Any, grads: list[Any], arrays: bool, step: Callable[[list[Any]], tuple[Any, ...]]) -> Any:
    """A special node's step: prehooks, its saved values unpacked, its rule (``step``), then its hooks."""
    ex: Extra = node._extra
    be = node.backend
    if ex.prehooks:
        gt = tuple(None if g is None else (Tensor._make(g, be) if arrays else g) for g in grads)
        for h in list(ex.prehooks):
            r = h(gt)
            if r is not None:
                gt = tuple(r)
        grads = [None if g is None else (g._data if arrays else g) for g in gt]
    cls = type(node)
    restore = None
    if ex.packed is not None and node.inputs is not None:
        restore = _unpack_into(node, ex)
    node.__class__ = ex.cls  # its own rule, fast path included
    try:
        out = step(grads)
    finally:
        node.__class__ = cls
        if restore is not None:
            old_in, old_outs, old_attrs = restore
            if node.inputs is not None:
                node.inputs = old_in
            if node._outs:
                node._outs = old_outs
            for k, v in old_attrs.items():
                setattr(node, k, v)
    if ex.hooks:
        gi = tuple(None if g is None else (Tensor._make(g, be) if arrays else g) for g in out)
        go = tuple(None if g is None else (Tensor._make(g, be) if arrays else g) for g in grads)
        for h in list(ex.hooks):
            r = h(gi, go)
            if r is not None:
                gi = tuple(r)
        out = tuple(None if g is None else (g._data if arrays else g) for g in gi)
    return out
