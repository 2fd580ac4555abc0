"""The torch namespace's shape, layout and indexing functions (NumPy's names and signatures)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import torch

from ._xp_dtypes import _axis, _shape, _t


# -- shape and layout ------------------------------------------------------------------------------
def reshape(x: Any, shape: Any) -> Any:
    return torch.reshape(x, _shape(shape))


def transpose(x: Any, axes: Sequence[int] | None = None) -> Any:
    return torch.permute(x, tuple(range(x.ndim - 1, -1, -1)) if axes is None else tuple(axes))


permute_dims = transpose


def swapaxes(x: Any, a: int, b: int) -> Any:
    return torch.transpose(x, a, b)


def moveaxis(x: Any, source: Any, destination: Any) -> Any:
    return torch.movedim(x, source, destination)


def expand_dims(x: Any, axis: Any) -> Any:
    if isinstance(axis, int):
        return torch.unsqueeze(x, axis)
    n = x.ndim + len(axis)
    for a in sorted(ax % n for ax in axis):
        x = torch.unsqueeze(x, a)
    return x


def squeeze(x: Any, axis: Any = None) -> Any:
    return torch.squeeze(x) if axis is None else torch.squeeze(x, _axis(axis))


def broadcast_to(x: Any, shape: Any) -> Any:
    return torch.broadcast_to(_t(x), _shape(shape))


def broadcast_arrays(*xs: Any) -> Any:
    return torch.broadcast_tensors(*xs)


def ravel(x: Any) -> Any:
    return torch.reshape(x, (-1,))


def concatenate(arrays: Sequence[Any], axis: int | None = 0) -> Any:
    if axis is None:
        return torch.cat([a.reshape(-1) for a in arrays])
    return torch.cat(list(arrays), dim=axis)


def stack(arrays: Sequence[Any], axis: int = 0) -> Any:
    return torch.stack(list(arrays), dim=axis)


def flip(x: Any, axis: Any = None) -> Any:
    axis = tuple(range(x.ndim)) if axis is None else (axis,) if isinstance(axis, int) else tuple(axis)
    return torch.flip(x, axis)


def roll(x: Any, shift: Any, axis: Any = None) -> Any:
    if axis is None:
        return torch.roll(x.reshape(-1), shift).reshape(x.shape)
    return torch.roll(x, shift, axis)


def diagonal(x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    return torch.diagonal(x, offset, axis1, axis2)


def pad(x: Any, pad_width: Any, mode: str = "constant", constant_values: Any = 0) -> Any:
    """NumPy's ``pad``: ``pad_width`` is one ``(before, after)`` per dimension (or one for all)."""
    n = x.ndim
    if isinstance(pad_width, int):
        pw = [(pad_width, pad_width)] * n
    elif len(pad_width) == 2 and isinstance(pad_width[0], int):
        pw = [tuple(pad_width)] * n
    else:
        pw = [tuple(p) for p in pad_width]
    flat: list[int] = []
    for lo, hi in reversed(pw):
        flat += [int(lo), int(hi)]
    if mode == "constant":
        return torch.nn.functional.pad(x, flat, mode="constant", value=constant_values)
    tmode = {"reflect": "reflect", "edge": "replicate", "wrap": "circular"}[mode]
    if x.ndim == 1 or not x.dtype.is_floating_point:  # torch pads only batched floats this way: take indices
        idx = []
        for d, (lo, hi) in enumerate(pw):
            i = torch.arange(x.shape[d], device=x.device, dtype=torch.float64).reshape(1, 1, -1)
            i = torch.nn.functional.pad(i, [int(lo), int(hi)], mode=tmode).reshape(-1).long()
            idx.append(i)
        return x[ix_(*idx)]
    lead = [d for d in range(n) if pw[d] == (0, 0)]
    if lead != list(range(len(lead))) or n - len(lead) > 3:
        raise NotImplementedError(f"pad: mode {mode!r} on the torch backend pads up to the last 3 dims only")
    k = n - len(lead)
    y = x.reshape((-1, 1) + tuple(x.shape[len(lead) :])) if lead else x.reshape((1, 1) + tuple(x.shape))
    y = torch.nn.functional.pad(y, flat[: 2 * k], mode=tmode)
    return y.reshape(tuple(x.shape[: len(lead)]) + tuple(y.shape[2:]))


# -- indexing --------------------------------------------------------------------------------------
def take(x: Any, indices: Any, axis: int | None = None) -> Any:
    indices = _t(indices).to(x.device)
    if axis is None:
        return x.reshape(-1)[indices]
    axis %= x.ndim
    out = torch.index_select(x, axis, indices.reshape(-1))
    return out.reshape(tuple(x.shape[:axis]) + tuple(indices.shape) + tuple(x.shape[axis + 1 :]))


def take_along_axis(x: Any, indices: Any, axis: int) -> Any:
    return torch.take_along_dim(x, indices, dim=axis)


def put_along_axis(x: Any, indices: Any, values: Any, axis: int) -> None:
    values = _t(values, x)
    x.scatter_(axis, indices, torch.broadcast_to(values, indices.shape).to(x.dtype))


def nonzero(x: Any) -> Any:
    return torch.nonzero(x, as_tuple=True)


def argsort(x: Any, axis: int = -1, kind: str | None = None) -> Any:
    return torch.argsort(x, dim=axis, stable=True)


def sort(x: Any, axis: int = -1, kind: str | None = None) -> Any:
    return torch.sort(x, dim=axis, stable=True).values


def unique(
    x: Any,
    return_index: builtins.bool = False,
    return_inverse: builtins.bool = False,
    return_counts: builtins.bool = False,
    axis: int | None = None,
) -> Any:
    if return_index:
        raise NotImplementedError("unique(return_index=True) is not available on the torch backend")
    out = torch.unique(x, sorted=True, return_inverse=return_inverse, return_counts=return_counts, dim=axis)
    return out


def unravel_index(indices: Any, shape: Sequence[int]) -> Any:
    return torch.unravel_index(_t(indices), tuple(int(s) for s in shape))


def ix_(*args: Any) -> tuple[Any, ...]:
    n = len(args)
    out = []
    for i, a in enumerate(args):
        a = _t(a)
        if a.dtype == torch.bool:
            a = torch.nonzero(a).reshape(-1)
        view = [1] * n
        view[i] = -1
        out.append(a.reshape(view))
    return tuple(out)


def einsum(subscripts: str, *operands: Any, optimize: Any = False) -> Any:
    return torch.einsum(subscripts, *operands)
