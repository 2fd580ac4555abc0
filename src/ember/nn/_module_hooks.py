"""The hook plumbing of ``Module``: handles for forward hooks (PyTorch's ``prepend``, ``with_kwargs`` and
``always_call``), the global forward hooks of ``torch.nn.modules.module``, and the two identity Functions around a
module's call that let full backward hooks see ``grad_input`` and ``grad_output`` (and backward pre-hooks replace it).

A hook registered with PyTorch's defaults is kept as the function itself; one registered ``with_kwargs`` or
``always_call`` as a ``HookEntry`` (so a module's ``_forward_hooks`` holds what PyTorch's holds for the common case,
and the call path pays nothing for hooks it does not have).
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable
from typing import Any

from .._hooks import RemovableHandle
from .._tensor import Tensor
from ..autograd._function import Function
from ._module_slots import Slots

_hook_ids = itertools.count()

#: hooks every module's call runs before its own (``register_module_forward_pre_hook`` / ``_forward_hook``)
GLOBAL_PRE: dict[int, Any] = Slots()
GLOBAL_FWD: dict[int, Any] = Slots()


def _add_hook(hooks: dict[int, Any], hook: Any, prepend: bool = False) -> RemovableHandle:
    k = next(_hook_ids)
    if prepend and hooks:
        rest = list(hooks.items())
        hooks.clear()
        hooks[k] = hook
        hooks.update(rest)
    else:
        hooks[k] = hook
    return RemovableHandle(hooks, k)


class HookEntry:
    """A forward (pre-)hook registered with ``with_kwargs`` or ``always_call``."""

    __slots__ = ("always_call", "fn", "with_kwargs")

    def __init__(self, fn: Callable[..., Any], with_kwargs: bool, always_call: bool = False) -> None:
        self.fn, self.with_kwargs, self.always_call = fn, with_kwargs, always_call

    def __call__(self, *args: Any) -> Any:
        return self.fn(*args)


def entry(fn: Callable[..., Any], with_kwargs: bool, always_call: bool = False) -> Any:
    """What a hook dict keeps for ``fn``: the function itself unless registered with PyTorch's non-defaults."""
    return HookEntry(fn, with_kwargs, always_call) if with_kwargs or always_call else fn


def run_pre_hooks(module: Any, hooks: list[Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run forward pre-hooks in order; each may replace the arguments. Returns ``(args, kwargs)``."""
    for hook in hooks:
        if type(hook) is HookEntry and hook.with_kwargs:
            r = hook.fn(module, args, kwargs)
            if r is not None:
                if not (isinstance(r, tuple) and len(r) == 2):
                    raise RuntimeError(
                        f"forward pre-hook must return None or a tuple of (new_args, new_kwargs), but got {r}."
                    )
                args, kwargs = r
        else:
            r = hook(module, args)
            if r is not None:
                args = r if isinstance(r, tuple) else (r,)
    return args, kwargs


def run_fwd_hooks(module: Any, hooks: list[Any], args: Any, kwargs: dict[str, Any], out: Any) -> Any:
    """Run forward hooks in order; each may replace the output."""
    for hook in hooks:
        if type(hook) is HookEntry and hook.with_kwargs:
            r = hook.fn(module, args, kwargs, out)
        else:
            r = hook(module, args, out)
        if r is not None:
            out = r
    return out


def forward_with_hooks(module: Any, forward: Callable[..., Any], args: Any, kwargs: dict[str, Any]) -> Any:
    """``forward`` then the global and the module's forward hooks (the ``always_call`` ones also when it raised)."""
    hooks = [*GLOBAL_FWD.values(), *module._fwd_hooks.values()]
    try:
        out = forward(module, *args, **kwargs)
    except Exception:
        for where, group in (("global module", GLOBAL_FWD), ("module", module._fwd_hooks)):
            for h in list(group.values()):  # always_call hooks get output None; the forward's error is raised
                if type(h) is HookEntry and h.always_call:
                    try:
                        h.fn(module, args, kwargs, None) if h.with_kwargs else h.fn(module, args, None)
                    except Exception as e:
                        warnings.warn(
                            f"{where} forward hook with ``always_call=True`` raised an exception that was silenced "
                            f"as another error was raised in forward: {e}",
                            UserWarning,
                            stacklevel=3,
                        )
        raise
    return run_fwd_hooks(module, hooks, args, kwargs, out)


def register_module_forward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """A forward pre-hook run by every module's call, before the module's own: ``hook(module, args)``."""
    return _add_hook(GLOBAL_PRE, hook)


def register_module_forward_hook(
    hook: Callable[..., Any], *, with_kwargs: bool = False, always_call: bool = False
) -> RemovableHandle:
    """A forward hook run by every module's call, before the module's own: ``hook(module, args, output)``."""
    return _add_hook(GLOBAL_FWD, entry(hook, with_kwargs, always_call))


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
