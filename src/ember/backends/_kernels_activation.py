"""Activation kernels (reference implementation against ``self.xp``, shared by NumPy and CuPy)."""

from __future__ import annotations

from typing import Any


class ActivationKernels:
    """The ReLU gradient. Mixed into ``Backend``; torch overrides it with its one-pass kernel."""

    xp: Any

    def relu_backward(self, g: Any, y: Any) -> Any:
        """``g`` where the ReLU output ``y`` is positive, 0 elsewhere.

        Where ``y`` is NaN the reference gives 0 and torch's ``threshold_backward`` passes ``g`` (as
        PyTorch does); everywhere else they agree exactly.
        """
        return g * (y > 0)
