"""ResNet-18/34/50/101 with torchvision's module names and state-dict keys (``layer1.0.conv1.weight``, ``fc.bias``);
``weights=PATH`` loads a torchvision ``.pth`` file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._tensor import Tensor
from ..nn import AdaptiveAvgPool2d, BatchNorm2d, Conv2d, Linear, MaxPool2d, Module, ReLU, Sequential
from ..nn.config import Config
from ._weights import load_weights_file

_LAYERS = {
    18: ("basic", (2, 2, 2, 2)),
    34: ("basic", (3, 4, 6, 3)),
    50: ("bottleneck", (3, 4, 6, 3)),
    101: ("bottleneck", (3, 4, 23, 3)),
}


class ResNetConfig(Config):
    depth: int = 18
    num_classes: int = 1000
    in_channels: int = 3
    width: int = 64

    def validate(self) -> None:
        if self.depth not in _LAYERS:
            raise ValueError(f"ResNetConfig: depth must be one of {sorted(_LAYERS)}, got {self.depth}")

    def init(self, device: Any = None, dtype: Any = None) -> ResNet:
        return ResNet(self, device=device, dtype=dtype)


class BasicBlock(Module):
    expansion = 1

    def __init__(self, cin: int, planes: int, stride: int, downsample: Module | None, **kw: Any) -> None:
        super().__init__()
        self.conv1 = Conv2d(cin, planes, 3, stride, 1, bias=False, **kw)
        self.bn1 = BatchNorm2d(planes, **kw)
        self.relu = ReLU()
        self.conv2 = Conv2d(planes, planes, 3, 1, 1, bias=False, **kw)
        self.bn2 = BatchNorm2d(planes, **kw)
        if downsample is not None:
            self.downsample = downsample

    def forward(self, x: Tensor) -> Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        idt = self.downsample(x) if "downsample" in self._modules else x
        return self.relu(out + idt)  # type: ignore[no-any-return]


class Bottleneck(Module):
    expansion = 4

    def __init__(self, cin: int, planes: int, stride: int, downsample: Module | None, **kw: Any) -> None:
        super().__init__()
        self.conv1 = Conv2d(cin, planes, 1, bias=False, **kw)
        self.bn1 = BatchNorm2d(planes, **kw)
        self.conv2 = Conv2d(planes, planes, 3, stride, 1, bias=False, **kw)
        self.bn2 = BatchNorm2d(planes, **kw)
        self.conv3 = Conv2d(planes, planes * 4, 1, bias=False, **kw)
        self.bn3 = BatchNorm2d(planes * 4, **kw)
        self.relu = ReLU()
        if downsample is not None:
            self.downsample = downsample

    def forward(self, x: Tensor) -> Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        idt = self.downsample(x) if "downsample" in self._modules else x
        return self.relu(out + idt)  # type: ignore[no-any-return]


class ResNet(Module):
    def __init__(self, config: ResNetConfig, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.config = config
        kw = {"device": device, "dtype": dtype}
        kind, counts = _LAYERS[config.depth]
        block = BasicBlock if kind == "basic" else Bottleneck
        w = config.width
        self.conv1 = Conv2d(config.in_channels, w, 7, 2, 3, bias=False, **kw)
        self.bn1 = BatchNorm2d(w, **kw)
        self.relu = ReLU()
        self.maxpool = MaxPool2d(3, 2, 1)
        cin = w
        for i, n in enumerate(counts):
            planes = w * 2**i
            stride = 1 if i == 0 else 2
            blocks = Sequential()
            for j in range(n):
                s = stride if j == 0 else 1
                down = None
                if j == 0 and (s != 1 or cin != planes * block.expansion):
                    down = Sequential(Conv2d(cin, planes * block.expansion, 1, s, bias=False, **kw),
                                      BatchNorm2d(planes * block.expansion, **kw))  # fmt: skip
                blocks.add(block(cin, planes, s, down, **kw))
                cin = planes * block.expansion
            setattr(self, f"layer{i + 1}", blocks)
        self.avgpool = AdaptiveAvgPool2d((1, 1))
        self.fc = Linear(cin, config.num_classes, **kw)

    def forward(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(self.avgpool(x).flatten(1))  # type: ignore[no-any-return]


def _build(depth: int, num_classes: int, weights: str | Path | None, kw: dict[str, Any]) -> ResNet:
    model = ResNetConfig(depth, num_classes).init(**kw)
    return load_weights_file(model, weights) if weights is not None else model


def resnet18(num_classes: int = 1000, *, weights: str | Path | None = None, **kw: Any) -> ResNet:
    """ResNet-18; ``weights``: a torchvision ``.pth`` (or ``.safetensors``) file to load."""
    return _build(18, num_classes, weights, kw)


def resnet34(num_classes: int = 1000, *, weights: str | Path | None = None, **kw: Any) -> ResNet:
    """ResNet-34; ``weights``: a torchvision ``.pth`` (or ``.safetensors``) file to load."""
    return _build(34, num_classes, weights, kw)


def resnet50(num_classes: int = 1000, *, weights: str | Path | None = None, **kw: Any) -> ResNet:
    """ResNet-50; ``weights``: a torchvision ``.pth`` (or ``.safetensors``) file to load."""
    return _build(50, num_classes, weights, kw)


def resnet101(num_classes: int = 1000, *, weights: str | Path | None = None, **kw: Any) -> ResNet:
    """ResNet-101; ``weights``: a torchvision ``.pth`` (or ``.safetensors``) file to load."""
    return _build(101, num_classes, weights, kw)
