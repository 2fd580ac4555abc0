"""Activation layers and the name -> activation registry used by configs (``activation="gelu"``)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from .._creation import full
from .._tensor import Tensor
from ..ops._pointwise_unary import relu, sigmoid, tanh
from . import functional as F
from .config import ACTIVATION_NAMES, export_configs
from .functional._basic import legacy_dim
from .linear import Identity
from .module import Module
from .parameter import Param

__all__ = [
    "ACTIVATIONS", "CELU", "ELU", "GELU", "GLU", "Hardsigmoid", "Hardswish", "Hardtanh", "LeakyReLU", "LogSigmoid",
    "LogSoftmax", "Mish", "PReLU", "ReLU", "ReLU6", "SELU", "SiLU", "Sigmoid", "Softmax", "Softmin", "Softplus",
    "Softsign", "Tanh", "get_activation",
]  # fmt: skip


class _Act(Module):
    """An activation with PyTorch's ``inplace`` switch: ``inplace=True`` writes the result into the input and
    returns it (``fn(input, inplace=True)``), as PyTorch's modules do."""

    fn: Callable[..., Tensor]
    inplace_fn: Callable[..., Tensor] | None = None  # when ``fn`` takes no ``inplace`` (ReLU's fast operator)
    _shows_inplace = True  # (PyTorch's Hardswish/Hardsigmoid work in place but do not print it)

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        if self.inplace:
            cls = type(self)
            return cls.inplace_fn(input) if cls.inplace_fn is not None else cls.fn(input, inplace=True)
        return type(self).fn(input)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace and self._shows_inplace else ""


class ReLU(_Act):
    fn = staticmethod(relu)
    inplace_fn = staticmethod(F.relu_)


class ReLU6(_Act):
    fn = staticmethod(F.relu6)


class Sigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:
        return sigmoid(input)


class Tanh(Module):
    def forward(self, input: Tensor) -> Tensor:
        return tanh(input)


class SiLU(_Act):
    fn = staticmethod(F.silu)


class Mish(_Act):
    fn = staticmethod(F.mish)


class Hardswish(_Act):
    fn = staticmethod(F.hardswish)
    _shows_inplace = False


class Hardsigmoid(_Act):
    fn = staticmethod(F.hardsigmoid)
    _shows_inplace = False


class SELU(_Act):
    fn = staticmethod(F.selu)


class Softsign(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.softsign(input)


class LogSigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.logsigmoid(input)


class GELU(Module):
    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate='{self.approximate}'"


class LeakyReLU(Module):
    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + _inplace(self)


class ELU(Module):
    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + _inplace(self)


class CELU(ELU):
    def forward(self, input: Tensor) -> Tensor:
        return F.celu(input, self.alpha, self.inplace)


class Hardtanh(Module):
    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None) -> None:  # fmt: skip
        super().__init__()
        if min_value is not None or max_value is not None:  # PyTorch's deprecated spellings
            warnings.warn("keyword arguments min_value and max_value have been deprecated; use min_val and max_val",
                          UserWarning, stacklevel=2)  # fmt: skip
            min_val = min_value if min_value is not None else min_val
            max_val = max_value if max_value is not None else max_val
        if min_val > max_val:
            raise ValueError(f"Hardtanh: min_val {min_val} is greater than max_val {max_val}")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + _inplace(self)


def _inplace(m: Module) -> str:
    """``", inplace=True"`` for a module set to work in place (PyTorch prints nothing otherwise)."""
    return ", inplace=True" if getattr(m, "inplace", False) else ""


class Softplus(Module):
    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class PReLU(Module):
    """Leaky ReLU with learned slopes (``num_parameters`` = 1 or the number of channels)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None, dtype: Any = None) -> None:
        super().__init__()

        self.num_parameters = num_parameters
        self.weight = Param(full((num_parameters,), init, device=device, dtype=dtype))

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class Softmax(Module):
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, legacy_dim("softmax", self.dim, input.ndim))

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmin(Softmax):
    def forward(self, input: Tensor) -> Tensor:
        return F.softmin(input, legacy_dim("softmin", self.dim, input.ndim))


class LogSoftmax(Softmax):
    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, legacy_dim("log_softmax", self.dim, input.ndim))


class GLU(Softmax):
    dim: int

    def __init__(self, dim: int = -1) -> None:
        super().__init__(dim)

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)


#: activation name (as used in configs) -> module class
ACTIVATIONS: dict[str, type[Module]] = {
    "relu": ReLU, "relu6": ReLU6, "gelu": GELU, "silu": SiLU, "swish": SiLU, "mish": Mish, "tanh": Tanh,
    "sigmoid": Sigmoid, "leaky_relu": LeakyReLU, "elu": ELU, "selu": SELU, "celu": CELU, "softplus": Softplus,
    "hardswish": Hardswish, "hardsigmoid": Hardsigmoid, "softsign": Softsign, "identity": Module,
}  # fmt: skip
ACTIVATION_NAMES.update(ACTIVATIONS)


def get_activation(name: str) -> Module:
    """An activation module by name (``"relu"``, ``"gelu"``, ...), or a clear error listing the names."""
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown activation {name!r}; choose from {sorted(ACTIVATIONS)}")
    if name == "identity":
        return Identity()
    return ACTIVATIONS[name]()


export_configs(
    globals(),
    (
        ReLU,
        ReLU6,
        Sigmoid,
        Tanh,
        SiLU,
        Mish,
        Hardswish,
        Hardsigmoid,
        SELU,
        Softsign,
        LogSigmoid,
        GELU,
        LeakyReLU,
        ELU,
        CELU,
        Hardtanh,
        Softplus,
        PReLU,
        Softmax,
        LogSoftmax,
        GLU,
    ),
)
