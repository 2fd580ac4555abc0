"""``ember.cuda.amp``: ``torch.cuda.amp``'s names for the CUDA device (``GradScaler`` defaults to ``"cuda"``)."""

from __future__ import annotations

from typing import Any

from ..amp.grad_scaler import GradScaler as _GradScaler

__all__ = ["GradScaler"]


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
