"""Ember tensors handed to torch.distributed, without a copy where the memory allows it.

A NumPy array becomes a torch tensor through ``torch.from_numpy`` (the same memory), a torch-backend array
is passed as it is, a CuPy array goes through DLPack. Only a tensor whose memory torch cannot address as one
dense block (a strided view, a read-only or broadcast array) is copied into a contiguous buffer, and an
in-place collective then copies the result back. Either way, a collective that writes into an Ember tensor
bumps its version counter, like any in-place operation, so a value saved for backward is never silently
replaced.
"""

from __future__ import annotations

import weakref
from functools import partial
from typing import Any

from .._errors import EmberError
from .._tensor import Tensor
from .._torch_alias import _aliased

__all__ = ["DistError", "DistBackendError", "NotInitializedError", "Borrowed", "borrow", "gather_single",
           "scatter_single", "torch_modules"]  # fmt: skip

_MISSING = "ember.distributed needs torch (it runs on torch.distributed): pip install 'torch==2.13.0'"


class DistError(EmberError):
    """A distributed operation cannot run as asked (PyTorch's ``torch.distributed.DistError``)."""


class DistBackendError(DistError):
    """The communication backend failed: a peer died, a timeout passed, the transport broke."""


class NotInitializedError(DistError, ValueError):
    """A collective or query that needs the default process group before ``init_process_group``."""


_MODULES: list[tuple[Any, Any]] = []


def torch_modules() -> tuple[Any, Any]:
    """``(torch, torch.distributed)``; a one-line ``ImportError`` when torch is missing."""
    if _MODULES:
        return _MODULES[0]
    try:
        import torch
        import torch.distributed as tdist
    except ImportError:
        raise ImportError(_MISSING) from None
    if _aliased():  # ``torch`` is Ember itself here: PyTorch's process groups are out of reach
        raise ImportError("ember.distributed needs PyTorch's torch.distributed, but `torch` is Ember in this process")
    if not tdist.is_available():
        raise ImportError(f"ember.distributed: torch {torch.__version__} was built without torch.distributed")
    _MODULES.append((torch, tdist))
    return torch, tdist


def gather_single(tdist: Any) -> Any:
    """torch's ``all_gather_single`` (torch >= 2.13), or ``all_gather_into_tensor``, its name before."""
    return getattr(tdist, "all_gather_single", None) or tdist.all_gather_into_tensor


def scatter_single(tdist: Any) -> Any:
    """torch's ``reduce_scatter_single`` (torch >= 2.13), or ``reduce_scatter_tensor``, its name before."""
    return getattr(tdist, "reduce_scatter_single", None) or tdist.reduce_scatter_tensor


class Borrowed:
    """A torch view of an Ember tensor's memory, and how to write a result back when it had to be copied."""

    __slots__ = ("array", "copied", "tensor", "torch")

    def __init__(self, tensor: Tensor, torch_tensor: Any, array: Any, copied: bool) -> None:
        self.tensor, self.torch, self.array, self.copied = tensor, torch_tensor, array, copied

    def written(self) -> None:
        """The collective wrote into ``self.torch``: copy back if needed, and bump the tensor's version."""
        t = self.tensor
        if self.copied:
            t._data[...] = self.array
        t._vc[0] += 1


_VIEWS: dict[int, tuple[Any, Any, Any]] = {}  # id(tensor): (a weak reference to it, its array, the torch view)


def _numpy_view(torch: Any, t: Tensor, a: Any) -> Any:
    """``torch.from_numpy(a)`` for ``t``'s array, made once per tensor and array.

    A fresh view per call costs more than making it: the view is released after the collective, sometimes
    from a gloo thread, which must then take the GIL to release the NumPy array (measured: about 10 us a
    call, as much as the rest of the wrapper). The view lives as long as the tensor, and only while
    ``t._data`` is this array.
    """
    key = id(t)
    hit = _VIEWS.get(key)
    if hit is not None and hit[1] is a and hit[0]() is t:
        return hit[2]
    tt = torch.from_numpy(a)
    _VIEWS[key] = (weakref.ref(t, partial(_forget_view, key)), a, tt)
    return tt


def _forget_view(key: int, _ref: Any) -> None:
    _VIEWS.pop(key, None)


def borrow(t: Any, op: str, arg: str = "tensor", writable: bool = False) -> Borrowed:
    """``t``'s memory as a contiguous torch tensor (zero-copy for NumPy, torch and CuPy dense arrays)."""
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: {arg} must be an ember.Tensor, got {type(t).__name__}")
    torch, _ = torch_modules()
    be = t._backend
    a = t._data
    if be.name == "torch":
        if a.is_contiguous():  # an expanded (stride 0) tensor is never contiguous
            return Borrowed(t, a, a, False)
        if writable and any(st == 0 and n > 1 for st, n in zip(a.stride(), a.shape, strict=True)):
            raise DistError(f"{op}: {arg} is read-only (a broadcast or expanded view); pass a tensor it can write into")
        c = a.contiguous()
        return Borrowed(t, c, c, True)
    readonly = not getattr(getattr(a, "flags", None), "writeable", True)
    if writable and readonly:
        raise DistError(f"{op}: {arg} is read-only (a broadcast or expanded view); pass a tensor it can write into")
    dense = be.is_contiguous(a) and not readonly
    c = a if dense else be.xp.ascontiguousarray(a)
    if c is a and not dense:
        c = be.xp.copy(a)
    if be.name == "numpy":
        tt = _numpy_view(torch, t, c) if dense else torch.from_numpy(c)
    elif be.name == "cupy":
        tt = torch.from_dlpack(c)
    else:
        raise DistError(
            f"{op}: tensors of the {be.name!r} backend cannot go to torch.distributed "
            "(NumPy, torch and CuPy tensors can)"
        )
    return Borrowed(t, tt, c, not dense)


def wrap(torch_tensor: Any, like: Tensor) -> Tensor:
    """A torch tensor made by torch.distributed as an Ember tensor on ``like``'s backend (no copy)."""
    be = like._backend
    if be.name == "torch":
        return Tensor._make(torch_tensor, be)
    if be.name == "numpy":
        return Tensor._make(torch_tensor.numpy(), be)
    return Tensor._make(be.xp.from_dlpack(torch_tensor), be)
