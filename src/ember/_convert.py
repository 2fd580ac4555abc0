"""Python data and NumPy arrays to backend arrays, and the legacy constructor's arguments: what ``Tensor(...)``
reads, below ``Tensor`` (``_tensor.py`` handles a Tensor given as data and calls ``array_of`` for the rest).
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from ._dtype import DType, as_dtype, bool_, get_default_dtype, int64, promote_types, to_complex
from ._errors import DTypeError, ShapeError, ValueRangeError
from .backends import get_backend

__all__ = ["array_of", "leaves", "legacy_type_name", "sequence_dtype", "tensor_init_args", "tensors_as_lists"]


def array_of(data: Any, dtype: Any, device: Any) -> tuple[Any, Any]:
    """``(array, backend)`` holding a copy of ``data`` (numbers, nested sequences, NumPy arrays) on ``device``."""
    be = get_backend(device)
    if isinstance(data, (np.ndarray, np.generic)):
        arr = np.array(data, copy=True)  # a tensor never shares the caller's array (as_tensor does)
        if dtype is None:  # a numpy array keeps its dtype
            _numpy_dtype(arr)  # refuses dtypes Ember has no name for
            return be.from_numpy(arr), be
        d = as_dtype(dtype)
    else:
        arr = _python_array(data)
        if dtype is not None:
            d = as_dtype(dtype)
        else:
            d = _infer_dtype(arr)
        if type(data) is float and not be.cheap_sync and _fills(data, d) and be.device.type != "meta":
            # on an accelerator a Python float becomes a 0-d array made there (a fill kernel, the same one rounding
            # to float32 or float64): an upload from host memory is a copy a CUDA graph cannot capture (where(mask,
            # -inf, 0.0) in attention's mask, run by a compiled encoder)
            return be.xp.full((), data, dtype=be.native_dtype(d)), be
    _check_fits(arr, d)
    return be.asarray(arr, d), be


_PY_TYPES = frozenset((bool, int, float, complex))
_F32_MAX = float(np.finfo(np.float32).max)


def _fills(v: float, d: Any) -> bool:
    """Whether a fill kernel makes the Python float ``v`` in dtype ``d`` as a cast of it does: float32/64 and
    complex, where fills refuse a finite value beyond the range that a cast rounds to infinity."""
    if d.name in ("float64", "complex128"):
        return True
    return d.name in ("float32", "complex64") and (abs(v) <= _F32_MAX or not math.isfinite(v))


def leaves(data: Any) -> tuple[set[type], list[Any]]:
    """The Python number types among the leaves of the nested sequence ``data``, and its other leaves (a row
    of Python numbers is read in one pass at C speed)."""
    kinds: set[type] = set()
    others: list[Any] = []
    stack = [data]
    while stack:
        seq = stack.pop()
        types = set(map(type, seq))
        if types <= _PY_TYPES:
            kinds |= types
            continue
        for v in seq:
            t = type(v)
            if t in _PY_TYPES:
                kinds.add(t)
            elif t is list or t is tuple:
                stack.append(v)
            else:
                others.append(v)
    return kinds, others


def tensors_as_lists(data: Any, tensor_type: type) -> Any:
    """Nested sequences with every ``tensor_type`` instance in them as (nested) lists of Python numbers."""
    if isinstance(data, tensor_type):
        return data.tolist()  # type: ignore[attr-defined]
    return [tensors_as_lists(x, tensor_type) for x in data] if isinstance(data, (list, tuple)) else data


def sequence_dtype(kinds: set[type], others: list[Any]) -> DType | None:
    """PyTorch's dtype for a nested sequence whose leaves (``leaves``) include NumPy scalars or arrays, or
    tensors: their dtypes promoted with the Python numbers' (``[np.float64(1.0), 2.0]`` is float64,
    ``[np.int32(1), 2]`` int64)."""
    found = [v.dtype if isinstance(v.dtype, DType) else _numpy_dtype(np.asarray(v)) for v in others
             if hasattr(v, "dtype")]  # fmt: skip
    default = get_default_dtype()
    python = {bool: bool_, int: int64, float: default, complex: to_complex(default)}
    if not found:
        return None  # (strings, None ...: the NumPy reading refuses them, naming them)
    d = found[0]
    for x in found[1:] + [python[t] for t in kinds]:
        d = promote_types(d, x)
    return d


def _infer_dtype(arr: np.ndarray) -> DType:
    """PyTorch's inference for Python data: floats give the default dtype, ints int64, bools bool."""
    if arr.dtype.kind == "f":
        return get_default_dtype()
    if arr.dtype.kind in "iu":
        return int64
    if arr.dtype.kind == "b":
        return bool_
    if arr.dtype.kind == "c":  # complex64 with the default float32, complex128 with float64
        return to_complex(get_default_dtype())
    raise DTypeError(f"tensor: cannot make a tensor from {arr.dtype.name} data; expected numbers or bools")


def _numpy_dtype(arr: np.ndarray) -> DType:
    """The Ember dtype of a NumPy array, or a DTypeError for a type Ember has no name for."""
    try:
        return as_dtype(arr.dtype.name)
    except TypeError:
        raise DTypeError(f"NumPy dtype {arr.dtype} has no Ember counterpart") from None


def _flat(data: Any) -> list[Any]:
    out: list[Any] = []
    for x in data:
        if isinstance(x, (list, tuple)):
            out.extend(_flat(x))
        else:
            out.append(x)
    return out


def _python_array(data: Any) -> np.ndarray:
    """NumPy's reading of nested Python data, with clear errors for ragged lists, strings, None, huge ints."""
    try:
        arr = np.asarray(data)
    except (ValueError, TypeError):
        problem = _ragged(data) if isinstance(data, (list, tuple)) else None
        if problem is None:
            raise
        raise ShapeError(f"tensor: ragged nested sequence: {problem}") from None
    if arr.dtype.kind == "f" and arr.size and isinstance(data, (list, tuple)) and np.abs(arr).max() >= 2.0**63:
        leaves = _flat(list(data))  # NumPy reads ints beyond int64 mixed with others as float64: keep them exact
        if all(isinstance(x, int) and not isinstance(x, builtins.bool) for x in leaves):
            try:
                return np.asarray(data, dtype=np.uint64)
            except OverflowError:
                pass
    if arr.dtype.kind in "fiubc":
        return arr
    found = _first_non_number(data)
    if found is None:
        raise DTypeError(f"tensor: cannot make a tensor from {arr.dtype.name} data; expected numbers or bools")
    index, bad = found
    where = f" at index {index}" if index else ""
    if isinstance(bad, int):
        raise ValueRangeError(f"tensor: the integer {bad}{where} does not fit in 64 bits (int64 holds -2**63 to "
                              "2**63 - 1)")  # fmt: skip
    raise DTypeError(f"tensor: cannot make a tensor from {type(bad).__name__} {bad!r}{where}; expected numbers, "
                     "bools, (nested) lists of them, arrays or tensors")  # fmt: skip


def _ragged(data: Any) -> str | None:
    """Where a nested sequence stops being rectangular (None when it is rectangular)."""
    expected: list[int] = []
    x = data
    while isinstance(x, (list, tuple)):
        expected.append(len(x))
        if not x:
            break
        x = x[0]

    def walk(x: Any, dim: int, index: list[int]) -> str | None:
        if dim == len(expected):
            if isinstance(x, (list, tuple)):
                return f"expected a number at index {index}, got a sequence of length {len(x)}"
            return None
        if not isinstance(x, (list, tuple)):
            return f"expected a sequence of length {expected[dim]} at index {index} (dim {dim}), got {x!r}"
        if len(x) != expected[dim]:
            return f"expected a sequence of length {expected[dim]} at index {index} (dim {dim}), got length {len(x)}"
        for i, v in enumerate(x):
            problem = walk(v, dim + 1, [*index, i])
            if problem:
                return problem
        return None

    return walk(data, 0, [])


def _first_non_number(data: Any, index: tuple[int, ...] = ()) -> tuple[list[int], Any] | None:
    """(index, value) of the first element that is not a number fitting in 64 bits; None when all are."""
    if isinstance(data, (list, tuple)):
        for i, v in enumerate(data):
            found = _first_non_number(v, (*index, i))
            if found is not None:
                return found
        return None
    if isinstance(data, (bool, float, np.number, np.bool_)) or (isinstance(data, int) and -(2**63) <= data < 2**64):
        return None
    return list(index), data


_INT_RANGES = {name: np.iinfo(name) for name in ("int8", "int16", "int32", "int64", "uint8")}


def wrap_int(v: Any, dtype: DType) -> Any:
    """A Python int ``v`` as an integer ``dtype`` holds it: modulo ``2**bits`` into its range (PyTorch's conversion
    of a Python int operand: ``uint8 + -1`` adds 255); ``v`` itself when it fits, is beyond 64 bits (left to refuse),
    is not an int or ``dtype`` not an integer dtype."""
    if v.__class__ is not int or dtype.kind not in "iu":
        return v
    bits = 8 * dtype.itemsize
    lo = -(1 << (bits - 1)) if dtype.kind == "i" else 0
    if lo <= v < lo + (1 << bits) or not -(2**63) <= v < 2**64:
        return v
    return (v - lo) % (1 << bits) + lo


def checked_int(op: str, v: int, dtype: DType) -> int:
    """PyTorch's ``checked_convert`` of a Python int into an integer dtype (``fill_``, ``alpha``): in range, or for an
    unsigned dtype down to ``-max`` (wrapped: ``uint8`` -1 is 255); else a ValueRangeError (PyTorch: RuntimeError)."""
    bits = 8 * dtype.itemsize
    hi = (1 << bits) - 1 if dtype.kind == "u" else (1 << (bits - 1)) - 1
    if not (-hi if dtype.kind == "u" else -hi - 1) <= v <= hi:
        raise ValueRangeError(f"{op}: value {v} cannot be converted to {dtype.name} without overflow")
    return wrap_int(v, dtype)


def _check_fits(arr: np.ndarray, d: DType, op: str = "tensor") -> None:
    """Refuse a conversion to an integer dtype that would wrap around or turn NaN/inf into garbage; a negative
    value of an unsigned dtype down to ``-max`` wraps (PyTorch's ``checked_convert``: ``uint8`` -1 is 255)."""
    info = _INT_RANGES.get(d.name)
    if info is None or arr.size == 0 or arr.dtype.kind not in "fiu":
        return
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        bad = arr[~np.isfinite(arr)].flat[0]
        raise ValueRangeError(f"{op}: cannot convert {bad} to {d.name}; integers have no NaN or infinity")
    lo, hi = arr.min(), arr.max()
    least = -int(info.max) if d.kind == "u" else info.min
    if lo < least or hi > info.max:
        bad = lo if lo < least else hi
        raise ValueRangeError(f"{op}: value {bad} does not fit in {d.name} (range {least} to {info.max})")


def _sizes(values: tuple[Any, ...], op: str) -> tuple[int, ...] | None:
    """The shape when ``values`` are all integers (``Tensor(2, 3)``), else None."""
    if not values or not all(isinstance(v, int) and not isinstance(v, builtins.bool) for v in values):
        return None
    if any(v < 0 for v in values):
        raise ValueError(f"{op}: negative dimension in size {values}")
    return tuple(values)


def tensor_init_args(data: Any, sizes: tuple[Any, ...], dtype: Any) -> tuple[Any, Any]:
    """``Tensor(...)``'s arguments as (data, dtype) for ``_to_array``: sizes become an uninitialised array."""
    if sizes or (dtype is None and isinstance(data, int) and not isinstance(data, builtins.bool)):
        shape = _sizes((data, *sizes), "Tensor")
        if shape is None:
            raise TypeError(f"Tensor(): expected data or integer sizes, got {(data, *sizes)!r}")
        return np.zeros(shape, np.float64), dtype or get_default_dtype()  # "uninitialised": zeros cost no more
    if isinstance(data, (list, tuple)) and dtype is None:  # torch.Tensor([1, 2]) is a float tensor
        return data, get_default_dtype()
    return data, dtype


#: what ``Tensor.__eq__``/``__ne__`` leave to Python (False/True by identity), as PyTorch does: ``x == None``, a
#: string, a list
UNCOMPARED = (type(None), str, list, tuple, dict)

#: PyTorch's legacy type names by dtype (``ember.FloatTensor`` & co. in ``_legacy.py`` are built from it).
LEGACY_TYPE_NAMES = {
    "float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor", "bfloat16": "BFloat16Tensor",
    "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor",
    "bool": "BoolTensor", "complex64": "ComplexFloatTensor", "complex128": "ComplexDoubleTensor",
}  # fmt: skip
_DTYPE_OF_LEGACY = {v: k for k, v in LEGACY_TYPE_NAMES.items()}


def parse_legacy_type(name: str) -> tuple[str | None, bool]:
    """``"torch.cuda.FloatTensor"`` (or ``ember.``, or bare) as ``("float32", True)``: the dtype's name (None when
    not a legacy type name) and whether it names a CUDA type."""
    short = name.split(".", 1)[1] if name.startswith(("torch.", "ember.")) else name
    cuda = short.startswith("cuda.")
    return _DTYPE_OF_LEGACY.get(short[5:] if cuda else short), cuda


def legacy_type_name(dtype: DType, device_type: str) -> str:
    """``t.type()``: ``"ember.FloatTensor"`` for a float32 CPU tensor (PyTorch's ``"torch.FloatTensor"``)."""
    name = LEGACY_TYPE_NAMES.get(dtype.name, dtype.name)
    return f"ember.cuda.{name}" if device_type == "cuda" else f"ember.{name}"
