"""Grad mode: a per-thread flag saying whether operations record the graph.

``STATE.enabled`` is the flag, read per thread (a ``threading.local`` attribute, ~35 ns). ``GRAD_OFF`` holds the
key of each thread that has it off now, so the hot path (``Function.apply``) reads the per-thread flag only when
some thread has grad mode off: ``not GRAD_OFF or STATE.enabled`` (~5 ns while the set is empty). A thread's key is
the id of a ``_Token`` made with its state (``_State.__init__`` runs once per thread); the token takes the key out
when the thread's state goes (a thread that ends with grad mode off). Every write of ``STATE.enabled`` is here and
keeps the key in step (``set.add``/``set.discard`` of an int are atomic under the GIL).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = [
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "is_grad_enabled",
    "inference_mode",
    "is_inference_mode_enabled",
]

F = TypeVar("F", bound=Callable[..., Any])


#: the keys of the threads whose grad mode is off now (empty: on in every thread; see the module's docstring)
GRAD_OFF: set[int] = set()


class _Token:
    """A thread's key in ``GRAD_OFF`` (its id), held by the thread's state; taken out when the state drops it."""

    __slots__ = ()

    # (the set bound as a default: a token dropped at interpreter exit outlives the module's globals)
    def __del__(self, off: set[int] = GRAD_OFF) -> None:
        off.discard(id(self))


class _State(threading.local):
    enabled = True
    inference = False  # inside an ``inference_mode`` block (grad mode is then off too)
    anomaly = False
    autocast: Any = None  # the innermost ember.autocast region of this thread (autograd/_autocast.py)

    def __init__(self) -> None:  # (once per thread)
        self.token = _Token()
        self.key = id(self.token)


STATE = _State()
#: True once any thread has turned anomaly mode on (never reset): the hot path reads this list, and the
#: per-thread ``STATE.anomaly`` only after that
ANOMALY_USED = [False]


def _set_enabled(mode: bool) -> None:
    """Set this thread's grad mode (a bool), keeping its key in ``GRAD_OFF`` while it is off."""
    state = STATE
    if state.enabled is not mode:
        state.enabled = mode
        if mode:
            GRAD_OFF.discard(state.key)
        else:
            GRAD_OFF.add(state.key)


def is_grad_enabled() -> bool:
    """True when operations on this thread record the graph for backward."""
    return STATE.enabled


class _GradMode:
    """Base of the grad-mode context managers; also usable as decorators."""

    _mode: bool = True

    def __new__(cls, orig_func: Any = None) -> Any:
        if callable(orig_func):  # ``@no_grad`` without parentheses, as PyTorch allows
            return cls()(orig_func)
        return object.__new__(cls)

    def __init__(self) -> None:
        self._prev: list[bool] = []

    # (``_set_enabled`` inlined: these run per block, a call costs ~60 ns)
    def __enter__(self) -> None:
        state = STATE
        prev = state.enabled
        self._prev.append(prev)
        mode = self._mode
        if prev is not mode:
            state.enabled = mode
            if mode:
                GRAD_OFF.discard(state.key)
            else:
                GRAD_OFF.add(state.key)

    def __exit__(self, *exc: object) -> None:
        state = STATE
        mode = self._prev.pop()
        if state.enabled is not mode:
            state.enabled = mode
            if mode:
                GRAD_OFF.discard(state.key)
            else:
                GRAD_OFF.add(state.key)

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


class inference_mode(_GradMode):  # noqa: N801 - PyTorch's name
    """Context manager / decorator (also bare, ``@inference_mode``): operations inside record no graph, and
    ``is_inference_mode_enabled()`` is True. ``inference_mode(False)`` leaves inference mode: grad mode on.

    Ember makes no tensors of a kind of their own here (``Tensor.is_inference()`` is False): inside the block
    this is ``no_grad``.
    """

    def __new__(cls, mode: Any = True) -> Any:
        if callable(mode):  # ``@inference_mode`` without parentheses
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        super().__init__()
        self._inference = bool(mode)
        self._mode = not self._inference
        self._prev_inference: list[bool] = []

    def __enter__(self) -> None:
        self._prev_inference.append(STATE.inference)
        STATE.inference = self._inference
        super().__enter__()

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        STATE.inference = self._prev_inference.pop()

    def __call__(self, fn: F) -> F:
        mode = self._inference

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with inference_mode(mode):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


def is_inference_mode_enabled() -> bool:
    """True inside an ``inference_mode`` block on this thread."""
    return STATE.inference


class set_grad_enabled(_GradMode):  # noqa: N801 - PyTorch's name
    """Set grad mode on this thread; works as a call or as a context manager."""

    def __init__(self, mode: bool) -> None:
        super().__init__()
        self._mode = bool(mode)
        self._prev.append(STATE.enabled)
        _set_enabled(self._mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _set_enabled(self._prev.pop())

    def __call__(self, fn: F) -> F:
        mode = self._mode
        _set_enabled(self._prev.pop())

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]
