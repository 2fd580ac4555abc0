"""``torch.cuda.CUDAGraph``, ``torch.cuda.graph`` and ``graph_pool_handle``: the names exist everywhere, as in a
CPU build of PyTorch, and using them needs CUDA.

Ember replays whole captured steps through ``ember.compile`` (its programs, not the driver's graph API), so making
one of these objects raises a ``RuntimeError`` (PyTorch's type): without CUDA it says so; with CUDA it names
``ember.compile`` as the way Ember records and replays work on the device.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CUDAGraph", "graph", "graph_pool_handle"]


def _refuse(what: str) -> RuntimeError:
    from . import is_available

    if not is_available():
        return RuntimeError(
            f"{what} needs a CUDA device, and none is available here (ember.cuda.is_available() is False)"
        )
    return RuntimeError(
        f"{what}: Ember does not drive CUDA graphs directly; capture and replay a step with ember.compile instead"
    )


class CUDAGraph:
    """A captured CUDA graph (PyTorch's ``torch.cuda.CUDAGraph``); making one raises a ``RuntimeError`` here."""

    def __init__(self, keep_graph: bool = False) -> None:
        raise _refuse("torch.cuda.CUDAGraph")


class graph:  # noqa: N801 - PyTorch's name
    """``with torch.cuda.graph(g):`` captures the block into ``g``; making one raises a ``RuntimeError`` here."""

    def __init__(
        self, cuda_graph: CUDAGraph, pool: Any = None, stream: Any = None, capture_error_mode: str = "global"
    ) -> None:
        raise _refuse("torch.cuda.graph")


def graph_pool_handle() -> Any:
    """A memory pool handle shared by graph captures; raises a ``RuntimeError`` here (see the module doc)."""
    raise _refuse("torch.cuda.graph_pool_handle")
