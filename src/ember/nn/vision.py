"""Building blocks of torchvision's models (``torchvision.ops`` names): ``StochasticDepth``, ``Permute``,
``LayerNorm2d``, ``Conv2dNormActivation`` and ``SqueezeExcitation``, with torchvision's sub-module names so
their state dicts match."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .._creation import rand
from .._tensor import Tensor
from . import functional as F
from .activation import ReLU, Sigmoid
from .container import Sequential
from .conv import Conv2d
from .layers import AdaptiveAvgPool2d
from .module import Module
from .norm import BatchNorm2d, LayerNorm

__all__ = ["Conv2dNormActivation", "LayerNorm2d", "Permute", "SqueezeExcitation", "StochasticDepth"]


class StochasticDepth(Module):
    """Drop the whole residual branch with probability ``p`` during training (``mode="row"``: per sample,
    ``"batch"``: for the whole batch), scaling survivors by ``1 / (1 - p)``; identity in eval mode."""

    def __init__(self, p: float, mode: str) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"StochasticDepth: drop probability must be in [0, 1], got {p}")
        if mode not in ("row", "batch"):
            raise ValueError(f"StochasticDepth: mode must be 'row' or 'batch', got {mode!r}")
        self.p, self.mode = p, mode

    def forward(self, input: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return input
        survival = 1.0 - self.p
        shape = (input.shape[0],) + (1,) * (input.ndim - 1) if self.mode == "row" else (1,) * input.ndim
        keep = (rand(*shape, device=input.device) < survival).to(dtype=input.dtype)
        return input * keep / survival if survival > 0 else input * keep  # type: ignore[no-any-return]

    def extra_repr(self) -> str:
        return f"p={self.p}, mode={self.mode}"


class Permute(Module):
    """``input.permute(*dims)`` as a module."""

    def __init__(self, dims: Sequence[int]) -> None:
        super().__init__()
        self.dims = list(dims)

    def forward(self, input: Tensor) -> Tensor:
        return input.permute(*self.dims)


class LayerNorm2d(LayerNorm):
    """``LayerNorm`` over the channels of an (N, C, H, W) tensor (ConvNeXt's)."""

    def forward(self, input: Tensor) -> Tensor:
        x = input.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class Conv2dNormActivation(Sequential):
    """Conv2d, then a norm layer, then an activation (each optional), numbered 0, 1, 2 as in torchvision.

    ``padding`` defaults to ``(kernel_size - 1) // 2 * dilation``; the convolution has a bias only when
    there is no norm layer, unless ``bias`` says otherwise.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int = 3, stride: int = 1,
                 padding: int | None = None, groups: int = 1,
                 norm_layer: Callable[..., Module] | None = BatchNorm2d,
                 activation_layer: Callable[..., Module] | None = ReLU, dilation: int = 1,
                 bias: bool | None = None) -> None:  # fmt: skip
        if padding is None:
            padding = (kernel_size - 1) // 2 * dilation
        if bias is None:
            bias = norm_layer is None
        layers: list[Module] = [Conv2d(in_channels, out_channels, kernel_size, stride, padding, dilation=dilation,
                                       groups=groups, bias=bias)]  # fmt: skip
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer())
        super().__init__(*layers)
        self.out_channels = out_channels


class SqueezeExcitation(Module):
    """Squeeze-and-excitation: ``input * scale_activation(fc2(activation(fc1(avgpool(input)))))``."""

    def __init__(self, input_channels: int, squeeze_channels: int, activation: Callable[..., Module] = ReLU,
                 scale_activation: Callable[..., Module] = Sigmoid) -> None:  # fmt: skip
        super().__init__()
        self.avgpool = AdaptiveAvgPool2d(1)
        self.fc1 = Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = Conv2d(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def forward(self, input: Tensor) -> Tensor:
        scale = self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(input)))))
        return input * scale  # type: ignore[no-any-return]
