"""The one hook ``ember.compile`` records through (``ember/_compile``); inert when nothing is captured.

``CAPTURE.tracer`` is None except while ``ember.compile`` runs a function eagerly to record it. Calls that
must be replayed as themselves — not as the array operations they happen to run — are marked ``@opaque``:
the optimizer's ``step``/``zero_grad`` (so that the learning rate and the other group values a scheduler
changes are read again at every replayed step) and gradient clipping (its threshold test reads the norm).
When no capture runs, an opaque call costs one attribute read.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["CAPTURE", "opaque"]

F = TypeVar("F", bound=Callable[..., Any])


class _Capture:
    #: the active ``ember._compile`` tracer, or None
    tracer: Any = None


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
