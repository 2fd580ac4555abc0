"""Activation checkpointing (PyTorch's ``torch.utils.checkpoint``): run a piece of the model without keeping its
intermediate results, and run it again during backward to get its gradients. Memory for compute.

The forward runs under ``no_grad``; backward re-runs ``function`` on the saved inputs with the random state the
forward saw (so dropout draws the same mask) and back-propagates through that second run, which accumulates the
gradients of the parameters ``function`` uses and returns those of the inputs. ``use_reentrant`` is accepted for
PyTorch's signature: both of PyTorch's modes give these gradients. ``get_device_states``/``set_device_states``
save and restore the generator states of the GPUs some tensors are on (libraries that recompute, such as
sentence-transformers' cached losses, call them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._creation import get_rng_state, set_rng_state
from .._pytree import tree_leaves
from .._tensor import Tensor
from ..autograd import Function
from ..autograd._engine import backward as _backward
from ..autograd._grad_mode import enable_grad, is_grad_enabled, no_grad

__all__ = ["checkpoint", "checkpoint_sequential", "get_device_states", "set_device_states"]


class _Checkpoint(Function):
    @staticmethod
    def forward(ctx: Any, function: Callable[..., Any], preserve_rng_state: bool, *args: Any) -> Any:
        ctx.function, ctx.args = function, args
        ctx.rng = get_rng_state() if preserve_rng_state else None
        with no_grad():
            out = function(*args)
        ctx.tuple_out = isinstance(out, tuple)
        return out

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple[Any, ...]:
        need = ctx.needs_input_grad[2:]  # (forward saw its inputs cut from the graph)
        inputs = [
            a.detach().requires_grad_(n) if isinstance(a, Tensor) else a for a, n in zip(ctx.args, need, strict=True)
        ]
        outer = get_rng_state() if ctx.rng is not None else None
        try:
            if ctx.rng is not None:
                set_rng_state(ctx.rng)
            with enable_grad():
                out = ctx.function(*inputs)
        finally:
            if outer is not None:
                set_rng_state(outer)
        outs = out if isinstance(out, tuple) else (out,)
        pairs = [(o, g) for o, g in zip(outs, grads, strict=True)
                 if isinstance(o, Tensor) and o.requires_grad and g is not None]  # fmt: skip
        if pairs:
            _backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None, *(a.grad if isinstance(a, Tensor) and a.requires_grad else None for a in inputs))


def checkpoint(
    function: Callable[..., Any], *args: Any, use_reentrant: bool | None = None, preserve_rng_state: bool = True,
    **kwargs: Any,
) -> Any:  # fmt: skip
    """``function(*args, **kwargs)`` without keeping its intermediate results for backward, which recomputes
    them. Outside grad mode, or when nothing needs a gradient, it is a plain call."""
    fn = (lambda *a: function(*a, **kwargs)) if kwargs else function
    if not is_grad_enabled():
        return fn(*args)
    return _Checkpoint.apply(fn, preserve_rng_state, *args)


def checkpoint_sequential(
    functions: Any, segments: int, input: Tensor, use_reentrant: bool | None = None, **kwargs: Any
) -> Tensor:
    """Run the modules of ``functions`` (a ``Sequential`` or a list) in ``segments`` checkpointed chunks; the last
    chunk runs normally, as PyTorch's does."""
    fns: Sequence[Any] = list(functions.children()) if hasattr(functions, "children") else list(functions)
    size = max(len(fns) // segments, 1)

    def run(start: int, end: int) -> Callable[[Tensor], Tensor]:
        def forward(x: Tensor) -> Tensor:
            for f in fns[start : end + 1]:
                x = f(x)
            return x

        return forward

    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, **kwargs)
    return run(end + 1, len(fns) - 1)(input)


def get_device_states(*args: Any) -> tuple[list[int], list[Any]]:
    """The device index of each GPU tensor in ``args`` (through lists, tuples and dicts; CPU and meta tensors are
    skipped) and the state of the generator it draws from, for :func:`set_device_states`."""
    from .. import cuda

    ids = [a.get_device() for a in tree_leaves(args) if isinstance(a, Tensor) and a.device.type not in ("cpu", "meta")]
    return ids, [cuda.get_rng_state(f"cuda:{i}") for i in ids]


def set_device_states(devices: Sequence[int], states: Sequence[Any], *, device_type: str | None = None) -> None:
    """Give each GPU in ``devices`` its generator state back (from :func:`get_device_states`)."""
    if device_type == "meta":
        return
    from .. import cuda

    for d, state in zip(devices, states, strict=False):
        cuda.set_rng_state(state, f"cuda:{d}")
