"""CUDA memory statistics: ``torch.cuda``'s caching allocator on the torch backend, CuPy's memory pool on CuPy.

Without a CUDA backend nothing is allocated: the counters answer 0 and ``empty_cache`` does nothing (as
``torch.cuda`` answers on a CPU-only build); ``mem_get_info`` needs a device and raises a ``DeviceError``.
CuPy's pool keeps no peak: Ember tracks it through an allocator hook installed by the first
``reset_peak_memory_stats`` or ``max_memory_*`` call, so on CuPy peaks count from that call.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "empty_cache",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "reset_max_memory_allocated",
    "reset_peak_memory_stats",
]


def _serving(dev: Any) -> tuple[str, int] | None:
    """(backend name, device index) of the CUDA device ``dev`` (None/int/"cuda:N"), or None without CUDA.

    A tensor's device (``x.device``) names its own backend; any other is served by ``ember.device("cuda")``'s.
    """
    from . import _backend_name, current_device

    own = getattr(dev, "backend", None)
    name = own if own is not None else _backend_name()
    if name is None:
        return None
    if dev is None:
        return name, current_device()
    from .._device import device

    d = device(dev)
    if d.type != "cuda":
        from .._errors import DeviceError

        raise DeviceError(f"expected a CUDA device, got {d}")
    return name, d.index or 0


class _CupyPeak:
    """Peak used/total bytes of CuPy's default pool, updated by an allocator hook (see the module doc)."""

    def __init__(self) -> None:
        self.installed = False
        self.used = 0
        self.total = 0

    def install(self) -> None:
        if self.installed:
            return
        import cupy

        pool = cupy.get_default_memory_pool()

        def malloc(size: int) -> Any:
            mem = pool.malloc(size)
            self.used = max(self.used, pool.used_bytes())
            self.total = max(self.total, pool.total_bytes())
            return mem

        cupy.cuda.set_allocator(malloc)
        self.installed = True
        self.reset()

    def reset(self) -> None:
        import cupy

        pool = cupy.get_default_memory_pool()
        self.used, self.total = pool.used_bytes(), pool.total_bytes()


_PEAK = _CupyPeak()


def _pool() -> Any:
    import cupy

    return cupy.get_default_memory_pool()


def memory_allocated(device: Any = None) -> int:
    """Bytes held by tensors on a CUDA device now (0 without CUDA)."""
    s = _serving(device)
    if s is None:
        return 0
    if s[0] == "torch":
        import torch

        return int(torch.cuda.memory_allocated(s[1]))
    return int(_pool().used_bytes())


def max_memory_allocated(device: Any = None) -> int:
    """The peak of ``memory_allocated`` since the start (or the last ``reset_peak_memory_stats``)."""
    s = _serving(device)
    if s is None:
        return 0
    if s[0] == "torch":
        import torch

        return int(torch.cuda.max_memory_allocated(s[1]))
    _PEAK.install()
    return max(_PEAK.used, int(_pool().used_bytes()))


def memory_reserved(device: Any = None) -> int:
    """Bytes the allocator holds from the driver (in use or cached for reuse; 0 without CUDA)."""
    s = _serving(device)
    if s is None:
        return 0
    if s[0] == "torch":
        import torch

        return int(torch.cuda.memory_reserved(s[1]))
    return int(_pool().total_bytes())


def max_memory_reserved(device: Any = None) -> int:
    """The peak of ``memory_reserved``."""
    s = _serving(device)
    if s is None:
        return 0
    if s[0] == "torch":
        import torch

        return int(torch.cuda.max_memory_reserved(s[1]))
    _PEAK.install()
    return max(_PEAK.total, int(_pool().total_bytes()))


def reset_peak_memory_stats(device: Any = None) -> None:
    """Start the peaks (``max_memory_allocated``/``max_memory_reserved``) again from the current values."""
    s = _serving(device)
    if s is None:
        return
    if s[0] == "torch":
        import torch

        torch.cuda.reset_peak_memory_stats(s[1])
        return
    _PEAK.install()
    _PEAK.reset()


reset_max_memory_allocated = reset_peak_memory_stats


def empty_cache() -> None:
    """Give the allocator's cached, unused blocks back to the driver (nothing to do without CUDA)."""
    s = _serving(None)
    if s is None:
        return
    if s[0] == "torch":
        import torch

        torch.cuda.empty_cache()
        return
    import cupy

    _pool().free_all_blocks()
    cupy.get_default_pinned_memory_pool().free_all_blocks()


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of a CUDA device as the driver reports them (a DeviceError without CUDA)."""
    s = _serving(device)
    if s is None:
        from ..backends import get_backend

        get_backend("cuda")  # raises the DeviceError that lists what is available here
        raise AssertionError("unreachable")  # pragma: no cover
    if s[0] == "torch":
        import torch

        free, total = torch.cuda.mem_get_info(s[1])
        return int(free), int(total)
    import cupy

    with cupy.cuda.Device(s[1]):
        free, total = cupy.cuda.runtime.memGetInfo()
    return int(free), int(total)
