"""Pooling layers beyond 1-d and 2-d: 3-d max/average pooling, adaptive 1-d/3-d forms, and max unpooling."""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from . import functional as F
from .config import export_configs
from .layers import AdaptiveAvgPool1d, AdaptiveMaxPool2d, _AvgPool, _Pool
from .module import Module

__all__ = [
    "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool3d", "AvgPool3d", "MaxPool3d", "MaxUnpool1d",
    "MaxUnpool2d", "MaxUnpool3d",
]  # fmt: skip


class MaxPool3d(_Pool):
    def forward(self, input: Tensor) -> Any:
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)  # fmt: skip


class AvgPool3d(_AvgPool):
    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)


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


export_configs(
    globals(),
    (AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool3d, AvgPool3d, MaxPool3d, MaxUnpool1d, MaxUnpool2d,
     MaxUnpool3d),
)  # fmt: skip
