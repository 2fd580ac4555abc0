"""``interpolate(..., antialias=True)``: PyTorch's anti-aliased bilinear and bicubic resize of (N, C, H, W).

When shrinking, each output pixel averages the input under the filter stretched by the scale (a triangle for
bilinear, Keys' cubic with a = -0.5 for bicubic, as PIL and PyTorch use), normalised to sum to one; when growing it
is the plain filter. Each dim is a matrix of these weights (output x input), so the resize is two products and its
gradient theirs. The weights follow PyTorch's ``_compute_weights_aa``: centre ``scale * (i + 0.5)``, support
``filter size / 2 * max(scale, 1)``, taps from ``int(centre - support + 0.5)`` to ``int(centre + support + 0.5)``.
"""

from __future__ import annotations

from typing import Any

from ..._tensor import Tensor
from ...ops._blas import matmul

__all__ = ["resize_antialiased"]


def _weights(xp: Any, n: int, o: int, scale: float, cubic: bool) -> Any:
    """The (o, n) float64 matrix of one dim's weights."""
    size = 4 if cubic else 2
    support = size * 0.5 * scale if scale >= 1.0 else size * 0.5
    inv = 1.0 / scale if scale >= 1.0 else 1.0
    center = (xp.arange(o, dtype=xp.float64) + 0.5) * scale
    lo = xp.maximum(xp.trunc(center - support + 0.5), 0.0)[:, None]  # C's int(): toward zero
    hi = xp.minimum(xp.trunc(center + support + 0.5), float(n))[:, None]
    j = xp.arange(n, dtype=xp.float64)[None, :]
    d = xp.abs((j - center[:, None] + 0.5) * inv)
    if cubic:  # Keys' cubic, a = -0.5
        a = -0.5
        w = xp.where(
            d < 1, ((a + 2) * d - (a + 3)) * d * d + 1, xp.where(d < 2, ((d - 5) * d + 8) * d * a - 4 * a, 0.0)
        )
    else:
        w = xp.maximum(1.0 - d, 0.0)
    w = xp.where((j >= lo) & (j < hi), w, 0.0)
    total = xp.sum(w, axis=1, keepdims=True)
    return xp.where(total != 0, w / xp.where(total != 0, total, 1.0), 0.0)


def resize_antialiased(x: Tensor, out: tuple[int, ...], scale: tuple[float, ...], align: bool, cubic: bool) -> Tensor:
    """Resize the last two dims of float ``x`` to ``out``; ``scale`` is input size per output size (PyTorch's)."""
    xp, dt = x._backend.xp, x._data.dtype
    for i in (0, 1):
        n, o = x.shape[2 + i], out[i]
        if align:
            s = (n - 1) / (o - 1) if o > 1 else 0.0
        else:
            s = scale[i]
        w: Any = Tensor._make(xp.astype(_weights(xp, n, o, s, cubic), dt), x._backend)
        x = matmul(w, x) if i == 0 else matmul(x, w.mT)
    return x
