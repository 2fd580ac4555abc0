"""ONNX ``Pad``, ``Resize`` and ``Upsample`` as Ember ops.

``Resize`` is separable: per resized axis, each output position reads a few input positions (1 for
nearest, 2 linear, 4 cubic, more with antialiasing) with weights that depend only on the sizes and the
attributes. Those taps and weights are computed in Python from ONNX's formulas, then applied with one
``index_select`` and a weighted sum per axis (exact for any dtype in nearest mode, differentiable always).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .. import _creation, ops
from .. import _dtype as dt
from .._tensor import Tensor
from ..nn import functional as F
from ._ops_reduce import ints

__all__ = ["OPS"]


# -- Pad --------------------------------------------------------------------------------------------
def _pad_index(n: int, before: int, after: int, mode: str) -> list[int]:
    """Source positions of a padded axis of length ``n + before + after`` (reflect / edge / wrap)."""
    out = []
    for i in range(-before, n + after):
        if mode == "edge":
            j = min(max(i, 0), n - 1)
        elif mode == "wrap":
            j = i % n
        else:  # reflect, without repeating the border
            period = 2 * (n - 1) if n > 1 else 1
            j = i % period
            j = period - j if j >= n else j
        out.append(j)
    return out


def pad(a: Any, x: Tensor, pads: Any = None, value: Any = None, axes: Any = None) -> Tensor:
    if a.opset < 11:
        p, fill = list(a.get("pads", [])), a.get("value", 0.0)
    else:
        p, fill = ints(pads), (value.item() if isinstance(value, Tensor) and value.numel() else 0)
    mode = a.get("mode", "constant")
    dims = [d % x.ndim for d in ints(axes)] if axes is not None else list(range(x.ndim))
    k = len(dims)
    begin, end = [0] * x.ndim, [0] * x.ndim
    for i, d in enumerate(dims):
        begin[d], end[d] = p[i], p[k + i]
    if mode == "constant":
        tp: list[int] = []
        for d in reversed(range(x.ndim)):
            tp += [begin[d], end[d]]
        return F.pad(x, tp, value=fill)
    for d in range(x.ndim):  # negative amounts crop first
        if begin[d] < 0 or end[d] < 0:
            x = ops.narrow(x, d, max(-begin[d], 0), x.shape[d] - max(-begin[d], 0) - max(-end[d], 0))
            begin[d], end[d] = max(begin[d], 0), max(end[d], 0)
    for d in range(x.ndim):
        if begin[d] or end[d]:
            idx = _pad_index(x.shape[d], begin[d], end[d], mode)
            x = ops.index_select(x, d, _creation.tensor(idx, dtype=dt.int64, device=x.device))
    return x


# -- Resize -----------------------------------------------------------------------------------------
def _nearest(mode: str) -> Callable[[float, float], list[float]]:
    def coeffs(r: float, s: float) -> list[float]:
        if r == 1:
            return [0.0, 1.0]
        if mode == "round_prefer_floor":
            return [float(r <= 0.5), float(r > 0.5)]
        if mode == "round_prefer_ceil":
            return [float(r < 0.5), float(r >= 0.5)]
        return [1.0, 0.0] if mode == "floor" else [0.0, 1.0]

    return coeffs


def _cubic_kernel(x: float, a: float) -> float:
    x = abs(x)
    if x <= 1:
        return (a + 2) * x**3 - (a + 3) * x**2 + 1
    return a * x**3 - 5 * a * x**2 + 8 * a * x - 4 * a if x < 2 else 0.0


def _cubic(a: float, antialias: bool) -> Callable[[float, float], list[float]]:
    def coeffs(r: float, s: float) -> list[float]:
        if not antialias:
            return [_cubic_kernel(r + 1, a), _cubic_kernel(r, a), _cubic_kernel(1 - r, a), _cubic_kernel(2 - r, a)]
        s = min(s, 1.0)
        start = math.floor(-2 / s) + 1
        c = [_cubic_kernel(s * (i - r), a) for i in range(start, 2 - start)]
        return [v / sum(c) for v in c]

    return coeffs


def _linear(antialias: bool) -> Callable[[float, float], list[float]]:
    def coeffs(r: float, s: float) -> list[float]:
        if not antialias:
            return [1 - r, r]
        s = min(s, 1.0)
        start = math.floor(-1 / s) + 1
        c = [min(max(1 - abs((i - r) * s), 0.0), 1.0) for i in range(start, 2 - start)]
        return [v / sum(c) for v in c]

    return coeffs


def _source(mode: str, y: int, scale: float, n_in: int, n_out: int, roi: tuple[float, float] | None) -> float | None:
    """ONNX's coordinate transform: the input coordinate of output position ``y`` (None: extrapolate)."""
    width = scale * n_in
    if mode == "align_corners":
        return 0.0 if width == 1 else y * (n_in - 1) / (width - 1)
    if mode == "asymmetric":
        return y / scale
    if mode == "tf_crop_and_resize":
        lo, hi = roi or (0.0, 1.0)
        x = (hi - lo) * (n_in - 1) / 2 if width == 1 else y * (hi - lo) * (n_in - 1) / (width - 1)
        x += lo * (n_in - 1)
        return None if x < 0 or x > n_in - 1 else x
    if mode == "pytorch_half_pixel":
        return -0.5 if width == 1 else (y + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        offset = n_in / 2 * (1 - n_out / width)
        return offset + (y + 0.5) / scale - 0.5
    return (y + 0.5) / scale - 0.5  # half_pixel


Taps = tuple[list[list[int]], list[list[float]], list[bool]]


def _taps(n_in: int, n_out: int, scale: float, coeffs: Callable[[float, float], list[float]], a: Any,
          roi: tuple[float, float] | None, mode: str) -> Taps:  # fmt: skip
    """Per output position: the input positions read, their weights, and whether it is extrapolated."""
    idx, w, outside = [], [], []
    for y in range(n_out):
        x = _source(mode, y, scale, n_in, n_out, roi)
        outside.append(x is None)
        x = 0.0 if x is None else x
        r = 1.0 if x == math.floor(x) else x - math.floor(x)
        c = coeffs(r, scale)
        n = len(c)
        pad = -(-n // 2)
        xp = x + pad
        p = math.floor(xp)
        frac = xp - p
        if n % 2 == 0:
            off = -(n // 2) if frac == 0 else -(n // 2) + 1
        else:
            off = -((n - 1) // 2) + (0 if frac <= 0.5 else 1)
        taps = [p + off + j - pad for j in range(n)]
        if a.get("exclude_outside", 0):
            c = [0.0 if t < 0 or t >= n_in else v for t, v in zip(taps, c)]
            total = sum(c) or 1.0
            c = [v / total for v in c]
        idx.append([min(max(t, 0), n_in - 1) for t in taps])
        w.append(c)
    return idx, w, outside


def _resize_axis(x: Tensor, d: int, n_out: int, scale: float, coeffs: Callable[[float, float], list[float]], a: Any,
                 roi: tuple[float, float] | None, mode: str, nearest: bool) -> Tensor:  # fmt: skip
    n_in = x.shape[d]
    idx, w, outside = _taps(n_in, n_out, scale, coeffs, a, roi, mode)
    dev = x.device
    if nearest:  # one tap has weight 1
        pick = [row[max(range(len(c)), key=lambda j, c=c: c[j])] for row, c in zip(idx, w)]  # type: ignore[misc]
        y = ops.index_select(x, d, _creation.tensor(pick, dtype=dt.int64, device=dev))
    else:
        k = len(w[0]) if w else 1
        flat = [t for row in idx for t in row]
        g = ops.index_select(x, d, _creation.tensor(flat, dtype=dt.int64, device=dev))
        g = g.reshape(list(x.shape[:d]) + [n_out, k] + list(x.shape[d + 1 :]))
        weights = _creation.tensor(w, dtype=x.dtype, device=dev).reshape([n_out, k] + [1] * (x.ndim - d - 1))
        y = (g * weights).sum(d + 1)
    if any(outside):
        mask = _creation.tensor(outside, dtype=dt.bool_, device=dev).reshape([n_out] + [1] * (x.ndim - d - 1))
        y = ops.where(mask, _creation.full([], a.get("extrapolation_value", 0.0), dtype=y.dtype, device=dev), y)
    return y


def resize(a: Any, x: Tensor, roi: Any = None, scales: Any = None, sizes: Any = None) -> Tensor:
    if a.opset < 11:  # Resize-10 / Upsample: (X, scales), asymmetric coordinates
        scales, roi, sizes = roi, None, None
    r = x.ndim
    axes = [d % r for d in a.get("axes", [])] or list(range(r))
    s_list = [float(v) for v in scales.reshape(-1).tolist()] if isinstance(scales, Tensor) and scales.numel() else []
    z_list = ints(sizes) if isinstance(sizes, Tensor) and sizes.numel() else []
    roi_l = [float(v) for v in roi.reshape(-1).tolist()] if isinstance(roi, Tensor) and roi.numel() else []
    if len(s_list) == r or len(z_list) == r:
        axes = list(range(r))
    factor = [1.0] * r
    out = list(x.shape)
    if z_list:
        for i, d in enumerate(axes):
            factor[d], out[d] = z_list[i] / x.shape[d], z_list[i]
        policy = a.get("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            s = (min if policy == "not_larger" else max)(factor[d] for d in axes)
            for d in axes:
                factor[d], out[d] = s, int(s * x.shape[d] + 0.5)
    else:
        for i, d in enumerate(axes):
            factor[d], out[d] = s_list[i], int(s_list[i] * x.shape[d])
    mode = a.get("mode", "nearest")
    transform = a.get("coordinate_transformation_mode", "half_pixel") if a.opset >= 11 else "asymmetric"
    antialias = bool(a.get("antialias", 0))
    if mode == "nearest":
        coeffs = _nearest(a.get("nearest_mode", "round_prefer_floor") if a.opset >= 11 else "floor")
    elif mode == "cubic":
        coeffs = _cubic(a.get("cubic_coeff_a", -0.75), antialias)
    else:
        coeffs = _linear(antialias)
    y = x if mode == "nearest" or x.dtype.is_floating_point else x.double()
    for i, d in enumerate(axes):
        rd = (roi_l[i], roi_l[len(axes) + i]) if len(roi_l) == 2 * len(axes) else None
        if len(roi_l) == 2 * r:
            rd = (roi_l[d], roi_l[r + d])
        if out[d] == x.shape[d] and factor[d] == 1.0 and (rd is None or rd == (0.0, 1.0)):
            continue
        y = _resize_axis(y, d, out[d], factor[d], coeffs, a, rd, transform, mode == "nearest")
    if y.dtype != x.dtype:
        y = ops.round(y).clamp(_int_range(x.dtype)[0], _int_range(x.dtype)[1]).to(x.dtype)
    return y


def _int_range(dtype: Any) -> tuple[int, int]:
    bits = 8 * dtype.itemsize
    return (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if dtype.is_signed else (0, 2**bits - 1)


def upsample(a: Any, x: Tensor, scales: Any = None) -> Tensor:
    if scales is None:  # opset 7: scales as an attribute
        scales = _creation.tensor(list(a["scales"]), dtype=dt.float32)
    return resize(a, x, scales)


OPS: dict[str, Callable[..., Any]] = {"Pad": pad, "Resize": resize, "Upsample": upsample}
