"""PyTorch's small autograd names: ``Variable`` (the deprecated alias of Tensor), the engine's multithreading flag,
and whether views are replayed.

Ember's engine runs each backward pass on the calling thread and rebuilds a view's history by replaying the view
(never as a strided alias), so the flags report that; ``set_multithreading_enabled`` is kept so code that turns
PyTorch's device threads off runs unchanged, with the same gradients.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from .._tensor import Tensor

__all__ = ["Variable", "is_multithreading_enabled", "is_view_replay_enabled", "set_multithreading_enabled"]


class _VariableMeta(type):
    def __instancecheck__(cls, other: Any) -> bool:
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """PyTorch's deprecated wrapper: ``Variable(t)`` is a Tensor sharing ``t``'s data, detached from its graph,
    with ``requires_grad`` as given; ``isinstance(x, Variable)`` holds for every Tensor."""

    def __new__(cls, data: Any = None, requires_grad: bool = False, volatile: bool = False) -> Any:  # type: ignore[misc]
        if volatile:
            warnings.warn(
                "volatile was removed and now has no effect. Use `with ember.no_grad():` instead.",
                UserWarning,
                stacklevel=2,
            )
        if data is None:
            data = Tensor([])
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()
        if requires_grad:
            out.requires_grad_(True)
        return out


_MULTITHREADING = [True]
F = TypeVar("F", bound=Callable[..., Any])


def is_multithreading_enabled() -> bool:
    """Whether backward may use worker threads (PyTorch's flag; Ember runs each pass on the calling thread)."""
    return _MULTITHREADING[0]


class set_multithreading_enabled:  # noqa: N801 - PyTorch's name
    """Set the multithreading flag, as a call or a context manager (gradients are the same either way)."""

    def __init__(self, mode: bool) -> None:
        self.prev = _MULTITHREADING[0]
        self.mode = bool(mode)
        _MULTITHREADING[0] = self.mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _MULTITHREADING[0] = self.prev

    def clone(self) -> set_multithreading_enabled:
        """A new block with the same mode."""
        return self.__class__(self.mode)

    def __call__(self, fn: F) -> F:
        """As a decorator: ``fn`` runs with the flag set to this mode (the flag set by the call is undone)."""
        mode = self.mode
        _MULTITHREADING[0] = self.prev

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with set_multithreading_enabled(mode):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


def is_view_replay_enabled() -> bool:
    """True: a view's history is rebuilt by replaying the view itself (Ember has no strided-alias fallback)."""
    return True
