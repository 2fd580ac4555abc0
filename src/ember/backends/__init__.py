"""Backends: which array library serves which device.

Devices and backends are two axes: a device says where memory lives (``cpu``, ``cuda:N``); a backend says
which array library serves it (``numpy``, ``torch``, ``cupy``). NumPy serves the CPU by default; a CUDA
device is served by torch when torch has CUDA, else by CuPy. Choose in code::

    ember.backends.use("torch")            # from now on
    with ember.backends.use("torch"):      # or for a block
        ...

or before import with ``EMBER_BACKEND=torch``. ``available()`` says what works here and why the rest
does not; ``get_backend(device)`` is what tensor factories call. Backend modules are imported lazily:
``import ember`` never imports torch or CuPy unless one is selected.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import _device
from .._device import device
from .._errors import DeviceError
from . import cupy_backend
from ._base import Backend
from .cupy_backend import unavailable_reason
from .numpy_backend import NumpyBackend

__all__ = [
    "Backend",
    "BackendStatus",
    "NumpyBackend",
    "available",
    "backend_of",
    "cuda_servers",
    "current",
    "get",
    "get_backend",
    "real_torch",
    "register_backend",
    "use",
    "cuda",
    "cudnn",
    "mkldnn",
    "mps",
]


@dataclass(frozen=True)
class _Entry:
    name: str
    target: str  # "module:Class" (imported on first use) or a factory
    device_types: tuple[str, ...]
    install: str  # what to install when it is missing
    reason: Callable[[], str | None] | None = None  # why it cannot run here (None: it can)
    device_count: Callable[[str], int] | None = None  # devices of a (non-CPU) type it sees here
    cuda_rank: int | None = None  # order among the default servers of ember.device("cuda") (None: not one)


_REGISTRY: dict[str, _Entry] = {}
_CACHE: dict[tuple[str, device], Backend] = {}
#: device type -> selected backend name ("cuda" absent: torch when it has CUDA, else CuPy)
_SELECTED: dict[str, str] = {"cpu": "numpy"}


def register_backend(
    name: str,
    target: str | Callable[[device], Backend],
    device_types: tuple[str, ...] = ("cpu",),
    install: str = "",
    reason: Callable[[], str | None] | None = None,
    *,
    device_count: Callable[[str], int] | None = None,
    cuda_rank: int | None = None,
) -> None:
    """Register a backend: ``target`` is ``"module:Class"`` (imported on first use) or ``factory(device)``.

    Its capabilities are fields given here: ``device_types`` it can serve; ``reason()`` says why it cannot run
    on this machine (None: it can); ``device_count(type)`` how many devices of a non-CPU type it sees (default
    0); ``cuda_rank`` its place among the backends that serve ``ember.device("cuda")`` when none is selected
    (lowest first; None: only when selected with ``use``).
    """
    entry = _Entry(name, target, tuple(device_types), install, reason, device_count, cuda_rank)  # type: ignore[arg-type]
    _REGISTRY[name] = entry


def real_torch() -> Any | None:
    """PyTorch itself, or None: not installed, or ``torch`` names something else in this process.

    Programs and harnesses may alias the name (``sys.modules["torch"] = ember``, or a ``torch`` package
    forwarding to Ember); importing "torch" then gives Ember back, and asking it for CUDA would ask Ember
    again, forever. PyTorch is recognised by its compiled core, ``torch._C``.
    """
    mod = sys.modules.get("torch")
    if mod is None:
        try:
            mod = importlib.import_module("torch")
        except ImportError:
            return None
    try:
        core = mod.__dict__.get("_C")
    except AttributeError:
        return None
    return mod if getattr(core, "__name__", None) == "torch._C" else None


def _torch_reason() -> str | None:
    if real_torch() is not None:
        return None
    if "torch" in sys.modules:
        return "the module named torch here is not PyTorch (is Ember aliased as torch?)"
    return "torch is not installed"


def _cupy_reason() -> str | None:
    return unavailable_reason()


def _torch_device_count(device_type: str) -> int:
    torch = real_torch()
    if torch is None or device_type != "cuda":
        return 0
    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


def _cupy_device_count(device_type: str) -> int:
    if device_type != "cuda" or unavailable_reason() is not None:
        return 0
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())


_NUMPY: Backend = NumpyBackend()
register_backend("numpy", lambda d: _NUMPY, ("cpu",), "numpy")
register_backend("torch", "ember.backends.torch.backend:TorchBackend", ("cpu", "cuda"), "torch", _torch_reason,
                 device_count=_torch_device_count, cuda_rank=0)  # fmt: skip
register_backend("meta", "ember.backends.meta_backend:MetaBackend", ("meta",), device_count=lambda t: 1)
register_backend("cupy", "ember.backends.cupy_backend:CupyBackend", ("cuda",), "cupy-cuda12x", _cupy_reason,
                 device_count=_cupy_device_count, cuda_rank=1)  # fmt: skip

_CACHE[("numpy", _NUMPY.device)] = _NUMPY


def _after_fork_in_child() -> None:
    """A child forked after CuPy initialised CUDA cannot use it: drop the parent's CuPy backends, so that a
    CuPy tensor made or unpickled here raises a DeviceError naming the way out (spawn), not CUDA's
    ``cudaErrorInitializationError`` (or a parent waiting on a queue the child never fills)."""
    if cupy_backend.forked_after_cuda():
        for key in [k for k in _CACHE if k[0] == "cupy"]:
            del _CACHE[key]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _why_not(entry: _Entry, dev: device | None = None) -> str | None:
    """Why ``entry`` cannot serve ``dev`` (or any of its device types) here; None when it can."""
    if dev is not None and dev.type not in entry.device_types:
        return f"it serves {', '.join(entry.device_types)} only"
    if entry.reason is not None:
        r = entry.reason()
        if r is not None:
            return r
    if dev is not None and dev.type != "cpu":
        try:
            _create(entry, dev)
        except Exception as e:
            return str(e)
    return None


def _create(entry: _Entry, dev: device) -> Backend:
    key = (entry.name, dev)
    be = _CACHE.get(key)
    if be is None:
        if isinstance(entry.target, str):
            mod, _, cls = entry.target.partition(":")
            be = getattr(importlib.import_module(mod), cls)(dev)
        else:
            be = entry.target(dev)
        _CACHE[key] = be
        if entry.name == "torch":  # the switches set before torch was imported
            from .. import _determinism

            cudnn.apply_to_torch()
            _determinism.apply_to_torch()
    return be


def _unavailable(what: str, reason: str) -> DeviceError:
    ok = [f"{n} ({', '.join(s.devices)})" for n, s in available().items() if s]
    hints = [f"pip install {e.install}" for e in _REGISTRY.values() if e.install and e.name not in available_names()]
    return DeviceError(
        f"{what} is not available: {reason}. Available here: {'; '.join(ok) or 'none'}"
        + (f". To add more: {' / '.join(hints)}" if hints else "")
    )


def _entry(name: str) -> _Entry:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise DeviceError(f"unknown backend {name!r}; registered backends: {', '.join(_REGISTRY)}") from None


def _serving(dev: device) -> str:
    """The name of the backend that serves ``dev`` under the current selection."""
    if _ENV_ERROR:  # a bad EMBER_BACKEND: the first use says so (``import ember`` itself still works)
        raise DeviceError(_ENV_ERROR[0])
    name = _SELECTED.get(dev.type)
    if name is not None:
        return name
    if dev.type == "cuda":
        reasons = []
        for cand in cuda_servers():
            why = _why_not(_REGISTRY[cand], dev)
            if why is None:
                return cand
            reasons.append(f"{cand}: {why}")
        raise _unavailable(f"device {dev}", "; ".join(reasons) or "no registered backend serves cuda")
    for cand, entry in _REGISTRY.items():  # another type (meta): the first backend registered for it
        if dev.type in entry.device_types:
            why = _why_not(entry, dev)
            if why is not None:
                raise _unavailable(f"device {dev}", f"{cand}: {why}")
            return cand
    raise _unavailable(f"device {dev}", "no backend serves it")


#: test seam: ``hook(device) -> backend name | None`` chooses the backend of a device given without one
#: (the mixed-backend test run serves the tests' CPU with torch while Ember's own code keeps NumPy)
select_hook: Callable[[device], str | None] | None = None


def get_backend(dev: Any = None) -> Backend:
    """The backend serving ``dev`` under the current selection (``None``: the default device)."""
    if dev is None:
        dev = _device.current_default() or _device.CPU
    elif isinstance(dev, Backend):
        return dev
    d = dev if isinstance(dev, device) else device(dev)
    if d.backend is not None:  # a tensor's device: stay on its backend
        be = _CACHE.get((d.backend, d))
        return be if be is not None else get(d.backend, d)
    if _ENV_ERROR:
        raise DeviceError(_ENV_ERROR[0])
    if select_hook is not None:
        chosen = select_hook(d)
        if chosen is not None:
            return get(chosen, d)
    name = _SELECTED.get(d.type)
    if name is not None:
        be = _CACHE.get((name, d))
        if be is not None:
            return be
    return get(_serving(d), d)


def get(name: str, dev: Any = None) -> Backend:
    """Backend ``name`` on ``dev`` (default: its first device type), or a DeviceError saying why not."""
    entry = _entry(name)
    d = device(dev if dev is not None else entry.device_types[0])
    be = _CACHE.get((name, d))
    if be is not None:
        return be
    why = _why_not(entry, d)
    if why is not None:
        raise _unavailable(f"backend {name!r} on {d}", why)
    return _create(entry, d)


def backend_of(array: Any) -> Backend:
    """The backend whose arrays ``array`` is (a DeviceError for a foreign array)."""
    if array.__class__ is _NUMPY.array_type:
        return _NUMPY
    kind = getattr(getattr(array, "device", None), "type", "cpu")
    found = None
    for be in list(_CACHE.values()):
        if isinstance(array, be.array_type):
            found = be
            if be.device.type == kind:
                break
    if found is None:
        raise DeviceError(f"no Ember backend holds arrays of type {type(array).__name__}")
    return found


def namespace_of(array: Any) -> Any:
    """The ``xp`` namespace (NumPy's names) for a backend array, or a DeviceError for a foreign one."""
    if array.__class__ is _NUMPY.array_type:
        return _NUMPY.xp
    return backend_of(array).xp


def current(device_type: str = "cpu") -> str:
    """The name of the backend that serves ``device_type`` now."""
    return _serving(device(device_type))


class _Use:
    """The selection made by ``use``; as a context manager it restores the previous one on exit."""

    def __init__(self, previous: dict[str, str], name: str) -> None:
        self._previous = previous
        self.name = name

    def __enter__(self) -> _Use:
        return self

    def __exit__(self, *exc: Any) -> None:
        _SELECTED.clear()
        _SELECTED.update(self._previous)

    def __repr__(self) -> str:
        return f"ember.backends.use({self.name!r})"


def use(name: str) -> _Use:
    """Serve every device type ``name`` supports with backend ``name`` (also a context manager)."""
    entry = _entry(name)
    _ENV_ERROR.clear()  # a choice in code replaces a bad EMBER_BACKEND
    why = _why_not(entry)
    if why is not None:
        raise _unavailable(f"backend {name!r}", why)
    previous = dict(_SELECTED)
    for t in entry.device_types:
        if t == "cpu" or _why_not(entry, device(t)) is None:
            _SELECTED[t] = name
    if "cpu" not in entry.device_types:
        _SELECTED.setdefault("cpu", "numpy")
    return _Use(previous, name)


@dataclass(frozen=True)
class BackendStatus:
    """Whether a backend works here: its devices, or the reason it does not (``bool(status)`` is ok)."""

    name: str
    ok: bool
    devices: tuple[str, ...]
    reason: str

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        if not self.ok:
            return f"{self.name}: unavailable ({self.reason})"
        return f"{self.name}: {', '.join(self.devices)}" + (f" (not cuda: {self.reason})" if self.reason else "")


def available() -> dict[str, BackendStatus]:
    """Every registered backend with the devices it can serve here, or the reason it cannot."""
    out: dict[str, BackendStatus] = {}
    for name, entry in _REGISTRY.items():
        why = _why_not(entry)
        if why is not None:
            out[name] = BackendStatus(name, False, (), why)
            continue
        devs: list[str] = []
        reasons: list[str] = []
        for t in entry.device_types:
            if t == "cpu":
                devs.append("cpu")
                continue
            n = entry.device_count(t) if entry.device_count is not None else 0
            if n:
                devs += [t] if t == "meta" else [f"{t}:{i}" for i in range(n)]  # (one meta device, no index)
            else:
                reasons.append(_why_not(entry, device(t)) or f"no {t} device")
        if devs:
            out[name] = BackendStatus(name, True, tuple(devs), "; ".join(reasons))
        else:
            out[name] = BackendStatus(name, False, (), "; ".join(reasons))
    return out


def available_names() -> list[str]:
    """Names of the backends that work on this machine."""
    return [n for n, s in available().items() if s]


def available_backends() -> list[str]:
    """``name (device)`` for every backend and device that works here (kept for older callers)."""
    return [f"{n} ({d})" for n, s in available().items() for d in s.devices]


def cuda_servers() -> list[str]:
    """The backends that serve ``ember.device("cuda")`` when none is selected, in the order they are tried."""
    ranked = [(e.cuda_rank, n) for n, e in _REGISTRY.items() if e.cuda_rank is not None]
    return [n for _, n in sorted(ranked)]


from . import cuda, cudnn, mkldnn, mps  # noqa: E402 - flag namespaces, after the registry they read

_ENV_ERROR: list[str] = []  # the reason EMBER_BACKEND could not be used, raised when a backend is first needed
_env = os.environ.get("EMBER_BACKEND", "").strip()
if _env:
    try:
        use(_env)
    except DeviceError as _e:
        _ENV_ERROR.append(f"EMBER_BACKEND={_env!r} cannot be used: {_e} (set it to one of them, or unset it)")
_device.CHECK_HERE.append(get_backend)
_env = os.environ.get("EMBER_DEVICE", "").strip()
if _env and _ENV_ERROR:  # not checked: the bad EMBER_BACKEND is the error, at first use (``import ember`` works)
    _device._DEFAULT[0] = _device.device(_env)
elif _env:
    _device.set_default_device(_env)
