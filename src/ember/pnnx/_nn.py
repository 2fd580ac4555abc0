"""Converters for PNNX's ``nn.*`` operators: one Ember module per operator, holding its weights.

A ``nn.X`` line carries ``torch.nn.X``'s constructor keywords as parameters and the module's parameters
and buffers as ``@`` attributes. Ember's layers mirror PyTorch's constructors, so most converters are
the Ember class itself; the few that differ are small functions named after the operator. After
construction the loader replaces each named parameter with the file's array (see ``_graph.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import nn
from .._tensor import Tensor
from ..nn import functional as F

__all__ = ["NN_OPS", "Attribute"]


class Attribute(nn.Module):
    """``pnnx.Attribute``: a constant tensor of the graph (a folded buffer, grid or anchor table)."""

    def __init__(self) -> None:
        super().__init__()
        self.data: Any = None

    def forward(self) -> Tensor:
        return self.data


class AvgPool2d(nn.Module):
    """``nn.AvgPool2d`` with ``divisor_override``, which pnnx always writes."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: Any = None) -> None:  # fmt: skip
        super().__init__()
        self.args = (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(input, *self.args)


def _upsampling(mode: str, align_corners: bool | None) -> Callable[..., nn.Module]:
    def build(size: Any = None, scale_factor: Any = None) -> nn.Module:
        return nn.Upsample(size, scale_factor, mode, align_corners)

    return build


def _no_inplace(cls: type[nn.Module]) -> Callable[..., nn.Module]:
    """Activations that Ember builds without ``inplace`` (the flag changes nothing at inference)."""

    def build(inplace: bool = False, **kw: Any) -> nn.Module:
        return cls(**kw)

    return build


#: ``nn.*`` operator type -> constructor taking the line's parameters as keywords.
NN_OPS: dict[str, Callable[..., nn.Module]] = {
    "nn.Conv1d": nn.Conv1d,
    "nn.Conv2d": nn.Conv2d,
    "nn.Conv3d": nn.Conv3d,
    "nn.ConvTranspose1d": nn.ConvTranspose1d,
    "nn.ConvTranspose2d": nn.ConvTranspose2d,
    "nn.Linear": nn.Linear,
    "nn.BatchNorm1d": nn.BatchNorm1d,
    "nn.BatchNorm2d": nn.BatchNorm2d,
    "nn.BatchNorm3d": nn.BatchNorm3d,
    "nn.InstanceNorm2d": nn.InstanceNorm2d,
    "nn.LayerNorm": nn.LayerNorm,
    "nn.GroupNorm": nn.GroupNorm,
    "nn.ReLU": nn.ReLU,
    "nn.ReLU6": nn.ReLU6,
    "nn.SiLU": nn.SiLU,
    "nn.Sigmoid": _no_inplace(nn.Sigmoid),
    "nn.Tanh": _no_inplace(nn.Tanh),
    "nn.Mish": nn.Mish,
    "nn.Hardswish": nn.Hardswish,
    "nn.Hardsigmoid": nn.Hardsigmoid,
    "nn.GELU": nn.GELU,
    "nn.SELU": nn.SELU,
    "nn.ELU": nn.ELU,
    "nn.LeakyReLU": nn.LeakyReLU,
    "nn.Hardtanh": nn.Hardtanh,
    "nn.Softplus": nn.Softplus,
    "nn.Softsign": nn.Softsign,
    "nn.LogSigmoid": nn.LogSigmoid,
    "nn.PReLU": nn.PReLU,
    "nn.Softmax": nn.Softmax,
    "nn.LogSoftmax": nn.LogSoftmax,
    "nn.MaxPool1d": nn.MaxPool1d,
    "nn.MaxPool2d": nn.MaxPool2d,
    "nn.AvgPool1d": nn.AvgPool1d,
    "nn.AvgPool2d": AvgPool2d,
    "nn.AdaptiveAvgPool1d": nn.AdaptiveAvgPool1d,
    "nn.AdaptiveAvgPool2d": nn.AdaptiveAvgPool2d,
    "nn.AdaptiveMaxPool2d": nn.AdaptiveMaxPool2d,
    "nn.Upsample": nn.Upsample,
    "nn.UpsamplingNearest2d": _upsampling("nearest", None),
    "nn.UpsamplingBilinear2d": _upsampling("bilinear", True),
    "nn.PixelShuffle": nn.PixelShuffle,
    "nn.PixelUnshuffle": nn.PixelUnshuffle,
    "nn.ZeroPad2d": nn.ZeroPad2d,
    "nn.ConstantPad2d": nn.ConstantPad2d,
    "nn.ReflectionPad2d": nn.ReflectionPad2d,
    "nn.ReplicationPad2d": nn.ReplicationPad2d,
    "nn.Dropout": nn.Dropout,
    "nn.Dropout2d": nn.Dropout2d,
    "nn.Identity": nn.Identity,
    "nn.Flatten": nn.Flatten,
    "nn.Unflatten": nn.Unflatten,
    "pnnx.Attribute": Attribute,
}
