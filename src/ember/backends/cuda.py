"""``ember.backends.cuda``: PyTorch's CUDA matmul flags, and ``set_float32_matmul_precision``.

Ember computes float32 products in full float32 on the CPU, whatever the flags say (TF32 is a CUDA
tensor-core format); the flags are kept as set, read back truthfully, and forwarded to PyTorch's own
when PyTorch is loaded in this process (where its CUDA kernels read them). As in PyTorch,
``matmul.allow_tf32`` and the float32 matmul precision are one setting: ``"highest"`` means no TF32.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, ClassVar

__all__ = ["get_float32_matmul_precision", "is_built", "matmul", "set_float32_matmul_precision"]

_PRECISIONS = ("highest", "high", "medium")


def _loaded_torch() -> Any | None:
    """PyTorch when this process has already imported it (never imports it: flags are not worth ~1 s)."""
    if "torch" not in sys.modules:
        return None
    from . import real_torch

    return real_torch()


class _MatmulFlags:
    """``ember.backends.cuda.matmul``: ``allow_tf32`` and the reduced-precision reduction flags."""

    _DEFAULTS: ClassVar[dict[str, bool]] = {
        "allow_tf32": False,
        "allow_fp16_reduced_precision_reduction": True,
        "allow_bf16_reduced_precision_reduction": True,
    }

    def __init__(self) -> None:
        object.__setattr__(self, "_values", dict(self._DEFAULTS))
        object.__setattr__(self, "_precision", "highest")

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__["_values"]
        if name in values:
            return values[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._values:
            raise AttributeError(f"Unknown attribute {name}")
        self._values[name] = bool(value)
        if name == "allow_tf32":
            object.__setattr__(self, "_precision", "high" if value else "highest")
        torch = _loaded_torch()
        if torch is not None:
            setattr(torch.backends.cuda.matmul, name, bool(value))

    def __repr__(self) -> str:
        return f"ember.backends.cuda.matmul({', '.join(f'{k}={v}' for k, v in self._values.items())})"


matmul = _MatmulFlags()


def set_float32_matmul_precision(precision: str) -> None:
    """``"highest"`` (full float32), ``"high"`` or ``"medium"`` (TF32 allowed on CUDA); as ``torch``'s.

    Another value warns and changes nothing, as in PyTorch.
    """
    if precision not in _PRECISIONS:
        warnings.warn(
            f"{precision} is not one of 'highest', 'high', or 'medium'; the set_float32_matmul_precision call "
            "has no effect.",
            UserWarning,
            stacklevel=2,
        )
        return
    matmul._values["allow_tf32"] = precision != "highest"
    object.__setattr__(matmul, "_precision", precision)
    torch = _loaded_torch()
    if torch is not None:
        torch.set_float32_matmul_precision(precision)


def get_float32_matmul_precision() -> str:
    """The precision last set (``"highest"`` by default)."""
    return str(matmul._precision)


def is_built() -> bool:
    """Whether CUDA support is present in the torch that backs Ember here (False without one)."""
    from . import real_torch

    torch = real_torch()
    return bool(torch is not None and torch.backends.cuda.is_built())
