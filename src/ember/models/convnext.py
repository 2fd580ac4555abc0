"""ConvNeXt-Tiny with torchvision's module names and state-dict keys (``features.1.0.block.0.weight``,
``features.1.0.layer_scale``, ``classifier.2.bias``); ``weights=PATH`` loads a torchvision ``.pth`` file."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from .._creation import ones
from .._tensor import Tensor
from ..nn import (
    GELU,
    AdaptiveAvgPool2d,
    Conv2d,
    Conv2dNormActivation,
    Flatten,
    LayerNorm,
    LayerNorm2d,
    Linear,
    Module,
    Param,
    Permute,
    Sequential,
    StochasticDepth,
)
from ._weights import load_weights_file

__all__ = ["CNBlockConfig", "ConvNeXt", "convnext_tiny"]


class CNBlockConfig(NamedTuple):
    """One stage: its channels, the next stage's (None for the last) and its number of blocks."""

    input_channels: int
    out_channels: int | None
    num_layers: int


TINY = [CNBlockConfig(96, 192, 3), CNBlockConfig(192, 384, 3), CNBlockConfig(384, 768, 9), CNBlockConfig(768, None, 3)]


class CNBlock(Module):
    """Depthwise 7x7, LayerNorm, 4x MLP with GELU, scaled by ``layer_scale``, through stochastic depth."""

    def __init__(self, dim: int, layer_scale: float, sd_prob: float) -> None:
        super().__init__()
        self.block = Sequential(Conv2d(dim, dim, 7, padding=3, groups=dim), Permute([0, 2, 3, 1]),
                                LayerNorm(dim, eps=1e-6), Linear(dim, 4 * dim), GELU(), Linear(4 * dim, dim),
                                Permute([0, 3, 1, 2]))  # fmt: skip
        self.layer_scale = Param(ones(dim, 1, 1) * layer_scale)
        self.stochastic_depth = StochasticDepth(sd_prob, "row")

    def forward(self, x: Tensor) -> Tensor:
        return x + self.stochastic_depth(self.layer_scale * self.block(x))  # type: ignore[no-any-return]


class ConvNeXt(Module):
    """ConvNeXt (Liu et al. 2022) from stage settings: a 4x4 patchify stem, stages joined by 2x2 downsampling."""

    def __init__(self, setting: list[CNBlockConfig], num_classes: int = 1000, stochastic_depth_prob: float = 0.1,
                 layer_scale: float = 1e-6) -> None:  # fmt: skip
        super().__init__()
        norm = partial(LayerNorm2d, eps=1e-6)
        first = setting[0].input_channels
        layers: list[Module] = [Conv2dNormActivation(3, first, 4, 4, padding=0, norm_layer=norm, activation_layer=None,
                                                     bias=True)]  # fmt: skip
        total, done = sum(c.num_layers for c in setting), 0
        for c in setting:
            blocks: list[Module] = []
            for _ in range(c.num_layers):
                blocks.append(CNBlock(c.input_channels, layer_scale, stochastic_depth_prob * done / (total - 1.0)))
                done += 1
            layers.append(Sequential(*blocks))
            if c.out_channels is not None:
                layers.append(Sequential(norm(c.input_channels), Conv2d(c.input_channels, c.out_channels, 2, 2)))
        self.features = Sequential(*layers)
        self.avgpool = AdaptiveAvgPool2d(1)
        last = setting[-1].out_channels or setting[-1].input_channels
        self.classifier = Sequential(norm(last), Flatten(1), Linear(last, num_classes))

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.avgpool(self.features(x)))  # type: ignore[no-any-return]


def convnext_tiny(num_classes: int = 1000, *, weights: str | Path | None = None, **kw: Any) -> ConvNeXt:
    """ConvNeXt-Tiny; ``weights``: a torchvision ``.pth`` file to load."""
    model = ConvNeXt(TINY, num_classes, **kw)
    return load_weights_file(model, weights) if weights is not None else model  # type: ignore[no-any-return]
