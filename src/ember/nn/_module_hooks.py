"""The hook plumbing of ``Module``: handles for forward hooks, and the two identity Functions around a module's
call that let full backward hooks see ``grad_input`` and ``grad_output`` (and backward pre-hooks replace it).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from .._hooks import RemovableHandle
from .._tensor import Tensor
from ..autograd._function import Function

_hook_ids = itertools.count()


def _add_hook(hooks: dict[int, Any], hook: Any) -> RemovableHandle:
    k = next(_hook_ids)
    hooks[k] = hook
    return RemovableHandle(hooks, k)


class _BackwardHookIn(Function):
    """Identity on a module's inputs; its backward sees grad_input and runs the full backward hooks."""

    @staticmethod
    def forward(ctx: Any, module: Any, state: dict[str, Any], *xs: Tensor) -> Any:
        ctx.module, ctx.state = module, state
        return tuple(x.clone() for x in xs) if len(xs) > 1 else xs[0].clone()

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        grads = _run_bwd_hooks(ctx.module, tuple(grads), ctx.state.get("grad_output", ()))
        return (None, None, *grads)


class _BackwardHookOut(Function):
    """Identity on a module's outputs; its backward records grad_output."""

    @staticmethod
    def forward(ctx: Any, module: Any, state: dict[str, Any], *ys: Tensor) -> Any:
        ctx.module, ctx.state = module, state
        return tuple(y.clone() for y in ys) if len(ys) > 1 else ys[0].clone()

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        for hook in list(ctx.module._bwd_hooks.values()):
            if isinstance(hook, PreHook):  # full backward pre-hooks: they may replace grad_output
                r = hook.fn(ctx.module, tuple(grads))
                if r is not None:
                    r = r if isinstance(r, tuple) else (r,)
                    if len(r) != len(grads):
                        raise ValueError(f"backward pre-hook returned {len(r)} gradients, expected {len(grads)}")
                    grads = r
        ctx.state["grad_output"] = tuple(grads)
        if not ctx.state.get("n_in"):  # no input needs a gradient: the hook fires now, with grad_input None
            _run_bwd_hooks(ctx.module, (None,), tuple(grads))
        return (None, None, *grads)


class PreHook:
    """A full backward pre-hook, ``fn(module, grad_output)``, kept among the module's backward hooks (so that every
    check for backward hooks sees it) and run by ``_BackwardHookOut`` before the module's backward."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn


def _run_bwd_hooks(module: Any, grad_input: tuple[Any, ...], grad_output: tuple[Any, ...]) -> tuple[Any, ...]:
    for hook in list(module._bwd_hooks.values()):
        if isinstance(hook, PreHook):
            continue
        r = hook(module, grad_input, grad_output)
        if r is not None:
            r = r if isinstance(r, tuple) else (r,)
            if len(r) != len(grad_input):
                raise ValueError(f"backward hook returned {len(r)} gradients, expected {len(grad_input)}")
            grad_input = r
    return grad_input
