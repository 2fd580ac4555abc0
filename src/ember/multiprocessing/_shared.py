"""Shared memory for NumPy-backed tensors: POSIX shared-memory blocks mapped into every process.

``share_memory_()`` moves a tensor's values into a new block. Processes started with ``fork`` inherit
the mapping; a tensor pickled to another process (``spawn`` arguments, queues) is rebuilt onto the same
block by name, so updates in any process are seen by all (Hogwild training). The process that created
a block removes its name when the block's last array is garbage-collected (or at exit); the memory
itself lives until the last process unmaps it. Blocks are made with ``shm_open`` directly rather than
``multiprocessing.shared_memory``, whose resource tracker would unlink blocks other processes still use.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import secrets
import weakref
from typing import Any

import numpy as np

try:
    import _posixshmem
except ImportError:  # pragma: no cover - Windows
    _posixshmem = None

__all__ = ["attach", "create", "is_shared", "open_block", "share_memory_", "shared_spec", "unlink"]

#: id(base uint8 array) -> (weak reference to it, block name)
_BLOCKS: dict[int, tuple[weakref.ref[np.ndarray], str]] = {}
#: blocks this process has attached, by name (one mapping per block and process)
_ATTACHED: weakref.WeakValueDictionary[str, np.ndarray] = weakref.WeakValueDictionary()
_TAG = "ember-shm"


def _require() -> Any:
    if _posixshmem is None:  # pragma: no cover
        raise RuntimeError("shared memory needs a POSIX system (Linux or macOS)")
    return _posixshmem


def _map(name: str, nbytes: int, flags: int, register: bool = True) -> np.ndarray:
    shm = _require()
    fd = shm.shm_open(name, flags, mode=0o600)
    try:
        if flags & os.O_CREAT:
            os.ftruncate(fd, max(nbytes, 1))
        mm = mmap.mmap(fd, max(nbytes, 1))
    finally:
        os.close(fd)
    base = np.frombuffer(mm, np.uint8, count=nbytes)
    if not register:
        return base
    key = id(base)
    _BLOCKS[key] = (weakref.ref(base), name)
    weakref.finalize(base, _BLOCKS.pop, key, None)
    return base


def open_block(name: str, nbytes: int) -> np.ndarray:
    """Map an existing block without registering it as shared (DataLoader batches: pickling copies them)."""
    return _map(name, nbytes, os.O_RDWR, register=False)


def _unlink_if_owner(name: str, pid: int) -> None:
    if os.getpid() == pid:  # a forked child inherits this finalizer; only the creator unlinks
        unlink(name)


def unlink(name: str) -> None:
    """Remove a block's name (processes that mapped it keep their mapping)."""
    with contextlib.suppress(FileNotFoundError):
        _require().shm_unlink(name)


def create(nbytes: int, owned: bool = True) -> tuple[str, np.ndarray]:
    """A new block of ``nbytes`` as a uint8 array; ``owned``: unlink its name when the array dies."""
    name = f"/ember_{os.getpid()}_{secrets.token_hex(8)}"
    base = _map(name, nbytes, os.O_CREAT | os.O_EXCL | os.O_RDWR, register=owned)
    if owned:
        weakref.finalize(base, _unlink_if_owner, name, os.getpid())
    return name, base


def _block_of(arr: Any) -> tuple[np.ndarray, str] | None:
    obj = arr
    while isinstance(obj, np.ndarray):
        entry = _BLOCKS.get(id(obj))
        if entry is not None and entry[0]() is obj:
            return obj, entry[1]
        obj = obj.base
    return None


def shared_spec(arr: Any) -> tuple[Any, ...] | None:
    """What another process needs to map ``arr`` (a view of a block), or None when it is not shared."""
    found = _block_of(arr) if isinstance(arr, np.ndarray) else None
    if found is None:
        return None
    base, name = found
    offset = arr.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return (_TAG, name, base.nbytes, offset, tuple(arr.shape), tuple(arr.strides), arr.dtype.str)


def attach(spec: tuple[Any, ...]) -> tuple[np.ndarray, Any]:
    """The array described by ``shared_spec``'s result, mapped in this process, and the CPU backend."""
    from ..backends import get_backend

    tag, name, nbytes, offset, shape, strides, dtype = spec
    if tag != _TAG:
        raise ValueError(f"not a shared-memory spec: {spec!r}")
    base = _ATTACHED.get(name)
    if base is None:
        try:
            base = _map(name, nbytes, os.O_RDWR)
        except FileNotFoundError:
            raise RuntimeError(
                f"shared memory block {name} no longer exists: the process that created it released it "
                "(keep the shared tensor alive in the parent until the children have started)"
            ) from None
        _ATTACHED[name] = base
    arr = np.ndarray(shape, np.dtype(dtype), buffer=base, offset=offset, strides=strides)
    return arr, get_backend(None)


def share_memory_(t: Any) -> Any:
    """Move ``t``'s values into shared memory (NumPy arrays); torch arrays use torch's; CUDA: nothing to do."""
    arr = t._data
    if isinstance(arr, np.ndarray):
        if _block_of(arr) is None:
            _, base = create(arr.nbytes)
            new = base.view(arr.dtype).reshape(arr.shape) if arr.nbytes else np.empty(arr.shape, arr.dtype)
            new[...] = arr
            t._data = new
    elif hasattr(arr, "share_memory_") and getattr(arr, "device", None) is not None and arr.device.type == "cpu":
        arr.share_memory_()
    return t


def is_shared(t: Any) -> bool:
    arr = t._data
    if isinstance(arr, np.ndarray):
        return _block_of(arr) is not None
    fn = getattr(arr, "is_shared", None)
    return bool(fn()) if fn is not None else False
