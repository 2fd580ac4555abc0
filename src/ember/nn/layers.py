"""Dropout, embedding, pooling, resampling and padding layers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._creation import empty
from .._tensor import Tensor
from . import functional as F
from . import init
from .config import export_configs
from .module import Module
from .parameter import Param

__all__ = [
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "AlphaDropout", "AvgPool1d", "AvgPool2d",
    "ConstantPad2d", "Dropout", "Dropout1d", "Dropout2d", "Embedding", "MaxPool1d", "MaxPool2d", "PixelShuffle",
    "PixelUnshuffle", "ReflectionPad2d", "ReplicationPad2d", "Upsample", "ZeroPad2d",
]  # fmt: skip


class Dropout(Module):
    """Zero elements with probability ``p`` while training (inverted scaling); identity in eval mode."""

    _fn: Callable[..., Tensor] = staticmethod(F.dropout)

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"{type(self).__name__}: p must be in [0, 1], got {p}")
        self.p = p

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Dropout1d(Dropout):
    _fn: Callable[..., Tensor] = staticmethod(F.dropout1d)


class Dropout2d(Dropout):
    """Zero whole channels of (N, C, H, W) while training."""

    _fn: Callable[..., Tensor] = staticmethod(F.dropout2d)


class AlphaDropout(Dropout):
    _fn: Callable[..., Tensor] = staticmethod(F.alpha_dropout)


class Embedding(Module):
    """A lookup table of ``num_embeddings`` vectors of size ``embedding_dim``; ``padding_idx`` stays zero."""

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        for k, v in (("num_embeddings", num_embeddings), ("embedding_dim", embedding_dim)):
            if not isinstance(v, int) or v <= 0:
                raise ValueError(f"Embedding: {k} must be a positive integer, got {v!r}")
        if padding_idx is not None and not -num_embeddings <= padding_idx < num_embeddings:
            raise ValueError(f"Embedding: padding_idx {padding_idx} is out of range for {num_embeddings} embeddings")
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = padding_idx % num_embeddings if padding_idx is not None else None
        self.max_norm = max_norm
        self.weight = Param(empty(num_embeddings, embedding_dim, device=device, dtype=dtype))
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight._data[self.padding_idx] = 0

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")


class _Pool(Module):
    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        dilation: Any = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = (
            kernel_size,
            stride if stride is not None else kernel_size,
            padding,
        )
        self.dilation, self.return_indices, self.ceil_mode = dilation, return_indices, ceil_mode

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")  # fmt: skip


class MaxPool1d(_Pool):
    def forward(self, input: Tensor) -> Any:
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)  # fmt: skip


class MaxPool2d(_Pool):
    def forward(self, input: Tensor) -> Any:
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)  # fmt: skip


class _AvgPool(Module):
    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = (
            kernel_size,
            stride if stride is not None else kernel_size,
            padding,
        )
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPool):
    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)


class AvgPool2d(_AvgPool):
    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)


class AdaptiveAvgPool1d(Module):
    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool1d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(AdaptiveAvgPool1d):
    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveMaxPool2d(Module):
    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input: Tensor) -> Any:
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class Upsample(Module):
    def __init__(
        self, size: Any = None, scale_factor: Any = None, mode: str = "nearest", align_corners: bool | None = None
    ) -> None:
        super().__init__()
        self.size, self.scale_factor, self.mode, self.align_corners = size, scale_factor, mode, align_corners

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners)

    def extra_repr(self) -> str:
        s = f"size={self.size}" if self.size is not None else f"scale_factor={self.scale_factor}"
        return f"{s}, mode='{self.mode}'"


class PixelShuffle(Module):
    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_unshuffle(input, self.downscale_factor)


class _Pad2d(Module):
    _mode = "constant"

    def __init__(self, padding: Any, value: float = 0.0) -> None:
        super().__init__()
        self.padding = (padding,) * 4 if isinstance(padding, int) else tuple(padding)
        if len(self.padding) != 4:
            raise ValueError(f"{type(self).__name__}: padding must be an int or 4 ints, got {padding!r}")
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        if self._mode == "constant":
            return F.pad(input, self.padding, value=self.value)
        return F.pad(input, self.padding, mode=self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(_Pad2d):
    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)


class ConstantPad2d(_Pad2d):
    pass


class ReflectionPad2d(_Pad2d):
    _mode = "reflect"

    def __init__(self, padding: Any) -> None:
        super().__init__(padding)


class ReplicationPad2d(ReflectionPad2d):
    _mode = "replicate"


export_configs(
    globals(),
    (
        Dropout,
        Dropout1d,
        Dropout2d,
        AlphaDropout,
        Embedding,
        MaxPool1d,
        MaxPool2d,
        AvgPool1d,
        AvgPool2d,
        AdaptiveAvgPool1d,
        AdaptiveAvgPool2d,
        AdaptiveMaxPool2d,
        Upsample,
        PixelShuffle,
        PixelUnshuffle,
        ZeroPad2d,
        ConstantPad2d,
        ReflectionPad2d,
        ReplicationPad2d,
    ),
)
