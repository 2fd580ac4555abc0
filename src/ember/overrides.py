"""``ember.overrides`` (PyTorch's ``torch.overrides``): the function-mode stack that libraries enter.

PyTorch hands each call of its functions to the innermost ``TorchFunctionMode`` being entered (its
``__torch_function__``). **Ember has no ``__torch_function__`` dispatch**: its functions never call a mode's
handler. Entering a mode pushes it on the stack (``_get_current_function_mode_stack``) and leaving pops it, as in
PyTorch, so a library that enters a mode which hands every call on unchanged (Lightning's ``_EmptyInit`` when
empty initialisation is off, the default) runs as on PyTorch; a mode meant to change or record calls has no effect
on Ember. To record operator calls use ``ember.profiler``; to count FLOPs, ``ember.utils.flop_counter``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["TorchFunctionMode"]


class _Stack(threading.local):
    def __init__(self) -> None:
        self.modes: list[TorchFunctionMode] = []


_STACK = _Stack()


class TorchFunctionMode:
    """A context manager put on the function-mode stack while its block runs (see the module's note: Ember's
    functions do not call ``__torch_function__``)."""

    def __init__(self) -> None:
        pass

    def __torch_function__(self, func: Callable[..., Any], types: Sequence[type], args: Sequence[Any] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:  # fmt: skip
        """What a subclass does with a call (PyTorch's base raises NotImplementedError, as here)."""
        raise NotImplementedError

    def __enter__(self) -> TorchFunctionMode:
        _push_mode(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _pop_mode()


def _push_mode(mode: TorchFunctionMode) -> None:
    """Put ``mode`` on this thread's stack."""
    _STACK.modes.append(mode)


def _pop_mode() -> TorchFunctionMode:
    """Take the innermost mode off this thread's stack (RuntimeError when it is empty)."""
    if not _STACK.modes:
        raise RuntimeError("trying to pop from empty mode stack")
    return _STACK.modes.pop()


def _get_current_function_mode() -> TorchFunctionMode | None:
    """The innermost mode entered on this thread, or None."""
    return _STACK.modes[-1] if _STACK.modes else None


def _get_current_function_mode_stack() -> list[TorchFunctionMode]:
    """This thread's modes, outermost first (a copy)."""
    return list(_STACK.modes)


def _len_torch_function_stack() -> int:
    """How many modes are entered on this thread."""
    return len(_STACK.modes)
