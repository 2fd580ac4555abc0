"""A multi-layer perceptron."""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..nn import Dropout, Linear, Module, Sequential
from ..nn.activation import get_activation
from ..nn.config import Config


class MLPConfig(Config):
    """``in_features -> hidden... -> out_features`` with an activation (and optional dropout) between layers."""

    in_features: int
    out_features: int
    hidden: tuple[int, ...] = (128,)
    activation: str = "relu"
    dropout: float = 0.0

    def validate(self) -> None:
        if any(not isinstance(h, int) or h <= 0 for h in self.hidden):
            raise ValueError(f"MLPConfig: hidden sizes must be positive integers, got {self.hidden!r}")

    def init(self, device: Any = None, dtype: Any = None) -> MLP:
        return MLP(self, device=device, dtype=dtype)


class MLP(Module):
    def __init__(self, config: MLPConfig, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.config = config
        sizes = [config.in_features, *config.hidden, config.out_features]
        layers = Sequential()
        for i in range(len(sizes) - 1):
            layers.add(Linear(sizes[i], sizes[i + 1], device=device, dtype=dtype))
            if i < len(sizes) - 2:
                layers.add(get_activation(config.activation))
                if config.dropout:
                    layers.add(Dropout(config.dropout))
        self.layers = layers

    def forward(self, x: Tensor) -> Tensor:
        return self.layers(x.flatten(1) if x.ndim > 2 else x)  # type: ignore[no-any-return]
