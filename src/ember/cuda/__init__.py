"""``ember.cuda``: PyTorch's ``torch.cuda`` surface, answered by the backends that serve CUDA here.

Memory statistics, streams and events come from ``torch.cuda`` on the torch backend and from CuPy's memory
pool, streams and events on CuPy (``_memory.py``, ``_streams.py``); ``ember.cuda.amp`` holds the
``torch.cuda.amp`` names.

A CUDA device is served by torch (when it has CUDA) or CuPy; without either every query answers
truthfully (``is_available()`` is False, ``device_count()`` is 0) and creating a CUDA tensor raises a
``DeviceError`` that lists what is available. Random numbers for CUDA tensors come from Ember's seeded
generators (``ember.manual_seed`` seeds them all), so ``manual_seed`` here reseeds the same ones.
"""

from __future__ import annotations

from typing import Any

from .. import backends
from .._device import device
from .._errors import DeviceError
from ..backends import get_backend
from ._graphs import CUDAGraph, graph, graph_pool_handle
from ._memory import (
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    reset_max_memory_allocated,
    reset_peak_memory_stats,
)
from ._queries import (
    OutOfMemoryError,
    get_device_capability,
    get_device_properties,
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    memory_stats,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)
from ._streams import Event, Stream, current_stream, default_stream, stream

#: PyTorch's class behind ``torch.cuda.stream(s)``: a context that makes ``s`` current (None: no change).
StreamContext = stream

__all__ = [
    "CUDAGraph",
    "StreamContext",
    "graph",
    "graph_pool_handle",
    "OutOfMemoryError",
    "get_device_capability",
    "get_device_properties",
    "get_rng_state",
    "get_rng_state_all",
    "initial_seed",
    "memory_stats",
    "seed",
    "seed_all",
    "set_rng_state",
    "set_rng_state_all",
    "Event",
    "Stream",
    "current_stream",
    "default_stream",
    "empty_cache",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "reset_max_memory_allocated",
    "reset_peak_memory_stats",
    "stream",
    "amp",
    "current_device",
    "device_count",
    "get_device_name",
    "is_available",
    "manual_seed",
    "manual_seed_all",
    "set_device",
    "synchronize",
]

_current = [0]


def _backend_name() -> str | None:
    """The backend serving ``ember.device("cuda")`` (the one selected by EMBER_BACKEND or ``backends.use``, else
    the first that can); None without CUDA."""
    try:
        name = backends.current("cuda")
    except DeviceError:
        return None
    s = backends.available().get(name)
    return name if s and any(d.startswith("cuda") for d in s.devices) else None


def is_available() -> bool:
    """True when some backend can serve a CUDA device on this machine."""
    return _backend_name() is not None


def device_count() -> int:
    """The number of CUDA devices the serving backend sees (0 without one)."""
    name = _backend_name()
    if name is None:
        return 0
    return sum(d.startswith("cuda") for d in backends.available()[name].devices)


def current_device() -> int:
    """The index of the selected CUDA device (``ember.cuda.set_device``), 0 by default."""
    return _current[0]


def set_device(dev: Any) -> None:
    """Make ``dev`` (an index or ``cuda:N``) the current CUDA device."""
    d = device(dev)
    _current[0] = d.index or 0


def get_device_name(dev: Any = None) -> str:
    """The name of a CUDA device (a DeviceError without one)."""
    d = device(f"cuda:{current_device()}" if dev is None else dev)
    return get_backend(d).device_name()


def synchronize(dev: Any = None) -> None:
    """Wait for all work queued on a CUDA device (a DeviceError without one)."""
    get_backend(device(f"cuda:{current_device()}" if dev is None else dev)).synchronize()


def manual_seed(seed: int) -> None:
    """Seed the generators CUDA tensors draw from (Ember's seeded generators; see the module doc)."""
    from .._creation import manual_seed as _seed  # lazy: ember imports this module before Tensor exists

    _seed(seed)


manual_seed_all = manual_seed

from . import amp  # noqa: E402 - torch.cuda.amp's names, after the module they extend
