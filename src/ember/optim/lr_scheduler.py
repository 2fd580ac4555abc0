"""Learning-rate schedulers with PyTorch's names and semantics; their state is serializable.

``scheduler.step()`` after each epoch (or batch) sets ``group["lr"]`` on the optimizer;
``get_last_lr()`` returns the rates just set.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from ._lr_base import LRScheduler, _at_least, _gamma
from ._lr_cyclic import CyclicLR, OneCycleLR

__all__ = [
    "ChainedScheduler", "ConstantLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts", "CyclicLR",
    "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR", "MultiplicativeLR", "NoamLR",
    "OneCycleLR", "PolynomialLR", "ReduceLROnPlateau", "SequentialLR", "StepLR",
]  # fmt: skip


class LambdaLR(LRScheduler):
    """``base_lr * lr_lambda(epoch)``."""

    _unsaved = ("optimizer", "lr_lambdas")

    def __init__(self, optimizer: Any, lr_lambda: Callable[[int], float] | Sequence[Callable[[int], float]],
                 last_epoch: int = -1) -> None:  # fmt: skip
        n = len(optimizer.param_groups)
        self.lr_lambdas: list[Callable[[int], float]] = (
            list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * n  # type: ignore[list-item]
        )
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [b * f(self.last_epoch) for b, f in zip(self.base_lrs, self.lr_lambdas, strict=True)]


class MultiplicativeLR(LambdaLR):
    """Multiply the current rate by ``lr_lambda(epoch)`` at each step after the first."""

    def get_lr(self) -> list[float]:
        if self.last_epoch > 0:
            return [lr * f(self.last_epoch) for lr, f in zip(self._lrs(), self.lr_lambdas, strict=True)]
        return self._lrs()


class StepLR(LRScheduler):
    def __init__(self, optimizer: Any, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        _at_least("StepLR", "step_size", step_size, 1)
        _gamma("StepLR", gamma)
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def _closed_form(self) -> list[float]:
        return [b * self.gamma ** (self.last_epoch // self.step_size) for b in self.base_lrs]

    def get_lr(self) -> list[float]:
        e = self.last_epoch
        if e == 0 or e % self.step_size:
            return self._lrs()
        return [lr * self.gamma for lr in self._lrs()]


class MultiStepLR(LRScheduler):
    def __init__(self, optimizer: Any, milestones: Sequence[int], gamma: float = 0.1, last_epoch: int = -1) -> None:
        for m in milestones:
            _at_least("MultiStepLR", "each milestone", m, 0)
        _gamma("MultiStepLR", gamma)
        self.milestones, self.gamma = sorted(Counter(milestones).elements()), gamma
        super().__init__(optimizer, last_epoch)

    def _closed_form(self) -> list[float]:
        return [b * self.gamma ** bisect_right(self.milestones, self.last_epoch) for b in self.base_lrs]

    def get_lr(self) -> list[float]:
        n = self.milestones.count(self.last_epoch)
        return [lr * self.gamma**n for lr in self._lrs()] if n else self._lrs()


class ConstantLR(LRScheduler):
    def __init__(self, optimizer: Any, factor: float = 1.0 / 3, total_iters: int = 5, last_epoch: int = -1) -> None:
        if not 0 < factor <= 1:
            raise ValueError(f"ConstantLR: factor must be in (0, 1], got {factor}")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def _closed_form(self) -> list[float]:
        return [b * (self.factor if self.last_epoch < self.total_iters else 1.0) for b in self.base_lrs]

    def get_lr(self) -> list[float]:
        e = self.last_epoch
        if e == 0:
            return [lr * self.factor for lr in self._lrs()]
        if e != self.total_iters:
            return self._lrs()
        return [lr / self.factor for lr in self._lrs()]


class LinearLR(LRScheduler):
    def __init__(self, optimizer: Any, start_factor: float = 1.0 / 3, end_factor: float = 1.0, total_iters: int = 5,
                 last_epoch: int = -1) -> None:  # fmt: skip
        if not 0 < start_factor <= 1 or not 0 <= end_factor <= 1:
            raise ValueError(f"LinearLR: factors must be in (0, 1], got {start_factor} and {end_factor}")
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)

    def _closed_form(self) -> list[float]:
        t = min(self.last_epoch, self.total_iters)
        return [b * (self.start_factor + (self.end_factor - self.start_factor) * t / self.total_iters)
                for b in self.base_lrs]  # fmt: skip

    def get_lr(self) -> list[float]:
        e, s, d = self.last_epoch, self.start_factor, self.end_factor - self.start_factor
        if e == 0:
            return [lr * s for lr in self._lrs()]
        if e > self.total_iters:
            return self._lrs()
        return [lr * (1.0 + d / (self.total_iters * s + (e - 1) * d)) for lr in self._lrs()]


class ExponentialLR(LRScheduler):
    def __init__(self, optimizer: Any, gamma: float, last_epoch: int = -1) -> None:
        _gamma("ExponentialLR", gamma)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def _closed_form(self) -> list[float]:
        return [b * self.gamma**self.last_epoch for b in self.base_lrs]

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return self._lrs()
        return [lr * self.gamma for lr in self._lrs()]


class PolynomialLR(LRScheduler):
    def __init__(self, optimizer: Any, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1) -> None:
        _at_least("PolynomialLR", "total_iters", total_iters, 1)
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def _closed_form(self) -> list[float]:
        t = min(self.last_epoch, self.total_iters)
        return [b * (1.0 - t / self.total_iters) ** self.power for b in self.base_lrs]

    def get_lr(self) -> list[float]:
        e, n = self.last_epoch, self.total_iters
        if e == 0 or e > n:
            return self._lrs()
        f = ((1.0 - e / n) / (1.0 - (e - 1) / n)) ** self.power
        return [lr * f for lr in self._lrs()]


class CosineAnnealingLR(LRScheduler):
    """``eta_min + (base - eta_min) (1 + cos(pi t / T_max)) / 2`` (PyTorch's recursive form)."""

    def __init__(self, optimizer: Any, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:  # noqa: N803
        _at_least("CosineAnnealingLR", "T_max", T_max, 1)
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def _closed_form(self) -> list[float]:
        c = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (b - self.eta_min) * c for b in self.base_lrs]

    def get_lr(self) -> list[float]:
        t, T = self.last_epoch, self.T_max
        if t == 0:
            return list(self.base_lrs)
        if (t - 1 - T) % (2 * T) == 0:
            return [lr + (b - self.eta_min) * (1 - math.cos(math.pi / T)) / 2
                    for lr, b in zip(self._lrs(), self.base_lrs, strict=True)]  # fmt: skip
        return [(1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T)) * (lr - self.eta_min)
                + self.eta_min for lr in self._lrs()]  # fmt: skip


class CosineAnnealingWarmRestarts(LRScheduler):
    def __init__(self, optimizer: Any, T_0: int, T_mult: int = 1, eta_min: float = 0.0,  # noqa: N803
                 last_epoch: int = -1) -> None:  # fmt: skip
        if T_0 <= 0 or T_mult < 1:
            raise ValueError(f"CosineAnnealingWarmRestarts: need T_0 > 0 and T_mult >= 1, got {T_0}, {T_mult}")
        self.T_0, self.T_mult, self.eta_min = T_0, T_mult, eta_min
        self.T_i: float = T_0
        self.T_cur: float = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [self.eta_min + (b - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for b in self.base_lrs]  # fmt: skip

    def step(self, epoch: float | None = None) -> None:  # type: ignore[override]
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur -= self.T_i
                self.T_i *= self.T_mult
        else:
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult**n
            else:
                self.T_i, self.T_cur = self.T_0, epoch
        self.last_epoch = math.floor(epoch)
        for g, lr in zip(self.optimizer.param_groups, self.get_lr(), strict=True):
            g["lr"] = lr
        self._last_lr = self._lrs()


class NoamLR(LambdaLR):
    """The transformer warm-up: ``factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)`` times the base rate."""

    def __init__(self, optimizer: Any, d_model: int, warmup_steps: int = 4000, factor: float = 1.0,
                 last_epoch: int = -1) -> None:  # fmt: skip
        self.d_model, self.warmup_steps, self.factor = d_model, warmup_steps, factor

        def f(step: int) -> float:
            s = max(step, 1)
            return factor * d_model**-0.5 * min(s**-0.5, s * warmup_steps**-1.5)

        super().__init__(optimizer, f, last_epoch)


class SequentialLR(LRScheduler):
    """Run ``schedulers`` one after another, switching at ``milestones``."""

    def __init__(self, optimizer: Any, schedulers: Sequence[LRScheduler], milestones: Sequence[int],
                 last_epoch: int = -1) -> None:  # fmt: skip
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"SequentialLR: expected {len(schedulers) - 1} milestones, got {len(milestones)}")
        self.optimizer, self._schedulers, self._milestones = optimizer, list(schedulers), list(milestones)
        self.last_epoch = last_epoch + 1
        for g in optimizer.param_groups:
            g["lr"] = g["initial_lr"]
        for s in self._schedulers:
            s.last_epoch -= 1
        self._schedulers[0].step()
        self._last_lr = self._schedulers[0].get_last_lr()

    def step(self, epoch: int | None = None) -> None:
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        sched = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            sched.step(0)
        else:
            sched.step()
        self._last_lr = sched.get_last_lr()

    def state_dict(self) -> dict[str, Any]:
        return {"last_epoch": self.last_epoch, "_last_lr": self._last_lr,
                "schedulers": [s.state_dict() for s in self._schedulers]}  # fmt: skip

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.last_epoch, self._last_lr = state["last_epoch"], list(state["_last_lr"])
        for s, st in zip(self._schedulers, state["schedulers"], strict=True):
            s.load_state_dict(st)


class ChainedScheduler(LRScheduler):
    """Step several schedulers together (their effects multiply)."""

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Any = None) -> None:
        self._schedulers = list(schedulers)
        self.optimizer = optimizer or self._schedulers[0].optimizer
        self._last_lr = self._lrs()

    def step(self, epoch: int | None = None) -> None:
        for s in self._schedulers:
            s.step()
        self._last_lr = self._lrs()

    def state_dict(self) -> dict[str, Any]:
        return {"_last_lr": self._last_lr, "schedulers": [s.state_dict() for s in self._schedulers]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._last_lr = list(state["_last_lr"])
        for s, st in zip(self._schedulers, state["schedulers"], strict=True):
            s.load_state_dict(st)


class ReduceLROnPlateau(LRScheduler):
    """Divide the rate by ``1 / factor`` when ``metrics`` stops improving for ``patience`` epochs."""

    def __init__(self, optimizer: Any, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr: float | list[float] = 0.0, eps: float = 1e-8) -> None:  # fmt: skip
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor must be < 1, got {factor}")
        if mode not in ("min", "max") or threshold_mode not in ("rel", "abs"):
            raise ValueError(f"ReduceLROnPlateau: bad mode {mode!r} or threshold_mode {threshold_mode!r}")
        self.optimizer, self.mode, self.factor, self.patience = optimizer, mode, factor, patience
        self.threshold, self.threshold_mode, self.cooldown, self.eps = threshold, threshold_mode, cooldown, eps
        n = len(optimizer.param_groups)
        self.min_lrs = min_lr if isinstance(min_lr, list) else [min_lr] * n
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs, self.cooldown_counter, self.last_epoch = 0, 0, 0
        self._last_lr = self._lrs()

    def _better(self, a: float, best: float) -> bool:
        if self.mode == "min":
            return a < (best * (1 - self.threshold) if self.threshold_mode == "rel" else best - self.threshold)
        return a > (best * (1 + self.threshold) if self.threshold_mode == "rel" else best + self.threshold)

    def step(self, metrics: float, epoch: int | None = None) -> None:  # type: ignore[override]
        current = float(metrics)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if self._better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for g, lo in zip(self.optimizer.param_groups, self.min_lrs, strict=True):
                new = max(g["lr"] * self.factor, lo)
                if g["lr"] - new > self.eps:
                    g["lr"] = new
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = self._lrs()
