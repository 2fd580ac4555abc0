"""Padding as backend kernels: ``pad`` and its adjoint ``pad_backward`` in PyTorch's four modes.

The reference works one dim at a time with slices, ``flip``, ``concatenate`` and ``sum`` of ``xp`` (NumPy,
CuPy, and torch where its native kernels do not apply): padding is separable, so the gradient of a
multi-dim pad is the per-dim adjoints applied in turn. ``widths`` holds one ``(before, after)`` pair of
non-negative ints per dim (cropping is the operator's business).
"""

from __future__ import annotations

from typing import Any

Widths = tuple[tuple[int, int], ...]


def _sl(d: int, start: int, stop: int) -> tuple[slice, ...]:
    """The index of ``start:stop`` along dim ``d``."""
    return (slice(None),) * d + (slice(start, stop),)


class PadKernels:
    """Mixin of ``Backend`` (which supplies ``xp``)."""

    xp: Any

    def pad(self, x: Any, widths: Widths, mode: str, value: Any = 0) -> Any:
        """A new array: ``x`` with ``widths[d]`` added before/after dim ``d``; ``value`` (constant), the mirror
        image without the edge (reflect; width < size), the edge repeated (replicate), or the other end
        (circular; width <= size)."""
        xp = self.xp
        if mode == "constant":
            shape = tuple(n + lo + hi for n, (lo, hi) in zip(x.shape, widths, strict=True))
            out = xp.full(shape, value, dtype=x.dtype)
            out[tuple(slice(lo, lo + n) for n, (lo, _) in zip(x.shape, widths, strict=True))] = x
            return out
        padded = False
        for d, (lo, hi) in enumerate(widths):
            if not (lo or hi):
                continue
            n = x.shape[d]
            if mode == "reflect":
                parts = [xp.flip(x[_sl(d, 1, lo + 1)], axis=d), x, xp.flip(x[_sl(d, n - 1 - hi, n - 1)], axis=d)]
            elif mode == "replicate":
                edge = list(x.shape)
                parts = [x[_sl(d, 0, 1)], x, x[_sl(d, n - 1, n)]]
                edge[d] = lo
                parts[0] = xp.broadcast_to(parts[0], tuple(edge))
                edge[d] = hi
                parts[2] = xp.broadcast_to(parts[2], tuple(edge))
            else:  # circular
                parts = [x[_sl(d, n - lo, n)], x, x[_sl(d, 0, hi)]]
            x = xp.concatenate(parts, axis=d)
            padded = True
        return x if padded else xp.copy(x)

    def pad_backward(self, g: Any, widths: Widths, mode: str) -> Any:
        """The gradient of ``pad`` for the gradient ``g`` of its output: every padded element's gradient added
        to the input element it copies (nothing for constant padding)."""
        xp = self.xp
        if mode == "constant":
            return xp.copy(g[tuple(slice(lo, n - hi) for n, (lo, hi) in zip(g.shape, widths, strict=True))])
        for d, (lo, hi) in enumerate(widths):
            if not (lo or hi):
                continue
            n = g.shape[d] - lo - hi
            gx = xp.copy(g[_sl(d, lo, lo + n)])
            before, after = g[_sl(d, 0, lo)], g[_sl(d, lo + n, lo + n + hi)]
            if mode == "reflect":
                gx[_sl(d, 1, lo + 1)] += xp.flip(before, axis=d)
                gx[_sl(d, n - 1 - hi, n - 1)] += xp.flip(after, axis=d)
            elif mode == "replicate":
                gx[_sl(d, 0, 1)] += xp.sum(before, axis=d, keepdims=True)
                gx[_sl(d, n - 1, n)] += xp.sum(after, axis=d, keepdims=True)
            else:  # circular
                gx[_sl(d, n - lo, n)] += before
                gx[_sl(d, 0, hi)] += after
            g = gx
        return g if any(lo or hi for lo, hi in widths) else xp.copy(g)
