"""Recorders: encodings of a Record (named MessagePack, gzip, compressed JSON, bytes, safetensors).

A file is a stream: a header, one entry per item, an end marker. Items are converted to the chosen
precision and encoded one at a time, so saving never holds a converted copy of the whole model; each
item carries a CRC-32 so corruption is caught and named; a missing end marker means a truncated file.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import os
import zlib
from pathlib import Path
from typing import IO, Any

import numpy as np

from .._dtype import as_dtype, bfloat16, float64
from .._tensor import Tensor
from .._version import __version__
from ..backends import get_backend
from ._atomic import atomic_open
from ._precision import PrecisionSettings, as_precision, bf16_as_u16, bf16_to_f32
from ._record import FORMAT_VERSION, Item, Record

__all__ = [
    "BytesRecorder", "JsonGzRecorder", "NamedMpkGzRecorder", "NamedMpkRecorder", "Recorder", "RecordError",
    "SafetensorsRecorder", "atomic_open", "load", "save",
]  # fmt: skip


class RecordError(ValueError):
    """A record file that cannot be read: wrong format, truncated, corrupted, or not matching the model."""


def _version() -> str:
    return __version__


def _header(fmt: str, record: Record, precision: PrecisionSettings) -> dict[str, Any]:
    return {
        "format": fmt,
        "format_version": FORMAT_VERSION,
        "ember_version": _version(),
        "precision": precision.name,
        "item_type": record.item_type,
        "n_items": len(record.items),
        "meta": json.dumps(record.meta),
    }


_ALIGN = 64
_DTYPES = {"bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64",
           "complex128"}  # fmt: skip


def _host(t: Tensor, precision: PrecisionSettings | None = None) -> tuple[np.ndarray, bool]:
    """``t``'s values as a host array, and whether ``t`` is bfloat16 (then its bits, as uint16). A floating tensor
    on a device is first converted there to ``precision``'s float type (the same rounding): the host then holds
    only the copy that is written, not the device's values and a converted copy of them (float64 to float16 stays
    on the host: a device may round it twice, through float32)."""
    t = t.detach()
    if t.dtype is bfloat16:
        return t._backend.bfloat16_bits(t._data), True
    target = precision.float_dtype if precision is not None else None
    data = t._data
    single = target in ("float32", "float64") or (target == "float16" and t.dtype is not float64)
    if single and t.dtype.is_floating_point and t.device.type != "cpu":
        data = t._backend.astype(data, as_dtype(target))
    return np.asarray(t._backend.to_numpy(data)), False


def _encode_item(name: str, it: Item, precision: PrecisionSettings) -> tuple[dict[str, Any], memoryview]:
    """One item's metadata and its raw little-endian bytes (converted to ``precision``; no copy when as is)."""
    arr, bf16 = _host(it.tensor, precision)
    out, dtype = precision.convert(arr, bf16)
    out = np.require(out, requirements="C")
    if out.dtype.byteorder == ">":
        out = out.astype(out.dtype.newbyteorder("<"))
    raw = out.reshape(-1).data.cast("B")
    meta = {"name": name, "dtype": dtype, "shape": list(arr.shape), "id": it.id, "kind": it.kind,
            "crc32": zlib.crc32(raw), "nbytes": raw.nbytes}  # fmt: skip
    return meta, raw


def _entry_fields(entry: Any) -> tuple[str, str, tuple[int, ...]]:
    """Name, dtype and shape of an item entry, validated (ValueError, KeyError or TypeError when malformed)."""
    name, dtype, shape = entry["name"], entry["dtype"], tuple(entry["shape"])
    if not isinstance(name, str) or dtype not in _DTYPES or not all(isinstance(v, int) and v >= 0 for v in shape):
        raise ValueError(dtype)
    return name, dtype, shape


def _array(buf: Any, dtype: str, offset: int, nbytes: int, shape: tuple[int, ...], name: str, source: str) -> Any:
    """The array of ``shape`` stored in ``buf[offset:offset + nbytes]`` (a view; bfloat16 as its uint16 bits)."""
    dt = np.dtype("uint16" if dtype == "bfloat16" else dtype).newbyteorder("<")
    arr = np.frombuffer(buf, dt, nbytes // dt.itemsize, offset)
    if arr.size != int(np.prod(shape)):
        raise RecordError(f"{source}: item {name!r} holds {arr.size} values for shape {shape}")
    return arr.reshape(shape)


def _tensor(arr: np.ndarray, dtype: str, backend: Any) -> Tensor:
    """``arr`` (read as ``dtype``) on ``backend``: bfloat16 items (``arr`` holds their bits) come back as
    bfloat16 where the backend has it, else widened to float32 (exactly)."""
    if dtype != "bfloat16":
        return Tensor._make(backend.asarray(arr), backend)
    if backend.supports_bfloat16:
        return Tensor._make(backend.bfloat16_from_bits(arr), backend)
    return Tensor._make(backend.asarray(bf16_to_f32(arr)), backend)


def _decode_item(entry: Any, source: str, device: Any) -> tuple[str, Item]:
    """A JSON item entry (data in base64 already decoded to bytes)."""
    try:
        name, dtype, shape = _entry_fields(entry)
        data = entry["data"]
    except (KeyError, TypeError, ValueError):
        raise RecordError(f"{source}: malformed item entry") from None
    if zlib.crc32(data) != entry.get("crc32"):
        raise RecordError(f"{source}: truncated or corrupt: item {name!r} fails its CRC-32 check")
    t = _tensor(_array(data, dtype, 0, len(data), shape, name, source).copy(), dtype, get_backend(device))
    return name, Item(t, entry.get("id", ""), entry.get("kind", "param"))


def _check_header(h: Any, fmt: str, source: str) -> None:
    if not isinstance(h, dict) or "format" not in h:
        raise RecordError(f"{source}: not an Ember record (no header)")
    if h["format"] != fmt:
        raise RecordError(f"{source}: this is a {h['format']!r} file, expected {fmt!r}")
    if h.get("format_version", 0) > FORMAT_VERSION:
        raise RecordError(f"{source}: format version {h['format_version']} is newer than this Ember reads "
                          f"({FORMAT_VERSION}); upgrade Ember")  # fmt: skip


class Recorder:
    """One encoding of a Record. Subclasses define ``write(record, file, precision)`` and ``read(file, ...)``."""

    name = "recorder"
    extension = ""

    def save(self, record: Record, path: str | Path, precision: str | PrecisionSettings = "full") -> Path:
        """Write ``record`` to ``path`` atomically; return the path.

        A name without any extension gets this recorder's (``model`` -> ``model.mpk``); a name with one is
        kept as given (``model.bin`` stays ``model.bin``).
        """
        p = Path(path)
        if self.extension and not p.suffix:
            p = p.with_name(p.name + self.extension)
        with atomic_open(p) as f:
            self.write(record, f, as_precision(precision))
        return p

    def load(self, path: str | Path, device: Any = None) -> Record:
        p = Path(path)
        if not p.exists() and self.extension and not p.suffix:
            p = p.with_name(p.name + self.extension)
        if not p.exists():
            raise FileNotFoundError(f"no record file at {p}")
        with open(p, "rb") as f:
            return self.read(f, str(p), device)

    def write(self, record: Record, f: IO[bytes], precision: PrecisionSettings) -> None:
        raise NotImplementedError

    def read(self, f: IO[bytes], source: str, device: Any) -> Record:
        raise NotImplementedError


def _msgpack() -> Any:
    try:
        import msgpack
    except ImportError:  # pragma: no cover - msgpack is a required dependency
        raise ImportError("the MessagePack recorder needs msgpack (an Ember dependency): pip install msgpack") from None
    return msgpack


class NamedMpkRecorder(Recorder):
    """Named MessagePack (the default).

    Layout: a MessagePack header map; per item a MessagePack map (name, dtype, shape, id, kind, crc32,
    nbytes), zero padding to a 64-byte boundary and the raw little-endian array bytes; an end map.
    Writing streams each array straight from memory; reading maps every array onto one buffer (no
    per-item copies), so both run near disk and memory speed.
    """

    name, extension, fmt = "mpk", ".mpk", "ember.record.mpk"

    def write(self, record: Record, f: IO[bytes], precision: PrecisionSettings) -> None:
        packer = _msgpack().Packer(use_bin_type=True)
        pos = crc = 0

        def put(b: Any, data: bool = False) -> None:
            nonlocal pos, crc
            f.write(b)
            if not data:  # array bytes carry their own CRC; this one covers everything else
                crc = zlib.crc32(b, crc)
            pos += len(b) if isinstance(b, bytes) else b.nbytes

        put(packer.pack(_header(self.fmt, record, precision)))
        for name, it in record.items.items():
            meta, raw = _encode_item(name, it, precision)
            put(packer.pack(meta))
            put(bytes(-pos % _ALIGN))
            put(raw, data=True)
        f.write(packer.pack({"end": len(record.items), "crc32": crc}))  # covers every byte but the arrays

    def read(self, f: IO[bytes], source: str, device: Any) -> Record:
        buf: Any
        if isinstance(f, io.BufferedReader):  # a plain file: read it straight into one (uninitialised) buffer
            buf = np.empty(os.fstat(f.fileno()).st_size - f.tell(), dtype=np.uint8)
            n = f.readinto(memoryview(buf))
            buf = buf[:n]
        else:
            buf = bytearray(f.read())
        return self.parse(buf, source, device)

    def parse(self, buf: Any, source: str, device: Any) -> Record:
        msgpack = _msgpack()
        view = memoryview(buf)
        size = len(buf)

        def unpack_at(pos: int) -> tuple[Any, int]:
            u = msgpack.Unpacker(raw=False, strict_map_key=False)
            u.feed(view[pos : pos + (1 << 16)])
            try:
                obj = u.unpack()
            except msgpack.OutOfData:
                u.feed(view[pos + (1 << 16) :])
                obj = u.unpack()
            return obj, pos + u.tell()

        if size == 0:
            raise RecordError(f"{source}: empty file")
        try:
            header, pos = unpack_at(0)
        except msgpack.OutOfData:
            raise RecordError(f"{source}: truncated or corrupt: the file ends inside its header") from None
        except Exception as e:
            raise RecordError(f"{source}: not an Ember record ({type(e).__name__} at byte 0)") from None
        _check_header(header, self.fmt, source)
        items: dict[str, Item] = {}
        ended = False
        crc = zlib.crc32(view[:pos])
        backend = get_backend(device)
        while pos < size:
            start = pos
            try:
                entry, pos = unpack_at(pos)
            except Exception as e:
                raise RecordError(f"{source}: truncated or corrupt at byte {start} ({type(e).__name__})") from None
            if isinstance(entry, dict) and "end" in entry:
                ended = entry["end"] == len(items)
                if ended and crc != entry.get("crc32"):
                    raise RecordError(f"{source}: truncated or corrupt: the metadata checksum does not match")
                break
            try:
                name, dtype, shape = _entry_fields(entry)
                nbytes = int(entry["nbytes"])
                if nbytes < 0:
                    raise ValueError(nbytes)
            except (KeyError, TypeError, ValueError):
                raise RecordError(f"{source}: truncated or corrupt: malformed item entry at byte {start}") from None
            pos += -pos % _ALIGN
            crc = zlib.crc32(view[start:pos], crc)  # the entry and its padding
            if pos + nbytes > size:
                break  # truncated inside the data
            raw = view[pos : pos + nbytes]
            if zlib.crc32(raw) != entry.get("crc32"):
                raise RecordError(
                    f"{source}: truncated or corrupt: item {name!r} fails its CRC-32 check (at byte {pos})"
                )
            arr = _array(buf, dtype, pos, nbytes, shape, name, source)
            t = _tensor(arr, dtype, backend)  # a view of ``buf`` on the CPU (bfloat16 aside)
            items[name] = Item(t, entry.get("id", ""), entry.get("kind", "param"))
            pos += nbytes
        if not ended or len(items) != header.get("n_items"):
            raise RecordError(f"{source}: truncated or corrupt (read {len(items)} of {header.get('n_items')} items)")
        return Record(items, header.get("item_type", "module"), json.loads(header.get("meta", "{}")), owned=True)


class NamedMpkGzRecorder(NamedMpkRecorder):
    """Named MessagePack inside gzip."""

    name, extension = "mpk.gz", ".mpk.gz"

    def write(self, record: Record, f: IO[bytes], precision: PrecisionSettings) -> None:
        with gzip.GzipFile(fileobj=f, mode="wb") as gz:
            super().write(record, gz, precision)  # type: ignore[arg-type]

    def read(self, f: IO[bytes], source: str, device: Any) -> Record:
        try:
            with gzip.GzipFile(fileobj=f, mode="rb") as gz:
                return super().read(gz, source, device)  # type: ignore[arg-type]
        except (OSError, EOFError) as e:
            raise RecordError(f"{source}: truncated or corrupt gzip stream ({e})") from None


class JsonGzRecorder(Recorder):
    """Compressed JSON lines (the spec's example): header, one object per item (data in base64), end marker."""

    name, extension, fmt = "json.gz", ".json.gz", "ember.record.json"

    def write(self, record: Record, f: IO[bytes], precision: PrecisionSettings) -> None:
        with gzip.GzipFile(fileobj=f, mode="wb") as gz:
            gz.write(json.dumps(_header(self.fmt, record, precision)).encode() + b"\n")
            for name, it in record.items.items():
                meta, raw = _encode_item(name, it, precision)
                meta["data"] = base64.b64encode(raw).decode()
                gz.write(json.dumps(meta).encode() + b"\n")
            gz.write(json.dumps({"end": len(record.items)}).encode() + b"\n")

    def read(self, f: IO[bytes], source: str, device: Any) -> Record:
        items: dict[str, Item] = {}
        header: Any = None
        ended = False
        try:
            with gzip.GzipFile(fileobj=f, mode="rb") as gz:
                text = io.TextIOWrapper(gz, encoding="utf-8")
                for lineno, line in enumerate(text, 1):
                    try:
                        entry = json.loads(line)
                    except json.JSONDecodeError:
                        raise RecordError(f"{source}: truncated or corrupt at line {lineno}") from None
                    if header is None:
                        _check_header(entry, self.fmt, source)
                        header = entry
                    elif "end" in entry:
                        ended = True
                        break
                    else:
                        entry["data"] = base64.b64decode(entry.get("data", ""))
                        name, it = _decode_item(entry, source, device)
                        items[name] = it
                text.read()  # to the end: a cut gzip trailer (its CRC and size) is found too
        except UnicodeDecodeError:
            raise RecordError(f"{source}: not an Ember JSON record (the content is not UTF-8 JSON text)") from None
        except (OSError, EOFError) as e:
            raise RecordError(f"{source}: truncated or corrupt gzip stream ({e})") from None
        if header is None:
            raise RecordError(f"{source}: empty file")
        if not ended or len(items) != header.get("n_items"):
            raise RecordError(f"{source}: truncated or corrupt (read {len(items)} of {header.get('n_items')} items)")
        return Record(items, header.get("item_type", "module"), json.loads(header.get("meta", "{}")), owned=True)


class BytesRecorder(NamedMpkRecorder):
    """The MessagePack encoding in memory: ``to_bytes(record)`` / ``from_bytes(data)`` (no file)."""

    name = "bytes"

    def to_bytes(self, record: Record, precision: str | PrecisionSettings = "full") -> bytes:
        buf = io.BytesIO()
        self.write(record, buf, as_precision(precision))
        return buf.getvalue()

    def from_bytes(self, data: bytes, device: Any = None) -> Record:
        return self.parse(bytearray(data), "<bytes>", device)


class SafetensorsRecorder(Recorder):
    """safetensors files (Hugging Face interop); ids and metadata go in the ``__metadata__`` header."""

    name, extension, fmt = "safetensors", ".safetensors", "ember.record.safetensors"

    def write(self, record: Record, f: IO[bytes], precision: PrecisionSettings) -> None:
        from safetensors.numpy import save

        arrays = {}
        for name, it in record.items.items():  # safetensors needs every array at once
            arr, bf16 = _host(it.tensor, precision)
            out, dtype = precision.convert(arr, bf16)
            out = np.require(out, requirements="C")
            if dtype == "bfloat16":  # the bits as ml_dtypes' bfloat16, which safetensors writes as BF16
                import ml_dtypes

                out = out.view(ml_dtypes.bfloat16)
            arrays[name] = out
        meta = _header(self.fmt, record, precision)
        meta["ids"] = json.dumps({k: it.id for k, it in record.items.items()})
        meta["kinds"] = json.dumps({k: it.kind for k, it in record.items.items()})
        f.write(save(arrays, metadata={k: str(v) for k, v in meta.items()}))

    def read(self, f: IO[bytes], source: str, device: Any) -> Record:
        from safetensors.numpy import load

        data = f.read()
        try:
            data, bf16 = bf16_as_u16(data)
            arrays = load(data)
        except Exception as e:
            raise RecordError(f"{source}: truncated or corrupt safetensors file ({e})") from None
        n = int.from_bytes(data[:8], "little")
        meta = json.loads(data[8 : 8 + n]).get("__metadata__", {}) or {}
        ids = json.loads(meta.get("ids", "{}"))
        kinds = json.loads(meta.get("kinds", "{}"))
        be = get_backend(device)
        items = {
            k: Item(_tensor(a.copy(), "bfloat16", be) if k in bf16 else
                    Tensor(a.copy(), device=device), ids.get(k, ""), kinds.get(k, "param"))
            for k, a in arrays.items()
        }  # fmt: skip
        return Record(items, meta.get("item_type", "module"), json.loads(meta.get("meta", "{}")), owned=True)


_BY_EXT = [(".mpk.gz", NamedMpkGzRecorder), (".json.gz", JsonGzRecorder), (".safetensors", SafetensorsRecorder),
           (".mpk", NamedMpkRecorder)]  # fmt: skip


def _for_path(path: str | Path, recorder: Recorder | None) -> Recorder:
    if recorder is not None:
        return recorder
    name = str(path)
    for ext, cls in _BY_EXT:
        if name.endswith(ext):
            return cls()
    return NamedMpkRecorder()


def save(
    obj: Any, path: str | Path, precision: str | PrecisionSettings = "full", recorder: Recorder | None = None
) -> Path:
    """Save a module's parameters (or a Record) to ``path``; the format follows the extension (default .mpk)."""
    record = obj if isinstance(obj, Record) else obj.into_record()
    return _for_path(path, recorder).save(record, path, precision)


def load(path: str | Path, device: Any = None, recorder: Recorder | None = None) -> Record:
    """Read a Record from ``path`` (format from the extension)."""
    return _for_path(path, recorder).load(path, device)
