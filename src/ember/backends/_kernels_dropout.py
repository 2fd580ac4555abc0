"""Dropout's elementwise kernels: ``a * keep * scale (+ add)`` (dropout, its gradient, a residual add around a
dropped-out branch) and ReLU + dropout. The reference is written against ``self.xp`` (torch, CuPy).

On NumPy each is a chain of 2-5 passes over activations of up to 8.4M elements (the encoder's feed-forward), each
pass a trip through memory, and all of it ran on one thread. For C-contiguous float32/float64 arrays the NumPy
kernels run the chain block by block (64K elements: a block's arrays stay in the core's cache between the passes)
and hand the blocks to the kernel threads (``parallel_rows``). Every element is computed by the same operations in
the same order as the reference, so the bits are the same, at every thread count.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._kernels_threads import parallel_rows, recorded

#: elements per block (a float32 block and its mask: 320 KB)
_BLOCK = 1 << 16
_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_zeros: dict[Any, np.ndarray] = {}  # a block of zeros per dtype, made on first use


def _fits(a: Any, *others: Any) -> bool:
    """Whether the NumPy block kernels take ``a`` (and ``others``, all of ``a``'s shape, or None)."""
    return (
        isinstance(a, np.ndarray)
        and a.dtype in _DTYPES
        and a.flags.c_contiguous
        and all(o is None or (isinstance(o, np.ndarray) and o.shape == a.shape and o.flags.c_contiguous)
                for o in others)
    )  # fmt: skip


def _over_blocks(n: int, fn: Any) -> None:
    """``fn(i, j)`` over blocks of ``range(n)``, the blocks on the kernel threads."""
    size = min(_BLOCK, n) or 1

    def part(b0: int, b1: int) -> None:
        for i in range(b0 * size, min(b1 * size, n), size):
            fn(i, min(i + size, n))

    parallel_rows(-(-n // size), n, part)


@recorded
def _scaled_np(a: np.ndarray, keep: np.ndarray, scale: float, add: np.ndarray | None) -> np.ndarray:
    out = np.empty(a.shape, a.dtype)
    af, kf, of = a.reshape(-1), keep.reshape(-1), out.reshape(-1)
    xf = None if add is None else add.reshape(-1)

    def block(i: int, j: int) -> None:
        o = of[i:j]
        np.multiply(af[i:j], kf[i:j], out=o)
        o *= scale
        if xf is not None:
            o += xf[i:j]

    _over_blocks(a.size, block)
    return out


@recorded
def _relu_dropout_np(x: np.ndarray, keep: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    y, mask = np.empty(x.shape, x.dtype), np.empty(x.shape, np.bool_)
    xf, kf, yf, mf = x.reshape(-1), keep.reshape(-1), y.reshape(-1), mask.reshape(-1)
    zeros = _zeros.get(x.dtype)
    if zeros is None or zeros.size < min(_BLOCK, x.size):
        zeros = _zeros[x.dtype] = np.zeros(_BLOCK, x.dtype)

    def block(i: int, j: int) -> None:
        xb, kb, yb, mb = xf[i:j], kf[i:j], yf[i:j], mf[i:j]
        np.less_equal(xb, 0, out=mb)
        np.greater(kb, mb, out=mb)  # keep and not (x <= 0)
        np.maximum(xb, zeros[: j - i], out=yb)  # (against zeros: NumPy's maximum with a scalar 0 branches)
        yb *= kb
        yb *= scale

    _over_blocks(x.size, block)
    return y, mask


class DropoutKernels:
    """Mixed into ``Backend`` (``xp`` and ``relu`` come from it)."""

    xp: Any
    relu: Any

    def dropout_scaled(self, a: Any, keep: Any, scale: float, add: Any = None) -> Any:
        """``a * keep * scale``, plus ``add`` when given (``keep`` a bool mask of ``a``'s shape, or broadcasting
        to it in the reference)."""
        if _fits(a, keep, add) and keep.dtype == np.bool_ and (add is None or add.dtype == a.dtype):
            return _scaled_np(a, keep, scale, add)
        y = a * keep
        y *= scale
        if add is not None:
            y += add
        return y

    def relu_dropout(self, x: Any, keep: Any, scale: float) -> tuple[Any, Any]:
        """``(relu(x) * keep * scale, keep & ~(x <= 0))``: the output and the mask its gradient passes through (a
        NaN input passes, as PyTorch's ``threshold_backward`` on its NaN output)."""
        if _fits(x, keep) and keep.dtype == np.bool_:
            return _relu_dropout_np(x, keep, scale)  # type: ignore[no-any-return]
        xp = self.xp
        mask = xp.logical_and(keep, xp.logical_not(x <= 0))
        y = self.relu(x)
        y *= keep
        y *= scale
        return y, mask
