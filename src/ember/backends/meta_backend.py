"""The meta device (PyTorch's ``device="meta"``): tensors with a shape, dtype and strides, and no data.

Its arrays are ``MetaArray``s and its ``xp`` is ``_meta_xp``: NumPy's names computing only shapes, dtypes and
strides, so Ember's operators, autograd, modules and the backend's reference kernels run on it unchanged and
allocate nothing. The kernels whose references read values or lean on NumPy's memory (convolution by im2col
windows, pooling's value-dependent paths, in-place scatters) have shape rules here (``_kernels_meta.py``).
Reading values raises ``NotImplementedError`` (PyTorch's words), random draws make only shapes (Ember's
generator is not advanced, as PyTorch's is not), and moving a meta tensor elsewhere raises as in PyTorch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._device import device
from .._dtype import DType, bfloat16
from . import _meta_xp
from ._base import Backend
from ._kernels_meta import MetaKernels
from ._meta_array import NO_DATA, MetaArray, caller
from .numpy_backend import _COMPLEX, _FLOATS, NumpyBackend


class MetaBackend(MetaKernels, Backend):
    """Arrays that hold only a shape, a dtype and strides (``MetaArray``); the dtypes are NumPy's."""

    name = "meta"
    device_types = ("meta",)

    def __init__(self, dev: Any = "meta") -> None:
        self.device = device(dev).served_by("meta")
        self.xp = _meta_xp
        self.array_type = MetaArray
        self._dtypes = NumpyBackend.__new__(NumpyBackend)  # NumPy's dtype tables (bfloat16: ml_dtypes')
        self.float_dtypes = _FLOATS
        self.complex_dtypes = _COMPLEX
        self.grad_dtypes = self.float_dtypes | self.complex_dtypes

    @property
    def supports_bfloat16(self) -> bool:  # type: ignore[override]
        return True

    def device_name(self) -> str:
        return "meta"

    # -- arrays and dtypes -------------------------------------------------------------------
    def asarray(self, data: Any, dtype: DType | None = None) -> MetaArray:
        nd = None if dtype is None else self.native_dtype(dtype)
        if isinstance(data, MetaArray):
            return data if nd is None else data.astype(nd, copy=False)
        host = np.asarray(data) if nd is None else np.asarray(data, dtype=nd)  # (host data: its shape and dtype)
        return MetaArray(host.shape, host.dtype)

    def from_numpy(self, array: np.ndarray, non_blocking: bool = False) -> MetaArray:
        """An array of ``array``'s shape and dtype; its values are not read (nor copied)."""
        return MetaArray(array.shape, array.dtype)

    def to_numpy(self, array: Any) -> np.ndarray:
        if isinstance(array, MetaArray):
            raise NotImplementedError(f"{NO_DATA} ({caller()} reads values, and a meta tensor has none)")
        return np.asarray(array)

    def dtype_of(self, array: Any) -> DType:
        return self._dtypes.dtype_of(array)

    def native_dtype(self, dtype: DType) -> Any:
        nd = self._dtypes.native_dtype(dtype)
        if dtype is bfloat16 and nd not in self.float_dtypes:
            self.float_dtypes = self.float_dtypes | {nd}
            self.grad_dtypes = self.grad_dtypes | {nd}
        return nd

    def finfo(self, dtype: Any) -> Any:
        return self._dtypes.finfo(dtype)

    def astype(self, array: Any, dtype: DType) -> MetaArray:
        return array.astype(self.native_dtype(dtype), copy=False)  # type: ignore[no-any-return]

    def bfloat16_bits(self, array: Any) -> np.ndarray:
        raise NotImplementedError(NO_DATA)

    def bfloat16_from_bits(self, bits: np.ndarray) -> MetaArray:
        return MetaArray(bits.shape, self.native_dtype(bfloat16))

    # -- layout --------------------------------------------------------------------------------
    def is_view_of(self, array: Any, base: Any) -> bool:
        return isinstance(array, MetaArray) and isinstance(base, MetaArray) and array.storage is base.storage

    def is_plain(self, array: Any) -> bool:
        return bool(array.is_contiguous()) and 0 not in array.strides_el

    def strides(self, array: Any) -> tuple[int, ...]:
        return tuple(array.strides_el)

    def address(self, array: Any) -> int:
        return 0  # (PyTorch's ``data_ptr()`` of a meta tensor)

    def storage_offset(self, array: Any) -> int:
        return int(array.offset)

    def storage_nbytes(self, array: Any) -> int:
        return int(array.storage.nbytes)

    def as_strided(self, array: Any, shape: tuple[int, ...], strides: tuple[int, ...]) -> Any:
        return array.view_as(shape, tuple(strides))

    def diagonal(self, array: Any, offset: int, dim1: int, dim2: int) -> Any:
        return _meta_xp.diagonal(array, offset, dim1, dim2)

    def is_contiguous(self, array: Any) -> bool:
        return bool(array.is_contiguous())

    def transfer(self, array: Any, target: Backend, non_blocking: bool = False) -> Any:
        raise NotImplementedError(NO_DATA)

    def pin_memory(self, array: Any) -> Any:
        return array

    def is_pinned(self, array: Any) -> bool:
        return False

    def synchronize(self) -> None:
        return None

    # -- no values: no checks of them ----------------------------------------------------------
    def known_range(self, array: Any) -> tuple[int, int] | None:
        return None

    def check_index(self, shape: tuple[int, ...], index: Any) -> None:
        return None

    def check_known_index(self, shape: tuple[int, ...], index: Any, op: str = "") -> None:
        return None
