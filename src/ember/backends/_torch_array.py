"""Torch's native kernels for the array kernels of ``_kernels_special.py`` ... (a mixin of the torch backend).

Like ``_torch_kernels.py``: plain torch tensors in and out under ``torch.no_grad()``, results equal to the
reference kernels' (tested against them in tests/backends/test_array_kernels.py).
"""

from __future__ import annotations

from typing import Any


def _torch() -> Any:
    import torch

    return torch


class TorchArrayKernels:
    """Native torch overrides of the reference array kernels. Mix in before ``Backend``."""

    # -- special functions -----------------------------------------------------------------------
    def erf(self, x: Any) -> Any:
        return _torch().erf(x)

    def erfinv(self, y: Any) -> Any:
        return _torch().erfinv(y)
