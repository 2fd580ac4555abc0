"""``ember.types`` (PyTorch's ``torch.types``): the type aliases annotations in PyTorch code import.

Ember has no symbolic sizes, so ``IntLikeType``/``FloatLikeType``/``BoolLikeType`` are the plain Python types.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Sequence
from typing import IO, Union

from ._device import device as _device
from ._dtype import DType as _dtype  # noqa: N813 - PyTorch's name
from ._size import Size
from ._storage import UntypedStorage as Storage
from ._tensor import Tensor
from ._torch_extras import layout as _layout

__all__ = [
    "BoolLikeType", "Device", "FileLike", "FloatLikeType", "IntLikeType", "Number", "Storage", "Tensor",
    "_TensorOrTensors", "_bool", "_complex", "_device", "_dtype", "_float", "_int", "_layout", "_size", "_str",
]  # fmt: skip

_bool = builtins.bool
_complex = builtins.complex
_float = builtins.float
_int = builtins.int
_str = builtins.str

Number = Union[int, float, bool]  # noqa: UP007 - an alias usable at run time, as PyTorch's
Device = Union[_device, str, int, None]  # noqa: UP007
FileLike = Union[str, os.PathLike[str], IO[bytes]]  # noqa: UP007
_size = Union[Size, list[int], tuple[int, ...]]  # noqa: UP007
_TensorOrTensors = Union[Tensor, Sequence[Tensor]]  # noqa: UP007
IntLikeType = int
FloatLikeType = float
BoolLikeType = bool
