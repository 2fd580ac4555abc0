"""Activation kernels (reference implementation against ``self.xp``, shared by NumPy and CuPy)."""

from __future__ import annotations

from typing import Any


class ActivationKernels:
    """The ReLU gradient. Mixed into ``Backend``; torch overrides it with its one-pass kernel."""

    xp: Any

    def relu_backward(self, g: Any, y: Any) -> Any:
        """0 where the ReLU output ``y`` is <= 0, ``g`` elsewhere: PyTorch's ``threshold_backward``, so a NaN
        output passes its gradient and a NaN gradient at a zero output becomes 0 (a select, not a product)."""
        return self.xp.where(y <= 0, 0, g)
