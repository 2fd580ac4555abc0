"""The backward pass: walk the graph from the roots in generation order, each node once.

Nodes wait in a heap keyed by generation (highest first), so a node runs only after every consumer
of its outputs has sent its gradient; gradients reaching a node along several paths are summed.
After the pass each node drops its inputs and saved values unless ``retain_graph`` is set.
"""

from __future__ import annotations

import heapq
import itertools
import math
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .._errors import DeviceError
from .._hooks import RemovableHandle
from .._tensor import Tensor
from .._tensor_grad import _POST_HOOKS, run_post_accumulate_hooks
from ..backends._weight_grad import WeightGrad
from ._engine_checks import _complex_to_input, _shape_error, _unchanged
from ._engine_step import KernelRegion, _run_hooks, _step, _wrap
from ._grad_mode import STATE, set_grad_enabled
from ._gradients import Gradients
from ._leaf_sums import add_leaf_grad, leaf_sum
from ._node import _ZERO, AccumulateGrad
from ._views import _refresh_view

__all__ = [
    "backward",
    "grad",
    "Gradients",
    "RemovableHandle",
    "set_nonfinite_check",
    "is_nonfinite_check_enabled",
    "queue_callback",
]


_NONFINITE_CHECK = [False]
#: ``[recorder]`` while ``ember.profiler`` records: called as ``recorder(node, start_ns, end_ns)`` for each node's step
PROFILE: list[Any] = [None]
_CALLBACKS = threading.local()


def queue_callback(fn: Callable[[], Any]) -> None:
    """Run ``fn()`` once the current ``backward()`` pass is done, before it returns (from a hook).

    PyTorch's ``Variable._execution_engine.queue_callback``: DistributedDataParallel waits for its
    gradient all-reduces this way. Callbacks run in the order queued, only when the pass succeeds.
    """
    queued = getattr(_CALLBACKS, "queued", None)
    if queued is None:
        raise RuntimeError("queue_callback: can only be called during a backward pass (from a hook)")
    queued.append(fn)


def set_nonfinite_check(enabled: bool) -> None:
    """Make ``backward()`` refuse a NaN/Inf scalar loss (off by default, as in PyTorch).

    The check reads the loss back to the host (a sync per backward on an accelerator). It is always
    on inside ``detect_anomaly()``.
    """
    _NONFINITE_CHECK[0] = bool(enabled)


def is_nonfinite_check_enabled() -> bool:
    """Whether ``backward()`` refuses a NaN/Inf scalar loss (see ``set_nonfinite_check``)."""
    return _NONFINITE_CHECK[0]


def _check_nonfinite_root(root: Tensor) -> None:
    if root.numel() == 1:
        v = root.item()
        if isinstance(v, float) and not math.isfinite(v):
            raise FloatingPointError(
                f"backward: the loss is {v}; refusing to propagate a non-finite value "
                "(use ember.autograd.detect_anomaly() to find the operation that produced it)"
            )


def _run(
    roots: Sequence[Tensor],
    root_grads: Sequence[Any],
    retain_graph: bool,
    create_graph: bool,
    on_leaf: Callable[[Tensor, Tensor], None],
    capture: dict[tuple[int, int], Any] | None = None,
) -> None:
    """Propagate from ``roots``; call ``on_leaf(leaf, grad)`` for each leaf reached.

    The scheduler: gradients wait per node in ``pending``; nodes wait in a heap keyed by generation
    (highest first), and a node reached along a chain runs next without the heap when nothing waiting
    outranks it (its gradient handed over in ``ngrad``, without ``pending``). Each node's own work is
    ``_step``; its results are routed along the edges recorded at forward time (to waiting nodes, or to
    leaves through their hooks).

    First order (no ``create_graph``, no anomaly mode) the gradients travel between nodes as backend arrays
    through each node's ``backward_arrays`` (or its ``backward``, wrapped): Tensors are made only for leaves,
    hooks, retained and captured gradients. Otherwise they travel as Tensors through
    ``backward``, recording the graph of the backward pass when ``create_graph`` is set.
    """
    region = STATE.autocast
    if region is not None:  # backward runs in the dtypes forward chose: autocast covers forward only
        STATE.autocast = None
        try:
            return _run(roots, root_grads, retain_graph, create_graph, on_leaf, capture)
        finally:
            STATE.autocast = region
    anomaly = STATE.anomaly
    arrays = not create_graph and not anomaly
    detached = Tensor._detached_nonleaf
    pending: dict[Any, list[Any]] = {}
    heap: list[tuple[int, int, Any]] = []
    counter = itertools.count()

    for r, g in zip(roots, root_grads, strict=True):
        if r._view is not None:
            _refresh_view(r)
        c = r._creator
        if c is None:
            if r._requires_grad:
                if r._hooks:
                    g = _run_hooks(r._hooks, g)
                on_leaf(r, g)
            continue
        slot = pending.get(c)
        if slot is None:
            slot = pending[c] = [None] * c.n_out
            heapq.heappush(heap, (-c.generation, next(counter), c))
        i = r._out_idx
        if arrays:
            g = g._data
        slot[i] = g if slot[i] is None else slot[i] + g

    prof = PROFILE[0]  # ember.profiler records each node's step (through ``_step``, timed)
    quick = arrays and capture is None and prof is None
    leaf_sums: dict[int, list[Any]] = {}  # first order, leaves without hooks: as PyTorch before AccumulateGrad
    hooked: dict[int, list[Any]] = {}  # leaves with hooks: [leaf, the sum of its paths' gradients]
    # the backend's kernel region (torch: below its autograd layer) around the array rules, left for user code
    region = KernelRegion(roots[0]._backend.kernel_region if quick and roots else None)
    with set_grad_enabled(create_graph), region:
        node = None  # the next node, when it can run without going through the heap or ``pending``
        ngrad = None  # its gradient (such a node has one output)
        grads: list[Any] | None  # a node's gradients from ``pending`` (None: its one gradient is ``ngrad``)
        while node is not None or heap:
            if node is None:
                node = heapq.heappop(heap)[2]
                grads = pending.pop(node)
                if len(grads) == 1:
                    ngrad = grads[0]
                    grads = None
            else:
                grads = None  # one output, its gradient in ``ngrad``
            inputs = node.inputs
            edges = node._edges
            # the usual node (first order, no hooks or captured gradients, its saved inputs unchanged):
            # its array rule, called here; any other goes through ``_step``
            cls = type(node)
            fast = cls.backward_arrays if quick else None
            vs = node._versions
            if vs and inputs is not None and not detached:  # saved inputs all at their recorded versions?
                if vs is _ZERO:
                    for a in inputs:
                        if isinstance(a, Tensor) and a._vcl and a._vcl[0]:
                            break
                    else:
                        vs = ()
                elif _unchanged(inputs, vs):
                    vs = ()
            if fast is not None and not vs and inputs is not None and not node._out_refs:
                # (not ``fast(node, *grads)`` where one gradient: CPython 3.11 does not inline a call through *)
                out = fast(node, ngrad) if grads is None else fast(node, *grads)
                if out.__class__ is not tuple:
                    out = (out,)
                if len(out) < len(edges):
                    raise RuntimeError(f"{node.name}: backward returned {len(out)} gradients for {len(inputs)} inputs")
                shaped = cls.shaped_grads  # its rule keeps the shapes: the check below is skipped (``Node``)
            else:
                t0 = 0 if prof is None else time.perf_counter_ns()
                g_in = [ngrad] if grads is None else grads
                region.pause()  # (hooks, a user Function's backward)
                out = _step(node, g_in, arrays, anomaly, detached, create_graph, capture, retain_graph)
                region.resume()
                if prof is not None:
                    prof(node, t0, time.perf_counter_ns())
                shaped = False
            nxt = None
            k = -1
            for e in edges:  # (with an index, not a zip of inputs, edges and results: ~0.1 µs a node less)
                k += 1
                if e is None:
                    continue
                g = out[k]
                if g is None:
                    continue
                inp = inputs[k]
                if arrays:
                    if not shaped and g.shape != inp._data.shape:
                        raise _shape_error(node, g.shape, inp)
                    if g.__class__ is WeightGrad and (e.__class__ is not tuple or e[0] is not None or e[1]._hooks):
                        g = g.value()  # only a leaf's sum takes it as it is
                elif not isinstance(g, Tensor):
                    raise TypeError(f"{node.name}: backward must return Tensors or None, got {type(g).__name__}")
                elif g._data.shape != inp._data.shape:
                    raise _shape_error(node, g.shape, inp)
                elif g._data.dtype is not inp._data.dtype:
                    g = _complex_to_input(g, inp)
                # the edge captured at record time (later in-place ops do not move it): the creator
                # (output 0), (creator, index), or (None, leaf)
                if e.__class__ is tuple:
                    c, i = e
                    if c is None:
                        if not i._requires_grad:  # detached in place since: it collects nothing
                            continue
                        if arrays and not i._hooks:  # summed, delivered once at the end (``_leaf_sums.py``)
                            add_leaf_grad(leaf_sums, i, g)
                            continue
                        if arrays:
                            g = _wrap(g, i._backend)  # the input's backend (ToDevice changes it)
                        if i._hooks:  # the hooks see the leaf's whole gradient, once (as PyTorch's)
                            acc = hooked.get(id(i))
                            if acc is None:
                                hooked[id(i)] = [i, g]
                            else:
                                acc[1] = acc[1] + g
                            continue
                        on_leaf(i, g)
                        continue
                else:
                    if e is nxt:
                        ngrad = ngrad + g
                        continue
                    c, i = e, 0
                slot = pending.get(c) if pending else None
                if slot is None:
                    if c.n_out == 1:
                        if nxt is None:
                            nxt = c
                            ngrad = g
                        else:
                            pending[c] = [g]
                            heapq.heappush(heap, (-c.generation, next(counter), c))
                        continue
                    slot = pending[c] = [None] * c.n_out
                    heapq.heappush(heap, (-c.generation, next(counter), c))
                slot[i] = g if slot[i] is None else slot[i] + g
            if not retain_graph:
                node.inputs = None
                node._edges = None
                if node._outs:
                    node._outs = ()
            # Run the first newly reached node next, skipping the heap, when no waiting node has a
            # higher generation: every node that could still send it a gradient (a consumer of its
            # output has a higher generation) has run, as in generation order.
            if nxt is not None and heap and -heap[0][0] > nxt.generation:
                pending[nxt] = [ngrad]
                heapq.heappush(heap, (-nxt.generation, next(counter), nxt))
                nxt = None
            node = nxt
        for acc in leaf_sums.values():
            on_leaf(acc[0], leaf_sum(acc))
        region.pause()
        for leaf, g in hooked.values():
            on_leaf(leaf, _run_hooks(leaf._hooks, g))


def _root_grads(roots: Sequence[Tensor], grads: Sequence[Any], op: str) -> list[Tensor]:
    out = []
    for r, g in zip(roots, grads, strict=True):
        if not isinstance(r, Tensor):
            raise TypeError(f"{op}: expected Tensors, got {type(r).__name__}")
        if not r._requires_grad:
            raise RuntimeError(
                f"{op}: tensor of shape {tuple(r.shape)} does not require grad and has no grad_fn "
                "(made under no_grad? requires_grad=True forgotten on the inputs? or a gradient computed without "
                "create_graph=True, which is needed to differentiate it again?)"
            )
        if g is None:
            if r.numel() != 1:
                raise RuntimeError(
                    f"{op}: grad can be implicitly created only for one-element outputs, but the output "
                    f"has shape {tuple(r.shape)}; pass gradient= (or grad_outputs=) of that shape"
                )
            if _NONFINITE_CHECK[0] or STATE.anomaly:
                _check_nonfinite_root(r)
            g = Tensor._make(r._backend.xp.ones(r._data.shape, dtype=r._data.dtype), r._backend)
        else:
            if not isinstance(g, Tensor):  # (a list or array: its shape is checked too, as a Tensor's)
                g = Tensor(g, dtype=r.dtype, device=r.device)
            if g.shape != r.shape:
                raise RuntimeError(
                    f"{op}: gradient of shape {tuple(g.shape)} given for an output of shape {tuple(r.shape)}"
                )
            if g._backend is not r._backend:
                raise DeviceError(
                    f"{op}: gradient on {g.device} ({g._backend.name} backend) given for an output on {r.device} "
                    f"({r._backend.name} backend); make it with device=output.device"
                )
        out.append(g)
    return out


def backward(
    tensors: Sequence[Tensor],
    grad_tensors: Sequence[Any] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    grad_variables: Any = None,
    inputs: Any = None,
) -> Gradients:
    """Accumulate gradients of ``tensors`` into the leaves' ``.grad``; also return them as Gradients.

    ``inputs`` (PyTorch's): accumulate only into these tensors' ``.grad`` (leaves or not), nowhere else."""
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    if grad_variables is not None:  # PyTorch's old name
        grad_tensors = grad_variables
    if inputs is not None:
        return _backward_into(tensors, grad_tensors, retain_graph, create_graph, inputs)
    grad_tensors = list(grad_tensors) if grad_tensors is not None else [None] * len(tensors)
    if isinstance(grad_tensors, Tensor):
        grad_tensors = [grad_tensors]
    roots = _root_grads(tensors, grad_tensors, "backward")
    result = Gradients()
    seen: set[int] = set()

    def on_leaf(leaf: Tensor, g: Tensor) -> None:
        if not create_graph:
            g = g.detach()
        if leaf.grad is None:
            # the same gradient object may reach several leaves (a + b): never share it
            if id(g._data) in seen or not leaf._backend.is_plain(g._data):
                # a private, writable, C-contiguous array (optimizers read and update grads in place)
                if create_graph:
                    g = g.clone().contiguous()
                else:
                    xp = leaf._backend.xp
                    arr = g._data if g._data.ndim == 0 else xp.ascontiguousarray(g._data)  # (NumPy's is >= 1-d)
                    be = leaf._backend
                    g = Tensor._make(be.xp.copy(arr) if arr is g._data or id(arr) in seen else arr, be)
            leaf.grad = g
            seen.add(id(leaf.grad._data))
        else:
            leaf.grad = leaf.grad + g
        result._items[id(leaf)] = (leaf, leaf.grad)

    outer = getattr(_CALLBACKS, "queued", None)
    queued: list[Callable[[], Any]] = []
    _CALLBACKS.queued = queued
    try:
        _run(tensors, roots, bool(retain_graph) or create_graph, create_graph, on_leaf)
        if _POST_HOOKS:
            with set_grad_enabled(create_graph):  # as the engine runs hooks (PyTorch's too)
                run_post_accumulate_hooks(leaf for leaf, _ in list(result._items.values()))
    finally:
        _CALLBACKS.queued = outer
    for fn in queued:
        fn()
    return result


def _backward_into(
    tensors: Sequence[Tensor], grad_tensors: Any, retain_graph: bool | None, create_graph: bool, inputs: Any
) -> Gradients:
    """``backward(inputs=...)``: the gradients of ``inputs`` only, each added to its ``.grad``."""
    ins = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if not ins:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    seeds = list(grad_tensors) if isinstance(grad_tensors, (list, tuple)) else [grad_tensors] * len(tensors)
    gs = grad(list(tensors), ins, seeds, retain_graph=retain_graph, create_graph=create_graph, allow_unused=True)
    result = Gradients()
    for t, g in zip(ins, gs, strict=True):
        if g is None:
            continue
        g = g if create_graph else g.detach()
        t.grad = g if t._grad is None else t._grad + g
        result._items[id(t)] = (t, t.grad)
    if _POST_HOOKS:
        with set_grad_enabled(create_graph):
            run_post_accumulate_hooks(t for t, _ in list(result._items.values()))
    return result


def grad(
    outputs: Any,
    inputs: Any,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool = False,
) -> tuple[Tensor | None, ...]:
    """Gradients of ``outputs`` with respect to ``inputs``, returned (``.grad`` is left untouched)."""
    outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    ins = [inputs] if isinstance(inputs, Tensor) or _is_edge(inputs) else list(inputs)
    # a GradientEdge (``graph.get_gradient_edge``) of a leaf stands for the leaf; of a node, for that output
    edge_keys: dict[int, tuple[int, int]] = {}
    for i, t in enumerate(ins):
        if _is_edge(t):
            node = t[0]
            if isinstance(node, AccumulateGrad):
                ins[i] = node.variable
            else:
                edge_keys[i] = (id(node), int(t[1]))
    gouts = (
        [grad_outputs]
        if isinstance(grad_outputs, Tensor)
        else (list(grad_outputs) if grad_outputs is not None else [None] * len(outs))
    )
    roots = _root_grads(outs, gouts, "grad")
    for i, t in enumerate(ins):
        if i not in edge_keys and (not isinstance(t, Tensor) or not t.requires_grad):
            raise RuntimeError(f"grad: input {i} does not require grad")
    for i, t in enumerate(ins):
        if i not in edge_keys and t._view is not None:
            _refresh_view(t)
    leaf_ids = {id(t): i for i, t in enumerate(ins) if i not in edge_keys and t._creator is None}
    capture: dict[tuple[int, int], Any] = {}
    for i, t in enumerate(ins):
        key = edge_keys.get(i)
        if key is None and t._creator is not None:
            key = (id(t._creator), t._out_idx)
        if key is not None:
            capture[key] = None
    found: dict[int, Tensor] = {}

    def on_leaf(leaf: Tensor, g: Tensor) -> None:
        i = leaf_ids.get(id(leaf))
        if i is not None:
            found[i] = g if i not in found else found[i] + g

    outer = getattr(_CALLBACKS, "queued", None)
    queued: list[Callable[[], Any]] = []
    _CALLBACKS.queued = queued
    try:
        _run(
            outs,
            roots,
            bool(retain_graph) if retain_graph is not None else create_graph,
            create_graph,
            on_leaf,
            capture or None,
        )
    finally:
        _CALLBACKS.queued = outer
    for cb in queued:
        cb()
    result: list[Tensor | None] = []
    for i, t in enumerate(ins):
        key = edge_keys.get(i)
        if key is not None:
            g = capture.get(key)
            if g is None:  # the edge of an output: its seed gradient
                for o, r in zip(outs, roots, strict=True):
                    if (id(o._creator), o._out_idx) == key:
                        g = r
        else:
            g = found.get(i) if t._creator is None else capture.get((id(t._creator), t._out_idx))
            if g is None and i in found:
                g = found[i]
            # a non-leaf input that is itself an output gets its seed gradient
            if g is None:
                for o, r in zip(outs, roots, strict=True):
                    if o is t:
                        g = r
        if g is None and not allow_unused:
            shape = f" (shape {tuple(t.shape)})" if key is None else ""
            raise RuntimeError(f"grad: input {i}{shape} was not used to compute the outputs; pass allow_unused=True")
        result.append(g if g is None or create_graph else g.detach())
    return tuple(result)


def _is_edge(x: Any) -> bool:
    """Whether ``x`` is a ``graph.GradientEdge`` (a named pair ``(node, output_nr)``)."""
    return isinstance(x, tuple) and hasattr(x, "output_nr") and len(x) == 2


def _iter_tensors(x: Any) -> Iterable[Tensor]:
    if isinstance(x, Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for y in x:
            yield from _iter_tensors(y)
