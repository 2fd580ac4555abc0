"""What a program is made of: slot references, instructions, and the small callables a replay runs.

``Ref``/``TRef`` stand for slots inside argument templates; an ``Instr`` is one recorded call. ``set_grad``,
``_Opaque``, ``_ZeroD``, ``review`` and ``LiveRng`` are what the generated program calls or reads besides
NumPy's own functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._tensor import Tensor
from .._tensor_grad import TensorGradFields

__all__ = ["Ref", "TRef", "LiveRng", "Instr", "set_grad", "review", "tensors_in", "refs_in"]

_DATA: Any = Tensor.__dict__["_data"]
_GRAD: Any = TensorGradFields.__dict__["_grad"]  # the raw slot behind the checked ``grad`` property


class Ref:
    """A slot in an argument template (``s``: the slot number)."""

    __slots__ = ("s",)

    def __init__(self, s: int) -> None:
        self.s = s

    def __repr__(self) -> str:
        return f"s{self.s}"


class TRef(Ref):
    """A Tensor made of a slot's array at replay (an argument of an opaque call)."""

    __slots__ = ("backend",)

    def __init__(self, s: int, backend: Any) -> None:
        super().__init__(s)
        self.backend = backend


class LiveRng:
    """An Ember ``Generator``'s current NumPy generator, read at replay (``holder._rng``)."""

    __slots__ = ("holder",)

    def __init__(self, holder: Any) -> None:
        self.holder = holder

    @property
    def bit_generator(self) -> Any:
        return self.holder._rng.bit_generator


class Instr:
    """One recorded call: ``outs = fn(*args, **kwargs)``, templates holding ``Ref``s for slots.

    ``kind``: "k" a kernel (pure unless ``writes``), "c" a creation, "r" a random draw, "o" an opaque call,
    "g" a ``.grad`` assignment. ``reads``: the slots it reads; ``writes``: the memory roots it writes.
    """

    __slots__ = ("args", "fn", "kind", "kwargs", "outs", "reads", "writes")

    def __init__(self, fn: Any, args: Any, kwargs: Any, outs: Any, kind: str, reads: set[int], writes: set[int]):
        self.fn, self.args, self.kwargs, self.outs, self.kind = fn, args, kwargs, outs, kind
        self.reads, self.writes = reads, writes

    def __repr__(self) -> str:
        name = getattr(self.fn, "__name__", type(self.fn).__name__)
        return f"<{self.kind} {self.outs} = {name}{self.args}>"


def _root(a: Any) -> Any:
    """The object owning ``a``'s memory (the end of its ``.base`` chain)."""
    while True:
        b = getattr(a, "base", None)
        if b is None:
            return a
        a = b


def _ptr(a: Any) -> int:
    return a.__array_interface__["data"][0]  # type: ignore[no-any-return]


def review(b: Any, offset: int, shape: tuple[int, ...], strides: tuple[int, ...], dtype: Any) -> Any:
    """The view of ``b``'s memory starting ``offset`` bytes after ``b``'s first element (replays a view that
    some code made without NumPy seeing it, e.g. ``as_strided``)."""
    r = b
    while isinstance(r.base, np.ndarray):
        r = r.base
    return np.ndarray(shape, dtype, buffer=r, offset=_ptr(b) - _ptr(r) + offset, strides=strides)


def refs_in(t: Any) -> list[Ref]:
    if isinstance(t, Ref):
        return [t]
    if isinstance(t, tuple | list):
        return [r for v in t for r in refs_in(v)]
    if isinstance(t, dict):
        return [r for v in t.values() for r in refs_in(v)]
    return []


def tensors_in(x: Any) -> list[Tensor]:
    if isinstance(x, Tensor):
        return [x]
    if isinstance(x, tuple | list):
        return [t for v in x for t in tensors_in(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in tensors_in(v)]
    return []


#: while ``_cuda_graph`` runs a program to capture it into a graph: what receives its opaque calls and ``.grad``
#: assignments (``on_opaque``/``on_set_grad``), else None
GRAPH_RUN: list[Any] = [None]


class _Opaque:
    """An opaque call at replay: arguments rebuilt (Tensors of slots), the result's tensors' arrays returned."""

    __slots__ = ("__name__", "fn", "n")

    def __init__(self, fn: Callable[..., Any], n: int) -> None:
        self.fn, self.n = fn, n
        self.__name__ = getattr(fn, "__name__", "opaque")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        run = GRAPH_RUN[0]
        if run is not None:
            return run.on_opaque(self)
        res = self.fn(*args, **kwargs)
        if not self.n:
            return ()
        return tuple(_DATA.__get__(t) for t in tensors_in(res))


def _has_scalar(res: Any) -> bool:
    if isinstance(res, np.generic):
        return True
    return isinstance(res, tuple | list) and any(isinstance(v, np.generic) for v in res)


class _ZeroD:
    """A call whose NumPy-scalar results are made 0-d arrays (as they were while recording)."""

    __slots__ = ("__name__", "fn")

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", "call")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        res = self.fn(*args, **kwargs)
        if isinstance(res, np.generic):
            return _ASARRAY(res)
        if isinstance(res, tuple | list):
            vals = [_ASARRAY(v) if isinstance(v, np.generic) else v for v in res]
            return res.__class__(*vals) if hasattr(res, "_fields") else res.__class__(vals)  # a namedtuple: slogdet
        return res


_ASARRAY = np.asarray


def set_grad(leaf: Tensor, a: Any, backend: Any) -> None:
    """``leaf.grad = Tensor(a)`` (``a`` None: ``leaf.grad = None``) at replay."""
    _GRAD.__set__(leaf, None if a is None else Tensor._make(a, backend))
    run = GRAPH_RUN[0]
    if run is not None:
        run.on_set_grad(leaf, a, backend)
