"""ONNX element types (``TensorProto.FLOAT`` = 1 ...) and Ember dtypes, both ways."""

from __future__ import annotations

from typing import Any

from .. import _dtype as dt

__all__ = ["EMBER_OF", "ONNX_NAMES", "ember_dtype", "onnx_type", "onnx_type_of"]

#: ONNX element type number -> Ember dtype (the types Ember has)
EMBER_OF: dict[int, dt.DType] = {
    1: dt.float32, 2: dt.uint8, 3: dt.int8, 5: dt.int16, 6: dt.int32, 7: dt.int64, 9: dt.bool_,
    10: dt.float16, 11: dt.float64, 16: dt.bfloat16,
}  # fmt: skip

#: ONNX element type number -> its name, for messages
ONNX_NAMES: dict[int, str] = {
    0: "UNDEFINED", 1: "FLOAT", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16", 6: "INT32", 7: "INT64",
    8: "STRING", 9: "BOOL", 10: "FLOAT16", 11: "DOUBLE", 12: "UINT32", 13: "UINT64", 14: "COMPLEX64",
    15: "COMPLEX128", 16: "BFLOAT16", 17: "FLOAT8E4M3FN", 18: "FLOAT8E4M3FNUZ", 19: "FLOAT8E5M2",
    20: "FLOAT8E5M2FNUZ", 21: "UINT4", 22: "INT4", 23: "FLOAT4E2M1", 24: "FLOAT8E8M0", 25: "UINT2", 26: "INT2",
}  # fmt: skip

_ONNX_OF = {v.name: k for k, v in EMBER_OF.items()}


def ember_dtype(elem_type: int) -> dt.DType | None:
    """The Ember dtype of ONNX element type ``elem_type`` (None: Ember has no such type)."""
    return EMBER_OF.get(int(elem_type))


def onnx_type(dtype: Any) -> int:
    """The ONNX element type number of an Ember dtype."""
    return _ONNX_OF[dt.as_dtype(dtype).name]


def onnx_type_of(t: Any) -> int:
    """The ONNX element type number of a Tensor's dtype."""
    return _ONNX_OF[t.dtype.name]


def require_dtype(elem_type: int, where: str) -> dt.DType:
    """The Ember dtype of ``elem_type``, or an error naming the ONNX type that Ember lacks."""
    from .._errors import DTypeError

    d = EMBER_OF.get(int(elem_type))
    if d is None:
        name = ONNX_NAMES.get(int(elem_type), str(elem_type))
        raise DTypeError(f"{where}: ONNX type {name} has no Ember dtype (Ember has: "
                         f"{', '.join(ONNX_NAMES[k] for k in EMBER_OF)})")  # fmt: skip
    return d
