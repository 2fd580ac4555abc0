"""Tensor's conversions that need no operator: to Python numbers, lists and NumPy, the dtype shorthands
(``float()``, ``long()``, ...), ``cpu()``/``cuda()`` and device queries. A mixin of ``Tensor`` (``_tensor.py``),
kept apart to keep that file small; every method goes through ``Tensor.to`` or the backend.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ._convert import legacy_type_name, parse_legacy_type
from ._device import device as _device_cls
from ._dtype import BY_NAME, channels_last, channels_last_3d, contiguous_format, preserve_format
from ._errors import ShapeError
from ._storage import TypedStorage, UntypedStorage
from .backends import Backend

if TYPE_CHECKING:
    from ._device import device as _device
    from ._dtype import DType
    from ._tensor import Tensor

_bool = bool


class TensorConversions:
    """The conversion methods of ``Tensor`` (its base class), and its facts: device and kind flags, sizes."""

    __slots__ = ()

    if TYPE_CHECKING:  # what the methods use of Tensor
        _data: Any
        _backend: Any
        _out_idx: int
        requires_grad: _bool

        @property
        def shape(self) -> tuple[int, ...]: ...
        @property
        def dtype(self) -> DType: ...
        @property
        def device(self) -> _device: ...
        def numel(self) -> int: ...
        def to(
            self, *args: Any, dtype: Any = None, device: Any = None, non_blocking: _bool = False, copy: _bool = False
        ) -> Tensor: ...

    def __bool__(self) -> _bool:
        if self.numel() != 1:
            raise RuntimeError(
                f"the truth value of a tensor with {self.numel()} elements (shape {tuple(self.shape)}) is "
                "ambiguous; use .any() or .all()"
            )
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __index__(self) -> int:
        if self.dtype.kind in "fc" or self.numel() != 1:
            raise TypeError(
                f"only integer tensors of a single element can be an index, got {self.dtype}{tuple(self.shape)}"
            )
        return int(self.item())

    @property
    def is_meta(self) -> _bool:
        """Whether the tensor lives on the meta device (a shape, dtype and strides; no data)."""
        return self._backend.device.type == "meta"

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def untyped_storage(self) -> UntypedStorage:
        """The memory block this tensor views, in bytes: ``data_ptr()``, ``nbytes()`` (equal for views of one
        block)."""
        return UntypedStorage(cast("Tensor", self))

    def storage(self) -> TypedStorage:
        """The memory block this tensor views, counted in elements of its dtype."""
        return TypedStorage(cast("Tensor", self))

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Any = None) -> Any:  # fmt: skip
        """A DLPack capsule sharing this tensor's memory (the array API's exchange protocol)."""
        if self.requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        given = {"stream": stream, "max_version": max_version, "dl_device": dl_device, "copy": copy}
        return self._data.__dlpack__(**{k: v for k, v in given.items() if v is not None})

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(DLPack device type, index)``: (1, 0) on the CPU, (2, i) on CUDA device i."""
        kind, index = self._data.__dlpack_device__()
        return int(kind), int(index)

    def item(self) -> Any:
        """The value of a one-element tensor as a Python number."""
        if self.numel() != 1:
            raise ShapeError(
                f"item(): only a one-element tensor converts to a Python number, got shape {tuple(self.shape)}"
            )
        if self._backend.device.type == "meta":
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        return self._backend.to_numpy(self._data).reshape(()).item()

    def tolist(self) -> Any:
        return self._backend.to_numpy(self._data).tolist()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The values as a NumPy array (shares memory on the CPU backend; refuses a tensor needing grad unless
        ``force``: then a detached host copy, as PyTorch's)."""
        if force:
            t = cast("Tensor", self).detach().cpu().resolve_conj().resolve_neg()
            return t.numpy()
        if self._backend.device.type == "meta":
            raise TypeError(
                "can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory "
                "first."
            )
        if self.requires_grad:
            raise RuntimeError("numpy(): call .detach().numpy() on a tensor that requires grad")
        return np.asarray(self._backend.to_numpy(self._data))

    def cpu(self, memory_format: Any = None) -> Tensor:
        """This tensor on the CPU (the selected CPU backend when it is elsewhere now)."""
        return cast("Tensor", self) if self._backend.device.type == "cpu" else self.to(device="cpu")

    def cuda(self, device: Any = None, non_blocking: _bool = False, memory_format: Any = None) -> Tensor:
        """This tensor on a CUDA device (``device``: an index, ``"cuda:N"`` or a device)."""
        if device is None:
            device = "cuda"
        elif isinstance(device, int) and not isinstance(device, _bool):
            device = f"cuda:{device}"
        return self.to(device=device, non_blocking=non_blocking)

    @property
    def is_cuda(self) -> _bool:
        return self._backend.device.type == "cuda"

    @property
    def is_cpu(self) -> _bool:
        return self._backend.device.type == "cpu"

    @property
    def is_mps(self) -> _bool:
        return self._backend.device.type == "mps"

    # Kinds of tensor Ember does not have (PyTorch programs test for them).
    is_xpu = is_quantized = is_nested = is_mkldnn = False

    def is_contiguous(self, memory_format: Any = None) -> _bool:
        """Whether the elements lie in memory in row-major order, or in the order ``memory_format`` names
        (``channels_last``: N, H, W, C; ``channels_last_3d``: N, D, H, W, C), read from the strides. Ember keeps its
        own results row-major: ``channels_last`` is a layout hint it accepts and does not need."""
        if memory_format is None or memory_format in (contiguous_format, preserve_format):  # (PyTorch answers so)
            return cast(_bool, self._backend.is_contiguous(self._data))
        order = {channels_last: (1, 3, 2, 0), channels_last_3d: (1, 4, 3, 2, 0)}.get(memory_format)
        if order is None:
            raise RuntimeError(f"is_contiguous: unsupported memory format {memory_format}")
        shape, strides = self.shape, self._backend.strides(self._data)
        if len(shape) != len(order):
            return False
        expected = 1
        for d in order:
            if shape[d] != 1:
                if strides[d] != expected:
                    return False
                expected *= shape[d]
        return True

    def dim_order(self) -> tuple[int, ...]:
        """The dims from outermost to innermost in memory (``(0, 1, 2, 3)`` for a row-major 4-d tensor)."""
        strides = self._backend.strides(self._data)
        return tuple(sorted(range(len(strides)), key=lambda d: -strides[d]))

    def __contains__(self, element: Any) -> _bool:
        """``element in t``: whether any entry equals ``element`` (a number or a tensor)."""
        if not isinstance(element, (int, float, complex, _bool)) and not hasattr(element, "shape"):
            raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                               f"{type(element).__name__}")  # fmt: skip
        return _bool((self == element).any())  # type: ignore[operator]

    def is_inference(self) -> _bool:
        """False: ``ember.inference_mode`` records no graph but makes no tensors of a kind of their own (a PyTorch
        tensor made inside one answers True)."""
        return False

    @property
    def itemsize(self) -> int:
        """Bytes per element (``element_size()``)."""
        return self.dtype.itemsize

    def ndimension(self) -> int:
        return len(self._data.shape)

    def is_signed(self) -> _bool:
        """Whether the dtype holds negative values (every float and complex dtype, the signed integers)."""
        return self.dtype.kind not in "bu"

    def is_same_size(self, other: Tensor) -> _bool:
        return tuple(self._data.shape) == tuple(other._data.shape)

    def is_nonzero(self) -> _bool:
        """The one element's truth; a tensor of any other size is refused, as in PyTorch."""
        if math.prod(self._data.shape) != 1:
            raise RuntimeError(
                f"is_nonzero: a Tensor with {math.prod(self._data.shape)} elements cannot be converted to a bool"
            )
        if self._backend.device.type == "meta":
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        return _bool(self._backend.to_numpy(self._data).reshape(()) != 0)

    @property
    def output_nr(self) -> int:
        """Which output of its ``grad_fn`` this tensor is (0 for leaves)."""
        return int(self._out_idx)

    def get_device(self) -> int:
        """The CUDA device index, or -1 on the CPU and the meta device (PyTorch's convention)."""
        d = self._backend.device
        return int(d.index or 0) if d.type == "cuda" else -1

    def is_pinned(self) -> _bool:
        return self._backend.is_pinned(self._data)

    def type(self, dtype: Any = None) -> Any:
        """``"ember.FloatTensor"`` (the legacy type name), or a copy converted to ``dtype``."""
        if dtype is None:
            return legacy_type_name(self.dtype, self.device.type)
        if isinstance(dtype, str) and "Tensor" in dtype:  # "torch.IntTensor", "torch.cuda.FloatTensor"
            name, cuda = parse_legacy_type(dtype)
            if name is None:
                raise ValueError(f"invalid type: {dtype!r}")
            return self.to(device="cuda" if cuda else self.device, dtype=name)
        return self.to(getattr(dtype, "dtype", dtype))

    def float(self, memory_format: Any = None) -> Tensor:
        return self.to(dtype="float32")

    def double(self, memory_format: Any = None) -> Tensor:
        return self.to(dtype="float64")

    def half(self, memory_format: Any = None) -> Tensor:
        return self.to(dtype="float16")

    def bfloat16(self, memory_format: Any = None) -> Tensor:
        return self.to(dtype="bfloat16")

    def cfloat(self, memory_format: Any = None) -> Tensor:
        return self.to(dtype="complex64")

    def cdouble(self, memory_format: Any = None) -> Tensor:
        return self.to(dtype="complex128")

    def long(self, memory_format: Any = None) -> Tensor:
        return self.to(dtype="int64")

    def int(self, memory_format: Any = None) -> Tensor:
        return self.to(dtype="int32")

    def bool(self, memory_format: Any = None) -> Tensor:
        return self.to(dtype="bool")

    def byte(self, memory_format: Any = None) -> Tensor:
        return self.to(dtype="uint8")

    def char(self, memory_format: Any = None) -> Tensor:
        return self.to(dtype="int8")

    def short(self, memory_format: Any = None) -> Tensor:
        return self.to(dtype="int16")


def _is_device(a: Any) -> _bool:
    """A device given to ``to()``: a device, a device string, a Backend, or a torch.device."""
    if isinstance(a, _device_cls):
        return True
    if isinstance(a, str):  # a dtype's name, else a device (an unknown one is then refused as a device)
        return a.replace("torch.", "").replace("ember.", "") not in BY_NAME
    return isinstance(a, Backend) or (a.__class__.__name__ == "device" and hasattr(a, "type"))
