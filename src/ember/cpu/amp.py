"""``ember.cpu.amp``: ``torch.cpu.amp``'s names for the CPU (``autocast``, bfloat16 by default)."""

from __future__ import annotations

from typing import Any

from .._dtype import bfloat16
from ..amp.autocast_mode import autocast as _autocast

__all__ = ["autocast"]


class autocast(_autocast):  # noqa: N801 - PyTorch's name
    """``ember.autocast("cpu", ...)`` (``torch.cpu.amp.autocast``'s signature)."""

    def __init__(self, enabled: bool = True, dtype: Any = bfloat16, cache_enabled: bool = True) -> None:
        super().__init__("cpu", dtype, enabled, cache_enabled)
