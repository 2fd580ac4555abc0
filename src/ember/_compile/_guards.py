"""Guards: what a program assumed when it was recorded, checked before each replay.

The arguments: their structure, every tensor's backend, shape, dtype, strides and ``requires_grad``, and every
other argument's value (numbers by value, other objects by identity) — so a Python value a step reads from its
arguments is recaptured when it changes. The world: the arrays of the tensors the step read from outside
(parameters, buffers: shape, dtype, strides, ``requires_grad``), whether parameters had a gradient, the
``training`` flag of every module the function can reach, grad mode, anomaly mode, the default dtype, the
backend selection, and the autocast state.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ..amp.autocast_mode import autocast_state
from ..autograd._grad_mode import STATE
from ._instr import _DATA, _GRAD
from ._tracer import Tracer

__all__ = ["flatten", "World", "describe_change", "modules_of", "array_meta"]


def _meta(t: Tensor) -> tuple[Any, ...]:
    return array_meta(t, _DATA.__get__(t))


def array_meta(t: Tensor, a: Any) -> tuple[Any, ...]:
    """What a program assumes of a tensor: backend, shape, dtype, strides, ``requires_grad``."""
    return (t._backend, tuple(a.shape), a.dtype, getattr(a, "strides", None) or _torch_strides(a), t.requires_grad)


def _torch_strides(a: Any) -> Any:
    s = getattr(a, "stride", None)
    return s() if callable(s) else None


def _key(x: Any, leaves: list[Tensor], static: bool) -> Any:
    if isinstance(x, Tensor):
        if static:  # a static tensor argument: its values count, as a Python value's do
            return ("S", _meta(x), x._backend.to_numpy(_DATA.__get__(x)).tobytes())
        leaves.append(x)
        return _meta(x)
    c = x.__class__
    if c is tuple or c is list:
        return (c, tuple(_key(v, leaves, static) for v in x))
    if c is dict:
        return (c, tuple(x), tuple(_key(v, leaves, static) for v in x.values()))
    if c is float:
        return (c, repr(x))
    if c in (int, bool, str, bytes, type(None)) or x is Ellipsis:
        return (c, x)
    return (c, id(x))  # objects (modules, optimizers, functions): by identity


def flatten(
    args: tuple[Any, ...], kwargs: dict[str, Any], static: frozenset[Any]
) -> tuple[list[Tensor], tuple[Any, ...]]:
    """The tensor arguments in order, and the key of everything else (one entry per argument)."""
    leaves: list[Tensor] = []
    key = tuple(_key(a, leaves, i in static) for i, a in enumerate(args))
    if kwargs:
        key += tuple((k, _key(v, leaves, k in static)) for k, v in sorted(kwargs.items()))
    return leaves, key


def describe_change(fn: Callable[..., Any], old: tuple[Any, ...], new: tuple[Any, ...]) -> str:
    """Which argument differs between two keys, in words (for the warning when the cache is full)."""
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        names = []
    for i, (a, b) in enumerate(zip(old, new, strict=False)):
        if a != b:
            name = a[0] if isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], str) else None
            if name is None:
                name = names[i] if i < len(names) else f"#{i}"
            return f"argument {name!r} ({_words(a)} -> {_words(b)})"
    return "the number of arguments"


def _words(k: Any) -> str:
    if isinstance(k, tuple) and len(k) == 5 and isinstance(k[1], tuple):
        return f"tensor of shape {tuple(k[1])}, {k[2]}"
    s = repr(k)
    return s if len(s) < 60 else s[:57] + "..."


class World:
    """The state outside the arguments that a program depends on: ``check()`` is None while it holds, else
    what changed. Made before the call (modules, modes), completed from the recording (``finish``)."""

    def __init__(self, modules: list[Any]) -> None:
        checks: list[tuple[str, Callable[[], Any]]] = []
        flags = [m for root in modules for m in root.modules()]
        if flags:
            what = "a module's training flag, hooks, parameters or sub-modules"
            checks.append((what, _ModuleWatch(flags)))
        checks.append(("grad mode", _grad_mode))
        checks.append(("the default dtype or device, the backend selection or deterministic mode", _environment))
        checks.append(("the autocast state", autocast_state))
        self.checks = checks
        self.expected = [get() for _, get in checks]
        self.input_grads: list[tuple[int, bool]] = []
        # plain tensor attributes before the call: those the program reads are guarded by identity (``finish``)
        self.attributes = [(m, k, v) for m in flags for k, v in m.__dict__.items() if isinstance(v, Tensor)]
        self.states: list[tuple[Any, Any]] = []  # (stateful object, its state when the call began)

    def finish(self, tr: Tracer, inputs: list[Tensor]) -> None:
        """Add what the recording read from outside, with the values it had when first read."""
        input_ids = {id(t) for t in inputs}
        first_opaque = next((i for i, ins in enumerate(tr.instrs) if ins.kind == "o"), len(tr.instrs))
        for s, (kind, payload) in enumerate(tr.slots):
            if kind in ("ext", "grad") and id(payload) not in input_ids:
                get = functools.partial(_meta, payload) if kind == "ext" else functools.partial(_grad_meta, payload)
                what = f"the data of a tensor of shape {tr.metas[s][1]}" if kind == "ext" else "a .grad's layout"
                self.checks.append((what, get))
                self.expected.append(tr.metas[s])
        read = {id(p) for kind, p in tr.slots if kind == "ext"}
        held = [(m, k, v) for m, k, v in self.attributes if id(v) in read]  # (self.h = ...: recaptured)
        if held:
            what, get = "a module's tensor attribute the program reads", functools.partial(_attributes, held)
            self.checks.append((what, get))
            self.expected.append(tuple(id(v) for _, _, v in held))  # (as before the call)
        self.attributes = []
        for key in tr.touched:  # DistributedDataParallel's sync flags (no_sync(), a forward without gradients)
            if key not in tr.entry_states:
                continue  # (made during the call: a new one at every call, nothing to guard)
            obj, state = tr.entry_states[key]
            self.states.append((obj, state))
            self.checks.append((f"the sync state of a {type(obj).__name__} (no_sync(), or a forward without "
                                "gradients before)", obj._capture_state))  # fmt: skip
            self.expected.append(state)
        for leaf, was_none, when in tr.grad_state.values():
            if id(leaf) in input_ids:
                self.input_grads += [(i, was_none) for i, t in enumerate(inputs) if t is leaf]
            elif when <= first_opaque:  # (after an opaque zero_grad the program sets it itself)
                self.checks.append((f"whether a parameter of shape {tuple(leaf.shape)} has a .grad",
                                    functools.partial(_no_grad, leaf)))  # fmt: skip
                self.expected.append(was_none)

    def restore_states(self) -> None:
        """Put the stateful objects back as they were when the call began (before a checked replay's eager run)."""
        for obj, state in self.states:
            obj._capture_restore(state)

    def check(self, inputs: list[Tensor]) -> str | None:
        for (what, get), want in zip(self.checks, self.expected, strict=True):
            if get() != want:
                return what
        for i, was in self.input_grads:
            if (_GRAD.__get__(inputs[i]) is None) != was:
                return f"whether input tensor {i} has a .grad"
        return None


def _grad_mode() -> tuple[bool, bool]:
    return STATE.enabled, STATE.anomaly


def _no_grad(t: Tensor) -> bool:
    return _GRAD.__get__(t) is None


def _grad_meta(t: Tensor) -> Any:
    g = _GRAD.__get__(t)
    return None if g is None else _meta(g)


def _module_state(modules: list[Any]) -> tuple[Any, ...]:
    """Each module's ``training`` flag, how many hooks it has (hooks added later would not be replayed), and which
    parameters, buffers and sub-modules it holds (one assigned anew: a program would read the old one)."""
    return tuple((m.training, len(m._pre_hooks), len(m._fwd_hooks), len(m._bwd_hooks), *map(id, m._params.values()),
                  None, *map(id, m._modules.values())) for m in modules)  # fmt: skip


def _attributes(held: list[tuple[Any, str, Tensor]]) -> tuple[int, ...]:
    return tuple(id(m.__dict__.get(name)) for m, name, _ in held)


class _ModuleWatch:
    """``_module_state`` of some modules, recomputed only when a module changed since (``STRUCTURE`` moved), or
    at every call when one of them holds dicts that do not count their writes (a module unpickled from before)."""

    def __init__(self, modules: list[Any]) -> None:
        from ..nn._module_slots import STRUCTURE, Slots

        self.modules, self.count = modules, STRUCTURE
        self.watched = all(type(m.__dict__.get(k)) is Slots for m in modules
                           for k in ("_params", "_modules", "_pre_hooks", "_fwd_hooks", "_bwd_hooks"))  # fmt: skip
        self.seen, self.state = -1, ()

    def __call__(self) -> tuple[Any, ...]:
        if not self.watched or self.seen != self.count[0]:
            self.seen, self.state = self.count[0], _module_state(self.modules)
        return self.state


def _environment() -> Any:
    from .._determinism import are_deterministic_algorithms_enabled
    from .._device import current_default
    from .._dtype import get_default_dtype
    from ..backends import _SELECTED

    d = current_default()  # (a device's equality ignores which backend serves it)
    return (get_default_dtype(), d and (str(d), d.backend), tuple(sorted(_SELECTED.items())),
            are_deterministic_algorithms_enabled())  # (CuPy's index_add takes another kernel)  # fmt: skip


def modules_of(fn: Any, args: tuple[Any, ...]) -> list[Any]:
    """The modules a function can reach: its ``self``, closure cells, globals it names, its arguments."""
    from ..nn.module import Module

    found: dict[int, Any] = {}

    def add(v: Any) -> None:
        if isinstance(v, Module):
            found.setdefault(id(v), v)
        elif isinstance(v, list | tuple) and len(v) < 64:
            for x in v:
                if isinstance(x, Module):
                    found.setdefault(id(x), x)

    seen: set[int] = set()

    def visit(f: Any, depth: int) -> None:
        if depth > 3 or id(f) in seen:
            return
        seen.add(id(f))
        add(getattr(f, "__self__", None))
        f = getattr(f, "__func__", f)
        code = getattr(f, "__code__", None)
        if code is None:
            if isinstance(f, Module):
                add(f)
            return
        for cell in getattr(f, "__closure__", None) or ():
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            add(v)
            if callable(v) and not isinstance(v, type):
                visit(v, depth + 1)
        g = getattr(f, "__globals__", {})
        for name in _names(code):
            v = g.get(name)
            if v is not None:
                add(v)
                if inspect.isfunction(v):
                    visit(v, depth + 1)

    visit(fn, 0)
    for a in args:
        add(a)
    return list(found.values())


def _names(code: Any) -> set[str]:
    names = set(code.co_names)
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            names |= _names(c)
    return names
