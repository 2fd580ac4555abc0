"""Copies across dtype and device (``Tensor.to``, ``type_as``, ``pin_memory``) and ``clone`` (torch docs,
"Other Operations").
"""

from __future__ import annotations

import warnings
from typing import Any

from .._dtype import as_dtype
from .._errors import DeviceError
from .._tensor import Tensor
from ..autograd import _bf16
from ..autograd._function import Op
from ..backends import get_backend

__all__: list[str] = []
METHODS: list[str] = [] + ["type_as"]


# -- dtype, device, copies ------------------------------------------------------------------------
class Cast(Op):
    saves_inputs = False
    bf16_native = True

    def forward(self, x: Any, dtype: Any) -> Any:
        if x.dtype in self.backend.complex_dtypes and not dtype.is_complex:
            x = self.backend.xp.real(x)  # PyTorch's cast keeps the real part (``_cast`` warns)
        return self.backend.astype(x, dtype)

    def backward(self, g: Tensor) -> tuple[Any, None]:
        d = self.inputs[0].dtype  # type: ignore[index]
        if g.dtype.is_complex and not d.is_complex:  # a real input's gradient is the real part
            from ._pointwise_complex import real

            g = real(g)
        return _cast(g, d), None


class Clone(Op):
    saves_inputs = False
    bf16_native = True

    def forward(self, x: Any) -> Any:
        return self.backend.xp.array(x, copy=True)

    def backward(self, g: Tensor) -> Tensor:
        return g


class ToDevice(Op):
    """A copy on another device or backend; the gradient moves back."""

    saves_inputs = False
    bf16_native = True

    def forward(self, x: Any, target: Any, non_blocking: bool = False) -> Any:
        out = self.backend.transfer(x, target, non_blocking)
        self.backend = target  # the result lives on the target device
        return out

    def backward(self, g: Tensor) -> tuple[Any, None, None]:
        return _to_device(g, self.inputs[0]._backend), None, None  # type: ignore[index]


def _cast(x: Tensor, dtype: Any) -> Tensor:
    d = as_dtype(dtype)
    if x.dtype is d:
        return x
    if x.dtype.is_complex and not d.is_complex:
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning, stacklevel=3)
    out: Tensor = Cast.apply(x, d)
    return out


_bf16.CAST[0] = _cast


def _clone(x: Tensor) -> Tensor:
    return Clone.apply(x)


def _to_device(x: Tensor, dev: Any, non_blocking: bool = False) -> Tensor:
    target = get_backend(dev)
    if target is x._backend:
        return x
    return ToDevice.apply(x, target, non_blocking)


def _pin(x: Tensor) -> Tensor:
    """``x`` in pinned host memory (a copy; the gradient passes through); only CPU tensors, as in PyTorch."""
    if x.device.type != "cpu":
        raise DeviceError(f"pin_memory: only CPU tensors can be pinned, got a tensor on {x.device}")
    out: Tensor = Pin.apply(x)
    return out


class Pin(Op):
    saves_inputs = False
    bf16_native = True

    def forward(self, x: Any) -> Any:
        return self.backend.pin_memory(x)

    def backward(self, g: Tensor) -> Tensor:
        return g


def type_as(input: Tensor, other: Tensor) -> Tensor:
    """``input`` with ``other``'s dtype, on ``other``'s device and backend (as PyTorch moves it to other's device)."""
    return input.to(other)
