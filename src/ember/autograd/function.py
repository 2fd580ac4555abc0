"""``torch.autograd.function``: ``Function``, ``FunctionCtx`` and ``once_differentiable``.

``once_differentiable`` marks a custom Function's ``backward`` as differentiable only once, as PyTorch's: it runs
without recording (its tensors carry no graph), and when the gradient flowing in requires grad (a
``create_graph=True`` pass), the gradients it returns get a node that raises RuntimeError if a second backward
reaches it, instead of a silently missing second-order term.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ._function import Function, FunctionCtx
from ._grad_mode import is_grad_enabled, no_grad

__all__ = ["Function", "FunctionCtx", "once_differentiable"]

_TWICE = "trying to differentiate twice a function that was marked with @once_differentiable"


class _DelayedError(Function):
    """The identity whose backward raises: what ``once_differentiable`` hangs on the gradients it returns."""

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Tensor:
        raise RuntimeError(_TWICE)


def _raising(o: Any) -> Any:
    """``o`` behind a node that raises on backward (fed by a detached alias that requires grad, as PyTorch)."""
    if not isinstance(o, Tensor) or (not o.dtype.is_floating_point and not o.dtype.is_complex):
        return o
    return _DelayedError.apply(o.detach().requires_grad_(True))


def once_differentiable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a Function's ``backward``: it runs without grad; a second backward through its result raises."""

    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any) -> Any:
        with no_grad():
            outputs = fn(ctx, *args)
        if not is_grad_enabled() or not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        if isinstance(outputs, tuple):
            return tuple(_raising(o) for o in outputs)
        return _raising(outputs)

    return wrapper
