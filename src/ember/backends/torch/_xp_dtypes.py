"""The torch namespace's constants, NumPy's dtype names for torch's types, and the argument helpers its
functions share (``_t``: a tensor from a scalar, ``_dt``: a torch dtype, ``_axis``).
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import torch

ndarray = torch.Tensor
inf = math.inf
nan = math.nan
pi = math.pi
e = math.e
newaxis = None

# -- dtypes (NumPy's names for torch's types) -------------------------------------------------------
bool_ = torch.bool
uint8 = torch.uint8
int8 = torch.int8
int16 = torch.int16
int32 = torch.int32
int64 = torch.int64
float16 = torch.float16
bfloat16 = torch.bfloat16
float32 = torch.float32
float64 = torch.float64
intp = torch.int64
finfo = torch.finfo
iinfo = torch.iinfo

_PY_DTYPES: dict[Any, torch.dtype] = {bool: torch.bool, int: torch.int64, float: torch.float64}


def _dt(dtype: Any) -> Any:
    """A torch dtype from a torch dtype, a Python type or None."""
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    if dtype in _PY_DTYPES:
        return _PY_DTYPES[dtype]
    name = getattr(dtype, "name", None) or str(dtype)
    return getattr(torch, "bool" if name in ("bool", "bool_") else name)


def _t(x: Any, like: Any = None) -> torch.Tensor:
    """``x`` as a tensor (a Python scalar takes ``like``'s device; its dtype follows NumPy's weak rule).

    A scalar is made by a fill on ``like``'s device: ``torch.tensor(x, device=...)`` would copy it from the host,
    and on a GPU that copy waits until everything queued before it has run."""
    if isinstance(x, torch.Tensor):
        return x
    if like is not None and isinstance(x, (int, float, builtins.bool)):
        return torch.full((), x, dtype=_weak_dtype(x, like.dtype), device=like.device)
    return torch.as_tensor(x, device=like.device if like is not None else None)


def _weak_dtype(x: Any, dtype: torch.dtype) -> torch.dtype:
    if isinstance(x, float) and not (dtype.is_floating_point or dtype.is_complex):
        return torch.get_default_dtype()
    if isinstance(x, int) and not isinstance(x, builtins.bool) and dtype == torch.bool:
        return torch.int64
    return dtype


def _axis(axis: Any) -> Any:
    if axis is None:
        return None
    if isinstance(axis, (tuple, list)):
        return tuple(int(a) for a in axis)
    return int(axis)


def _shape(shape: Any) -> tuple[int, ...]:
    return (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)
