"""The ``Learner``'s callbacks (hooks into ``fit``), early stopping, and the error a non-finite loss raises."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .learner import Learner

__all__ = ["Callback", "EarlyStopping", "NonFiniteLossError"]


class NonFiniteLossError(FloatingPointError):
    """The loss became NaN or infinite (spec: training stops with a clear error)."""


class Callback:
    """Hooks into ``fit``: override any of these; ``learner.stop = True`` ends training after the epoch."""

    def on_fit_start(self, learner: Learner) -> None: ...
    def on_epoch_start(self, learner: Learner, epoch: int) -> None: ...
    def on_before_optimizer_step(self, learner: Learner) -> None: ...
    def on_batch_end(self, learner: Learner, step: int, loss: float) -> None: ...
    def on_epoch_end(self, learner: Learner, epoch: int, logs: dict[str, float]) -> None: ...
    def on_fit_end(self, learner: Learner) -> None: ...


class EarlyStopping(Callback):
    """Stop when ``monitor`` (e.g. ``"valid_loss"``) has not improved by ``min_delta`` for ``patience`` epochs."""

    def __init__(self, monitor: str = "valid_loss", patience: int = 3, mode: str | None = None,
                 min_delta: float = 0.0) -> None:  # fmt: skip
        self.monitor, self.patience, self.min_delta = monitor, patience, min_delta
        self.mode = mode or ("max" if "acc" in monitor else "min")
        self.best = math.inf if self.mode == "min" else -math.inf
        self.wait = 0

    def on_epoch_end(self, learner: Learner, epoch: int, logs: dict[str, float]) -> None:
        if self.monitor not in logs:
            raise KeyError(f"EarlyStopping: no metric {self.monitor!r}; logged metrics are {sorted(logs)}")
        v = logs[self.monitor]
        better = v < self.best - self.min_delta if self.mode == "min" else v > self.best + self.min_delta
        if better:
            self.best, self.wait = v, 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                learner.stop = True
                learner.log(f"early stopping: {self.monitor} did not improve for {self.patience} epochs")
