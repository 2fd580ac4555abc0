"""2-d max pooling on the CPU through torch's channels-last kernel, with every (sample, channel) plane as a channel.

torch's kernel for contiguous (N, C, H, W) inputs visits one window element at a time (scalar code, ~4 ns an input
element on LeNet-5's first pool); its channels-last kernel runs the same window scan over a vector of channels.
Viewing the planes of a contiguous input as the ``N * C`` channels of one image, ``(1, N * C, H, W)``, and making
that channels-last (one transposing copy) lets the vector kernel serve any batch: LeNet-5's pools, one thread,
thread CPU time, indices included: (64, 6, 28, 28) 1,370 -> 410 us, (64, 16, 10, 10) 560 -> 110 us (torch 2.13).

The result is the same bits: each lane runs the scalar kernel's rule (a window's first strict maximum in row-major
order, a NaN taken whenever met so the last NaN wins, -inf windows at their first element), and its indices are
positions within a plane as the (N, C, H, W) kernel's are (tests/backends/test_torch_pool_planes.py). Used where it
pays: float32/float64, at least 16 planes (fewer: no full vector), at most ``MAX_ELEMENTS`` input elements (at
(32, 32, 32, 32), 2^20 elements, it neither gains nor loses: its copies leave the cache).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

__all__ = ["max_pool2d_planes_last", "MIN_PLANES", "MAX_ELEMENTS"]

MIN_PLANES = 16
MAX_ELEMENTS = 1 << 20

_FLOATS = (torch.float32, torch.float64)


def max_pool2d_planes_last(
    pool: Callable[..., Any], x: Any, k: Any, s: Any, p: Any, d: Any, ceil_mode: bool, indices: bool
) -> tuple[Any, Any] | None:
    """``(y, indices or None)`` of 2-d max pooling of a contiguous (N, C, H, W) CPU tensor, both contiguous, by
    ``pool`` (``aten::max_pool2d_with_indices``) on its planes as channels; None where the path does not apply."""
    if x.ndim != 4 or x.dtype not in _FLOATS or x.device.type != "cpu" or not x.is_contiguous():
        return None
    planes = x.shape[0] * x.shape[1]
    if planes < MIN_PLANES or x.numel() > MAX_ELEMENTS or x.numel() == 0:
        return None
    h, w = x.shape[2], x.shape[3]
    y, idx = pool(x.view(1, planes, h, w).contiguous(memory_format=torch.channels_last), k, s, p, d, ceil_mode)
    shape = (*x.shape[:2], *y.shape[2:])
    return y.contiguous().view(shape), (idx.contiguous().view(shape) if indices else None)
