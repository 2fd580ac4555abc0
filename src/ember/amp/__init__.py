"""``ember.amp``: mixed precision as ``torch.amp``: ``autocast`` (operators in lower precision where safe)
and ``GradScaler`` (loss scaling for float16 training)."""

from __future__ import annotations

from .autocast_mode import (
    autocast,
    autocast_state,
    custom_bwd,
    custom_fwd,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_enabled,
)
from .grad_scaler import GradScaler, OptState

__all__ = [
    "GradScaler",
    "OptState",
    "autocast",
    "autocast_state",
    "custom_bwd",
    "custom_fwd",
    "get_autocast_dtype",
    "is_autocast_available",
    "is_autocast_enabled",
]
