"""Helpers shared by the reference kernels: window geometry, a scratch-buffer pool, a gradient select."""

from __future__ import annotations

import functools
import threading
from typing import Any

import numpy as np

Ints = tuple[int, ...]
Pads = tuple[tuple[int, int], ...]


def ndindex(k: Ints) -> tuple[Ints, ...]:
    """Every offset inside a window of shape ``k``, row-major."""
    return _ndindex(tuple(k))


@functools.lru_cache(maxsize=256)
def _ndindex(k: Ints) -> tuple[Ints, ...]:
    out: list[Ints] = [()]
    for n in k:
        out = [o + (i,) for o in out for i in range(n)]
    return tuple(out)


def out_shape(spatial: Ints, k: Ints, s: Ints, pads: Pads, d: Ints) -> Ints:
    return tuple((spatial[i] + pads[i][0] + pads[i][1] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(len(k)))


def _shift(off: int, k_d: int, s: int, lo: int, n: int, o: int) -> tuple[int, int, int]:
    """For one kernel offset along one dim: the first and last+1 output index whose input position
    ``j * s + off * d - lo`` lies inside ``[0, n)``, and the input position of the first one."""
    base = off * k_d - lo
    j0 = max(0, -(base // s)) if base < 0 else 0
    j1 = min(o, (n - 1 - base) // s + 1) if n - 1 - base >= 0 else 0
    j1 = max(j1, j0)
    return j0, j1, j0 * s + base


def offset_slices(off: Ints, k_d: Ints, s: Ints, lo: Ints, spatial: Ints, out: Ints,
                  lead: int = 0) -> tuple[tuple[slice, ...], tuple[slice, ...]] | None:  # fmt: skip
    """(output slices, input slices) of the windows whose element at kernel offset ``off`` is inside the
    input (after ``lead`` whole leading axes), or None when none is. Cached: a LeNet-5 step asks for the same
    50 regions every time, and working them out took ~0.5 ms of its ~17."""
    return _offset_slices(tuple(off), tuple(k_d), tuple(s), tuple(lo), tuple(spatial), tuple(out), lead)


@functools.lru_cache(maxsize=4096)
def _offset_slices(off: Ints, k_d: Ints, s: Ints, lo: Ints, spatial: Ints, out: Ints,
                   lead: int) -> tuple[tuple[slice, ...], tuple[slice, ...]] | None:  # fmt: skip
    dst, src = [slice(None)] * lead, [slice(None)] * lead
    for i in range(len(off)):
        j0, j1, p0 = _shift(off[i], k_d[i], s[i], lo[i], spatial[i], out[i])
        if j1 <= j0:
            return None
        dst.append(slice(j0, j1))
        src.append(slice(p0, p0 + (j1 - j0 - 1) * s[i] + 1, s[i]))
    return tuple(dst), tuple(src)


def pool_geometry(spatial: Ints, k: Ints, s: Ints, p: Ints, d: Ints, ceil_mode: bool) -> tuple[Pads, Ints]:
    """PyTorch's pooling output size, and the padding (low, high) that makes every window fit."""
    pads, out = [], []
    for i in range(len(k)):
        n, eff = spatial[i], d[i] * (k[i] - 1) + 1
        num = n + 2 * p[i] - eff
        o = (-(-num // s[i]) if ceil_mode else num // s[i]) + 1
        if ceil_mode and (o - 1) * s[i] >= n + p[i]:
            o -= 1  # the last window must start inside the input or the left padding
        pads.append((p[i], p[i] + max(0, (o - 1) * s[i] + eff - (n + 2 * p[i]))))
        out.append(o)
    return tuple(pads), tuple(out)


class Workspace:
    """Free scratch arrays kept by (shape, dtype) and handed out again, so that the large temporaries of
    convolutions (im2col columns, padded copies) do not go back to the OS allocator every step.

    Only arrays that no result can alias are given back. At most ``per_key`` arrays per key and
    ``max_bytes`` in all are kept (the oldest keys are dropped first), so memory stays bounded.
    """

    def __init__(self, xp: Any, per_key: int = 2, max_bytes: int = 256 << 20) -> None:
        self.xp = xp
        self.per_key = per_key
        self.max_bytes = max_bytes
        self._free: dict[tuple[Any, ...], list[Any]] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def take(self, shape: Ints, dtype: Any) -> Any:
        """An uninitialised array of ``shape`` and ``dtype`` (reused when one is free)."""
        key = (tuple(shape), dtype)
        with self._lock:
            free = self._free.get(key)
            if free:
                a = free.pop()
                self._bytes -= a.nbytes
                return a
        return self.xp.empty(shape, dtype=dtype)

    def zeros(self, shape: Ints, dtype: Any) -> Any:
        a = self.take(shape, dtype)
        a.fill(0)
        return a

    def give(self, a: Any) -> None:
        """Return ``a`` for reuse; the caller must hold no other reference to it or to views of it."""
        if a is None or a.base is not None:
            return
        key = (tuple(a.shape), a.dtype)
        with self._lock:
            free = self._free.setdefault(key, [])
            if len(free) >= self.per_key or a.nbytes > self.max_bytes:
                return
            free.append(a)
            self._bytes += a.nbytes
            while self._bytes > self.max_bytes:
                oldest = next(iter(self._free))
                lst = self._free.pop(oldest)
                self._bytes -= sum(x.nbytes for x in lst)

    def clear(self) -> None:
        with self._lock:
            self._free.clear()
            self._bytes = 0


def select_grad(xp: Any, g: Any, hit: Any, out: Any = None) -> Any:
    """``g`` where ``hit``, +0.0 elsewhere, exactly (a select, not ``g * hit``: an inf or NaN gradient stays at
    its element and gives no NaN beside it, as PyTorch's scatter of a window's gradient to its maximum). The
    gradient's bits times 0 or 1 as integers of its size: one pass, no branches. ``out`` (of ``g``'s dtype, any
    strides) receives it; else a new array."""
    bits = np.dtype(f"i{g.dtype.itemsize}")
    if out is None:
        return xp.multiply(g.view(bits), hit, dtype=bits).view(g.dtype)
    xp.multiply(g.view(bits), hit, out=out.view(bits))
    return out
