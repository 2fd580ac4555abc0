"""``torch.*`` utilities composed from other operators (their gradients come from those): diff, trace,
cross, kron, tensordot, cdist, atleast_1d/2d/3d, broadcast_tensors, hstack/vstack/dstack/column_stack,
tensor_split/hsplit/vsplit/dsplit, ravel, block_diag, diagflat, tril_indices/triu_indices, addmv, addr,
addbmm, chain_matmul, type_as, select, index_fill, logspace, vander, cov, corrcoef, trapezoid; and the
counting/searching family without gradient: argwhere, bincount, histc, searchsorted, bucketize, isin.
"""

from __future__ import annotations

import builtins
import itertools
from typing import Any

from .._dtype import int64
from .._errors import DTypeError, ShapeError, ValueRangeError
from .._tensor import Tensor
from ._elementwise import _float, where
from ._index import nonzero
from ._join import cat, stack
from ._layout import diag_embed, diagonal
from ._linalg import einsum, matmul
from ._reduce import mean, sum
from ._shape import _transpose, expand, reshape, unsqueeze
from ._util import broadcast_shapes, norm_dim

__all__ = [
    "addbmm", "addmv", "addr", "argwhere", "atleast_1d", "atleast_2d", "atleast_3d", "bincount", "block_diag",
    "broadcast_tensors", "bucketize", "cdist", "chain_matmul", "column_stack", "corrcoef", "cov", "cross", "diagflat",
    "diff", "dsplit", "dstack", "ger", "histc", "hsplit", "hstack", "index_fill", "isin", "kron", "logspace",
    "ravel", "row_stack", "searchsorted", "select", "tensor_split", "tensordot", "trace", "trapezoid", "trapz",
    "tril_indices", "triu_indices", "vander", "vsplit", "vstack",
]  # fmt: skip
_NOT_METHODS = {"atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_tensors", "bucketize", "cdist",
                "chain_matmul", "column_stack", "dstack", "hstack", "isin", "logspace", "row_stack", "searchsorted",
                "tensordot", "trapezoid", "trapz", "tril_indices", "triu_indices", "vander", "vstack"}  # fmt: skip
METHODS = [n for n in __all__ if n not in _NOT_METHODS] + ["type_as"]


# -- differences, products ---------------------------------------------------------------------------
def diff(
    input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None, append: Tensor | None = None
) -> Tensor:
    """``n``-th forward difference along ``dim`` (``prepend``/``append`` are joined first)."""
    d = norm_dim(dim, input.ndim, "diff")
    x = input
    if prepend is not None or append is not None:
        x = cat([t for t in (prepend, input, append) if t is not None], d)
    for _ in range(n):
        m = x.shape[d]
        hi, lo = x.narrow(d, 1, m - 1), x.narrow(d, 0, m - 1)
        x = hi ^ lo if x.dtype.name == "bool" else hi - lo
    return x


def trace(input: Tensor) -> Tensor:
    """Sum of the main diagonal of a matrix."""
    if input.ndim != 2:
        raise ShapeError(f"trace: expected a matrix, got shape {input.shape}")
    return sum(diagonal(input))


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """Cross product of 3-vectors along ``dim`` (the first dim of size 3 when None)."""
    shape = broadcast_shapes(input.shape, other.shape, op="cross")
    a, b = expand(input, *shape), expand(other, *shape)
    if dim is None:
        dims = [i for i, s in enumerate(shape) if s == 3]
        if not dims:
            raise ShapeError(f"cross: no dim of size 3 in shape {shape}")
        d = dims[0]
    else:
        d = norm_dim(dim, len(shape), "cross")
    if shape[d] != 3:
        raise ShapeError(f"cross: dim {d} has size {shape[d]}, expected 3")
    a0, a1, a2 = (a.select(d, i) for i in range(3))
    b0, b1, b2 = (b.select(d, i) for i in range(3))
    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)


def kron(input: Tensor, other: Tensor) -> Tensor:
    """Kronecker product."""
    nd = builtins.max(input.ndim, other.ndim)
    a = reshape(input, (1,) * (nd - input.ndim) + tuple(input.shape))
    b = reshape(other, (1,) * (nd - other.ndim) + tuple(other.shape))
    inter_a, inter_b = [], []
    for sa, sb in zip(a.shape, b.shape, strict=True):
        inter_a += [sa, 1]
        inter_b += [1, sb]
    out = reshape(a, tuple(inter_a)) * reshape(b, tuple(inter_b))
    return reshape(out, tuple(sa * sb for sa, sb in zip(a.shape, b.shape, strict=True)))


def tensordot(a: Tensor, b: Tensor, dims: Any = 2) -> Tensor:
    """Sum over ``dims`` (an int: the last dims of ``a`` with the first of ``b``; or two lists of dims)."""
    if isinstance(dims, int):
        if dims < 0 or dims > builtins.min(a.ndim, b.ndim):
            raise ShapeError(f"tensordot: dims={dims} is out of range for shapes {a.shape} and {b.shape}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = [[norm_dim(int(d), t.ndim, "tensordot") for d in ds] for ds, t in zip(dims, (a, b), strict=True)]
    if len(da) != len(db) or any(a.shape[i] != b.shape[j] for i, j in zip(da, db, strict=True)):
        raise ShapeError(f"tensordot: dims {da} of {a.shape} and {db} of {b.shape} do not match")
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    sa = [next(letters) for _ in range(a.ndim)]
    sb = [next(letters) for _ in range(b.ndim)]
    for i, j in zip(da, db, strict=True):
        sb[j] = sa[i]
    out = [c for i, c in enumerate(sa) if i not in da] + [c for j, c in enumerate(sb) if j not in db]
    return einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", a, b)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: Any = None) -> Tensor:
    """Pairwise ``p``-norm distances between the rows of ``x1`` (..., P, M) and ``x2`` (..., R, M)."""
    if x1.ndim < 2 or x2.ndim < 2 or x1.shape[-1] != x2.shape[-1]:
        raise ShapeError(f"cdist: expected (..., P, M) and (..., R, M), got {x1.shape} and {x2.shape}")
    d = unsqueeze(x1, -2) - unsqueeze(x2, -3)  # (..., P, R, M)
    if p == 2.0:  # the gradient at a zero distance is 0, as in PyTorch
        sq = sum(d * d, -1)
        safe = where(sq > 0, sq, 1.0)
        return where(sq > 0, safe.sqrt(), 0.0)
    return d.norm(p, -1)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    return _scaled(input, matmul(mat, vec), beta, alpha)


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``."""
    if vec1.ndim != 1 or vec2.ndim != 1:
        raise ShapeError(f"addr: expected two vectors, got {vec1.shape} and {vec2.shape}")
    return _scaled(input, unsqueeze(vec1, 1) * unsqueeze(vec2, 0), beta, alpha)


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``."""
    if batch1.ndim != 3 or batch2.ndim != 3:
        raise ShapeError(f"addbmm: expected 3-d batches, got {batch1.shape} and {batch2.shape}")
    return _scaled(input, sum(matmul(batch1, batch2), 0), beta, alpha)


def _scaled(input: Tensor, prod: Tensor, beta: Any, alpha: Any) -> Tensor:
    prod = prod if alpha == 1 else prod * alpha
    if beta == 0:  # PyTorch ignores input (even NaN) when beta is 0
        return prod + input.new_zeros(input.shape)
    return (input if beta == 1 else input * beta) + prod


def ger(input: Tensor, vec2: Tensor) -> Tensor:
    """Outer product (the old name of ``outer``)."""
    return unsqueeze(input, 1) * unsqueeze(vec2, 0)


def chain_matmul(*matrices: Tensor) -> Tensor:
    """``matrices[0] @ matrices[1] @ ...``."""
    if not matrices:
        raise ValueRangeError("chain_matmul: expected at least one matrix")
    out = matrices[0]
    for m in matrices[1:]:
        out = matmul(out, m)
    return out


# -- shapes and joins ---------------------------------------------------------------------------------
def _atleast(n: int, tensors: tuple[Any, ...]) -> Any:
    ts = tuple(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
    out = []
    for t in ts:
        shape = tuple(t.shape)
        if t.ndim < n:  # 1-d x becomes (1, n) and (1, n, 1); 2-d becomes (r, c, 1), as NumPy
            shape = {0: (1,) * n, 1: (1,) + shape + (1,) * (n - 2), 2: shape + (1,)}[t.ndim]
        out.append(reshape(t, shape) if shape != tuple(t.shape) else t)
    return out[0] if len(out) == 1 else tuple(out)


def atleast_1d(*tensors: Any) -> Any:
    return _atleast(1, tensors)


def atleast_2d(*tensors: Any) -> Any:
    return _atleast(2, tensors)


def atleast_3d(*tensors: Any) -> Any:
    return _atleast(3, tensors)


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """The tensors expanded to their common shape."""
    shape = broadcast_shapes(*(tuple(t.shape) for t in tensors), op="broadcast_tensors")
    return tuple(expand(t, *shape) for t in tensors)


def hstack(tensors: Any) -> Tensor:
    ts = atleast_1d(*tensors)
    ts = ts if isinstance(ts, tuple) else (ts,)
    return cat(list(ts), 0 if ts[0].ndim == 1 else 1)


def vstack(tensors: Any) -> Tensor:
    ts = atleast_2d(*tensors)
    return cat(list(ts if isinstance(ts, tuple) else (ts,)), 0)


row_stack = vstack


def dstack(tensors: Any) -> Tensor:
    ts = atleast_3d(*tensors)
    return cat(list(ts if isinstance(ts, tuple) else (ts,)), 2)


def column_stack(tensors: Any) -> Tensor:
    ts = [reshape(t, (-1, 1)) if t.ndim <= 1 else t for t in tensors]
    return cat(ts, 1)


def tensor_split(input: Tensor, indices_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into ``n`` near-equal parts (an int) or at the given indices (a list)."""
    d = norm_dim(dim, input.ndim, "tensor_split")
    size = input.shape[d]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise ValueRangeError(f"tensor_split: sections must be positive, got {n}")
        q, r = divmod(size, n)
        bounds = [i * q + builtins.min(i, r) for i in range(n + 1)]
    else:
        bounds = [0] + [builtins.min(builtins.max(int(i), 0), size) for i in indices_or_sections] + [size]
    return tuple(input.narrow(d, a, builtins.max(b - a, 0)) for a, b in itertools.pairwise(bounds))


def _split_dim(op: str, input: Tensor, sections: Any, dim: int, min_rank: int) -> tuple[Tensor, ...]:
    if input.ndim < min_rank:
        raise ShapeError(f"{op}: expected a tensor of rank >= {min_rank}, got shape {input.shape}")
    if isinstance(sections, int) and input.shape[dim] % sections:
        raise ShapeError(f"{op}: dim {dim} of size {input.shape[dim]} is not divisible into {sections} parts")
    return tensor_split(input, sections, dim)


def hsplit(input: Tensor, sections: Any) -> tuple[Tensor, ...]:
    return _split_dim("hsplit", input, sections, 1 if input.ndim > 1 else 0, 1)


def vsplit(input: Tensor, sections: Any) -> tuple[Tensor, ...]:
    return _split_dim("vsplit", input, sections, 0, 2)


def dsplit(input: Tensor, sections: Any) -> tuple[Tensor, ...]:
    return _split_dim("dsplit", input, sections, 2, 3)


def ravel(input: Tensor) -> Tensor:
    return reshape(input, -1)


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """``input`` indexed at ``index`` along ``dim`` (that dim removed; a view)."""
    d = norm_dim(dim, input.ndim, "select")
    return input[(slice(None),) * d + (index,)]


def type_as(input: Tensor, other: Tensor) -> Tensor:
    return input.to(other.dtype)


def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """A copy of ``input`` with ``value`` at ``index`` along ``dim``."""
    d = norm_dim(dim, input.ndim, "index_fill") if input.ndim else 0
    xp = input._backend.xp
    mask = xp.zeros(input.shape[d] if input.ndim else 1, dtype=bool)
    mask[index._data.reshape(-1)] = True
    shape = [1] * input.ndim
    if input.ndim:
        shape[d] = input.shape[d]
    m = Tensor._make(mask.reshape(shape), input._backend)
    return where(m, value, input)


def block_diag(*tensors: Tensor) -> Tensor:
    """A block-diagonal matrix from 0-d, 1-d or 2-d blocks."""
    blocks = [reshape(t, (1, -1) if t.ndim < 2 else tuple(t.shape)) if t.ndim < 2 else t for t in tensors]
    rows = builtins.sum(b.shape[0] for b in blocks)
    cols = builtins.sum(b.shape[1] for b in blocks)
    from ._util import promote_tensors

    blocks = promote_tensors(blocks)
    out, c = [], 0
    for b in blocks:
        from ._layout import pad

        out.append(pad(b, (c, cols - c - b.shape[1])))
        c += b.shape[1]
    res = cat(out, 0)
    return res if res.shape == (rows, cols) else reshape(res, (rows, cols))


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    return diag_embed(reshape(input, -1), offset)


def _tri_indices(op: str, row: int, col: int, offset: int, upper: bool, device: Any) -> Tensor:
    from .._creation import tensor

    rows, cols = [], []
    for i in range(row):
        for j in range(col):
            if (j - i >= offset) if upper else (j - i <= offset):
                rows.append(i)
                cols.append(j)
    return tensor([rows, cols], dtype=int64, device=device).reshape(2, len(rows))


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None) -> Tensor:
    """Row and column indices of the lower triangle of a ``row x col`` matrix, as a (2, n) tensor."""
    return _tri_indices("tril_indices", row, col, offset, False, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None) -> Tensor:
    """Row and column indices of the upper triangle of a ``row x col`` matrix, as a (2, n) tensor."""
    return _tri_indices("triu_indices", row, col, offset, True, device)


def logspace(start: float, end: float, steps: int, base: float = 10.0, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:  # fmt: skip
    """``base ** linspace(start, end, steps)``."""
    from .._creation import linspace

    out = base ** linspace(start, end, steps, dtype=dtype, device=device)
    return out.requires_grad_(True) if requires_grad else out


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803 - PyTorch's name
    """Columns ``x ** (N-1), ..., x ** 0`` (reversed when ``increasing``)."""
    if x.ndim != 1:
        raise ShapeError(f"vander: expected a 1-d tensor, got shape {x.shape}")
    n = x.shape[0] if N is None else N
    cols = [x**k if k else x.new_ones(x.shape) for k in range(n)]
    out = stack(cols if increasing else cols[::-1], 1)
    return out


# -- statistics -----------------------------------------------------------------------------------
def cov(
    input: Tensor, *, correction: int = 1, fweights: Tensor | None = None, aweights: Tensor | None = None
) -> Tensor:
    """Covariance of the rows (variables) of ``input`` over its columns (observations)."""
    if fweights is not None or aweights is not None:
        raise ValueRangeError("cov: fweights and aweights are not supported")
    x = _float(input)
    if x.ndim > 2:
        raise ShapeError(f"cov: expected a 1-d or 2-d tensor, got shape {input.shape}")
    vector = x.ndim < 2
    x = reshape(x, (1, -1)) if vector else x
    n = x.shape[1]
    xc = x - mean(x, 1, keepdim=True)
    c = matmul(xc, _transpose(xc, 0, 1)) / builtins.max(n - correction, 0)
    return reshape(c, ()) if vector else c


def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the rows of ``input``."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = diagonal(c).sqrt()
    return (c / unsqueeze(d, 1) / unsqueeze(d, 0)).clamp(-1, 1)


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float = 1.0, dim: int = -1) -> Tensor:
    """Integral of ``y`` along ``dim`` by the trapezoidal rule (spacing ``dx`` or sample points ``x``)."""
    d = norm_dim(dim, y.ndim, "trapezoid")
    m = y.shape[d]
    avg = (y.narrow(d, 1, m - 1) + y.narrow(d, 0, m - 1)) * 0.5
    if x is None:
        return sum(avg, d) * dx
    dxs = diff(x, dim=-1 if x.ndim == 1 else d)
    if x.ndim == 1:
        shape = [1] * y.ndim
        shape[d] = m - 1
        dxs = reshape(dxs, tuple(shape))
    return sum(avg * dxs, d)


trapz = trapezoid


# -- counting and searching (no gradient) --------------------------------------------------------
def argwhere(input: Tensor) -> Tensor:
    return nonzero(input)


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """Counts of each non-negative integer in the 1-d ``input`` (or sums of ``weights``)."""
    if input.ndim != 1:
        raise ShapeError(f"bincount: expected a 1-d tensor, got shape {input.shape}")
    if input.dtype.is_floating_point:
        raise DTypeError(f"bincount: expected an integer tensor, got {input.dtype}")
    xp = input._backend.xp
    v = input._data
    if v.size and int(v.min()) < 0:
        raise ValueRangeError("bincount: input must hold non-negative integers")
    n = builtins.max(int(v.max()) + 1 if v.size else 0, minlength)
    if weights is None:
        out = xp.zeros(n, dtype=xp.int64)
        input._backend.index_add(out, (v,), xp.ones(v.shape, dtype=xp.int64))
        return Tensor._make(out, input._backend)
    from ._gather import index_add

    w = weights if weights.dtype.is_floating_point else weights.double()
    return index_add(w.new_zeros(n), 0, input, w)


def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
    """Histogram of ``bins`` equal-width bins over [min, max] (the data's range when both are 0)."""
    xp = input._backend.xp
    v = input._data.reshape(-1)
    lo, hi = float(min), float(max)
    if lo == hi and v.size:
        lo, hi = float(v.min()), float(v.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise ValueRangeError(f"histc: max {max} must be larger than min {min}")
    keep = (v >= lo) & (v <= hi)
    idx = xp.minimum(xp.astype((v[keep] - lo) * (bins / (hi - lo)), xp.int64), bins - 1)
    out = xp.zeros(bins, dtype=v.dtype)
    input._backend.index_add(out, (idx,), xp.ones(idx.shape, dtype=v.dtype))
    return Tensor._make(out, input._backend)


def searchsorted(sorted_sequence: Tensor, input: Any, *, out_int32: bool = False, right: bool = False,
                 side: str | None = None, sorter: Tensor | None = None) -> Tensor:  # fmt: skip
    """Indices where ``input`` would be inserted into the last dim of ``sorted_sequence`` to keep it sorted."""
    right = right or side == "right"
    be = sorted_sequence._backend
    xp = be.xp
    seq = sorted_sequence._data
    if sorter is not None:
        seq = xp.take_along_axis(seq, sorter._data, axis=-1)
    vals = input._data if isinstance(input, Tensor) else xp.asarray(input)
    if seq.ndim == 1:
        out = xp.searchsorted(seq, vals, side="right" if right else "left")
    else:
        if seq.shape[:-1] != vals.shape[:-1]:
            raise ShapeError(f"searchsorted: leading dims of {seq.shape} and {vals.shape} must match")
        # count the elements before each value: (..., V, 1) against (..., 1, S)
        cmp = (seq[..., None, :] <= vals[..., :, None]) if right else (seq[..., None, :] < vals[..., :, None])
        out = cmp.sum(axis=-1)
    res = Tensor._make(xp.astype(xp.asarray(out), xp.int32 if out_int32 else xp.int64), be)
    return res


def bucketize(input: Any, boundaries: Tensor, *, out_int32: bool = False, right: bool = False) -> Tensor:
    """The index of the bucket (between ``boundaries``) each element falls into."""
    if boundaries.ndim != 1:
        raise ShapeError(f"bucketize: boundaries must be 1-d, got shape {boundaries.shape}")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """Whether each element of ``elements`` is in ``test_elements``."""
    ref = elements if isinstance(elements, Tensor) else test_elements
    xp = ref._backend.xp
    a = elements._data if isinstance(elements, Tensor) else xp.asarray(elements)
    b = test_elements._data if isinstance(test_elements, Tensor) else xp.asarray(test_elements)
    return Tensor._make(xp.isin(a, b, invert=invert), ref._backend)
