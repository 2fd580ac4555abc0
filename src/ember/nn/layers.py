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
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "Embedding", "FeatureAlphaDropout", "MaxPool1d", "MaxPool2d",
    "PixelShuffle", "PixelUnshuffle", "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d",
]  # fmt: skip


class Dropout(Module):
    """Zero elements with probability ``p`` while training (inverted scaling); identity in eval mode."""

    _fn: Callable[..., Tensor] = staticmethod(F.dropout)

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"{type(self).__name__}: p must be in [0, 1], got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input: Tensor) -> Tensor:
        if self.inplace:  # (PyTorch's: the result written into the input, which is returned)
            return type(self)._fn(input, self.p, self.training, True)
        return type(self)._fn(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(Dropout):
    _fn: Callable[..., Tensor] = staticmethod(F.dropout1d)


class Dropout2d(Dropout):
    """Zero whole channels of (N, C, H, W) while training."""

    _fn: Callable[..., Tensor] = staticmethod(F.dropout2d)


class Dropout3d(Dropout):
    """Zero whole channels of (N, C, D, H, W) while training."""

    _fn: Callable[..., Tensor] = staticmethod(F.dropout3d)


class AlphaDropout(Dropout):
    _fn: Callable[..., Tensor] = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(Dropout):
    """Alpha dropout of whole channels (SELU networks): dropped channels take SELU's negative saturation."""

    _fn: Callable[..., Tensor] = staticmethod(F.feature_alpha_dropout)


class Embedding(Module):
    """A lookup table of ``num_embeddings`` vectors of size ``embedding_dim``; ``padding_idx`` stays zero."""

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Tensor | None = None,
        _freeze: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        for k, v in (("num_embeddings", num_embeddings), ("embedding_dim", embedding_dim)):
            if not isinstance(v, int) or v <= 0:
                raise ValueError(f"{type(self).__name__}: {k} must be a positive integer, got {v!r}")
        if padding_idx is not None and not -num_embeddings <= padding_idx < num_embeddings:
            raise ValueError(f"{type(self).__name__}: padding_idx {padding_idx} is out of range for "
                             f"{num_embeddings} embeddings")  # fmt: skip
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = padding_idx % num_embeddings if padding_idx is not None else None
        self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse = (
            max_norm,
            norm_type,
            scale_grad_by_freq,
            sparse,
        )
        if _weight is not None:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError(f"{type(self).__name__}: _weight has shape {tuple(_weight.shape)}, expected "
                                 f"{(num_embeddings, embedding_dim)}")  # fmt: skip
            self.weight = Param(_weight.detach(), requires_grad=not _freeze)
            return
        self.weight = Param(empty(num_embeddings, embedding_dim, device=device, dtype=dtype), requires_grad=not _freeze)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Standard normal weights, the ``padding_idx`` row zero (PyTorch's initialisation)."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight._data[self.padding_idx] = 0

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                           self.sparse)  # fmt: skip

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, padding_idx: int | None = None,
                        max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:  # fmt: skip
        """An ``Embedding`` holding ``embeddings`` (rows, dim); ``freeze`` keeps them out of training."""
        if embeddings.ndim != 2:
            raise ValueError(f"Embedding.from_pretrained: embeddings must be 2-d, got shape {tuple(embeddings.shape)}")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse, _weight=embeddings,
                   _freeze=freeze)  # fmt: skip

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        s += f", padding_idx={self.padding_idx}" if self.padding_idx is not None else ""
        s += f", max_norm={self.max_norm}" if self.max_norm is not None else ""
        s += f", norm_type={self.norm_type}" if self.norm_type != 2 else ""
        s += ", scale_grad_by_freq=True" if self.scale_grad_by_freq else ""
        return s + (", sparse=True" if self.sparse else "")


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
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:  # fmt: skip
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                            self.divisor_override)  # fmt: skip


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
        self, size: Any = None, scale_factor: Any = None, mode: str = "nearest", align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ) -> None:  # fmt: skip
        super().__init__()
        if scale_factor:  # (PyTorch keeps it as floats)
            many = isinstance(scale_factor, (tuple, list))
            scale_factor = tuple(map(float, scale_factor)) if many else float(scale_factor)
        self.size, self.scale_factor, self.mode, self.align_corners = size, scale_factor, mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             self.recompute_scale_factor)  # fmt: skip

    def extra_repr(self) -> str:
        s = f"size={self.size}" if self.size is not None else f"scale_factor={self.scale_factor}"
        return f"{s}, mode='{self.mode}'"


class UpsamplingNearest2d(Upsample):
    """2-d nearest-neighbour upsampling (PyTorch's older name for ``Upsample(mode="nearest")``)."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """2-d bilinear upsampling with ``align_corners=True`` (PyTorch's older name)."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


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

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


export_configs(
    globals(),
    (
        Dropout,
        Dropout1d,
        Dropout2d,
        Dropout3d,
        AlphaDropout,
        FeatureAlphaDropout,
        Embedding,
        MaxPool1d,
        MaxPool2d,
        AvgPool1d,
        AvgPool2d,
        AdaptiveAvgPool1d,
        AdaptiveAvgPool2d,
        AdaptiveMaxPool2d,
        Upsample,
        UpsamplingNearest2d,
        UpsamplingBilinear2d,
        PixelShuffle,
        PixelUnshuffle,
    ),
)
