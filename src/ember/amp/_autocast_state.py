"""PyTorch's functions that read and set a thread's autocast state outside ``with autocast(...)`` (libraries
call them: ``torch.set_autocast_enabled``, ``torch.get_autocast_gpu_dtype`` ...), on ``autocast_mode``'s state."""

from __future__ import annotations

import warnings
from typing import Any

from .._dtype import DType, as_dtype
from ..autograd._grad_mode import STATE
from .autocast_mode import THREAD, _device_type, get_autocast_dtype, install_region, is_autocast_enabled

__all__ = [
    "autocast_decrement_nesting", "autocast_increment_nesting", "clear_autocast_cache", "get_autocast_cpu_dtype",
    "get_autocast_gpu_dtype", "is_autocast_cache_enabled", "is_autocast_cpu_enabled", "set_autocast_cache_enabled",
    "set_autocast_cpu_dtype", "set_autocast_cpu_enabled", "set_autocast_dtype", "set_autocast_enabled",
    "set_autocast_gpu_dtype",
]  # fmt: skip


def set_autocast_enabled(device_type: Any, enabled: Any = None) -> None:
    """Turn autocast on or off for ``device_type`` in this thread, in its ``get_autocast_dtype`` (``with
    autocast(...)`` restores what it found when it ends). PyTorch's one-argument form sets ``cuda``."""
    if enabled is None:  # set_autocast_enabled(True): the deprecated form
        device_type, enabled = "cuda", device_type
    kind = _device_type(device_type)
    region = STATE.autocast
    lower = {"cpu": region.cpu if region else None, "cuda": region.cuda if region else None}
    lower[kind] = THREAD.dtype[kind] if enabled else None
    install_region(lower["cpu"], lower["cuda"], THREAD.cache_enabled)


def set_autocast_dtype(device_type: str, dtype: Any) -> None:
    """The lower dtype autocast uses on ``device_type`` in this thread (an open region switches to it too)."""
    kind = _device_type(device_type)
    THREAD.dtype[kind] = as_dtype(dtype)
    if is_autocast_enabled(kind):
        set_autocast_enabled(kind, True)


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"torch.{old}() is deprecated. Please use torch.{new} instead.", DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    """Deprecated PyTorch form of ``is_autocast_enabled('cpu')``."""
    _deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def get_autocast_cpu_dtype() -> DType:
    """Deprecated PyTorch form of ``get_autocast_dtype('cpu')``."""
    _deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def get_autocast_gpu_dtype() -> DType:
    """Deprecated PyTorch form of ``get_autocast_dtype('cuda')``."""
    _deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    """Deprecated PyTorch form of ``set_autocast_enabled('cpu', enabled)``."""
    _deprecated("set_autocast_cpu_enabled", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def set_autocast_cpu_dtype(dtype: Any) -> None:
    """Deprecated PyTorch form of ``set_autocast_dtype('cpu', dtype)``."""
    _deprecated("set_autocast_cpu_dtype", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def set_autocast_gpu_dtype(dtype: Any) -> None:
    """Deprecated PyTorch form of ``set_autocast_dtype('cuda', dtype)``."""
    _deprecated("set_autocast_gpu_dtype", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)


def is_autocast_cache_enabled() -> bool:
    """Whether autocast blocks opened in this thread cache their casts of parameters (the default)."""
    return THREAD.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Whether autocast blocks opened from now on in this thread cache their casts."""
    THREAD.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Drop the casts cached by this thread's open autocast region."""
    if STATE.autocast is not None:
        STATE.autocast.cache.clear()


def autocast_increment_nesting() -> int:
    """PyTorch's autocast nesting counter (kept for code that calls it): incremented, its new value."""
    THREAD.nesting += 1
    return THREAD.nesting


def autocast_decrement_nesting() -> int:
    """PyTorch's autocast nesting counter: decremented, its new value (at 0 the cast cache is dropped)."""
    THREAD.nesting = max(THREAD.nesting - 1, 0)
    if THREAD.nesting == 0:
        clear_autocast_cache()
    return THREAD.nesting
