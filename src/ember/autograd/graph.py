"""PyTorch's ``torch.autograd.graph``: saved-tensor hooks, graph nodes and gradient edges, multi-tensor hooks.

``saved_tensors_hooks(pack, unpack)`` applies to every value a node saves for backward, built-in operators'
included (``_saved_hooks.py`` is the one place that packs and unpacks them).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from .._tensor import Tensor
from ._engine import queue_callback
from ._node import Node, accumulate_grad
from ._saved_hooks import LOCAL, SAVED_ON

__all__ = [
    "GradientEdge",
    "Node",
    "disable_saved_tensors_hooks",
    "get_gradient_edge",
    "increment_version",
    "register_multi_grad_hook",
    "save_on_cpu",
    "saved_tensors_hooks",
]


class saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """Within the block, every tensor saved for backward goes through ``pack_hook``; backward gets it back from
    ``unpack_hook(packed)``. Per thread; the innermost block wins; the hooks run with grad mode off."""

    def __init__(self, pack_hook: Callable[[Tensor], Any], unpack_hook: Callable[[Any], Tensor]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> saved_tensors_hooks:
        if LOCAL.disabled is not None:
            raise RuntimeError(LOCAL.disabled)
        LOCAL.stack.append((self.pack_hook, self.unpack_hook))
        SAVED_ON[0] += 1
        return self

    def __exit__(self, *exc: object) -> None:
        LOCAL.stack.pop()
        SAVED_ON[0] -= 1


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - PyTorch's name
    """Saved tensors are kept as copies in host memory and moved back to their device in backward
    (``pin_memory``: the copies are pinned where an accelerator makes that mean something)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack(t: Tensor) -> tuple[Any, Tensor]:
            be = t._backend
            if t.device.type == "cpu":
                host = Tensor._make(be.xp.copy(t._data), be)
            else:
                host = t.detach().to("cpu")
            if pin_memory:
                host = host.pin_memory()
            return t.device, host

        def unpack(packed: tuple[Any, Tensor]) -> Tensor:
            device, host = packed
            return host if host.device == device else host.to(device, non_blocking=pin_memory)

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """Within the block, using ``saved_tensors_hooks`` raises ``RuntimeError(error_message)`` (so does entering
    this block while such hooks are on)."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message
        self._prev: list[str | None] = []

    def __enter__(self) -> None:
        if LOCAL.stack:
            raise RuntimeError(self.error_message)
        self._prev.append(LOCAL.disabled)
        LOCAL.disabled = self.error_message

    def __exit__(self, *exc: object) -> None:
        LOCAL.disabled = self._prev.pop()


class GradientEdge(NamedTuple):
    """Where a tensor's gradient enters the graph: the node and which of its outputs."""

    node: Any
    output_nr: int


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The tensor's ``GradientEdge``: ``(grad_fn, output index)``, or the leaf's ``AccumulateGrad``.

    Usable as an input of ``ember.autograd.grad``: the gradient with respect to that edge, whatever later
    in-place operations did to the tensor.
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"get_gradient_edge: expected a Tensor, got {type(tensor).__name__}")
    if not tensor.requires_grad:
        raise RuntimeError(
            "get_gradient_edge: it is not possible to get the gradient edge for a Tensor that does not require "
            "gradients"
        )
    fn = tensor.grad_fn
    if fn is None:
        return GradientEdge(accumulate_grad(tensor), 0)
    return GradientEdge(fn, tensor._out_idx)


def increment_version(tensor: Tensor | Iterable[Tensor]) -> None:
    """Bump the version counter of ``tensor`` (or of each tensor given), as an in-place write would."""
    for t in [tensor] if isinstance(tensor, Tensor) else tensor:
        if not isinstance(t, Tensor):
            raise TypeError(f"increment_version: expected Tensors, got {type(t).__name__}")
        t._vc[0] += 1


class _MultiHandle:
    """Removes the hooks of one ``register_multi_grad_hook`` call."""

    def __init__(self, handles: Sequence[Any]) -> None:
        self.handles = tuple(handles)

    def remove(self) -> None:
        for h in self.handles:
            h.remove()

    def __enter__(self) -> _MultiHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def register_multi_grad_hook(tensors: Sequence[Tensor], fn: Callable[[Any], Any], *, mode: str = "all") -> _MultiHandle:
    """Call ``fn`` once per backward pass that reaches some of ``tensors``.

    ``mode="all"``: ``fn(grads)`` with every tensor's gradient (None where this pass computed none), once the
    pass is done; ``mode="any"``: ``fn(grad)`` with the first of their gradients computed. ``fn`` returns None.
    """
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = list(tensors)
    lock = threading.Lock()
    state: dict[str, Any] = {"grads": None, "fired": False}

    def finish() -> None:
        with lock:
            grads, state["grads"] = state["grads"], None
            state["fired"] = False
        if mode == "all" and grads is not None:
            fn(tuple(grads))

    def make(i: int) -> Callable[[Tensor], None]:
        def hook(g: Tensor) -> None:
            with lock:
                first = state["grads"] is None
                if first:
                    state["grads"] = [None] * len(tensors)
                state["grads"][i] = g
                fire_any = mode == "any" and not state["fired"]
                state["fired"] = True
            if first:
                queue_callback(finish)
            if fire_any:
                fn(g)

        return hook

    handles = [t.register_hook(make(i)) for i, t in enumerate(tensors) if t.requires_grad]
    return _MultiHandle(handles)
