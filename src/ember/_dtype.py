"""Ember's dtypes, the promotion order, and the default float dtype."""

from __future__ import annotations

from typing import Any

__all__ = [
    "DType",
    "memory_format",
    "contiguous_format",
    "preserve_format",
    "channels_last",
    "channels_last_3d",
    "bool_",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "uint16",
    "uint32",
    "uint64",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "promote_types",
    "to_complex",
    "to_real",
    "get_default_dtype",
    "set_default_dtype",
    "as_dtype",
]


class DType:
    """A tensor element type. Compare with ``==``; ``str`` and ``repr`` give ``ember.float32`` (PyTorch's
    ``torch.float32``), ``.name`` the bare name."""

    __slots__ = ("is_complex", "is_floating_point", "is_signed", "itemsize", "kind", "name", "rank")

    def __init__(self, name: str, itemsize: int, is_floating: bool, is_signed: bool, rank: int):
        self.name = name
        self.is_complex = name.startswith("complex")
        #: NumPy's kind letter: "b" bool, "u" unsigned, "i" signed integer, "f" floating, "c" complex
        self.kind = (
            "c" if self.is_complex else "f" if is_floating else "b" if name == "bool" else "i" if is_signed else "u"
        )
        self.itemsize = itemsize
        self.is_floating_point = is_floating  # False for complex dtypes, as in PyTorch
        self.is_signed = is_signed
        self.rank = rank  # position in the promotion order (DESIGN.md)

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    __str__ = __repr__

    def __reduce__(self) -> str:
        return self.name


# The spec's promotion order: float64 > float32 > (bfloat16, float16) > int64 > int32 > int16 > int8 > uint8
# > bool.  bfloat16 and float16 share a rank; mixing them gives float32, as in PyTorch.
bool_ = DType("bool", 1, False, False, 0)
uint8 = DType("uint8", 1, False, False, 1)
int8 = DType("int8", 1, False, True, 2)
int16 = DType("int16", 2, False, True, 3)
int32 = DType("int32", 4, False, True, 4)
int64 = DType("int64", 8, False, True, 5)
float16 = DType("float16", 2, True, True, 6)
bfloat16 = DType("bfloat16", 2, True, True, 6)
float32 = DType("float32", 4, True, True, 7)
float64 = DType("float64", 8, True, True, 8)
# complex dtypes rank above every real one; promote_types gives them PyTorch's rule (the wider real precision)
complex64 = DType("complex64", 8, False, True, 9)
complex128 = DType("complex128", 16, False, True, 10)

ALL_DTYPES = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, complex64, complex128)
# The 8-bit float storage types (PyTorch's): stored and cast (to and from float32 as PyTorch rounds), never
# promoted with another dtype, and on CPU computed by almost no operator (PyTorch's CPU kernels refuse them too).
# e8m0fnu is unsigned (powers of two only). Not in ALL_DTYPES: the operators' dtype loops skip them.
float8_e4m3fn = DType("float8_e4m3fn", 1, True, True, 6)
float8_e5m2 = DType("float8_e5m2", 1, True, True, 6)
float8_e4m3fnuz = DType("float8_e4m3fnuz", 1, True, True, 6)
float8_e5m2fnuz = DType("float8_e5m2fnuz", 1, True, True, 6)
float8_e8m0fnu = DType("float8_e8m0fnu", 1, True, False, 6)
FLOAT8_DTYPES = (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu)
# PyTorch's "limited support" unsigned integers: stored and cast, never promoted with another dtype
uint16 = DType("uint16", 2, False, False, 1)
uint32 = DType("uint32", 4, False, False, 1)
uint64 = DType("uint64", 8, False, False, 1)
WIDE_UINT_DTYPES = (uint16, uint32, uint64)
#: the dtypes PyTorch keeps out of type promotion and most CPU kernels
LIMITED_DTYPES = (*FLOAT8_DTYPES, *WIDE_UINT_DTYPES)
BY_NAME: dict[str, DType] = {d.name: d for d in (*ALL_DTYPES, *LIMITED_DTYPES)}
BY_NAME.update(
    {
        "float": float32,
        "double": float64,
        "half": float16,
        "long": int64,
        "int": int32,
        "short": int16,
        "bool_": bool_,
        "cfloat": complex64,
        "cdouble": complex128,
    }
)


def to_complex(d: DType) -> DType:
    """The complex dtype holding ``d``'s values: complex128 for float64, complex64 for the other reals."""
    return d if d.is_complex else complex128 if d is float64 else complex64


def to_real(d: DType) -> DType:
    """The real dtype of a complex dtype's parts (float32 for complex64); a real dtype is itself."""
    return float64 if d is complex128 else float32 if d is complex64 else d


def as_dtype(value: Any) -> DType:
    """Turn a DType, a name (``"float32"``), a numpy dtype or a Python type into a DType."""
    if isinstance(value, DType):
        return value
    if value is float:
        return get_default_dtype()
    if value is int:
        return int64
    if value is bool:
        return bool_
    if value is complex:
        return to_complex(get_default_dtype())
    name = getattr(value, "name", None) or str(value)
    name = str(name).replace("torch.", "").replace("ember.", "")
    try:
        return BY_NAME[name]
    except KeyError:
        raise TypeError(f"unknown dtype {value!r}; expected one of {', '.join(d.name for d in ALL_DTYPES)}") from None


def promote_types(a: DType, b: DType) -> DType:
    """The dtype an operation on ``a`` and ``b`` computes in (the spec's order, DESIGN.md)."""
    if a is b:
        return a
    if (a.kind == "f" and a.itemsize == 1) or (b.kind == "f" and b.itemsize == 1):  # a float8 dtype
        raise RuntimeError(f"Promotion for Float8 Types is not supported, attempted to promote {a.name} and {b.name}")
    if (a.kind == "u" and a.itemsize > 1) or (b.kind == "u" and b.itemsize > 1):  # uint16, uint32, uint64
        raise RuntimeError(
            f"Promotion for uint16, uint32, uint64 types is not supported, attempted to promote {a.name} and {b.name}"
        )
    if a.is_complex or b.is_complex:  # PyTorch: complex of the wider real precision (complex64 + float64: complex128)
        ra, rb = to_real(a), to_real(b)
        return to_complex(ra if ra.rank >= rb.rank else rb)
    if a.rank == b.rank:  # float16 with bfloat16
        return float32
    return a if a.rank > b.rank else b


_default: list[DType] = [float32]


def get_default_dtype() -> DType:
    """The float dtype of new tensors made from Python floats (float32 unless changed)."""
    return _default[0]


def set_default_dtype(d: Any) -> None:
    """Set the default float dtype (float16, bfloat16, float32 or float64); ``d`` is PyTorch's parameter name."""
    d = as_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"set_default_dtype: only floating dtypes can be the default, got {d}")
    _default[0] = d


class NamedTag:
    """A named singleton tag (``ember.contiguous_format``, ``ember.strided``), pickled by name."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self) -> str:
        return self.name


class memory_format(NamedTag):  # noqa: N801 - PyTorch's name
    """PyTorch's memory-format tags, accepted where PyTorch takes them; Ember's arrays are always row-major."""

    __slots__ = ()


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
