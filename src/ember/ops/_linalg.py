"""Matrix products: matmul (batched, broadcasting) and its relatives."""

from __future__ import annotations

import string
from typing import Any

from .._errors import ShapeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._function import BilinearOp, Op
from ._shape import _transpose, reshape
from ._util import promote, promote_tensors, sum_to, sum_to_array

__all__ = ["addmm", "baddbmm", "bmm", "dot", "einsum", "inner", "matmul", "mm", "mv", "outer", "vdot"]
#: the functions that are also Tensor methods (``t.name(...)``)
METHODS = ["addmm", "baddbmm", "bmm", "dot", "inner", "matmul", "mm", "mv", "outer", "vdot"]


class MatMul(BilinearOp):
    """``a @ b`` for operands of rank >= 2 (rank-1 operands are lifted by ``matmul``)."""

    def forward(self, a: Any, b: Any) -> Any:
        return self.backend.xp.matmul(a, b)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        ga = sum_to(matmul(g, _transpose(b, -1, -2)), a.shape) if self._req(0) else None
        gb = sum_to(matmul(_transpose(a, -1, -2), g), b.shape) if self._req(1) else None
        return ga, gb

    def backward_arrays(self, g: Any) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        xp = self.backend.xp
        ga = sum_to_array(xp.matmul(g, xp.swapaxes(b._data, -1, -2)), a._data.shape) if self._req(0) else None
        gb = sum_to_array(xp.matmul(xp.swapaxes(a._data, -1, -2), g), b._data.shape) if self._req(1) else None
        return ga, gb


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with NumPy/PyTorch semantics (1-d operands, batch broadcasting)."""
    if getattr(input, "is_sparse", False):  # a sparse COO matrix times a dense one (ember.sparse)
        return input.mm(other)  # type: ignore[no-any-return]
    a, b = promote("matmul", input, other)
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError("matmul: both operands must be tensors")
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"matmul: both operands need at least one dim, got shapes {a.shape} and {b.shape}")
    ka = a.shape[-1]
    kb = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if ka != kb:
        raise ShapeError(f"matmul: shapes {a.shape} and {b.shape} are not aligned (inner dims {ka} and {kb} differ)")
    squeeze_a, squeeze_b = a.ndim == 1, b.ndim == 1
    if squeeze_a:
        a = reshape(a, (1, ka))
    if squeeze_b:
        b = reshape(b, (kb, 1))
    try:
        out: Tensor = MatMul.apply(a, b)
    except ValueError:
        raise ShapeError(f"matmul: batch dims of shapes {input.shape} and {other.shape} cannot broadcast") from None
    if squeeze_a or squeeze_b:
        shape = out.shape
        shape = shape[:-2] + (() if squeeze_a else shape[-2:-1]) + (() if squeeze_b else shape[-1:])
        out = reshape(out, shape)
    return out


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    if getattr(input, "is_sparse", False):
        return input.mm(mat2)  # type: ignore[no-any-return]
    if input.ndim != 2 or mat2.ndim != 2:
        raise ShapeError(f"mm: expected two matrices, got shapes {input.shape} and {mat2.shape}")
    return matmul(input, mat2)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    if input.ndim != 3 or mat2.ndim != 3 or input.shape[0] != mat2.shape[0]:
        raise ShapeError(f"bmm: expected (b,n,m) and (b,m,p) tensors, got {input.shape} and {mat2.shape}")
    return matmul(input, mat2)


def mv(input: Tensor, vec: Tensor) -> Tensor:
    if input.ndim != 2 or vec.ndim != 1:
        raise ShapeError(f"mv: expected a matrix and a vector, got shapes {input.shape} and {vec.shape}")
    return matmul(input, vec)


def dot(input: Tensor, other: Tensor) -> Tensor:
    """The inner product of two 1-d tensors of the same size."""
    if input.ndim != 1 or other.ndim != 1 or input.shape != other.shape:
        raise ShapeError(f"dot: expected two 1-d tensors of the same size, got {input.shape} and {other.shape}")
    return matmul(input, other)


vdot = dot  # real tensors only: conjugation is the identity


def inner(input: Tensor, other: Tensor) -> Tensor:
    """Sum over the last dims of both (a scalar operand multiplies)."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    return _inner(input, other)


def _inner(a: Tensor, b: Tensor) -> Tensor:
    if a.shape[-1] != b.shape[-1]:
        raise ShapeError(f"inner: last dims of {a.shape} and {b.shape} differ")
    bt = reshape(b, (-1, b.shape[-1]))
    out = matmul(a, _transpose(bt, 0, 1))
    return reshape(out, a.shape[:-1] + b.shape[:-1])


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """``input[i] * vec2[j]`` for two 1-d tensors."""
    if input.ndim != 1 or vec2.ndim != 1:
        raise ShapeError(f"outer: expected two 1-d tensors, got {input.shape} and {vec2.shape}")
    return reshape(input, (-1, 1)) * reshape(vec2, (1, -1))


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``."""
    return _scaled_sum(input, mm(mat1, mat2), beta, alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)`` for batches of matrices."""
    return _scaled_sum(input, bmm(batch1, batch2), beta, alpha)


def _scaled_sum(input: Tensor, prod: Tensor, beta: Any, alpha: Any) -> Tensor:
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:  # PyTorch ignores input (even NaN) when beta is 0
        return prod
    return (input * beta if beta != 1 else input) + prod


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
    operands = [g] + [x for j, x in enumerate(ins) if j != i]
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
                raise ShapeError(f"einsum: operand {k} of shape {t.shape} has fewer dims than {s!r}")
            subs[k] = s.replace("...", ell[n_ell - m :])
        elif t.ndim != explicit:
            raise ShapeError(f"einsum: operand {k} has shape {t.shape} but subscripts {s!r} name {explicit} dims")
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
    return Einsum.apply(*promote_tensors(ops_), subs=tuple(subs), out=out)
