"""Backends: which array library serves which device.

``get_backend(device)`` returns the backend for a device; ``register_backend`` adds one. The NumPy
backend serves ``cpu``. A CUDA backend (torch or CuPy) registers itself for ``cuda`` when its library
is importable; see docs/architecture.md, "Adding a backend".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._device import device
from ._base import Backend
from .numpy_backend import NumpyBackend

__all__ = ["Backend", "NumpyBackend", "get_backend", "register_backend", "available_backends"]

_FACTORIES: dict[str, list[tuple[str, Callable[[device], Backend]]]] = {"cpu": [], "cuda": []}
_CACHE: dict[device, Backend] = {}
_NUMPY = NumpyBackend()
_CACHE[_NUMPY.device] = _NUMPY


def register_backend(device_type: str, name: str, factory: Callable[[device], Backend]) -> None:
    """Make ``factory(device)`` the backend for ``device_type`` (the first registered wins)."""
    _FACTORIES.setdefault(device_type, []).append((name, factory))


def get_backend(dev: Any = None) -> Backend:
    """The backend serving ``dev`` (``None`` means the CPU)."""
    if dev is None:
        return _NUMPY
    if isinstance(dev, Backend):
        return dev
    d = dev if isinstance(dev, device) else device(dev)
    be = _CACHE.get(d)
    if be is not None:
        return be
    errors = []
    for name, factory in _FACTORIES.get(d.type, []):
        try:
            be = factory(d)
        except Exception as e:  # library missing or device absent: try the next one
            errors.append(f"{name}: {e}")
            continue
        _CACHE[d] = be
        return be
    detail = "; ".join(errors) if errors else "no backend is registered for it"
    raise RuntimeError(f"device {d} is not available ({detail}); install torch or cupy with CUDA support")


def available_backends() -> list[str]:
    """Names of the backends that can be created on this machine, with their devices."""
    out = [f"{_NUMPY.name} ({_NUMPY.device})"]
    for dtype, entries in _FACTORIES.items():
        for name, factory in entries:
            try:
                be = factory(device(dtype))
            except Exception:
                continue
            out.append(f"{name} ({be.device})")
    return out
