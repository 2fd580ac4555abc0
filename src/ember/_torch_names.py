"""PyTorch's top-level names that Ember serves with what it already has: constants, ``finfo``/``iinfo``, ``Size``,
tensor predicates, and functions PyTorch also exposes as methods (``torch.clone(x)`` is ``x.clone()``)."""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from ._dtype import as_dtype, get_default_dtype
from ._tensor import Tensor

__all__ = [
    "Size",
    "clone",
    "detach",
    "e",
    "finfo",
    "iinfo",
    "inf",
    "is_floating_point",
    "is_nonzero",
    "is_same_size",
    "is_signed",
    "is_tensor",
    "nan",
    "newaxis",
    "numel",
    "pi",
    "typename",
]

e, pi, inf, nan = math.e, math.pi, math.inf, math.nan
newaxis = None


class Size(tuple[int, ...]):
    """A shape (``ember.Size([2, 3])``): a tuple of ints with ``numel()``. Ember's ``.shape`` is a plain tuple."""

    def numel(self) -> int:
        return math.prod(self)

    def __repr__(self) -> str:
        return f"ember.Size({list(self)})"


# bfloat16 has no NumPy type: its limits (8 exponent bits, 7 stored mantissa bits)
_BFLOAT16 = {"bits": 16, "eps": 2.0**-7, "max": 3.3895313892515355e38, "tiny": 2.0**-126, "resolution": 0.01}


class finfo:  # noqa: N801 - PyTorch's name
    """The limits of a floating (or complex: its real part's) dtype, the default dtype when none is given."""

    def __init__(self, type: Any = None) -> None:
        d = get_default_dtype() if type is None else as_dtype(type)
        if d.kind not in "fc":
            raise TypeError(f"ember.finfo() needs a floating point dtype, got {d}; use ember.iinfo for integer dtypes")
        if d.kind == "c":
            d = as_dtype("float32" if d.name == "complex64" else "float64")
        if d.name == "bfloat16":
            lim = _BFLOAT16
        else:
            f = np.finfo(np.dtype(d.name))
            lim = {
                "bits": f.bits,
                "eps": f.eps,
                "max": f.max,
                "tiny": f.smallest_normal,
                "resolution": 10.0**-f.precision,
            }
        self.dtype = d.name
        self.bits: int = int(lim["bits"])
        self.eps = builtins.float(lim["eps"])
        self.max = builtins.float(lim["max"])
        self.min = -self.max
        self.tiny = self.smallest_normal = builtins.float(lim["tiny"])
        self.resolution = builtins.float(lim["resolution"])

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
            f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})"
        )


class iinfo:  # noqa: N801 - PyTorch's name
    """The limits of an integer dtype."""

    def __init__(self, type: Any) -> None:
        d = as_dtype(type)
        if d.kind not in "iu":
            raise TypeError(f"ember.iinfo() needs an integer dtype, got {d}; use ember.finfo for floating dtypes")
        self.dtype = d.name
        i = np.iinfo(np.dtype(d.name))
        self.bits, self.min, self.max = int(i.bits), int(i.min), int(i.max)

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def is_tensor(obj: Any) -> bool:
    """Whether ``obj`` is an Ember tensor."""
    return isinstance(obj, Tensor)


def _tensor(op: str, x: Any) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be a Tensor, not {type(x).__name__}")
    return x


def numel(input: Tensor) -> int:
    return _tensor("numel", input).numel()


def clone(input: Tensor, *, memory_format: Any = None) -> Tensor:
    return _tensor("clone", input).clone()


def detach(input: Tensor) -> Tensor:
    return _tensor("detach", input).detach()


def is_floating_point(input: Tensor) -> bool:
    return _tensor("is_floating_point", input).is_floating_point()


def is_nonzero(input: Tensor) -> bool:
    return _tensor("is_nonzero", input).is_nonzero()


def is_same_size(input: Tensor, other: Tensor) -> bool:
    return _tensor("is_same_size", input).is_same_size(other)


def is_signed(input: Tensor) -> bool:
    return _tensor("is_signed", input).is_signed()


def typename(obj: Any) -> str:
    """``"ember.FloatTensor"`` for a tensor (PyTorch's legacy type names), else the object's qualified type name."""
    if isinstance(obj, Tensor):
        return str(obj.type())
    t = type(obj)
    return t.__qualname__ if t.__module__ in {"builtins", "__builtin__", None} else f"{t.__module__}.{t.__qualname__}"
