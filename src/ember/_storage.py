"""``Tensor.untyped_storage()`` / ``Tensor.storage()``: what PyTorch code asks of a tensor's memory block (its
start address, its size), e.g. to find tensors sharing memory before saving them (safetensors, Hugging Face).

Ember's tensors hold backend arrays, not storages: these objects describe the block an array views (NumPy's root
array, torch's storage, a CuPy allocation), read when asked; they do not own it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._dtype import DType

if TYPE_CHECKING:
    from ._tensor import Tensor

__all__ = ["TypedStorage", "UntypedStorage"]


class UntypedStorage:
    """The bytes a tensor views: ``data_ptr()``, ``nbytes()``, ``device``."""

    def __init__(self, tensor: Tensor) -> None:
        be, a = tensor._backend, tensor._data
        self.device = tensor.device
        self._ptr = be.address(a) - be.storage_offset(a) * tensor.element_size()
        self._nbytes = be.storage_nbytes(a)

    def data_ptr(self) -> int:
        """The address of the block's first byte (0 on the meta device)."""
        return self._ptr

    def nbytes(self) -> int:
        """The block's size in bytes."""
        return self._nbytes

    def size(self) -> int:
        """The block's size in bytes (its elements are bytes)."""
        return self._nbytes

    def element_size(self) -> int:
        """1: an untyped storage counts bytes."""
        return 1

    def __len__(self) -> int:
        return self._nbytes

    @property
    def is_meta(self) -> bool:
        """True on the meta device (no data)."""
        return self.device.type == "meta"

    def __repr__(self) -> str:
        return f"<ember.UntypedStorage of {self._nbytes} bytes on {self.device}>"


class TypedStorage(UntypedStorage):
    """The same block counted in elements of ``dtype`` (PyTorch's older ``Tensor.storage()``)."""

    def __init__(self, tensor: Tensor) -> None:
        super().__init__(tensor)
        self.dtype: DType = tensor.dtype

    def size(self) -> int:
        """The block's size in elements."""
        return self._nbytes // self.dtype.itemsize

    def element_size(self) -> int:
        """The size of one element in bytes."""
        return self.dtype.itemsize

    def __len__(self) -> int:
        return self.size()

    def __repr__(self) -> str:
        return f"<ember.TypedStorage of {self.size()} {self.dtype.name} on {self.device}>"
