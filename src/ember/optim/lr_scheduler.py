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

__all__ = [
    "ChainedScheduler", "ConstantLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts", "CyclicLR",
    "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR", "MultiplicativeLR", "NoamLR",
    "OneCycleLR", "PolynomialLR", "ReduceLROnPlateau", "SequentialLR", "StepLR",
]  # fmt: skip


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

    def get_lr(self) -> list[float]:
        raise NotImplementedError(f"{type(self).__name__} must define get_lr()")

    def _closed_form(self) -> list[float] | None:
        """The rates at ``last_epoch`` computed from the base rates (used when ``step(epoch)`` jumps)."""
        return None

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
