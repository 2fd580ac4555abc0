"""``ember.backends.cudnn``: PyTorch's cuDNN flags, answered truthfully for this machine.

cuDNN is reachable only through the torch backend on a CUDA device. The flags are read by the torch
backend's kernels (they mirror ``torch.backends.cudnn`` there); on other backends they have no effect.
"""

from __future__ import annotations

__all__ = ["is_available", "version", "enabled", "benchmark", "deterministic", "allow_tf32"]

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def _torch_cudnn() -> object | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    return torch.backends.cudnn


def is_available() -> bool:
    """True when a CUDA device with cuDNN is usable through the torch backend."""
    cudnn = _torch_cudnn()
    return bool(cudnn is not None and cudnn.is_available())  # type: ignore[attr-defined]


def version() -> int | None:
    """cuDNN's version number, or None when it is not available."""
    cudnn = _torch_cudnn()
    return cudnn.version() if cudnn is not None and is_available() else None  # type: ignore[attr-defined]
