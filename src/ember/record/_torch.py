"""Weights from PyTorch: ``.pt``/``.pth`` state_dicts and ``.safetensors`` files, without executing pickle code.

With torch installed, ``.pt`` files are read by ``torch.load(weights_only=True)``. Without it, the zip
archive is read directly: ``data.pkl`` is unpickled by a restricted unpickler that only accepts the few
names a state_dict needs (tensor rebuilding, storages, OrderedDict) and reads storages from the archive.
"""

from __future__ import annotations

import io
import pickle
import re
import struct
import zipfile
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._atomic import atomic_write
from ._precision import bf16_as_u16, bf16_to_f32
from ._recorder import RecordError

__all__ = ["load_torch_object", "load_torch_state_dict", "load_weights", "save_torch_state_dict"]

_STORAGE_DTYPES = {
    "FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16, "LongStorage": np.int64,
    "IntStorage": np.int32, "ShortStorage": np.int16, "CharStorage": np.int8, "ByteStorage": np.uint8,
    "BoolStorage": np.bool_, "BFloat16Storage": "bfloat16",
}  # fmt: skip


class _Storage:
    def __init__(self, dtype: Any) -> None:
        self.dtype = dtype


def _rebuild_tensor_v2(
    storage: np.ndarray, offset: int, size: tuple[int, ...], stride: tuple[int, ...], *args: Any
) -> np.ndarray:
    if not size:
        return storage[offset : offset + 1].reshape(()).copy()
    item = storage.itemsize
    view = np.lib.stride_tricks.as_strided(storage[offset:], shape=size, strides=[s * item for s in stride])
    return np.array(view)


def _rebuild_parameter(data: np.ndarray, requires_grad: bool, *args: Any) -> np.ndarray:
    return data


class _RestrictedUnpickler(pickle.Unpickler):
    """Accepts only what a state_dict of tensors needs; anything else is refused, naming the class."""

    def __init__(self, file: Any, archive: zipfile.ZipFile, prefix: str, source: str) -> None:
        super().__init__(file)
        self.archive, self.prefix, self.source = archive, prefix, source

    def find_class(self, module: str, name: str) -> Any:
        if module == "collections" and name == "OrderedDict":
            return OrderedDict
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor_v2
        if module == "torch._utils" and name == "_rebuild_parameter":
            return _rebuild_parameter
        if module == "torch" and name in _STORAGE_DTYPES:
            return _Storage(_STORAGE_DTYPES[name])
        if module == "torch" and name == "device":
            return str
        raise RecordError(f"{self.source}: refusing to load {module}.{name} (only tensors and dicts are allowed)")

    def persistent_load(self, pid: Any) -> Any:
        if not isinstance(pid, tuple) or pid[0] != "storage":
            raise RecordError(f"{self.source}: unexpected persistent id {pid!r}")
        _, kind, key, _location, _numel = pid
        dtype = kind.dtype if isinstance(kind, _Storage) else None
        if dtype is None:
            raise RecordError(f"{self.source}: unknown storage type {kind!r}")
        raw = self.archive.read(f"{self.prefix}/data/{key}")
        if dtype == "bfloat16":
            return bf16_to_f32(np.frombuffer(raw, np.uint16))
        return np.frombuffer(raw, dtype)


def _unpickle_zip(file: Any, source: str) -> Any:
    """The object in a PyTorch zip archive (tensors as NumPy arrays), through the restricted unpickler."""
    try:
        archive = zipfile.ZipFile(file)
    except (zipfile.BadZipFile, OSError, EOFError):
        if _zip_start(file):
            raise RecordError(f"{source}: truncated or corrupt: the zip archive is incomplete") from None
        raise RecordError(f"{source}: not a PyTorch zip archive (legacy .pt files need torch installed)") from None
    with archive:
        pkl = [n for n in archive.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
        if not pkl:
            raise RecordError(f"{source}: no data.pkl in the archive")
        prefix = pkl[0].rsplit("/", 1)[0] if "/" in pkl[0] else ""
        try:
            with archive.open(pkl[0]) as f:
                return _RestrictedUnpickler(f, archive, prefix, source).load()
        except (pickle.UnpicklingError, EOFError, KeyError, zipfile.BadZipFile, ValueError, OSError) as e:
            if isinstance(e, RecordError):
                raise
            raise RecordError(f"{source}: truncated or corrupt PyTorch archive ({type(e).__name__}: {e})") from None


def _read_zip(path: Path) -> dict[str, np.ndarray]:
    return _flatten(_unpickle_zip(path, str(path)), str(path))


def _zip_start(file: Any) -> bool:
    """Whether ``file`` (a path or a seekable binary file) starts like a zip archive (a local file header)."""
    if isinstance(file, (str, Path)):
        with open(file, "rb") as f:
            return f.read(4) == b"PK\x03\x04"
    pos = file.tell()
    file.seek(0)
    head = file.read(4)
    file.seek(pos)
    return bool(head == b"PK\x03\x04")


def _torch_load(torch: Any, file: Any, source: str) -> Any:
    """``torch.load(weights_only=True)``, its failures said in one line: a cut or damaged file as such."""
    if _zip_start(file):  # a zip archive whose directory (at its end) is missing: cut short
        try:
            with zipfile.ZipFile(file) as z:
                z.namelist()
        except (zipfile.BadZipFile, OSError, EOFError) as e:
            raise RecordError(f"{source}: truncated or corrupt: not a complete zip archive ({e})") from None
        finally:
            if not isinstance(file, (str, Path)):
                file.seek(0)
    try:
        return torch.load(file, map_location="cpu", weights_only=True)
    except (OSError, EOFError, zipfile.BadZipFile) as e:
        raise RecordError(f"{source}: truncated or corrupt PyTorch file ({type(e).__name__}: {e})") from None
    except (pickle.UnpicklingError, RuntimeError, ValueError) as e:
        first = str(e).splitlines()[0]
        if "PytorchStreamReader" in first or "unexpected EOF" in first or "Ran out of input" in first:
            raise RecordError(f"{source}: truncated or corrupt PyTorch file ({first})") from None
        raise RecordError(f"{source}: refused by torch's weights-only loader ({first})") from None


def load_torch_object(file: Any, source: str) -> Any:
    """What ``torch.load(file, weights_only=True)`` returns, tensors as NumPy arrays (or torch tensors).

    With torch installed its weights-only loader reads the file; without it the restricted unpickler does.
    Nothing in the file can run code either way.
    """
    from ..backends import real_torch

    torch = real_torch()  # None without PyTorch, or when ``torch`` names Ember itself in this process
    if torch is None:
        return _unpickle_zip(file, source)
    return _torch_load(torch, file, source)


def _flatten(obj: Any, source: str) -> dict[str, np.ndarray]:
    if isinstance(obj, dict) and "state_dict" in obj and isinstance(obj["state_dict"], dict):
        obj = obj["state_dict"]
    if not isinstance(obj, dict):
        raise RecordError(f"{source}: expected a state_dict (a dict of tensors), got {type(obj).__name__}")
    out = {}
    for k, v in obj.items():
        if hasattr(v, "detach"):
            v = v.detach().cpu()
            v = (v.float() if str(v.dtype) == "torch.bfloat16" else v).numpy()
        if isinstance(v, np.ndarray):
            out[str(k)] = v
    return out


def load_torch_state_dict(path: str | Path) -> dict[str, np.ndarray]:
    """Read a ``.pt``/``.pth``/``.safetensors`` state_dict as NumPy arrays, never executing code from the file."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no weights file at {p}")
    if p.suffix == ".safetensors":
        from safetensors.numpy import load

        data, bf16 = bf16_as_u16(p.read_bytes())  # BF16 items: their bits, widened exactly to float32
        return {k: bf16_to_f32(v) if k in bf16 else v for k, v in load(data).items()}
    if p.stat().st_size < 16:  # every file torch.save writes is longer
        raise RecordError(f"{p}: truncated or corrupt: only {p.stat().st_size} bytes, too short for a PyTorch file")
    from ..backends import real_torch

    torch = real_torch()
    if torch is None:
        return _read_zip(p)
    return _flatten(_torch_load(torch, str(p), str(p)), str(p))


def load_weights(module: Any, path: str | Path, remap: Sequence[tuple[str, str]] = (), strict: bool = False) -> Any:
    """Load PyTorch weights into ``module`` after renaming keys with ``remap`` regex rules; report the mismatch.

    Returns ``IncompatibleKeys(missing_keys, unexpected_keys)``; with ``strict`` either list non-empty is an error.
    """
    arrays = load_torch_state_dict(path)
    renamed = {}
    for k, v in arrays.items():
        for pat, rep in remap:
            k = re.sub(pat, rep, k)
        renamed[k] = v
    expected = list(module.state_dict())
    if renamed and expected and not set(renamed) & set(expected):  # loading nothing is never what was meant
        raise RecordError(
            f"{path}: none of its {len(renamed)} keys matches the module's {len(expected)} (file: "
            f"{_some(renamed)}; module: {_some(expected)}); rename them with remap=[(pattern, replacement), ...]"
        )
    return module.load_state_dict(renamed, strict=strict)


def _some(keys: Any, n: int = 3) -> str:
    ks = list(keys)
    return ", ".join(repr(k) for k in ks[:n]) + (f", ... ({len(ks)} in all)" if len(ks) > n else "")


def _pickle_state_dict(entries: list[tuple[str, str, int, tuple[int, ...]]]) -> bytes:
    """A protocol-2 pickle of an OrderedDict of tensors in torch's zip layout, written opcode by opcode.

    ``entries`` are (key, storage class name, numel, shape). Writing pickle is safe (Ember never reads
    arbitrary pickle); the result is exactly what ``torch.load(weights_only=True)`` accepts.
    """
    out = bytearray(b"\x80\x02")  # PROTO 2

    def glob(module: str, name: str) -> None:
        out.extend(b"c" + module.encode() + b"\n" + name.encode() + b"\n")

    def string(s: str) -> None:
        b = s.encode()
        out.extend(b"X" + struct.pack("<I", len(b)) + b)

    def integer(i: int) -> None:
        out.extend(b"J" + struct.pack("<i", i))

    def int_tuple(t: tuple[int, ...]) -> None:
        out.extend(b"(")
        for v in t:
            integer(v)
        out.extend(b"t")

    glob("collections", "OrderedDict")
    out.extend(b")R")  # OrderedDict()
    out.extend(b"(")  # MARK for SETITEMS
    for i, (key, storage, numel, shape) in enumerate(entries):
        string(key)
        glob("torch._utils", "_rebuild_tensor_v2")
        out.extend(b"(")  # args
        out.extend(b"(")  # persistent id tuple
        string("storage")
        glob("torch", storage)
        string(str(i))
        string("cpu")
        integer(numel)
        out.extend(b"tQ")  # TUPLE, BINPERSID
        integer(0)
        int_tuple(shape)
        stride, acc = [], 1
        for n in reversed(shape):
            stride.append(acc)
            acc *= n
        int_tuple(tuple(reversed(stride)))
        out.extend(b"\x89")  # NEWFALSE: requires_grad
        glob("collections", "OrderedDict")
        out.extend(b")R")  # backward hooks
        out.extend(b"tR")  # TUPLE, REDUCE
    out.extend(b"u.")  # SETITEMS, STOP
    return bytes(out)


_STORAGE_NAMES = {np.dtype(v).name: k for k, v in _STORAGE_DTYPES.items() if v != "bfloat16"}  # type: ignore[call-overload]


def save_torch_state_dict(state: Any, path: str | Path) -> Path:
    """Write a module's ``state_dict()`` (or a dict of tensors/arrays) as a ``.pt`` file PyTorch loads.

    The file is torch's zip layout (``archive/data.pkl`` + one storage per tensor), written atomically;
    ``torch.load(path, weights_only=True)`` reads it without any of Ember's code.
    """
    items = state.state_dict() if hasattr(state, "state_dict") else state
    arrays = {}
    for k, v in items.items():
        a = v.detach().cpu().numpy() if hasattr(v, "detach") else np.asarray(v)
        if a.dtype.name not in _STORAGE_NAMES:
            raise TypeError(f"save_torch_state_dict: {k!r} has dtype {a.dtype}, which has no torch storage here")
        arrays[k] = np.require(a, requirements="C")  # keeps 0-d arrays 0-d
    entries = [(k, _STORAGE_NAMES[a.dtype.name], a.size, tuple(a.shape)) for k, a in arrays.items()]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", _pickle_state_dict(entries))
        z.writestr("archive/byteorder", "little")
        for i, a in enumerate(arrays.values()):
            z.writestr(f"archive/data/{i}", a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes())
        z.writestr("archive/version", "3\n")
    p = Path(path)
    atomic_write(p, buf.getvalue())
    return p
