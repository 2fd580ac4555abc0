"""Activation kernels (reference implementation against ``self.xp``, shared by NumPy and CuPy).

GELU forward and backward are one kernel each, as PyTorch's ``gelu``/``gelu_backward``: a few in-place passes
over one temporary, and ``erf`` from the backend's special functions (SciPy's, CuPy's, or the host fallback).
Half-precision inputs are computed in float32 (PyTorch's opmath) and rounded once at the end.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_K = math.sqrt(2.0 / math.pi)
_GELU_C = 0.044715


def _inplace(fn: Any, t: Any) -> Any:
    """``fn(t)`` written into ``t`` (a NumPy scalar, from a 0-d input, has no buffer: a new one)."""
    return fn(t) if isinstance(t, np.generic) else fn(t, out=t)


class ActivationKernels:
    """The ReLU gradient and GELU. Mixed into ``Backend``; torch overrides them with its own kernels."""

    xp: Any
    erf: Any  # from SpecialKernels

    def relu_backward(self, g: Any, y: Any) -> Any:
        """0 where the ReLU output ``y`` is <= 0, ``g`` elsewhere: PyTorch's ``threshold_backward``, so a NaN
        output passes its gradient and a NaN gradient at a zero output becomes 0 (a select, not a product)."""
        xp = self.xp
        if (
            isinstance(y, np.ndarray)  # (ndarray subclasses too: ember.compile records through one)
            and isinstance(g, np.ndarray)
            and y.ndim
            and g.shape == y.shape
            and g.dtype == y.dtype
        ):
            # the same select without branches: NumPy's ``where`` on a random mask runs several times slower
            # (mispredicted branches; benchmarks/README.md): AND the gradient's bits with
            # a mask that is all ones where the gradient passes and 0 where it does not
            bits = np.dtype(f"i{g.dtype.itemsize}")
            keep = np.less_equal(y, 0).astype(bits)
            keep -= 1  # 0 where y <= 0, -1 (every bit set) elsewhere, NaN included
            np.bitwise_and(g.view(bits), keep, out=keep)
            return keep.view(g.dtype)
        return xp.where(y <= 0, 0, g)

    # -- GELU --------------------------------------------------------------------------------------
    def gelu(self, x: Any, approximate: str = "none") -> Any:
        """GELU, ``x * Phi(x)`` (``approximate="tanh"``: ``Phi`` by its tanh approximation), in ``x``'s dtype."""
        dtype = x.dtype
        x = self._gelu_opmath(x)
        if approximate == "tanh":
            t = _inplace(self.xp.tanh, self._gelu_tanh_inner(x))
        else:
            t = self.erf(x * _INV_SQRT2)
        t += 1.0
        t *= x
        t *= 0.5
        return self.xp.astype(t, dtype, copy=False)

    def gelu_backward(self, g: Any, x: Any, approximate: str = "none") -> Any:
        """The gradient of :meth:`gelu` for the output gradient ``g`` (PyTorch's ``gelu_backward``)."""
        xp, dtype = self.xp, x.dtype
        x, g = self._gelu_opmath(x), self._gelu_opmath(g)
        if approximate == "tanh":  # 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2), t = tanh(k (x + c x^3))
            t = xp.tanh(self._gelu_tanh_inner(x))
            d = x * x
            d *= 3 * _GELU_C
            d += 1.0
            d *= 0.5 * _GELU_K
            d *= x
            s = t * t
            d -= d * s
            d += 0.5
            t *= 0.5
            d += t
        else:  # Phi(x) + x phi(x)
            d = x * x
            d *= -0.5
            d = _inplace(xp.exp, d)
            d *= x
            d *= _INV_SQRT_2PI
            cdf = self.erf(x * _INV_SQRT2)
            cdf += 1.0
            cdf *= 0.5
            d += cdf
        d *= g
        return xp.astype(d, dtype, copy=False)

    def _gelu_tanh_inner(self, x: Any) -> Any:
        """``k (x + c x^3)``, a new array."""
        t = x * x
        t *= _GELU_C
        t += 1.0
        t *= x
        t *= _GELU_K
        return t

    def _gelu_opmath(self, x: Any) -> Any:
        """``x`` in float32 when it is a half-precision type, else itself."""
        return self.xp.astype(x, self.xp.float32) if x.dtype.itemsize < 4 else x
