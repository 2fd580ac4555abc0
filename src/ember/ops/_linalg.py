"""Matrix products: matmul (batched, broadcasting) and its relatives."""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..autograd._function import Op
from ._shape import _transpose, reshape
from ._util import promote, sum_to

__all__ = ["bmm", "matmul", "mm"]
#: the functions that are also Tensor methods (``t.name(...)``)
METHODS = ["bmm", "matmul", "mm"]


class MatMul(Op):
    """``a @ b`` for operands of rank >= 2 (rank-1 operands are lifted by ``matmul``)."""

    def forward(self, a: Any, b: Any) -> Any:
        return self.backend.xp.matmul(a, b)

    def backward(self, g: Tensor) -> tuple[Any, Any]:
        a, b = self.inputs  # type: ignore[misc]
        ga = sum_to(matmul(g, _transpose(b, -1, -2)), a.shape) if a.requires_grad else None
        gb = sum_to(matmul(_transpose(a, -1, -2), g), b.shape) if b.requires_grad else None
        return ga, gb


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with NumPy/PyTorch semantics (1-d operands, batch broadcasting)."""
    a, b = promote("matmul", input, other)
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError("matmul: both operands must be tensors")
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: both operands need at least one dim, got shapes {a.shape} and {b.shape}")
    ka = a.shape[-1]
    kb = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if ka != kb:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} are not aligned (inner dims {ka} and {kb} differ)")
    squeeze_a, squeeze_b = a.ndim == 1, b.ndim == 1
    if squeeze_a:
        a = reshape(a, (1, ka))
    if squeeze_b:
        b = reshape(b, (kb, 1))
    try:
        out: Tensor = MatMul.apply(a, b)
    except ValueError:
        raise ValueError(f"matmul: batch dims of shapes {input.shape} and {other.shape} cannot broadcast") from None
    if squeeze_a or squeeze_b:
        shape = out.shape
        shape = shape[:-2] + (() if squeeze_a else shape[-2:-1]) + (() if squeeze_b else shape[-1:])
        out = reshape(out, shape)
    return out


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    if input.ndim != 2 or mat2.ndim != 2:
        raise ValueError(f"mm: expected two matrices, got shapes {input.shape} and {mat2.shape}")
    return matmul(input, mat2)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    if input.ndim != 3 or mat2.ndim != 3 or input.shape[0] != mat2.shape[0]:
        raise ValueError(f"bmm: expected (b,n,m) and (b,m,p) tensors, got {input.shape} and {mat2.shape}")
    return matmul(input, mat2)
