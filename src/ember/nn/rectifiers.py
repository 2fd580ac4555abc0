"""Thresholding and shrinking activations, randomized leaky ReLU, and ``Softmax2d``."""

from __future__ import annotations

from .._tensor import Tensor
from . import functional as F
from .activation import _inplace
from .config import export_configs
from .module import Module

__all__ = ["Hardshrink", "RReLU", "Softmax2d", "Softshrink", "Tanhshrink", "Threshold"]


class Threshold(Module):
    """``x`` where ``x > threshold``, else ``value``."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}" + _inplace(self)


class Hardshrink(Module):
    """``x`` where ``|x| > lambd``, else 0."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return F.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """``x - lambd * sign(x)`` where ``|x| > lambd``, else 0."""

    def forward(self, input: Tensor) -> Tensor:
        return F.softshrink(input, self.lambd)


class Tanhshrink(Module):
    """``x - tanh(x)``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.tanhshrink(input)


class RReLU(Module):
    """Leaky ReLU whose negative slope is drawn from U(lower, upper) per element while training, and is
    ``(lower + upper) / 2`` in eval mode."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + _inplace(self)


class Softmax2d(Module):
    """Softmax over the channels of (N, C, H, W) or (C, H, W) input, at every location."""

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected a 3-d or 4-d input, got shape {tuple(input.shape)}")
        return F.softmax(input, -3)


export_configs(globals(), (Threshold, Hardshrink, Softshrink, Tanhshrink, RReLU, Softmax2d))
