"""The one hook ``ember.compile`` records through (``ember/_compile``); inert when nothing is captured.

``CAPTURE.tracer`` is None except while ``ember.compile`` runs a function eagerly to record it. Calls that
must be replayed as themselves — not as the array operations they happen to run — are marked ``@opaque``:
the optimizer's ``step``/``zero_grad`` (so that the learning rate and the other group values a scheduler
changes are read again at every replayed step) and gradient clipping (its threshold test reads the norm).
When no capture runs, an opaque call costs one attribute read.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

__all__ = ["CAPTURE", "opaque", "collective", "distributed_call", "touch", "refuse"]

F = TypeVar("F", bound=Callable[..., Any])


class _Capture:
    #: the active ``ember._compile`` tracer, or None
    tracer: Any = None
    #: objects whose Python state decides what a step records (DistributedDataParallel's sync flags): each has
    #: ``_capture_state()`` (a comparable value) and ``_capture_restore(state)``; a capture that ``touch``es
    #: one guards its programs on the state it had when the call began
    stateful: ClassVar[weakref.WeakSet[Any]] = weakref.WeakSet()
    #: while a capture runs: how it takes a public ``ember.distributed`` call (``_compile/_hooks.py``)
    on_collective: Any = None


CAPTURE = _Capture()


def opaque(fn: F) -> F:
    """Mark ``fn`` to be recorded as one call and replayed by calling it again (live Python state)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        tracer = CAPTURE.tracer
        if tracer is None:
            return fn(*args, **kwargs)
        return tracer.opaque(fn, args, kwargs)

    wrapper.__wrapped_opaque__ = fn  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


def collective(fn: F) -> F:
    """``opaque`` for a call that communicates with other processes (a distributed collective): replayed as
    itself, at the same point; a program holding one is never run beside eager to check it (that would make
    its collectives twice, and the ranks' calls would stop matching)."""
    fn.__ember_collective__ = True  # type: ignore[attr-defined]
    return opaque(fn)


def distributed_call(fn: F) -> F:
    """A public ``ember.distributed`` call: inside a capture it goes to ``CAPTURE.on_collective`` (recorded as a
    host step, or a reason for the step to run eagerly), however the caller imported it."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if CAPTURE.tracer is None:
            return fn(*args, **kwargs)
        return CAPTURE.on_collective(fn, args, kwargs)

    return wrapper  # type: ignore[return-value]


def touch(obj: Any) -> None:
    """A step being captured depends on ``obj``'s state (one of ``CAPTURE.stateful``): its programs are guarded on
    the state ``obj`` had when the call began. Inert when nothing is captured."""
    tracer = CAPTURE.tracer
    if tracer is not None and tracer.here():
        tracer.touched.setdefault(id(obj), obj)


def refuse(what: str) -> None:
    """The step being captured cannot be: it runs eagerly from now on, with a note saying ``what`` (with
    ``fullgraph=True``: an error). Inert when nothing is captured."""
    tracer = CAPTURE.tracer
    if tracer is not None and tracer.here():
        tracer.flag(what)
