"""``Function``: one operator's forward and backward, and the node it leaves in the graph.

Built-in operators subclass :class:`Op`: ``forward`` takes and returns backend arrays (fast), and
``backward`` takes and returns Tensors, so that ``create_graph=True`` differentiates the backward pass
itself. User-defined operators subclass :class:`Function` the PyTorch way: static ``forward(ctx, ...)``
and ``backward(ctx, ...)`` on Tensors, with ``ctx.save_for_backward``.

A node holds its inputs (the edges of the graph), the versions of the tensors it saved, and — only when
someone asks for them (``retain_grad``, hooks) — weak references to its outputs.
"""

from __future__ import annotations

import traceback
import weakref
from typing import Any

from .._tensor import Tensor
from ._grad_mode import STATE

__all__ = ["Function", "Op", "FunctionCtx"]


def _device_error(name: str, args: tuple[Any, ...]) -> RuntimeError:
    devs = ", ".join(f"input {i} on {a.device}" for i, a in enumerate(args) if isinstance(a, Tensor))
    return RuntimeError(f"{name}: expected all tensors on the same device, got {devs}")


class Function:
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
    #: Built-in ops (``Op``) work on arrays; user Functions work on Tensors.
    _array_io: bool = False

    # Node state, set by ``apply`` when the graph is recorded.
    inputs: tuple[Any, ...] | None
    generation: int
    backend: Any
    n_out: int = 1
    _out_refs: dict[int, Any] | None = None
    _trace: list[str] | None = None
    _versions: tuple[int, ...] = ()
    _out_vcs: tuple[tuple[list[int], int], ...] = ()
    _outs: tuple[Any, ...] = ()

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        fn = cls.__new__(cls)
        backend = None
        needs_grad = False
        generation = 0
        for a in args:
            if isinstance(a, Tensor):
                if backend is None:
                    backend = a._backend
                elif a._backend is not backend:
                    raise _device_error(cls.__name__, args)
                if a.requires_grad:
                    needs_grad = True
                    c = a._creator
                    if c is not None and c.generation >= generation:
                        generation = c.generation + 1
        if backend is None:
            from ..backends import get_backend

            backend = get_backend(kwargs.pop("device", None))
        fn.backend = backend
        record = needs_grad and cls.differentiable and STATE.enabled
        if cls._array_io:
            out = fn.forward(*[a._data if isinstance(a, Tensor) else a for a in args], **kwargs)
            single = not isinstance(out, tuple)
            outs = (out,) if single else out
            backend = fn.backend  # an op may move its result (ToDevice)
            atype = backend.array_type
            results = tuple(Tensor._make(o if o.__class__ is atype else backend.asarray(o), backend) for o in outs)
        else:
            from ._grad_mode import no_grad

            fn._saved = ()
            with no_grad():
                out = fn.forward(fn, *[a.detach() if isinstance(a, Tensor) else a for a in args], **kwargs)
            single = not isinstance(out, tuple)
            outs = (out,) if single else out
            results = tuple(o if isinstance(o, Tensor) else Tensor._make(backend.asarray(o), backend) for o in outs)
        if STATE.anomaly:
            from ._anomaly import check_forward

            check_forward(cls.__name__, results)
        if record:
            fn.inputs = args
            fn.generation = generation
            fn.n_out = len(results)
            if cls.saves_inputs:
                fn._versions = tuple(a._vc[0] if isinstance(a, Tensor) else 0 for a in args)
            if STATE.anomaly:
                fn._trace = traceback.format_stack()[:-2]
            for i, r in enumerate(results):
                if r._data.dtype.kind in "fc":
                    r.requires_grad = True
                    r._creator = fn
                    r._out_idx = i
            if cls.saves_output:
                fn._out_vcs = tuple((r._vc, r._vc[0]) for r in results)
        return results[0] if single else results

    # -- what subclasses define ----------------------------------------------------------------
    #: backward reads the inputs' values: an in-place change to them before backward is an error.
    saves_inputs: bool = True
    #: backward reads the outputs' values through ``self.output(i)``.
    saves_output: bool = False

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} defines no forward")

    def backward(self, *grads: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} defines no backward")

    # -- PyTorch-style context (for user Functions) ---------------------------------------------
    def save_for_backward(self, *tensors: Any) -> None:
        self._saved = tuple(tensors)
        self._saved_versions = tuple(t._vc[0] if isinstance(t, Tensor) else 0 for t in tensors)

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        for i, (t, v) in enumerate(zip(self._saved, self._saved_versions, strict=True)):
            if isinstance(t, Tensor) and t._vc[0] != v:
                raise RuntimeError(
                    f"{type(self).__name__}: saved tensor {i} of shape {t.shape} was modified in place "
                    f"(version {t._vc[0]}, saved at version {v}) before backward"
                )
        return self._saved

    @property
    def needs_input_grad(self) -> tuple[bool, ...]:
        return tuple(isinstance(a, Tensor) and a.requires_grad for a in self.inputs or ())

    # -- node helpers ----------------------------------------------------------------------------
    @property
    def name(self) -> str:
        n = type(self).__name__
        return n if n.endswith("Backward") else n + "Backward"

    def __repr__(self) -> str:
        return f"<{self.name}>"

    def output(self, i: int = 0) -> Tensor:
        """Output ``i`` as a Tensor for use in backward (connected to this node for higher order)."""
        vc, v = self._out_vcs[i]
        if vc[0] != v:
            raise RuntimeError(
                f"{type(self).__name__}: its output {i} was modified in place (version {vc[0]}, "
                f"expected {v}) before backward; use an out-of-place operation instead"
            )
        ref = self._out_refs.get(i) if self._out_refs else None
        t = ref() if ref is not None else None
        if t is None:
            t = Tensor._make(self.backend.asarray(self._outs[i]), self.backend)
            t._vc = vc
            t.requires_grad = True
            t._creator = self
            t._out_idx = i
        return t

    def _ref_output(self, t: Tensor) -> None:
        if self._out_refs is None:
            self._out_refs = {}
        self._out_refs[t._out_idx] = weakref.ref(t)

    def _check_versions(self) -> None:
        if not self.saves_inputs or self.inputs is None:
            return
        for i, (a, v) in enumerate(zip(self.inputs, self._versions, strict=True)):
            if isinstance(a, Tensor) and a._vc[0] != v:
                raise RuntimeError(
                    f"{type(self).__name__}: input {i} of shape {a.shape} was modified by an in-place "
                    f"operation (it is at version {a._vc[0]}, the graph saved version {v}); its value "
                    "is needed for the gradient. Use an out-of-place operation or clone() it first"
                )

    def _release(self) -> None:
        self.inputs = None
        self.__dict__.pop("_outs", None)
        self.__dict__.pop("_saved", None)


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
