"""Linear maps and shape layers: Identity, Linear, Bilinear, Flatten, Unflatten."""

from __future__ import annotations

import math
from typing import Any

from .._creation import empty
from .._tensor import Tensor
from . import functional as F
from . import init
from .config import config_for
from .module import Module
from .parameter import Param

__all__ = ["Bilinear", "Flatten", "Identity", "Linear", "Unflatten"]


def _positive(layer: str, **sizes: Any) -> None:
    for k, v in sizes.items():
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"{layer}: {k} must be a positive integer, got {v!r}")


def _sizes(layer: str, **sizes: Any) -> None:
    """Feature counts as PyTorch takes them: integers >= 0 (a 0-sized layer is allowed, and empty)."""
    for k, v in sizes.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"{layer}: {k} must be a non-negative integer, got {v!r}")


class Identity(Module):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Any) -> Any:
        return input


class Linear(Module):
    """``y = x W^T + b`` with ``weight`` (out_features, in_features); PyTorch's initialisation."""

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__()
        _sizes("Linear", in_features=in_features, out_features=out_features)
        self.in_features, self.out_features = in_features, out_features
        self.weight = Param(empty(out_features, in_features, device=device, dtype=dtype))
        if bias:
            self.bias = Param(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.reset_like_torch_(self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """``y_o = x1^T W_o x2 + b_o`` with ``weight`` (out, in1, in2)."""

    def __init__(
        self,
        in1_features: int,
        in2_features: int,
        out_features: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        _positive("Bilinear", in1_features=in1_features, in2_features=in2_features, out_features=out_features)
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = Param(empty(out_features, in1_features, in2_features, device=device, dtype=dtype))
        if bias:
            self.bias = Param(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        bound = 1 / math.sqrt(in1_features)
        init.uniform_(self.weight, -bound, bound)
        if bias:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")  # fmt: skip


class Flatten(Module):
    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    def __init__(self, dim: int, unflattened_size: tuple[int, ...]) -> None:
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input: Tensor) -> Tensor:
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


IdentityConfig = config_for(Identity)
LinearConfig = config_for(Linear)
BilinearConfig = config_for(Bilinear)
FlattenConfig = config_for(Flatten)
UnflattenConfig = config_for(Unflatten)
__all__ += ["BilinearConfig", "FlattenConfig", "IdentityConfig", "LinearConfig", "UnflattenConfig"]
