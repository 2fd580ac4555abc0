"""ONNX ``GridSample``, ``NonMaxSuppression``, ``Col2Im`` and ``RoiAlign`` as Ember ops."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .. import _creation, ops
from .. import _dtype as dt
from .._tensor import Tensor
from ..nn import functional as F

__all__ = ["OPS"]


# -- GridSample -------------------------------------------------------------------------------------
def _reflect(x: Tensor, lo: float, hi: float) -> Tensor:
    """Coordinates reflected into [lo, hi] (as many bounces as needed)."""
    span = hi - lo
    if span <= 0:
        return x * 0 + lo
    d = ops.remainder(x - lo, 2 * span)
    return ops.where(d > span, 2 * span - d, d) + lo


def _cubic_w(t: Tensor) -> list[Tensor]:
    a = -0.75

    def k(v: Tensor) -> Tensor:
        v = ops.abs(v)
        return ops.where(v <= 1, ((a + 2) * v - (a + 3)) * v * v + 1, ((a * v - 5 * a) * v + 8 * a) * v - 4 * a)

    return [k(t + 1), k(t), k(1 - t), k(2 - t)]


def grid_sample(a: Any, x: Tensor, grid: Tensor) -> Tensor:
    n, c = x.shape[:2]
    spatial = list(x.shape[2:])
    k = len(spatial)
    mode = {"linear": "bilinear", "cubic": "bicubic"}.get(a.get("mode", "bilinear"), a.get("mode", "bilinear"))
    pad, align = a.get("padding_mode", "zeros"), bool(a.get("align_corners", 0))
    out_shape = list(grid.shape[1:-1])
    g = grid.reshape(n, -1, k).to(x.dtype)
    coords = []
    for i in range(k):  # grid's last axis is (x, y[, z]): the innermost spatial dim first
        size = spatial[k - 1 - i]
        u = g[..., i]
        u = (u + 1) / 2 * (size - 1) if align else ((u + 1) * size - 1) / 2
        if pad == "border":
            u = ops.clamp(u, 0, size - 1)
        elif pad == "reflection":
            u = _reflect(u, 0, size - 1) if align else ops.clamp(_reflect(u, -0.5, size - 0.5), 0, size - 1)
        coords.append(u)
    coords = coords[::-1]  # now in the order of x's spatial dims
    flat = x.reshape(n, c, -1)
    out = None
    taps: list[list[tuple[Tensor, Any]]]
    if mode == "nearest":
        taps = [[(ops.round(u), None)] for u in coords]
    elif mode == "bicubic":
        taps = []
        for u in coords:
            f = ops.floor(u)
            taps.append([(f + j - 1, w) for j, w in enumerate(_cubic_w(u - f))])
    else:
        taps = []
        for u in coords:
            f = ops.floor(u)
            taps.append([(f, 1 - (u - f)), (f + 1, u - f)])
    for combo in _product(taps):
        idx = _creation.zeros(g.shape[:2], dtype=dt.int64, device=x.device)
        weight: Any = 1.0
        valid: Any = None
        for d, (pos, w) in enumerate(combo):
            size = spatial[d]
            if pad == "zeros":
                ok = (pos >= 0) & (pos <= size - 1)
                valid = ok if valid is None else valid & ok
            elif pad == "border" or mode == "bicubic":
                pos = ops.clamp(pos, 0, size - 1)
            else:
                pos = _reflect(pos, 0, size - 1) if align else ops.clamp(_reflect(pos, -0.5, size - 0.5), 0, size - 1)
            idx = idx * size + ops.clamp(pos, 0, size - 1).long()
            if w is not None:
                weight = weight * w
        v = ops.gather(flat, 2, idx.unsqueeze(1).expand(n, c, idx.shape[1]))
        if valid is not None:
            v = v * valid.unsqueeze(1).to(x.dtype)
        term = v if isinstance(weight, float) else v * weight.unsqueeze(1)
        out = term if out is None else out + term
    assert out is not None
    return out.reshape([n, c, *out_shape])


def _product(lists: list[list[Any]]) -> list[list[Any]]:
    out: list[list[Any]] = [[]]
    for options in lists:
        out = [prev + [o] for prev in out for o in options]
    return out


# -- NonMaxSuppression ------------------------------------------------------------------------------
def _iou(b: list[float], c: list[float], center: bool) -> float:
    if center:
        b = [b[0] - b[2] / 2, b[1] - b[3] / 2, b[0] + b[2] / 2, b[1] + b[3] / 2]
        c = [c[0] - c[2] / 2, c[1] - c[3] / 2, c[0] + c[2] / 2, c[1] + c[3] / 2]
    y1, x1, y2, x2 = min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3])
    v1, u1, v2, u2 = min(c[0], c[2]), min(c[1], c[3]), max(c[0], c[2]), max(c[1], c[3])
    ih, iw = max(0.0, min(y2, v2) - max(y1, v1)), max(0.0, min(x2, u2) - max(x1, u1))
    inter = ih * iw
    union = (y2 - y1) * (x2 - x1) + (v2 - v1) * (u2 - u1) - inter
    return inter / union if union > 0 else 0.0


def non_max_suppression(a: Any, boxes: Tensor, scores: Tensor, max_out: Any = None, iou_thr: Any = None,
                        score_thr: Any = None) -> Tensor:  # fmt: skip
    """Greedy NMS per batch and class (selection only: not differentiable, computed on the host)."""
    limit = int(max_out.item()) if isinstance(max_out, Tensor) and max_out.numel() else 0
    thr = float(iou_thr.item()) if isinstance(iou_thr, Tensor) and iou_thr.numel() else 0.0
    floor = float(score_thr.item()) if isinstance(score_thr, Tensor) and score_thr.numel() else None
    center = bool(a.get("center_point_box", 0))
    bl, sl = boxes.tolist(), scores.tolist()
    picked: list[list[int]] = []
    for b, per_class in enumerate(sl):
        for cls, sc in enumerate(per_class):
            order = sorted((i for i in range(len(sc)) if floor is None or sc[i] > floor), key=lambda i: -sc[i])
            keep: list[int] = []
            for i in order:
                if limit and len(keep) >= limit:
                    break
                if all(_iou(bl[b][i], bl[b][j], center) <= thr for j in keep):
                    keep.append(i)
            picked += [[b, cls, i] for i in keep]
    return _creation.tensor(picked, dtype=dt.int64, device=boxes.device).reshape(len(picked), 3)


# -- Col2Im -----------------------------------------------------------------------------------------
def col2im(a: Any, x: Tensor, image_shape: Tensor, block_shape: Tensor) -> Tensor:
    size = [int(v) for v in image_shape.tolist()]
    block = [int(v) for v in block_shape.tolist()]
    k = len(size)
    dil = list(a.get("dilations") or [1] * k)
    strides = list(a.get("strides") or [1] * k)
    pads = list(a.get("pads") or [0] * (2 * k))
    if k == 2 and pads[:2] == pads[2:]:
        return F.fold(x, size, block, dil, pads[:2], strides)
    n, ck = x.shape[:2]
    c = ck // math.prod(block)
    padded = [size[i] + pads[i] + pads[k + i] for i in range(k)]
    outs = [(padded[i] - dil[i] * (block[i] - 1) - 1) // strides[i] + 1 for i in range(k)]
    cols = x.reshape(n, c, math.prod(block), math.prod(outs))
    idx = []
    for bpos in _product([list(range(b)) for b in block]):
        for opos in _product([list(range(o)) for o in outs]):
            lin = 0
            for i in range(k):
                lin = lin * padded[i] + opos[i] * strides[i] + bpos[i] * dil[i]
            idx.append(lin)
    index = _creation.tensor(idx, dtype=dt.int64, device=x.device)
    flat = _creation.zeros(n, c, math.prod(padded), dtype=x.dtype, device=x.device)
    src = cols.reshape(n, c, -1)
    out = ops.scatter_add(flat, 2, index.reshape(1, 1, -1).expand(n, c, index.shape[0]), src).reshape(n, c, *padded)
    for i in range(k):
        out = ops.narrow(out, 2 + i, pads[i], size[i])
    return out


# -- DeformConv -------------------------------------------------------------------------------------
def deform_conv(a: Any, x: Tensor, w: Tensor, offset: Tensor, b: Any = None, mask: Any = None) -> Tensor:
    """Convolution reading each kernel tap at a learned offset (bilinear, zero outside the input)."""
    n, c, h, wd = x.shape
    oc, _, kh, kw = w.shape
    sh, sw = list(a.get("strides") or [1, 1])
    dh, dw = list(a.get("dilations") or [1, 1])
    pt, pl = list(a.get("pads") or [0, 0, 0, 0])[:2]
    groups, og = a.get("group", 1), a.get("offset_group", 1)
    oh, ow = offset.shape[2:]
    k, length = kh * kw, oh * ow
    dev = x.device
    base_y = (_creation.arange(oh, device=dev) * sh - pt).reshape(1, 1, 1, oh, 1).to(x.dtype)
    base_x = (_creation.arange(ow, device=dev) * sw - pl).reshape(1, 1, 1, 1, ow).to(x.dtype)
    ky = (_creation.arange(kh, device=dev) * dh).reshape(kh, 1).expand(kh, kw).reshape(1, 1, k, 1, 1).to(x.dtype)
    kx = (_creation.arange(kw, device=dev) * dw).reshape(1, kw).expand(kh, kw).reshape(1, 1, k, 1, 1).to(x.dtype)
    off = offset.reshape(n, og, k, 2, oh, ow)
    py = (base_y + ky + off[:, :, :, 0]).reshape(n, og, k * length)
    px = (base_x + kx + off[:, :, :, 1]).reshape(n, og, k * length)
    flat = x.reshape(n, og, c // og, h * wd)
    y0, x0 = ops.floor(py), ops.floor(px)
    cols: Any = 0
    for yy, wy in ((y0, 1 - (py - y0)), (y0 + 1, py - y0)):
        for xx, wx in ((x0, 1 - (px - x0)), (x0 + 1, px - x0)):
            ok = ((yy >= 0) & (yy <= h - 1) & (xx >= 0) & (xx <= wd - 1)).to(x.dtype)
            idx = (ops.clamp(yy, 0, h - 1) * wd + ops.clamp(xx, 0, wd - 1)).long()
            v = ops.gather(flat, 3, idx.unsqueeze(2).expand(n, og, c // og, k * length))
            cols = cols + v * (wy * wx * ok).unsqueeze(2)
    cols = cols.reshape(n, og, c // og, k, length)
    if mask is not None:
        cols = cols * mask.reshape(n, og, 1, k, length)
    cols = cols.reshape(n, groups, (c // groups) * k, length)
    out = ops.matmul(w.reshape(groups, oc // groups, -1), cols).reshape(n, oc, oh, ow)
    return out if b is None else out + b.reshape(1, -1, 1, 1)


# -- RoiAlign ---------------------------------------------------------------------------------------
def _bilinear_taps(y: float, x: float, h: int, w: int) -> list[tuple[int, float]]:
    """The four (flat index, weight) taps of one sample point (ONNX's RoiAlign rules at the borders)."""
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return [(0, 0.0)] * 4
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
    if y0 >= h - 1:
        y0 = y1 = h - 1
        y = float(y0)
    if x0 >= w - 1:
        x0 = x1 = w - 1
        x = float(x0)
    ly, lx = y - y0, x - x0
    hy, hx = 1 - ly, 1 - lx
    return [(y0 * w + x0, hy * hx), (y0 * w + x1, hy * lx), (y1 * w + x0, ly * hx), (y1 * w + x1, ly * lx)]


def roi_align(a: Any, x: Tensor, rois: Tensor, batch: Tensor) -> Tensor:
    """Average (or max) of bilinear samples per output bin of each region (regions are read on the host)."""
    oh, ow = a.get("output_height", 1), a.get("output_width", 1)
    ratio, scale = a.get("sampling_ratio", 0), a.get("spatial_scale", 1.0)
    half = a.get("coordinate_transformation_mode", "half_pixel") == "half_pixel"
    n, c, h, w = x.shape
    flat = x.reshape(n, c, h * w)
    outs = []
    for (x1, y1, x2, y2), b in zip(rois.tolist(), batch.tolist()):
        off = 0.5 if half else 0.0
        sx, sy, ex, ey = x1 * scale - off, y1 * scale - off, x2 * scale - off, y2 * scale - off
        rw, rh = (ex - sx, ey - sy) if half else (max(ex - sx, 1.0), max(ey - sy, 1.0))
        bh, bw = rh / oh, rw / ow
        gh = ratio if ratio > 0 else math.ceil(rh / oh)
        gw = ratio if ratio > 0 else math.ceil(rw / ow)
        idx, wts = [], []
        for ph in range(oh):
            for pw in range(ow):
                for iy in range(gh):
                    yy = sy + ph * bh + (iy + 0.5) * bh / gh
                    for ix in range(gw):
                        for k, v in _bilinear_taps(yy, sx + pw * bw + (ix + 0.5) * bw / gw, h, w):
                            idx.append(k)
                            wts.append(v)
        g = ops.index_select(flat[int(b)], 1, _creation.tensor(idx, dtype=dt.int64, device=x.device))
        g = g * _creation.tensor(wts, dtype=x.dtype, device=x.device)
        g = g.reshape(c, oh * ow, gh * gw, 4)
        if a.get("mode", "avg") == "max":
            outs.append(ops.amax(g, (2, 3)).reshape(c, oh, ow))
        else:
            outs.append((g.sum((2, 3)) / (gh * gw)).reshape(c, oh, ow))
    return ops.stack(outs) if outs else _creation.zeros(0, c, oh, ow, dtype=x.dtype, device=x.device)


OPS: dict[str, Callable[..., Any]] = {
    "GridSample": grid_sample, "NonMaxSuppression": non_max_suppression, "Col2Im": col2im, "RoiAlign": roi_align,
    "DeformConv": deform_conv,
}  # fmt: skip
