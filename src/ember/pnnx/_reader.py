"""Reading PNNX files: the ``.pnnx.param`` text graph and the ``.pnnx.bin`` stored zip of weights.

This module knows the file format only (see ``FORMAT.md`` in the project notes); what each operator
means lives in the op table. Nothing read here is executed: the text is tokenised and the zip entries
are copied as raw little-endian arrays.
"""

from __future__ import annotations

import math
import re
import struct
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import EmberError

__all__ = ["PnnxFormatError", "Operator", "Graph", "read_param", "read_weights", "parse_value", "DTYPES"]

MAGIC = "7767517"

#: PNNX dtype strings -> NumPy dtypes (``bf16`` is widened to float32 on reading).
DTYPES: dict[str, Any] = {
    "f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": np.uint16,
    "i64": np.int64, "i32": np.int32, "i16": np.int16, "i8": np.int8, "u8": np.uint8,
    "bool": np.bool_, "c64": np.complex64, "c128": np.complex128,
}  # fmt: skip


class PnnxFormatError(EmberError, ValueError):
    """A PNNX file that cannot be read: malformed line, missing or bad weight entry, not a stored zip."""


@dataclass
class Operator:
    """One operator line of a ``.pnnx.param`` file, parsed but not interpreted."""

    type: str
    name: str
    inputs: list[str]
    outputs: list[str]
    params: dict[str, Any] = field(default_factory=dict)
    #: attribute key -> (shape, dtype string); the bytes are in the .bin entry ``NAME.key``
    attrs: dict[str, tuple[tuple[int, ...], str]] = field(default_factory=dict)
    #: input operand -> the argument name it binds to (``$input=0``)
    input_keys: dict[int, str] = field(default_factory=dict)
    #: operand -> (shape, dtype) from the ``#`` annotations (dims may be -1 when unknown)
    shapes: dict[str, tuple[tuple[int, ...], str]] = field(default_factory=dict)
    line: int = 0


@dataclass
class Graph:
    """A parsed ``.pnnx.param``: operators in file order, the operand count and where it came from."""

    operators: list[Operator]
    operand_count: int
    path: str


_NUM = re.compile(r"-?\d")


def _is_number_start(s: str) -> bool:
    return bool(_NUM.match(s))


def _scalar(s: str) -> Any:
    if not _is_number_start(s):
        return s
    if s.endswith("j"):
        return complex(s)
    if "." in s or "e" in s or "inf" in s or "nan" in s:
        return float(s)
    return int(s)


def parse_value(s: str) -> Any:
    """A parameter value, typed as pnnx's ``Parameter::parse_from_string`` types it."""
    if "%" in s:
        return s
    if s in ("None", "()", "[]"):
        return None
    if s in ("True", "False"):
        return s == "True"
    if s[:1] in "([":
        return _sequence(s)
    return _scalar(s)


def _sequence(s: str) -> list[Any]:
    """``(1,2)`` / ``[[2,1],[0,1]]``: a list, nested lists parsed recursively (commas split at depth 0 only)."""
    inner = s[1:-1]
    items: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(inner):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(inner[start:i])
            start = i + 1
    if inner:
        items.append(inner[start:])
    return [_sequence(e) if e[:1] in "([" else _scalar(e) for e in items]


def _shape(text: str, where: str) -> tuple[tuple[int, ...], str]:
    m = re.fullmatch(r"\(([^)]*)\)(\w*)", text)
    if not m:
        raise PnnxFormatError(f"{where}: expected a shape and dtype like (1,3,224,224)f32, got {text!r}")
    dims: list[int] = []
    for d in filter(None, m.group(1).split(",")):
        if d == "?" or d.startswith("%"):
            dims.append(-1)
        elif re.fullmatch(r"-?\d+", d):
            dims.append(int(d))
        else:
            raise PnnxFormatError(f"{where}: bad dimension {d!r} in shape {text!r}")
    return tuple(dims), m.group(2) or "null"


def _parse_line(tokens: list[str], lineno: int, where: str) -> Operator:
    if len(tokens) < 4:
        raise PnnxFormatError(f"{where}: expected 'TYPE NAME N_IN N_OUT inputs... outputs... key=value...', "
                              f"got {' '.join(tokens)!r}")  # fmt: skip
    typ, name, n_in, n_out = tokens[:4]
    if not (n_in.isdigit() and n_out.isdigit()):
        raise PnnxFormatError(f"{where}: operator {name!r}: expected the input and output counts as integers, "
                              f"got {n_in!r} {n_out!r}")  # fmt: skip
    ni, no = int(n_in), int(n_out)
    if len(tokens) < 4 + ni + no:
        raise PnnxFormatError(f"{where}: operator {name!r} declares {ni} inputs and {no} outputs but the line has "
                              f"only {len(tokens) - 4} operand names")  # fmt: skip
    op = Operator(typ, name, tokens[4 : 4 + ni], tokens[4 + ni : 4 + ni + no], line=lineno)
    for item in tokens[4 + ni + no :]:
        key, eq, value = item.partition("=")
        if not eq or len(key) < 1 or (key[0] in "@$#" and len(key) < 2):
            raise PnnxFormatError(f"{where}: operator {name!r}: expected key=value, got {item!r}")
        if key[0] == "@":
            op.attrs[key[1:]] = _shape(value, f"{where}: attribute {key}")
        elif key[0] == "$":
            if value not in op.inputs:
                raise PnnxFormatError(f"{where}: operator {name!r}: {key} names operand {value!r}, "
                                      f"which is not one of its inputs {op.inputs}")  # fmt: skip
            op.input_keys[op.inputs.index(value)] = key[1:]
        elif key[0] == "#":
            op.shapes[key[1:]] = _shape(value, f"{where}: shape of operand {key[1:]}")
        else:
            # expr stays raw text: a constant expression such as ``-1`` must not become an int
            op.params[key] = value if key == "expr" and typ == "pnnx.Expression" else parse_value(value)
    return op


def read_param(path: str | Path) -> Graph:
    """Parse a ``.pnnx.param`` file (errors name the file and the line)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise PnnxFormatError(f"{path}: not a text file ({e})") from None
    lines = text.splitlines()
    if not lines or lines[0].strip() != MAGIC:
        got = lines[0].strip()[:40] if lines else "an empty file"
        raise PnnxFormatError(f"{path}:1: expected the PNNX magic number {MAGIC}, got {got!r}")
    if len(lines) < 2 or not re.fullmatch(r"\s*\d+\s+\d+\s*", lines[1]):
        got = lines[1].strip() if len(lines) > 1 else "end of file"
        raise PnnxFormatError(f"{path}:2: expected '<operator count> <operand count>', got {got!r}")
    n_ops, n_operands = map(int, lines[1].split())
    ops = []
    for i, line in enumerate(lines[2:], start=3):
        tokens = line.split()
        if tokens:
            ops.append(_parse_line(tokens, i, f"{path}:{i}"))
    if len(ops) != n_ops:
        raise PnnxFormatError(f"{path}: line 2 announces {n_ops} operators, the file has {len(ops)}"
                              + (" (truncated?)" if len(ops) < n_ops else ""))  # fmt: skip
    return Graph(ops, n_operands, str(path))


def _entry_bytes(dims: tuple[int, ...], dtype: str) -> int:
    return math.prod(dims) * np.dtype(DTYPES[dtype]).itemsize


def _truncated_entry(path: Path) -> str | None:
    """Walk the local headers the way pnnx's reader does: where the file ends early (an entry or a header)."""
    data = path.read_bytes()
    pos = 0
    while data[pos : pos + 4] == b"PK\x03\x04":
        if pos + 30 > len(data):
            return f"the local header at byte {pos}"
        (size,) = struct.unpack_from("<I", data, pos + 18)  # compressed size
        name_len, extra_len = struct.unpack_from("<HH", data, pos + 26)
        if pos + 30 + name_len + extra_len > len(data):
            return f"the local header at byte {pos}"
        name = data[pos + 30 : pos + 30 + name_len].decode("utf-8", "replace")
        extra = data[pos + 30 + name_len : pos + 30 + name_len + extra_len]
        if size == 0xFFFFFFFF and len(extra) >= 20 and extra[:2] == b"\x01\x00":
            size = struct.unpack_from("<Q", extra, 12)[0]  # zip64: uncompressed, then compressed size
        end = pos + 30 + name_len + extra_len + size
        if end > len(data):
            return f"entry {name!r}"
        pos = end
    if data.startswith(b"PK\x03\x04"):  # every entry whole: the central directory after them is cut or damaged
        return f"the zip directory after byte {pos}"
    return None


def read_weights(graph: Graph, bin_path: str | Path) -> dict[str, np.ndarray]:
    """Read every ``@`` attribute of ``graph`` from its ``.pnnx.bin``: ``{"NAME.key": array}``.

    The archive must be a zip with stored (uncompressed) entries whose sizes match the shapes and dtypes
    declared in the param file; a missing, compressed, truncated or wrongly sized entry is refused with
    its name.
    """
    bin_path = Path(bin_path)
    wanted = [(op, key, shape, dt) for op in graph.operators for key, (shape, dt) in op.attrs.items()]
    out: dict[str, np.ndarray] = {}
    if not wanted:
        return out
    try:
        zf = zipfile.ZipFile(bin_path)
    except FileNotFoundError:
        raise FileNotFoundError(f"PNNX weights {bin_path} not found (give bin_path= if it is elsewhere)") from None
    except (zipfile.BadZipFile, OSError) as e:
        cut = _truncated_entry(bin_path)
        if cut is not None:
            raise PnnxFormatError(f"{bin_path}: truncated or corrupt: the file ends or breaks in {cut}") from None
        raise PnnxFormatError(f"{bin_path}: not a PNNX weight file (a stored zip): {e}") from None
    with zf:
        for op, key, shape, dt in wanted:
            entry = f"{op.name}.{key}"
            where = f"{bin_path}: entry {entry!r} (line {op.line}, @{key}=({','.join(map(str, shape))}){dt})"
            if dt not in DTYPES:
                raise PnnxFormatError(f"{where}: unsupported dtype {dt!r}; supported: {', '.join(DTYPES)}")
            try:
                info = zf.getinfo(entry)
            except KeyError:
                if 0 in shape or not shape:
                    continue  # pnnx may omit empty tensors
                raise PnnxFormatError(f"{where}: missing from the weight file") from None
            if info.compress_type != zipfile.ZIP_STORED:
                raise PnnxFormatError(f"{where}: compressed (method {info.compress_type}); PNNX stores entries")
            want = _entry_bytes(shape, dt)
            if info.file_size != want:
                raise PnnxFormatError(f"{where}: holds {info.file_size} bytes, the shape needs {want}")
            if not shape or want == 0:
                continue
            arr = np.empty(shape, dtype=np.dtype(DTYPES[dt]).newbyteorder("<"))
            try:
                with zf.open(info) as f:
                    got = f.readinto(memoryview(arr).cast("B"))  # type: ignore[arg-type,attr-defined]
            except (zipfile.BadZipFile, OSError, EOFError) as e:
                raise PnnxFormatError(f"{where}: cannot be read (truncated or corrupt file?): {e}") from None
            if got != want:
                raise PnnxFormatError(f"{where}: truncated or corrupt: read {got} of {want} bytes")
            if dt == "bf16":
                arr = (arr.astype(np.uint32) << 16).view(np.float32)
            out[entry] = arr.astype(arr.dtype.newbyteorder("="), copy=False)
    return out
