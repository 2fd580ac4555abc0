"""Devices: ``ember.device("cpu")``, ``ember.device("cuda:0")``, and the default device.

The default device is where factories (``zeros``, ``randn``, ``tensor``...) and ``nn`` layers put tensors
made without a ``device=``: ``set_default_device("cuda")`` for the process (``EMBER_DEVICE=cuda`` before
import does the same), ``with ember.device("cuda"):`` for a block (per thread, as PyTorch's context).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ._errors import DeviceError

__all__ = ["device", "get_default_device", "set_default_device"]


#: PyTorch's other device types: ``device("mps")`` can be made and compared (libraries test ``dev == device("mps")``),
#: but no backend serves them, so a tensor or a default device there raises a DeviceError saying so
OTHER_TYPES = frozenset({
    "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps",
    "hpu", "mtia", "privateuseone",
})  # fmt: skip


class device:  # noqa: N801 - PyTorch's name
    """Where a tensor's memory lives: a type (``cpu``, ``cuda``, or ``meta``: no memory at all) and an index.

    PyTorch's other types (``mps``, ``xpu``, ...) make device objects too, which no backend here serves.

    A tensor's ``.device`` also remembers which backend serves it (``backend``), so that
    ``zeros(3, device=x.device)`` and ``y.to(x.device)`` land next to ``x``; a device you make yourself
    has ``backend=None`` and is served by the backend selected for its type (``ember.backends.use``).
    Equality and hashing look only at the type and index, as in PyTorch.
    """

    __slots__ = ("backend", "index", "type")

    def __init__(self, spec: Any, index: int | None = None):
        self.backend: str | None = None
        if isinstance(spec, device):
            self.type: str = spec.type
            self.index: int | None = spec.index
            self.backend = spec.backend
            return
        if isinstance(spec, int) and not isinstance(spec, bool):  # device(0) is cuda:0, as in PyTorch
            spec, index = "cuda", spec
        elif spec.__class__.__name__ == "device" and hasattr(spec, "type"):  # a torch.device
            spec, index = spec.type, getattr(spec, "index", None)
        text = str(spec)
        kind, _, idx = text.partition(":")
        if kind not in ("cpu", "cuda", "meta") and kind not in OTHER_TYPES:
            raise DeviceError(f"unknown device {text!r}; expected 'cpu', 'cuda', 'cuda:N' or 'meta'")
        if idx:
            if not idx.isdigit():
                raise DeviceError(f"bad device index in {text!r}; expected '{kind}:N' with N >= 0")
            index = int(idx)
        if kind == "cuda" and index is None:
            index = 0
        self.type = kind  # type: ignore[has-type]
        self.index = index  # type: ignore[has-type]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = device(other)
            except DeviceError:  # not a device string ("npu", "auto"): unequal, as PyTorch's device == str
                return False
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        return f"device(type='{self.type}'" + ("" if self.index is None else f", index={self.index}") + ")"

    def __enter__(self) -> device:
        """``with ember.device("cuda"):`` makes this the default device for the block (this thread only)."""
        _check_here(self)
        stack = getattr(_LOCAL, "stack", None)
        if stack is None:
            stack = _LOCAL.stack = []
        stack.append(self)
        _ACTIVE[0] += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        _LOCAL.stack.pop()
        _ACTIVE[0] -= 1

    def served_by(self, backend: str) -> device:
        """This device, marked as served by ``backend`` (what a tensor's ``.device`` returns)."""
        d = device(self)
        d.backend = backend
        return d


CPU = device("cpu")

#: the process's default device (None: the CPU); ``with device(...)`` blocks override it per thread
_DEFAULT: list[device | None] = [None]
_LOCAL = threading.local()
_ACTIVE = [0]  # open ``with device(...)`` blocks in all threads: 0 skips the thread-local lookup


def current_default() -> device | None:
    """The device a factory without ``device=`` uses (None: the CPU); the hot path of ``get_backend``."""
    if _ACTIVE[0]:
        stack = getattr(_LOCAL, "stack", None)
        if stack:
            return stack[-1]  # type: ignore[no-any-return]
    return _DEFAULT[0]


def get_default_device() -> device:
    """The default device: the innermost ``with ember.device(...)`` of this thread, else the process's."""
    d = current_default()
    return d if d is not None else CPU


#: the check that a device is served here: ``backends`` adds ``get_backend`` at import (this leaf cannot import it)
CHECK_HERE: list[Callable[[device], Any]] = []


def _check_here(d: device) -> None:
    """A DeviceError (listing what works here) unless some backend can serve ``d`` on this machine."""
    for check in CHECK_HERE:
        check(d)


def set_default_device(device: Any) -> None:
    """Make ``device`` the default device of the process (``None`` or ``"cpu"``: back to the CPU).

    A device that is not here raises a DeviceError naming the backends and devices that are.
    """
    if device is None:
        _DEFAULT[0] = None
        return
    d = _device_cls(device)
    _check_here(d)
    _DEFAULT[0] = None if d == CPU and d.backend is None else d


_device_cls = device  # (set_default_device's parameter is PyTorch's name, ``device``)
