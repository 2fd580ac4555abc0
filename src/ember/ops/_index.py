"""Indexing reads (differentiable getitem) and the scatter that is their gradient."""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..autograd._function import Op
from ..autograd._views import make_view

__all__ = ["getitem", "nonzero"]
#: the functions that are also Tensor methods (``t.name(...)``)
METHODS = ["nonzero"]


def to_index(index: Any, backend: Any) -> tuple[Any, bool]:
    """Convert an index with Tensors and lists into backend arrays; also say whether it is basic."""
    items = index if isinstance(index, tuple) else (index,)
    out = []
    basic = True
    for it in items:
        if isinstance(it, Tensor):
            if it._backend is not backend:
                raise RuntimeError(f"index: index tensor on {it.device}, indexed tensor on {backend.device}")
            if it._data.dtype.kind == "f":
                raise IndexError(f"index: tensors used as indices must be integer or bool, got {it.dtype}")
            out.append(it._data)
            basic = False
        elif isinstance(it, (list,)):
            out.append(backend.asarray(it))
            basic = False
        elif it is None or it is Ellipsis or isinstance(it, (int, slice)):
            out.append(it)
        elif hasattr(it, "__index__") and getattr(it, "ndim", 0) == 0:
            out.append(int(it))
        else:
            out.append(backend.asarray(it))
            basic = False
    return tuple(out), basic


class GetItem(Op):
    saves_inputs = False

    def forward(self, x: Any, index: Any) -> Any:
        idx, basic = to_index(index, self.backend)
        self.idx, self.basic, self.shape = idx, basic, x.shape
        try:
            return x[idx]
        except IndexError as e:
            raise IndexError(f"getitem: {e} (tensor of shape {tuple(x.shape)})") from None

    def backward(self, g: Tensor) -> tuple[Tensor, None]:
        return IndexBackward.apply(g, self.shape, self.idx, self.basic), None


class IndexBackward(Op):
    """Scatter ``g`` into zeros of ``shape`` at ``idx`` (repeated indices add up)."""

    saves_inputs = False

    def forward(self, g: Any, shape: tuple[int, ...], idx: Any, basic: bool) -> Any:
        self.idx = idx
        z = self.backend.xp.zeros(shape, dtype=g.dtype)
        if basic:
            z[idx] = g
        else:
            self.backend.index_add(z, idx, g)
        return z

    def backward(self, gg: Tensor) -> tuple[Tensor, None, None, None]:
        return GetItem.apply(gg, self.idx), None, None, None


def getitem(input: Tensor, index: Any) -> Tensor:
    """``input[index]`` with ints, slices, None, ..., bool masks and integer tensors."""
    out: Tensor = GetItem.apply(input, index)
    if input._backend.is_view_of(out._data, input._data):
        idx = to_index(index, input._backend)[0]
        make_view(out, input, lambda a: a[idx])
    return out


class IndexPut(Op):
    """Out of place ``x[idx] = value``: the graph form of ``__setitem__``."""

    saves_inputs = False

    def forward(self, x: Any, value: Any, index: Any) -> Any:
        idx, _ = to_index(index, self.backend)
        self.idx = idx
        out = self.backend.xp.array(x, copy=True)
        out[idx] = value
        return out

    def backward(self, g: Tensor) -> tuple[Any, Any, None]:
        from ._util import sum_to

        x, value, _ = self.inputs  # type: ignore[misc]
        gx = None
        if isinstance(x, Tensor) and x.requires_grad:
            gx = IndexPut.apply(g, 0.0, self.idx)
        gv = None
        if isinstance(value, Tensor) and value.requires_grad:
            gv = sum_to(GetItem.apply(g, self.idx), value.shape)
        return gx, gv, None


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:
    """Indices of the nonzero elements: an (n, ndim) int64 tensor, or one tensor per dim."""
    xp = input._backend.xp
    idx = xp.nonzero(input._data)
    be = input._backend
    if as_tuple:
        return tuple(Tensor._make(xp.asarray(i, dtype=xp.int64), be) for i in idx)
    return Tensor._make(xp.stack(idx, axis=-1).astype(xp.int64) if idx else xp.zeros((0, 0), xp.int64), be)
