"""``SyncBatchNorm``: batch norm whose statistics are those of the whole batch, over every rank of the group.

In training with an initialised process group the per-channel sums and counts are all-reduced, then the sums
of squared deviations from the global mean (two passes, as stable as plain batch norm). Both all-reduces are
differentiable (``ember.distributed.nn.functional.all_reduce``), so backward sends each rank the gradient
through the shared statistics: 2 ranks x batch B train exactly as one process with batch 2B. Without a group
(or in eval mode) it is plain batch norm.
"""

from __future__ import annotations

from typing import Any

from ..._creation import tensor
from ..._errors import ShapeError
from ..._tensor import Tensor
from ...autograd._capture import opaque
from ...autograd._grad_mode import no_grad
from ...ops import cat, sqrt
from ..module import Module
from ..norm import BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm

__all__ = ["SyncBatchNorm"]


def _group_size(group: Any) -> int:
    from ... import distributed as dist

    return dist.get_world_size(group) if dist.is_initialized() else 1


@opaque
def _global_count(total: Tensor, c: int, shape: tuple[int, ...]) -> tuple[Tensor, Tensor]:
    """The global count ``n`` (read on the host from the all-reduced sums) and Bessel's factor ``n / (n - 1)``, as
    0-d tensors of the statistics' dtype: a host step of a step ``ember.compile`` captured (replayed as this call,
    so the program reads each step's count, not the captured one)."""
    n = float(total[c].item())
    if n <= 1:
        raise ShapeError(
            f"SyncBatchNorm: expected more than 1 value per channel over all ranks when training, got input {shape}"
        )
    return (tensor(n, dtype=total.dtype, device=total.device),
            tensor(n / (n - 1), dtype=total.dtype, device=total.device))  # fmt: skip


class SyncBatchNorm(_BatchNorm):
    """Batch norm over (N, C, ...) with statistics synchronised across the ranks of ``process_group``."""

    _dims = (2, 3, 4, 5, 6)

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        process_group: Any = None,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim < 2 or input.shape[1] != self.num_features:
            raise ShapeError(
                f"SyncBatchNorm: expected an input of shape (N, {self.num_features}, ...), got {tuple(input.shape)}"
            )
        if not self.training or _group_size(self.process_group) == 1:
            return super().forward(input)
        from ...distributed.nn.functional import all_reduce

        momentum = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                momentum = 1.0 / float(self.num_batches_tracked.item())
        x = input if input.dtype.is_floating_point else input.float()
        c = self.num_features
        axes = (0, *range(2, x.ndim))
        shape = (1, c) + (1,) * (x.ndim - 2)
        count = tensor([x.numel() // c], dtype=x.dtype, device=x.device)
        total = all_reduce(cat([x.sum(axes), count]), group=self.process_group)
        n, bessel = _global_count(total, c, tuple(input.shape))
        mean = total[:c] / n
        xc = x - mean.reshape(shape)
        var = all_reduce((xc * xc).sum(axes), group=self.process_group) / n
        y = xc / sqrt(var.reshape(shape) + self.eps)
        if self.track_running_stats:
            with no_grad():
                rm, rv = self.running_mean, self.running_var
                rm.mul_(1 - momentum).add_(mean.detach().to(rm.dtype) * momentum)
                rv.mul_(1 - momentum).add_((var.detach() * bessel).to(rv.dtype) * momentum)
        if self.weight is not None:
            y = y * self.weight.reshape(shape)
        if self.bias is not None:
            y = y + self.bias.reshape(shape)
        return y

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """``module`` with every BatchNorm1d/2d/3d replaced by a SyncBatchNorm holding the same parameters."""
        if isinstance(module, (BatchNorm1d, BatchNorm2d, BatchNorm3d)) and not isinstance(module, cls):
            new = cls.__new__(cls)
            Module.__init__(new)
            for k in ("num_features", "eps", "momentum", "affine", "track_running_stats"):
                object.__setattr__(new, k, getattr(module, k))
            new.process_group = process_group
            for name, p in module._params.items():  # the same Param objects: optimizers keep working
                new._params[name] = p
            new._non_persistent |= module._non_persistent
            new.train(module.training)
            return new
        for name, child in list(module._modules.items()):
            if child is not None:
                module._modules[name] = cls.convert_sync_batchnorm(child, process_group)
        return module
