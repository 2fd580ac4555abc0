"""Recording one forward pass as the sequence of Ember operators it ran (for ``ember.onnx.export``).

Every built-in operator runs through ``Function.apply``; while tracing, ``apply`` is wrapped to record
``(operator class, arguments, keyword arguments, outputs)``. Nothing about the model is executed twice
and no operator changes: the trace is the operators' own inputs and results, kept alive until export ends.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .._tensor import Tensor
from ..autograd._function import Function

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
    original = Function.__dict__["apply"]
    depth = [0]

    def apply(cls: type, *args: Any, **kwargs: Any) -> Any:
        depth[0] += 1
        try:
            out = original.__func__(cls, *args, **kwargs)
        finally:
            depth[0] -= 1
        if depth[0] == 0:  # the outermost call (a view op's apply calls Function.apply again)
            outs = out if isinstance(out, tuple) else (out,)
            calls.append(Call(cls.__name__, args, dict(kwargs), tuple(o for o in outs if isinstance(o, Tensor))))
        return out

    with _LOCK:
        Function.apply = classmethod(apply)  # type: ignore[assignment,method-assign]
        _ACTIVE[0] += 1
        try:
            yield calls
        finally:
            _ACTIVE[0] -= 1
            Function.apply = original  # type: ignore[method-assign]
