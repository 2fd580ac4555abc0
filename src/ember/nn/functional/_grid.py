"""Spatial transformers: ``affine_grid`` (sampling coordinates from affine matrices) and ``grid_sample``.

Both are compositions of Ember operations: ``grid_sample`` gathers the corner values of each sampling
point and blends them with weights computed from the grid, so gradients flow to the input and the grid.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from ..._creation import arange, linspace, ones
from ..._errors import ShapeError, ValueRangeError
from ..._tensor import Tensor
from ...ops import stack, where
from ...ops._util import same_dtype

__all__ = ["affine_grid", "grid_sample"]


def _base(n: int, align_corners: bool, like: Tensor) -> Tensor:
    """Normalised pixel-centre (or corner) coordinates in [-1, 1] along one dim of ``n`` pixels."""
    if align_corners:
        return linspace(-1.0, 1.0, n, dtype=like.dtype, device=like.device) if n > 1 else ones(
            1, dtype=like.dtype, device=like.device) * 0.0  # fmt: skip
    return (arange(n, dtype=like.dtype, device=like.device) * 2 + 1) / n - 1


def affine_grid(theta: Tensor, size: Any, align_corners: bool | None = None) -> Tensor:
    """The (N, H, W, 2) (or (N, D, H, W, 3)) sampling grid of affine maps ``theta`` (N, 2, 3) (or (N, 3, 4))."""
    ac = bool(align_corners)
    size = tuple(int(s) for s in size)
    if not theta.dtype.is_floating_point:
        raise ValueRangeError(f"affine_grid: theta must be floating point, got {theta.dtype}")
    if len(size) == 4 and theta.shape == (size[0], 2, 3):
        n, _, h, w = size
        x, y = _base(w, ac, theta), _base(h, ac, theta)
        base = stack([x.reshape(1, w).expand(h, w), y.reshape(h, 1).expand(h, w), ones(h, w, dtype=theta.dtype,
                      device=theta.device)], -1).reshape(1, h * w, 3)  # fmt: skip
        return (base @ theta.transpose(1, 2)).reshape(n, h, w, 2)
    if len(size) == 5 and theta.shape == (size[0], 3, 4):
        n, _, d, h, w = size
        x, y, z = _base(w, ac, theta), _base(h, ac, theta), _base(d, ac, theta)
        shape = (d, h, w)
        base = stack([x.reshape(1, 1, w).expand(*shape), y.reshape(1, h, 1).expand(*shape),
                      z.reshape(d, 1, 1).expand(*shape), ones(*shape, dtype=theta.dtype, device=theta.device)],
                     -1).reshape(1, d * h * w, 4)  # fmt: skip
        return (base @ theta.transpose(1, 2)).reshape(n, d, h, w, 3)
    raise ShapeError(f"affine_grid: theta {tuple(theta.shape)} does not fit size {size}: expected (N, 2, 3) for "
                     "(N, C, H, W) or (N, 3, 4) for (N, C, D, H, W)")  # fmt: skip


def _unnormalize(coord: Tensor, n: int, align_corners: bool) -> Tensor:
    return (coord + 1) / 2 * (n - 1) if align_corners else ((coord + 1) * n - 1) / 2


def _reflect(coord: Tensor, low: float, high: float) -> Tensor:
    """Reflect ``coord`` into [low, high] (PyTorch's reflection padding of sampling coordinates)."""
    span = high - low
    if span <= 0:
        return coord * 0.0
    c = (coord - low).abs()
    flips = (c / span).floor()
    extra = c - flips * span
    return where(flips % 2 == 0, extra + low, span - extra + low)


def _source(coord: Tensor, n: int, padding_mode: str, align_corners: bool) -> Tensor:
    c = _unnormalize(coord, n, align_corners)
    if padding_mode == "border":
        return c.clamp(0, n - 1)
    if padding_mode == "reflection":
        c = _reflect(c, 0.0, float(n - 1)) if align_corners else _reflect(c, -0.5, n - 0.5)
        return c.clamp(0, n - 1)
    return c


def _cubic(t: Tensor) -> list[Tensor]:
    """The weights of the 4 taps around a point at ``t`` in [0, 1) past the second (Keys' cubic convolution with
    A = -0.75, PyTorch's bicubic)."""
    a = -0.75
    u, v, w = t + 1, 1 - t, 2 - t
    return [((a * u - 5 * a) * u + 8 * a) * u - 4 * a, ((a + 2) * t - (a + 3)) * t * t + 1,
            ((a + 2) * v - (a + 3)) * v * v + 1, ((a * w - 5 * a) * w + 8 * a) * w - 4 * a]  # fmt: skip


def _padded_tap(p: Tensor, n: int, padding_mode: str, align_corners: bool) -> Tensor:
    """A bicubic tap's integer coordinate moved as the padding mode reads it (zeros: left outside, read as 0)."""
    if padding_mode == "border":
        return p.clamp(0, n - 1)
    if padding_mode == "reflection":
        return (_reflect(p, 0.0, float(n - 1)) if align_corners else _reflect(p, -0.5, n - 0.5)).clamp(0, n - 1)
    return p


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:  # fmt: skip
    """Sample (N, C, H, W) ``input`` at the normalised (x, y) points of ``grid`` (N, Ho, Wo, 2), or (N, C, D, H, W)
    at the (x, y, z) points of (N, Do, Ho, Wo, 3).

    ``mode``: ``"bilinear"`` (trilinear for 5-d), ``"nearest"`` or ``"bicubic"`` (4-d input; the 16 taps each read
    through the padding mode, as PyTorch's); ``padding_mode``: ``"zeros"``, ``"border"`` or ``"reflection"``.
    """
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueRangeError(f"grid_sample: mode must be 'bilinear', 'nearest' or 'bicubic', got {mode!r}")
    if mode == "bicubic" and input.ndim != 4:
        raise ValueRangeError(f"grid_sample: bicubic interpolation needs a 4-D input, got shape {tuple(input.shape)}")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueRangeError(
            f"grid_sample: padding_mode must be 'zeros', 'border' or 'reflection', got {padding_mode!r}"
        )
    nd = input.ndim - 2
    if nd not in (2, 3) or grid.ndim != input.ndim or grid.shape[-1] != nd or grid.shape[0] != input.shape[0]:
        raise ShapeError(f"grid_sample: expected input (N, C, H, W) and grid (N, Ho, Wo, 2), or input (N, C, D, H, W) "
                         f"and grid (N, Do, Ho, Wo, 3), got {tuple(input.shape)} and {tuple(grid.shape)}")  # fmt: skip
    same_dtype("grid_sample", "input and grid", input, grid)
    ac = bool(align_corners)
    n, c = input.shape[:2]
    sizes = tuple(input.shape[2:])[::-1]  # along x, y (, z): W, H (, D)
    out = tuple(grid.shape[1:-1])
    m = math.prod(out)
    coords = [_source(grid[..., i], sizes[i], padding_mode, ac) for i in range(nd)]
    flat = input.reshape(n, c, math.prod(sizes))

    def tap(points: list[Tensor]) -> Tensor:
        """Values at integer points (N, *out), one coordinate per dim; 0 outside the input."""
        inside: Any = None
        index: Any = None
        stride = 1
        for p, size in zip(points, sizes, strict=True):
            ok = (p >= 0) & (p <= size - 1)
            inside = ok if inside is None else inside & ok
            term = p.clamp(0, size - 1) * stride
            index = term if index is None else term + index
            stride *= size
        idx = index.long().reshape(n, 1, m).expand(n, c, m)
        vals = flat.gather(2, idx).reshape(n, c, *out)
        return where(inside.unsqueeze(1), vals, 0.0)

    if mode == "bicubic":  # 4 x 4 taps around each point, unpadded coordinates (the taps are padded one by one)
        raw = [_unnormalize(grid[..., i], sizes[i], ac) for i in range(nd)]
        lows = [p.detach().floor() for p in raw]
        cx, cy = (_cubic((p - lo).unsqueeze(1)) for p, lo in zip(raw, lows, strict=True))
        result: Any = None
        for j, i in itertools.product(range(4), range(4)):
            pts = [_padded_tap(lows[d] + (k - 1), sizes[d], padding_mode, ac) for d, k in ((0, i), (1, j))]
            term = tap(pts) * cx[i] * cy[j]
            result = term if result is None else result + term
        return result  # type: ignore[no-any-return]
    if mode == "nearest":  # piecewise constant in the grid: its gradient is 0 (as PyTorch's), not absent
        still = sum((p - p.detach() for p in coords[1:]), coords[0] - coords[0].detach()).unsqueeze(1) * 0.0
        return tap([p.detach().round() for p in coords]) + still
    lows = [p.detach().floor() for p in coords]
    weights = [(p - lo).unsqueeze(1) for p, lo in zip(coords, lows, strict=True)]
    total: Any = None
    for bits in itertools.product((0, 1), repeat=nd):  # the corners, x varying fastest
        corner = bits[::-1]
        term = tap([lo + b if b else lo for lo, b in zip(lows, corner, strict=True)])
        for wt, b in zip(weights, corner, strict=True):
            term = term * (wt if b else 1 - wt)
        total = term if total is None else total + term
    return total  # type: ignore[no-any-return]
