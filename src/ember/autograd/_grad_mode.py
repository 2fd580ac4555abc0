"""Grad mode: a per-thread flag saying whether operations record the graph."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode"]

F = TypeVar("F", bound=Callable[..., Any])


class _State(threading.local):
    enabled = True
    anomaly = False
    autocast: Any = None  # the innermost ember.autocast region of this thread (autograd/_autocast.py)


STATE = _State()
#: True once any thread has turned anomaly mode on (never reset): the hot path reads this list, and the
#: per-thread ``STATE.anomaly`` only after that
ANOMALY_USED = [False]


def is_grad_enabled() -> bool:
    """True when operations on this thread record the graph for backward."""
    return STATE.enabled


class _GradMode:
    """Base of the grad-mode context managers; also usable as decorators."""

    _mode: bool = True

    def __init__(self) -> None:
        self._prev: list[bool] = []

    def __enter__(self) -> None:
        self._prev.append(STATE.enabled)
        STATE.enabled = self._mode

    def __exit__(self, *exc: object) -> None:
        STATE.enabled = self._prev.pop()

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.__class__():
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class no_grad(_GradMode):  # noqa: N801 - PyTorch's name
    """Context manager / decorator: operations inside record no graph."""

    _mode = False


class enable_grad(_GradMode):  # noqa: N801 - PyTorch's name
    """Context manager / decorator: operations inside record the graph (undoes ``no_grad``)."""

    _mode = True


inference_mode = no_grad


class set_grad_enabled(_GradMode):  # noqa: N801 - PyTorch's name
    """Set grad mode on this thread; works as a call or as a context manager."""

    def __init__(self, mode: bool) -> None:
        super().__init__()
        self._mode = bool(mode)
        self._prev.append(STATE.enabled)
        STATE.enabled = self._mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        STATE.enabled = self._prev.pop()

    def __call__(self, fn: F) -> F:
        mode = self._mode
        STATE.enabled = self._prev.pop()

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]
