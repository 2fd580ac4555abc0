"""A graph node's state, and what it saved for backward with the checks that refuse a stale saved value.

``Node`` is the base of :class:`~ember.autograd._function.Function`: ``Function.apply`` fills the state below when
it records a node; the engine reads it, and the checks here run when a saved value was changed in place (or
detached in place) before backward.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any

from .._hooks import RemovableHandle
from .._tensor import Tensor
from ._grad_mode import STATE
from ._saved_hooks import extra_of, unpack_saved

__all__ = ["Node"]


class _AllZero:
    """``Function._versions`` when every Tensor input was at version 0 (the usual case: nothing stored)."""

    def __repr__(self) -> str:
        return "<all inputs at version 0>"


_ZERO: Any = _AllZero()
_V0 = (0,)


def _edges_of(args: tuple[Any, ...]) -> tuple[list[Any], int, Any]:
    """A node's record of its inputs, taken now: ``(edges, generation, versions)``.

    Per input its edge: ``None`` (no gradient), the creator node (output 0), ``(creator, index)``, or
    ``(None, leaf)``. An in-place op later gives the tensor a new history; the node keeps the edge to
    the version it consumed. ``versions``: ``_ZERO``, or per input its version (-1: not a Tensor).
    """
    edges: list[Any] = []
    generation = 0
    zero = True
    for a in args:
        if isinstance(a, Tensor):
            if a._vcl and a._vcl[0]:
                zero = False
            if a._requires_grad:
                c = a._creator
                if c is None:
                    edges.append((None, a))
                    continue
                edges.append(c if a._out_idx == 0 else (c, a._out_idx))
                if c.generation >= generation:
                    generation = c.generation + 1
                continue
        edges.append(None)
    return edges, generation, _versions(args, zero)


def _versions(args: tuple[Any, ...], zero: bool) -> Any:
    """A node's record of its inputs' versions: ``_ZERO`` when all were at 0, else per input (-1: not a Tensor)."""
    if zero:
        return _ZERO
    return tuple([(a._vcl[0] if a._vcl is not None else 0) if isinstance(a, Tensor) else -1 for a in args])


class Node:
    """A recorded operation: its inputs and their edges, its saved values and their versions."""

    #: Built-in ops (``Op``) work on arrays; user Functions work on Tensors.
    _array_io: bool = False

    # Node state, set by ``apply`` when the graph is recorded.
    inputs: tuple[Any, ...] | None
    generation: int
    backend: Any
    n_out: int = 1
    _out_refs: dict[int, Any] | None = None
    _trace: list[str] | None = None
    _versions: Any = ()  # saves_inputs: _ZERO or per input its version then (-1: not a Tensor)
    #: saves_output: per output its version counter and the version its saved value belongs to
    _out_vcs: tuple[list[int], ...] = ()
    _out_vs: tuple[int, ...] = ()
    _outs: tuple[Any, ...] = ()
    _saved: tuple[Any, ...]  # user Functions: ``save_for_backward``
    #: where each input's gradient goes, captured when the node was recorded (an in-place op later
    #: gives the tensor a new history; this node keeps the edge to the version it consumed)
    _edges: list[Any] | None = None

    #: backward reads the inputs' values: an in-place change to them before backward is an error.
    saves_inputs: bool = True
    #: set per class: ``value_needed`` is overridden (backward reads only some inputs' values)
    _reads_some: bool = False
    #: backward reads the outputs' values through ``self.output(i)``.
    saves_output: bool = False

    # -- PyTorch-style context (for user Functions) ---------------------------------------------
    def save_for_backward(self, *tensors: Any) -> None:
        self._saved = tuple(tensors)
        self._saved_versions = tuple(t._vc[0] if isinstance(t, Tensor) else 0 for t in tensors)

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        ex = self._extra
        if ex is not None and ex.packed is not None:  # saved through ``saved_tensors_hooks``: unpacked now
            return unpack_saved(self)
        for i, (t, v) in enumerate(zip(self._saved, self._saved_versions, strict=True)):
            if isinstance(t, Tensor) and t._vc[0] != v:
                raise RuntimeError(
                    f"{type(self).__name__}: saved tensor {i} of shape {tuple(t.shape)} was modified in place "
                    f"(version {t._vc[0]}, saved at version {v}) before backward"
                )
        return self._saved

    #: user Functions: gradients of unused outputs reach ``backward`` as zeros (``set_materialize_grads(False)``:
    #: None), with each output's (shape, dtype) kept for that in ``_out_meta``
    _materialize: bool = True
    _out_meta: tuple[tuple[Any, Any], ...] = ()

    #: user Functions: ids of the outputs ``mark_non_differentiable`` named (they get no gradient)
    _non_diff: frozenset[int] = frozenset()

    def mark_non_differentiable(self, *tensors: Any) -> None:
        """Outputs of this Function that carry no gradient (indices, masks): they do not require grad, and their
        gradient reaches ``backward`` as zeros."""
        self._non_diff = frozenset(id(t) for t in tensors)

    #: user Functions: ids of the inputs ``mark_dirty`` named (written in place by forward)
    _dirty: frozenset[int] = frozenset()

    def mark_dirty(self, *tensors: Any) -> None:
        """Inputs this Function's forward wrote in place; each must be returned, and the caller's tensor itself
        comes back as that output, its history now this Function (PyTorch's rebase)."""
        self._dirty = frozenset(id(t) for t in tensors)

    def set_materialize_grads(self, value: bool) -> None:
        """Whether ``backward`` gets zeros (True, the default) or None for outputs that received no gradient."""
        self._materialize = bool(value)

    @property
    def needs_input_grad(self) -> tuple[bool, ...]:
        return tuple(e is not None for e in self._edges or ())

    def _req(self, i: int) -> bool:
        """Whether input ``i`` gets a gradient: the edge recorded with the node, not the input's
        ``requires_grad`` now (a later ``detach_()`` does not cut the recorded graph, as in PyTorch)."""
        edges = self._edges
        return edges is not None and edges[i] is not None

    # -- node helpers (PyTorch's ``torch.autograd.graph.Node``) ------------------------------------
    #: hooks and saved values packed by ``saved_tensors_hooks`` (``_saved_hooks.Extra``), made on first use
    _extra: Any = None

    @property
    def name(self) -> _Name:
        """The node's name, ``MulBackward0`` as PyTorch names its nodes; also callable, ``name()``, as PyTorch's
        method is."""
        n = type(self).__name__
        if n.endswith(("Backward0", "Backward1")):
            return _Name(n)
        return _Name((n if n.endswith("Backward") else n + "Backward") + "0")

    @property
    def next_functions(self) -> tuple[tuple[Any, int], ...]:
        """Per Tensor input ``(node, output index)`` its gradient goes to: ``AccumulateGrad`` for a leaf, ``(None, 0)``
        for an input that needs none (empty once backward freed the graph). Arguments that are not Tensors (dims,
        Python numbers) have no entry."""
        res: list[tuple[Any, int]] = []
        ins = getattr(self, "inputs", None) or ()
        for i, e in enumerate(self._edges or ()):
            if e is None and not (i < len(ins) and isinstance(ins[i], Tensor)):
                continue
            if e is None:
                res.append((None, 0))
            elif e.__class__ is tuple:
                res.append((accumulate_grad(e[1]), 0) if e[0] is None else (e[0], e[1]))
            else:
                res.append((e, 0))
        return tuple(res)

    @property
    def metadata(self) -> dict[Any, Any]:
        """A dict kept with the node for the user's own data."""
        md: dict[Any, Any] | None = self.__dict__.get("_metadata")
        if md is None:
            md = {}
            self.__dict__["_metadata"] = md
        return md

    def register_hook(self, fn: Callable[..., Any]) -> RemovableHandle:
        """Call ``fn(grad_inputs, grad_outputs)`` after this node's backward; a returned tuple replaces
        ``grad_inputs``."""
        hooks = extra_of(self).hooks
        hooks.append(fn)
        return RemovableHandle(hooks, fn)

    def register_prehook(self, fn: Callable[..., Any]) -> RemovableHandle:
        """Call ``fn(grad_outputs)`` before this node's backward; a returned tuple replaces ``grad_outputs``."""
        hooks = extra_of(self).prehooks
        hooks.append(fn)
        return RemovableHandle(hooks, fn)

    def __repr__(self) -> str:
        return f"<{self.name}>"

    #: optional first-order rule on arrays: ``backward_arrays(self, *grad_arrays) -> arrays or None``; the
    #: engine uses it when no graph of the backward pass is wanted (``backward`` stays the reference).
    backward_arrays: Any = None
    #: True where ``backward_arrays``, given gradients of the outputs' shapes, always returns gradients of the
    #: inputs' shapes (elementwise rules; binary ones reduce with ``sum_to_array``): the engine then skips its
    #: per-edge shape check (two ``torch.Size`` a gradient, ~0.2 µs) for the node on its fast path. Every gradient
    #: a node receives has its outputs' shapes (the roots' are checked, other rules' too), so these return right
    #: shapes by induction; tests/autograd/test_shaped_grads.py sweeps each class that sets it
    shaped_grads: bool = False

    def _saved_output_check(self, i: int) -> None:
        vc, v = self._out_vcs[i], self._out_vs[i]
        if vc[0] != v:
            raise RuntimeError(
                f"{type(self).__name__}: its output {i} was modified in place (version {vc[0]}, "
                f"expected {v}) before backward; use an out-of-place operation instead"
            )

    def out_array(self, i: int = 0) -> Any:
        """Output ``i`` as an array for ``backward_arrays`` (checked against in-place changes)."""
        if self._out_vcs[i][0] != self._out_vs[i]:
            self._saved_output_check(i)
        return self._outs[i]

    def output(self, i: int = 0) -> Tensor:
        """Output ``i`` as a Tensor for use in backward (connected to this node for higher order)."""
        self._saved_output_check(i)
        ref = self._out_refs.get(i) if self._out_refs else None
        t = ref() if ref is not None else None
        if t is None:
            t = Tensor._make(self.backend.asarray(self._outs[i]), self.backend)
            t._vc = self._out_vcs[i]
            t._requires_grad = True
            t._creator = self
            t._out_idx = i
        return t

    def _ref_output(self, t: Tensor) -> None:
        if self._out_refs is None:
            self._out_refs = {}
        self._out_refs[t._out_idx] = weakref.ref(t)

    def value_needed(self, i: int) -> bool:
        """Whether backward reads input ``i``'s value (so a later in-place change to it is an error).

        All saved inputs by default; an operator whose gradients need only some of them says which
        (``a * b`` needs ``a`` only for ``b``'s gradient), as PyTorch saves only what it uses.
        """
        return True

    def _check_versions(self) -> None:
        if not self.saves_inputs or self.inputs is None or not self._array_io:
            return  # (a user Function's check is ``saved_tensors``': only what it saved, as PyTorch)
        vs = self._versions
        if vs is _ZERO:
            vs = [0 if isinstance(a, Tensor) else -1 for a in self.inputs]
        for i, (a, v) in enumerate(zip(self.inputs, vs, strict=True)):
            if v >= 0 and a._vc[0] != v and self.value_needed(i):
                raise RuntimeError(
                    f"{type(self).__name__}: input {i} of shape {tuple(a.shape)} was modified by an in-place "
                    f"operation (it is at version {a._vc[0]}, the graph saved version {v}); its value "
                    "is needed for the gradient. Use an out-of-place operation or clone() it first"
                )

    #: False where PyTorch saves views of the inputs (composite ops such as einsum), which ``detach_()``
    #: of an input does not reach: backward then runs on the unchanged values
    _detach_check: bool = True

    def _check_detached(self) -> None:
        """Refuse a saved input that was detached in place (``detach_()``) after this node used it."""
        if self._array_io and self._detach_check:
            for i, (a, e) in enumerate(zip(self.inputs or (), self._edges or (), strict=False)):
                leaf_edge = e.__class__ is tuple and e[0] is None
                if e is not None and not leaf_edge and a._creator is None and self.value_needed(i):
                    raise RuntimeError(
                        "Trying to use a saved tensor that has been detached in-place: input "
                        f"{i} of {type(self).__name__} (shape {tuple(a.shape)}) was saved for the gradient and "
                        "then detached with detach_(); use the out-of-place detach() instead"
                    )


class _Name(str):
    """A node's name: a ``str`` (``node.name == "MulBackward"``) that is also callable (``node.name()``)."""

    def __call__(self) -> str:
        return str(self)


class AccumulateGrad(Node):
    """The node a leaf's gradient reaches (``next_functions``, ``get_gradient_edge``); ``variable`` is the leaf."""

    inputs = ()

    def __init__(self, variable: Tensor) -> None:
        self._ref = weakref.ref(variable, functools.partial(_forget, id(variable)))

    @property
    def variable(self) -> Tensor:
        """The leaf (held weakly: the node does not keep it alive)."""
        t = self._ref()
        if t is None:
            raise RuntimeError("AccumulateGrad: its leaf tensor no longer exists")
        return t

    @property
    def name(self) -> _Name:
        return _Name("torch::autograd::AccumulateGrad")

    @property
    def next_functions(self) -> tuple[tuple[Any, int], ...]:
        return ()

    def register_hook(self, fn: Callable[..., Any]) -> RemovableHandle:
        """Call ``fn((), (grad,))`` when the leaf's gradient arrives (its return value is ignored)."""

        def hook(g: Tensor) -> None:
            fn((), (g,))

        return self.variable.register_hook(hook)

    def register_prehook(self, fn: Callable[..., Any]) -> RemovableHandle:
        """Call ``fn((grad,))`` before the leaf's gradient is accumulated; a returned tuple replaces it."""

        def hook(g: Tensor) -> Any:
            r = fn((g,))
            return None if r is None else r[0]

        return self.variable.register_hook(hook)


#: per live leaf (by id) its ``AccumulateGrad``, dropped when the leaf goes
_ACCUMULATORS: dict[int, AccumulateGrad] = {}


def _forget(key: int, ref: Any) -> None:
    acc = _ACCUMULATORS.get(key)
    if acc is not None and acc._ref is ref:
        del _ACCUMULATORS[key]


def accumulate_grad(leaf: Tensor) -> AccumulateGrad:
    """The leaf's ``AccumulateGrad`` node: the same object for as long as the leaf lives, as in PyTorch."""
    acc = _ACCUMULATORS.get(id(leaf))
    if acc is None or acc._ref() is not leaf:
        acc = _ACCUMULATORS[id(leaf)] = AccumulateGrad(leaf)
    return acc


def rebase_dirty(dirty: frozenset[int], args: tuple[Any, ...], detached: list[Any], outs: Any) -> tuple[Any, ...]:
    """``mark_dirty``: each input written in place must be an output, and the caller's tensor itself is returned."""
    returned = {id(o) for o in outs}
    if not dirty <= returned:
        raise RuntimeError("Some elements marked as dirty during the forward method were not returned as output. "
                           "The inputs that are modified inplace must all be outputs of the Function.")  # fmt: skip
    caller = {id(d): a for d, a in zip(detached, args) if isinstance(a, Tensor)}
    result = []
    for o in outs:
        a = caller.get(id(o)) if id(o) in dirty else None
        if a is not None:
            if a._requires_grad and a._creator is None and STATE.enabled:
                raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
            o = a
        result.append(o)
    return tuple(result)


def caller_tensors(node: Node, args: tuple[Any, ...], detached: list[Any], outs: Any) -> tuple[Any, ...]:
    """After a user Function's forward on detached inputs: ``save_for_backward``'s tensors become the caller's
    (a double backward then differentiates what backward computes from them, as PyTorch's saved inputs are), and
    ``mark_dirty``'s outputs the caller's tensors (``rebase_dirty``)."""
    if node._saved:
        caller = {id(d): a for d, a in zip(detached, args) if isinstance(a, Tensor) and d is not a}
        if caller:
            node._saved = tuple(caller.get(id(t), t) for t in node._saved)
    return rebase_dirty(node._dirty, args, detached, outs) if node._dirty else tuple(outs)
