"""``ember.utils.dlpack`` (PyTorch's ``torch.utils.dlpack``): zero-copy exchange with NumPy, CuPy, torch and other
array libraries through DLPack."""

from .._creation import from_dlpack, to_dlpack

__all__ = ["from_dlpack", "to_dlpack"]
