"""``ember.compiler`` (PyTorch's ``torch.compiler``): what model and library code asks of the compiler.

``is_compiling()`` is True while :func:`ember.compile` records a call (the eager run that becomes a program;
a replay runs no Python). A function marked ``disable`` is never recorded: meeting one while recording makes
the compiled function run eagerly, with one warning naming the call's line (``fullgraph=True``: a
``CaptureError``), because a captured program must not leave out what the function does. ``reset()`` makes
every compiled function capture again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from ._compile import compile
from ._compile._registry import reset_all
from .autograd._capture import CAPTURE

__all__ = [
    "allow_in_graph", "assume_constant_result", "compile", "cudagraph_mark_step_begin", "disable", "is_compiling",
    "is_dynamo_compiling", "is_exporting", "list_backends", "reset",
]  # fmt: skip

F = TypeVar("F", bound=Callable[..., Any])


def is_compiling() -> bool:
    """Whether ``ember.compile`` is recording the running code (on this thread)."""
    tracer = CAPTURE.tracer
    return tracer is not None and tracer.here()


is_dynamo_compiling = is_compiling


def is_exporting() -> bool:
    """Whether an export traces the running code: never (Ember's ONNX export runs eagerly)."""
    return False


def disable(fn: Any = None, recursive: bool = True, *, reason: str | None = None) -> Any:
    """Keep ``fn`` out of every captured program (usable as ``@disable`` and ``@disable(reason=...)``).

    A compiled function that calls it runs eagerly (PyTorch breaks its graph there instead)."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    name = getattr(fn, "__qualname__", None) or type(fn).__name__

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        tracer = CAPTURE.tracer
        if tracer is not None and tracer.here():
            tracer.flag(f"{name} is marked ember.compiler.disable" + (f" ({reason})" if reason else ""))
        return fn(*args, **kwargs)

    return run


def reset() -> None:
    """Forget every captured program in the process: each compiled function captures again on its next call."""
    reset_all()


def allow_in_graph(fn: F) -> F:
    """``fn`` as it is: Ember records the operators any function runs."""
    return fn


def assume_constant_result(fn: F) -> F:
    """``fn`` as it is: a host value it reads is guarded (the program recaptures when it changes), not assumed."""
    return fn


def cudagraph_mark_step_begin() -> None:
    """Nothing to mark: a replayed CUDA graph's outputs are fresh tensors, never overwritten by the next step."""


def list_backends(exclude_tags: Any = ("debug", "experimental")) -> list[str]:
    """The ``backend=`` values :func:`ember.compile` takes as its own."""
    return ["ember", "eager"]
