"""``ember.save`` / ``ember.load``: what ``torch.save``/``torch.load`` do for users, under PyTorch's consent rule.

``save(obj, f)`` writes state dicts, optimizer state dicts, checkpoints — nested dicts, lists and
tuples of tensors, arrays, numbers, strings, bools and None — as a MessagePack record (the format of
``ember.record``; the structure in its metadata, every tensor an item), atomically, at exactly the
path given. Anything else (a module, a set, an object of any class) is pickled inside the same record
(``_pickled.py``: tensors stay record items). ``load(f)`` reads it back, and also reads:

- PyTorch's zip archives (``torch.save``), by Ember's own unpickler (no torch needed; ``_torch_objects.py``);
  legacy PyTorch files with torch installed, weights-only;
- Ember records (``Module.save``, ``ember.record.save``; MessagePack, gzip, JSON, safetensors): a flat
  ``OrderedDict`` of tensors by dotted path.

Loading never runs code from the file without consent: unless the caller passes ``weights_only=False``,
a pickle may build only tensors, plain containers and ``add_safe_globals`` entries, and anything else is
refused naming its class and the flag (PyTorch >= 2.6's rule). A corrupt or truncated file raises
``ember.record.RecordError`` (a ``ValueError``) naming the file and what is wrong.
"""

from __future__ import annotations

import io
import os
import sys
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from . import _pickled
from ._creation import from_numpy
from ._pickled import WeightsOnlyError, add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals
from ._tensor import Tensor
from ._torch_objects import load_torch_archive
from .backends import get_backend, real_torch
from .record._atomic import atomic_open
from .record._precision import as_precision
from .record._record import Record
from .record._recorder import (
    JsonGzRecorder,
    NamedMpkGzRecorder,
    NamedMpkRecorder,
    RecordError,
    SafetensorsRecorder,
)
from .record._state import record_to_state, state_to_record
from .record._torch import load_torch_object

__all__ = [
    "WeightsOnlyError",
    "add_safe_globals",
    "clear_safe_globals",
    "get_safe_globals",
    "load",
    "safe_globals",
    "save",
]

_ITEM_TYPE = "object"

#: the type of ``load``'s ``map_location`` (PyTorch's alias, which typed code imports): a function of a storage and
#: its location, a device, a device name, a mapping of device names, or None
MAP_LOCATION = Callable[[Any, str], Any] | Any | str | dict[str, str] | None
DEFAULT_PROTOCOL = 2  # PyTorch's pickle protocol for ``torch.save``


def save(obj: Any, f: Any, pickle_module: Any = None, pickle_protocol: Any = None, **_: Any) -> None:
    """Save ``obj`` to a path or binary file: containers of tensors as a record, anything else pickled in one.

    A path is written atomically and used exactly as given (no extension is added). ``pickle_module`` and
    ``pickle_protocol`` are accepted and ignored.
    """
    try:
        record = state_to_record(obj, _ITEM_TYPE)
    except TypeError:  # not a plain container: pickle it, its tensors staying record items
        text, tensors = _pickled.dumps(obj)
        record = state_to_record(tensors, _ITEM_TYPE)
        record.meta[_pickled.META_KEY] = text
    precision = as_precision("as_is")
    if isinstance(f, (str, os.PathLike)):
        with atomic_open(Path(f)) as fh:
            NamedMpkRecorder().write(record, fh, precision)
    elif hasattr(f, "write"):
        NamedMpkRecorder().write(record, f, precision)
    else:
        raise TypeError(f"save: f must be a path or a binary file object, got {type(f).__name__}")


def load(
    f: Any, map_location: Any = None, pickle_module: Any = None, *, weights_only: Any = None, mmap: Any = None,
    **_: Any,
) -> Any:  # fmt: skip
    """Load what ``save`` (or ``torch.save``) wrote, from a path or binary file object.

    ``map_location`` as in PyTorch: a device or its name (every tensor goes there), a dict mapping saved
    device names to new ones, or a callable ``fn(tensor, saved_device_name)`` returning a tensor (or
    anything else to keep the saved placement). ``weights_only`` (default True, as PyTorch >= 2.6): only
    tensors, plain containers and ``add_safe_globals`` entries are unpickled; pass ``weights_only=False``
    for a whole module or another object, if you trust the file (unpickling can run code from it).
    A PyTorch module comes back as the Ember module of the same name.
    """
    if isinstance(f, (str, os.PathLike)):
        source = str(f)
        if not Path(f).exists():
            raise FileNotFoundError(f"load: no file at {source}")
        if Path(f).is_dir():
            raise IsADirectoryError(f"load: {source} is a directory, not a file")
        with open(f, "rb") as fh:
            data = fh.read()
    elif hasattr(f, "read"):
        source = str(getattr(f, "name", "<file object>"))
        data = f.read()
    else:
        raise TypeError(f"load: f must be a path or a binary file object, got {type(f).__name__}")
    only_weights = weights_only is not False
    place = _placement(map_location)
    obj = _decode(data, source, only_weights, place)
    if isinstance(obj, Record):
        if obj.item_type == _ITEM_TYPE and "state" in obj.meta:
            state = record_to_state(obj, place)
            if _pickled.META_KEY in obj.meta:
                return _pickled.loads(obj.meta[_pickled.META_KEY], state, only_weights, source)
            return state
        return OrderedDict((k, place(v, "cpu")) for k, v in obj.tensors().items())
    if isinstance(obj, _Archive):
        return obj.value
    return _from_torch(obj, place, source)


class _Archive:
    """What a PyTorch zip archive held, already with Ember tensors."""

    def __init__(self, value: Any) -> None:
        self.value = value


def _decode(data: bytes, source: str, weights_only: bool, place: Callable[[Tensor, str], Tensor]) -> Any:
    """A Record (Ember formats) or the object of a PyTorch file, by the file's first bytes."""
    if not data:
        raise RecordError(f"{source}: empty file")
    if len(data) < 16:  # every file Ember or PyTorch writes is longer
        raise RecordError(f"{source}: truncated or corrupt: only {len(data)} bytes, too short for an Ember or "
                          f"PyTorch file (it starts with bytes {data[:8]!r})")  # fmt: skip
    head = data[:16]
    if head.startswith(b"PK\x03\x04"):
        return _Archive(load_torch_archive(io.BytesIO(data), source, weights_only, place))
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        if real_torch() is None and "torch" in sys.modules:  # torch aliased to Ember: its loader is this one
            raise RecordError(f"{source}: a legacy (pre-1.6) PyTorch file or a bare pickle; reading it needs PyTorch")
        return load_torch_object(io.BytesIO(data), source)  # a legacy PyTorch file (or a bare pickle)
    if head.startswith(b"\x1f\x8b"):  # gzip: MessagePack or JSON lines inside
        try:
            return NamedMpkGzRecorder().read(io.BytesIO(data), source, None)
        except RecordError as e:
            if "expected" not in str(e) and "not an Ember" not in str(e):
                raise
            return JsonGzRecorder().read(io.BytesIO(data), source, None)
    if 0x81 <= data[0] <= 0x8F or data[0] in (0xDE, 0xDF):  # a MessagePack map: Ember's record header
        return NamedMpkRecorder().parse(bytearray(data), source, None)
    if len(data) > 9 and data[8:9] == b"{":  # safetensors: 8-byte header length, then JSON
        return SafetensorsRecorder().read(io.BytesIO(data), source, None)
    raise RecordError(f"{source}: not an Ember or PyTorch file (it starts with bytes {head[:8]!r})")


def _placement(map_location: Any) -> Callable[[Tensor, str], Tensor]:
    """``place(tensor, saved_device)`` for a ``map_location``."""
    if map_location is None:
        return lambda t, saved: t.to(device=saved)
    if isinstance(map_location, dict):
        table = {str(k): str(v) for k, v in map_location.items()}
        return lambda t, saved: t.to(device=table.get(saved, saved))
    if callable(map_location) and not isinstance(map_location, str) and type(map_location).__name__ != "device":

        def call(t: Tensor, saved: str) -> Tensor:
            out = map_location(t, saved)
            return out if isinstance(out, Tensor) else t.to(device=saved)

        return call
    target = str(map_location)
    return lambda t, saved: t.to(device=target)


def _from_torch(obj: Any, place: Callable[[Tensor, str], Tensor], source: str) -> Any:
    """Ember tensors in place of the torch tensors / arrays of a PyTorch file's object."""

    def conv(v: Any) -> Any:
        if isinstance(v, np.ndarray):
            return place(from_numpy(v), "cpu")
        if type(v).__module__.startswith("torch") and hasattr(v, "detach"):  # a torch tensor or Parameter
            a = v.detach().cpu()
            if str(a.dtype) == "torch.bfloat16":  # bfloat16 where the selected backend has it, else float32
                torch = real_torch()  # the object holds torch tensors: torch is here
                assert torch is not None

                be = get_backend("cpu")
                bits = a.contiguous().view(torch.int16).numpy().view(np.uint16)
                wide = from_numpy(a.float().numpy()) if not be.supports_bfloat16 else None
                t = place(wide if wide is not None else Tensor._make(be.bfloat16_from_bits(bits), be), "cpu")
            else:
                t = place(from_numpy(a.numpy()), "cpu")
            if v.requires_grad and t.dtype.is_floating_point:
                t.requires_grad = True
            return t
        if isinstance(v, OrderedDict):
            return OrderedDict((k, conv(x)) for k, x in v.items())
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, list):
            return [conv(x) for x in v]
        if isinstance(v, tuple):
            return type(v)(*map(conv, v)) if hasattr(v, "_fields") else tuple(conv(x) for x in v)
        if type(v).__module__.startswith("torch"):  # torch.Size, torch.dtype, torch.device ...
            return str(v) if not isinstance(v, tuple) else tuple(v)
        return v

    return conv(obj)
