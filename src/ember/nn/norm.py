"""Normalisation layers. Running statistics are buffers: saved, never trained (spec)."""

from __future__ import annotations

from typing import Any

from .._creation import ones, tensor, zeros
from .._dtype import int64
from .._tensor import Tensor
from . import functional as F
from . import init
from .config import export_configs
from .module import Module
from .parameter import Param

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "CrossMapLRN2d", "GroupNorm", "InstanceNorm1d",
           "InstanceNorm2d", "InstanceNorm3d", "LayerNorm", "LocalResponseNorm", "RMSNorm"]  # fmt: skip


class _BatchNorm(Module):
    _dims: tuple[int, ...] = (2, 3)
    _version = 2  # (PyTorch's: version 2 added num_batches_tracked)

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if not isinstance(num_features, int) or num_features <= 0:
            raise ValueError(f"{type(self).__name__}: num_features must be a positive integer, got {num_features!r}")
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Param(ones(num_features, device=device, dtype=dtype))
            if bias:
                self.bias = Param(zeros(num_features, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=int64, device=device))
        else:
            for n in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(n, None)

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in self._dims:
            raise ValueError(f"{type(self).__name__}: expected a {' or '.join(map(str, self._dims))}-d input, "
                             f"got shape {tuple(input.shape)}")  # fmt: skip
        momentum = 0.0 if self.momentum is None else self.momentum
        use_batch = self.training or self.running_mean is None
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                momentum = 1.0 / float(self.num_batches_tracked.item())
        rm = self.running_mean if not self.training or self.track_running_stats else None
        rv = self.running_var if not self.training or self.track_running_stats else None
        return F.batch_norm(input, rm, rv, self.weight, self.bias, use_batch, momentum, self.eps)

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, local_metadata: dict[str, Any],
                              *args: Any) -> None:  # fmt: skip
        """A state dict older than version 2 (or without metadata) may lack ``num_batches_tracked``: keep ours."""
        version = local_metadata.get("version")
        if (version is None or version < 2) and self.track_running_stats:
            state_dict.setdefault(prefix + "num_batches_tracked", self.num_batches_tracked)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, *args)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """The running statistics and the affine parameters back to their initial values (weight 1, bias 0)."""
        self.reset_running_stats()
        _reset_affine(self)

    def extra_repr(self) -> str:
        bias = getattr(self, "bias", None) is not None
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, bias={bias}, "
                f"track_running_stats={self.track_running_stats}")  # fmt: skip


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L)."""

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W)."""

    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    _dims = (5,)


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dims, with a learned scale and shift."""

    def __init__(
        self,
        normalized_shape: Any,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        if not ns or min(ns) <= 0:
            raise ValueError(f"LayerNorm: normalized_shape must be positive sizes, got {normalized_shape!r}")
        self.normalized_shape, self.eps, self.elementwise_affine = ns, eps, elementwise_affine
        if elementwise_affine:
            self.weight = Param(ones(*ns, device=device, dtype=dtype))
            if bias:
                self.bias = Param(zeros(*ns, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def reset_parameters(self) -> None:
        """The affine parameters back to their initial values (weight 1, bias 0)."""
        _reset_affine(self)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={getattr(self, 'bias', None) is not None}")  # fmt: skip


class RMSNorm(Module):
    def __init__(
        self,
        normalized_shape: Any,
        eps: float | None = None,
        elementwise_affine: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps, self.elementwise_affine = ns, eps, elementwise_affine
        if elementwise_affine:
            self.weight = Param(ones(*ns, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def forward(self, input: Tensor) -> Tensor:
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def reset_parameters(self) -> None:
        """The affine parameters back to their initial values (weight 1, bias 0)."""
        _reset_affine(self)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if num_groups <= 0 or num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels {num_channels} must be divisible by num_groups {num_groups}")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        if affine:
            self.weight = Param(ones(num_channels, device=device, dtype=dtype))
            if bias:
                self.bias = Param(zeros(num_channels, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def reset_parameters(self) -> None:
        """The affine parameters back to their initial values (weight 1, bias 0)."""
        _reset_affine(self)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={getattr(self, 'bias', None) is not None}")  # fmt: skip


class _InstanceNorm(_BatchNorm):
    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim != self._dims[0]:
            raise ValueError(
                f"{type(self).__name__}: expected a {self._dims[0]}-d input, got shape {tuple(input.shape)}"
            )
        use_input = self.training or not self.track_running_stats
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias, use_input,
                               self.momentum or 0.1, self.eps)  # fmt: skip


class InstanceNorm1d(_InstanceNorm):
    _dims = (3,)


class InstanceNorm2d(_InstanceNorm):
    _dims = (4,)


class InstanceNorm3d(_InstanceNorm):
    _dims = (5,)


class LocalResponseNorm(Module):
    """Normalise each channel by the squares of its ``size`` neighbouring channels:
    ``x / (k + alpha / size * sum(x^2)) ** beta``."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(LocalResponseNorm):
    """``LocalResponseNorm`` over (N, C, H, W) (Lua Torch's name)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__(size, alpha, beta, k)

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim != 4:
            raise ValueError(f"CrossMapLRN2d: expected a 4-d input (N, C, H, W), got shape {tuple(input.shape)}")
        return super().forward(input)


export_configs(
    globals(),
    (BatchNorm1d, BatchNorm2d, BatchNorm3d, LayerNorm, RMSNorm, GroupNorm, InstanceNorm1d, InstanceNorm2d,
     InstanceNorm3d, LocalResponseNorm, CrossMapLRN2d),
)  # fmt: skip


def _reset_affine(m: Module) -> None:
    """A norm layer's weight (if any) to ones, its bias (if any) to zeros, in place."""
    if m.weight is not None:
        init.ones_(m.weight)
    if getattr(m, "bias", None) is not None:
        init.zeros_(m.bias)
