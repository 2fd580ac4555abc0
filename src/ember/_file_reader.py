"""``PyTorchFileReader``: the records of an archive written by ``save`` (PyTorch's zip format), read by name.

PyTorch's reader (``torch._C.PyTorchFileReader``, also ``torch.PyTorchFileReader``) is a C++ class; libraries use it
to read ``data.pkl`` and the storages of a checkpoint themselves (Lightning's lazy loading). Records are named
without the archive's top folder (``"data.pkl"``, ``"data/0"``), as there. A missing file or record, or a file
that is no zip archive, raises RuntimeError, as PyTorch's does. ``get_storage_from_record`` (a storage of
PyTorch's own kind) is not provided: Ember's tensors are read through ``load``.
"""

from __future__ import annotations

import os
import struct
import zipfile
from typing import Any

__all__ = ["PyTorchFileReader"]


class PyTorchFileReader:
    """The records of a PyTorch zip archive (a path or a binary file object), as bytes."""

    def __init__(self, file: Any) -> None:
        if isinstance(file, (str, os.PathLike)):
            if not os.path.isfile(file):
                raise RuntimeError(f"open file failed: no such file: {os.fspath(file)}")
        elif not (hasattr(file, "read") and hasattr(file, "seek") and hasattr(file, "tell")):
            raise TypeError(f"PyTorchFileReader(): expected a path or a binary file object, got {type(file).__name__}")
        try:
            self._zip = zipfile.ZipFile(file)
        except (zipfile.BadZipFile, OSError, EOFError):
            raise RuntimeError("PytorchStreamReader failed reading zip archive: not a ZIP archive") from None
        names = self._zip.namelist()  # PyTorch writes every record under one top folder (the archive's name)
        self._prefix = names[0].split("/", 1)[0] + "/" if names and "/" in names[0] else ""

    def _info(self, name: str) -> zipfile.ZipInfo:
        try:
            return self._zip.getinfo(self._prefix + name)
        except KeyError:
            raise RuntimeError(f"PytorchStreamReader failed locating file {name}: file not found") from None

    def get_all_records(self) -> list[str]:
        """The names of every record (without the archive's top folder)."""
        n = len(self._prefix)
        return [name[n:] for name in self._zip.namelist() if name.startswith(self._prefix) and not name.endswith("/")]

    def has_record(self, name: str) -> bool:
        """Whether the archive holds a record ``name``."""
        try:
            self._zip.getinfo(self._prefix + name)
        except KeyError:
            return False
        return True

    def get_record(self, name: str) -> bytes:
        """The bytes of record ``name`` (RuntimeError when there is none)."""
        return self._zip.read(self._info(name))

    def get_record_size(self, name: str) -> int:
        """The size in bytes of record ``name``."""
        return self._info(name).file_size

    def get_record_header_offset(self, name: str) -> int:
        """Where record ``name``'s local zip header starts in the file."""
        return self._info(name).header_offset

    def get_record_offset(self, name: str) -> int:
        """Where record ``name``'s bytes start in the file (PyTorch stores them uncompressed, so they can be mapped)."""
        info = self._info(name)
        fp = self._zip.fp
        assert fp is not None
        pos = fp.tell()
        try:
            fp.seek(info.header_offset)
            header = fp.read(30)
        finally:
            fp.seek(pos)
        name_len, extra_len = struct.unpack("<HH", header[26:30])
        return info.header_offset + 30 + name_len + extra_len

    def serialization_id(self) -> str:
        """The archive's serialization id (its ``.data/serialization_id`` record), or "" when it has none."""
        if not self.has_record(".data/serialization_id"):
            return ""
        return self.get_record(".data/serialization_id").decode()
