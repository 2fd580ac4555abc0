"""The Learner's ``precision`` (Lightning's names): forward and loss under ``ember.autocast``; for ``"16-mixed"``
also a ``GradScaler``, made at first use on the model's device type, unscaled before gradient clipping, its
state saved in checkpoints and restored on resume."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

PRECISIONS = {"32": None, "bf16-mixed": "bfloat16", "16-mixed": "float16"}  # Lightning's names -> autocast dtype


class Precision:
    """One Learner's precision: its autocast block, backward and optimizer step (through the scaler, if any)."""

    def __init__(self, precision: str) -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"Learner: precision must be one of {sorted(PRECISIONS)}, got {precision!r}")
        self.dtype = PRECISIONS[precision]
        self.scaler: Any = None
        self._saved: dict[str, Any] | None = None  # a resumed run's GradScaler state, for the scaler to come

    def autocast(self, device: Any) -> Any:
        """The autocast block on ``device``'s type (a no-op block for ``"32"``)."""
        if self.dtype is None:
            return contextlib.nullcontext()
        from ..amp import GradScaler, autocast

        kind = device.type if device is not None else "cpu"
        if self.dtype == "float16" and self.scaler is None:
            self.scaler = GradScaler(kind)
            if self._saved:
                self.scaler.load_state_dict(self._saved)
        return autocast(kind, dtype=self.dtype)

    def backward(self, loss: Any) -> None:
        (self.scaler.scale(loss) if self.scaler is not None else loss).backward()

    def step(self, optimizer: Any, clip: Callable[[], Any] | None) -> None:
        """``clip()`` the true (unscaled) gradients if given, then step; the scaler skips inf/NaN steps."""
        if clip is not None:
            if self.scaler is not None:
                self.scaler.unscale_(optimizer)
            clip()
        if self.scaler is not None:
            self.scaler.step(optimizer)
            self.scaler.update()
        else:
            optimizer.step()

    def state_dict(self) -> dict[str, Any] | None:
        return self.scaler.state_dict() if self.scaler is not None else None

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        self._saved = state
        if self.scaler is not None and state:
            self.scaler.load_state_dict(state)
