"""``PrecisionSettings``: the float type a record is written in, converted item by item (spec constraint 1)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np

__all__ = ["PRECISIONS", "PrecisionSettings", "bf16_to_f32", "f32_to_bf16"]


@dataclasses.dataclass(frozen=True)
class PrecisionSettings:
    """``float_dtype`` is "float32", "float16", "bfloat16", "float64" or None (as is). Integers keep their type."""

    name: str
    float_dtype: str | None

    def convert(self, arr: np.ndarray, bf16: bool = False) -> tuple[np.ndarray, str]:
        """(array to write, dtype name to record) for one item. ``bf16``: ``arr`` holds a bfloat16 tensor's bits
        (uint16), written as they are (as is, or in bfloat16) or widened exactly to float32 first."""
        if bf16:
            if self.float_dtype in (None, "bfloat16"):
                return arr, "bfloat16"
            arr = bf16_to_f32(arr)
        if arr.dtype.kind != "f" or self.float_dtype is None:
            return arr, str(arr.dtype)
        if self.float_dtype == "bfloat16":
            return f32_to_bf16(arr.astype(np.float32, copy=False)), "bfloat16"
        return arr.astype(self.float_dtype, copy=False), self.float_dtype


PRECISIONS = {
    "full": PrecisionSettings("full", "float32"),
    "half": PrecisionSettings("half", "float16"),
    "bfloat16": PrecisionSettings("bfloat16", "bfloat16"),
    "double": PrecisionSettings("double", "float64"),
    "as_is": PrecisionSettings("as_is", None),
}


def as_precision(p: str | PrecisionSettings) -> PrecisionSettings:
    if isinstance(p, PrecisionSettings):
        return p
    if p not in PRECISIONS:
        raise ValueError(f"unknown precision {p!r}; choose from {sorted(PRECISIONS)}")
    return PRECISIONS[p]


def f32_to_bf16(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits (uint16), rounding to nearest even; NaN stays NaN."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FC0), rounded)


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def bf16_as_u16(data: bytes) -> tuple[bytes, set[str]]:
    """``data`` (a safetensors file) with its BF16 entries relabelled U16 (safetensors' NumPy API cannot read
    BF16; the bits are then made bfloat16 by ``_tensor``), and those entries' names."""
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n])
    names = {k for k, v in header.items() if k != "__metadata__" and v.get("dtype") == "BF16"}
    if not names:
        return data, names
    for k in names:
        header[k]["dtype"] = "U16"
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return len(h).to_bytes(8, "little") + h + data[8 + n :], names
