"""``SparseTensor``: a COO sparse tensor (``indices`` (sparse_dim, nnz), ``values`` (nnz, *dense_dims), ``size``).

The values are an ordinary Ember Tensor, so gradients reach them (and whatever made them) through every
operation here; the indices are integer data without gradients. ``coalesce`` sums duplicate indices.
"""

from __future__ import annotations

import math
from typing import Any

from .._creation import tensor as _tensor
from .._creation import zeros
from .._errors import DTypeError, OutOfRangeError, ShapeError
from .._tensor import Tensor
from ..ops import nonzero

__all__ = ["SparseTensor", "sparse_coo_tensor", "to_sparse"]


class SparseTensor:
    """A sparse tensor in COO layout (``torch.sparse_coo``); build it with ``ember.sparse_coo_tensor``."""

    is_sparse = True
    layout = "sparse_coo"
    __array_priority__ = 1000  # ``dense @ sparse`` in NumPy code defers to us

    def __init__(self, indices: Tensor, values: Tensor, size: tuple[int, ...], coalesced: bool = False) -> None:
        self._idx, self._vals, self._size, self._coalesced = indices, values, tuple(size), coalesced

    # -- what it holds ------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._size

    def size(self, dim: int | None = None) -> Any:
        return self._size if dim is None else self._size[dim]

    def dim(self) -> int:
        return len(self._size)

    @property
    def ndim(self) -> int:
        return len(self._size)

    @property
    def dtype(self) -> Any:
        return self._vals.dtype

    @property
    def device(self) -> Any:
        return self._vals.device

    def sparse_dim(self) -> int:
        return int(self._idx.shape[0])

    def dense_dim(self) -> int:
        return self._vals.ndim - 1

    def _nnz(self) -> int:
        return int(self._vals.shape[0])

    def _indices(self) -> Tensor:
        return self._idx

    def _values(self) -> Tensor:
        return self._vals

    def indices(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._idx

    def values(self) -> Tensor:
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._vals

    def is_coalesced(self) -> bool:
        return self._coalesced

    def numel(self) -> int:
        return math.prod(self._size)

    # -- autograd -----------------------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._vals.requires_grad

    def requires_grad_(self, requires_grad: bool = True) -> SparseTensor:
        self._vals.requires_grad_(requires_grad)
        return self

    @property
    def grad(self) -> SparseTensor | None:
        """The gradient with respect to the tensor's entries (a coalesced sparse tensor), as PyTorch gives it.

        Duplicate indices are one entry: their common gradient is not summed. (``_values().grad`` holds the
        gradient of each stored value.)
        """
        g = self._vals.grad
        if g is None:
            return None
        if self._coalesced:
            return SparseTensor(self._idx, g, self._size, True)
        summed = SparseTensor(self._idx, g, self._size).coalesce()
        ones = zeros(self._nnz(), dtype=g.dtype, device=g.device) + 1
        counts = SparseTensor(self._idx, ones, self._size[: self.sparse_dim()]).coalesce()._vals
        counts = counts.reshape(-1, *([1] * self.dense_dim()))
        return SparseTensor(summed._idx, summed._vals / counts, self._size, True)

    @property
    def is_leaf(self) -> bool:
        return self._vals.is_leaf

    def detach(self) -> SparseTensor:
        return SparseTensor(self._idx, self._vals.detach(), self._size, self._coalesced)

    # -- conversions --------------------------------------------------------------------------------
    def _linear(self) -> Tensor:
        """Row-major linear positions of the nonzeros in the sparse dims."""
        sdims = self._size[: self.sparse_dim()]
        lin = zeros(self._nnz(), dtype="int64", device=self.device)
        for d, n in enumerate(sdims):
            lin = lin * n + self._idx[d]
        return lin

    def coalesce(self) -> SparseTensor:
        """Sorted indices without duplicates (the values of repeated indices summed; differentiable)."""
        if self._coalesced:
            return self
        be = self._idx._backend
        xp = be.xp
        lin = self._linear()
        uniq, inverse = xp.unique(lin._data, return_inverse=True)
        inv = Tensor._make(xp.asarray(inverse.reshape(-1), dtype=xp.int64), be)
        vals = zeros(len(uniq), *self._vals.shape[1:], dtype=self.dtype, device=self.device).index_add(
            0, inv, self._vals
        )
        rem = uniq
        idx = []
        for n in reversed(self._size[: self.sparse_dim()]):
            idx.append(rem % n)
            rem = rem // n
        stacked = xp.astype(xp.stack(idx[::-1]), xp.int64) if idx else xp.zeros((0, len(uniq)), dtype=xp.int64)
        indices = Tensor._make(stacked, be)
        return SparseTensor(indices, vals, self._size, True)

    def to_dense(self) -> Tensor:
        """The dense tensor (duplicates summed); differentiable in the values."""
        sdims = self._size[: self.sparse_dim()]
        flat = zeros(math.prod(sdims), *self._vals.shape[1:], dtype=self.dtype, device=self.device)
        return flat.index_add(0, self._linear(), self._vals).reshape(*self._size)

    def to_sparse(self) -> SparseTensor:
        return self

    def to(self, *args: Any, **kwargs: Any) -> SparseTensor:
        vals = self._vals.to(*args, **kwargs)
        return SparseTensor(self._idx.to(device=vals.device), vals, self._size, self._coalesced)

    def float(self) -> SparseTensor:
        return self.to("float32")

    def double(self) -> SparseTensor:
        return self.to("float64")

    def cpu(self) -> SparseTensor:
        return self.to(device="cpu")

    # -- arithmetic ---------------------------------------------------------------------------------
    def t(self) -> SparseTensor:
        if self.sparse_dim() != 2 or self.dense_dim() != 0:
            raise ShapeError(f"t: expected a 2-d sparse matrix, got size {self._size}")
        return SparseTensor(self._idx.flip(0), self._vals, (self._size[1], self._size[0]), False)

    def transpose(self, dim0: int, dim1: int) -> SparseTensor:
        if sorted((dim0 % 2, dim1 % 2)) != [0, 1] or self.ndim != 2:
            raise ShapeError(f"transpose: only the two dims of a 2-d sparse matrix can be swapped, got {self._size}")
        return self.t()

    def mm(self, mat2: Tensor) -> Tensor:
        from ._mm import mm

        return mm(self, mat2)

    matmul = mm
    __matmul__ = mm

    def __mul__(self, other: Any) -> SparseTensor:
        from ._arith import mul

        return mul(self, other)

    __rmul__ = __mul__
    mul = __mul__

    def __truediv__(self, other: Any) -> SparseTensor:
        from ._arith import mul

        if isinstance(other, SparseTensor) or (isinstance(other, Tensor) and other.ndim):
            raise TypeError("div: a sparse tensor can only be divided by a scalar")
        return mul(self, 1.0 / other) if not isinstance(other, Tensor) else mul(self, other.reciprocal())

    div = __truediv__

    def __neg__(self) -> SparseTensor:
        return self * -1

    def __add__(self, other: Any) -> Any:
        from ._arith import add

        return add(self, other)

    def __radd__(self, other: Any) -> Any:  # dense + sparse
        from ._arith import add

        return add(other, self)

    def __sub__(self, other: Any) -> Any:
        from ._arith import add

        return add(self, other, -1)

    def __rsub__(self, other: Any) -> Any:  # dense - sparse
        from ._arith import add

        return add(other, self, -1)

    add = __add__
    sub = __sub__

    def sum(self, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Any:
        from ._arith import sum

        if dim is None:
            return sum(self, None, dtype)
        return sum(self, dim, dtype)

    def __repr__(self) -> str:
        return (
            f"tensor(indices={self._idx!r},\n       values={self._vals!r},\n       size={self._size}, "
            f"nnz={self._nnz()}, layout=sparse_coo)"
        )


def sparse_coo_tensor(
    indices: Any,
    values: Any,
    size: Any = None,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    check_invariants: bool | None = None,
    is_coalesced: bool | None = None,
) -> SparseTensor:
    """A COO sparse tensor with ``values[k]`` at ``indices[:, k]`` (``torch.sparse_coo_tensor``).

    ``indices`` is (sparse_dim, nnz) integers; ``values`` is (nnz, *dense_dims); ``size`` defaults to the
    smallest that holds every index. Duplicate indices are allowed (they add up; see ``coalesce``).
    Gradients flow to ``values`` when it is a Tensor that requires them.
    """
    if device is None and isinstance(values, Tensor):  # indices given as data go where the values are
        device = values.device
    idx = indices if isinstance(indices, Tensor) else _tensor(indices, device=device)
    if idx.dtype.is_floating_point or idx.dtype.name == "bool":
        raise DTypeError(f"sparse_coo_tensor: indices must be an integer tensor, got {idx.dtype}")
    if idx.ndim != 2:
        raise ShapeError(f"sparse_coo_tensor: indices must be 2-d (sparse_dim, nnz), got shape {tuple(idx.shape)}")
    idx = idx.long()
    vals = values if isinstance(values, Tensor) else _tensor(values, dtype=dtype, device=idx.device)
    if dtype is not None and vals.dtype != dtype and str(vals.dtype) != str(dtype):
        vals = vals.to(dtype)
    if vals.ndim == 0 or vals.shape[0] != idx.shape[1]:
        raise ShapeError(
            f"sparse_coo_tensor: indices have {idx.shape[1]} nonzeros but values have shape {tuple(vals.shape)} "
            "(expected the first dim to match)"
        )
    sparse_dim = idx.shape[0]
    xp = idx._backend.xp
    if size is None:
        top = xp.max(idx._data, axis=1) + 1 if idx.shape[1] else xp.zeros((sparse_dim,), dtype=xp.int64)
        shape = tuple(int(s) for s in top) + tuple(vals.shape[1:])
    else:
        shape = tuple(int(s) for s in size)
        if len(shape) != sparse_dim + vals.ndim - 1 or shape[sparse_dim:] != tuple(vals.shape[1:]):
            raise ShapeError(
                f"sparse_coo_tensor: size {shape} does not fit indices of sparse_dim {sparse_dim} and values of "
                f"shape {tuple(vals.shape)}"
            )
        if idx.shape[1]:
            lo, hi = xp.min(idx._data, axis=1), xp.max(idx._data, axis=1)
            for d in range(sparse_dim):
                if int(lo[d]) < 0 or int(hi[d]) >= shape[d]:
                    bad = int(lo[d]) if int(lo[d]) < 0 else int(hi[d])
                    raise OutOfRangeError(
                        f"sparse_coo_tensor: size is inconsistent with indices: for dim {d}, size is {shape[d]} "
                        f"but found index {bad}"
                    )
    if requires_grad:
        if not vals.is_leaf:
            raise RuntimeError("sparse_coo_tensor: requires_grad=True needs leaf values (pass values.detach())")
        vals.requires_grad_(True)
    out = SparseTensor(idx, vals, shape, bool(is_coalesced))
    return out


def to_sparse(input: Tensor, sparse_dim: int | None = None) -> SparseTensor:
    """The nonzero elements of a dense tensor as a coalesced COO tensor (differentiable in ``input``)."""
    if isinstance(input, SparseTensor):
        return input
    if sparse_dim is not None and sparse_dim != input.ndim:
        raise NotImplementedError("to_sparse: hybrid tensors (sparse_dim < ndim) are not supported")
    if input.ndim == 0:
        raise ShapeError("to_sparse: a 0-d tensor cannot be made sparse")

    nz = nonzero(input)  # (nnz, ndim), row-major order: already coalesced
    idx = nz.t() if nz.ndim == 2 and nz.shape[1] == input.ndim else nz.reshape(input.ndim, 0)
    vals = input[tuple(idx[d] for d in range(input.ndim))]
    return SparseTensor(idx.contiguous() if hasattr(idx, "contiguous") else idx, vals, tuple(input.shape), True)
