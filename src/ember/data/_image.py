"""Image kernels behind ``ember.data.transforms``, on NumPy arrays laid out (..., C, H, W).

Inputs are uint8 (0-255) or floating point (0-1); results keep the dtype, with torchvision's rounding:
resampling and blurring round to the nearest integer, colour blends truncate (``Tensor.to(uint8)``).
PIL images go in and out through ``to_chw``/``from_chw``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["adjust", "blur", "crop", "from_chw", "pad", "resize", "rotate", "to_chw"]


def is_pil(x: Any) -> bool:
    return hasattr(x, "getbands") and hasattr(x, "mode")


def to_chw(img: Any) -> tuple[np.ndarray, str | None]:
    """A PIL image as a (C, H, W) uint8 array, with its mode (to convert back)."""
    a = np.asarray(img)
    return (a[None] if a.ndim == 2 else a.transpose(2, 0, 1)), img.mode


def from_chw(a: np.ndarray, mode: str | None) -> Any:
    from .._optional import require

    image = require("PIL.Image", "transforms on PIL images")
    hwc = a[0] if a.shape[0] == 1 else a.transpose(1, 2, 0)
    return image.fromarray(np.ascontiguousarray(hwc), mode=mode if mode in ("L", "RGB", "RGBA") else None)


def _bound(a: np.ndarray) -> float:
    return 255.0 if a.dtype == np.uint8 else 1.0


def _work(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float64 if a.dtype == np.float64 else np.float32)


def _back(x: np.ndarray, like: np.ndarray, rounding: bool) -> np.ndarray:
    """Float results back to ``like``'s dtype: integers rounded (or truncated) and clipped."""
    if np.issubdtype(like.dtype, np.integer):
        info = np.iinfo(like.dtype)
        return np.clip(np.round(x) if rounding else np.trunc(x), info.min, info.max).astype(like.dtype)
    return x.astype(like.dtype, copy=False)


def _weights(n_in: int, n_out: int, mode: str, antialias: bool) -> np.ndarray:
    """The (n_out, n_in) resampling matrix of one axis: PIL's separable filter (triangle for bilinear), its
    support widened by the downscale factor when ``antialias``; plain half-pixel bilinear otherwise."""
    scale = n_in / n_out
    if mode == "nearest":  # PyTorch's "nearest": source index floor(i * scale)
        src = np.minimum(np.floor(np.arange(n_out) * scale).astype(np.int64), n_in - 1)
        w = np.zeros((n_out, n_in))
        w[np.arange(n_out), src] = 1.0
        return w
    stretch = max(scale, 1.0) if antialias else 1.0
    centers = (np.arange(n_out) + 0.5) * scale
    dist = (np.arange(n_in)[None, :] + 0.5 - centers[:, None]) / stretch
    w = np.clip(1.0 - np.abs(dist), 0.0, None)
    return w / w.sum(axis=1, keepdims=True)


def resize(a: np.ndarray, size: tuple[int, int], mode: str = "bilinear", antialias: bool = True) -> np.ndarray:
    """Resample the last two axes to ``size`` (h, w)."""
    h, w = a.shape[-2:]
    if (h, w) == tuple(size):
        return a.copy()
    wy = _weights(h, size[0], mode, antialias)
    wx = _weights(w, size[1], mode, antialias)
    out = np.einsum("ij,...jk,lk->...il", wy.astype(np.float32), _work(a), wx.astype(np.float32), optimize=True)
    return _back(out, a, rounding=True)


def crop(a: np.ndarray, top: int, left: int, height: int, width: int) -> np.ndarray:
    """``a[..., top:top+height, left:left+width]``, zero-padded where the box leaves the image (torchvision)."""
    h, w = a.shape[-2:]
    pads = [max(0, -top), max(0, top + height - h), max(0, -left), max(0, left + width - w)]
    if any(pads):
        a = np.pad(a, [(0, 0)] * (a.ndim - 2) + [(pads[0], pads[1]), (pads[2], pads[3])])
        top, left = top + pads[0], left + pads[2]
    return np.ascontiguousarray(a[..., top : top + height, left : left + width])


def pad(a: np.ndarray, ltrb: tuple[int, int, int, int], fill: Any = 0, mode: str = "constant") -> np.ndarray:
    """Pad left, top, right, bottom; ``mode`` is constant (``fill``: a number or one per channel), edge,
    reflect or symmetric."""
    left, top, right, bottom = ltrb
    widths = [(0, 0)] * (a.ndim - 2) + [(top, bottom), (left, right)]
    if mode != "constant":
        return np.pad(a, widths, mode=mode)  # type: ignore[call-overload]
    fills = np.asarray(fill, dtype=np.float64).reshape(-1)
    if fills.size == 1:
        return np.pad(a, widths, constant_values=fills[0])
    if a.ndim < 3 or fills.size != a.shape[-3]:
        raise ValueError(f"Pad: fill has {fills.size} values for an image with shape {a.shape}")
    return np.stack([np.pad(a[..., c, :, :], widths[:-3] + widths[-2:], constant_values=fills[c])
                     for c in range(a.shape[-3])], axis=-3)  # fmt: skip


def _gray(x: np.ndarray) -> np.ndarray:
    r, g, b = x[..., 0, :, :], x[..., 1, :, :], x[..., 2, :, :]
    return (0.2989 * r + 0.587 * g + 0.114 * b)[..., None, :, :]


def _blend(x: np.ndarray, other: Any, ratio: float, bound: float) -> np.ndarray:
    return np.clip(ratio * x + (1.0 - ratio) * other, 0.0, bound)


def _rgb_to_hsv(x: np.ndarray) -> np.ndarray:
    r, g, b = x[..., 0, :, :], x[..., 1, :, :], x[..., 2, :, :]
    maxc, minc = x.max(axis=-3), x.min(axis=-3)
    delta = maxc - minc
    safe = np.where(delta == 0, 1.0, delta)
    s = delta / np.where(maxc == 0, 1.0, maxc)
    rc, gc, bc = (maxc - r) / safe, (maxc - g) / safe, (maxc - b) / safe
    h = np.where(maxc == r, bc - gc, np.where(maxc == g, 2.0 + rc - bc, 4.0 + gc - rc))
    h = np.where(delta == 0, 0.0, (h / 6.0) % 1.0)
    return np.stack([h, s, maxc], axis=-3)


def _hsv_to_rgb(x: np.ndarray) -> np.ndarray:
    h, s, v = x[..., 0, :, :], x[..., 1, :, :], x[..., 2, :, :]
    i = np.floor(h * 6.0)
    f = h * 6.0 - i
    i = i.astype(np.int64) % 6
    p, q, t = v * (1.0 - s), v * (1.0 - s * f), v * (1.0 - s * (1.0 - f))
    table = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)]
    return np.stack([np.choose(i, [row[c] for row in table]) for c in range(3)], axis=-3)


def adjust(a: np.ndarray, kind: str, factor: float) -> np.ndarray:
    """torchvision's ``adjust_brightness/contrast/saturation/hue`` on an RGB (or grey) image."""
    bound = _bound(a)
    x = _work(a)
    channels = a.shape[-3] if a.ndim >= 3 else 1
    if kind == "brightness":
        out = _blend(x, 0.0, factor, bound)
    elif kind == "contrast":
        gray = _back(_gray(x), a, rounding=False).astype(x.dtype) if channels == 3 else x
        out = _blend(x, gray.mean(axis=(-3, -2, -1), keepdims=True), factor, bound)
    elif channels != 3:  # saturation and hue leave grey images as they are
        return a.copy()
    elif kind == "saturation":
        out = _blend(x, _back(_gray(x), a, rounding=False).astype(x.dtype), factor, bound)
    else:  # hue
        hsv = _rgb_to_hsv(x / bound)
        hsv[..., 0, :, :] = (hsv[..., 0, :, :] + factor) % 1.0
        out = _hsv_to_rgb(hsv) * bound
    return _back(out, a, rounding=False)


def blur(a: np.ndarray, kernel_size: tuple[int, int], sigma: tuple[float, float]) -> np.ndarray:
    """A separable Gaussian blur (kernel (kx, ky), sigma (sx, sy)) with reflect padding, as torchvision's."""
    x = _work(a)
    for axis, k, s in ((-1, kernel_size[0], sigma[0]), (-2, kernel_size[1], sigma[1])):
        t = np.linspace(-(k - 1) / 2, (k - 1) / 2, k)
        kernel = np.exp(-0.5 * (t / s) ** 2)
        kernel /= kernel.sum()
        widths = [(0, 0)] * x.ndim
        widths[axis] = (k // 2, k // 2)
        padded = np.pad(x, widths, mode="reflect")
        windows = np.lib.stride_tricks.sliding_window_view(padded, k, axis=axis)
        x = windows @ kernel.astype(x.dtype)
    return _back(x, a, rounding=True)


def _rotation_matrix(angle: float, w: int, h: int, center: tuple[float, float] | None, expand: bool
                     ) -> tuple[list[float], int, int]:  # fmt: skip
    """PIL's geometry: the affine map (a, b, c, d, e, f) from output to input coordinates and the output size."""
    cx, cy = (w / 2.0, h / 2.0) if center is None else center
    t = -math.radians(angle % 360.0)
    m = [round(math.cos(t), 15), round(math.sin(t), 15), 0.0, round(-math.sin(t), 15), round(math.cos(t), 15), 0.0]

    def apply(x: float, y: float) -> tuple[float, float]:
        return m[0] * x + m[1] * y + m[2], m[3] * x + m[4] * y + m[5]

    m[2], m[5] = apply(-cx, -cy)
    m[2], m[5] = m[2] + cx, m[5] + cy
    if not expand:
        return m, w, h
    corners = [apply(x, y) for x, y in ((0, 0), (w, 0), (w, h), (0, h))]
    xs, ys = [c[0] for c in corners], [c[1] for c in corners]
    nw, nh = math.ceil(max(xs)) - math.floor(min(xs)), math.ceil(max(ys)) - math.floor(min(ys))
    m[2], m[5] = apply(-(nw - w) / 2.0, -(nh - h) / 2.0)
    return m, nw, nh


def rotate(a: np.ndarray, angle: float, mode: str = "nearest", expand: bool = False,
           center: tuple[float, float] | None = None, fill: Any = 0) -> np.ndarray:  # fmt: skip
    """Rotate the last two axes ``angle`` degrees counter-clockwise about ``center`` (x, y; default the image
    centre) with PIL's geometry (output size with ``expand`` included): each output pixel centre maps back into
    the input, sampled at the nearest pixel, or bilinearly between pixel centres with ``fill`` beyond the edge
    (torchvision's tensor rule); points outside the input are ``fill``."""
    h, w = a.shape[-2:]
    quarter = angle % 360.0
    if center is None and (quarter in (0.0, 180.0) or (quarter in (90.0, 270.0) and (expand or h == w))):
        return np.ascontiguousarray(np.rot90(a, int(quarter // 90), axes=(-2, -1)))  # exact, as PIL does them
    m, out_w, out_h = _rotation_matrix(angle, w, h, center, expand)
    yy, xx = np.meshgrid(np.arange(out_h) + 0.5, np.arange(out_w) + 0.5, indexing="ij")
    sx, sy = m[0] * xx + m[1] * yy + m[2], m[3] * xx + m[4] * yy + m[5]
    x = _work(a)
    fill_arr = np.asarray(fill, dtype=x.dtype)
    fills = np.broadcast_to(fill_arr.reshape(-1, 1, 1) if fill_arr.ndim else fill_arr, x.shape[:-2] + (out_h, out_w))
    if mode == "nearest":
        ix, iy = np.floor(sx).astype(np.int64), np.floor(sy).astype(np.int64)
        inside = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
        out = x[..., np.clip(iy, 0, h - 1), np.clip(ix, 0, w - 1)]
        return _back(np.where(inside, out, fills), a, rounding=True)
    px, py = sx - 0.5, sy - 0.5
    x0, y0 = np.floor(px).astype(np.int64), np.floor(py).astype(np.int64)
    fx, fy = (px - x0).astype(x.dtype), (py - y0).astype(x.dtype)
    out = np.zeros(x.shape[:-2] + (out_h, out_w), x.dtype)
    for dy, wy in ((0, 1 - fy), (1, fy)):
        for dx, wx in ((0, 1 - fx), (1, fx)):
            iy, ix = y0 + dy, x0 + dx
            inside = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
            out += wy * wx * np.where(inside, x[..., np.clip(iy, 0, h - 1), np.clip(ix, 0, w - 1)], fills)
    return _back(out, a, rounding=True)
