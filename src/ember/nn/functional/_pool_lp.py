"""Power-average (LP) pooling, fractional max pooling, and PyTorch's ``*_with_indices`` pooling names.

Both are compositions of Ember operations (autodiff gives the gradients): LP pooling is an average pool
of ``x ** p``, rescaled and rooted, exactly as PyTorch computes it; fractional max pooling picks its
pseudo-random window starts from one uniform sample per (N, C) and dim (``_random_samples``, as PyTorch's
kernels do) and takes the max over the gathered windows.
"""

from __future__ import annotations

import math
import struct
from typing import Any

from ..._creation import rand, tensor
from ..._errors import ShapeError, ValueRangeError
from ..._tensor import Tensor
from ...ops import relu, sign
from ._conv import _tuple
from ._pool import (
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    adaptive_max_pool3d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
)

__all__ = [
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices",
    "fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices", "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_pool1d_with_indices",
    "max_pool2d_with_indices", "max_pool3d_with_indices",
]  # fmt: skip

_AVG = {1: avg_pool1d, 2: avg_pool2d, 3: avg_pool3d}


def _lp_pool(input: Tensor, norm_type: float, kernel_size: Any, stride: Any, ceil_mode: bool, sp: int) -> Tensor:
    k = _tuple(kernel_size, sp, "kernel_size", f"lp_pool{sp}d")
    out = _AVG[sp](input.pow(norm_type), k, stride, 0, ceil_mode)
    return (sign(out) * relu(out.abs())).mul(math.prod(k)).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False
              ) -> Tensor:  # fmt: skip
    """``(sum over the window of x ** p) ** (1 / p)`` over (N, C, L)."""
    return _lp_pool(input, float(norm_type), kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False
              ) -> Tensor:  # fmt: skip
    """``(sum over the window of x ** p) ** (1 / p)`` over (N, C, H, W)."""
    return _lp_pool(input, float(norm_type), kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False
              ) -> Tensor:  # fmt: skip
    """``(sum over the window of x ** p) ** (1 / p)`` over (N, C, D, H, W)."""
    return _lp_pool(input, float(norm_type), kernel_size, stride, ceil_mode, 3)


def _starts(sample: float, n: int, o: int, k: int, single: bool) -> list[int]:
    """PyTorch's pseudo-random window starts for one dim, computed in the input's precision as its kernel does
    (``single``: every operation rounded to float32, which rounding the float64 result of one operation gives)."""
    f = _f32 if single else float
    seq = [0] * o
    if o > 1:
        alpha = f(f(n - k) / f(o - 1))
        seq[: o - 1] = [int(f(f(i + f(sample)) * alpha)) - int(f(f(sample) * alpha)) for i in range(o - 1)]
    if o > 0:
        seq[o - 1] = n - k
    return seq


def _f32(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", x))[0])


def _fractional(input: Tensor, kernel_size: Any, output_size: Any, output_ratio: Any, return_indices: bool,
                samples: Any, sp: int) -> Any:  # fmt: skip
    op = f"fractional_max_pool{sp}d"
    if input.ndim not in (sp + 1, sp + 2):
        raise ShapeError(f"{op}: expected a {sp + 1}-d or {sp + 2}-d input, got shape {tuple(input.shape)}")
    x = input if input.ndim == sp + 2 else input.unsqueeze(0)
    n, c, spatial = x.shape[0], x.shape[1], x.shape[2:]
    k = _tuple(kernel_size, sp, "kernel_size", op)
    if output_size is None:
        if output_ratio is None:
            raise ValueRangeError(f"{op}: give output_size or output_ratio")
        ratio = tuple(output_ratio) if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * sp
        if len(ratio) != sp or not all(isinstance(r, (int, float)) and 0 < r < 1 for r in ratio):
            raise ValueRangeError(f"{op}: output_ratio must be a number or {sp} numbers in (0, 1), got {output_ratio}")
        out = tuple(int(spatial[i] * float(ratio[i])) for i in range(sp))
    else:
        out = _tuple(output_size, sp, "output_size", op)
    for i in range(sp):
        if out[i] + k[i] - 1 > spatial[i]:
            raise ShapeError(f"{op}: output size {out} with kernel {k} is too large for input size {tuple(spatial)}")
    if n == 0 and c > 0:  # an empty batch: the empty result, still in the graph (PyTorch refuses 0 channels)
        values = x.reshape(n, c, math.prod(spatial)).sum(-1).reshape(n, c, *(1,) * sp).expand(n, c, *out)
        return (values, values.detach().long()) if return_indices else values
    u = rand(n, c, sp, dtype=x.dtype, device=x.device) if samples is None else samples
    draws = u.detach().float().tolist()
    # PyTorch's samples are in reverse order of the dims (w, h) for 2-d and (t, h, w) for 3-d
    order = (1, 0) if sp == 2 else (0, 1, 2)
    starts = [[[_starts(draws[a][b][order[d]], spatial[d], out[d], k[d], x.dtype.itemsize <= 4) for d in range(sp)]
               for b in range(c)] for a in range(n)]  # fmt: skip
    dev = x.device
    flat = x.reshape(n, c, -1)
    strides = [math.prod(spatial[d + 1 :]) for d in range(sp)]
    # the flat input index of every (output position, window offset): one gather, then a max over the window
    index = []
    for a in range(n):
        for b in range(c):
            pos = [0]
            for d in range(sp):
                offs = [s + j for s in starts[a][b][d] for j in range(k[d])]  # (out[d] * k[d])
                pos = [p + o * strides[d] for p in pos for o in offs]
            index.append(pos)
    idx = tensor(index, device=dev).reshape(n, c, -1)
    win = flat.gather(2, idx)
    # (n, c, o0, k0, o1, k1, ...) -> (n, c, o0, o1, ..., k0 * k1 ...)
    shape = [n, c] + [v for d in range(sp) for v in (out[d], k[d])]
    perm = [0, 1] + [2 + 2 * d for d in range(sp)] + [3 + 2 * d for d in range(sp)]
    win = win.reshape(*shape).permute(*perm).reshape(n, c, *out, -1)
    g = idx.reshape(*shape).permute(*perm).reshape(n, c, *out, -1)
    values, arg = win.max(-1)
    indices = g.gather(-1, arg.unsqueeze(-1)).squeeze(-1)
    if input.ndim == sp + 1:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return (values, indices) if return_indices else values


def fractional_max_pool2d(
    input: Tensor, kernel_size: Any, output_size: Any = None, output_ratio: Any = None, return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> Any:  # fmt: skip
    """Max over windows of (N, C, H, W) placed at pseudo-random, increasing starts (Graham's fractional pooling)."""
    return _fractional(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 2)


def fractional_max_pool3d(
    input: Tensor, kernel_size: Any, output_size: Any = None, output_ratio: Any = None, return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> Any:  # fmt: skip
    """Max over windows of (N, C, D, H, W) placed at pseudo-random, increasing starts."""
    return _fractional(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 3)


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None) -> Any:  # fmt: skip
    return _fractional(input, kernel_size, output_size, output_ratio, True, _random_samples, 2)


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None) -> Any:  # fmt: skip
    return _fractional(input, kernel_size, output_size, output_ratio, True, _random_samples, 3)


def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> Any:  # fmt: skip
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> Any:  # fmt: skip
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> Any:  # fmt: skip
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    return adaptive_max_pool3d(input, output_size, True)


for _name in (
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices",
    "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices", "max_pool1d_with_indices",
    "max_pool2d_with_indices", "max_pool3d_with_indices",
):  # fmt: skip
    globals()[_name].__doc__ = f"``{_name[:-13]}(..., return_indices=True)``: ``(output, indices)``."
