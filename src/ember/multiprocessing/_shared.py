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

#: id(base uint8 array) -> (weak reference to it, block name, its address, its size): an array of any
#: library (NumPy, a torch CPU tensor made with ``from_numpy``) is in a block when its address is
_BLOCKS: dict[int, tuple[weakref.ref[np.ndarray], str, int, int]] = {}
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
    _BLOCKS[key] = (weakref.ref(base), name, int(base.__array_interface__["data"][0]), nbytes)
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


def _address(arr: Any) -> int | None:
    """The address of a CPU array's first element (NumPy or torch), None for other devices."""
    if isinstance(arr, np.ndarray):
        return int(arr.__array_interface__["data"][0])
    if hasattr(arr, "data_ptr") and getattr(getattr(arr, "device", None), "type", None) == "cpu":
        return int(arr.data_ptr())
    return None


def _layout(arr: Any) -> tuple[str, tuple[int, ...]] | None:
    """NumPy dtype string and byte strides of a CPU array, None when NumPy has no such dtype."""
    if isinstance(arr, np.ndarray):
        return arr.dtype.str, tuple(arr.strides)
    try:
        dt = np.dtype(str(arr.dtype).replace("torch.", ""))
    except TypeError:
        return None  # bfloat16
    return dt.str, tuple(s * dt.itemsize for s in arr.stride())


def _block_of(arr: Any) -> tuple[np.ndarray, str, int] | None:
    """The block holding ``arr`` (its base array, name and address), or None."""
    ptr = _address(arr)
    if ptr is None:
        return None
    for ref, name, start, nbytes in list(_BLOCKS.values()):
        base = ref()
        if base is not None and start <= ptr < start + max(nbytes, 1):
            return base, name, start
    return None


def shared_spec(arr: Any) -> tuple[Any, ...] | None:
    """What another process needs to map ``arr`` (a view of a block), or None when it is not shared."""
    found = _block_of(arr)
    layout = _layout(arr) if found is not None else None
    if found is None or layout is None:
        return None
    base, name, start = found
    dtype, strides = layout
    return (_TAG, name, base.nbytes, _address(arr) - start, tuple(arr.shape), strides, dtype)  # type: ignore[operator]


def attach(spec: tuple[Any, ...]) -> np.ndarray:
    """The NumPy array described by ``shared_spec``'s result, mapped in this process."""
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
    return np.ndarray(shape, np.dtype(dtype), buffer=base, offset=offset, strides=strides)


def share_memory_(t: Any) -> Any:
    """Move a CPU tensor's values into a shared block (views made earlier keep the old memory).

    Any CPU backend: the block is wrapped by the backend's ``from_numpy``. A dtype NumPy lacks
    (bfloat16 in torch) uses torch's own shared memory. A tensor on another device is refused: PyTorch
    shares CUDA tensors through CUDA IPC (its ``share_memory_`` is a no-op for them), Ember pickles their
    values, so another process would silently update a copy.
    """
    if t.device.type != "cpu":
        raise RuntimeError(
            f"share_memory_: a tensor on {t.device} cannot be shared between processes in Ember (pickling it "
            "copies its values; there is no CUDA IPC): keep the shared tensor or model on the CPU "
            "(model.cpu().share_memory()) and move copies to the device in each process"
        )
    arr = t._data
    if _address(arr) is None or _block_of(arr) is not None:
        return t
    if _layout(arr) is None:
        arr.share_memory_()
        return t
    values = t._backend.to_numpy(arr)
    _, base = create(values.nbytes)
    new = base.view(values.dtype).reshape(values.shape) if values.nbytes else np.empty(values.shape, values.dtype)
    new[...] = values
    t._data = t._backend.from_numpy(new)
    return t


def is_shared(t: Any) -> bool:
    """Whether the tensor's storage lives in shared memory (after ``share_memory_()``).

    False on a device other than the CPU, on every backend (PyTorch's True for CUDA tensors means CUDA IPC,
    which Ember does not do: a pickled CUDA tensor is a copy).
    """
    if t.device.type != "cpu":
        return False
    if _block_of(t._data) is not None:
        return True
    fn = getattr(t._data, "is_shared", None)  # torch's own shared memory
    return bool(fn()) if fn is not None else False
