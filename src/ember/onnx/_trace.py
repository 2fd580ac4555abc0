"""Recording one forward pass as the sequence of Ember operators it ran (for ``ember.onnx.export``).

Every built-in operator runs through ``Function.apply``; while tracing, ``apply`` hands each call to a recorder
(``_function.TRACE``, one read per call when not tracing) that runs it and records ``(operator class, arguments,
keyword arguments, outputs)``; an in-place write (``relu_``, ``x += y``, ``copy_``) is recorded as an ``Assign``
of the tensor's new value (``ops/_inplace.WRITE``). Nothing about the model is executed twice
and no operator changes: the trace is the operators' own inputs and results, kept alive until export ends.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .._tensor import Tensor
from ..autograd._function import TRACE, Function, bypass, install_trace
from ..ops import _inplace

__all__ = ["Call", "trace", "tracing"]

_LOCK = threading.Lock()
_ACTIVE = [0]


def tracing() -> bool:
    """Whether an export is recording operators now (fused inference shortcuts must then stay off)."""
    return _ACTIVE[0] > 0


@dataclass
class Call:
    """One operator call: its class name, positional and keyword arguments, and its outputs."""

    op: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    outputs: tuple[Tensor, ...]


@contextmanager
def trace() -> Iterator[list[Call]]:
    """Record every operator applied inside the block (one thread at a time; others wait)."""
    calls: list[Call] = []
    run = Function.__dict__["apply"].__func__  # apply itself, called with the hook emptied

    def record(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        # the outermost call only: the operators it runs itself (a view op's apply calling Function.apply, a
        # user Function's forward) skip the hook
        with bypass():
            out = run(cls, *args, **kwargs)
        outs = out if isinstance(out, tuple) else (out,)
        calls.append(Call(cls.__name__, args, dict(kwargs), tuple(o for o in outs if isinstance(o, Tensor))))
        return out

    def written(t: Tensor, value: Any, index: Any) -> None:  # an in-place write: ``t`` holds a new value now
        calls.append(Call("Assign", (t, value), {"index": index, "view": t._view is not None}, ()))

    with _LOCK:
        install_trace(record, "onnx.export")
        _inplace.WRITE[0] = written
        _ACTIVE[0] += 1
        try:
            yield calls
        finally:
            _ACTIVE[0] -= 1
            TRACE[0] = None
            _inplace.WRITE[0] = None
