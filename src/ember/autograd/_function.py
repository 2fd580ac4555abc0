"""``Function``: one operator's forward and backward, and the node it leaves in the graph.

Built-in operators subclass :class:`Op`: ``forward`` takes and returns backend arrays (fast), and
``backward`` takes and returns Tensors, so that ``create_graph=True`` differentiates the backward pass
itself. User-defined operators subclass :class:`Function` the PyTorch way: static ``forward(ctx, ...)``
and ``backward(ctx, ...)`` on Tensors, with ``ctx.save_for_backward``.

A node holds its inputs (the edges of the graph), the versions of the tensors it saved, and — only when
someone asks for them (``retain_grad``, hooks) — weak references to its outputs (``Node``, ``_node.py``).
"""

from __future__ import annotations

import contextlib
import threading
import traceback
from collections.abc import Iterator
from types import MethodType
from typing import Any

from .._errors import DeviceError, DTypeError
from .._tensor import Tensor
from ..backends import get_backend
from ._autocast import ACTIVE as _AUTOCAST
from ._autocast import cast_args
from ._bf16 import WIDEN as _WIDEN
from ._bf16 import widened
from ._complex_ops import COMPLEX_GRAD_OPS
from ._grad_mode import ANOMALY_USED, GRAD_OFF, STATE, no_grad
from ._node import _V0, _ZERO, Node, _edges_of, _versions, caller_tensors
from ._release import RELEASE_MIN_BYTES, _release_unread
from ._saved_hooks import SAVED_ON, pack_node

__all__ = ["Function", "Op", "FunctionCtx"]

_new_tensor = _new_object = object.__new__
#: ``[hook]`` while something intercepts operator calls (``ember.onnx``'s trace, ``ember.profiler``, a forward-AD
#: dual level), else ``[None]``: ``apply`` hands each call to ``hook(cls, args, kwargs)``, which runs it inside
#: ``bypass()`` (so the operators that call runs are not handed over again, on this thread only). One at a time.
TRACE: list[Any] = [None]


class _Bypass(threading.local):
    on = False


BYPASS = _Bypass()


@contextlib.contextmanager
def bypass() -> Iterator[None]:
    """Operator calls on this thread skip the ``TRACE`` hook inside the block."""
    was, BYPASS.on = BYPASS.on, True
    try:
        yield
    finally:
        BYPASS.on = was


def install_trace(hook: Any, who: str) -> None:
    """Make ``hook`` intercept operator calls; only one interceptor at a time."""
    if TRACE[0] is not None:
        raise RuntimeError(f"{who}: operator calls are already intercepted (an ONNX export's trace, a profile or a "
                           "forward-AD dual level); run one at a time")  # fmt: skip
    TRACE[0] = hook


def _device_error(name: str, args: tuple[Any, ...]) -> RuntimeError:
    tensors = [(i, a) for i, a in enumerate(args) if isinstance(a, Tensor)]
    devs = ", ".join(f"input {i} on {a.device} ({a._backend.name} backend)" for i, a in tensors)
    first = tensors[0][1]
    return DeviceError(
        f"{name}: expected all tensors on the same device and backend, got {devs}; move one with "
        f".to(other.device) (same device, other backend: .to(ember.backends.get('{first._backend.name}', "
        f"'{first.device}')))"
    )


def _mixed_devices(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Inputs on several devices: PyTorch lets 0-d CPU tensors join a meta tensor's op (they move there, which
    copies nothing); any other mix is a DeviceError naming the devices."""
    meta = next((a.device for a in args if isinstance(a, Tensor) and a._backend.device.type == "meta"), None)
    if meta is not None and all(
        a._backend.device.type == "meta" or (a.ndim == 0 and a._backend.device.type == "cpu")
        for a in args
        if isinstance(a, Tensor)
    ):
        return cls.apply(*[a.to(meta) if isinstance(a, Tensor) else a for a in args], **kwargs)
    raise _device_error(cls.__name__, args)


class Function(Node):
    """Base of every operator and graph node. Subclass it to define a differentiable operation.

    Example (PyTorch style)::

        class Cube(ember.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return 3 * x ** 2 * grad

        y = Cube.apply(x)
    """

    #: False for operators whose results never carry a gradient (comparisons, argmax ...).
    differentiable: bool = True
    #: True for operators that run on bfloat16 arrays as they are, not widened to float32 (views, casts,
    #: copies; ``_bf16.py``)
    bf16_native: bool = False
    #: True for operators whose Python-number operands PyTorch rounds to bfloat16 first (``add``, ``sub``: the
    #: number becomes a tensor of the common dtype)
    bf16_numbers: bool = False
    #: True for operators whose result has their first input's dtype whatever the others' (batch and layer norm:
    #: PyTorch's mixed-precision kernels take float32 parameters with a bfloat16 input, the output bfloat16)
    bf16_follows_input: bool = False
    #: ``(_array_io, differentiable, saves_inputs, saves_output)``, taken per class when it is made (apply reads
    #: one tuple, not four class attributes): these are set in the class body, never changed later
    _apply_flags: tuple[bool, bool, bool, bool]

    # (the node state: ``Node``)

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Tensor:
        """Run the operator on ``args`` and, when a gradient is needed, record this node.

        Returns the output Tensor (a tuple of Tensors for an operator with several outputs).
        """
        if _AUTOCAST[0] or TRACE[0] is not None or _WIDEN[0] is not None:  # autocast, a hook, or bfloat16 NumPy
            hook = TRACE[0]
            if hook is not None and not BYPASS.on:
                return hook(cls, args, kwargs)  # type: ignore[no-any-return]
            if _AUTOCAST[0]:
                args = cast_args(cls, args)
            if _WIDEN[0] is not None and not cls.bf16_native:
                wide = widened(cls, args, kwargs)  # computed in float32, rounded once (``_bf16.py``)
                if wide is not None:
                    return wide  # type: ignore[no-any-return]
        array_io, differentiable, saves_inputs, saves_output = cls._apply_flags  # (one read, not four)
        n = len(args)
        # the node's record of its inputs, taken before forward (a user Function may write its inputs): per
        # input its edge (see ``_edges_of``), the generation, whether all inputs are at version 0
        generation = 0
        zero = True
        slow: Any = kwargs or not 0 < n < 3 or not array_io
        if not slow:
            # the usual op, one or two positional arguments: the general pass below in straight lines (a loop, a
            # list of arrays and its appends cost ~0.15 µs); the same steps for each argument
            a = args[0]
            e0: Any = None
            e1: Any = None
            x1 = None
            if isinstance(a, Tensor):
                vcl = a._vcl
                if vcl is not None and vcl[0]:  # written in place since it was made (a view: since its history)
                    zero = False
                    if a._view is not None and a._view[2] != vcl[0]:
                        _refresh_view(a)
                backend = a._backend
                x0 = a._data
                if a._requires_grad:
                    c = a._creator
                    if c is None:
                        e0 = (None, a)
                    else:
                        e0 = c if a._out_idx == 0 else (c, a._out_idx)
                        generation = c.generation + 1
            else:
                backend = None
                x0 = a
            if n == 2:
                b = args[1]
                if isinstance(b, Tensor):
                    if b._backend is not backend:
                        if backend is not None:
                            return _mixed_devices(cls, args, kwargs)
                        backend = b._backend
                    vcl = b._vcl
                    if vcl is not None and vcl[0]:
                        zero = False
                        if b._view is not None and b._view[2] != vcl[0]:
                            _refresh_view(b)
                    x1 = b._data
                    if b._requires_grad:
                        c = b._creator
                        if c is None:
                            e1 = (None, b)
                        else:
                            e1 = c if b._out_idx == 0 else (c, b._out_idx)
                            if c.generation >= generation:
                                generation = c.generation + 1
                else:
                    x1 = b
            slow = backend is None  # numbers only: the general pass finds the default backend
        if not slow:
            needs_grad = e0 is not None or e1 is not None
            fn = _new_object(cls)
            fn.backend = backend
            if n == 2:
                edges: list[Any] = [e0, e1]
                out = fn.forward(x0, x1)
            else:
                edges = [e0]
                out = fn.forward(x0)
        else:
            backend = None
            generation = 0
            arrays = []
            edges = []
            needs_grad = False
            for a in args:
                if isinstance(a, Tensor):
                    b = a._backend
                    if b is not backend:
                        if backend is not None:
                            return _mixed_devices(cls, args, kwargs)
                        backend = b
                    vcl = a._vcl
                    if vcl is not None and vcl[0]:  # written in place since it was made (a view: since its history)
                        zero = False
                        if a._view is not None and a._view[2] != vcl[0]:
                            _refresh_view(a)
                    arrays.append(a._data)
                    if a._requires_grad:
                        needs_grad = True
                        c = a._creator
                        if c is None:
                            edges.append((None, a))
                        else:
                            edges.append(c if a._out_idx == 0 else (c, a._out_idx))
                            if c.generation >= generation:
                                generation = c.generation + 1
                        continue
                else:
                    arrays.append(a)
                edges.append(None)
            if backend is None:
                backend = get_backend(kwargs.pop("device", None))
            fn = _new_object(cls)
            fn.backend = backend
            if not array_io:
                rec = (edges, generation, _versions(args, zero))
                single, results = fn._apply_tensors(args, kwargs)
                if fn._dirty:  # inputs written by forward (mark_dirty): their versions from after it
                    rec = (edges, generation, _versions(args, False))
                results = fn._finish(args, results, needs_grad, rec)
                return results[0] if single else results  # type: ignore[return-value]  # several outputs: a tuple
            # forward called with its arguments spelled out where it can: a call through ``*arrays`` is
            # CPython 3.11's CALL_FUNCTION_EX, not inlined (~0.1 µs a call more)
            n = len(arrays)
            if kwargs:
                out = fn.forward(*arrays, **kwargs)
            elif n == 2:
                out = fn.forward(arrays[0], arrays[1])
            elif n == 1:
                out = fn.forward(arrays[0])
            else:
                out = fn.forward(*arrays)
        backend = fn.backend  # an op may move its result (ToDevice)
        oc = out.__class__
        if oc is tuple:
            atype = backend.array_type
            results = tuple([Tensor._make(o if o.__class__ is atype else backend.asarray(o), backend) for o in out])
            recording = needs_grad and differentiable and (not GRAD_OFF or STATE.enabled)
            if recording and not (ANOMALY_USED[0] and STATE.anomaly):
                versions = _versions(args, zero) if saves_inputs else _ZERO  # (read only when saved)
                return fn._record_outputs(args, results, edges, generation, versions)  # type: ignore[return-value]
            rec = (edges, generation, _versions(args, zero))
            return fn._finish(args, results, needs_grad, rec)  # type: ignore[return-value]  # a tuple, as above
        if oc is not backend.array_type:
            out = backend.asarray(out)
        # Tensor._init inlined: a call here costs ~4% of a small op (tests/test_tensor_fields.py)
        r = _new_tensor(Tensor)
        r._data = out
        r._backend = backend
        r._requires_grad = False
        r._grad = r._creator = r._hooks = r._view = r._vcl = None
        r._out_idx = 0
        r._retain = False
        # (the per-thread grad mode read only while some thread has it off: ``GRAD_OFF``)
        if needs_grad and differentiable and (not GRAD_OFF or STATE.enabled):
            if ANOMALY_USED[0] and STATE.anomaly:
                return fn._finish(args, (r,), needs_grad, (edges, generation, _versions(args, zero)))[0]
            fn.inputs = args
            fn._edges = edges
            fn.generation = generation
            if saves_inputs:
                fn._versions = _ZERO if zero else _versions(args, zero)
            # large inputs whose values backward never reads need not stay alive through the node
            # (``_release.py``); a large result, or a reduction to one number, is the sign of large inputs
            nbytes = out.nbytes
            if nbytes >= RELEASE_MIN_BYTES[0] or nbytes <= 16:
                _release_unread(fn, args)
            if out.dtype in backend.float_dtypes:
                r._requires_grad = True
                r._creator = fn
            elif out.dtype in backend.complex_dtypes:
                fn.__class__ = complex_node_class(cls)
                r._requires_grad = True
                r._creator = fn
            if saves_output:
                r._vcl = vc = [0]
                fn._out_vcs = (vc,)
                fn._out_vs = _V0
            if SAVED_ON[0]:  # some thread has saved_tensors_hooks open
                pack_node(fn, (r,))
            return r
        if ANOMALY_USED[0] and STATE.anomaly:
            from ._anomaly import check_forward

            check_forward(cls.__name__, (r,))
        return r

    def _apply_tensors(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[bool, tuple[Tensor, ...]]:
        """A user Function's forward, on detached Tensors: ``(single output?, results)``."""
        self._saved = ()
        detached = [a.detach() if isinstance(a, Tensor) else a for a in args]
        with no_grad():
            if type(self).setup_context is not Function.setup_context:  # PyTorch's forward without ctx
                out = self.forward(*detached, **kwargs)
                self.setup_context(self, tuple(detached), out)
            else:
                out = self.forward(self, *detached, **kwargs)
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        if self._saved or self._dirty:  # the caller's tensors saved, and rebased for mark_dirty (``_node.py``)
            outs = caller_tensors(self, args, detached, outs)
        be = self.backend
        return single, tuple(o if isinstance(o, Tensor) else Tensor._make(be.asarray(o), be) for o in outs)

    def _record_outputs(
        self, args: tuple[Any, ...], results: tuple[Tensor, ...], edges: list[Any], generation: int, versions: Any
    ) -> tuple[Tensor, ...]:
        """Record this node as the creator of ``results`` (grad mode on, a gradient needed; no anomaly checks)."""
        cls = type(self)
        self.inputs = args
        self._edges = edges
        self.generation = generation
        self.n_out = len(results)
        if cls.saves_inputs:
            self._versions = versions
        array_io = cls._array_io
        if array_io:
            _release_unread(self, args)
        non_diff = self._non_diff
        for i, r in enumerate(results):
            dt = r._data.dtype
            if dt in r._backend.grad_dtypes and not (non_diff and id(r) in non_diff):
                r._requires_grad = True
                r._creator = self
                r._out_idx = i
                if array_io and dt in r._backend.complex_dtypes:
                    self.__class__ = complex_node_class(cls)
        if cls.saves_output:
            self._out_vcs = tuple(r._vc for r in results)
            self._out_vs = (0,) * len(results)
        if not array_io:  # a user Function: its outputs' shapes, for the zeros of unused ones in backward
            self._out_meta = tuple((r._data.shape, r._data.dtype) for r in results)
        if SAVED_ON[0]:  # some thread has saved_tensors_hooks open
            pack_node(self, results)
        return results

    def _finish(
        self, args: tuple[Any, ...], results: tuple[Tensor, ...], needs_grad: bool, rec: Any = None
    ) -> tuple[Tensor, ...]:
        """Record this node for several outputs, user Functions, or in anomaly mode."""
        cls = type(self)
        state = STATE
        if not (needs_grad and state.enabled and cls.differentiable):
            if state.anomaly:
                from ._anomaly import check_forward

                check_forward(cls.__name__, results)
            return results
        if state.anomaly:
            from ._anomaly import check_forward

            check_forward(cls.__name__, results)
            self._trace = traceback.format_stack()[:-3]
        edges, generation, versions = rec or _edges_of(args)
        return self._record_outputs(args, results, edges, generation, versions)

    # -- what subclasses define ----------------------------------------------------------------
    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._reads_some = cls.value_needed is not Node.value_needed
        cls._apply_flags = (cls._array_io, cls.differentiable, cls.saves_inputs, cls.saves_output)
        _bind_apply(cls)
        if "shaped_grads" not in cls.__dict__:  # a claim about the class's own rule: never inherited
            cls.shaped_grads = False

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} defines no forward")

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        """PyTorch's other Function form: define it (a staticmethod) and ``forward`` takes no ``ctx``; this is then
        called with the forward's inputs and output to save what backward needs on ``ctx``."""
        raise NotImplementedError("setup_context is not defined for this Function")

    def backward(self, *grads: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} defines no backward")


Function._apply_flags = (Function._array_io, Function.differentiable, Function.saves_inputs, Function.saves_output)


def _bind_apply(cls: type[Function]) -> None:
    """Give ``cls`` its own ``apply`` bound to it, when it inherits the classmethod: ``Op.apply`` read from the
    class is then one dictionary read, where a classmethod makes a bound method on every read (~30 ns a call).

    A class that defines ``apply`` itself keeps it, and its bases lose their bound ones: its ``super().apply``
    would find a base's and run the base's operator (with the classmethod, as before, it binds ``cls``).
    """
    own = cls.__dict__.get("apply")
    if own is not None:
        for base in cls.__mro__[1:]:
            b = base.__dict__.get("apply")
            if b.__class__ is MethodType and b.__self__ is base:
                delattr(base, "apply")
        return
    for base in cls.__mro__[1:]:
        b = base.__dict__.get("apply")
        if b is None:
            continue
        if isinstance(b, classmethod) or (b.__class__ is MethodType and b.__self__ is base):
            cls.apply = MethodType(b.__func__, cls)  # type: ignore[method-assign]
        return


_COMPLEX_NODES: dict[type[Function], type[Function]] = {}


def complex_node_class(cls: type[Function]) -> type[Function]:
    """The class of a node of ``cls`` with a complex output: its gradients go through ``backward`` (on Tensors).

    ``backward`` is written with the conjugates PyTorch's convention needs (``g * conj(b)`` ...) wherever
    they matter; the array fast path ``backward_arrays`` is for real dtypes only and is left out here unless
    the operator declares it complex-safe (``complex_arrays = True``: it only moves, adds or negates
    gradients). Chosen once the output is known to be complex, so real dtypes pay nothing.
    """
    c = _COMPLEX_NODES.get(cls)
    if c is None:
        if cls.__name__ not in COMPLEX_GRAD_OPS and cls._array_io:
            raise DTypeError(
                f"{cls.__name__}: gradients through complex tensors are not supported for this operator yet "
                "(its forward runs under no_grad); see ember.autograd.COMPLEX_GRAD_OPS for those that are"
            )
        if getattr(cls, "complex_arrays", False) or cls.backward is Function.backward or cls.backward_arrays is None:
            c = cls
        else:
            c = type(cls.__name__, (cls,), {"backward_arrays": None, "__module__": cls.__module__})
            c.__qualname__ = cls.__qualname__
        _COMPLEX_NODES[cls] = c
    return c


def record_node(node: Function, inputs: tuple[Any, ...], out: Tensor) -> None:
    """Record ``node`` (built by hand, its forward already done) as the creator of ``out``."""
    node.inputs = inputs
    node._edges, node.generation, _ = _edges_of(inputs)
    out._creator, out._out_idx, out._requires_grad = node, 0, True


class Op(Function):
    """Base of built-in operators: ``forward`` on backend arrays, ``backward`` on Tensors.

    ``self.backend`` is the inputs' backend (``self.backend.xp`` the array namespace); ``self.inputs``
    the input Tensors. Save what backward needs as attributes; outputs needed in backward are kept by
    setting ``saves_output = True`` and storing them with ``self.keep(*outputs)``.
    """

    _array_io = True

    def keep(self, *outputs: Any) -> None:
        """Keep output arrays for ``self.output(i)`` in backward."""
        self._outs = outputs


class FunctionCtx(Function):
    """The ``ctx`` type seen by user Functions (an alias kept for PyTorch users' type hints)."""


class BilinearOp(Op):
    """An operator linear in each of its first two inputs (``a * b``, ``a @ b``): backward reads ``a``
    only for ``b``'s gradient and ``b`` only for ``a``'s, so only those values count as saved (as in
    PyTorch, an in-place change or ``detach_()`` of an unsaved one is no error)."""

    def value_needed(self, i: int) -> bool:
        e = self._edges
        return e is not None and i < 2 and e[1 - i] is not None


# Bound at import end: the view nodes subclass Op.
from ._views import _refresh_view  # noqa: E402
