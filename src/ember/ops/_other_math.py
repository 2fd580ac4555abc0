"""Other numerical operators (torch docs, "Other Operations"): ``einsum``, ``tensordot``, ``kron``, ``cross``,
``cdist``, ``cov``, histograms and bucketing, ``renorm``, ``vander``, ``logspace``.
"""

from __future__ import annotations

import builtins
import string
from typing import Any

from .._creation import linspace
from .._dtype import int64
from .._errors import DTypeError, ShapeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._autocast import autocast_op
from ..autograd._function import Op
from ._blas import matmul
from ._indexing import where
from ._indexing_gather import index_add
from ._indexing_join import stack
from ._indexing_view import _transpose, expand, reshape, unsqueeze
from ._other_diagonal import diagonal
from ._pointwise_binary import _integers
from ._pointwise_complex import cj
from ._pointwise_complex import complex as _complex
from ._reduction import mean, sum
from ._util import _binary, _float, _nodiff, broadcast_shapes, norm_dim, norm_dims, same_dtype

__all__ = [
    "bincount",
    "bucketize",
    "cdist",
    "corrcoef",
    "cov",
    "cross",
    "einsum",
    "gcd",
    "histc",
    "kron",
    "lcm",
    "logspace",
    "renorm",
    "searchsorted",
    "tensordot",
    "vander",
]
METHODS = [
    n for n in __all__ if n not in {"bucketize", "cdist", "einsum", "logspace", "searchsorted", "tensordot", "vander"}
]


class Einsum(Op):
    """One einsum with explicit subscripts and no ellipsis (``einsum`` normalises to this)."""

    _detach_check = False  # PyTorch's einsum saves views of the operands

    def value_needed(self, i: int) -> bool:  # an operand's value only for the others' gradients
        e = self._edges
        return e is not None and any(x is not None for j, x in enumerate(e) if j != i)

    def forward(self, *arrays: Any, subs: tuple[str, ...], out: str) -> Any:
        self.subs, self.out = subs, out
        return self.backend.xp.einsum(",".join(subs) + "->" + out, *arrays, optimize=len(arrays) > 2)

    def backward(self, g: Tensor) -> tuple[Any, ...]:
        ins = self.inputs or ()
        return tuple(_einsum_grad(g, self.out, ins, self.subs, i) if self._req(i) else None for i in range(len(ins)))


def _einsum_grad(g: Tensor, out: str, ins: Any, subs: tuple[str, ...], i: int) -> Tensor:
    """d(einsum)/d(operand i): contract ``g`` with the other operands back to operand i's subscripts."""
    target = subs[i]
    shape = ins[i].shape
    sizes = dict(zip(target, shape, strict=True))
    # repeated letters (a diagonal): give each repeat a fresh letter and multiply by an identity
    fresh = iter(c for c in string.ascii_letters if c not in "".join(subs) + out)
    uniq, eyes = "", []
    for c in target:
        if c in uniq:
            n = next(fresh)
            uniq += n
            eyes.append(c + n)
        else:
            uniq += c
    operands = [g] + [cj(x) for j, x in enumerate(ins) if j != i]  # complex: the conjugates
    in_subs = [out] + [s for j, s in enumerate(subs) if j != i]
    present = set("".join(in_subs))
    # letters only operand i has (summed away in the forward pass): the gradient is constant along them
    core = "".join(c for c in dict.fromkeys(target) if c in present)
    r = Einsum.apply(*operands, subs=tuple(in_subs), out=core)
    full = "".join(dict.fromkeys(target))
    if core != full:
        shp = tuple(sizes[c] if c in core else 1 for c in full)
        src = "".join(c for c in full if c in core)
        r = reshape(Einsum.apply(r, subs=(core,), out=src), shp).expand(*(sizes[c] for c in full))
    if eyes:
        from .._creation import eye

        mats = [eye(sizes[p[0]], dtype=g.dtype, device=g.device) for p in eyes]
        # ``uniq`` names target's positions one by one, so this is already operand i's layout
        return Einsum.apply(r, *mats, subs=(full, *eyes), out=uniq)
    return r


@autocast_op("einsum")
def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation (``"bij,bjk->bik"``, ``"...ij->...ji"``, implicit output), differentiable."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    subs = lhs.split(",")
    if len(subs) != len(operands):
        raise ValueRangeError(f"einsum: equation {equation!r} names {len(subs)} operands, got {len(operands)}")
    ops_ = list(operands)
    for k, t in enumerate(ops_):
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum: operand {k} is a {type(t).__name__}, expected a Tensor")
    for k, s in enumerate([*subs, rhs] if arrow else subs):
        what = "the output" if k == len(subs) else f"operand {k}"
        rest = s.replace("...", "", 1)
        if "." in rest:
            raise ValueRangeError(f"einsum: {what} in {equation!r} has more than one ellipsis or a stray '.'")
        bad = [c for c in rest if c not in string.ascii_letters]
        if bad:
            raise ValueRangeError(f"einsum: {what} in {equation!r} holds {bad[0]!r}; subscripts are letters a-z, A-Z")
        if k == len(subs) and len(set(rest)) != len(rest):
            raise ValueRangeError(f"einsum: an output subscript appears more than once in {equation!r}")
    # expand the ellipsis into explicit letters, broadcasting size-1 dims explicitly
    used = set(eq) - set(".,->")
    spare = [c for c in string.ascii_letters if c not in used]
    n_ell = max((t.ndim - len(s.replace("...", "")) for s, t in zip(subs, ops_, strict=True) if "..." in s), default=0)
    ell = "".join(spare[:n_ell])
    ell_sizes: list[int] = [1] * n_ell
    for k, (s, t) in enumerate(zip(subs, ops_, strict=True)):
        explicit = len(s.replace("...", ""))
        if "..." in s:
            m = t.ndim - explicit
            if m < 0:
                raise ShapeError(f"einsum: operand {k} of shape {tuple(t.shape)} has fewer dims than {s!r}")
            subs[k] = s.replace("...", ell[n_ell - m :])
        elif t.ndim != explicit:
            raise ShapeError(
                f"einsum: operand {k} has shape {tuple(t.shape)} but subscripts {s!r} name {explicit} dims"
            )
    for s, t in zip(subs, ops_, strict=True):
        for c, n in zip(s, t.shape, strict=True):
            if c in ell:
                j = ell.index(c)
                if n != 1:
                    if ell_sizes[j] not in (1, n):
                        raise ShapeError(f"einsum: broadcast dims of the operands do not match ({ell_sizes[j]} vs {n})")
                    ell_sizes[j] = n
    sizes: dict[str, int] = {}
    for k, (s, t) in enumerate(zip(subs, ops_, strict=True)):
        shape = tuple(ell_sizes[ell.index(c)] if c in ell else n for c, n in zip(s, t.shape, strict=True))
        if shape != t.shape:
            ops_[k] = t.expand(*shape)
        for c, n in zip(s, shape, strict=True):
            if sizes.setdefault(c, n) != n:
                raise ShapeError(f"einsum: subscript {c!r} has size {sizes[c]} in one operand and {n} in another")
    if arrow:
        out = rhs.replace("...", ell)
        for c in out:
            if c not in sizes:
                raise ValueRangeError(f"einsum: output subscript {c!r} appears in no operand")
    else:
        counts = "".join(subs)
        out = ell + "".join(sorted(c for c in set(counts) if counts.count(c) == 1 and c not in ell))
    same_dtype("einsum", "all operands", *ops_)
    if len(ops_) == 1 and ops_[0].dtype.kind in "biu" and set(subs[0]) - set(out):
        ops_[0] = ops_[0].to(int64)  # one operand summed over a subscript: PyTorch's sum, into int64
    return Einsum.apply(*ops_, subs=tuple(subs), out=out)


@autocast_op("cross")
def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """Cross product of 3-vectors along ``dim`` (the first dim of size 3 when None)."""
    same_dtype("cross", "both operands", input, other)
    if input.ndim != other.ndim:
        raise ShapeError(
            f"cross: inputs must have the same number of dims, got {tuple(input.shape)} and {tuple(other.shape)}"
        )
    if dim is not None:
        d0 = norm_dim(dim, input.ndim, "cross")
        if input.shape[d0] != 3 or other.shape[d0] != 3:
            raise ShapeError(
                f"cross: dim {dim} must have size 3 in both inputs, got {tuple(input.shape)} and {tuple(other.shape)}"
            )
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


@autocast_op("tensordot")
def tensordot(a: Tensor, b: Tensor, dims: Any = 2) -> Tensor:
    """Sum over ``dims`` (an int: the last dims of ``a`` with the first of ``b``; or two lists of dims)."""
    same_dtype("tensordot", "both operands", a, b)
    if isinstance(dims, int):
        if dims < 0 or dims > builtins.min(a.ndim, b.ndim):
            raise ShapeError(f"tensordot: dims={dims} is out of range for shapes {tuple(a.shape)} and {tuple(b.shape)}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = [[norm_dim(int(d), t.ndim, "tensordot") for d in ds] for ds, t in zip(dims, (a, b), strict=True)]
    if len(da) == len(db):  # a contracted dim of size 1 is broadcast against the other's (PyTorch)
        sa_, sb_ = list(a.shape), list(b.shape)
        for i, j in zip(da, db, strict=True):
            if sa_[i] == 1:
                sa_[i] = sb_[j]
            elif sb_[j] == 1:
                sb_[j] = sa_[i]
        a = a.expand(*sa_) if tuple(sa_) != tuple(a.shape) else a
        b = b.expand(*sb_) if tuple(sb_) != tuple(b.shape) else b
    if len(da) != len(db) or any(a.shape[i] != b.shape[j] for i, j in zip(da, db, strict=True)):
        raise ShapeError(f"tensordot: dims {da} of {tuple(a.shape)} and {db} of {tuple(b.shape)} do not match")
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    sa = [next(letters) for _ in range(a.ndim)]
    sb = [next(letters) for _ in range(b.ndim)]
    for i, j in zip(da, db, strict=True):
        sb[j] = sa[i]
    out = [c for i, c in enumerate(sa) if i not in da] + [c for j, c in enumerate(sb) if j not in db]
    return einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", a, b)


@autocast_op("cdist")
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: Any = None) -> Tensor:
    """Pairwise ``p``-norm distances between the rows of ``x1`` (..., P, M) and ``x2`` (..., R, M)."""
    if x1.ndim < 2 or x2.ndim < 2 or x1.shape[-1] != x2.shape[-1]:
        raise ShapeError(f"cdist: expected (..., P, M) and (..., R, M), got {tuple(x1.shape)} and {tuple(x2.shape)}")
    same_dtype("cdist", "x1 and x2", x1, x2)
    d = unsqueeze(x1, -2) - unsqueeze(x2, -3)  # (..., P, R, M)
    if p == 2.0:  # the gradient at a zero distance is 0, as in PyTorch
        sq = sum(d * d, -1)
        safe = where(sq > 0, sq, 1.0)
        return where(sq > 0, safe.sqrt(), 0.0)
    return d.norm(p, -1)


def logspace(start: float, end: float, steps: int, base: float = 10.0, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:  # fmt: skip
    """``base ** linspace(start, end, steps)`` (an integer ``dtype``: ``start``/``end`` truncated to integers, the
    powers computed as PyTorch's kernel on the device computes them -- the CPU's in float64, CUDA's in float32 --
    then cast)."""
    from .._dtype import as_dtype
    from ..backends import get_backend

    dt = None if dtype is None else as_dtype(dtype)
    if dt is not None and dt.kind in "biu":
        lo, hi = (int(float(v)) for v in (start, end))
        # (PyTorch's CUDA kernel takes powf of float32 exponents: 3 ** 1 may round below 3 there and truncate to 2)
        wide = "float64" if get_backend(device).device.type == "cpu" else "float32"
        exps = linspace(lo, hi, steps, dtype=wide, device=device)
        return (base**exps).to(dt).requires_grad_(requires_grad)
    out = base ** linspace(start, end, steps, dtype=dtype, device=device)
    return out.requires_grad_(True) if requires_grad else out


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803 - PyTorch's name
    """Columns ``x ** (N-1), ..., x ** 0`` (reversed when ``increasing``)."""
    if x.ndim != 1:
        raise ShapeError(f"vander: expected a 1-d tensor, got shape {tuple(x.shape)}")
    n = x.shape[0] if N is None else N
    if n == 0:  # no columns
        return reshape(x, (-1, 1)).narrow(1, 0, 0) if x.numel() else x.new_zeros((x.shape[0], 0))
    cols = [x**k if k else x.new_ones(x.shape) for k in range(n)]
    out = stack(cols if increasing else cols[::-1], 1)
    return out


# -- statistics -----------------------------------------------------------------------------------
def _cov_weights(name: str, w: Tensor | None, n: int, kinds: str) -> Tensor | None:
    if w is None:
        return None
    if not isinstance(w, Tensor) or w.ndim > 1:
        raise ShapeError(f"cov: expected {name} to be a tensor with one or fewer dimensions")
    if w.dtype.kind not in kinds:
        kind = "an integral" if kinds == "iu" else "a floating point"
        raise DTypeError(f"cov: expected {name} to have {kind} dtype, got {w.dtype}")
    if w.numel() != n:
        raise ShapeError(f"cov: expected {name} to have {n} elements (one per observation), got {w.numel()}")
    if n and bool((w < 0).any()):
        raise ValueRangeError(f"cov: {name} cannot be negative")
    return reshape(w, (-1,))


def cov(
    input: Tensor, *, correction: int = 1, fweights: Tensor | None = None, aweights: Tensor | None = None
) -> Tensor:
    """Covariance of the rows (variables) of ``input`` over its columns (observations).

    ``fweights`` (integer repeat counts) and ``aweights`` (float importance weights) weight the observations
    as in PyTorch and NumPy; gradients flow to ``input`` and ``aweights``.
    """
    x = _float(input)
    if x.ndim > 2:
        raise ShapeError(f"cov: expected a 1-d or 2-d tensor, got shape {tuple(input.shape)}")
    vector = x.ndim < 2
    x = reshape(x, (1, -1)) if vector else x
    n = x.shape[1]
    fw = _cov_weights("fweights", fweights, n, "iu")
    aw = _cov_weights("aweights", aweights, n, "f")
    w = aw if fw is None else fw if aw is None else fw * aw
    if w is None:
        xc = x - mean(x, 1, keepdim=True)
        c = matmul(xc, cj(_transpose(xc, 0, 1))) / builtins.max(n - correction, 0)
    else:
        w_sum = sum(w)
        xc = x - unsqueeze(sum(x * w, 1) / w_sum, 1)
        norm = w_sum - correction if aw is None or correction == 0 else w_sum - correction * sum(w * aw) / w_sum
        norm = where(norm > 0, norm, 0.0)  # no degrees of freedom left: inf/NaN, as PyTorch
        c = matmul(xc * w, cj(_transpose(xc, 0, 1))) / norm
    return reshape(c, ()) if x.shape[0] == 1 else c  # one variable: 0-d, as PyTorch (for (1, N) too)


def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the rows of ``input``."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = diagonal(c)
    d = (d.real if d.dtype.is_complex else d).sqrt()
    r = c / unsqueeze(d, 1) / unsqueeze(d, 0)
    if r.dtype.is_complex:  # PyTorch clips the real and imaginary parts
        return _complex(r.real.clamp(-1, 1), r.imag.clamp(-1, 1))
    return r.clamp(-1, 1)


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """Counts of each non-negative integer in the 1-d ``input`` (or sums of ``weights``)."""
    if input.ndim != 1:
        raise ShapeError(f"bincount: expected a 1-d tensor, got shape {tuple(input.shape)}")
    if input.dtype.is_floating_point:
        raise DTypeError(f"bincount: expected an integer tensor, got {input.dtype}")
    xp = input._backend.xp
    v = xp.astype(input._data, xp.int64)  # (a uint8 index array is a mask to torch's index_put_)
    if v.size and int(v.min()) < 0:
        raise ValueRangeError("bincount: input must hold non-negative integers")
    n = builtins.max(int(v.max()) + 1 if v.size else 0, minlength)
    if weights is None:
        out = xp.zeros(n, dtype=xp.int64)
        input._backend.index_add(out, (v,), xp.ones(v.shape, dtype=xp.int64))
        return Tensor._make(out, input._backend)

    w = weights if weights.dtype.is_floating_point else weights.double()
    return index_add(w.new_zeros(n), 0, input.long(), w)


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
            raise ShapeError(f"searchsorted: leading dims of {tuple(seq.shape)} and {tuple(vals.shape)} must match")
        # count the elements before each value: (..., V, 1) against (..., 1, S)
        cmp = (seq[..., None, :] <= vals[..., :, None]) if right else (seq[..., None, :] < vals[..., :, None])
        out = cmp.sum(axis=-1)
    res = Tensor._make(xp.astype(xp.asarray(out), xp.int32 if out_int32 else xp.int64), be)
    return res


def bucketize(input: Any, boundaries: Tensor, *, out_int32: bool = False, right: bool = False) -> Tensor:
    """The index of the bucket (between ``boundaries``) each element falls into."""
    if boundaries.ndim != 1:
        raise ShapeError(f"bucketize: boundaries must be 1-d, got shape {tuple(boundaries.shape)}")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


@autocast_op("renorm")
def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down to norm ``maxnorm``."""
    if input.ndim < 2:
        raise ShapeError(f"renorm: input needs at least 2 dims, got shape {tuple(input.shape)}")
    d = norm_dim(dim, input.ndim, "renorm")
    others = tuple(a for a in norm_dims(None, input.ndim, "renorm") if a != d)
    n = input.norm(p, others, keepdim=True)
    return input * where(n > maxnorm, maxnorm / (n + 1e-7), 1.0)


Gcd, Lcm = (_nodiff(n, f) for n, f in (("Gcd", "gcd"), ("Lcm", "lcm")))


def gcd(input: Any, other: Any) -> Tensor:
    """Greatest common divisor of integer tensors."""
    _integers("gcd", input, other)
    return _binary(Gcd, input, other)


def lcm(input: Any, other: Any) -> Tensor:
    """Least common multiple of integer tensors."""
    _integers("lcm", input, other)
    return _binary(Lcm, input, other)
