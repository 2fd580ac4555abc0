"""In-place view methods: ``t_``, ``transpose_``/``swapaxes_``/``swapdims_``, ``squeeze_``, ``unsqueeze_``,
``as_strided_``: the tensor itself takes the view's shape (PyTorch's metadata change in place).

The view is made out of place from a stand-in for the tensor's old self (its operator records the gradient),
then the tensor becomes it: same storage, the view's history, a new version (as PyTorch bumps it). A tensor
that was not a view becomes a view of that stand-in, its hidden root (``autograd/_views.py`` resolves views
taken earlier to it), so writes through those views and through the tensor still meet in one storage. A leaf
that requires grad (or a view of one) is refused, as in PyTorch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ..autograd._views import keep_hooks_on_old_version, move_retained
from ._indexing_copies import as_strided
from ._indexing_view import squeeze, t, transpose, unsqueeze
from ._inplace import _check_leaf

__all__ = ["as_strided_"]
METHODS = ["t_", "transpose_", "swapaxes_", "swapdims_", "squeeze_", "unsqueeze_", "as_strided_"]


def _become(x: Tensor, name: str, view: Callable[..., Tensor], *args: Any) -> Tensor:
    """Give ``x`` the metadata (and history) of ``view(x, *args)``; returns ``x``."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(x).__name__}")
    _check_leaf(x, name)
    # x's old self, as a tensor of its own (the view's node keeps its input's shape); a root becomes the root
    # that its earlier views (and x, now) are views of
    src = Tensor._make(x._data, x._backend)
    src._vc, src._view = x._vc, x._view
    src._requires_grad, src._creator, src._out_idx = x._requires_grad, x._creator, x._out_idx
    r = view(src, *args)
    if r is not src and (r._view is None or r._vc is not x._vc):
        raise RuntimeError(f"{name}: this tensor's layout allows no such view in place; use the out-of-place form")
    if r is not src:
        x._data, x._view = r._data, r._view
        if r._creator is not None:  # (nothing recorded, under no_grad or without grad: x keeps its place)
            keep_hooks_on_old_version(x)
            x._requires_grad, x._creator, x._out_idx = r._requires_grad, r._creator, r._out_idx
            move_retained(x)
    x._vc[0] += 1
    if x._view is not None:
        x._view = (x._view[0], x._view[1], x._vc[0])  # x's history is in step with its base's
    return x


def t_(input: Tensor) -> Tensor:
    """In-place ``t``: this tensor becomes its transpose (at most 2 dims); returns it."""
    return _become(input, "t_", t)


def transpose_(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """In-place ``transpose``: dims ``dim0`` and ``dim1`` of this tensor swap; returns it."""
    return _become(input, "transpose_", transpose, dim0, dim1)


def swapaxes_(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """In-place ``swapaxes`` (``transpose_``)."""
    return _become(input, "swapaxes_", transpose, axis0, axis1)


def swapdims_(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """In-place ``swapdims`` (``transpose_``)."""
    return _become(input, "swapdims_", transpose, dim0, dim1)


def squeeze_(input: Tensor, dim: Any = None) -> Tensor:
    """In-place ``squeeze``: size-1 dims (all, or those of ``dim``, an int or a tuple) are removed; returns it."""
    return _become(input, "squeeze_", squeeze, dim)


def unsqueeze_(input: Tensor, dim: int) -> Tensor:
    """In-place ``unsqueeze``: a size-1 dim is inserted at ``dim``; returns it."""
    return _become(input, "unsqueeze_", unsqueeze, dim)


def as_strided_(input: Tensor, size: Any, stride: Any, storage_offset: int | None = None) -> Tensor:
    """In-place ``as_strided``: this tensor becomes the strided view (over its elements in row-major order,
    as Ember's ``as_strided``); returns it."""
    return _become(input, "as_strided_", as_strided, size, stride, storage_offset)
