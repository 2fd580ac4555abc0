"""The cyclical learning-rate schedulers, ``CyclicLR`` and ``OneCycleLR`` (which also cycle momentum);
re-exported by ``ember.optim.lr_scheduler``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ._lr_base import LRScheduler


def _momentum_key(group: dict[str, Any]) -> str | None:
    if "betas" in group:
        return "betas"
    if "momentum" in group:
        return "momentum"
    return None


def _set_momentum(group: dict[str, Any], m: float) -> None:
    if "betas" in group:
        group["betas"] = (m, *group["betas"][1:])
    else:
        group["momentum"] = m


class CyclicLR(LRScheduler):
    """Cycle the rate between ``base_lr`` and ``max_lr`` (triangular, triangular2, exp_range); step per batch."""

    def __init__(self, optimizer: Any, base_lr: float | list[float], max_lr: float | list[float],
                 step_size_up: int = 2000, step_size_down: int | None = None, mode: str = "triangular",
                 gamma: float = 1.0, scale_fn: Callable[[float], float] | None = None, scale_mode: str = "cycle",
                 cycle_momentum: bool = True, base_momentum: float = 0.8, max_momentum: float = 0.9,
                 last_epoch: int = -1) -> None:  # fmt: skip
        n = len(optimizer.param_groups)
        base = base_lr if isinstance(base_lr, list) else [base_lr] * n
        if last_epoch == -1:
            for lr, g in zip(base, optimizer.param_groups, strict=True):
                g["lr"] = lr
        self.max_lrs = max_lr if isinstance(max_lr, list) else [max_lr] * n
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size, self.step_ratio = up + down, up / (up + down)
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError(f"CyclicLR: mode must be triangular, triangular2 or exp_range, got {mode!r}")
        self.mode, self.gamma, self._scale_fn_custom = mode, gamma, scale_fn
        self.scale_mode = scale_mode if scale_fn is not None else ("iterations" if mode == "exp_range" else "cycle")
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if _momentum_key(optimizer.param_groups[0]) is None:
                raise ValueError("CyclicLR: optimizer has no momentum or betas; pass cycle_momentum=False")
            self.base_momentums, self.max_momentums = [base_momentum] * n, [max_momentum] * n
            if last_epoch == -1:
                for g in optimizer.param_groups:
                    _set_momentum(g, max_momentum)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base

    def _scale(self, x: float) -> float:
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma**x

    def get_lr(self) -> list[float]:
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        f = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        s = self._scale(cycle if self.scale_mode == "cycle" else self.last_epoch)
        base_lrs = getattr(self, "base_lrs", None) or [g["lr"] for g in self.optimizer.param_groups]
        lrs = [b + (m - b) * f * s for b, m in zip(base_lrs, self.max_lrs, strict=True)]
        if self.cycle_momentum:
            for g, bm, mm in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums, strict=True):
                _set_momentum(g, mm - (mm - bm) * f * s)
        return lrs


class OneCycleLR(LRScheduler):
    """Warm up to ``max_lr`` then anneal (cos or linear) over ``total_steps``; step per batch."""

    def __init__(self, optimizer: Any, max_lr: float | list[float], total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True, base_momentum: float = 0.85,
                 max_momentum: float = 0.95, div_factor: float = 25.0, final_div_factor: float = 1e4,
                 three_phase: bool = False, last_epoch: int = -1) -> None:  # fmt: skip
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise ValueError("OneCycleLR: give total_steps, or epochs and steps_per_epoch")
            total_steps = epochs * steps_per_epoch
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}")
        self.total_steps, self.anneal_strategy = total_steps, anneal_strategy
        n = len(optimizer.param_groups)
        maxes = max_lr if isinstance(max_lr, list) else [max_lr] * n
        if three_phase:
            self._phases = [(float(pct_start * total_steps) - 1, "initial_lr", "max_lr", "max_m", "base_m"),
                            (float(2 * pct_start * total_steps) - 2, "max_lr", "initial_lr", "base_m", "max_m"),
                            (total_steps - 1.0, "initial_lr", "min_lr", "max_m", "max_m")]  # fmt: skip
        else:
            self._phases = [(float(pct_start * total_steps) - 1, "initial_lr", "max_lr", "max_m", "base_m"),
                            (total_steps - 1.0, "max_lr", "min_lr", "base_m", "max_m")]  # fmt: skip
        self.cycle_momentum = cycle_momentum
        if cycle_momentum and _momentum_key(optimizer.param_groups[0]) is None:
            raise ValueError("OneCycleLR: optimizer has no momentum or betas; pass cycle_momentum=False")
        if last_epoch == -1:
            for m, g in zip(maxes, optimizer.param_groups, strict=True):
                g["initial_lr"] = m / div_factor
                g["max_lr"] = m
                g["min_lr"] = g["initial_lr"] / final_div_factor
                if cycle_momentum:
                    g["max_m"], g["base_m"] = max_momentum, base_momentum
                    _set_momentum(g, max_momentum)
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        step = self.last_epoch
        if step > self.total_steps:  # PyTorch allows the total_steps-th step() (one per batch, then done)
            raise ValueError(f"OneCycleLR: stepped {step} times, more than total_steps={self.total_steps}")
        lrs = []
        for g in self.optimizer.param_groups:
            start = 0.0
            lr, mom = 0.0, 0.0
            for i, (end, lr_a, lr_b, m_a, m_b) in enumerate(self._phases):
                if step <= end or i == len(self._phases) - 1:
                    pct = (step - start) / (end - start)
                    lr = self._anneal(g[lr_a], g[lr_b], pct)
                    if self.cycle_momentum:
                        mom = self._anneal(g[m_a], g[m_b], pct)
                    break
                start = end
            lrs.append(lr)
            if self.cycle_momentum:
                _set_momentum(g, mom)
        return lrs
