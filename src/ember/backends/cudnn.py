"""``ember.backends.cudnn``: PyTorch's cuDNN flags, forwarded to ``torch.backends.cudnn``.

cuDNN is reachable only through the torch backend. Setting a flag (``ember.backends.cudnn.benchmark =
True``) sets torch's at once when torch is imported, and otherwise when the torch backend is first created;
reading one gives the value set here. On other backends the flags change nothing.
"""

from __future__ import annotations

import sys
import types
from typing import Any

# the flags are properties of the module's class (below), not globals
__all__ = ["is_available", "version", "enabled", "benchmark", "deterministic", "allow_tf32"]  # noqa: F822

_VALUES: dict[str, bool] = {"enabled": True, "benchmark": False, "deterministic": False, "allow_tf32": True}


def _torch_cudnn() -> Any:
    """``torch.backends.cudnn`` when torch is imported already (it is never imported just for a flag)."""
    torch = sys.modules.get("torch")
    return None if torch is None else torch.backends.cudnn


def apply_to_torch() -> None:
    """Give torch every flag set here (the torch backend calls it when it is created)."""
    cudnn = _torch_cudnn()
    if cudnn is not None:
        for name, value in _VALUES.items():
            setattr(cudnn, name, value)


def is_available() -> bool:
    """True when a CUDA device with cuDNN is usable through the torch backend."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available() and torch.backends.cudnn.is_available())


def version() -> int | None:
    """cuDNN's version number, or None when it is not available."""
    if not is_available():
        return None
    import torch

    return int(torch.backends.cudnn.version())


class _Flags(types.ModuleType):
    """The module's class: its flags are properties, so assigning one reaches torch."""

    def __getattr__(self, name: str) -> Any:
        if name in _VALUES:
            return _VALUES[name]
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _VALUES:
            _VALUES[name] = bool(value)
            cudnn = _torch_cudnn()
            if cudnn is not None:
                setattr(cudnn, name, bool(value))
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Flags
