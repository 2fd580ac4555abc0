"""MobileNetV2 and MobileNetV3 (large, small) with torchvision's module names and state-dict keys
(``features.1.conv.0.0.weight``, ``features.4.block.2.fc1.weight``, ``classifier.3.bias``); ``weights=PATH``
loads a torchvision ``.pth`` file."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from .._tensor import Tensor
from ..nn import (
    AdaptiveAvgPool2d,
    BatchNorm2d,
    Conv2d,
    Conv2dNormActivation,
    Dropout,
    Hardsigmoid,
    Hardswish,
    Linear,
    Module,
    ReLU,
    ReLU6,
    Sequential,
    SqueezeExcitation,
)
from ._weights import load_weights_file

__all__ = ["MobileNetV2", "MobileNetV3", "mobilenet_v2", "mobilenet_v3_large", "mobilenet_v3_small"]


def make_divisible(v: float, divisor: int = 8, min_value: int | None = None) -> int:
    """``v`` rounded to a multiple of ``divisor``, never more than 10% below ``v`` (the MobileNet rule)."""
    min_value = divisor if min_value is None else min_value
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


class InvertedResidual(Module):
    """MobileNetV2's block: 1x1 expansion (unless ``expand_ratio`` is 1), depthwise 3x3, linear 1x1 projection."""

    def __init__(self, inp: int, oup: int, stride: int, expand_ratio: int) -> None:
        super().__init__()
        hidden = round(inp * expand_ratio)
        self.use_res_connect = stride == 1 and inp == oup
        layers: list[Module] = []
        if expand_ratio != 1:
            layers.append(Conv2dNormActivation(inp, hidden, 1, activation_layer=ReLU6))
        layers += [Conv2dNormActivation(hidden, hidden, 3, stride, groups=hidden, activation_layer=ReLU6),
                   Conv2d(hidden, oup, 1, bias=False), BatchNorm2d(oup)]  # fmt: skip
        self.conv = Sequential(*layers)
        self.out_channels = oup

    def forward(self, x: Tensor) -> Tensor:
        return x + self.conv(x) if self.use_res_connect else self.conv(x)  # type: ignore[no-any-return]


class MobileNetV2(Module):
    """MobileNetV2 (Sandler et al. 2018); ``width_mult`` scales every layer's channels."""

    SETTING = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
               (6, 320, 1, 1))  # fmt: skip

    def __init__(self, num_classes: int = 1000, width_mult: float = 1.0, round_nearest: int = 8,
                 dropout: float = 0.2) -> None:  # fmt: skip
        super().__init__()
        cin = make_divisible(32 * width_mult, round_nearest)
        self.last_channel = make_divisible(1280 * max(1.0, width_mult), round_nearest)
        layers: list[Module] = [Conv2dNormActivation(3, cin, 3, 2, activation_layer=ReLU6)]
        for t, c, n, s in self.SETTING:
            cout = make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                layers.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
                cin = cout
        layers.append(Conv2dNormActivation(cin, self.last_channel, 1, activation_layer=ReLU6))
        self.features = Sequential(*layers)
        self.classifier = Sequential(Dropout(dropout), Linear(self.last_channel, num_classes))
        self.pool = AdaptiveAvgPool2d(1)

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.pool(self.features(x)).flatten(1))  # type: ignore[no-any-return]


class BlockConfig(NamedTuple):
    """One MobileNetV3 block: input, kernel, expanded and output channels, squeeze-excitation, activation
    (``"RE"`` ReLU, ``"HS"`` Hardswish), stride."""

    input_channels: int
    kernel: int
    expanded_channels: int
    out_channels: int
    use_se: bool
    activation: str
    stride: int


LARGE = [BlockConfig(16, 3, 16, 16, False, "RE", 1), BlockConfig(16, 3, 64, 24, False, "RE", 2),
         BlockConfig(24, 3, 72, 24, False, "RE", 1), BlockConfig(24, 5, 72, 40, True, "RE", 2),
         BlockConfig(40, 5, 120, 40, True, "RE", 1), BlockConfig(40, 5, 120, 40, True, "RE", 1),
         BlockConfig(40, 3, 240, 80, False, "HS", 2), BlockConfig(80, 3, 200, 80, False, "HS", 1),
         BlockConfig(80, 3, 184, 80, False, "HS", 1), BlockConfig(80, 3, 184, 80, False, "HS", 1),
         BlockConfig(80, 3, 480, 112, True, "HS", 1), BlockConfig(112, 3, 672, 112, True, "HS", 1),
         BlockConfig(112, 5, 672, 160, True, "HS", 2), BlockConfig(160, 5, 960, 160, True, "HS", 1),
         BlockConfig(160, 5, 960, 160, True, "HS", 1)]  # fmt: skip
SMALL = [BlockConfig(16, 3, 16, 16, True, "RE", 2), BlockConfig(16, 3, 72, 24, False, "RE", 2),
         BlockConfig(24, 3, 88, 24, False, "RE", 1), BlockConfig(24, 5, 96, 40, True, "HS", 2),
         BlockConfig(40, 5, 240, 40, True, "HS", 1), BlockConfig(40, 5, 240, 40, True, "HS", 1),
         BlockConfig(40, 5, 120, 48, True, "HS", 1), BlockConfig(48, 5, 144, 48, True, "HS", 1),
         BlockConfig(48, 5, 288, 96, True, "HS", 2), BlockConfig(96, 5, 576, 96, True, "HS", 1),
         BlockConfig(96, 5, 576, 96, True, "HS", 1)]  # fmt: skip


class V3Block(Module):
    """MobileNetV3's block: expansion (when wider), depthwise, optional squeeze-excitation, linear projection."""

    def __init__(self, c: BlockConfig, width_mult: float, norm: Callable[..., Module]) -> None:
        super().__init__()
        cin, cexp, cout = (make_divisible(v * width_mult) for v in (c.input_channels, c.expanded_channels,
                                                                      c.out_channels))  # fmt: skip
        act = Hardswish if c.activation == "HS" else ReLU
        self.use_res_connect = c.stride == 1 and cin == cout
        layers: list[Module] = []
        if cexp != cin:
            layers.append(Conv2dNormActivation(cin, cexp, 1, norm_layer=norm, activation_layer=act))
        layers.append(Conv2dNormActivation(cexp, cexp, c.kernel, c.stride, groups=cexp, norm_layer=norm,
                                           activation_layer=act))  # fmt: skip
        if c.use_se:
            layers.append(SqueezeExcitation(cexp, make_divisible(cexp // 4, 8), scale_activation=Hardsigmoid))
        layers.append(Conv2dNormActivation(cexp, cout, 1, norm_layer=norm, activation_layer=None))
        self.block = Sequential(*layers)
        self.out_channels = cout

    def forward(self, x: Tensor) -> Tensor:
        return x + self.block(x) if self.use_res_connect else self.block(x)  # type: ignore[no-any-return]


class MobileNetV3(Module):
    """MobileNetV3 (Howard et al. 2019) from its block settings and the classifier's width ``last_channel``."""

    def __init__(self, setting: list[BlockConfig], last_channel: int, num_classes: int = 1000,
                 width_mult: float = 1.0, dropout: float = 0.2) -> None:  # fmt: skip
        super().__init__()
        norm = partial(BatchNorm2d, eps=0.001, momentum=0.01)
        first = make_divisible(setting[0].input_channels * width_mult)
        layers: list[Module] = [Conv2dNormActivation(3, first, 3, 2, norm_layer=norm, activation_layer=Hardswish)]
        layers += [V3Block(c, width_mult, norm) for c in setting]
        last_in = make_divisible(setting[-1].out_channels * width_mult)
        layers.append(Conv2dNormActivation(last_in, 6 * last_in, 1, norm_layer=norm, activation_layer=Hardswish))
        self.features = Sequential(*layers)
        self.avgpool = AdaptiveAvgPool2d(1)
        self.classifier = Sequential(Linear(6 * last_in, last_channel), Hardswish(), Dropout(dropout),
                                     Linear(last_channel, num_classes))  # fmt: skip

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.avgpool(self.features(x)).flatten(1))  # type: ignore[no-any-return]


def _load(model: Module, weights: str | Path | None) -> Any:
    return load_weights_file(model, weights) if weights is not None else model


def mobilenet_v2(num_classes: int = 1000, *, weights: str | Path | None = None, **kw: Any) -> MobileNetV2:
    """MobileNetV2; ``weights``: a torchvision ``.pth`` file to load."""
    return _load(MobileNetV2(num_classes, **kw), weights)  # type: ignore[no-any-return]


def mobilenet_v3_large(num_classes: int = 1000, *, weights: str | Path | None = None, width_mult: float = 1.0,
                       **kw: Any) -> MobileNetV3:  # fmt: skip
    """MobileNetV3-Large; ``weights``: a torchvision ``.pth`` file to load."""
    model = MobileNetV3(LARGE, make_divisible(1280 * width_mult), num_classes, width_mult, **kw)
    return _load(model, weights)  # type: ignore[no-any-return]


def mobilenet_v3_small(num_classes: int = 1000, *, weights: str | Path | None = None, width_mult: float = 1.0,
                       **kw: Any) -> MobileNetV3:  # fmt: skip
    """MobileNetV3-Small; ``weights``: a torchvision ``.pth`` file to load."""
    model = MobileNetV3(SMALL, make_divisible(1024 * width_mult), num_classes, width_mult, **kw)
    return _load(model, weights)  # type: ignore[no-any-return]
