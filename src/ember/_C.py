# ruff: noqa: N999 - PyTorch's module name (``torch._C``)
"""``torch._C``'s names that Python libraries call, where Ember gives them a meaning.

PyTorch's ``_C`` is its compiled core; Ember has none (its kernels are the backends'), so this module holds only
what libraries on PyTorch call directly: ``_log_api_usage_once`` (torchmetrics calls it when it makes a metric),
which records the use for PyTorch's optional usage logger and does nothing otherwise; Ember has no such logger.
``_get_tracing_state`` is None: ``ember.jit.trace`` runs the function eagerly, so there is never a TorchScript
trace in progress (Pyro asks before silencing tracer warnings).
``PyTorchFileReader`` reads the records of a ``save`` archive (``_file_reader.py``).
``_nn._parse_to`` reads the arguments of ``to()`` as PyTorch does (modules overriding ``to`` call it: Lightning).
``_are_functorch_transforms_active()`` is True while an ``ember.func`` transform runs its function on this thread.
``_TensorMeta`` is the metaclass of ``Tensor`` (Ember's is plain ``type``), for ``isinstance(cls, _TensorMeta)``.
Code that tells real PyTorch apart checks ``torch._C.__name__ == "torch._C"`` (``backends.real_torch``): this
module is ``ember._C``.
"""

from __future__ import annotations

import sys
import threading
import types
from typing import Any

from ._device import device as _device
from ._dtype import DType, memory_format
from ._file_reader import PyTorchFileReader
from ._tensor import Tensor

__all__ = [
    "PyTorchFileReader",
    "_TensorMeta",
    "_are_functorch_transforms_active",
    "_nn",
    "_get_tracing_state",
    "_log_api_usage_once",
]

#: the metaclass of Tensor and its subclasses (PyTorch's ``torch._C._TensorMeta``)
_TensorMeta = type(Tensor)


def _log_api_usage_once(event: str) -> None:
    """Records nothing: PyTorch's API-usage logger has no Ember counterpart (``event`` must be a str, as there)."""
    if not isinstance(event, str):
        raise TypeError(f"_log_api_usage_once(): argument 'event' must be str, not {type(event).__name__}")


def _get_tracing_state() -> None:
    """None: no TorchScript trace is ever in progress (``ember.jit.trace`` runs eagerly)."""
    return None


def _parse_to(*args: Any, **kwargs: Any) -> tuple[_device | None, DType | None, bool, memory_format | None]:
    """``(device, dtype, non_blocking, memory_format)`` from ``to()``'s arguments: ``to(device, dtype,
    non_blocking)``, ``to(dtype, non_blocking)`` or ``to(tensor, non_blocking)``, each with ``memory_format=`` by
    keyword; a device string becomes a device. ``copy`` raises RuntimeError (as PyTorch's), anything else TypeError."""

    def bad() -> TypeError:
        got = ", ".join([type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()])
        return TypeError(f"to() received an invalid combination of arguments - got ({got}), but expected one of: "
                         "(device device=None, dtype dtype=None, bool non_blocking=False, bool copy=False, *, "
                         "memory_format memory_format=None), (dtype dtype, bool non_blocking=False, bool copy=False, "
                         "*, memory_format memory_format=None), (Tensor tensor, bool non_blocking=False, bool "
                         "copy=False, *, memory_format memory_format=None)")  # fmt: skip

    names = ["non_blocking", "copy"]
    dev: Any = None
    dt: Any = None
    if args and isinstance(args[0], Tensor):
        dev, dt, rest = args[0].device, args[0].dtype, args[1:]
    elif args and isinstance(args[0], DType):
        dt, rest = args[0], args[1:]
    else:
        names = ["device", "dtype", *names]
        rest = args
    if len(rest) > len(names) or set(kwargs) - {*names, "memory_format"} or set(names[: len(rest)]) & set(kwargs):
        raise bad()
    given = dict(zip(names, rest, strict=False), **kwargs)
    if "copy" in given:  # (a Module's ``to`` has no ``copy``: PyTorch refuses it, even False)
        raise RuntimeError(".to() does not accept copy argument")
    dev = given.get("device", dev)
    dt = given.get("dtype", dt)
    fmt = given.get("memory_format")
    if not isinstance(given.get("non_blocking", False), bool):
        raise bad()
    if (dt is not None and not isinstance(dt, DType)) or (fmt is not None and not isinstance(fmt, memory_format)):
        raise bad()
    if dev is not None and not isinstance(dev, _device):
        if isinstance(dev, bool) or not isinstance(dev, (str, int)):
            raise bad()
        dev = _device(dev)
    return dev, dt, given.get("non_blocking", False), fmt


#: ``torch._C._nn``: the one function of it that libraries call
_nn = types.ModuleType(f"{__name__}._nn", "PyTorch's ``torch._C._nn``: ``_parse_to``.")
_nn._parse_to = _parse_to  # type: ignore[attr-defined]
sys.modules[_nn.__name__] = _nn


class _Transforms(threading.local):
    depth = 0  # how many ``ember.func`` transforms are running their function on this thread (``func.py``)


TRANSFORMS = _Transforms()


def _are_functorch_transforms_active() -> bool:
    """Whether an ``ember.func`` transform (``grad``, ``vmap``, ``jacrev``, ...) is running its function here."""
    return TRANSFORMS.depth > 0
