"""EfficientNet-B0 with torchvision's module names and state-dict keys (``features.2.1.block.0.0.weight``,
``classifier.1.bias``); ``weights=PATH`` loads a torchvision ``.pth`` file."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, NamedTuple

from .._tensor import Tensor
from ..nn import (
    AdaptiveAvgPool2d,
    Conv2dNormActivation,
    Dropout,
    Linear,
    Module,
    Sequential,
    SiLU,
    SqueezeExcitation,
    StochasticDepth,
)
from ._weights import load_weights_file
from .mobilenet import make_divisible

__all__ = ["EfficientNet", "MBConvConfig", "efficientnet_b0"]


class MBConvConfig(NamedTuple):
    """One stage: expansion ratio, kernel, stride of its first block, input and output channels, blocks."""

    expand_ratio: int
    kernel: int
    stride: int
    input_channels: int
    out_channels: int
    num_layers: int


B0 = [MBConvConfig(1, 3, 1, 32, 16, 1), MBConvConfig(6, 3, 2, 16, 24, 2), MBConvConfig(6, 5, 2, 24, 40, 2),
      MBConvConfig(6, 3, 2, 40, 80, 3), MBConvConfig(6, 5, 1, 80, 112, 3), MBConvConfig(6, 5, 2, 112, 192, 4),
      MBConvConfig(6, 3, 1, 192, 320, 1)]  # fmt: skip


class MBConv(Module):
    """Expansion (1x1, unless the ratio is 1), depthwise, squeeze-excitation (SiLU), projection; the residual
    branch goes through stochastic depth."""

    def __init__(self, expand_ratio: int, kernel: int, stride: int, cin: int, cout: int, sd_prob: float) -> None:
        super().__init__()
        self.use_res_connect = stride == 1 and cin == cout
        expanded = make_divisible(cin * expand_ratio, 8)
        layers: list[Module] = []
        if expanded != cin:
            layers.append(Conv2dNormActivation(cin, expanded, 1, activation_layer=SiLU))
        layers += [Conv2dNormActivation(expanded, expanded, kernel, stride, groups=expanded, activation_layer=SiLU),
                   SqueezeExcitation(expanded, max(1, cin // 4), activation=SiLU),
                   Conv2dNormActivation(expanded, cout, 1, activation_layer=None)]  # fmt: skip
        self.block = Sequential(*layers)
        self.stochastic_depth = StochasticDepth(sd_prob, "row")
        self.out_channels = cout

    def forward(self, x: Tensor) -> Tensor:
        out = self.block(x)
        return x + self.stochastic_depth(out) if self.use_res_connect else out  # type: ignore[no-any-return]


class EfficientNet(Module):
    """EfficientNet (Tan & Le 2019) from stage settings; ``width_mult``/``depth_mult`` scale channels and blocks."""

    def __init__(self, setting: list[MBConvConfig], num_classes: int = 1000, width_mult: float = 1.0,
                 depth_mult: float = 1.0, dropout: float = 0.2, stochastic_depth_prob: float = 0.2,
                 last_channel: int | None = None) -> None:  # fmt: skip
        super().__init__()

        def width(c: int) -> int:
            return make_divisible(c * width_mult, 8)

        stages = [(c, math.ceil(c.num_layers * depth_mult)) for c in setting]
        total, done = sum(n for _, n in stages), 0
        layers: list[Module] = [Conv2dNormActivation(3, width(setting[0].input_channels), 3, 2, activation_layer=SiLU)]
        for c, n in stages:
            blocks: list[Module] = []
            for i in range(n):
                cin = width(c.input_channels) if i == 0 else width(c.out_channels)
                blocks.append(MBConv(c.expand_ratio, c.kernel, c.stride if i == 0 else 1, cin, width(c.out_channels),
                                     stochastic_depth_prob * done / total))  # fmt: skip
                done += 1
            layers.append(Sequential(*blocks))
        last_in = width(setting[-1].out_channels)
        last_out = last_channel if last_channel is not None else 4 * last_in
        layers.append(Conv2dNormActivation(last_in, last_out, 1, activation_layer=SiLU))
        self.features = Sequential(*layers)
        self.avgpool = AdaptiveAvgPool2d(1)
        self.classifier = Sequential(Dropout(dropout), Linear(last_out, num_classes))

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.avgpool(self.features(x)).flatten(1))  # type: ignore[no-any-return]


def efficientnet_b0(num_classes: int = 1000, *, weights: str | Path | None = None, **kw: Any) -> EfficientNet:
    """EfficientNet-B0; ``weights``: a torchvision ``.pth`` file to load."""
    model = EfficientNet(B0, num_classes, **kw)
    return load_weights_file(model, weights) if weights is not None else model  # type: ignore[no-any-return]
