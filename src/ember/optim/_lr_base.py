"""``LRScheduler``, the base of every learning-rate scheduler, and the option checks they share."""

from __future__ import annotations

import copy
import math
from typing import Any

from ..autograd._capture import opaque


def _at_least(sched: str, name: str, value: Any, low: int) -> None:
    """A count or period option that must be a number >= ``low``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{sched}: {name} must be an integer, got {type(value).__name__} {value!r}")
    if value < low:
        raise ValueError(f"{sched}: {name} must be >= {low}, got {value}")


def _gamma(sched: str, gamma: Any) -> None:
    if not isinstance(gamma, (int, float)) or isinstance(gamma, bool) or not math.isfinite(gamma) or gamma < 0:
        raise ValueError(f"{sched}: gamma (the decay factor) must be a finite number >= 0, got {gamma!r}")


class LRScheduler:
    """Base: subclasses define ``get_lr()`` from ``self.last_epoch``, ``self.base_lrs`` and the current rates."""

    def __init__(self, optimizer: Any, last_epoch: int = -1) -> None:
        if not isinstance(getattr(optimizer, "param_groups", None), list):
            hint = " (a module: build an optimizer on its parameters first)" if hasattr(optimizer, "parameters") else ""
            raise TypeError(f"{type(self).__name__}: expected an optimizer, got {type(optimizer).__name__}{hint}")
        self.optimizer = optimizer
        for g in optimizer.param_groups:
            if last_epoch == -1:
                g.setdefault("initial_lr", g["lr"])
            elif "initial_lr" not in g:
                raise KeyError(
                    f"{type(self).__name__}: resuming (last_epoch={last_epoch}) needs 'initial_lr' in groups"
                )
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._last_lr: list[float] = [g["lr"] for g in optimizer.param_groups]
        self.step()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # every ``step`` is a live call under ember.compile (a replayed training step advances the schedule)
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not hasattr(step, "__wrapped_opaque__"):
            cls.step = opaque(step)  # type: ignore[method-assign]

    def _capture_state(self) -> tuple[Any, ...]:
        """(what must match between two runs, the rest): ``ember.compile`` puts it back around its checked replay."""
        groups = [{k: v for k, v in g.items() if k != "params"} for g in self.optimizer.param_groups]
        return (self.last_epoch, [g["lr"] for g in groups]), (copy.deepcopy(self.state_dict()), groups)

    def _capture_restore(self, state: tuple[Any, ...]) -> None:
        own, groups = state[1]
        self.load_state_dict(copy.deepcopy(own))
        for g, saved in zip(self.optimizer.param_groups, groups, strict=True):
            g.update(saved)

    def get_lr(self) -> list[float]:
        raise NotImplementedError(f"{type(self).__name__} must define get_lr()")

    def _closed_form(self) -> list[float] | None:
        """The rates at ``last_epoch`` computed from the base rates (used when ``step(epoch)`` jumps)."""
        return None

    @opaque
    def step(self, epoch: int | None = None) -> None:
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        lrs = self._closed_form() if epoch is not None else None
        for g, lr in zip(self.optimizer.param_groups, lrs or self.get_lr(), strict=True):
            g["lr"] = lr
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        return list(self._last_lr)

    def _lrs(self) -> list[float]:
        return [g["lr"] for g in self.optimizer.param_groups]

    _unsaved: tuple[str, ...] = ("optimizer",)

    def state_dict(self) -> dict[str, Any]:
        """Everything but the optimizer and callables."""
        return {k: v for k, v in self.__dict__.items() if k not in self._unsaved and not callable(v)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            self.__dict__[k] = list(v) if isinstance(self.__dict__.get(k), list) and isinstance(v, tuple) else v
