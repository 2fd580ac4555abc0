"""An empty batch through kernels that need a sample (convolution, pooling, unpooling, per-sample norms)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..._tensor import Tensor
from ...ops._indexing_join import cat


def on_one_sample(fn: Callable[..., Any], *batch: Tensor) -> Any:
    """``fn(*batch)`` for tensors whose batch dim (0) is empty: one zero sample runs and is cut off again.

    The result is what PyTorch gives: empty outputs, empty input gradients, zero weight gradients (the cut
    sample's gradient is zero). The array kernels stay free of a special case for a batch of nothing.
    """
    full = [cat([t, t.new_zeros((1,) + tuple(t.shape[1:]))]) for t in batch]
    out = fn(*full)
    return tuple(o[:0] for o in out) if isinstance(out, tuple) else out[:0]
