"""Matrix products (torch docs, "BLAS and LAPACK Operations"): ``matmul`` and its kin, ``add*`` fused forms,
``trapezoid``.
"""

from __future__ import annotations

from typing import Any

from .._errors import DTypeError, ShapeError, ValueRangeError
from .._tensor import Tensor
from ..autograd._autocast import ACTIVE as AUTOCAST
from ..autograd._autocast import autocast_inputs, autocast_op
from ..autograd._function import BilinearOp
from ._indexing_view import _transpose, reshape, sum_to, unsqueeze
from ._other_cumulative import diff
from ._pointwise_complex import cj
from ._reduction import sum
from ._util import broadcast_shapes, norm_dim, same_dtype, sum_to_array

__all__ = [
    "addbmm",
    "addmm",
    "addmv",
    "addr",
    "baddbmm",
    "bmm",
    "chain_matmul",
    "dot",
    "ger",
    "inner",
    "matmul",
    "mm",
    "mv",
    "outer",
    "trapezoid",
    "trapz",
    "vdot",
]
METHODS = [n for n in __all__ if n not in {"chain_matmul", "trapezoid", "trapz"}]


class MatMul(BilinearOp):
    """``a @ b`` for operands of rank >= 2 (rank-1 operands are lifted by ``matmul``)."""

    def forward(self, a: Any, b: Any) -> Any:
        return self.backend.gemm(a, b)  # (NumPy: a small product on one OpenBLAS thread, see Backend.gemm)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]  # complex: g @ b^H and a^H @ g
        ga = sum_to(matmul(g, cj(_transpose(b, -1, -2))), a.shape) if self._req(0) else None
        gb = sum_to(matmul(cj(_transpose(a, -1, -2)), g), b.shape) if self._req(1) else None
        return ga, gb

    def backward_arrays(self, g: Any) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        xp, mm = self.backend.xp, self.backend.gemm
        ga = sum_to_array(mm(g, xp.swapaxes(b._data, -1, -2)), a._data.shape) if self._req(0) else None
        gb = sum_to_array(mm(xp.swapaxes(a._data, -1, -2), g), b._data.shape) if self._req(1) else None
        return ga, gb


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with NumPy/PyTorch semantics (1-d operands, batch broadcasting)."""
    if AUTOCAST[0]:
        input, other = autocast_inputs("matmul", input, other)
    if getattr(input, "is_sparse", False):  # a sparse COO matrix times a dense one (ember.sparse)
        return input.mm(other)  # type: ignore[no-any-return]
    a, b = input, other
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError(f"matmul: both operands must be tensors, got {type(a).__name__} and {type(b).__name__}")
    if a._data.dtype != b._data.dtype:
        same_dtype("matmul", "both operands", a, b)
    if a.dtype.kind in "biu" and a._backend.device.type == "cuda":  # PyTorch's CUDA kernels are float-only
        raise DTypeError(f"matmul: {a.dtype} @ {b.dtype} is not implemented on {a.device}, as in PyTorch (\"addmm_cuda"
                         "\" not implemented for integers); cast both operands to a float dtype")  # fmt: skip
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(
            f"matmul: both operands need at least one dim, got shapes {tuple(a.shape)} and {tuple(b.shape)}"
        )
    ka = a.shape[-1]
    kb = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if ka != kb:
        raise ShapeError(
            f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} are not aligned (inner dims {ka} and {kb} differ)"
        )
    squeeze_a, squeeze_b = a.ndim == 1, b.ndim == 1
    if squeeze_a:
        a = reshape(a, (1, ka))
    if squeeze_b:
        b = reshape(b, (kb, 1))
    if a.ndim > 2 or b.ndim > 2:  # checked here: an error from the kernel (a backend mismatch) passes unchanged
        try:
            broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ShapeError:
            raise ShapeError(
                f"matmul: batch dims of shapes {tuple(input.shape)} and {tuple(other.shape)} cannot broadcast"
            ) from None
    out: Tensor = MatMul.apply(a, b)
    if squeeze_a or squeeze_b:
        shape = out.shape
        shape = shape[:-2] + (() if squeeze_a else shape[-2:-1]) + (() if squeeze_b else shape[-1:])
        out = reshape(out, shape)
    return out


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """Matrix product of an (n, m) and an (m, p) tensor (no broadcasting; see ``matmul``)."""
    same_dtype("mm", "both operands", input, mat2)
    if getattr(input, "is_sparse", False):
        return input.mm(mat2)  # type: ignore[no-any-return]
    if input.ndim != 2 or mat2.ndim != 2:
        raise ShapeError(f"mm: expected two matrices, got shapes {tuple(input.shape)} and {tuple(mat2.shape)}")
    return matmul(input, mat2)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched matrix product of (B, n, m) and (B, m, p) tensors."""
    same_dtype("bmm", "both operands", input, mat2)
    if input.ndim != 3 or mat2.ndim != 3 or input.shape[0] != mat2.shape[0]:
        raise ShapeError(f"bmm: expected (b,n,m) and (b,m,p) tensors, got {tuple(input.shape)} and {tuple(mat2.shape)}")
    return matmul(input, mat2)


@autocast_op("mv")
def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix-vector product of an (n, m) matrix and an (m,) vector."""
    same_dtype("mv", "both operands", input, vec)
    if input.ndim != 2 or vec.ndim != 1:
        raise ShapeError(f"mv: expected a matrix and a vector, got shapes {tuple(input.shape)} and {tuple(vec.shape)}")
    return matmul(input, vec)


@autocast_op("dot")
def dot(input: Tensor, other: Tensor) -> Tensor:
    """The inner product of two 1-d tensors of the same size."""
    same_dtype("dot", "both operands", input, other)
    if input.ndim != 1 or other.ndim != 1 or input.shape != other.shape:
        raise ShapeError(
            f"dot: expected two 1-d tensors of the same size, got {tuple(input.shape)} and {tuple(other.shape)}"
        )
    return matmul(input, other)


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """``sum(conj(input) * other)`` for two 1-d tensors (``dot`` for real ones)."""
    return dot(cj(input), other)


def inner(input: Tensor, other: Tensor) -> Tensor:
    """Sum over the last dims of both (a scalar operand multiplies)."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    same_dtype("inner", "both operands", input, other)
    return _inner(input, other)


def _inner(a: Tensor, b: Tensor) -> Tensor:
    if a.shape[-1] != b.shape[-1]:
        raise ShapeError(f"inner: last dims of {tuple(a.shape)} and {tuple(b.shape)} differ")
    bt = reshape(b, (-1, b.shape[-1]))
    out = matmul(a, _transpose(bt, 0, 1))
    return reshape(out, a.shape[:-1] + b.shape[:-1])


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """``input[i] * vec2[j]`` for two 1-d tensors."""
    if input.ndim != 1 or vec2.ndim != 1:
        raise ShapeError(f"outer: expected two 1-d tensors, got {tuple(input.shape)} and {tuple(vec2.shape)}")
    return reshape(input, (-1, 1)) * reshape(vec2, (1, -1))


@autocast_op("addmm")
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``."""
    return _scaled_sum("addmm", input, mm(mat1, mat2), beta, alpha)


@autocast_op("baddbmm")
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)`` for batches of matrices."""
    return _scaled_sum("baddbmm", input, bmm(batch1, batch2), beta, alpha)


def _scaled_sum(op: str, input: Tensor, prod: Tensor, beta: Any, alpha: Any) -> Tensor:
    """``beta * input + alpha * prod``: ``input`` broadcasts to the product's shape, never the other way; it has the
    product's dtype (no promotion, as in PyTorch)."""
    if isinstance(input, Tensor):
        same_dtype(op, "input and the product's operands", input, prod)
    shape = tuple(getattr(input, "shape", ()))
    if broadcast_shapes(shape, prod.shape, op=op) != tuple(prod.shape):
        raise ShapeError(f"{op}: input of shape {shape} does not broadcast to the product's shape {tuple(prod.shape)}")
    if prod.dtype.kind == "b":  # PyTorch's bool rule: beta and alpha as truth values (+ is or): a bool result
        alpha, beta = bool(alpha), bool(beta)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:  # PyTorch ignores input (even NaN) when beta is 0
        return prod
    return (input * beta if beta != 1 else input) + prod


@autocast_op("addmv")
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    return _scaled_sum("addmv", input, mv(mat, vec), beta, alpha)


@autocast_op("addr")
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``."""
    if vec1.ndim != 1 or vec2.ndim != 1:
        raise ShapeError(f"addr: expected two vectors, got {tuple(vec1.shape)} and {tuple(vec2.shape)}")
    return _scaled_sum("addr", input, unsqueeze(vec1, 1) * unsqueeze(vec2, 0), beta, alpha)


@autocast_op("addbmm")
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``."""
    if batch1.ndim != 3 or batch2.ndim != 3 or batch1.shape[0] != batch2.shape[0]:
        raise ShapeError(
            f"addbmm: expected 3-d batches of the same length, got {tuple(batch1.shape)} and {tuple(batch2.shape)}"
        )
    return _scaled_sum("addbmm", input, sum(matmul(batch1, batch2), 0), beta, alpha)


def ger(input: Tensor, vec2: Tensor) -> Tensor:
    """Outer product (the old name of ``outer``)."""
    return outer(input, vec2)


@autocast_op("chain_matmul")
def chain_matmul(*matrices: Tensor) -> Tensor:
    """``matrices[0] @ matrices[1] @ ...``."""
    if not matrices:
        raise ValueRangeError("chain_matmul: expected at least one matrix")
    if any(m.ndim != 2 for m in matrices):
        raise ShapeError(f"chain_matmul: expected matrices, got shapes {[tuple(m.shape) for m in matrices]}")
    out = matrices[0]
    for m in matrices[1:]:
        out = matmul(out, m)
    return out


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float = 1.0, dim: int = -1) -> Tensor:
    """Integral of ``y`` along ``dim`` by the trapezoidal rule (spacing ``dx`` or sample points ``x``)."""
    d = norm_dim(dim, y.ndim, "trapezoid")
    m = y.shape[d]
    if m < 2:  # no interval: 0 (as PyTorch), an empty sum in the graph
        return sum(y.narrow(d, 0, 0), d)
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
