"""The engine's general per-node step (``_step``): the checks that guard a node, its output hooks and captured
gradients, and its rule on arrays or on Tensors. The scheduler (``_engine._run``) runs the usual node itself and
hands every other one here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ._engine_checks import _complex_to_input
from ._node import _ZERO
from ._saved_hooks import run_special

__all__: list[str] = []


class KernelRegion:
    """The backend's ``kernel_region`` (if any) held through the scheduler's loop, left while user code may run:
    ``pause()`` before a hook or a user Function's backward, ``resume()`` after (torch: its autograd layer is
    skipped only around Ember's own array rules, never around code that might use torch's autograd)."""

    __slots__ = ("held", "make")

    def __init__(self, make: Callable[[], Any] | None) -> None:
        self.make = make
        self.held: Any = None

    def __enter__(self) -> KernelRegion:
        self.resume()
        return self

    def __exit__(self, *exc: object) -> None:
        self.pause()

    def resume(self) -> None:
        if self.make is not None and self.held is None:
            held = self.make()
            held.__enter__()
            self.held = held

    def pause(self) -> None:
        held = self.held
        if held is not None:
            self.held = None
            held.__exit__(None, None, None)


def _wrap(array: Any, backend: Any) -> Tensor:
    if array.__class__ is not backend.array_type:
        array = backend.asarray(array)
    return Tensor._make(array, backend)


def _step(
    node: Any,
    grads: list[Any],
    arrays: bool,
    anomaly: bool,
    detached: bool,
    create_graph: bool,
    capture: dict[tuple[int, int], Any] | None,
    retain_graph: bool = True,
) -> tuple[Any, ...]:
    """One node's step: ``grads`` (its outputs' gradients) in, the gradients for its inputs out.

    The checks that guard it (its graph was freed; a saved input changed in place), its output hooks and
    captured gradients, then its rule: ``backward_arrays`` on arrays (first order) or ``backward`` on Tensors.
    """
    inputs = node.inputs
    if inputs is None:
        raise RuntimeError(
            f"backward: trying to go through the graph of {node.name} a second time, but its saved "
            "values were freed by the first backward; pass retain_graph=True to the first call"
        )
    be = node.backend
    if node._out_refs:
        _output_hooks(node, grads, create_graph, be if arrays else None)
    if capture is not None:
        for i in range(node.n_out):
            key = (id(node), i)
            if key in capture and grads[i] is not None:
                capture[key] = _wrap(grads[i], be) if arrays else grads[i]
    vs = node._versions
    if vs:  # a saved input changed in place since: the slow check names it (or allows it)
        if vs is _ZERO:
            for a in inputs:
                if isinstance(a, Tensor) and a._vcl and a._vcl[0]:
                    node._check_versions()
                    break
        else:
            for a, v in zip(inputs, vs):
                if v >= 0 and a._vc[0] != v:
                    node._check_versions()
                    break
        if detached:
            node._check_detached()
    ex = node._extra
    if ex is not None:  # hooks of its own, or saved values packed by saved_tensors_hooks (``_saved_hooks.py``)
        out = run_special(node, grads, arrays, lambda gs: _rule(node, gs, arrays, anomaly))
        if not retain_graph and ex.packed is not None and node._array_io:
            ex.packed = None  # the graph is freed: so are the packed values
    else:
        out = _rule(node, grads, arrays, anomaly)
    if len(out) < len(node._edges):
        raise RuntimeError(f"{node.name}: backward returned {len(out)} gradients for {len(inputs)} inputs")
    return out


def _rule(node: Any, grads: list[Any], arrays: bool, anomaly: bool) -> tuple[Any, ...]:
    """The node's rule: ``backward_arrays`` on arrays (first order; else ``backward`` wrapped), or ``backward``."""
    be = node.backend
    if arrays:
        fast = type(node).backward_arrays
        if fast is not None:
            out = fast(node, *grads)
            if out.__class__ is not tuple:
                out = (out,)
        else:  # a rule on Tensors only (user Functions, some ops): wrap in, unwrap out
            if node._out_meta and node._materialize:
                grads = _materialized(node, grads, be.xp)
            out = type(node).backward(node, *[g if g is None else _wrap(g, be) for g in grads])
            out = _unwrap(node, out if out.__class__ is tuple else (out,))
    else:
        if node._out_meta and node._materialize and any(g is None for g in grads):
            zeros = _materialized(node, [None] * len(grads), be.xp)  # (Tensors kept: they carry create_graph's graph)
            grads = [_wrap(z, be) if g is None else g for g, z in zip(grads, zeros, strict=True)]
        out = type(node).backward(node, *grads)
        if out.__class__ is not tuple:
            out = (out,)
        if anomaly:
            from ._anomaly import check_backward

            check_backward(node, out)
    return out


def _materialized(node: Any, grads: list[Any], xp: Any) -> list[Any]:
    """A user Function's output gradients with zeros where an output received none (PyTorch's default)."""
    if all(g is not None for g in grads):
        return grads
    return [xp.zeros(shape, dtype=dt) if g is None else g for g, (shape, dt) in zip(grads, node._out_meta)]


def _unwrap(node: Any, out: tuple[Any, ...]) -> tuple[Any, ...]:
    """A Tensor rule's gradients as arrays, each in its input's dtype (PyTorch's engine casts them too: a user
    Function's backward may compute in another precision, e.g. under ``custom_bwd``'s autocast)."""
    res: list[Any] = []
    ins = node.inputs or ()
    for k, g in enumerate(out):
        if g is None:
            res.append(None)
            continue
        if not isinstance(g, Tensor):
            raise TypeError(f"{node.name}: backward must return Tensors or None, got {type(g).__name__}")
        inp = ins[k] if k < len(ins) else None
        if isinstance(inp, Tensor) and g._data.dtype is not inp._data.dtype:
            g = _complex_to_input(g, inp)
        res.append(g._data)
    return tuple(res)


def _output_hooks(node: Any, grads: list[Any], create_graph: bool, backend: Any) -> None:
    """Run hooks registered on a node's outputs and keep retained gradients (``backend``: grads are arrays)."""
    for i, ref in list(node._out_refs.items()):
        t = ref()
        if t is None or grads[i] is None:
            continue
        g = grads[i] if backend is None else _wrap(grads[i], backend)
        if t._hooks:
            g = _run_hooks(t._hooks, g)
            grads[i] = g if backend is None else g._data
        if t._retain:
            t._grad = g if create_graph else g.detach()


def _run_hooks(hooks: list[Callable[[Tensor], Any]], g: Tensor) -> Tensor:
    for h in list(hooks):
        r = h(g)
        if r is not None:
            g = r
    return g
