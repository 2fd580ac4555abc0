"""PyTorch as an array library: torch tensors on the CPU or a CUDA device (the spec's TorchMat).

Only torch's kernels are used, never its autograd: every array this backend makes has
``requires_grad=False`` and Ember's engine differentiates. ``xp`` is ``torch/xp.py`` (NumPy's names).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..._device import device
from ..._dtype import ALL_DTYPES, LIMITED_DTYPES, DType
from ..._errors import DeviceError
from .._base import Backend
from . import xp as _torch_xp
from .array_kernels import TorchArrayKernels
from .attention_kernels import TorchAttentionKernels
from .kernels import TorchKernels
from .rnn_kernels import TorchRNNKernels

_TO_NATIVE: dict[DType, Any] = {
    d: getattr(torch, "bool" if d.name == "bool" else d.name) for d in (*ALL_DTYPES, *LIMITED_DTYPES)
}
_FROM_NATIVE: dict[Any, DType] = {v: k for k, v in _TO_NATIVE.items()}
_FLOATS = frozenset(v for k, v in _TO_NATIVE.items() if k.is_floating_point)
_COMPLEX = frozenset(v for k, v in _TO_NATIVE.items() if k.is_complex)


def cuda_reason() -> str | None:
    """Why torch cannot serve CUDA here, or None when it can."""
    if not torch.cuda.is_available():
        build = torch.version.cuda
        return "torch has no CUDA device here" + ("" if build else f" (torch {torch.__version__} is a CPU-only build)")
    return None


class TorchBackend(TorchKernels, TorchAttentionKernels, TorchRNNKernels, TorchArrayKernels, Backend):
    """torch tensors on ``cpu`` or ``cuda:N``; bfloat16 and float16 on both."""

    name = "torch"
    supports_bfloat16 = True
    device_types = ("cpu", "cuda")
    nll_kernel_checks_targets = True  # ("Target 5 is out of bounds.", IndexError, on the CPU)

    def __init__(self, dev: Any = "cpu") -> None:
        d = device(dev)
        if d.type == "cuda":
            reason = cuda_reason()
            if reason is None and (d.index or 0) >= torch.cuda.device_count():
                reason = f"torch sees {torch.cuda.device_count()} CUDA device(s), no {d}"
            if reason is not None:
                raise DeviceError(f"torch backend: {reason}")
        self.device = d.served_by("torch")
        self.tdevice = torch.device(str(d))
        self.xp = _torch_xp if d.type == "cpu" else _torch_xp.on_device(self.tdevice)
        self.array_type = torch.Tensor
        self.float_dtypes = _FLOATS
        self.complex_dtypes = _COMPLEX
        self.grad_dtypes = _FLOATS | _COMPLEX
        # the engine's array rules call kernels below torch's autograd layer: torch records nothing for Ember's
        # arrays, which never require its gradients (the same kernels and bits, ~0.08 µs a call less)
        self.kernel_region = torch._C._AutoDispatchBelowAutograd

    def device_name(self) -> str:
        if self.tdevice.type == "cuda":
            return str(torch.cuda.get_device_name(self.tdevice))
        return super().device_name()

    # -- arrays and dtypes -------------------------------------------------------------------
    def asarray(self, data: Any, dtype: DType | None = None) -> torch.Tensor:
        nd = None if dtype is None else self.native_dtype(dtype)
        host = data if isinstance(data, (list, tuple, np.ndarray, np.generic)) else None
        if isinstance(data, (np.ndarray, np.generic)):
            data = self.from_numpy(np.asarray(data))
        out = torch.as_tensor(data, dtype=nd, device=self.tdevice)
        if host is not None and not self.cheap_sync and getattr(out, _RANGE, None) is None:
            _remember_range(out, host)
        return out

    def from_numpy(self, array: np.ndarray, non_blocking: bool = False) -> torch.Tensor:
        if array.dtype.byteorder == ">" or not array.flags.writeable or any(s < 0 for s in array.strides):
            array = np.array(array, dtype=array.dtype.newbyteorder("="), copy=True)
        if array.dtype.kind == "u" and array.dtype.itemsize > 1:  # torch.from_numpy refuses uint16/32/64: their bits
            t = torch.from_numpy(array.view(array.dtype.str.replace("u", "i"))).view(getattr(torch, array.dtype.name))
        else:
            t = torch.from_numpy(array)
        if not self.cheap_sync:
            _remember_range(t, array)
        return t if self.device.type == "cpu" else _carry_range(t.to(self.tdevice, non_blocking=non_blocking), t)

    def known_range(self, array: Any) -> tuple[int, int] | None:
        """Computed on the CPU; on CUDA, remembered from the host data the array was uploaded from, while
        torch's version counter says it is unchanged. A view holding all of its base's elements (a reshape,
        a transpose) has the base's range; a smaller view (a row of COO indices) only lies within it, which
        is not its range: unknown."""
        if self.cheap_sync:
            return super().known_range(array)
        base = getattr(array, "_base", None)
        for t in (array, base if base is not None and base.numel() == array.numel() else None):
            r = getattr(t, _RANGE, None)
            if r is not None and r[2] == t._version:  # type: ignore[union-attr]
                return r[0], r[1]
        return None

    def to_numpy(self, array: torch.Tensor) -> np.ndarray:
        if not isinstance(array, torch.Tensor):
            return np.asarray(array)
        t = array.detach()
        if t.dtype == torch.bfloat16 or (t.dtype.itemsize == 1 and t.dtype.is_floating_point):
            t = t.float()  # NumPy has no bfloat16 or float8: the values exactly, as float32
        return t.cpu().numpy()

    def bfloat16_bits(self, array: torch.Tensor) -> np.ndarray:
        return array.detach().contiguous().view(torch.int16).cpu().numpy().view(np.uint16)

    def bfloat16_from_bits(self, bits: np.ndarray) -> torch.Tensor:
        return self.from_numpy(np.ascontiguousarray(bits, dtype=np.uint16).view(np.int16)).view(torch.bfloat16)

    def dtype_of(self, array: torch.Tensor) -> DType:
        try:
            return _FROM_NATIVE[array.dtype]
        except KeyError:
            raise TypeError(f"torch dtype {array.dtype} has no Ember counterpart") from None

    def native_dtype(self, dtype: DType) -> Any:
        return _TO_NATIVE[dtype]

    def astype(self, array: torch.Tensor, dtype: DType) -> torch.Tensor:
        out = array.to(_TO_NATIVE[dtype])
        if not self.cheap_sync and out is not array and _is_integer(out):  # an index widened keeps its known range
            r = self.known_range(array)
            info = torch.iinfo(out.dtype)
            if r is not None and info.min <= r[0] and r[1] <= info.max:
                setattr(out, _RANGE, (r[0], r[1], out._version))
        return out

    def is_view_of(self, array: Any, base: Any) -> bool:
        return (
            isinstance(array, torch.Tensor)
            and array.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
            and array.untyped_storage().nbytes() > 0
        )

    def is_plain(self, array: Any) -> bool:
        return bool(array.is_contiguous())

    def strides(self, array: Any) -> tuple[int, ...]:
        return tuple(array.stride())

    def address(self, array: Any) -> int:
        return int(array.data_ptr())

    def storage_offset(self, array: Any) -> int:
        return int(array.storage_offset())

    def storage_nbytes(self, array: Any) -> int:
        return int(array.untyped_storage().nbytes())

    def as_strided(self, array: Any, shape: tuple[int, ...], strides: tuple[int, ...]) -> Any:
        return array.as_strided(shape, strides)

    def diagonal(self, array: Any, offset: int, dim1: int, dim2: int) -> Any:
        return array.diagonal(offset, dim1, dim2)  # (torch's is a writable view)

    def is_contiguous(self, array: Any) -> bool:
        return bool(array.is_contiguous())

    def transfer(self, array: Any, target: Backend, non_blocking: bool = False) -> Any:
        if isinstance(target, TorchBackend):
            out = array.to(target.tdevice, non_blocking=non_blocking, copy=True)
            if not target.cheap_sync and _is_integer(out) and out.numel():
                r = self.known_range(array)  # on the CPU: computed there, no device involved
                if r is not None:
                    setattr(out, _RANGE, (*r, out._version))
            return out
        return super().transfer(array, target, non_blocking)

    def pin_memory(self, array: Any) -> Any:
        if self.device.type == "cpu" and torch.cuda.is_available():
            return array.pin_memory()
        return array

    def is_pinned(self, array: Any) -> bool:
        return bool(self.device.type == "cpu" and torch.cuda.is_available() and array.is_pinned())

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.tdevice)

    # -- kernels -----------------------------------------------------------------------------
    def index_add(self, target: torch.Tensor, index: Any, values: Any) -> None:
        if not self.cheap_sync:  # (on the CPU torch's kernel raises itself; on CUDA it would assert on the device)
            self.check_known_index(tuple(target.shape), index, "index_add")
        view, idx = _split_index(target, index)
        values = values if isinstance(values, torch.Tensor) else torch.as_tensor(values, device=target.device)
        torch.ops.aten.index_put_(view, idx, values.to(target.dtype), True)

    def scatter_reduce_at(self, x: Any, index: Any, values: Any, reduce: str) -> torch.Tensor:
        out = x.clone()
        view, idx = _split_index(out, index)
        # the flat positions (in the view) that the index addresses, then one scatter_reduce over them
        pos = torch.arange(view.numel(), device=x.device).reshape(view.shape)
        target = pos[tuple(slice(None) if i is None else i for i in idx)].reshape(-1)
        vals = torch.as_tensor(values, device=x.device).to(x.dtype)
        vals = torch.broadcast_to(vals, pos[tuple(slice(None) if i is None else i for i in idx)].shape).reshape(-1)
        flat = view.contiguous().reshape(-1)
        flat.scatter_reduce_(0, target, vals, reduce=reduce, include_self=True)
        view.copy_(flat.reshape(view.shape))
        return out

    def sliding_window(self, array: torch.Tensor, window: tuple[int, ...], axes: tuple[int, ...]) -> torch.Tensor:
        for w, a in zip(window, axes, strict=True):
            array = array.unfold(a, w, 1)
        return array


#: where an array uploaded from host integer data keeps that data's (min, max, torch version at upload)
_RANGE = "_ember_known_range"


def _is_integer(t: torch.Tensor) -> bool:
    return not (t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool)


def _remember_range(t: torch.Tensor, host: Any) -> None:
    """Tag ``t``, made from the host values ``host``, with their range when ``t`` holds them exactly."""
    if not _is_integer(t) or not t.numel():
        return
    try:
        h = np.asarray(host)
    except (TypeError, ValueError, RuntimeError):  # e.g. a list holding device tensors: nothing known
        return
    if h.dtype.kind not in "iub" or not h.size:
        return
    lo, hi = int(h.min()), int(h.max())
    info = torch.iinfo(t.dtype)
    if info.min <= lo and hi <= info.max:  # the values converted exactly (a narrower dtype asked for: they fit)
        setattr(t, _RANGE, (lo, hi, t._version))


def _carry_range(out: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
    r = getattr(src, _RANGE, None)
    if r is not None:
        setattr(out, _RANGE, (r[0], r[1], out._version))
    return out


def _split_index(target: torch.Tensor, index: Any) -> tuple[torch.Tensor, list[Any]]:
    """A NumPy index as (a view of ``target`` from its basic part, aten's list of index tensors/None)."""
    items = list(index) if isinstance(index, tuple) else [index]
    expanded: list[Any] = []
    for it in items:  # bool masks become one integer index per masked dim
        if isinstance(it, torch.Tensor) and it.dtype == torch.bool:
            expanded.extend(torch.nonzero(it, as_tuple=True))
        elif isinstance(it, (np.ndarray, list)):
            expanded.append(torch.as_tensor(np.asarray(it), device=target.device))
        else:
            expanded.append(it)
    consumed = sum(1 for it in expanded if it is not None and it is not Ellipsis)
    basic: list[Any] = []
    for it in expanded:
        if it is Ellipsis:
            basic.extend([slice(None)] * (target.ndim - consumed))
        else:
            basic.append(it)
    basic.extend([slice(None)] * (target.ndim - sum(1 for it in basic if it is not None)))
    view = target[tuple(slice(None) if isinstance(it, torch.Tensor) else it for it in basic)]
    idx: list[Any] = []
    for it in basic:
        if isinstance(it, torch.Tensor):
            idx.append(it)
        elif it is None or isinstance(it, slice):
            idx.append(None)
        # an int removed its dim from the view
    return view, idx
