"""More of PyTorch's top-level names served by what Ember has: deprecated linear-algebra forms (``cholesky``,
``lu``), ``nonzero_static``, ``index_put_``, ``frombuffer``, ``get_device``, layouts (``strided``; ``Tensor.layout``),
``unsafe_split``/``unsafe_chunk``, warning switches (``set_warn_always``), ``set_flush_denormal``,
``OutOfMemoryError``, ``PyTorchFileReader`` and the symbolic scalar types (``SymInt``: ``_symbolic.py``)."""

from __future__ import annotations

import builtins
import warnings
from typing import Any

import numpy as np

from . import backends
from ._creation import from_numpy, full
from ._dtype import NamedTag, as_dtype, int64
from ._errors import OutOfMemoryError
from ._file_reader import PyTorchFileReader
from ._symbolic import SymBool, SymFloat, SymInt
from ._tensor import Tensor
from .ops import cat, chunk, nonzero, split
from .ops._lapack import cholesky as _linalg_cholesky
from .ops._linalg_lu import lu_factor_ex
from .sparse._coo import SparseTensor

__all__ = [
    "OutOfMemoryError", "PyTorchFileReader", "SymBool", "SymFloat", "SymInt",
    "cholesky", "frombuffer", "get_device", "get_device_module", "index_put_",
    "is_warn_always_enabled", "layout", "lu", "nonzero_static", "set_flush_denormal", "set_warn_always", "sparse_bsc",
    "sparse_bsr", "sparse_coo", "sparse_csc", "sparse_csr", "strided", "unsafe_chunk", "unsafe_split",
]  # fmt: skip


class layout(NamedTag):  # noqa: N801 - PyTorch's name
    """A memory layout (``ember.strided``: every dense tensor's; the sparse ones name PyTorch's)."""

    __slots__ = ()


strided, sparse_coo, sparse_csr = layout("strided"), layout("sparse_coo"), layout("sparse_csr")
sparse_csc, sparse_bsr, sparse_bsc = layout("sparse_csc"), layout("sparse_bsr"), layout("sparse_bsc")

Tensor.layout = property(lambda self: strided, doc="The memory layout: ``ember.strided`` (dense).")  # type: ignore[attr-defined]
SparseTensor.layout = sparse_coo  # type: ignore[assignment]

_WARN_ALWAYS = [False]
_WARNED: set[str] = set()


def set_warn_always(b: bool) -> None:
    """Make warnings PyTorch gives once per process (deprecations) be given at every call (``True``)."""
    _WARN_ALWAYS[0] = bool(b)


def is_warn_always_enabled() -> bool:
    """Whether ``set_warn_always(True)`` is in effect."""
    return _WARN_ALWAYS[0]


def _warn_once(key: str, message: str) -> None:
    if _WARN_ALWAYS[0] or key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(message, UserWarning, stacklevel=3)


def cholesky(input: Tensor, upper: bool = False, *, out: Any = None) -> Tensor:
    """Deprecated ``torch.cholesky``: ``linalg.cholesky(input, upper=upper)`` (PyTorch's warning, once)."""
    _warn_once("cholesky", "torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a "
               "future PyTorch release.")  # fmt: skip
    r = _linalg_cholesky(input, upper=upper)
    if out is not None:
        out.copy_(r)
        return out  # type: ignore[no-any-return]
    return r


def lu(A: Tensor, pivot: bool = True, get_infos: bool = False, out: Any = None) -> tuple[Tensor, ...]:  # noqa: N803
    """Deprecated ``torch.lu``: ``(A_LU, pivots)``, or ``(A_LU, pivots, infos)`` with ``get_infos`` (1-based int32
    pivots, as ``linalg.lu_factor_ex``; ``lu_unpack`` reads them)."""
    _warn_once("lu", "torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will "
               "be removed in a future PyTorch release.")  # fmt: skip
    if not pivot:
        raise RuntimeError("lu without pivoting is not implemented on the CPU")
    LU, pivots, infos = lu_factor_ex(A)
    return (LU, pivots, infos) if get_infos else (LU, pivots)


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """The indices of the non-zero elements as ``nonzero``, cut or padded with ``fill_value`` to ``size`` rows."""
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    idx = nonzero(input)
    n = idx.shape[0]
    if n >= size:
        return idx[:size]
    pad = full((size - n, input.ndim), fill_value, dtype=int64, device=input.device)
    return cat([idx, pad], 0)


def index_put_(input: Tensor, indices: Any, values: Tensor, accumulate: bool = False) -> Tensor:
    """``input.index_put_(indices, values, accumulate)``: ``input[indices] = values`` (or ``+=``) in place."""
    return input.index_put_(indices, values, accumulate)  # type: ignore[no-any-return]


def frombuffer(buffer: Any, *, dtype: Any, count: int = -1, offset: int = 0, requires_grad: bool = False) -> Tensor:
    """A 1-d tensor over the bytes of ``buffer`` (anything with the buffer protocol), sharing its memory on the
    CPU backend: ``count`` elements of ``dtype`` from byte ``offset`` (-1: all that fit)."""
    d = as_dtype(dtype)
    np_dtype = np.dtype(d.name if d.name != "bfloat16" else "int16")  # bfloat16: its bits, viewed below
    size = builtins.len(memoryview(buffer).cast("B"))
    if offset < 0 or offset > size or (offset == size and size > 0):
        raise ValueError(f"both buffer length ({size}) and offset ({offset}) must be non-negative and the offset must "
                         "be smaller than the buffer length")  # fmt: skip
    if count == 0 or (count < 0 and size - offset < np_dtype.itemsize):
        raise ValueError(f"both buffer length ({size}) and count ({count}) must not be 0")
    if count > 0 and offset + count * np_dtype.itemsize > size:
        raise ValueError(f"requested buffer length ({count} * {np_dtype.itemsize} bytes) after offset ({offset}) "
                         f"must not be greater than actual buffer length ({size})")  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = from_numpy(np.frombuffer(buffer, dtype=np_dtype, count=count, offset=offset))
    if d.name == "bfloat16":
        t = t.view(d)
    return t.requires_grad_(True) if requires_grad else t


def get_device(input: Tensor) -> int:
    """The CUDA device index of ``input``, -1 on the CPU (``Tensor.get_device``)."""
    return input.get_device()  # type: ignore[no-any-return]


def unsafe_split(tensor: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """``split`` (PyTorch's unchecked form; Ember's views are always checked)."""
    return split(tensor, split_size_or_sections, dim)  # type: ignore[no-any-return]


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """``chunk`` (PyTorch's unchecked form; Ember's views are always checked)."""
    return chunk(input, chunks, dim)  # type: ignore[no-any-return]


def set_flush_denormal(mode: bool) -> bool:
    """Flush denormal floats to zero on the CPU (``mode``); True when done. The torch backend sets it in torch's
    kernels; NumPy cannot, so asking for flushing there returns False (and denormals are kept, as with False)."""
    if backends.current("cpu") == "torch":
        import torch

        return bool(torch.set_flush_denormal(bool(mode)))
    return not mode


def get_device_module(device: Any = None) -> Any:
    """The module of a device type: ``ember.cuda`` for ``"cuda:1"``, ``ember.cpu`` for ``"cpu"``; with no device, the
    accelerator's (CUDA's when there is one) or ``ember.cpu``."""
    import importlib

    from ._device import device as _device

    if device is None:
        from . import cuda

        kind = "cuda" if cuda.is_available() else "cpu"
    else:
        kind = device.type if isinstance(device, _device) else _device(device).type
    if kind not in ("cpu", "cuda"):
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered as 'ember.{kind}'.")
    return importlib.import_module(f"ember.{kind}")
