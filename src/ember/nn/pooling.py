"""Pooling layers beyond 1-d and 2-d: 3-d max/average pooling, adaptive 1-d/3-d forms, and max unpooling."""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from . import functional as F
from .config import export_configs
from .layers import AdaptiveAvgPool1d, AdaptiveMaxPool2d, _AvgPool, _Pool
from .module import Module

__all__ = [
    "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool3d", "AvgPool3d", "FractionalMaxPool2d",
    "FractionalMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
]  # fmt: skip


class MaxPool3d(_Pool):
    def forward(self, input: Tensor) -> Any:
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)  # fmt: skip


class AvgPool3d(_AvgPool):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:  # fmt: skip
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                            self.divisor_override)  # fmt: skip


class AdaptiveAvgPool3d(AdaptiveAvgPool1d):
    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool1d(AdaptiveMaxPool2d):
    def forward(self, input: Tensor) -> Any:
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool3d(AdaptiveMaxPool2d):
    def forward(self, input: Tensor) -> Any:
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class _MaxUnpool(Module):
    _fn = staticmethod(F.max_unpool2d)

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = (
            kernel_size,
            stride if stride is not None else kernel_size,
            padding,
        )

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        return type(self)._fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpool):
    _fn = staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpool):
    _fn = staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpool):
    _fn = staticmethod(F.max_unpool3d)


class _LPPool(Module):
    _fn = staticmethod(F.lp_pool2d)

    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")  # fmt: skip


class LPPool1d(_LPPool):
    """Power-average pooling over (N, C, L): ``(sum over the window of x ** p) ** (1 / p)``."""

    _fn = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPool):
    """Power-average pooling over (N, C, H, W)."""

    _fn = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPool):
    """Power-average pooling over (N, C, D, H, W)."""

    _fn = staticmethod(F.lp_pool3d)


class _FractionalMaxPool(Module):
    _fn = staticmethod(F.fractional_max_pool2d)

    def __init__(self, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                 return_indices: bool = False, _random_samples: Tensor | None = None) -> None:  # fmt: skip
        super().__init__()
        if (output_size is None) == (output_ratio is None):
            raise ValueError(f"{type(self).__name__}: give exactly one of output_size and output_ratio")
        self.kernel_size, self.output_size, self.output_ratio = kernel_size, output_size, output_ratio
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)

    def forward(self, input: Tensor) -> Any:
        return type(self)._fn(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                              self._random_samples)  # fmt: skip


class FractionalMaxPool2d(_FractionalMaxPool):
    """Max pooling over windows at pseudo-random increasing starts (a fresh draw every call unless
    ``_random_samples`` is given)."""

    _fn = staticmethod(F.fractional_max_pool2d)


class FractionalMaxPool3d(_FractionalMaxPool):
    _fn = staticmethod(F.fractional_max_pool3d)


export_configs(
    globals(),
    (AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool3d, AvgPool3d, MaxPool3d, MaxUnpool1d, MaxUnpool2d,
     MaxUnpool3d, LPPool1d, LPPool2d, LPPool3d, FractionalMaxPool2d, FractionalMaxPool3d),
)  # fmt: skip
