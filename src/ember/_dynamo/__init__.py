"""``ember._dynamo`` (PyTorch's ``torch._dynamo``): the names training scripts touch, served by ``ember.compile``.

``config.cache_size_limit`` is the number of programs a compiled function keeps (new ones read it);
``config.suppress_errors`` and the other flags are kept for the scripts that set them. ``mark_dynamic`` and
``mark_static`` take a hint Ember does not need: a new shape is captured anew. ``allow_in_graph`` and
``assume_constant_result`` mark a function for the tracer and return it unchanged, as in PyTorch's eager mode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from .._compile._registry import SETTINGS
from ..compiler import disable, is_compiling, reset
from . import eval_frame
from .eval_frame import OptimizedModule

__all__ = [
    "OptimizedModule",
    "allow_in_graph",
    "assume_constant_result",
    "config",
    "disable",
    "eval_frame",
    "is_compiling",
    "mark_dynamic",
    "mark_static",
    "reset",
]


class _Config:
    """Settings: ``cache_size_limit`` is live; other attributes are stored as set."""

    suppress_errors = False
    verbose = False

    @property
    def cache_size_limit(self) -> int:
        return int(SETTINGS["cache_size"])

    @cache_size_limit.setter
    def cache_size_limit(self, n: int) -> None:
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"_dynamo.config.cache_size_limit must be a positive int, got {n!r}")
        SETTINGS["cache_size"] = n


config = _Config()

_F = TypeVar("_F", bound=Callable[..., Any])


def allow_in_graph(fn: _F) -> _F:
    """Mark ``fn`` to be kept whole in a captured graph; it is returned itself (eager calls are unchanged)."""
    if not callable(fn):
        raise AssertionError(f"allow_in_graph expects a callable, got {type(fn).__name__}")  # (PyTorch's type)
    return fn


def assume_constant_result(fn: _F) -> _F:
    """Mark ``fn``'s result as constant for the tracer (``_dynamo_marked_constant``); eager calls are unchanged."""
    fn._dynamo_marked_constant = True  # type: ignore[attr-defined]
    return fn


def mark_dynamic(t: Any, index: Any, *, min: Any = None, max: Any = None) -> None:
    """A hint that ``t``'s dim ``index`` varies: Ember captures each new shape anew, so nothing is needed."""


def mark_static(t: Any, index: Any = None) -> None:
    """A hint that ``t``'s shape does not vary: Ember's programs guard on shapes already."""
