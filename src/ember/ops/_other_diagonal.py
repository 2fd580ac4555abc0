"""Diagonals and triangles (torch docs, "Other Operations"): ``diagonal``, ``diag*``, ``tril``/``triu`` and
their index forms, ``block_diag``, ``trace``.
"""

from __future__ import annotations

import builtins
from typing import Any

from .._creation import tensor
from .._dtype import as_dtype, int64
from .._errors import DTypeError, ShapeError
from .._tensor import Tensor
from ..autograd._autocast import autocast_op
from ..autograd._function import Op
from ._indexing_join import cat
from ._indexing_view import ViewOp, movedim, reshape
from ._other_shape import pad
from ._reduction import sum
from ._util import norm_dim, promote_tensors

__all__ = [
    "block_diag",
    "diag",
    "diag_embed",
    "diagflat",
    "diagonal",
    "trace",
    "tril",
    "tril_indices",
    "triu",
    "triu_indices",
]
METHODS = [n for n in __all__ if n not in {"block_diag", "tril_indices", "triu_indices"}] + ["fill_diagonal_"]


class _Tri(Op):
    saves_inputs = False

    def forward(self, x: Any, k: int, upper: bool) -> Any:
        self.k, self.upper = k, upper
        xp = self.backend.xp
        return xp.triu(x, k) if upper else xp.tril(x, k)

    def backward(self, g: Tensor) -> tuple[Tensor, None, None]:
        return _Tri.apply(g, self.k, self.upper), None, None


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims (elements above ``diagonal`` zeroed)."""
    if input.ndim < 2:
        raise ShapeError(f"tril: expected a tensor of rank >= 2, got shape {tuple(input.shape)}")
    return _Tri.apply(input, diagonal, False)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dims."""
    if input.ndim < 2:
        raise ShapeError(f"triu: expected a tensor of rank >= 2, got shape {tuple(input.shape)}")
    return _Tri.apply(input, diagonal, True)


class Diagonal(ViewOp):
    def forward(self, x: Any, offset: int, d1: int, d2: int) -> Any:
        self.args, self.shape = (offset, d1, d2), x.shape
        lo, hi = (d1, d2) if d1 < d2 else (d2, d1)
        return self.backend.diagonal(x, offset if d1 < d2 else -offset, lo, hi)

    def backward(self, g: Tensor) -> tuple[Tensor, None, None, None]:
        return DiagonalBackward.apply(g, self.shape, *self.args), None, None, None


class DiagonalBackward(Op):
    saves_inputs = False

    def forward(self, g: Any, shape: tuple[int, ...], offset: int, d1: int, d2: int) -> Any:
        self.args = (offset, d1, d2)
        xp = self.backend.xp
        z = xp.zeros(shape, dtype=g.dtype)
        zt = xp.moveaxis(z, (d1, d2), (-2, -1))  # a writable view
        i = xp.arange(g.shape[-1])
        zt[..., i + max(-offset, 0), i + max(offset, 0)] = g
        return z

    def backward(self, gg: Tensor) -> tuple[Tensor, None, None, None, None]:
        return Diagonal.apply(gg, *self.args), None, None, None, None


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of dims ``dim1``/``dim2`` as a new last dim (a view)."""
    d1, d2 = norm_dim(dim1, input.ndim, "diagonal"), norm_dim(dim2, input.ndim, "diagonal")
    if d1 == d2:
        raise ShapeError(f"diagonal: dim1 and dim2 are the same dim ({dim1})")
    return Diagonal.apply(input, offset, d1, d2)


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Square matrices in dims ``dim1``/``dim2`` of the result (the last two by default) with ``input``'s last dim
    on their ``offset`` diagonal."""
    d1, d2 = (norm_dim(d, input.ndim + 1, "diag_embed") for d in (dim1, dim2))
    if d1 == d2:
        raise ShapeError(f"diag_embed: diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input.shape[-1] + (offset if offset >= 0 else -offset)
    shape = input.shape[:-1] + (n, n)
    out = DiagonalBackward.apply(input, shape, offset, input.ndim - 1, input.ndim)
    return out if (d1, d2) == (input.ndim - 1, input.ndim) else movedim(out, (-2, -1), (d1, d2))


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A 1-d input gives a diagonal matrix; a 2-d input gives its diagonal."""
    if input.ndim == 1:
        return diag_embed(input, diagonal)
    if input.ndim == 2:
        return globals()["diagonal"](input, diagonal)  # type: ignore[no-any-return]
    raise ShapeError(f"diag: expected a 1-d or 2-d tensor, got shape {tuple(input.shape)}")


@autocast_op("trace")
def trace(input: Tensor) -> Tensor:
    """Sum of the main diagonal of a matrix."""
    if input.ndim != 2:
        raise ShapeError(f"trace: expected a matrix, got shape {tuple(input.shape)}")
    return sum(diagonal(input))


def block_diag(*tensors: Tensor) -> Tensor:
    """A block-diagonal matrix from 0-d, 1-d or 2-d blocks."""

    # promoted as given (a 0-d block is weak, as in PyTorch), then every block made 2-d
    blocks = [reshape(t, (1, -1)) if t.ndim < 2 else t for t in promote_tensors(list(tensors))]
    rows = builtins.sum(b.shape[0] for b in blocks)
    cols = builtins.sum(b.shape[1] for b in blocks)
    out, c = [], 0
    for b in blocks:
        out.append(pad(b, (c, cols - c - b.shape[1])))
        c += b.shape[1]
    res = cat(out, 0)
    return res if res.shape == (rows, cols) else reshape(res, (rows, cols))


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """A 2-d tensor with the flattened ``input`` on its ``offset``-th diagonal."""
    return diag_embed(reshape(input, -1), offset)


def _tri_indices(op: str, row: int, col: int, offset: int, upper: bool, device: Any, dtype: Any) -> Tensor:
    d = int64 if dtype is None else as_dtype(dtype)
    if d.kind not in "iu":  # PyTorch: "not implemented for 'Double'"
        raise DTypeError(f"{op}: dtype must be an integer dtype (int64 or int32), got {d}")

    rows, cols = [], []
    for i in range(row):
        for j in range(col):
            if (j - i >= offset) if upper else (j - i <= offset):
                rows.append(i)
                cols.append(j)
    return tensor([rows, cols], dtype=d, device=device).reshape(2, len(rows))


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None) -> Tensor:
    """Row and column indices of the lower triangle of a ``row x col`` matrix, as a (2, n) tensor."""
    return _tri_indices("tril_indices", row, col, offset, False, device, dtype)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None) -> Tensor:
    """Row and column indices of the upper triangle of a ``row x col`` matrix, as a (2, n) tensor."""
    return _tri_indices("triu_indices", row, col, offset, True, device, dtype)


def fill_diagonal_(input: Tensor, fill_value: Any, wrap: builtins.bool = False) -> Tensor:
    """Write ``fill_value`` on the main diagonal of ``input`` (2-d, or n-d with equal sizes) in place.

    A tall matrix's diagonal stops at its last column unless ``wrap=True``, which starts it again ``cols + 1``
    rows further down, as NumPy's and PyTorch's do.
    """
    shape = input.shape
    if len(shape) < 2 or (len(shape) > 2 and len(set(shape)) != 1):
        raise ShapeError(
            f"fill_diagonal_: needs a 2-d tensor or one whose dims all have the same size, got {tuple(shape)}"
        )
    n = 1
    for size in shape:
        n *= size
    if len(shape) == 2:
        step, end = shape[1] + 1, n if wrap else min(shape[0], shape[1]) * shape[1]
    else:
        step, end = builtins.sum(shape[0] ** k for k in builtins.range(len(shape))), n
    rows: list[list[int]] = [[] for _ in shape]
    for flat in builtins.range(0, end, step):  # the diagonal's flat positions, as one index per dim
        rest = flat
        for d in builtins.range(len(shape) - 1, -1, -1):
            rest, r = divmod(rest, shape[d])
            rows[d].append(r)
    from ._inplace import _write_inplace

    _write_inplace(input, tuple(tensor(r, dtype=int64) for r in rows), fill_value)
    return input
