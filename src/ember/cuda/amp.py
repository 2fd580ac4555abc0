"""``ember.cuda.amp``: ``torch.cuda.amp``'s names for the CUDA device (``autocast`` and ``GradScaler`` on
``"cuda"``)."""

from __future__ import annotations

from typing import Any

from .._dtype import float16
from ..amp.autocast_mode import autocast as _autocast
from ..amp.grad_scaler import GradScaler as _GradScaler

__all__ = ["GradScaler", "autocast"]


class autocast(_autocast):  # noqa: N801 - PyTorch's name
    """``ember.autocast("cuda", ...)`` (``torch.cuda.amp.autocast``'s signature)."""

    def __init__(self, enabled: bool = True, dtype: Any = float16, cache_enabled: bool = True) -> None:
        super().__init__("cuda", dtype, enabled, cache_enabled)


class GradScaler(_GradScaler):
    """``ember.amp.GradScaler("cuda", ...)`` (``torch.cuda.amp.GradScaler``'s signature: no device argument)."""

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
        **kw: Any,
    ) -> None:
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)
