"""LeNet-5 (LeCun et al. 1998) for small grey images; ``image_size`` 28 for MNIST, 8 for the bundled digits."""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..nn import AvgPool2d, Conv2d, Linear, MaxPool2d, Module, Sequential
from ..nn.activation import get_activation
from ..nn.config import Config


class LeNet5Config(Config):
    num_classes: int = 10
    in_channels: int = 1
    image_size: int = 28
    activation: str = "relu"
    pool: str = "max"
    #: channel multiplier: convolutions get 6 * width and 16 * width channels
    width: int = 1

    def validate(self) -> None:
        if self.pool not in ("max", "avg"):
            raise ValueError(f"LeNet5Config: pool must be 'max' or 'avg', got {self.pool!r}")
        if self.image_size < 8:
            raise ValueError(f"LeNet5Config: image_size must be at least 8, got {self.image_size}")

    def init(self, device: Any = None, dtype: Any = None) -> LeNet5:
        return LeNet5(self, device=device, dtype=dtype)


class LeNet5(Module):
    """conv(6, 5x5, same) - pool - conv(16, 5x5) - pool - fc 120 - fc 84 - fc classes (small inputs: 3x3 kernels)."""

    def __init__(self, config: LeNet5Config, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.config = config
        kw = {"device": device, "dtype": dtype}
        small = config.image_size < 16
        k = 3 if small else 5
        act = config.activation
        pool = MaxPool2d if config.pool == "max" else AvgPool2d
        c1, c2 = 6 * config.width, 16 * config.width
        self.features = Sequential(
            Conv2d(config.in_channels, c1, k, padding=k // 2, **kw), get_activation(act), pool(2),
            Conv2d(c1, c2, k, padding=1 if small else 0, **kw), get_activation(act), pool(2),
        )  # fmt: skip
        s = config.image_size // 2
        s = (s + 2 - k + 1) // 2 if small else (s - k + 1) // 2
        self.classifier = Sequential(
            Linear(c2 * s * s, 120, **kw), get_activation(act), Linear(120, 84, **kw), get_activation(act),
            Linear(84, config.num_classes, **kw),
        )  # fmt: skip

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.features(x).flatten(1))  # type: ignore[no-any-return]
