"""max_unpool1d/2d/3d: the partial inverse of max pooling (values back at the indices of their maxima).

Built from ``scatter`` on the flattened spatial dims, so the gradient (a gather at the same indices) and
higher orders come from that operator.
"""

from __future__ import annotations

import math
from typing import Any

from ..._errors import DTypeError, OutOfRangeError, ShapeError
from ..._tensor import Tensor
from ...ops._indexing_gather import scatter
from ._conv import _tuple
from ._empty import on_one_sample

__all__ = ["max_unpool1d", "max_unpool2d", "max_unpool3d"]


def _max_unpool(
    input: Tensor, indices: Tensor, kernel_size: Any, stride: Any, padding: Any, output_size: Any, sp: int, op: str
) -> Tensor:
    if input.ndim not in (sp + 1, sp + 2):
        raise ShapeError(f"{op}: expected a {sp + 1}-d or {sp + 2}-d input, got shape {tuple(input.shape)}")
    if tuple(indices.shape) != tuple(input.shape):
        raise ShapeError(
            f"{op}: indices of shape {tuple(indices.shape)} must match input of shape {tuple(input.shape)}"
        )
    if indices.dtype.is_floating_point:
        raise DTypeError(f"{op}: indices must be int64, got {indices.dtype}")
    batched = input.ndim == sp + 2
    if batched and input.shape[0] == 0:  # an empty batch
        return on_one_sample(  # type: ignore[no-any-return]
            lambda x, i: _max_unpool(x, i, kernel_size, stride, padding, output_size, sp, op), input, indices
        )
    x, idx = (input, indices) if batched else (input.unsqueeze(0), indices.unsqueeze(0))
    k = _tuple(kernel_size, sp, "kernel_size", op)
    s = _tuple(stride if stride is not None else kernel_size, sp, "stride", op)
    p = _tuple(padding, sp, "padding", op)
    default = tuple((x.shape[2 + i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(sp))
    if output_size is None:
        out = default
    else:
        out = tuple(int(v) for v in output_size)[-sp:]
        if len(out) != sp:
            raise ShapeError(f"{op}: output_size {tuple(output_size)} needs {sp} spatial sizes")
        for i in range(sp):
            if not default[i] - s[i] < out[i] < default[i] + s[i]:
                raise ShapeError(
                    f"{op}: output_size {out} is not valid for input {tuple(input.shape)}: expected sizes between "
                    f"{tuple(d - st + 1 for d, st in zip(default, s, strict=True))} and "
                    f"{tuple(d + st - 1 for d, st in zip(default, s, strict=True))}"
                )
    n, c = x.shape[0], x.shape[1]
    plane = math.prod(out)
    flat_idx = idx.reshape(n, c, -1)
    if flat_idx.numel() and not idx.is_meta and (int(flat_idx.min().item()) < 0 or int(flat_idx.max().item()) >= plane):
        raise OutOfRangeError(f"{op}: indices must lie in [0, {plane}) for an output of spatial size {out}")
    y = scatter(x.new_zeros((n, c, plane)), 2, flat_idx, x.reshape(n, c, -1))
    y = y.reshape((n, c) + out)
    return y if batched else y.squeeze(0)


def max_unpool1d(
    input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, output_size: Any = None
) -> Tensor:
    """Place each value of (N, C, L) at its index from ``max_pool1d(..., return_indices=True)``; zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1, "max_unpool1d")


def max_unpool2d(
    input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, output_size: Any = None
) -> Tensor:
    """Place each value of (N, C, H, W) at its index from ``max_pool2d(..., return_indices=True)``."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2, "max_unpool2d")


def max_unpool3d(
    input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, output_size: Any = None
) -> Tensor:
    """Place each value of (N, C, D, H, W) at its index from ``max_pool3d(..., return_indices=True)``."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3, "max_unpool3d")
