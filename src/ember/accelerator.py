"""``ember.accelerator``: PyTorch's ``torch.accelerator`` (the device-agnostic way to find a GPU)."""

from __future__ import annotations

from typing import Any

from . import cuda
from ._device import device

__all__ = ["current_accelerator", "device_count", "is_available", "synchronize", "current_device_index"]


def is_available() -> bool:
    """True when an accelerator (a CUDA device served by torch or CuPy) is usable here."""
    return cuda.is_available()


def current_accelerator(check_available: bool = False) -> device | None:
    """The accelerator's device type as a device (``cuda``), or None when there is none."""
    return device("cuda") if cuda.is_available() else None


def device_count() -> int:
    """How many accelerator (CUDA) devices this machine has."""
    return cuda.device_count()


def current_device_index() -> int:
    """The index of the selected accelerator device."""
    return cuda.current_device()


def synchronize(dev: Any = None) -> None:
    """Wait for the accelerator's queued work (nothing to wait for without one)."""
    if cuda.is_available():
        cuda.synchronize(dev)
