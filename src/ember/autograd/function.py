"""``torch.autograd.function``'s path: ``Function``, ``FunctionCtx``, ``InplaceFunction`` and ``once_differentiable``.

``@once_differentiable`` under a Function's ``@staticmethod backward`` runs it without recording a graph; when the
incoming gradients themselves require grad (a double backward), its results are tied to a node whose backward
raises, as PyTorch's ``DelayedError``: differentiating twice through it is an error, never a silent zero.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ._function import Function, FunctionCtx
from ._grad_mode import is_grad_enabled, no_grad

__all__ = ["Function", "FunctionCtx", "InplaceFunction", "once_differentiable"]


class InplaceFunction(Function):
    """A Function that may write its input in place (``inplace`` picks the behaviour, as in PyTorch)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace


class _DelayedError(Function):
    """Identity on its first ``n`` inputs, tied to the others (the incoming gradients that require grad) so that
    the results require grad; its backward raises."""

    @staticmethod
    def forward(ctx: Any, n: int, *xs: Tensor) -> Any:
        outs = tuple(x.clone() for x in xs[:n])
        return outs if n > 1 else outs[0]

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise RuntimeError("trying to differentiate twice a function that was marked with @once_differentiable")


def once_differentiable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run a Function's ``backward`` without building a graph; a double backward through it raises."""

    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any) -> Any:
        with no_grad():
            outputs = fn(ctx, *args)
        anchors = [a for a in args if isinstance(a, Tensor) and a.requires_grad]
        if not is_grad_enabled() or not anchors:
            return outputs
        many = isinstance(outputs, tuple)
        outs = list(outputs) if many else [outputs]
        pos = [i for i, o in enumerate(outs) if isinstance(o, Tensor) and o.dtype.is_floating_point]
        if pos:
            res: Any = _DelayedError.apply(len(pos), *[outs[i] for i in pos], *anchors)
            for i, t in zip(pos, res if isinstance(res, tuple) else (res,)):
                outs[i] = t
        return tuple(outs) if many else outs[0]

    return wrapper
