"""``torch.cuda``'s device and random-state queries: answered by the backend serving CUDA, and without CUDA exactly
as PyTorch's CPU build answers them (an ``AssertionError`` for what needs a device, ``None``/``[]``/``{}`` for what
PyTorch defers or finds empty). CUDA tensors draw from Ember's seeded generators (the package doc), so the random
state here is theirs."""

from __future__ import annotations

import collections
from typing import Any

from .._errors import OutOfMemoryError
from ._memory import _serving, max_memory_allocated, max_memory_reserved, memory_allocated, memory_reserved

__all__ = [
    "OutOfMemoryError", "get_device_capability", "get_device_properties", "get_rng_state", "get_rng_state_all",
    "initial_seed", "memory_stats", "seed", "seed_all", "set_rng_state", "set_rng_state_all",
]  # fmt: skip

_Properties = collections.namedtuple("_Properties", "name total_memory major minor multi_processor_count")


def _require(device: Any = None) -> tuple[str, int]:
    s = _serving(device)
    if s is None:
        raise AssertionError("no CUDA device: no backend serves CUDA on this machine (ember.cuda.is_available() is "
                             "False), as torch's 'Torch not compiled with CUDA enabled'")  # fmt: skip
    return s


def get_device_properties(device: Any = None) -> Any:
    """The CUDA device's properties (``name``, ``total_memory``, ``major``, ``minor``, ``multi_processor_count``)."""
    name, idx = _require(device)
    if name == "torch":
        import torch

        return torch.cuda.get_device_properties(idx)
    import cupy

    p = cupy.cuda.runtime.getDeviceProperties(idx)
    label = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
    return _Properties(label, int(p["totalGlobalMem"]), int(p["major"]), int(p["minor"]), int(p["multiProcessorCount"]))


def get_device_capability(device: Any = None) -> tuple[int, int]:
    """The CUDA device's compute capability ``(major, minor)``."""
    p = get_device_properties(device)
    return int(p.major), int(p.minor)


def _gen() -> Any:
    from .._creation import default_generator  # lazy: ember imports this package before Tensor exists

    return default_generator


def seed() -> None:
    """Seed the generators CUDA tensors draw from with a random number (nothing without CUDA, as PyTorch)."""
    if _serving(None) is not None:
        _gen().seed()


seed_all = seed


def initial_seed() -> int:
    """The seed of the generators CUDA tensors draw from."""
    _require()
    return int(_gen().initial_seed())


def get_rng_state(device: Any = "cuda") -> Any:
    """The state of the generators CUDA tensors draw from (``set_rng_state`` restores it)."""
    _require(device)
    return _gen().get_state()


def get_rng_state_all() -> list[Any]:
    """One state per CUDA device (``[]`` without one)."""
    from . import device_count

    return [get_rng_state(f"cuda:{i}") for i in range(device_count())]


def set_rng_state(new_state: Any, device: Any = "cuda") -> None:
    """Restore a state from ``get_rng_state`` (nothing without CUDA: PyTorch defers it to CUDA's start)."""
    if _serving(None) is not None:
        _require(device)
        _gen().set_state(new_state)


def set_rng_state_all(new_states: Any) -> None:
    """``set_rng_state`` for each device's state."""
    for i, state in enumerate(new_states):
        set_rng_state(state, f"cuda:{i}")


def memory_stats(device: Any = None) -> collections.OrderedDict[str, int]:
    """Allocator counters by PyTorch's names (current and peak bytes allocated and reserved); empty without CUDA."""
    if _serving(device) is None:
        return collections.OrderedDict()
    return collections.OrderedDict([
        ("allocated_bytes.all.current", memory_allocated(device)),
        ("allocated_bytes.all.peak", max_memory_allocated(device)),
        ("reserved_bytes.all.current", memory_reserved(device)),
        ("reserved_bytes.all.peak", max_memory_reserved(device)),
    ])  # fmt: skip
