"""``ember.library`` (PyTorch's ``torch.library``): custom operators defined in Python.

``custom_op("ns::name", fn, mutates_args=())`` makes an operator callable as the returned object and as
``ember.ops.ns.name`` (``torch.ops.ns.name``, with its ``.default`` overload). ``register_fake`` gives the
function run on meta tensors (shapes only); ``register_autograd`` gives its backward: ``setup_context(ctx,
inputs, output)`` stores what it needs on ``ctx`` and ``backward(ctx, *grads)`` returns one gradient per input.
Without one, a backward through the operator raises a ``RuntimeError``, as in PyTorch (never a silent zero).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

from ._tensor import Tensor
from .autograd import Function
from .autograd._grad_mode import STATE, no_grad
from .ops._custom import CUSTOM_OPS as OPS

__all__ = ["CustomOpDef", "custom_op", "register_autograd", "register_fake"]


class CustomOpDef:
    """A custom operator: call it like its function; ``register_fake``/``register_autograd`` complete it."""

    def __init__(self, namespace: str, name: str, fn: Callable[..., Any], mutates_args: Any) -> None:
        self.namespace, self.name, self._fn = namespace, name, fn
        self.mutates_args = mutates_args
        self._fake: Callable[..., Any] | None = None
        self._backward: Callable[..., Any] | None = None
        self._setup_context: Callable[..., Any] | None = None

    def __repr__(self) -> str:
        return f"<CustomOpDef({self.namespace}::{self.name})>"

    @property
    def default(self) -> CustomOpDef:
        """The operator's one overload (``torch.ops.ns.name.default``)."""
        return self

    def register_fake(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Use ``fn`` on meta tensors (it returns empty outputs of the right shapes and dtypes)."""
        self._fake = fn
        return fn

    def register_autograd(
        self, backward: Callable[..., Any], *, setup_context: Callable[..., Any] | None = None
    ) -> None:
        """Make the operator differentiable with ``backward(ctx, *grads)`` (see the module doc)."""
        self._backward, self._setup_context = backward, setup_context

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
        if any(t.device.type == "meta" for t in tensors):
            if self._fake is None:
                raise RuntimeError(
                    f"There was no fake impl registered for {self!r}; use register_fake to run it on meta tensors"
                )
            return self._fake(*args, **kwargs)
        if not (STATE.enabled and any(t.requires_grad for t in tensors)):
            return self._fn(*args, **kwargs)
        return _CustomOpNode.apply(self, kwargs, *args)


class _CustomOpNode(Function):
    """The graph node of a custom operator called on tensors that need a gradient."""

    @staticmethod
    def forward(ctx: Any, op: CustomOpDef, kwargs: dict[str, Any], *args: Any) -> Any:
        ctx.op = op
        with no_grad():
            out = op._fn(*args, **kwargs)
        if op._setup_context is not None:
            op._setup_context(ctx, args, out)
        return out

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        op: CustomOpDef = ctx.op
        if op._backward is None:
            raise RuntimeError(
                f"Trying to backward through {op.namespace}.{op.name}.default but no autograd formula was registered. "
                "Please use register_autograd to add one."
            )
        g = op._backward(ctx, *grads)
        return (None, None, *(g if isinstance(g, tuple) else (g,)))


def _split(name: Any) -> tuple[str, str]:
    if not isinstance(name, str) or name.count("::") != 1 or not all(name.split("::")):
        raise ValueError(f"custom_op: the name must be 'namespace::name', got {name!r}")
    ns, op = name.split("::")
    return ns, op


def _check_annotated(fn: Callable[..., Any]) -> None:
    """PyTorch infers the schema from the type annotations: every parameter needs one (else ``schema=``)."""
    sig = inspect.signature(fn)
    for p in sig.parameters.values():
        if p.annotation is inspect.Parameter.empty:
            raise ValueError(
                f"infer_schema(func): Parameter {p.name} must have a type annotation. Got func with signature {sig})"
            )


def custom_op(
    name: str,
    fn: Callable[..., Any] | None = None,
    /,
    *,
    mutates_args: Iterable[str] | str,
    device_types: Any = None,
    schema: str | None = None,
) -> Any:
    """Define the operator ``name`` ("namespace::name") computed by ``fn``; without ``fn``, a decorator."""
    ns, opname = _split(name)

    def make(f: Callable[..., Any]) -> CustomOpDef:
        if schema is None:
            _check_annotated(f)
        op = CustomOpDef(ns, opname, f, mutates_args)
        OPS.setdefault(ns, {})[opname] = op
        return op

    return make if fn is None else make(fn)


def _lookup(op: Any) -> CustomOpDef:
    if isinstance(op, CustomOpDef):
        return op
    ns, opname = _split(op)
    try:
        return OPS[ns][opname]
    except KeyError:
        raise RuntimeError(f"no custom operator {op!r} has been defined (ember.library.custom_op)") from None


def register_fake(op: Any, fn: Callable[..., Any] | None = None, /, *, lib: Any = None, _stacklevel: int = 1) -> Any:
    """Register the meta-tensor function of ``op`` (a name or a ``CustomOpDef``); without ``fn``, a decorator."""
    target = _lookup(op)
    return target.register_fake if fn is None else target.register_fake(fn)


def register_autograd(
    op: Any, backward: Callable[..., Any], /, *, setup_context: Callable[..., Any] | None = None, lib: Any = None
) -> None:
    """Register the backward of ``op`` (a name or a ``CustomOpDef``): see the module doc."""
    _lookup(op).register_autograd(backward, setup_context=setup_context)
