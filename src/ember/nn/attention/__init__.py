"""``ember.nn.attention`` (PyTorch's ``torch.nn.attention``): choosing the kernels behind
``F.scaled_dot_product_attention``.

Ember has one implementation per backend (its fused CPU kernel on NumPy, PyTorch's own function on the torch
backend, which then chooses among the kernels ``sdpa_kernel`` allows). ``sdpa_kernel`` records the choice
and hands it to PyTorch when the torch backend serves the call.
"""

from __future__ import annotations

import contextlib
import enum
import sys
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["SDPBackend", "current_backends", "sdpa_kernel"]


class SDPBackend(enum.IntEnum):
    """The attention kernels PyTorch knows (its values)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_ALL = (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION,
        SDPBackend.OVERRIDEABLE)  # fmt: skip
_ACTIVE: list[tuple[SDPBackend, ...]] = [_ALL]


def current_backends() -> tuple[SDPBackend, ...]:
    """The kernels the innermost :func:`sdpa_kernel` block allows (all of them outside any)."""
    return _ACTIVE[-1]


@contextlib.contextmanager
def sdpa_kernel(backends: SDPBackend | Iterable[SDPBackend], set_priority: bool = False) -> Iterator[None]:
    """Allow only ``backends`` for ``scaled_dot_product_attention`` inside the block."""
    chosen = (backends,) if isinstance(backends, SDPBackend | int) else tuple(backends)
    if not chosen:
        raise ValueError("sdpa_kernel: give at least one backend")
    for b in chosen:
        if not isinstance(b, SDPBackend | int) or b not in SDPBackend._value2member_map_:
            raise TypeError(f"sdpa_kernel: expected SDPBackend members, got {b!r}")
    chosen = tuple(SDPBackend(b) for b in chosen)
    real: Any = contextlib.nullcontext()
    torch = sys.modules.get("torch")
    # loaded PyTorch (the torch backend) honours the block too; known by its compiled core, not Ember's ``_C``
    if torch is not None and getattr(getattr(torch, "_C", None), "__name__", None) == "torch._C":
        from torch.nn.attention import SDPBackend as TorchBackend
        from torch.nn.attention import sdpa_kernel as torch_kernel

        real = torch_kernel([TorchBackend(int(b)) for b in chosen], set_priority=set_priority)
    _ACTIVE.append(chosen)
    try:
        with real:
            yield
    finally:
        _ACTIVE.pop()
