"""ONNX convolution, pooling and normalization operators as Ember ops.

ONNX writes padding as ``[begin_1, ..., begin_n, end_1, ..., end_n]`` and may ask for ``SAME_*``
auto-padding; Ember's layers take PyTorch's symmetric padding, so uneven padding is applied first with
``F.pad`` (zeros for convolutions, -inf for max pooling, a count mask for average pooling).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .. import _creation, ops
from .. import _dtype as dt
from .._tensor import Tensor
from ..nn import functional as F

__all__ = ["OPS", "pads_of"]

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONVT = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}
_MAX = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
_AVG = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}


def pads_of(a: Any, spatial: list[int], kernel: list[int], strides: list[int], dilations: list[int],
            ceil: bool = False) -> list[int]:  # fmt: skip
    """ONNX ``pads`` (begin..., end...) for the node, resolving ``auto_pad``."""
    n = len(spatial)
    auto = a.get("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        begin, end = [], []
        for i in range(n):
            out = -(-spatial[i] // strides[i])
            total = max((out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - spatial[i], 0)
            small, big = total // 2, total - total // 2
            begin.append(small if auto == "SAME_UPPER" else big)
            end.append(big if auto == "SAME_UPPER" else small)
        return begin + end
    if auto == "VALID":
        return [0] * (2 * n)
    return list(a.get("pads", [0] * (2 * n)))


def _torch_pad(pads: list[int]) -> list[int]:
    """ONNX (begin..., end...) over the spatial dims as ``F.pad``'s (last dim first) pairs."""
    n = len(pads) // 2
    out: list[int] = []
    for i in reversed(range(n)):
        out += [pads[i], pads[n + i]]
    return out


def _geometry(a: Any, x: Tensor, w_shape: list[int] | None = None) -> tuple[list[int], ...]:
    n = x.ndim - 2
    kernel = list(a.get("kernel_shape") or (w_shape[2:] if w_shape else []))
    strides = list(a.get("strides") or [1] * n)
    dilations = list(a.get("dilations") or [1] * n)
    return kernel, strides, dilations


def conv(a: Any, x: Tensor, w: Tensor, b: Any = None) -> Tensor:
    kernel, strides, dil = _geometry(a, x, list(w.shape))
    pads = pads_of(a, list(x.shape[2:]), kernel, strides, dil)
    n = len(kernel)
    if pads[:n] == pads[n:]:
        padding = pads[:n]
    else:
        x, padding = F.pad(x, _torch_pad(pads)), [0] * n
    return _CONV[n](x, w, b, strides, padding, dil, a.get("group", 1))


def conv_transpose(a: Any, x: Tensor, w: Tensor, b: Any = None) -> Tensor:
    n = x.ndim - 2
    kernel, strides, dil = _geometry(a, x, list(w.shape))
    out_pad = list(a.get("output_padding") or [0] * n)
    full = [(x.shape[2 + i] - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 for i in range(n)]
    if a.get("output_shape"):
        want = list(a["output_shape"])[-n:]
        total = [full[i] + out_pad[i] - want[i] for i in range(n)]
        upper = a.get("auto_pad", "NOTSET") == "SAME_UPPER"  # NOTSET splits as SAME_LOWER does
        pads = [t // 2 if upper else t - t // 2 for t in total] + [t - t // 2 if upper else t // 2 for t in total]
    elif a.get("auto_pad", "NOTSET") in ("SAME_UPPER", "SAME_LOWER"):
        total = [full[i] + out_pad[i] - x.shape[2 + i] * strides[i] for i in range(n)]
        upper = a["auto_pad"] == "SAME_UPPER"
        pads = [t // 2 if upper else t - t // 2 for t in total] + [t - t // 2 if upper else t // 2 for t in total]
    else:
        pads = pads_of(a, list(x.shape[2:]), kernel, strides, dil)
    group = a.get("group", 1)
    if pads[:n] == pads[n:] and all(p >= 0 for p in pads) and all(o < max(s, d) for o, s, d in
                                                                   zip(out_pad, strides, dil)):  # fmt: skip
        return _CONVT[n](x, w, b, strides, pads[:n], out_pad, group, dil)
    y = _CONVT[n](x, w, None, strides, 0, 0, group, dil)
    crop = []  # F.pad with negative amounts crops; output_padding extends the end
    for i in reversed(range(n)):
        crop += [-pads[i], out_pad[i] - pads[n + i]]
    y = F.pad(y, crop)
    return y if b is None else y + b.reshape([1, -1] + [1] * n)


def _pool_pads(a: Any, x: Tensor, kernel: list[int], strides: list[int], dil: list[int]) -> list[int]:
    return pads_of(a, list(x.shape[2:]), kernel, strides, dil, bool(a.get("ceil_mode", 0)))


def _symmetric_ok(pads: list[int], kernel: list[int], dil: list[int]) -> bool:
    n = len(kernel)
    return pads[:n] == pads[n:] and all(p <= ((k - 1) * d + 1) // 2 for p, k, d in zip(pads[:n], kernel, dil))


def max_pool(a: Any, x: Tensor) -> Any:
    kernel, strides, dil = _geometry(a, x)
    strides = list(a.get("strides") or [1] * len(kernel))
    pads = _pool_pads(a, x, kernel, strides, dil)
    n, ceil = len(kernel), bool(a.get("ceil_mode", 0))
    padded = x
    if _symmetric_ok(pads, kernel, dil):
        padding = pads[:n]
    else:
        low = float("-inf") if x.dtype.is_floating_point else -(2 ** (8 * x.dtype.itemsize - 1))
        padded, padding = F.pad(x, _torch_pad(pads), value=low), [0] * n
    src = padded if x.dtype.is_floating_point else padded.double()
    if a.n_out == 1:
        return _MAX[n](src, kernel, strides, padding, dil, ceil).to(x.dtype)
    y, idx = _MAX[n](src, kernel, strides, padding, dil, ceil, True)
    if padded is not x:  # indices of the padded input -> of the input
        coords: list[Tensor] = []
        inner = idx
        for d in reversed(range(n)):
            size = padded.shape[2 + d]
            coords.insert(0, inner % size - pads[d])
            inner = inner // size
        idx = coords[0]
        for d in range(1, n):
            idx = idx * x.shape[2 + d] + coords[d]
    spatial = math.prod(x.shape[2:])
    if a.get("storage_order", 0) and n == 2:
        h, w = x.shape[2:]
        idx = (idx % w) * h + idx // w
    nc = _creation.arange(x.shape[0] * x.shape[1], device=x.device).reshape([x.shape[0], x.shape[1]] + [1] * n)
    return y.to(x.dtype), idx + nc * spatial


def avg_pool(a: Any, x: Tensor) -> Tensor:
    kernel, strides, dil = _geometry(a, x)
    strides = list(a.get("strides") or [1] * len(kernel))
    pads = _pool_pads(a, x, kernel, strides, dil)
    n, ceil, include = len(kernel), bool(a.get("ceil_mode", 0)), bool(a.get("count_include_pad", 0))
    if any(d != 1 for d in dil):
        return _dilated_avg(x, kernel, strides, dil, pads, ceil, include)
    if _symmetric_ok(pads, kernel, dil) and (not ceil or not include or not any(pads)):
        return _AVG[n](x, kernel, strides, pads[:n], ceil, include)
    # uneven padding: the mean over the counted positions = pooled padded input / pooled mask of them
    tp = _torch_pad(pads)
    total = _AVG[n](F.pad(x, tp), kernel, strides, 0, ceil, True)
    ones = _creation.ones([1, 1, *x.shape[2:]], dtype=x.dtype, device=x.device)
    mask = F.pad(ones, tp, value=1.0 if include else 0.0)
    out = total / _AVG[n](mask, kernel, strides, 0, ceil, True)
    return _ceil_crop(out, x, kernel, strides, dil, pads) if ceil else out


def _ceil_crop(y: Tensor, x: Tensor, kernel: list[int], strides: list[int], dil: list[int], pads: list[int]) -> Tensor:
    """Ceil mode over explicitly padded input: drop a last window that would start in the end padding."""
    n = len(kernel)
    for i in range(n):
        span = (kernel[i] - 1) * dil[i] + 1
        out = -(-(x.shape[2 + i] + pads[i] + pads[n + i] - span) // strides[i]) + 1
        if (out - 1) * strides[i] >= x.shape[2 + i] + pads[i]:
            out -= 1
        if y.shape[2 + i] > out:
            y = ops.narrow(y, 2 + i, 0, out)
    return y


def _windows(x: Tensor, kernel: list[int], strides: list[int], dil: list[int]) -> Tensor:
    """Sliding windows of a padded input: shape (N, C, *out, prod(kernel))."""
    idx = []
    n = len(kernel)
    out_sizes = [(x.shape[2 + i] - (kernel[i] - 1) * dil[i] - 1) // strides[i] + 1 for i in range(n)]
    y = x
    for i in range(n):
        starts = _creation.arange(out_sizes[i], device=x.device) * strides[i]
        offs = _creation.arange(kernel[i], device=x.device) * dil[i]
        idx.append((starts.reshape(-1, 1) + offs.reshape(1, -1)).reshape(-1))
    for i in range(n):
        y = ops.index_select(y, 2 + 2 * i, idx[i]).reshape(
            list(y.shape[: 2 + 2 * i]) + [out_sizes[i], kernel[i]] + list(y.shape[3 + 2 * i :]))  # fmt: skip
    perm = [0, 1] + [2 + 2 * i for i in range(n)] + [3 + 2 * i for i in range(n)]
    return y.permute(*perm).reshape(list(y.shape[:2]) + out_sizes + [-1])


def _dilated_avg(x: Tensor, kernel: list[int], strides: list[int], dil: list[int], pads: list[int], ceil: bool,
                 include: bool) -> Tensor:  # fmt: skip
    n = len(kernel)
    tp = _torch_pad(pads)
    if ceil:  # extend the end so that a last partial window exists; it is not counted
        for i in range(n):
            size = x.shape[2 + i] + pads[i] + pads[n + i]
            span = (kernel[i] - 1) * dil[i] + 1
            extra = (-(size - span) % strides[i]) if size >= span else 0
            tp[2 * (n - 1 - i) + 1] += extra
    ones = _creation.ones([1, 1, *x.shape[2:]], dtype=x.dtype, device=x.device)
    s = _windows(F.pad(x, tp), kernel, strides, dil).sum(-1)
    if include:
        inner = _torch_pad(pads)
        counted = F.pad(F.pad(ones, inner, value=1.0), [t - i for t, i in zip(tp, inner)], value=0.0)
    else:
        counted = F.pad(ones, tp, value=0.0)
    return s / _windows(counted, kernel, strides, dil).sum(-1)


def lp_pool(a: Any, x: Tensor) -> Tensor:
    p = a.get("p", 2)
    kernel, strides, dil = _geometry(a, x)
    strides = list(a.get("strides") or [1] * len(kernel))
    pads = _pool_pads(a, x, kernel, strides, dil)
    tp = _torch_pad(pads)
    xp = ops.abs(F.pad(x, tp)) ** p
    if bool(a.get("ceil_mode", 0)) or any(d != 1 for d in dil):
        s = _windows(xp, kernel, strides, dil).sum(-1)
    else:
        s = _AVG[len(kernel)](xp, kernel, strides, 0, False, True) * math.prod(kernel)
    return s ** (1.0 / p)


def _global(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    return lambda a, x: fn(x, tuple(range(2, x.ndim)))


def _global_lp(a: Any, x: Tensor) -> Tensor:
    p = a.get("p", 2)
    return (ops.abs(x) ** p).sum(tuple(range(2, x.ndim)), keepdim=True) ** (1.0 / p)


def batch_norm(a: Any, x: Tensor, scale: Tensor, bias: Tensor, mean: Tensor, var: Tensor) -> Any:
    eps, momentum = a.get("epsilon", 1e-5), a.get("momentum", 0.9)
    training = bool(a.get("training_mode", 0)) or (a.opset < 9 and a.n_out > 1)
    shape = [1, -1] + [1] * (x.ndim - 2)
    if not training:
        if x.dtype == scale.dtype == mean.dtype and x.ndim >= 2:
            return F.batch_norm(x, mean, var, scale, bias, False, 0.0, eps)
        inv = (var.to(x.dtype) + eps).rsqrt().reshape(shape)
        return (x - mean.to(x.dtype).reshape(shape)) * inv * scale.to(x.dtype).reshape(shape) + bias.to(
            x.dtype).reshape(shape)  # fmt: skip
    dims = tuple(d for d in range(x.ndim) if d != 1)
    bm = x.mean(dims)
    bv = ((x - bm.reshape(shape)) ** 2).mean(dims)
    y = (x - bm.reshape(shape)) * (bv.reshape(shape) + eps).rsqrt() * scale.reshape(shape) + bias.reshape(shape)
    return y, mean * momentum + bm * (1 - momentum), var * momentum + bv * (1 - momentum)


def instance_norm(a: Any, x: Tensor, scale: Tensor, bias: Tensor) -> Tensor:
    dims = tuple(range(2, x.ndim))
    m = x.mean(dims, keepdim=True)
    v = ((x - m) ** 2).mean(dims, keepdim=True)
    shape = [1, -1] + [1] * (x.ndim - 2)
    return (x - m) * (v + a.get("epsilon", 1e-5)).rsqrt() * scale.reshape(shape) + bias.reshape(shape)


def layer_norm(a: Any, x: Tensor, scale: Tensor, bias: Any = None) -> Any:
    axis = a.get("axis", -1) % x.ndim
    eps = a.get("epsilon", 1e-5)
    norm_shape = list(x.shape[axis:])
    if a.n_out == 1 and list(scale.shape) == norm_shape and (bias is None or list(bias.shape) == norm_shape):
        return F.layer_norm(x, norm_shape, scale, bias, eps)
    dims = tuple(range(axis, x.ndim))
    xs = x.float() if x.dtype in (dt.float16, dt.bfloat16) else x
    m = xs.mean(dims, keepdim=True)
    inv = (((xs - m) ** 2).mean(dims, keepdim=True) + eps).rsqrt()
    y = ((xs - m) * inv).to(x.dtype) * scale
    if bias is not None:
        y = y + bias
    return y, m, inv


def group_norm(a: Any, x: Tensor, scale: Tensor, bias: Tensor) -> Tensor:
    g, eps = a["num_groups"], a.get("epsilon", 1e-5)
    n, c = x.shape[:2]
    xs = x.reshape(n, g, -1)
    m = xs.mean(-1, keepdim=True)
    v = ((xs - m) ** 2).mean(-1, keepdim=True)
    y = ((xs - m) * (v + eps).rsqrt()).reshape(x.shape)
    if a.opset < 21:  # scale and bias per group
        scale, bias = ops.repeat_interleave(scale, c // g), ops.repeat_interleave(bias, c // g)
    shape = [1, -1] + [1] * (x.ndim - 2)
    return y * scale.reshape(shape) + bias.reshape(shape)


def lrn(a: Any, x: Tensor) -> Tensor:
    size = a["size"]
    sq = (x * x).unsqueeze(1)
    before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
    sq = F.pad(sq, [0, 0] * (x.ndim - 2) + [before, after])
    kernel = [size] + [1] * (x.ndim - 2)
    summed = _AVG[x.ndim - 1](sq, kernel, 1, 0, False, True).squeeze(1) * size
    return x / (a.get("bias", 1.0) + a.get("alpha", 1e-4) / size * summed) ** a.get("beta", 0.75)


def lp_normalization(a: Any, x: Tensor) -> Tensor:
    p, axis = a.get("p", 2), a.get("axis", -1)
    norm = ops.abs(x).sum(axis, keepdim=True) if p == 1 else ops.sqrt((x * x).sum(axis, keepdim=True))
    return ops.where(norm == 0, _creation.zeros_like(x), x / norm)


def max_unpool(a: Any, x: Tensor, idx: Tensor, output_shape: Any = None) -> Tensor:
    n = x.ndim - 2
    kernel = list(a["kernel_shape"])
    strides = list(a.get("strides") or [1] * n)
    pads = list(a.get("pads") or [0] * (2 * n))
    inferred = list(x.shape[:2]) + [(x.shape[2 + i] - 1) * strides[i] + kernel[i] - pads[i] - pads[n + i]
                                    for i in range(n)]  # fmt: skip
    out = _creation.zeros(math.prod(inferred), dtype=x.dtype, device=x.device)
    y = out.scatter(0, idx.long().reshape(-1), x.reshape(-1)).reshape(inferred)
    if output_shape is None:
        return y
    shape = [int(v) for v in output_shape.tolist()]
    extra: list[int] = []  # a larger output_shape: zeros after the inferred one, as ONNX's reference does
    for d in reversed(range(y.ndim)):
        extra += [0, shape[d] - y.shape[d]]
    return F.pad(y, extra)


OPS: dict[str, Callable[..., Any]] = {
    "Conv": conv, "ConvTranspose": conv_transpose, "MaxPool": max_pool, "AveragePool": avg_pool,
    "LpPool": lp_pool, "GlobalAveragePool": _global(lambda x, d: x.mean(d, keepdim=True)),
    "GlobalMaxPool": _global(lambda x, d: ops.amax(x, d, keepdim=True)), "GlobalLpPool": _global_lp,
    "BatchNormalization": batch_norm, "InstanceNormalization": instance_norm,
    "LayerNormalization": layer_norm, "GroupNormalization": group_norm, "LRN": lrn,
    "LpNormalization": lp_normalization, "MaxUnpool": max_unpool,
}  # fmt: skip
