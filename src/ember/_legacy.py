"""PyTorch's legacy constructors: ``ember.Tensor(*sizes)``, ``ember.FloatTensor``, ..., ``Tensor.new``.

``ember.Tensor(2, 3)`` is an uninitialised float tensor of shape (2, 3) and ``ember.Tensor([1, 2])`` a
float tensor (the default dtype), as in PyTorch. One difference: a NumPy array or a Tensor keeps its
dtype (``ember.Tensor(np.arange(3))`` is int64), because Ember's own code wraps arrays this way.
``ember.tensor(data)`` (dtype inferred) is the constructor to prefer.

``ember.FloatTensor`` & co. are constructors and ``isinstance`` checks at once:
``isinstance(x, ember.LongTensor)`` is true for an int64 tensor on the CPU, as in PyTorch.
"""

from __future__ import annotations

import builtins
import warnings
from typing import Any

from ._convert import LEGACY_TYPE_NAMES, _sizes, parse_legacy_type
from ._creation import empty, tensor
from ._device import set_default_device
from ._dtype import DType, as_dtype, set_default_dtype
from ._tensor import Tensor

__all__ = [
    "BFloat16Tensor", "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor", "HalfTensor",
    "IntTensor", "LongTensor", "ShortTensor", "new", "set_default_tensor_type",
]  # fmt: skip


class _LegacyType(type):
    """The metaclass of ``ember.FloatTensor`` & co.: calling builds a tensor, ``isinstance`` checks the dtype."""

    dtype_name: str

    def __call__(cls, *args: Any, device: Any = None) -> Tensor:  # type: ignore[override]
        return _build(as_dtype(cls.dtype_name), args, device, cls.__name__)

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.dtype.name == cls.dtype_name and obj.device.type == "cpu"

    @property
    def dtype(cls) -> DType:
        return as_dtype(cls.dtype_name)


def _build(dtype: DType, args: tuple[Any, ...], device: Any, op: str) -> Tensor:
    if not args:
        return empty(0, dtype=dtype, device=device)
    shape = _sizes(args, op)
    if shape is not None:
        return empty(*shape, dtype=dtype, device=device)
    if len(args) != 1:
        raise TypeError(f"{op}(): expected one sequence of data or integer sizes, got {len(args)} arguments")
    if isinstance(args[0], (float, complex, builtins.bool)):  # PyTorch: data must be a sequence (2.5 is no size)
        raise TypeError(f"{op}(): data must be a sequence or integer sizes, got {type(args[0]).__name__} "
                        f"{args[0]!r}; ember.tensor({args[0]!r}) makes a 0-d tensor")  # fmt: skip
    return tensor(args[0], dtype=dtype, device=device)


def _legacy(dtype: str) -> type:
    name = LEGACY_TYPE_NAMES[dtype]
    doc = f"``{name}(*sizes)`` (uninitialised) or ``{name}(data)``: a {dtype} tensor (PyTorch's legacy type)."
    return _LegacyType(name, (), {"dtype_name": dtype, "__doc__": doc, "__module__": "ember"})


FloatTensor = _legacy("float32")
DoubleTensor = _legacy("float64")
HalfTensor = _legacy("float16")
BFloat16Tensor = _legacy("bfloat16")
LongTensor = _legacy("int64")
IntTensor = _legacy("int32")
ShortTensor = _legacy("int16")
CharTensor = _legacy("int8")
ByteTensor = _legacy("uint8")
BoolTensor = _legacy("bool")


def new(self: Tensor, *args: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """``x.new(*sizes)`` (uninitialised) or ``x.new(data)``: a tensor of ``x``'s dtype and device."""
    return _build(as_dtype(dtype) if dtype is not None else self.dtype, args, device or self.device, "Tensor.new")


_WARNED: list[builtins.bool] = [False]


def set_default_tensor_type(t: Any) -> None:
    """Deprecated ``torch.set_default_tensor_type``: ``set_default_dtype`` (and ``set_default_device("cuda")`` for
    ``"torch.cuda.FloatTensor"`` & co.). ``t`` is a legacy type (``ember.DoubleTensor``) or its name."""
    if not _WARNED[0]:
        _WARNED[0] = True
        warnings.warn(
            "torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use torch.set_default_dtype() "
            "and torch.set_default_device() as alternatives.",
            UserWarning,
            stacklevel=2,
        )
    name = t if isinstance(t, str) else f"ember.{getattr(t, '__name__', t)}"
    dtype_name, cuda = parse_legacy_type(name)
    if dtype_name is None:
        raise TypeError(f"invalid type: {name!r}")
    dtype = as_dtype(dtype_name)
    if not dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    if cuda:
        try:
            set_default_device("cuda")
        except Exception as e:  # PyTorch's TypeError, saying why
            raise TypeError(f"type {name} not available: {e}") from None
    set_default_dtype(dtype)
