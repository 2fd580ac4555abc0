"""``ember.backends.cudnn``: PyTorch's cuDNN flags, answered truthfully for this machine.

cuDNN is reachable only through the torch backend on a CUDA device. The flags are kept as set and
forwarded to ``torch.backends.cudnn`` when PyTorch is loaded in this process (its kernels read them
there); on other backends they have no effect.
"""

from __future__ import annotations

import sys
import types
from typing import Any

__all__ = ["is_available", "version", "enabled", "benchmark", "deterministic", "allow_tf32"]

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True

_FLAGS = ("enabled", "benchmark", "deterministic", "allow_tf32")


def _torch_cudnn() -> Any | None:
    from . import real_torch

    torch = real_torch()
    if torch is None or not torch.cuda.is_available():
        return None
    return torch.backends.cudnn


def is_available() -> bool:
    """True when a CUDA device with cuDNN is usable through the torch backend."""
    cudnn = _torch_cudnn()
    return bool(cudnn is not None and cudnn.is_available())


def version() -> int | None:
    """cuDNN's version number, or None when it is not available."""
    cudnn = _torch_cudnn()
    return cudnn.version() if cudnn is not None and is_available() else None


class _FlagModule(types.ModuleType):
    """This module, with assignment to a flag also setting PyTorch's (when PyTorch is loaded)."""

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name in _FLAGS and "torch" in sys.modules:
            from . import real_torch

            torch = real_torch()
            if torch is not None:
                setattr(torch.backends.cudnn, name, value)


sys.modules[__name__].__class__ = _FlagModule


def apply_to_torch() -> None:
    """Give PyTorch every flag set here before it was loaded (the torch backend calls this when created)."""
    if "torch" not in sys.modules:
        return
    from . import real_torch

    torch = real_torch()
    if torch is not None:
        mod = sys.modules[__name__]
        for name in _FLAGS:
            setattr(torch.backends.cudnn, name, getattr(mod, name))
