"""The 8-bit float dtypes on NumPy (ml_dtypes' types), cast to and from float32 exactly as PyTorch's CPU casts.

ml_dtypes rounds to nearest even as PyTorch does; where the two differ this module follows PyTorch: float8_e4m3fn
saturates (a value beyond ±448, infinities included, becomes ±448, not NaN); a NaN is stored with PyTorch's bits
(e5m2: 0x7F with the sign) and read back with PyTorch's float32 bits; float8_e8m0fnu (powers of two, no sign) stores
|x| and maps 0 to its smallest value 2**-127. Any other source is cast to float32 first (PyTorch converts
through ``float``), and a float8 read into a wider type goes through float32 too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._dtype import FLOAT8_DTYPES, DType

#: Ember's float8 dtype -> ml_dtypes' NumPy dtype (filled on first use: ml_dtypes costs ~50 ms to import)
TO_NATIVE: dict[DType, Any] = {}
#: the set of those NumPy dtypes (empty until first use)
NATIVES: set[Any] = set()
#: PyTorch's float32 bits of each format's NaN (positive; the sign bit follows the float8's)
_NAN_BITS = {
    "float8_e4m3fn": 0x7FF00000,
    "float8_e5m2": 0x7FC00000,
    "float8_e4m3fnuz": 0x7F800001,
    "float8_e5m2fnuz": 0x7F800001,
    "float8_e8m0fnu": 0x7F800001,
}


def native(dtype: DType) -> Any:
    """ml_dtypes' NumPy dtype for a float8 ``dtype``."""
    if not TO_NATIVE:
        import ml_dtypes

        for d in FLOAT8_DTYPES:
            TO_NATIVE[d] = np.dtype(getattr(ml_dtypes, d.name))
        NATIVES.update(TO_NATIVE.values())
    return TO_NATIVE[dtype]


def from_native(dt: Any) -> DType | None:
    """Ember's float8 dtype of NumPy dtype ``dt``, or None."""
    if dt.itemsize != 1 or not dt.name.startswith("float8"):
        return None
    native(FLOAT8_DTYPES[0])
    for d, n in TO_NATIVE.items():
        if n == dt:
            return d
    return None


def to_float8(array: np.ndarray, dtype: DType) -> np.ndarray:
    """``array`` cast to float8 ``dtype`` as PyTorch casts (see the module doc)."""
    x = np.asarray(array)
    if x.dtype.kind == "c":
        x = x.real
    x = x.astype(np.float32)
    name = dtype.name
    if name == "float8_e4m3fn":
        x = np.clip(x, -448.0, 448.0)  # (NaN stays NaN)
    elif name == "float8_e8m0fnu":
        x = np.abs(x)
    out = np.asarray(np.asarray(x).astype(native(dtype)))  # (a 0-d array stays an array, writable below)
    if name == "float8_e5m2":
        nan = np.isnan(x)
        if nan.any():
            bits = out.view(np.uint8)
            bits[nan] = 0x7F | (np.signbit(x[nan]).astype(np.uint8) << 7)
    elif name == "float8_e8m0fnu":
        bits = out.view(np.uint8)
        bits[x == 0] = 0
    return out


def from_float8(array: np.ndarray, target: Any) -> np.ndarray:
    """A float8 ``array`` cast to NumPy dtype ``target`` through float32, NaNs with PyTorch's bits."""
    d = from_native(array.dtype)
    assert d is not None
    f = np.asarray(array.astype(np.float32))
    nan = np.isnan(f)
    if nan.any():
        signed = d.name in ("float8_e4m3fn", "float8_e5m2")  # (fnuz: 0x80 is the one NaN; e8m0: no sign)
        sign = (array.view(np.uint8)[nan] >> 7).astype(np.uint32) << 31 if signed else np.uint32(0)
        bits = np.uint32(_NAN_BITS[d.name]) | sign
        if d.name == "float8_e5m2":  # its payload read as float16's, quieted: mantissa 01 and 11 keep a low bit
            bits = bits | ((array.view(np.uint8)[nan] & 1).astype(np.uint32) << 21)
        f.view(np.uint32)[nan] = bits
    if target == np.float32:
        return f
    out = f.astype(target)
    if nan.any() and out.itemsize == 2 and out.dtype.kind != "i" and out.dtype.kind != "u":
        b32 = f.view(np.uint32)[nan]
        if out.dtype == np.float16:  # PyTorch's float -> half on x86 (F16C): the payload's top bits, quieted
            half = ((b32 >> 16) & 0x8000) | 0x7E00 | ((b32 >> 13) & 0x3FF)
        else:  # bfloat16: PyTorch's one NaN
            half = np.full(b32.shape, 0x7FC0, np.uint32)
        out.view(np.uint16)[nan] = half.astype(np.uint16)
    return out
