"""``torch.utils.data._utils.collate``: ``collate(batch, collate_fn_map=...)``, the collation PyTorch code extends by
mapping its own types to functions (``default_collate_fn_map``), and the per-type functions of ``default_collate``.

Each leaf function batches a list of samples of one kind with Ember's ``default_collate``; ``collate`` looks the
first sample's type up in the map (exact type, then ``isinstance``), else recurses into mappings, named tuples and
sequences as ``default_collate`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..._tensor import Tensor
from ..dataloader import default_collate, default_convert

__all__ = [
    "collate", "collate_float_fn", "collate_int_fn", "collate_numpy_array_fn", "collate_numpy_scalar_fn",
    "collate_str_fn", "collate_tensor_fn", "default_collate", "default_collate_err_msg_format",
    "default_collate_fn_map", "default_convert",
]  # fmt: skip

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)


def _leaf(batch: Sequence[Any], *, collate_fn_map: Any = None) -> Any:
    return default_collate(batch)


collate_tensor_fn = collate_numpy_array_fn = collate_numpy_scalar_fn = _leaf
collate_float_fn = collate_int_fn = collate_str_fn = _leaf

default_collate_fn_map: dict[type | tuple[type, ...], Callable[..., Any]] = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def collate(batch: Sequence[Any], *, collate_fn_map: dict[Any, Callable[..., Any]] | None = None) -> Any:
    """Batch ``batch`` (a list of samples), calling ``collate_fn_map[type]`` for the types it maps."""
    first = batch[0]
    kind = type(first)
    if collate_fn_map is not None:
        if kind in collate_fn_map:
            return collate_fn_map[kind](batch, collate_fn_map=collate_fn_map)
        for key, fn in collate_fn_map.items():
            if isinstance(first, key):
                return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(first, Mapping):
        return {k: collate([b[k] for b in batch], collate_fn_map=collate_fn_map) for k in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return kind(*(collate(list(s), collate_fn_map=collate_fn_map) for s in zip(*batch, strict=True)))
    if isinstance(first, Sequence) and not isinstance(first, (str, bytes)):
        n = len(first)
        if any(len(b) != n for b in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [collate(list(s), collate_fn_map=collate_fn_map) for s in zip(*batch, strict=True)]
    raise TypeError(default_collate_err_msg_format.format(kind))
