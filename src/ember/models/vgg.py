"""VGG-11/16, plain or with batch norm, with torchvision's module names (``features.0.weight``,
``classifier.6.bias``); ``weights=PATH`` loads a torchvision ``.pth`` file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._tensor import Tensor
from ..nn import AdaptiveAvgPool2d, BatchNorm2d, Conv2d, Dropout, Linear, MaxPool2d, Module, ReLU, Sequential
from ._weights import load_weights_file

__all__ = ["VGG", "make_layers", "vgg11", "vgg11_bn", "vgg16", "vgg16_bn"]

CFGS: dict[str, list[int | str]] = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
}


def make_layers(cfg: Sequence[int | str], batch_norm: bool = False) -> Sequential:
    """The convolutional part: 3x3 convolutions (channel counts), ``"M"`` for 2x2 max pooling."""
    layers: list[Module] = []
    cin = 3
    for v in cfg:
        if v == "M":
            layers.append(MaxPool2d(2, 2))
            continue
        assert isinstance(v, int)
        layers.append(Conv2d(cin, v, 3, padding=1))
        if batch_norm:
            layers.append(BatchNorm2d(v))
        layers.append(ReLU())
        cin = v
    return Sequential(*layers)


class VGG(Module):
    """``features`` (convolutions), ``avgpool`` to 7x7, ``classifier`` (three linear layers with dropout)."""

    def __init__(self, features: Module, num_classes: int = 1000, dropout: float = 0.5, hidden: int = 4096,
                 channels: int = 512) -> None:  # fmt: skip
        super().__init__()
        self.features = features
        self.avgpool = AdaptiveAvgPool2d((7, 7))
        self.classifier = Sequential(Linear(channels * 7 * 7, hidden), ReLU(), Dropout(dropout), Linear(hidden, hidden),
                                     ReLU(), Dropout(dropout), Linear(hidden, num_classes))  # fmt: skip

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.avgpool(self.features(x)).flatten(1))  # type: ignore[no-any-return]


def _vgg(cfg: str, batch_norm: bool, num_classes: int, weights: str | Path | None, **kw: Any) -> VGG:
    model = VGG(make_layers(CFGS[cfg], batch_norm), num_classes, **kw)
    return load_weights_file(model, weights) if weights is not None else model


def vgg11(num_classes: int = 1000, *, weights: str | Path | None = None, **kw: Any) -> VGG:
    """VGG-11 (configuration A); ``weights``: a torchvision ``.pth`` file to load."""
    return _vgg("A", False, num_classes, weights, **kw)


def vgg11_bn(num_classes: int = 1000, *, weights: str | Path | None = None, **kw: Any) -> VGG:
    """VGG-11 with batch normalization; ``weights``: a torchvision ``.pth`` file to load."""
    return _vgg("A", True, num_classes, weights, **kw)


def vgg16(num_classes: int = 1000, *, weights: str | Path | None = None, **kw: Any) -> VGG:
    """VGG-16 (configuration D); ``weights``: a torchvision ``.pth`` file to load."""
    return _vgg("D", False, num_classes, weights, **kw)


def vgg16_bn(num_classes: int = 1000, *, weights: str | Path | None = None, **kw: Any) -> VGG:
    """VGG-16 with batch normalization; ``weights``: a torchvision ``.pth`` file to load."""
    return _vgg("D", True, num_classes, weights, **kw)
