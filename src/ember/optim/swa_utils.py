"""Stochastic weight averaging and exponential moving averages of a model (``torch.optim.swa_utils``).

``AveragedModel`` keeps a copy of a model whose parameters (and, with ``use_buffers``, buffers) are averaged
over training: equal weights by default (SWA), or ``get_ema_multi_avg_fn(decay)`` for an EMA. ``SWALR`` anneals
each group's rate to a constant ``swa_lr``; ``update_bn`` recomputes batch-norm statistics for the averaged
weights with one pass over the data.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .._creation import tensor
from .._dtype import int64
from .._tensor import Tensor
from ..autograd import no_grad
from ..nn.module import Module
from ..nn.norm import _BatchNorm, _InstanceNorm
from ._lr_base import LRScheduler

__all__ = [
    "SWALR",
    "AveragedModel",
    "get_ema_avg_fn",
    "get_ema_multi_avg_fn",
    "get_swa_avg_fn",
    "get_swa_multi_avg_fn",
    "update_bn",
]

AvgFn = Callable[[Tensor, Tensor, Any], Tensor]
MultiAvgFn = Callable[[list[Tensor], list[Tensor], Any], None]


def get_ema_multi_avg_fn(decay: float = 0.999) -> MultiAvgFn:
    """In-place EMA of lists of tensors: ``ema = lerp(ema, current, 1 - decay)``."""

    @no_grad()
    def ema_update(ema_params: list[Tensor], current_params: list[Tensor], _: Any) -> None:
        if ema_params and (ema_params[0].dtype.is_floating_point or ema_params[0].dtype.is_complex):
            for e, c in zip(ema_params, current_params, strict=True):
                e.lerp_(c, 1 - decay)
        else:
            for e, c in zip(ema_params, current_params, strict=True):
                e.copy_(e * decay + c * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> MultiAvgFn:
    """In-place running mean of lists of tensors: ``avg += (current - avg) / (n + 1)``."""

    @no_grad()
    def swa_update(averaged: list[Tensor], current: list[Tensor], num_averaged: Any) -> None:
        if averaged and (averaged[0].dtype.is_floating_point or averaged[0].dtype.is_complex):
            w = 1 / (num_averaged + 1)  # a count tensor gives a float32 weight, read as a number (as PyTorch's
            w = w.item() if isinstance(w, Tensor) else w  # foreach kernel reads it, whatever the weights' dtype)
            for a, c in zip(averaged, current, strict=True):
                a.lerp_(c, w)
        else:
            for a, c in zip(averaged, current, strict=True):
                a.add_((c - a) / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> AvgFn:
    """EMA of one tensor: ``decay * ema + (1 - decay) * current`` (a new tensor)."""

    @no_grad()
    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> AvgFn:
    """Running mean of one tensor: ``avg + (current - avg) / (n + 1)`` (a new tensor)."""

    @no_grad()
    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A deep copy of ``model`` whose weights are averaged by ``update_parameters(model)``.

    ``avg_fn(avg, current, n)`` returns one averaged tensor; ``multi_avg_fn(avgs, currents, n)`` updates lists in
    place; neither: equal-weight SWA. Buffers are copied from ``model`` unless ``use_buffers``, which averages
    them too. ``n_averaged`` (a buffer) counts the updates.
    """

    def __init__(
        self,
        model: Module,
        device: Any = None,
        avg_fn: AvgFn | None = None,
        multi_avg_fn: MultiAvgFn | None = None,
        use_buffers: bool = False,
    ) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise ValueError("AveragedModel: give avg_fn or multi_avg_fn, not both")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=int64, device=device))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def _pairs(self, model: Module) -> list[tuple[Tensor, Tensor]]:
        if self.use_buffers:
            mine: Iterable[Tensor] = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs: Iterable[Tensor] = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.module.parameters(), model.parameters()
        return [(a.detach(), m.detach().to(a.device)) for a, m in zip(mine, theirs, strict=False)]

    @no_grad()
    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current weights into the average (the first call copies them)."""
        pairs = self._pairs(model)
        first = int(self.n_averaged.item()) == 0
        if first:
            for a, m in pairs:
                a.copy_(m)
        elif self.avg_fn is not None:
            for a, m in pairs:
                a.copy_(self.avg_fn(a, m, self.n_averaged.to(a.device)))
        else:
            fn = self.multi_avg_fn or get_swa_multi_avg_fn()
            groups: dict[tuple[Any, Any], tuple[list[Tensor], list[Tensor]]] = {}
            for a, m in pairs:  # grouped by device and dtype, as PyTorch's foreach kernels take them
                avgs, curs = groups.setdefault((str(a.device), a.dtype), ([], []))
                avgs.append(a)
                curs.append(m)
            for avgs, curs in groups.values():
                fn(avgs, curs, self.n_averaged.to(avgs[0].device))
        if not self.use_buffers:  # buffers follow the source model
            for b, mb in zip(self.module.buffers(), model.buffers(), strict=False):
                b.detach().copy_(mb.detach().to(b.device))
        self.n_averaged += 1


@no_grad()
def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """Recompute every batch norm's running statistics with one pass over ``loader`` (a cumulative average);
    a batch that is a list or tuple gives its first element to the model."""
    momenta: dict[Module, Any] = {}
    for m in model.modules():
        if isinstance(m, _BatchNorm) and not isinstance(m, _InstanceNorm):
            m.reset_running_stats()
            momenta[m] = m.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for m in momenta:
        m.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for m, momentum in momenta.items():
        m.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's rate from its current value to ``swa_lr`` over ``anneal_epochs`` steps (``"cos"`` or
    ``"linear"``), then hold it."""

    def __init__(
        self,
        optimizer: Any,
        swa_lr: float | Sequence[float],
        anneal_epochs: int = 10,
        anneal_strategy: str = "cos",
        last_epoch: int = -1,
    ) -> None:
        groups = optimizer.param_groups
        if isinstance(swa_lr, (list, tuple)):
            if len(swa_lr) != len(groups):
                raise ValueError(f"SWALR: swa_lr has {len(swa_lr)} values for {len(groups)} parameter groups")
            lrs = list(swa_lr)
        else:
            lrs = [swa_lr] * len(groups)
        for lr, g in zip(lrs, groups, strict=True):
            g["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"SWALR: anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}")
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"SWALR: anneal_epochs must be a non-negative int, got {anneal_epochs!r}")
        self.anneal_strategy, self.anneal_epochs = anneal_strategy, anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _anneal(self, t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2 if self.anneal_strategy == "cos" else t

    @staticmethod
    def _initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        return swa_lr if alpha == 1 else (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[float]:
        step = self.last_epoch if self.anneal_epochs else max(1, self.last_epoch)
        prev_alpha = self._anneal(max(0.0, min(1.0, (step - 1) / max(1, self.anneal_epochs))))
        groups = self.optimizer.param_groups
        prev = [self._initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        alpha = self._anneal(max(0.0, min(1.0, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev, strict=True)]
