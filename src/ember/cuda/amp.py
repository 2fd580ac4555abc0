"""``ember.cuda.amp``: ``torch.cuda.amp``'s names for the CUDA device (``autocast`` and ``GradScaler`` on
``"cuda"``)."""

from __future__ import annotations

import warnings
from typing import Any

from .._dtype import float16
from ..amp.autocast_mode import autocast as _autocast
from ..amp.autocast_mode import custom_bwd as _custom_bwd
from ..amp.autocast_mode import custom_fwd as _custom_fwd
from ..amp.grad_scaler import GradScaler as _GradScaler

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]


def custom_fwd(fwd: Any = None, *, cast_inputs: Any = None) -> Any:
    """Deprecated (as ``torch.cuda.amp.custom_fwd``): ``ember.amp.custom_fwd(device_type="cuda")``."""
    warnings.warn(
        "`ember.cuda.amp.custom_fwd(args...)` is deprecated. Please use `ember.amp.custom_fwd(args..., "
        "device_type='cuda')` instead.",
        FutureWarning,
        stacklevel=2,
    )
    return _custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd: Any = None) -> Any:
    """Deprecated (as ``torch.cuda.amp.custom_bwd``): ``ember.amp.custom_bwd(device_type="cuda")``."""
    warnings.warn(
        "`ember.cuda.amp.custom_bwd(args...)` is deprecated. Please use `ember.amp.custom_bwd(args..., "
        "device_type='cuda')` instead.",
        FutureWarning,
        stacklevel=2,
    )
    return _custom_bwd(bwd, device_type="cuda")


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
