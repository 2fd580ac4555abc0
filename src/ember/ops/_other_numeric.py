"""More of the torch docs' "Other Operations": ``histogram``/``histogramdd``, ``combinations``, ``unravel_index``,
``cumulative_trapezoid``, ``gradient``; and ``mode`` (reductions) and ``frexp`` (pointwise).

Differentiable ones (``combinations``, ``cumulative_trapezoid``, ``gradient``) are compositions of Ember
operations; the counting ones are not differentiable, as in PyTorch.
"""

from __future__ import annotations

import builtins
import itertools
from collections import namedtuple
from typing import Any

from .._errors import ShapeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._function import Op
from ._util import norm_dim

__all__ = ["combinations", "cumulative_trapezoid", "frexp", "gradient", "histogram", "histogramdd", "mode",
           "unravel_index"]  # fmt: skip
METHODS = ["frexp", "histogram", "mode"]

HistogramOut = namedtuple("HistogramOut", ["hist", "bin_edges"])
HistogramddOut = namedtuple("HistogramddOut", ["hist", "bin_edges"])
ModeOut = namedtuple("ModeOut", ["values", "indices"])
FrexpOut = namedtuple("FrexpOut", ["mantissa", "exponent"])


def _edges(values: Tensor, bins: Any, range: Any, op: str) -> Tensor:
    """The bin edges: given as a tensor, or ``bins`` equal-width bins over ``range`` (the data's when None)."""
    from .._creation import linspace

    if isinstance(bins, Tensor):
        if bins.ndim != 1 or bins.numel() < 2:
            raise ShapeError(f"{op}: bins must be a 1-d tensor of at least 2 edges, got shape {tuple(bins.shape)}")
        return bins.to(values.dtype)
    n = int(bins)
    if n < 1:
        raise ValueRangeError(f"{op}: bins must be > 0, but got {n}")
    if range is not None:
        lo, hi = (float(v) for v in range)
    elif values.numel():
        lo, hi = float(values.min().item()), float(values.max().item())
    else:  # an empty input: PyTorch's edges span [0, 1]
        lo, hi = 0.0, 1.0
    if lo > hi:
        raise ValueRangeError(f"{op}: max must be larger than min, but got min {lo} max {hi}")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5  # PyTorch widens an empty range to one of width 1
    return linspace(lo, hi, n + 1, dtype=values.dtype, device=values.device)


def _bin_index(values: Tensor, edges: Tensor) -> Tensor:
    """Each value's bin (-1 outside): bins are [e_i, e_i+1), the last one closed on the right."""
    from ._other_math import searchsorted

    n = edges.shape[0] - 1
    idx = searchsorted(edges, values, right=True) - 1
    idx = idx - ((values == edges[-1]) & (idx == n)).long()  # the right edge belongs to the last bin
    inside = (values >= edges[0]) & (values <= edges[-1])
    return idx * inside.long() - (~inside).long()


def histogram(input: Tensor, bins: Any, *, range: Any = None, weight: Tensor | None = None,
              density: bool = False) -> HistogramOut:  # fmt: skip
    """Counts (or summed ``weight``) of ``input``'s values in bins, and the bin edges."""
    x = input.detach().reshape(-1)
    edges = _edges(x, bins, range, "histogram")
    out = histogramdd(x.unsqueeze(1), [edges], weight=None if weight is None else weight.reshape(-1),
                      density=density)  # fmt: skip
    return HistogramOut(out.hist, edges)


def histogramdd(input: Tensor, bins: Any, *, range: Any = None, weight: Tensor | None = None,
                density: bool = False) -> HistogramddOut:  # fmt: skip
    """The histogram of points (the last dim of ``input`` holds their D coordinates) over a D-dim grid of bins."""
    from .._creation import zeros

    x = input.detach()
    d = x.shape[-1]
    pts = x.reshape(-1, d)
    per_dim = bins if isinstance(bins, (list, tuple)) else [bins] * d
    if len(per_dim) != d:
        raise ShapeError(f"histogramdd: expected {d} sequences of bins, got {len(per_dim)}")
    ranges = [None] * d if range is None else [range[2 * i : 2 * i + 2] for i in builtins.range(d)]
    edges = [_edges(pts[:, i], b, r, "histogramdd") for i, (b, r) in enumerate(zip(per_dim, ranges))]
    sizes = [e.shape[0] - 1 for e in edges]
    linear = zeros(pts.shape[0], dtype="int64", device=x.device)
    valid = linear == 0
    for i, e in enumerate(edges):
        b = _bin_index(pts[:, i], e)
        valid = valid & (b >= 0)
        linear = linear * sizes[i] + b.clamp(min=0)
    w = weight.detach().reshape(-1).to(x.dtype) if weight is not None else (pts[:, 0] * 0 + 1)
    counts = zeros(max(1, int(__import__("math").prod(sizes))), dtype=x.dtype, device=x.device)
    counts = counts.index_add(0, linear, w * valid.to(x.dtype))
    hist = counts.reshape(*sizes)
    if density:
        width = None
        for i, e in enumerate(edges):
            shape = [1] * d
            shape[i] = sizes[i]
            wi = (e[1:] - e[:-1]).reshape(*shape)
            width = wi if width is None else width * wi
        hist = hist / (hist.sum() * width)
    return HistogramddOut(hist, edges)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-``r`` combinations of the 1-d ``input``'s elements, one per row (``itertools``' order)."""
    if input.ndim != 1:
        raise ShapeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(builtins.range(input.shape[0]), r))
    if r == 0:
        return input[:0]
    if not rows:  # (0, r), as PyTorch's
        return input[:0].reshape(0, r)
    from .._creation import tensor

    return input[tensor(rows, device=input.device)]


def unravel_index(indices: Any, shape: Any) -> tuple[Tensor, ...]:
    """The coordinates in ``shape`` of flat (row-major) ``indices``: one tensor per dim."""
    from .._creation import tensor

    idx = indices if isinstance(indices, Tensor) else tensor(indices)
    if idx.dtype.is_floating_point or idx.dtype.name == "bool":
        raise TypeError(f"expected 'indices' to be integer dtype, but got {idx.dtype}")
    dims = (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)
    total = int(__import__("math").prod(dims))
    if idx.numel() and (int(idx.min().item()) < -total or int(idx.max().item()) >= total):
        raise ValueRangeError(f"index is out of bounds for shape {dims}")
    rem = idx.long() % total if total else idx.long()
    out = []
    for n in reversed(dims):
        out.append(rem % n)
        rem = rem // n
    return tuple(reversed(out))


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    """The running trapezoid-rule integral of ``y`` along ``dim`` (one element fewer)."""
    d = norm_dim(dim, y.ndim, "cumulative_trapezoid")
    n = y.shape[d]
    a, b = y.narrow(d, 0, max(n - 1, 0)), y.narrow(d, 1, max(n - 1, 0))
    if x is not None:
        step = x.diff(dim=dim if x.ndim > 1 else -1)
        if x.ndim == 1:
            shape = [1] * y.ndim
            shape[d] = n - 1
            step = step.reshape(*shape)
        return ((a + b) * step / 2).cumsum(d)
    return ((a + b) * ((1.0 if dx is None else dx) / 2)).cumsum(d)


def gradient(input: Tensor, *, spacing: Any = 1, dim: Any = None, edge_order: int = 1) -> tuple[Tensor, ...]:
    """NumPy-style numerical gradient: central differences inside, one-sided (``edge_order`` 1 or 2) at the
    edges; ``spacing`` is a number, one per dim, or coordinates (a tensor per dim)."""
    if edge_order not in (1, 2):
        raise ValueRangeError(f"torch.gradient only supports edge_order=1 and edge_order=2, got {edge_order}")
    dims = list(builtins.range(input.ndim)) if dim is None else [
        norm_dim(d, input.ndim, "gradient") for d in (dim if isinstance(dim, (list, tuple)) else [dim])]  # fmt: skip
    for d in dims:
        if dims.count(d) > 1:
            raise ShapeError(f"gradient: dim {d} appears multiple times in the list of dims")
    spacing = 1 if spacing is None else spacing  # None: unit spacing, as PyTorch
    sp = list(spacing) if isinstance(spacing, (list, tuple)) else [spacing] * len(dims)
    if len(sp) != len(dims):
        raise ShapeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                         f"arguments to have the same length, but got a spacing argument of length {len(sp)} and "
                         f"a dim argument of length {len(dims)}.")  # fmt: skip
    out = []
    for d, h in zip(dims, sp):
        n = input.shape[d]
        if n < edge_order + 1:
            raise ShapeError(f"torch.gradient expected each dimension size to be at least edge_order+1, got {n}")
        out.append(_gradient_1d(input, d, h, edge_order))
    return tuple(out)


def _gradient_1d(f: Tensor, d: int, h: Any, edge_order: int) -> Tensor:
    from ._indexing_join import cat

    n = f.shape[d]

    def at(i: int, k: int = 1) -> Tensor:
        return f.narrow(d, i if i >= 0 else n + i, k)

    if isinstance(h, Tensor):  # coordinates: NumPy's non-uniform formulas
        shape = [1] * f.ndim
        shape[d] = n - 2
        dx = h.diff()
        h1, h2 = dx[:-1].reshape(*shape), dx[1:].reshape(*shape)
        inner = (h1 * h1 * f.narrow(d, 2, n - 2) - h2 * h2 * f.narrow(d, 0, n - 2)
                 + (h2 * h2 - h1 * h1) * f.narrow(d, 1, n - 2)) / (h1 * h2 * (h1 + h2))  # fmt: skip
        first = (at(1) - at(0)) / dx[0]
        last = (at(-1) - at(-2)) / dx[-1]
        if edge_order == 2:
            a, b = dx[0], dx[1]
            first = -(2 * a + b) / (a * (a + b)) * at(0) + (a + b) / (a * b) * at(1) - a / (b * (a + b)) * at(2)
            a, b = dx[-2], dx[-1]
            last = b / (a * (a + b)) * at(-3) - (a + b) / (a * b) * at(-2) + (2 * b + a) / (b * (a + b)) * at(-1)
        return cat([first, inner, last], d)
    h = float(h)
    inner = (f.narrow(d, 2, n - 2) - f.narrow(d, 0, n - 2)) / (2 * h)
    if edge_order == 1:
        first, last = (at(1) - at(0)) / h, (at(-1) - at(-2)) / h
    else:
        first = (-1.5 * at(0) + 2 * at(1) - 0.5 * at(2)) / h
        last = (0.5 * at(-3) - 2 * at(-2) + 1.5 * at(-1)) / h
    return cat([first, inner, last], d)


def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> ModeOut:
    """The most frequent value along ``dim`` (the smallest among ties) and the index of its last occurrence."""
    d = norm_dim(dim, input.ndim, "mode") if input.ndim else 0
    x = input.detach() if input.ndim else input.detach().reshape(1)
    moved = x.movedim(d, -1)
    n = moved.shape[-1]
    if n == 0:
        raise ShapeError(f"mode(): cannot compute the mode of an empty dimension (shape {tuple(input.shape)})")
    same = moved.unsqueeze(-1) == moved.unsqueeze(-2)  # (..., n, n)
    counts = same.sum(-1)
    best = counts.amax(-1, keepdim=True)
    candidates = counts == best
    big = moved.max().item() if moved.numel() else 0
    vals = moved.where(candidates, big).amin(-1, keepdim=True) if moved.dtype.name != "bool" else moved.where(
        candidates, True).amin(-1, keepdim=True)  # fmt: skip
    from .._creation import arange

    pos = arange(n, device=x.device)
    last = (pos * (moved == vals).long() - (moved != vals).long()).amax(-1, keepdim=True)
    values, indices = vals.squeeze(-1), last.squeeze(-1)
    if keepdim and input.ndim:
        values, indices = values.unsqueeze(d), indices.unsqueeze(d)
    if not input.ndim:
        values, indices = values.reshape(()), indices.reshape(())
    if input.requires_grad:  # the values are the input's elements: their gradient goes to the picked positions
        picked = input.gather(d, indices if keepdim else indices.unsqueeze(d)) if input.ndim else input
        values = picked if keepdim or not input.ndim else picked.squeeze(d)
    return ModeOut(values, indices)


class Frexp(Op):
    """``frexp``'s mantissa and int32 exponent; the mantissa's gradient is ``g / 2 ** exponent`` (PyTorch's)."""

    saves_inputs = False

    def forward(self, x: Any) -> Any:
        xp = self.backend.xp
        m, e = xp.frexp(x)
        self.exponent = xp.astype(e, xp.int32)
        return m, self.exponent

    def backward(self, g: Tensor, _ge: Any) -> Tensor:
        xp = self.backend.xp
        return g / Tensor._make(xp.exp2(xp.astype(self.exponent, g._data.dtype)), self.backend)


def frexp(input: Tensor) -> FrexpOut:
    """``input = mantissa * 2 ** exponent`` with ``0.5 <= |mantissa| < 1`` (int32 exponents); the mantissa is
    differentiable (``d mantissa / d input = 2 ** -exponent``), the exponent is not."""
    if not input.dtype.is_floating_point:
        raise TypeError(f"torch.frexp() only supports floating-point dtypes, got {input.dtype}")
    return FrexpOut(*Frexp.apply(input))
