"""``ember.amp``: mixed precision as ``torch.amp`` — ``GradScaler`` (loss scaling for float16 training)."""

from __future__ import annotations

from .grad_scaler import GradScaler, OptState

__all__ = ["GradScaler", "OptState"]
