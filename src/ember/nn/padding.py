"""Padding layers: constant, zero, reflection, replication and circular padding in 1-d, 2-d and 3-d.

``padding`` is an int (the same on every side) or ``2 * n`` ints, last dimension first (``F.pad``'s order).
"""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from . import functional as F
from .config import export_configs
from .module import Module

__all__ = [
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
]


class _PadNd(Module):
    _n = 2
    _mode = "constant"

    def __init__(self, padding: Any, value: float = 0.0) -> None:
        super().__init__()
        width = 2 * self._n
        self.padding = (padding,) * width if isinstance(padding, int) else tuple(padding)
        if len(self.padding) != width:
            raise ValueError(f"{type(self).__name__}: padding must be an int or {width} ints, got {padding!r}")
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        if self._mode == "constant":
            return F.pad(input, self.padding, value=self.value)
        return F.pad(input, self.padding, mode=self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPad(_PadNd):
    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding, value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class _ZeroPad(_PadNd):
    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)


class _ModePad(_PadNd):
    def __init__(self, padding: Any) -> None:
        super().__init__(padding)


class ConstantPad1d(_ConstantPad):
    _n = 1


class ConstantPad2d(_ConstantPad):
    _n = 2


class ConstantPad3d(_ConstantPad):
    _n = 3


class ZeroPad1d(_ZeroPad):
    _n = 1


class ZeroPad2d(_ZeroPad):
    _n = 2


class ZeroPad3d(_ZeroPad):
    _n = 3


class ReflectionPad1d(_ModePad):
    _n, _mode = 1, "reflect"


class ReflectionPad2d(_ModePad):
    _n, _mode = 2, "reflect"


class ReflectionPad3d(_ModePad):
    _n, _mode = 3, "reflect"


class ReplicationPad1d(_ModePad):
    _n, _mode = 1, "replicate"


class ReplicationPad2d(_ModePad):
    _n, _mode = 2, "replicate"


class ReplicationPad3d(_ModePad):
    _n, _mode = 3, "replicate"


class CircularPad1d(_ModePad):
    _n, _mode = 1, "circular"


class CircularPad2d(_ModePad):
    _n, _mode = 2, "circular"


class CircularPad3d(_ModePad):
    _n, _mode = 3, "circular"


export_configs(globals(), tuple(globals()[n] for n in __all__))
